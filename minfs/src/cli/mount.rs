//! `minfs mount`: the FUSE server, in the background (the default) or the foreground.
//!
//! In the background, `minfs mount` starts itself again as the server (`--daemon-child`, in a
//! new session, stdin/stdout/stderr on /dev/null once mounted) and returns when the server
//! reports the mount established, exiting 0 only then; a server that fails before that has
//! its error printed and the command exits 1.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};

use anyhow::{bail, Context};
use nix::sys::signal::{SigSet, Signal};

use super::EXIT_FAILURE;
use crate::fuse::{mounts, MountConfig, Server};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Mount options, comma-separated: ro, rw, allow_other.
    #[arg(short = 'o', value_name = "OPTIONS", value_parser = check_options)]
    options: Vec<String>,
    /// Serve in this process until unmounted (Ctrl-C or SIGTERM unmounts lazily).
    #[arg(short, long)]
    foreground: bool,
    /// The server started by `minfs mount` itself: reports "ready PID" on stdout once mounted.
    #[arg(long, hide = true)]
    daemon_child: bool,
    /// Image file or block device holding a minfs filesystem.
    #[arg(value_name = "TARGET")]
    target: PathBuf,
    /// An existing directory.
    #[arg(value_name = "MOUNTPOINT")]
    mountpoint: PathBuf,
}

const OPTIONS: [&str; 3] = ["ro", "rw", "allow_other"];

fn check_options(s: &str) -> Result<String, String> {
    for o in s.split(',') {
        if !OPTIONS.contains(&o) {
            return Err(format!(
                "unknown mount option {o:?} (known: {})",
                OPTIONS.join(", ")
            ));
        }
    }
    Ok(s.to_string())
}

fn config(options: &[String]) -> MountConfig {
    let mut cfg = MountConfig::default();
    for o in options.iter().flat_map(|s| s.split(',')) {
        match o {
            "ro" => cfg.read_only = true,
            "rw" => cfg.read_only = false,
            "allow_other" => cfg.allow_other = true,
            _ => unreachable!("checked by check_options"),
        }
    }
    cfg
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    let cfg = config(&a.options);
    if a.foreground || a.daemon_child {
        serve(&a, &cfg)
    } else {
        start_server(&a)
    }
}

/// Starts the server process and waits for its "ready" (or its error).
fn start_server(a: &Args) -> anyhow::Result<ExitCode> {
    let exe = std::env::current_exe()
        .context("mount failed: cannot find the minfs executable to start the server")?;
    let mut cmd = Command::new(exe);
    cmd.args(["mount", "--daemon-child"]);
    for o in &a.options {
        cmd.arg("-o").arg(o);
    }
    cmd.arg("--").arg(&a.target).arg(&a.mountpoint);
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("mount failed: cannot start the server process")?;
    let mut line = String::new();
    let read = BufReader::new(child.stdout.take().expect("piped"))
        .read_line(&mut line)
        .context("mount failed: reading the server's report")?;
    if let Some(pid) = line.trim().strip_prefix("ready ") {
        println!(
            "{}: mounted {} (server pid {pid})",
            a.mountpoint.display(),
            a.target.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let status = child
        .wait()
        .context("mount failed: waiting for the server")?;
    let mut err = String::new();
    let _ = child.stderr.take().expect("piped").read_to_string(&mut err);
    if err.trim().is_empty() {
        bail!(
            "mount failed: the server exited with {status} before mounting{}",
            if read > 0 {
                format!(" (it said {:?})", line.trim())
            } else {
                String::new()
            }
        );
    }
    // The server's own message ("minfs: mount failed: ...").
    let _ = std::io::stdout().flush();
    eprint!("{err}");
    Ok(ExitCode::from(EXIT_FAILURE))
}

/// Mounts and serves in this process until the filesystem is unmounted.
fn serve(a: &Args, cfg: &MountConfig) -> anyhow::Result<ExitCode> {
    if a.daemon_child {
        // Out of the caller's session and process group: no SIGINT or SIGHUP from its terminal.
        let _ = nix::unistd::setsid();
        close_inherited_fds();
    }
    // Block the signals that end the server before any thread exists, so that only the
    // waiting thread below receives them.
    let mut signals = SigSet::empty();
    for s in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
        signals.add(s);
    }
    signals
        .thread_block()
        .context("mount failed: blocking signals")?;
    let server = Server::mount(&a.target, &a.mountpoint, cfg).context("mount failed")?;
    let mp = server.mountpoint().to_path_buf();
    if a.daemon_child {
        println!("ready {}", std::process::id());
        std::io::stdout()
            .flush()
            .context("mount failed: reporting readiness")?;
        detach_stdio().context("mount failed: detaching from the terminal")?;
        let _ = nix::unistd::chdir("/");
    } else {
        println!(
            "{}: mounted {}; serving in the foreground until it is unmounted \
             (`minfs umount {}`, or Ctrl-C)",
            mp.display(),
            server.target().display(),
            mp.display()
        );
    }
    let wait_mp = mp.clone();
    std::thread::spawn(move || {
        // Each signal detaches the mount; the session ends once its open files are closed.
        while signals.wait().is_ok() {
            let _ = mounts::unmount(&wait_mp, true);
        }
    });
    server.run().context("minfs mount")?;
    Ok(ExitCode::SUCCESS)
}

/// Closes every descriptor above stderr that the process starting `minfs mount` left open
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
