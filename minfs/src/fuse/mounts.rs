//! Mount points: finding a minfs mount in `/proc/self/mountinfo`, unmounting it, and the
//! server processes behind it.

use std::io;
use std::path::{Component, Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use super::{FuseError, FSTYPE};

pub use crate::mountinfo::{mounts, parse_mountinfo, MountEntry};

/// The topmost mount at `mountpoint` (an absolute, normalised path), if any.
pub fn mount_at(mountpoint: &Path) -> io::Result<Option<MountEntry>> {
    Ok(mounts()?
        .into_iter()
        .rev()
        .find(|m| m.mountpoint == mountpoint))
}

/// `path` made absolute with its directory's symlinks resolved, without touching `path`
/// itself (a mount point whose server died cannot be stat'ed: ENOTCONN).
pub fn absolute(path: &Path) -> io::Result<PathBuf> {
    let abs = std::path::absolute(path)?;
    let mut parts: Vec<Component<'_>> = Vec::new();
    for c in abs.components() {
        match c {
            Component::ParentDir => {
                if parts.len() > 1 {
                    parts.pop();
                }
            }
            Component::CurDir => {}
            other => parts.push(other),
        }
    }
    let norm: PathBuf = parts.iter().collect();
    match (norm.parent(), norm.file_name()) {
        (Some(dir), Some(name)) => Ok(dir.canonicalize()?.join(name)),
        _ => Ok(norm),
    }
}

/// Processes that hold `/dev/fuse` and `target` open: the servers of mounts of `target`
/// (this process excluded). Processes whose descriptors cannot be read are skipped.
pub fn server_pids(target: &Path) -> Vec<u32> {
    let me = std::process::id();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut pids = Vec::new();
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
        let (mut fuse, mut tgt) = (false, false);
        for fd in fds.flatten() {
            if let Ok(link) = std::fs::read_link(fd.path()) {
                fuse |= link == Path::new("/dev/fuse");
                tgt |= link == target;
            }
        }
        if fuse && tgt {
            pids.push(pid);
        }
    }
    pids
}

/// Whether process `pid` has exited (gone, or a zombie waiting to be reaped).
pub fn exited(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command name in parentheses.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
        Err(_) => true,
    }
}

/// Unmounts the minfs mount at `mountpoint` (umount2 as root, `fusermount3 -u` otherwise);
/// `lazy` detaches it even while files are open (MNT_DETACH, `-z`). Returns the server
/// processes found before unmounting, for the caller to wait on.
pub fn unmount(mountpoint: &Path, lazy: bool) -> Result<(MountEntry, Vec<u32>), FuseError> {
    unmount_typed(mountpoint, lazy, FSTYPE)
}

/// [`unmount`] for a mount of type `fstype` (e.g. `fuse.hddsim`): anything else mounted at
/// `mountpoint` is refused.
pub fn unmount_typed(
    mountpoint: &Path,
    lazy: bool,
    fstype: &str,
) -> Result<(MountEntry, Vec<u32>), FuseError> {
    let flags = if lazy {
        nix::mount::MntFlags::MNT_DETACH
    } else {
        nix::mount::MntFlags::empty()
    };
    unmount_with_flags(mountpoint, flags, fstype)
}

/// [`unmount_typed`] with umount2's `flags` (MNT_DETACH: lazy; MNT_FORCE: abort the FUSE
/// connection, as `umount -f`). As a user, `fusermount3 -u` (`-z` when MNT_DETACH; it has
/// no force).
pub fn unmount_with_flags(
    mountpoint: &Path,
    flags: nix::mount::MntFlags,
    fstype: &str,
) -> Result<(MountEntry, Vec<u32>), FuseError> {
    let lazy = flags.contains(nix::mount::MntFlags::MNT_DETACH);
    let mp = absolute(mountpoint).map_err(|e| {
        FuseError(if e.kind() == io::ErrorKind::NotFound {
            format!("{}: does not exist", mountpoint.display())
        } else {
            format!(
                "{}: cannot resolve the mount point: {e}",
                mountpoint.display()
            )
        })
    })?;
    let shown = mp.display().to_string();
    let entry = mount_at(&mp)
        .map_err(|e| FuseError(format!("reading /proc/self/mountinfo: {e}")))?
        .ok_or_else(|| match std::fs::symlink_metadata(&mp) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                FuseError(format!("{shown}: does not exist"))
            }
            _ => FuseError(format!("{shown}: not mounted (nothing is mounted there)")),
        })?;
    if entry.fstype != fstype {
        let kind = fstype.strip_prefix("fuse.").unwrap_or(fstype);
        return Err(FuseError(format!(
            "{shown}: not a {kind} mount ({} {}); use umount(8) for it",
            entry.fstype, entry.source
        )));
    }
    let pids = server_pids(Path::new(&entry.source));
    if nix::unistd::geteuid().is_root() {
        nix::mount::umount2(&mp, flags).map_err(|e| match e {
            nix::errno::Errno::EBUSY => FuseError(format!(
                "{shown}: busy: files on it are open or it is some process's working \
                 directory; close them, or unmount lazily with --lazy"
            )),
            e => FuseError(format!("{shown}: umount2: {e}")),
        })?;
    } else {
        fusermount_unmount(&mp, lazy)?;
    }
    Ok((entry, pids))
}

fn fusermount_unmount(mp: &Path, lazy: bool) -> Result<(), FuseError> {
    let mut last = String::new();
    for prog in ["fusermount3", "fusermount"] {
        let mut cmd = Command::new(prog);
        cmd.arg("-u");
        if lazy {
            cmd.arg("-z");
        }
        cmd.arg("--").arg(mp);
        match cmd.output() {
            Ok(o) if o.status.success() => return Ok(()),
            Ok(o) => {
                return Err(FuseError(format!(
                    "{}: {prog} -u failed: {}",
                    mp.display(),
                    String::from_utf8_lossy(&o.stderr).trim()
                )))
            }
            Err(e) => last = format!("{prog}: {e}"),
        }
    }
    Err(FuseError(format!(
        "{}: unmounting as a user needs fusermount3 (Debian package fuse3): {last}",
        mp.display()
    )))
}

/// Waits until every process in `pids` has exited; false on timeout.
pub fn wait_exited(pids: &[u32], timeout: Duration) -> bool {
    let start = Instant::now();
    loop {
        if pids.iter().all(|&p| exited(p)) {
            return true;
        }
        if start.elapsed() > timeout {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absolute_paths() {
        let cwd = std::env::current_dir().unwrap().canonicalize().unwrap();
        assert_eq!(absolute(Path::new("x")).unwrap(), cwd.join("x"));
        assert_eq!(absolute(Path::new("./x/")).unwrap(), cwd.join("x"));
        assert_eq!(absolute(Path::new("/")).unwrap(), Path::new("/"));
        assert!(exited(u32::MAX));
        assert!(!exited(std::process::id()));
    }
}
