//! `minfs mount`: the FUSE server, in the background (the default) or the foreground.
//!
//! In the background, `minfs mount` starts itself again as the server (`--daemon-child`, in a
//! new session, stdin/stdout/stderr on /dev/null once mounted) and returns when the server
//! reports the mount established, exiting 0 only then; a server that fails before that has
//! its error printed and the command exits 1.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, ExitCode};

use anyhow::Context;

use super::EXIT_FAILURE;
use crate::fuse::daemon::{self, Started};
use crate::fuse::{max_pages, MountConfig, Server, FSTYPE};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Mount options, comma-separated: ro, rw, allow_other.
    #[arg(short = 'o', value_name = "OPTIONS", value_parser = check_options)]
    options: Vec<String>,
    /// Serve in this process until unmounted (Ctrl-C or SIGTERM unmounts lazily).
    #[arg(short, long)]
    foreground: bool,
    /// Leave fs.fuse.max_pages_limit alone. By default, as root, `minfs mount` raises it to 2048
    /// pages when it is lower (and says so), so that a read of up to 8 MiB — a Cannyls lump of
    /// up to 4 MiB with its trailer — reaches minfs as one request instead of several in a row.
    /// The limit is global and stays raised.
    #[arg(long)]
    keep_max_pages_limit: bool,
    /// Write the counts of the requests served (reads, the largest read, writes, size commits)
    /// as JSON to FILE at unmount.
    #[arg(long, value_name = "FILE")]
    stats: Option<PathBuf>,
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
    let mut cfg = config(&a.options);
    if let Some(p) = &a.stats {
        cfg.stats = Some(std::path::absolute(p).with_context(|| format!("{}", p.display()))?);
    }
    if !a.daemon_child {
        // Before the server mounts: the kernel reads the limit when the connection is made.
        if let Some(m) = max_pages::ensure_limit(a.keep_max_pages_limit).message() {
            eprintln!("minfs mount: {m}");
        }
    }
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
    if let Some(p) = &cfg_stats(a) {
        cmd.arg("--stats").arg(p);
    }
    cmd.arg("--").arg(&a.target).arg(&a.mountpoint);
    match daemon::start_server(cmd).context("mount failed")? {
        Started::Ready(pid) => {
            println!(
                "{}: mounted {} (server pid {pid})",
                a.mountpoint.display(),
                a.target.display()
            );
            Ok(ExitCode::SUCCESS)
        }
        Started::Failed(err) => {
            // The server's own message ("minfs: mount failed: ...").
            let _ = std::io::stdout().flush();
            eprint!("{err}");
            Ok(ExitCode::from(EXIT_FAILURE))
        }
    }
}

fn cfg_stats(a: &Args) -> Option<PathBuf> {
    a.stats.as_ref().and_then(|p| std::path::absolute(p).ok())
}

/// Mounts and serves in this process until the filesystem is unmounted.
fn serve(a: &Args, cfg: &MountConfig) -> anyhow::Result<ExitCode> {
    let signals = daemon::prepare_server(a.daemon_child).context("mount failed")?;
    let server = Server::mount(&a.target, &a.mountpoint, cfg).context("mount failed")?;
    let mp = server.mountpoint().to_path_buf();
    if a.daemon_child {
        daemon::report_ready().context("mount failed")?;
    } else {
        println!(
            "{}: mounted {}; serving in the foreground until it is unmounted \
             (`minfs umount {}`, or Ctrl-C)",
            mp.display(),
            server.target().display(),
            mp.display()
        );
    }
    daemon::unmount_on_signal(signals, &mp, FSTYPE);
    server.run().context("minfs mount")?;
    Ok(ExitCode::SUCCESS)
}
