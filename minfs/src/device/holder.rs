//! Who holds a target's lock: named in [`Error::Locked`](crate::Error::Locked) so that a user
//! knows what to close or unmount.
//!
//! The holder is found from `/proc/locks` (the process that took the `flock` on the target's
//! inode) and `/proc/self/mountinfo` (a `fuse.minfs` mount whose source is the target). Where
//! neither says, it is [`LockHolder::Unknown`].

use std::fmt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Who holds the read-write lock of a target.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LockHolder {
    /// This process (another read-write open of the same target).
    ThisProcess,
    /// A minfs FUSE mount of the target.
    Mount {
        /// Where it is mounted.
        mountpoint: PathBuf,
        /// Its server process, if known.
        pid: Option<u32>,
    },
    /// Another process.
    Process {
        /// Its process id.
        pid: u32,
        /// Its command name (`/proc/PID/comm`), if readable.
        comm: Option<String>,
    },
    /// Nothing tells (e.g. `/proc` not mounted, or the holder in another mount namespace).
    Unknown,
}

impl LockHolder {
    /// What to do about it.
    pub fn advice(&self) -> String {
        match self {
            LockHolder::ThisProcess => "a target opens read-write once per process: open it once \
                and share the Filesystem (several files of one filesystem can be open at once)"
                .into(),
            LockHolder::Mount { mountpoint, .. } => format!(
                "unmount it first (minfs umount {}), or use its files through the mount",
                mountpoint.display()
            ),
            LockHolder::Process { .. } | LockHolder::Unknown => {
                "only one process may open a target read-write".into()
            }
        }
    }
}

impl fmt::Display for LockHolder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LockHolder::ThisProcess => write!(f, "this process"),
            LockHolder::Mount { mountpoint, pid } => {
                write!(f, "the minfs mount at {}", mountpoint.display())?;
                match pid {
                    Some(pid) => write!(f, " (server process {pid})"),
                    None => Ok(()),
                }
            }
            LockHolder::Process { pid, comm } => match comm {
                Some(comm) => write!(f, "process {pid} ({comm})"),
                None => write!(f, "process {pid}"),
            },
            LockHolder::Unknown => write!(f, "another process"),
        }
    }
}

/// The holder of the `flock` on `path`, as far as `/proc` tells.
pub fn lock_holder(path: &Path) -> LockHolder {
    let pid = std::fs::metadata(path)
        .ok()
        .and_then(|m| std::fs::read_to_string("/proc/locks").ok().map(|t| (m, t)))
        .and_then(|(m, locks)| flock_holder(&locks, m.dev(), m.ino()));
    let me = std::process::id();
    if pid == Some(me) {
        return LockHolder::ThisProcess;
    }
    if let Some(mountpoint) = minfs_mount_of(path) {
        return LockHolder::Mount { mountpoint, pid };
    }
    match pid {
        Some(pid) => LockHolder::Process {
            pid,
            comm: std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .ok()
                .map(|c| c.trim_end().to_string()),
        },
        None => LockHolder::Unknown,
    }
}

/// The process holding a write `flock` on inode `ino` of device `dev`, from `/proc/locks`
/// text (`1: FLOCK  ADVISORY  WRITE 1234 fe:00:5890103 0 EOF`; major and minor in hex; lines
/// with `->` are waiters).
pub(crate) fn flock_holder(locks: &str, dev: u64, ino: u64) -> Option<u32> {
    let want = format!(
        "{:02x}:{:02x}:{ino}",
        libc::major(dev as libc::dev_t),
        libc::minor(dev as libc::dev_t)
    );
    locks.lines().find_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        let ok = f.len() >= 6 && f[1] == "FLOCK" && f[3] == "WRITE" && f[5] == want;
        ok.then(|| f[4].parse().ok()).flatten()
    })
}

/// The mount point of a `fuse.minfs` mount of `target`, if this process sees one.
fn minfs_mount_of(target: &Path) -> Option<PathBuf> {
    let target = target.canonicalize().ok()?;
    crate::mountinfo::mounts().ok()?.into_iter().find_map(|m| {
        let same = m.fstype == crate::mountinfo::MINFS_FSTYPE
            && Path::new(&m.source).canonicalize().ok().as_ref() == Some(&target);
        same.then_some(m.mountpoint)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_locks_lines() {
        let dev = libc::makedev(0xfe, 0) as u64;
        let text = "1: FLOCK  ADVISORY  WRITE 31987 07:00:12 0 EOF\n\
                    2: FLOCK  ADVISORY  READ 22170 fe:00:77 0 EOF\n\
                    3: POSIX  ADVISORY  WRITE 22171 fe:00:77 0 EOF\n\
                    3: -> FLOCK  ADVISORY  WRITE 4242 fe:00:77 0 EOF\n\
                    4: FLOCK  ADVISORY  WRITE 8775 fe:00:77 0 EOF\n";
        assert_eq!(flock_holder(text, dev, 77), Some(8775));
        assert_eq!(flock_holder(text, dev, 78), None);
    }
}
