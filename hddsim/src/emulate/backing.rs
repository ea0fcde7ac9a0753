//! The backing image: where the emulated drive's data lives.
//!
//! Either a sized image (today's: a zero-filled file of any multiple of 512 bytes up to the
//! profile's capacity) or a **sparse** one the size of the whole drive
//! ([`create_sparse`], `hddsim emulate --create-sparse`): a 1 TB file that takes host space
//! only for the data written to it. To keep it so, [`Backing::write_at`] stores zeros as
//! holes: an all-zero write is punched (`fallocate(PUNCH_HOLE)`) instead of written, and so
//! is every run of at least [`PUNCH_RUN`] zero bytes (aligned to host blocks) inside a
//! write; a hole reads as zeros, so the drive's contents are the same either way. Where the
//! host filesystem cannot punch, the zeros are written.
//!
//! Nothing here grows with the image: no map of the drive is kept (the host filesystem's
//! extent tree is the map).

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use minfs::AlignedBuf;
use nix::errno::Errno;
use nix::fcntl::{fallocate, FallocateFlags, Flock, FlockArg};
use serde::Serialize;

/// Zero runs inside a write at least this long (and aligned to [`HOST_BLOCK`]) are punched.
pub const PUNCH_RUN: usize = 64 << 10;
/// The host filesystem's block size assumed for aligning punched runs.
pub const HOST_BLOCK: usize = 4096;

/// What the backing image took and was spared, for `stats.json`.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct BackingStats {
    /// Bytes written to the image as data.
    pub data_bytes: u64,
    /// Bytes of zeros stored as holes (punched) instead of written.
    pub punched_bytes: u64,
    /// The host space the image takes now (its allocated blocks × 512).
    pub host_allocated_bytes: u64,
}

/// The backing image, open with O_DIRECT and held exclusively (flock) while open.
#[derive(Debug)]
pub struct Backing {
    file: File,
    _lock: Flock<File>,
    size: u64,
    path: PathBuf,
    data_bytes: AtomicU64,
    punched_bytes: AtomicU64,
    /// The host filesystem refused a punch: zeros are written from then on.
    no_punch: AtomicBool,
}

/// Creates `path` as a sparse image of `size` bytes (no data: all holes), refusing to
/// replace an existing file.
pub fn create_sparse(path: &Path, size: u64) -> Result<(), String> {
    let shown = path.display();
    let f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| format!("{shown}: cannot create the sparse backing image: {e}"))?;
    f.set_len(size).map_err(|e| {
        let _ = std::fs::remove_file(path);
        format!("{shown}: cannot size the sparse backing image to {size} bytes: {e}")
    })
}

impl Backing {
    /// Opens the image at `path` for a drive of `capacity` bytes: a regular file, a non-zero
    /// multiple of 512 bytes, at most `capacity`; refused (naming both sizes) when larger.
    pub fn open(path: &Path, capacity: u64) -> Result<Backing, String> {
        let shown = path.display();
        let path = path
            .canonicalize()
            .map_err(|e| format!("{shown}: cannot open the backing image: {e}"))?;
        let meta = std::fs::metadata(&path).map_err(|e| format!("{shown}: {e}"))?;
        if !meta.is_file() {
            return Err(format!("{shown}: the backing image must be a regular file"));
        }
        let size = meta.len();
        if size > capacity {
            return Err(format!(
                "{shown}: the backing image's {size} bytes are more than the profile's capacity \
                 of {capacity} bytes (a drive holds no more than its capacity)"
            ));
        }
        if size == 0 || size % 512 != 0 {
            return Err(format!(
                "{shown}: the backing image's size {size} must be a non-zero multiple of 512 \
                 bytes (at most the profile's capacity {capacity})"
            ));
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_DIRECT)
            .open(&path)
            .map_err(|e| format!("{shown}: cannot open the backing image with O_DIRECT: {e}"))?;
        let dup = file.try_clone().map_err(|e| format!("{shown}: {e}"))?;
        let lock = Flock::lock(dup, FlockArg::LockExclusiveNonblock).map_err(|(_, e)| {
            if e == nix::errno::Errno::EWOULDBLOCK {
                format!(
                    "{shown}: busy: another process holds the backing image (flock); is an \
                     emulator already serving it?"
                )
            } else {
                format!("{shown}: flock: {e}")
            }
        })?;
        let mut probe = AlignedBuf::zeroed(512, 4096);
        file.read_exact_at(&mut probe, 0).map_err(|e| {
            format!("{shown}: a 512-byte O_DIRECT read of the backing image failed: {e}")
        })?;
        Ok(Backing {
            file,
            _lock: lock,
            size,
            path,
            data_bytes: AtomicU64::new(0),
            punched_bytes: AtomicU64::new(0),
            no_punch: AtomicBool::new(false),
        })
    }

    /// The image's size: the drive's.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The image's (canonical) path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads `buf.len()` bytes at `offset` (O_DIRECT: `buf` aligned, whole sectors); holes
    /// read as zeros.
    pub fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.file.read_exact_at(buf, offset)
    }

    /// Stores `buf` at `offset` (O_DIRECT: `buf` 4096-aligned, whole 512-byte sectors), its
    /// zeros as holes where they fill host blocks (see the module's doc).
    pub fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        if is_zero(buf) && self.punch(offset, buf.len() as u64)? {
            return Ok(());
        }
        let mut written = 0;
        for (a, b, zero) in zero_runs(buf, offset) {
            if zero && self.punch(offset + a as u64, (b - a) as u64)? {
                continue;
            }
            self.file.write_all_at(&buf[a..b], offset + a as u64)?;
            written += (b - a) as u64;
        }
        self.data_bytes.fetch_add(written, Ordering::Relaxed);
        Ok(())
    }

    /// Punches `[offset, offset + len)`; `Ok(false)` where the host filesystem cannot (the
    /// caller writes the zeros instead).
    fn punch(&self, offset: u64, len: u64) -> io::Result<bool> {
        if self.no_punch.load(Ordering::Relaxed) {
            return Ok(false);
        }
        match fallocate(
            self.file.as_raw_fd(),
            FallocateFlags::FALLOC_FL_PUNCH_HOLE | FallocateFlags::FALLOC_FL_KEEP_SIZE,
            offset as libc::off_t,
            len as libc::off_t,
        ) {
            Ok(()) => {
                self.punched_bytes.fetch_add(len, Ordering::Relaxed);
                Ok(true)
            }
            Err(Errno::EOPNOTSUPP) | Err(Errno::ENOSYS) => {
                self.no_punch.store(true, Ordering::Relaxed);
                Ok(false)
            }
            Err(e) => Err(io::Error::from(e)),
        }
    }

    /// `fdatasync` of the image.
    pub fn sync_data(&self) -> io::Result<()> {
        self.file.sync_data()
    }

    /// What was written and punched so far, and the host space taken now.
    pub fn stats(&self) -> BackingStats {
        BackingStats {
            data_bytes: self.data_bytes.load(Ordering::Relaxed),
            punched_bytes: self.punched_bytes.load(Ordering::Relaxed),
            host_allocated_bytes: self.file.metadata().map_or(0, |m| m.blocks() * 512),
        }
    }
}

/// Whether every byte of `buf` is zero.
pub fn is_zero(buf: &[u8]) -> bool {
    let words = buf.chunks_exact(8);
    let tail = words.remainder();
    words
        .map(|w| u64::from_ne_bytes(w.try_into().unwrap_or_default()))
        .all(|w| w == 0)
        && tail.iter().all(|&b| b == 0)
}

/// Splits a write of `buf` at file offset `offset` into pieces `(start, end, zero)` (byte
/// offsets in `buf`), where `zero` pieces are runs of at least [`PUNCH_RUN`] zero bytes that
/// start and end on [`HOST_BLOCK`] boundaries of the file; the rest are data pieces, merged.
pub fn zero_runs(buf: &[u8], offset: u64) -> Vec<(usize, usize, bool)> {
    let hb = HOST_BLOCK as u64;
    // Host-block boundaries inside the buffer.
    let first = ((offset.div_ceil(hb) * hb - offset) as usize).min(buf.len());
    let mut pieces: Vec<(usize, usize, bool)> = Vec::new();
    let push = |a: usize, b: usize, zero: bool, pieces: &mut Vec<(usize, usize, bool)>| {
        if a == b {
            return;
        }
        match pieces.last_mut() {
            Some(last) if last.2 == zero && last.1 == a => last.1 = b,
            _ => pieces.push((a, b, zero)),
        }
    };
    push(0, first, false, &mut pieces);
    let mut at = first;
    while at + HOST_BLOCK <= buf.len() {
        let zero = is_zero(&buf[at..at + HOST_BLOCK]);
        push(at, at + HOST_BLOCK, zero, &mut pieces);
        at += HOST_BLOCK;
    }
    push(at, buf.len(), false, &mut pieces);
    // Zero runs too short to punch are data.
    let mut out: Vec<(usize, usize, bool)> = Vec::with_capacity(pieces.len());
    for (a, b, zero) in pieces {
        let zero = zero && b - a >= PUNCH_RUN;
        match out.last_mut() {
            Some(last) if last.2 == zero => last.1 = b,
            _ => out.push((a, b, zero)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_runs_split_only_long_aligned_zero_runs() {
        let mut buf = vec![0u8; 256 << 10];
        assert_eq!(zero_runs(&buf, 0), vec![(0, 256 << 10, true)]);
        buf[5] = 1;
        // The first host block holds data; the rest (252 KiB) is a punchable run.
        assert_eq!(
            zero_runs(&buf, 0),
            vec![(0, 4096, false), (4096, 256 << 10, true)]
        );
        // At a file offset of 512: host blocks start 3584 bytes into the buffer.
        assert_eq!(
            zero_runs(&buf, 512),
            vec![
                (0, 3584, false),
                (3584, 3584 + 63 * 4096, true),
                (3584 + 63 * 4096, 256 << 10, false)
            ]
        );
        // A zero run shorter than 64 KiB stays data.
        let mut short = vec![1u8; 128 << 10];
        short[4096..4096 + 60 * 1024].fill(0);
        assert_eq!(zero_runs(&short, 0), vec![(0, 128 << 10, false)]);
        assert!(is_zero(&[0; 100]) && !is_zero(&[0, 0, 0, 1]));
    }
}
