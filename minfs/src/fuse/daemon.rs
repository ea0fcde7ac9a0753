//! Running a FUSE server in the background or the foreground: shared by `minfs mount` and
//! `hddsim emulate`.
//!
//! In the background the command starts itself again as the server (in a new session,
//! stdin/stdout/stderr on /dev/null once mounted); the server prints `ready PID` on stdout
//! once its mount exists, and the starting command returns then. In the foreground SIGINT,
//! SIGTERM and SIGHUP unmount (lazily) and the server exits once the files on it are closed.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use nix::sys::signal::{SigSet, Signal};

use super::FuseError;

/// How a background server's start ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Started {
    /// Mounted; the server's pid.
    Ready(String),
    /// The server failed before mounting and said why on stderr (its own message, printed
    /// as is by the caller).
    Failed(String),
}

/// Starts `cmd` (this program again, as the server) and waits for its `ready PID` line.
/// An error says how a server that printed nothing exited.
pub fn start_server(mut cmd: Command) -> Result<Started, FuseError> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| FuseError(format!("cannot start the server process: {e}")))?;
    let mut line = String::new();
    let read = BufReader::new(child.stdout.take().expect("piped"))
        .read_line(&mut line)
        .map_err(|e| FuseError(format!("reading the server's report: {e}")))?;
    if let Some(pid) = line.trim().strip_prefix("ready ") {
        return Ok(Started::Ready(pid.to_string()));
    }
    let status = child
        .wait()
        .map_err(|e| FuseError(format!("waiting for the server: {e}")))?;
    let mut err = String::new();
    let _ = child.stderr.take().expect("piped").read_to_string(&mut err);
    if err.trim().is_empty() {
        return Err(FuseError(format!(
            "the server exited with {status} before mounting{}",
            if read > 0 {
                format!(" (it said {:?})", line.trim())
            } else {
                String::new()
            }
        )));
    }
    Ok(Started::Failed(err))
}

/// The server's first steps, before any thread exists: a background server leaves the
/// caller's session and closes inherited descriptors; SIGINT, SIGTERM and SIGHUP are blocked
/// so that only the thread [`unmount_on_signal`] starts receives them.
pub fn prepare_server(background: bool) -> Result<SigSet, FuseError> {
    if background {
        // Out of the caller's session and process group: no SIGINT or SIGHUP from its terminal.
        let _ = nix::unistd::setsid();
        close_inherited_fds();
    }
    let mut signals = SigSet::empty();
    for s in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
        signals.add(s);
    }
    signals
        .thread_block()
        .map_err(|e| FuseError(format!("blocking signals: {e}")))?;
    Ok(signals)
}

/// A background server, once mounted: reports `ready PID` and detaches from the terminal.
pub fn report_ready() -> Result<(), FuseError> {
    println!("ready {}", std::process::id());
    std::io::stdout()
        .flush()
        .map_err(|e| FuseError(format!("reporting readiness: {e}")))?;
    detach_stdio().map_err(|e| FuseError(format!("detaching from the terminal: {e}")))?;
    let _ = nix::unistd::chdir("/");
    Ok(())
}

/// A thread that detaches the mount of type `fstype` at `mountpoint` lazily (umount2
/// MNT_DETACH as root, `fusermount3 -u -z` otherwise) on each of `signals`; the session then
/// ends once the files open on it are closed.
pub fn unmount_on_signal(signals: SigSet, mountpoint: &Path, fstype: &'static str) {
    let mp: PathBuf = mountpoint.to_path_buf();
    std::thread::spawn(move || {
        while signals.wait().is_ok() {
            let _ = super::mounts::unmount_typed(&mp, true, fstype);
        }
    });
}

/// Closes every descriptor above stderr that the process starting the server left open
/// without close-on-exec (a shell's or a test harness's pipes): a long-lived server must not
/// keep them open.
fn close_inherited_fds() {
    let fds: Vec<i32> = match std::fs::read_dir("/proc/self/fd") {
        Ok(dir) => dir
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse().ok())
            .filter(|&fd| fd > 2)
            .collect(),
        Err(_) => return,
    };
    // The directory's own descriptor is among them and already closed: EBADF, ignored.
    for fd in fds {
        let _ = nix::unistd::close(fd);
    }
}

/// Points stdin, stdout and stderr at /dev/null (the process that started us has gone).
fn detach_stdio() -> std::io::Result<()> {
    let null = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")?;
    for fd in 0..=2 {
        nix::unistd::dup2(null.as_raw_fd(), fd)?;
    }
    Ok(())
}
