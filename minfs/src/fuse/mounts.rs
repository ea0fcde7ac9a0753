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

/// Where servers record themselves: `/run/minfs` as root, `$XDG_RUNTIME_DIR/minfs` otherwise.
fn record_dir() -> Option<PathBuf> {
    if nix::unistd::geteuid().is_root() {
        return Some(PathBuf::from("/run/minfs"));
    }
    std::env::var_os("XDG_RUNTIME_DIR").map(|d| PathBuf::from(d).join("minfs"))
}

/// The record of the server of FUSE connection `conn`.
fn record_path(conn: u32) -> Option<PathBuf> {
    record_dir().map(|d| d.join(format!("fuse-connection-{conn}")))
}

/// A process's start time (`/proc/PID/stat` field 22, clock ticks since boot): with the pid,
/// it names one process even after the pid is reused.
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    // Fields after the command: state is field 3, so start time (22) is the 20th here.
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// A server's record of which FUSE connection is its own, removed when dropped.
///
/// The kernel does not say which process serves a FUSE connection (a `/dev/fuse` descriptor's
/// fdinfo does not name it), so a server records it at mount: the connection's number is the
/// minor of the mount's `st_dev` in mountinfo, and the record holds the server's pid and start
/// time. `minfs umount` waits for that process only.
#[derive(Debug)]
pub struct ServerRecord(PathBuf);

impl ServerRecord {
    /// Records this process as the server of the `fstype` mount at `mountpoint` (absolute),
    /// which it has just mounted. `None` when it cannot be recorded (no runtime directory, no
    /// such mount): umount then falls back to [`server_pids`].
    pub fn create(mountpoint: &Path, fstype: &str) -> Option<ServerRecord> {
        let entry = mounts()
            .ok()?
            .into_iter()
            .rev()
            .find(|m| m.mountpoint == mountpoint && m.fstype == fstype)?;
        let path = record_path(entry.dev.1)?;
        std::fs::create_dir_all(path.parent()?).ok()?;
        let pid = std::process::id();
        // The mount point too: a record left by a killed server whose mount was then removed
        // by someone else must not be taken for a later mount's with the same number.
        let text = format!(
            "{pid} {} {fstype}\n{}\n",
            start_time(pid)?,
            mountpoint.display()
        );
        let tmp = path.with_extension(format!("tmp{pid}"));
        std::fs::write(&tmp, text).ok()?;
        std::fs::rename(&tmp, &path).ok()?;
        Some(ServerRecord(path))
    }
}

impl Drop for ServerRecord {
    fn drop(&mut self) {
        // Only our own: a later server of a reused connection number has replaced it.
        let me = std::process::id();
        let ours = std::fs::read_to_string(&self.0)
            .ok()
            .is_some_and(|t| t.split(' ').next() == Some(&me.to_string()));
        if ours {
            let _ = std::fs::remove_file(&self.0);
        }
    }
}

/// The server of the mount `entry`, from its record: `Some([pid])` while it runs, `Some([])`
/// when the recorded server has gone (killed: nothing to wait for), `None` without a record.
pub fn recorded_server(entry: &MountEntry) -> Option<Vec<u32>> {
    let text = std::fs::read_to_string(record_path(entry.dev.1)?).ok()?;
    let (first, mountpoint) = text.split_once('\n')?;
    if mountpoint.trim_end_matches('\n') != entry.mountpoint.display().to_string() {
        return None;
    }
    let f: Vec<&str> = first.split(' ').collect();
    if f.len() != 3 || f[2] != entry.fstype {
        return None;
    }
    let (pid, start): (u64, u64) = (f[0].parse().ok()?, f[1].parse().ok()?);
    let pid = u32::try_from(pid).ok()?;
    let alive = !exited(pid) && start_time(pid) == Some(start);
    Some(if alive { vec![pid] } else { Vec::new() })
}

/// The server processes of the mount `entry`: its recorded server ([`ServerRecord`]) when
/// there is a record, else every process holding `/dev/fuse` and the source ([`server_pids`]).
pub fn servers_of(entry: &MountEntry) -> Vec<u32> {
    recorded_server(entry).unwrap_or_else(|| server_pids(Path::new(&entry.source)))
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
    let pids = servers_of(&entry);
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
    if pids.is_empty() {
        // A recorded server that died (killed) left its record: the mount is gone now.
        if let Some(p) = record_path(entry.dev.1) {
            if recorded_server(&entry).is_some_and(|v| v.is_empty()) {
                let _ = std::fs::remove_file(p);
            }
        }
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
