//! [`FileDevice`]: an image file or a block device, opened with O_DIRECT.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::fcntl::{Flock, FlockArg};

use super::{check_request, BlockDevice};
use crate::error::{Error, Result};
use crate::sys;

/// What kind of target a path names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TargetKind {
    /// A regular file holding the filesystem.
    Image,
    /// A block device (a disk, a partition, a loop device).
    BlockDevice,
}

/// How to open a target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenMode {
    /// No writes; no lock taken (metadata may be read while another process has it open).
    ReadOnly,
    /// Writes allowed. Takes `flock(LOCK_EX | LOCK_NB)`, and for a block device opens it with
    /// `O_EXCL`, so a second writer, a mounted device or a device in use is refused.
    ReadWrite,
}

#[derive(Debug)]
enum Fd {
    Plain(File),
    Locked(Flock<File>),
}

impl Fd {
    fn file(&self) -> &File {
        match self {
            Fd::Plain(f) => f,
            Fd::Locked(f) => f,
        }
    }
}

/// An image file or block device opened with O_DIRECT.
#[derive(Debug)]
pub struct FileDevice {
    fd: Fd,
    path: PathBuf,
    kind: TargetKind,
    len: u64,
    logical: u32,
    physical: u32,
    read_only: bool,
}

impl FileDevice {
    /// Opens `path` (an image file or a block device) with O_DIRECT.
    pub fn open(path: &Path, mode: OpenMode) -> Result<FileDevice> {
        let target = path.display().to_string();
        let meta = std::fs::metadata(path).map_err(|e| Error::io(&target, "cannot open", e))?;
        let ft = meta.file_type();
        let kind = if ft.is_block_device() {
            TargetKind::BlockDevice
        } else if ft.is_file() {
            TargetKind::Image
        } else if ft.is_dir() {
            return Err(Error::NotATarget {
                target,
                reason: "is a directory, not an image file or a block device".into(),
            });
        } else {
            return Err(Error::NotATarget {
                target,
                reason: "is neither a regular file nor a block device".into(),
            });
        };
        let writable = mode == OpenMode::ReadWrite;
        let mut flags = libc::O_DIRECT;
        if writable && kind == TargetKind::BlockDevice {
            flags |= libc::O_EXCL;
        }
        let mut options = OpenOptions::new();
        options.read(true).write(writable).custom_flags(flags);
        let file = open_exclusive(&options, path, &meta).map_err(|e| match e.raw_os_error() {
            Some(libc::EBUSY) => Error::Busy {
                target: target.clone(),
                detail: busy_detail(meta.rdev()),
            },
            Some(libc::EINVAL) => Error::DirectIoUnsupported {
                target: target.clone(),
            },
            _ => Error::io(
                &target,
                if writable {
                    "cannot open for writing"
                } else {
                    "cannot open"
                },
                e,
            ),
        })?;
        let fd = if writable {
            let started = Instant::now();
            let mut file = file;
            loop {
                match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
                    Ok(locked) => break Fd::Locked(locked),
                    // A block device we opened O_EXCL has no other minfs writer: its flock is
                    // held by a non-exclusive opener, udevd's shared lock while it probes the
                    // device (systemd.io/BLOCK_DEVICE_LOCKING), which it drops in a moment.
                    Err((f, nix::errno::Errno::EWOULDBLOCK))
                        if kind == TargetKind::BlockDevice
                            && started.elapsed() < UDEV_LOCK_WAIT =>
                    {
                        file = f;
                        std::thread::sleep(Duration::from_millis(10));
                    }
                    Err((_, nix::errno::Errno::EWOULDBLOCK)) => {
                        return Err(Error::Locked {
                            target,
                            holder: super::lock_holder(path),
                        })
                    }
                    Err((_, errno)) => return Err(Error::io(&target, "flock", errno.into())),
                }
            }
        } else {
            Fd::Plain(file)
        };
        let (len, logical, physical) = match kind {
            TargetKind::BlockDevice => sys::block_device_geometry(fd.file())
                .map_err(|e| Error::io(&target, "reading the device geometry (ioctl)", e))?,
            TargetKind::Image => {
                let align =
                    sys::dio_alignment(fd.file()).map_err(|e| Error::io(&target, "statx", e))?;
                let logical = align.map(|(_, off)| off).unwrap_or(512).max(512);
                let physical = (meta.blksize() as u32).max(logical);
                (meta.len(), logical, physical)
            }
        };
        if !logical.is_power_of_two() || !physical.is_power_of_two() || physical < logical {
            return Err(Error::NotATarget {
                target,
                reason: format!(
                    "unusable sector sizes: logical {logical}, physical {physical} bytes"
                ),
            });
        }
        Ok(FileDevice {
            fd,
            path: path.to_path_buf(),
            kind,
            len,
            logical,
            physical,
            read_only: !writable,
        })
    }

    /// The path this device was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Image file or block device.
    pub fn kind(&self) -> TargetKind {
        self.kind
    }

    /// The open file, for callers that need its descriptor (e.g. `fallocate`).
    pub fn file(&self) -> &File {
        self.fd.file()
    }
}

impl BlockDevice for FileDevice {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        check_request(self, buf.as_ptr(), buf.len(), offset)?;
        self.fd.file().read_exact_at(buf, offset)
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        if self.read_only {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                "device opened read-only",
            ));
        }
        check_request(self, buf.as_ptr(), buf.len(), offset)?;
        self.fd.file().write_all_at(buf, offset)
    }

    fn flush(&self) -> io::Result<()> {
        if self.read_only {
            return Ok(());
        }
        // fdatasync: on a block device a cache flush; on an image, the host filesystem's
        // metadata needed to read the data back (e.g. unwritten-extent conversion) too.
        self.fd.file().sync_data()
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn logical_sector_size(&self) -> u32 {
        self.logical
    }

    fn physical_sector_size(&self) -> u32 {
        self.physical
    }

    fn is_read_only(&self) -> bool {
        self.read_only
    }
}

/// How long a read-write open of a block device waits for its `flock` while udevd holds a
/// shared one (it does while it runs the rules for the device, e.g. right after the previous
/// writer closed a watched device).
pub const UDEV_LOCK_WAIT: Duration = Duration::from_secs(5);

/// Why a block device (by `st_rdev`) refused an exclusive open: its mount points, or its holders.
/// How long an exclusive open (`O_EXCL`) of a block device that nothing visibly holds — not
/// mounted, no holder in sysfs — is retried while it fails with `EBUSY`.
///
/// Such a hold is usually momentary. A child process started by another thread of the same
/// program (`fork`/`posix_spawn`, as `std::process::Command` does) gets a copy of every open
/// descriptor and keeps it until it calls `exec`, where `O_CLOEXEC` closes it: a device this
/// program closed a moment ago may still be held exclusively by that copy, and an `O_EXCL`
/// reopen in the meantime fails with `EBUSY`. (Measured on Linux 6.18: with another thread
/// spawning `true` in a loop, about 1 `O_EXCL` reopen in 3 failed so; none without it.)
pub const EXCLUSIVE_OPEN_WAIT: Duration = Duration::from_secs(1);

/// `options.open(path)`, retried every 10 ms for up to [`EXCLUSIVE_OPEN_WAIT`] while it fails
/// with `EBUSY` on a block device that is neither mounted nor held by another device (see
/// there). A mounted or held device fails at once; other errors are returned as they are.
pub(crate) fn open_exclusive(
    options: &OpenOptions,
    path: &Path,
    meta: &std::fs::Metadata,
) -> io::Result<File> {
    let started = Instant::now();
    loop {
        match options.open(path) {
            Err(e)
                if e.raw_os_error() == Some(libc::EBUSY)
                    && meta.file_type().is_block_device()
                    && started.elapsed() < EXCLUSIVE_OPEN_WAIT
                    && visible_hold(meta.rdev()).is_none() =>
            {
                std::thread::sleep(Duration::from_millis(10));
            }
            result => return result,
        }
    }
}

/// What visibly holds the block device `rdev`: its mount points, or the devices stacked on
/// it (sysfs `holders`); `None` when neither.
fn visible_hold(rdev: u64) -> Option<String> {
    let (major, minor) = (libc::major(rdev), libc::minor(rdev));
    let want = format!("{major}:{minor}");
    let mut mounts = Vec::new();
    if let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") {
        for line in info.lines() {
            let fields: Vec<&str> = line.split(' ').collect();
            if fields.len() > 4 && fields[2] == want {
                mounts.push(fields[4].to_string());
            }
        }
    }
    if !mounts.is_empty() {
        return Some(format!("mounted at {}", mounts.join(", ")));
    }
    let holders: Vec<String> = std::fs::read_dir(format!("/sys/dev/block/{want}/holders"))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    if !holders.is_empty() {
        return Some(format!("held by {}", holders.join(", ")));
    }
    None
}

fn busy_detail(rdev: u64) -> String {
    if let Some(hold) = visible_hold(rdev) {
        return hold;
    }
    let named = named_holders(rdev);
    if !named.is_empty() {
        return named.join("; ");
    }
    format!(
        "opened exclusively by a process or the kernel that this process cannot see (another \
         mount or pid namespace), still after {} s",
        EXCLUSIVE_OPEN_WAIT.as_secs()
    )
}

/// Whether `path` names the block device `rdev`.
fn is_device(path: &Path, rdev: u64) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.file_type().is_block_device() && m.rdev() == rdev)
}

/// Who holds the block device `rdev`, as far as this process can see: a FUSE mount whose
/// source it is (a `minfs mount`: its server holds it), swap on it (`/proc/swaps`), and the
/// processes that have it open (`/proc/PID/fd`), by pid and command.
fn named_holders(rdev: u64) -> Vec<String> {
    let mut out = Vec::new();
    if let Ok(mounts) = crate::mountinfo::mounts() {
        for m in mounts {
            if m.source.starts_with('/') && is_device(Path::new(&m.source), rdev) {
                out.push(format!(
                    "mounted at {} ({})",
                    m.mountpoint.display(),
                    m.fstype
                ));
            }
        }
    }
    if let Ok(swaps) = std::fs::read_to_string("/proc/swaps") {
        for line in swaps.lines().skip(1) {
            if let Some(p) = line.split_whitespace().next() {
                if is_device(Path::new(p), rdev) {
                    out.push("in use as swap (swapoff it first)".into());
                }
            }
        }
    }
    let me = std::process::id();
    let mut pids = Vec::new();
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for e in dir.flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            if pid == me {
                continue;
            }
            let Ok(fds) = std::fs::read_dir(e.path().join("fd")) else {
                continue;
            };
            let holds = fds.flatten().any(|fd| {
                std::fs::read_link(fd.path()).is_ok_and(|l| l.is_absolute() && is_device(&l, rdev))
            });
            if holds {
                let comm = std::fs::read_to_string(e.path().join("comm"))
                    .map(|c| format!(" ({})", c.trim_end()))
                    .unwrap_or_default();
                pids.push(format!("{pid}{comm}"));
            }
        }
    }
    if !pids.is_empty() {
        out.push(format!("open by process {}", pids.join(", process ")));
    }
    out
}
