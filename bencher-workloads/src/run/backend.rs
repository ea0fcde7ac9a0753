//! Where a run's Cannyls storage lives (`--backend SPEC`), and making that storage.
//!
//! | spec | memory | notes |
//! | --- | --- | --- |
//! | `minfs:TARGET[:FILE]` | [`MinfsNvm`] over the minfs file FILE (default [`DEFAULT_MINFS_FILE`]) | the filesystem must exist on TARGET (`minfs mkfs`); FILE is created with the capacity when absent |
//! | `file:PATH` | Cannyls' own [`FileNvm`] (O_DIRECT, `flock`) | the reference setup on ext4/XFS: the file starts empty and grows as Cannyls writes |
//! | `file-prealloc:PATH` | the same | first `fallocate(FALLOC_FL_KEEP_SIZE)` of the capacity, so the blocks exist but the size stays 0 (Cannyls takes a non-empty file for an existing storage) |
//! | `existing-file:PATH` | the same, on a file that exists with its size | the whole file is the storage (capacity = its size; `--capacity` must match). For a file preallocated elsewhere, e.g. on a `minfs mount` (`truncate -s SIZE MOUNT/FILE`). It must start with 512 zero bytes or a Cannyls header (else it is refused); a Cannyls header of its size is written first, because `FileNvm` opens a non-empty file only through one |
//! | `raw:BLOCKDEV` | [`FileNvm`] on a bare block device | refused when the device holds a known signature (a filesystem, a partition table) unless `force`; opened `O_EXCL` besides, so a mounted device is refused |
//! | `memory` | [`MemoryNvm`] | the whole capacity in RAM, twice over (`MemoryNvm::split` copies) |
//!
//! Every run formats a fresh Cannyls storage (`StorageBuilder::create`), so it starts empty.
//! A storage file left by an earlier run (`minfs:` FILE, `file:` PATH) is reused at its size:
//! an explicit capacity must match it, and without one it must be at least the planned
//! capacity. Anything else at PATH (a file that does not start with a Cannyls header) is
//! refused rather than overwritten.
//!
//! Block size: the storage's (`StorageBuilder::block_size`); by default the backend's
//! ([`BackendSpec::default_block_size`]): `minfs:` follows [`MinfsNvm`]'s default, 4096
//! ([`cannyls_adapter::DEFAULT_BLOCK_SIZE`]: every write covers whole 4 KiB physical sectors, so a
//! 512e disk never read-modify-writes one), the others Cannyls' 512. minfs takes 512 or 4096
//! when it is a multiple of the device's logical sector size ([`MinfsNvm::with_block_size`]).
//! `FileNvm` and `MemoryNvm` report 512, and Cannyls accepts any storage block size that is a
//! multiple of it, so 4096 applies to them too: all journal and data I/O is then 4096-aligned
//! (only the header read at open stays 512 bytes).

use std::fmt;
use std::fs::{self, OpenOptions};
use std::io;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use cannyls::block::BlockSize;
use cannyls::nvm::{FileNvm, MemoryNvm, NonVolatileMemory};
use cannyls::storage::{Storage, StorageBuilder, StorageHeader};
use cannyls_adapter::MinfsNvm;

use super::capacity::journal_ratio;
use super::exec::{brief, execute, ExecOptions, Hooks, Outcome, RunError};
use crate::generate::Op;

/// The minfs file a `minfs:TARGET` backend uses when the spec names none.
pub const DEFAULT_MINFS_FILE: &str = "cannyls.lusf";

/// A `--backend` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BackendSpec {
    /// `minfs:TARGET[:FILE]`.
    Minfs {
        /// The image file or block device holding the minfs filesystem.
        target: PathBuf,
        /// The minfs file holding the storage.
        file: String,
    },
    /// `file:PATH`.
    File(PathBuf),
    /// `file-prealloc:PATH`.
    FilePrealloc(PathBuf),
    /// `existing-file:PATH`.
    ExistingFile(PathBuf),
    /// `raw:BLOCKDEV`.
    Raw(PathBuf),
    /// `memory`.
    Memory,
}

/// The accepted forms, for error messages.
pub const SPEC_FORMS: &str = "minfs:TARGET[:FILE], file:PATH, file-prealloc:PATH, \
     existing-file:PATH, raw:BLOCKDEV or memory";

impl FromStr for BackendSpec {
    type Err = String;

    /// Parses a spec. In `minfs:TARGET:FILE` the target ends at the first `:` after the
    /// scheme (so TARGET cannot contain `:`); the other paths are everything after the scheme.
    fn from_str(s: &str) -> Result<BackendSpec, String> {
        if s == "memory" {
            return Ok(BackendSpec::Memory);
        }
        let Some((scheme, rest)) = s.split_once(':') else {
            return Err(format!("`{s}` is not a backend: expected {SPEC_FORMS}"));
        };
        let need = |what: &str| -> Result<PathBuf, String> {
            if rest.is_empty() {
                Err(format!("`{s}`: {scheme}: needs a {what} after the colon"))
            } else {
                Ok(PathBuf::from(rest))
            }
        };
        match scheme {
            "minfs" => {
                let (target, file) = match rest.split_once(':') {
                    Some((target, file)) => (target, file),
                    None => (rest, DEFAULT_MINFS_FILE),
                };
                if target.is_empty() {
                    return Err(format!(
                        "`{s}`: minfs: needs a TARGET (an image file or block device holding a \
                         minfs filesystem): minfs:TARGET[:FILE]"
                    ));
                }
                if file.is_empty() {
                    return Err(format!(
                        "`{s}`: minfs: the FILE after TARGET: is empty (leave out `:` for the \
                         default {DEFAULT_MINFS_FILE})"
                    ));
                }
                Ok(BackendSpec::Minfs {
                    target: PathBuf::from(target),
                    file: file.to_string(),
                })
            }
            "file" => Ok(BackendSpec::File(need("PATH")?)),
            "file-prealloc" => Ok(BackendSpec::FilePrealloc(need("PATH")?)),
            "existing-file" => Ok(BackendSpec::ExistingFile(need("PATH")?)),
            "raw" => Ok(BackendSpec::Raw(need("BLOCKDEV")?)),
            "memory" => Err(format!("`{s}`: memory takes no argument")),
            other => Err(format!(
                "`{s}`: unknown backend `{other}`: expected {SPEC_FORMS}"
            )),
        }
    }
}

impl BackendSpec {
    /// The block size a run uses without `--block-size`: [`MinfsNvm`]'s default
    /// ([`cannyls_adapter::DEFAULT_BLOCK_SIZE`], 4096) on `minfs:`, 512 on the others
    /// (`FileNvm` and `MemoryNvm` report 512, and Cannyls' `StorageBuilder` defaults to it).
    pub fn default_block_size(&self) -> u32 {
        match self {
            BackendSpec::Minfs { .. } => cannyls_adapter::DEFAULT_BLOCK_SIZE,
            _ => 512,
        }
    }
}

impl fmt::Display for BackendSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BackendSpec::Minfs { target, file } => {
                write!(f, "minfs:{}:{file}", target.display())
            }
            BackendSpec::File(p) => write!(f, "file:{}", p.display()),
            BackendSpec::FilePrealloc(p) => write!(f, "file-prealloc:{}", p.display()),
            BackendSpec::ExistingFile(p) => write!(f, "existing-file:{}", p.display()),
            BackendSpec::Raw(p) => write!(f, "raw:{}", p.display()),
            BackendSpec::Memory => f.write_str("memory"),
        }
    }
}

/// How to make the storage.
#[derive(Debug, Clone, PartialEq)]
pub struct Setup {
    /// `--capacity`: the bytes given to Cannyls, if asked for.
    pub capacity: Option<u64>,
    /// The capacity planned for the workload ([`Plan::capacity`](super::capacity::Plan)),
    /// used when none is asked for.
    pub planned: u64,
    /// The journal the workload needs ([`Plan::journal_bytes`](super::capacity::Plan)).
    pub journal_bytes: u64,
    /// `--journal-ratio`, if asked for; else [`journal_ratio`] of the capacity.
    pub journal_ratio: Option<f64>,
    /// The storage's block size (512 or 4096).
    pub block_size: u32,
    /// Run `raw:` on a device that holds a known signature.
    pub force: bool,
    /// `minfs:`: give the storage a copy of its header and journal (`MinfsNvm`'s default,
    /// cannyls_adapter::copy); `--no-journal-copy` makes none (to measure what it costs).
    pub journal_copy: bool,
}

/// A backend that could not be made ready; the message names the backend and what is wrong.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BackendError(pub String);

/// A Cannyls storage on one of the memories.
#[derive(Debug)]
pub enum AnyStorage {
    /// On a minfs file.
    Minfs(Storage<MinfsNvm>),
    /// On a file or block device through `FileNvm`.
    File(Storage<FileNvm>),
    /// In memory.
    Memory(Storage<MemoryNvm>),
}

impl AnyStorage {
    /// [`execute`] on this storage.
    pub fn execute(
        &mut self,
        ops: &[Op],
        opts: ExecOptions,
        hooks: &mut Hooks,
    ) -> Result<Outcome, RunError> {
        match self {
            AnyStorage::Minfs(s) => execute(s, ops, opts, hooks),
            AnyStorage::File(s) => execute(s, ops, opts, hooks),
            AnyStorage::Memory(s) => execute(s, ops, opts, hooks),
        }
    }

    /// The storage's header (block size, region sizes).
    pub fn header(&self) -> &StorageHeader {
        match self {
            AnyStorage::Minfs(s) => s.header(),
            AnyStorage::File(s) => s.header(),
            AnyStorage::Memory(s) => s.header(),
        }
    }
}

/// A fresh storage, ready to run on.
#[derive(Debug)]
pub struct Opened {
    /// The storage.
    pub storage: AnyStorage,
    /// The bytes given to Cannyls (the memory's capacity).
    pub capacity: u64,
    /// The `journal_region_ratio` it was created with.
    pub journal_ratio: f64,
    /// Things worth telling the person running it (e.g. a storage file reused).
    pub notes: Vec<String>,
    /// `raw:`: the device opened `O_EXCL` for as long as the storage lives.
    _exclusive: Option<fs::File>,
}

/// Makes a fresh storage on `spec`.
pub fn open(spec: &BackendSpec, setup: &Setup) -> Result<Opened, BackendError> {
    let block_size =
        BlockSize::new(u16::try_from(setup.block_size).unwrap_or(0)).map_err(|_| {
            BackendError(format!(
                "block size {} is not usable: Cannyls needs a multiple of 512 up to 65024",
                setup.block_size
            ))
        })?;
    let err = |msg: String| BackendError(format!("{spec}: {msg}"));
    let mut notes = Vec::new();
    let mut exclusive = None;
    let (storage, capacity, ratio) = match spec {
        BackendSpec::Minfs { target, file } => {
            let (nvm, ratio) =
                minfs_nvm(target, file, block_size, setup, &mut notes).map_err(err)?;
            let capacity = nvm.capacity();
            let mut builder = nvm.storage_builder();
            builder.journal_region_ratio(ratio);
            let storage = create(&builder, nvm, capacity, setup).map_err(err)?;
            (AnyStorage::Minfs(storage), capacity, ratio)
        }
        BackendSpec::File(path) | BackendSpec::FilePrealloc(path) => {
            let prealloc = matches!(spec, BackendSpec::FilePrealloc(_));
            let capacity = file_capacity(path, setup, prealloc, &mut notes).map_err(err)?;
            if prealloc {
                preallocate(path, capacity).map_err(err)?;
            }
            let (nvm, _created) = FileNvm::create_if_absent(path, capacity)
                .map_err(|e| err(format!("cannot open it with FileNvm: {}", brief(&e))))?;
            let ratio = ratio_for(setup, capacity);
            let storage = create(&builder(block_size, ratio), nvm, capacity, setup).map_err(err)?;
            (AnyStorage::File(storage), capacity, ratio)
        }
        BackendSpec::ExistingFile(path) => {
            let capacity = existing_file(path, setup, &mut notes).map_err(err)?;
            let (nvm, _created) = FileNvm::create_if_absent(path, capacity)
                .map_err(|e| err(format!("cannot open it with FileNvm: {}", brief(&e))))?;
            let ratio = ratio_for(setup, capacity);
            let storage = create(&builder(block_size, ratio), nvm, capacity, setup).map_err(err)?;
            (AnyStorage::File(storage), capacity, ratio)
        }
        BackendSpec::Raw(path) => {
            let (capacity, guard) = raw_device(path, setup).map_err(err)?;
            exclusive = Some(guard);
            let (nvm, _created) = FileNvm::create_if_absent(path, capacity)
                .map_err(|e| err(format!("cannot open it with FileNvm: {}", brief(&e))))?;
            let ratio = ratio_for(setup, capacity);
            let storage = create(&builder(block_size, ratio), nvm, capacity, setup).map_err(err)?;
            (AnyStorage::File(storage), capacity, ratio)
        }
        BackendSpec::Memory => {
            let capacity = setup.capacity.unwrap_or(setup.planned);
            // MemoryNvm::split copies the regions out of the buffer, and the buffer keeps its
            // allocation: about twice the capacity ends up in RAM.
            if let Some(total) = memory_total() {
                if capacity.saturating_mul(2) > total {
                    return Err(err(format!(
                        "a capacity of {capacity} bytes needs about twice that in RAM, more than \
                         this machine's {total} bytes; give a smaller --scale or use another \
                         backend"
                    )));
                }
            }
            let nvm = MemoryNvm::new(vec![0; capacity as usize]);
            let ratio = ratio_for(setup, capacity);
            let storage = create(&builder(block_size, ratio), nvm, capacity, setup).map_err(err)?;
            (AnyStorage::Memory(storage), capacity, ratio)
        }
    };
    Ok(Opened {
        storage,
        capacity,
        journal_ratio: ratio,
        notes,
        _exclusive: exclusive,
    })
}

fn builder(block_size: BlockSize, ratio: f64) -> StorageBuilder {
    let mut builder = StorageBuilder::new();
    builder.block_size(block_size).journal_region_ratio(ratio);
    builder
}

fn ratio_for(setup: &Setup, capacity: u64) -> f64 {
    setup
        .journal_ratio
        .unwrap_or_else(|| journal_ratio(capacity, setup.block_size, setup.journal_bytes))
}

fn create<N: NonVolatileMemory>(
    builder: &StorageBuilder,
    nvm: N,
    capacity: u64,
    setup: &Setup,
) -> Result<Storage<N>, String> {
    builder.create(nvm).map_err(|e| {
        format!(
            "cannot create a Cannyls storage of {capacity} bytes with block size {}: {}",
            setup.block_size,
            brief(&e)
        )
    })
}

/// The capacity of a storage that already exists with `existing` bytes.
fn reuse(what: &str, existing: u64, setup: &Setup) -> Result<u64, String> {
    match setup.capacity {
        Some(asked) if asked != existing => Err(format!(
            "{what} already exists with {existing} bytes, not the {asked} bytes --capacity asks \
             for; remove it, name another, or leave out --capacity"
        )),
        Some(asked) => Ok(asked),
        None if existing < setup.planned => Err(format!(
            "{what} already exists with {existing} bytes, less than the {} bytes planned for \
             this workload; remove it, name another, or give --capacity {existing} to run in it \
             anyway",
            setup.planned
        )),
        None => Ok(existing),
    }
}

/// The known signature (a filesystem, a partition table) at the start of `target`, if any.
fn signature_of(target: &Path) -> Option<minfs::signature::Signature> {
    let dev = minfs::FileDevice::open(target, minfs::OpenMode::ReadOnly).ok()?;
    minfs::signature::probe(&dev).ok().flatten()
}

fn minfs_nvm(
    target: &Path,
    file: &str,
    block_size: BlockSize,
    setup: &Setup,
    notes: &mut Vec<String>,
) -> Result<(MinfsNvm, f64), String> {
    let fs = minfs::Filesystem::open(target, minfs::OpenMode::ReadWrite).map_err(|e| match e {
        minfs::Error::NotMinfs { .. } => match signature_of(target) {
            // `minfs mkfs` would refuse it too: say what is there instead.
            Some(sig) => format!(
                "{e}: it holds {} (signature at byte {}); give a minfs target, or a `file:` \
                 backend for a file in that filesystem",
                sig.kind, sig.offset
            ),
            None => format!(
                "{e}; make one first with `minfs mkfs {}` (add -s SIZE for a new image file)",
                target.display()
            ),
        },
        other => other.to_string(),
    })?;
    let sector = fs.device().logical_sector_size();
    if setup.block_size % sector != 0 {
        return Err(format!(
            "block size {} is not a multiple of the device's {sector}-byte logical sector size",
            setup.block_size
        ));
    }
    let nvm = match fs.stat(file) {
        Ok(stat) => {
            reuse(&format!("minfs file {file:?}"), stat.size, setup)?;
            notes.push(format!(
                "reusing the minfs file {file:?} ({} bytes) of {}; its storage is formatted anew",
                stat.size,
                target.display()
            ));
            // Formatted anew: whatever block size the old storage recorded does not count.
            let handle = fs.open_file(file).map_err(|e| e.to_string())?;
            MinfsNvm::with_default_block_size(handle).map_err(|e| e.to_string())?
        }
        Err(minfs::Error::FileNotFound { .. }) => {
            let capacity = setup.capacity.unwrap_or(setup.planned);
            MinfsNvm::create_in(&fs, file, capacity).map_err(|e| e.to_string())?
        }
        Err(e) => return Err(e.to_string()),
    };
    let mut nvm = nvm.with_block_size(block_size).map_err(|e| e.to_string())?;
    if !setup.journal_copy {
        nvm = nvm.without_copy();
    }
    let ratio = ratio_for(setup, nvm.capacity());
    Ok((nvm, ratio))
}

fn file_capacity(
    path: &Path,
    setup: &Setup,
    prealloc: bool,
    notes: &mut Vec<String>,
) -> Result<u64, String> {
    match fs::metadata(path) {
        Ok(m) if m.is_dir() => Err("is a directory; name a file in it".into()),
        Ok(m) if m.file_type().is_block_device() => {
            Err("is a block device; use raw:PATH for a bare device".into())
        }
        Ok(m) if !m.is_file() => Err("is not a regular file".into()),
        Ok(m) if m.len() > 0 => {
            let header = StorageHeader::read_from_file(path).map_err(|_| {
                format!(
                    "exists ({} bytes) and does not hold a Cannyls storage; refusing to \
                     overwrite it",
                    m.len()
                )
            })?;
            let existing = header.storage_size();
            let capacity = reuse("the storage file", existing, setup)?;
            notes.push(format!(
                "reusing the Cannyls storage file {} ({existing} bytes) of an earlier run; it \
                 is formatted anew, but its blocks are already allocated{}",
                path.display(),
                if prealloc {
                    ""
                } else {
                    " (so this is not a fresh-file run; remove it for one)"
                }
            ));
            Ok(capacity)
        }
        Ok(_) => Ok(setup.capacity.unwrap_or(setup.planned)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            // Cannyls would create missing directories; a mistyped path would then
            // benchmark whatever filesystem holds the new directory.
            if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                if !parent.is_dir() {
                    return Err(format!(
                        "its directory {} does not exist (create it first)",
                        parent.display()
                    ));
                }
            }
            Ok(setup.capacity.unwrap_or(setup.planned))
        }
        Err(e) => Err(format!("cannot stat it: {e}")),
    }
}

/// Allocates the blocks of the first `capacity` bytes of `path` (creating it) without
/// changing its size.
fn preallocate(path: &Path, capacity: u64) -> Result<(), String> {
    use nix::fcntl::{fallocate, FallocateFlags};
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| format!("cannot create it: {e}"))?;
    let len = i64::try_from(capacity).map_err(|_| format!("capacity {capacity} is too large"))?;
    fallocate(
        file.as_raw_fd(),
        FallocateFlags::FALLOC_FL_KEEP_SIZE,
        0,
        len,
    )
    .map_err(|e| {
        format!(
            "cannot preallocate {capacity} bytes (fallocate with FALLOC_FL_KEEP_SIZE): {e}{}",
            if e == nix::errno::Errno::EOPNOTSUPP {
                " (the filesystem holding it cannot preallocate)"
            } else {
                ""
            }
        )
    })?;
    file.sync_all()
        .map_err(|e| format!("cannot sync it after fallocate: {e}"))
}

/// `existing-file:`: checks the file, and writes a Cannyls header of its size (rounded down to
/// the block size) at its start, so `FileNvm::create_if_absent` opens it with that capacity.
fn existing_file(path: &Path, setup: &Setup, notes: &mut Vec<String>) -> Result<u64, String> {
    use std::io::Read;
    use std::os::unix::fs::FileExt;
    let meta = fs::metadata(path).map_err(|e| format!("cannot stat it: {e}"))?;
    if !meta.is_file() {
        return Err("is not a regular file".into());
    }
    let size = meta.len() / u64::from(setup.block_size) * u64::from(setup.block_size);
    if size == 0 {
        return Err(format!(
            "is {} bytes; existing-file: needs a file of the storage's size (e.g. `truncate -s \
             SIZE` it first; file:PATH takes an empty one)",
            meta.len()
        ));
    }
    let mut head = [0u8; 512];
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(|e| format!("cannot open it: {e}"))?;
    let n = file
        .read(&mut head)
        .map_err(|e| format!("cannot read it: {e}"))?;
    if head[..n].iter().any(|&b| b != 0) && StorageHeader::read_from(&head[..n]).is_err() {
        return Err(
            "does not start with 512 zero bytes or a Cannyls header; refusing to overwrite it \
             (zero its first 512 bytes to use it)"
                .into(),
        );
    }
    let capacity = reuse("the file", size, setup)?;
    // A header with the right sizes, taken from a small storage in memory.
    let mut header = StorageBuilder::new()
        .create(MemoryNvm::new(vec![0; 1 << 20]))
        .map_err(|e| format!("cannot make a Cannyls header: {}", brief(&e)))?
        .header()
        .clone();
    header.journal_region_size = 0;
    header.data_region_size = capacity - header.region_size();
    let mut bytes = Vec::with_capacity(512);
    header
        .write_to(&mut bytes)
        .map_err(|e| format!("cannot encode a Cannyls header: {}", brief(&e)))?;
    bytes.resize(512, 0);
    file.write_all_at(&bytes, 0)
        .and_then(|()| file.sync_data())
        .map_err(|e| format!("cannot write a Cannyls header into it: {e}"))?;
    notes.push(format!(
        "{} ({} bytes) is formatted whole as a fresh storage",
        path.display(),
        meta.len()
    ));
    Ok(capacity)
}

fn raw_device(path: &Path, setup: &Setup) -> Result<(u64, fs::File), String> {
    let meta = fs::metadata(path).map_err(|e| format!("cannot stat it: {e}"))?;
    if !meta.file_type().is_block_device() {
        return Err("is not a block device (use file:PATH for a regular file)".into());
    }
    let dev =
        minfs::FileDevice::open(path, minfs::OpenMode::ReadOnly).map_err(|e| e.to_string())?;
    use minfs::BlockDevice;
    let len = dev.len();
    let sector = dev.logical_sector_size();
    if sector != 512 {
        return Err(format!(
            "has {sector}-byte logical sectors, but Cannyls' FileNvm does 512-byte O_DIRECT I/O \
             (its block size is fixed at 512); use minfs:{} instead",
            path.display()
        ));
    }
    if let Some(sig) =
        minfs::signature::probe(&dev).map_err(|e| format!("cannot read its first blocks: {e}"))?
    {
        if !setup.force {
            return Err(format!(
                "holds {} (signature at byte {}); a raw run would overwrite it: give --force to \
                 do that",
                sig.kind, sig.offset
            ));
        }
    }
    drop(dev);
    let capacity = setup.capacity.unwrap_or(setup.planned);
    if capacity > len {
        return Err(format!(
            "a capacity of {capacity} bytes is more than the device's {len} bytes{}",
            if setup.capacity.is_none() {
                " (the capacity planned for this workload; give a smaller --scale)"
            } else {
                ""
            }
        ));
    }
    // O_EXCL on a block device: refused while it is mounted or opened O_EXCL elsewhere, and
    // keeps others from mounting it during the run.
    let guard = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_EXCL)
        .open(path)
        .map_err(|e| {
            if e.raw_os_error() == Some(libc::EBUSY) {
                "is in use (mounted, or opened exclusively by another program)".to_string()
            } else {
                format!("cannot open it: {e}")
            }
        })?;
    Ok((capacity, guard))
}

/// The machine's memory (`MemTotal`), if readable.
fn memory_total() -> Option<u64> {
    let text = fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs() {
        let p = |s: &str| s.parse::<BackendSpec>();
        assert_eq!(p("memory"), Ok(BackendSpec::Memory));
        assert_eq!(
            p("minfs:/d/img"),
            Ok(BackendSpec::Minfs {
                target: "/d/img".into(),
                file: DEFAULT_MINFS_FILE.into()
            })
        );
        assert_eq!(
            p("minfs:/dev/sdb:store1"),
            Ok(BackendSpec::Minfs {
                target: "/dev/sdb".into(),
                file: "store1".into()
            })
        );
        assert_eq!(p("file:/x/a:b"), Ok(BackendSpec::File("/x/a:b".into())));
        assert_eq!(
            p("file-prealloc:a.lusf"),
            Ok(BackendSpec::FilePrealloc("a.lusf".into()))
        );
        assert_eq!(
            p("existing-file:/mnt/m/c"),
            Ok(BackendSpec::ExistingFile("/mnt/m/c".into()))
        );
        assert_eq!(
            p("raw:/dev/loop0"),
            Ok(BackendSpec::Raw("/dev/loop0".into()))
        );
        for bad in [
            "", "memory:", "memory:x", "file:", "raw:", "minfs:", "minfs::f", "minfs:t:",
            "ext4:/x", "/tmp/x",
        ] {
            let e = p(bad).unwrap_err();
            assert!(!e.is_empty(), "{bad}");
        }
        assert!(p("existing-file:").is_err());
        assert!(p("nfs:/x").unwrap_err().contains("unknown backend `nfs`"));
        for s in [
            "memory",
            "minfs:/d/img:f",
            "file:/x",
            "file-prealloc:/x",
            "existing-file:/x",
            "raw:/dev/sda",
        ] {
            assert_eq!(p(s).unwrap().to_string(), s);
        }
    }

    #[test]
    fn existing_file_takes_a_zeroed_or_cannyls_file_whole() {
        let dir = tempfile::Builder::new()
            .prefix("existing-file-")
            .tempdir_in(testutil::scratch_dir())
            .unwrap();
        let setup = Setup {
            capacity: None,
            planned: 4 << 20,
            journal_bytes: 1 << 16,
            journal_ratio: None,
            block_size: 512,
            force: false,
            journal_copy: true,
        };
        let zeros = dir.path().join("zeros");
        fs::write(&zeros, vec![0u8; (8 << 20) + 100]).unwrap();
        let spec = BackendSpec::ExistingFile(zeros.clone());
        for round in 0..2 {
            // Fresh zeros, then the storage the first round left: both taken whole.
            let mut opened = open(&spec, &setup).unwrap();
            assert_eq!(opened.capacity, 8 << 20, "round {round}");
            assert_eq!(opened.storage.header().storage_size(), 8 << 20);
            let ops = [
                Op::Put {
                    id: 1,
                    size: 5000,
                    embedded: false,
                    overwrite: false,
                },
                Op::Get { id: 1, size: 5000 },
            ];
            let opts = ExecOptions {
                verify: true,
                ..ExecOptions::default()
            };
            let outcome = opened.storage.execute(&ops, opts, &mut Hooks::default());
            assert!(outcome.is_ok(), "{outcome:?}");
        }
        assert_eq!(fs::metadata(&zeros).unwrap().len(), (8 << 20) + 100);
        let cases = [
            ("foreign", vec![1u8; 1 << 20], "refusing to overwrite"),
            ("empty", Vec::new(), "file:PATH takes an empty one"),
        ];
        for (name, bytes, want) in cases {
            let path = dir.path().join(name);
            fs::write(&path, &bytes).unwrap();
            let e = open(&BackendSpec::ExistingFile(path.clone()), &setup).unwrap_err();
            assert!(e.0.contains(want), "{name}: {e}");
            assert_eq!(fs::read(&path).unwrap(), bytes, "{name} was changed");
        }
        let small = Setup {
            planned: 16 << 20,
            ..setup
        };
        let e = open(&spec, &small).unwrap_err();
        assert!(e.0.contains("less than"), "{e}");
    }

    #[test]
    fn reuse_rules() {
        let setup = Setup {
            capacity: None,
            planned: 100,
            journal_bytes: 10,
            journal_ratio: None,
            block_size: 512,
            force: false,
            journal_copy: true,
        };
        assert_eq!(reuse("f", 200, &setup), Ok(200));
        assert!(reuse("f", 50, &setup)
            .unwrap_err()
            .contains("--capacity 50"));
        let asked = Setup {
            capacity: Some(50),
            ..setup
        };
        assert_eq!(reuse("f", 50, &asked), Ok(50));
        assert!(reuse("f", 200, &asked)
            .unwrap_err()
            .contains("not the 50 bytes"));
    }
}
