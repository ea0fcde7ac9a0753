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
use crate::fuse::{max_pages, options, MountConfig, Server, FSTYPE};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Mount options, comma-separated. Honoured: ro, rw, noexec, exec, noatime, atime, sync,
    /// async, dirsync, allow_other. Accepted without effect: mount(8)'s and systemd's (defaults,
    /// [no]auto, nofail, _netdev, [no]user[s], [no]owner, [no]group, x-*, X-*, comment=),
    /// [no]dev, [no]suid and default_permissions (a minfs mount is always nodev, nosuid), and
    /// the access-time ones ([no]relatime, [no]strictatime, [no]diratime, [no]lazytime). Any
    /// other is refused by name.
    #[arg(short = 'o', value_name = "OPTIONS", value_parser = options::check)]
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

fn config(options: &[String]) -> MountConfig {
    let mut cfg = MountConfig::default();
    // Checked by clap (options::check): nothing unknown is left.
    let _ = options::apply(&mut cfg, options, true);
    cfg
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    run_with(a, None)
}

/// Makes the file services of a mount (in the process that serves it).
pub type MakeServices = fn() -> Box<dyn crate::fuse::service::Services>;

/// `mount` as [`run`] does it, for a program built on minfs whose own `mount` subcommand
/// takes these [`Args`]: the server (this program again, `PROGRAM mount --daemon-child ...`)
/// serves files through the services `services` makes.
pub fn run_with(a: Args, services: Option<MakeServices>) -> anyhow::Result<ExitCode> {
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
        serve(&a, &cfg, services)
    } else {
        start_server(&a)
    }
}

/// Starts the server process and waits for its "ready" (or its error).
fn start_server(a: &Args) -> anyhow::Result<ExitCode> {
    match spawn_server(
        &a.options,
        cfg_stats(a).as_deref(),
        &a.target,
        &a.mountpoint,
    )? {
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

/// Starts this program again as the server of a mount of `target` on `mountpoint` with
/// `options` (checked already) and waits until it reports the mount ready, or fails.
pub(crate) fn spawn_server(
    options: &[String],
    stats: Option<&std::path::Path>,
    target: &std::path::Path,
    mountpoint: &std::path::Path,
) -> anyhow::Result<Started> {
    let exe = std::env::current_exe()
        .context("mount failed: cannot find the minfs executable to start the server")?;
    let mut cmd = Command::new(exe);
    cmd.args(["mount", "--daemon-child"]);
    for o in options {
        cmd.arg("-o").arg(o);
    }
    if let Some(p) = stats {
        cmd.arg("--stats").arg(p);
    }
    cmd.arg("--").arg(target).arg(mountpoint);
    daemon::start_server(cmd).context("mount failed")
}

fn cfg_stats(a: &Args) -> Option<PathBuf> {
    a.stats.as_ref().and_then(|p| std::path::absolute(p).ok())
}

/// Mounts and serves in this process until the filesystem is unmounted.
fn serve(a: &Args, cfg: &MountConfig, services: Option<MakeServices>) -> anyhow::Result<ExitCode> {
    let signals = daemon::prepare_server(a.daemon_child).context("mount failed")?;
    let server = Server::mount_with(&a.target, &a.mountpoint, cfg, services.map(|m| m()))
        .context("mount failed")?;
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
