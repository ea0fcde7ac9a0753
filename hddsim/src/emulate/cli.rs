//! `hddsim emulate` and `hddsim umount`.
//!
//! ```text
//! hddsim emulate --profile PROFILE --backing IMAGE [--create-sparse] [--clock real|virtual]
//!                [--log FILE] [--write-log FILE] [--stats FILE] [--sync-backing]
//!                [--bad-sectors LBAS] [--latent-errors COUNT [--seed S]]
//!                [--keep-max-pages-limit] [--foreground] MOUNTPOINT
//! hddsim umount [--lazy] [--timeout SECONDS] MOUNTPOINT
//! ```
//!
//! Without `--foreground` the server runs in the background and `emulate` returns once the
//! mount exists (exit 0 only then), like `minfs mount` (the same helpers,
//! `minfs::fuse::daemon`). `umount` returns once the server has exited, so the backing image
//! is free again.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use fuser::MountOption;
use minfs::fuse::daemon::{self, Started};
use minfs::fuse::{max_pages, mounts};

use super::backing::{self, Backing};
use super::kstamp::KernelStamps;
use super::latent::LatentErrors;
use super::server::EmulatorFs;
use super::{Clock, DriveQueue};
use crate::profile;

/// The type of an emulator's mount in `/proc/self/mountinfo`.
pub const FSTYPE: &str = "fuse.hddsim";

/// `hddsim emulate`'s arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct EmulateArgs {
    /// The drive profile: a file, or the name of a shipped one (`st1000dm003`,
    /// `st1000dm003-merge`, `st1000dm003-4kn`; built in, and looked for first in hddsim/profiles
    /// and PREFIX/share/hddsim/profiles), optionally with overrides:
    /// `PROFILE+PARAM=VALUE[,PARAM=VALUE…]` (e.g. `st1000dm003+write_hit_clean=keep`).
    #[arg(long, value_name = "PROFILE")]
    pub profile: String,
    /// The image holding the drive's data (its size is the drive's; a multiple of 512 bytes,
    /// at most the profile's capacity). Held exclusively (flock) while the emulator runs.
    /// Zeros written to it are stored as holes (punched), so a sparse image of the whole
    /// drive takes host space only for the data.
    #[arg(long, value_name = "IMAGE")]
    pub backing: PathBuf,
    /// Create IMAGE first: a sparse file of the profile's whole capacity (no host space
    /// until data is written). Refused if IMAGE exists.
    #[arg(long)]
    pub create_sparse: bool,
    /// `real`: replies wait for their modelled completion. `virtual`: replies are immediate
    /// and each request starts when the previous one completed (deterministic, for tests).
    #[arg(long, value_enum, default_value = "real")]
    pub clock: Clock,
    /// Write one line per request (op, sectors, modelled arrival/start/end) to FILE.
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,
    /// Record every write (position, length, data) and flush the drive accepts, in order, to
    /// FILE (docs/WRITELOG.md): the initial image plus these writes is the final image, and
    /// crash states are built from them (`crashcheck`).
    #[arg(long, value_name = "FILE")]
    pub write_log: Option<PathBuf>,
    /// Write the final statistics (as `stats.json` in the mount) to FILE at unmount.
    #[arg(long, value_name = "FILE")]
    pub stats: Option<PathBuf>,
    /// Make each flush also fdatasync the backing image (the host disk's flush time then adds
    /// to the emulated one's). Without it the data is on the image (O_DIRECT) but may sit in
    /// the host disk's volatile cache.
    #[arg(long)]
    pub sync_backing: bool,
    /// Leave fs.fuse.max_pages_limit alone. By default, as root, `hddsim emulate` raises it
    /// to 2048 pages when it is lower (and says so), so that the loop device's requests of up
    /// to 8 MiB reach the emulated drive whole, as they would a real one, rather than split
    /// into 1 MiB pieces served one after the other. The limit is global and stays raised.
    #[arg(long)]
    pub keep_max_pages_limit: bool,
    /// Time each request's arrival at the drive when the server's handler takes it. By
    /// default (clock real, as root, where tracefs has FUSE's `fuse_request_send`
    /// tracepoint) it is when the kernel queued the request, before the kernel's copy of its
    /// data to the server, as a drive takes a command when the host sends it;
    /// `stats.json`'s `arrivals` counts both.
    #[arg(long)]
    pub handler_arrival: bool,
    /// Send each reply at the request's modelled completion. By default (where the kernel's
    /// request ends are recorded: clock real, as root, FUSE's `fuse_request_end` tracepoint)
    /// a reply is sent earlier by the time replies of its kind (operation and size) took to
    /// reach the kernel lately, so that the kernel sees the request complete when the
    /// modelled drive completes it; `stats.json`'s `reply_path` says by how much, and what
    /// remains.
    #[arg(long)]
    pub reply_at_completion: bool,
    /// Serve at the normal priority. By default (clock real, as root) the threads that take
    /// requests, stamp them and send the replies run at a real-time priority (SCHED_FIFO 10),
    /// so that a reply leaves at its time even while the program under test keeps every CPU
    /// busy; `stats.json`'s `late_replies` counts the replies that did not.
    #[arg(long)]
    pub no_realtime: bool,
    /// Latent sector errors: these 512-byte LBAs cannot be read (comma-separated LBAs or
    /// inclusive ranges A-B). A read touching one fails with EIO after the profile's
    /// read_error_recovery_ms; a write covering one makes it readable again (reallocation on
    /// write). `stats.json` lists those still unreadable.
    #[arg(long, value_name = "LBAS")]
    pub bad_sectors: Option<String>,
    /// Latent sector errors drawn at random: COUNT unreadable physical sectors, in clusters
    /// (spatial locality, after Bairavasundaram et al., SIGMETRICS 2007; the cluster shape is
    /// an estimate: docs/HDD-MODEL.md), from --seed. Adds to --bad-sectors.
    #[arg(long, value_name = "COUNT")]
    pub latent_errors: Option<u64>,
    /// The seed of --latent-errors.
    #[arg(long, value_name = "S", default_value_t = 1)]
    pub seed: u64,
    /// Serve in this process until unmounted (Ctrl-C or SIGTERM unmounts lazily).
    #[arg(short, long)]
    pub foreground: bool,
    /// The server started by `hddsim emulate` itself: reports "ready PID" once mounted.
    #[arg(long, hide = true)]
    pub daemon_child: bool,
    /// An existing directory: the mount shows `disk` (the drive) and `stats.json` there.
    #[arg(value_name = "MOUNTPOINT")]
    pub mountpoint: PathBuf,
}

/// `hddsim umount`'s arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct UmountArgs {
    /// Detach now even with files open; the server exits once they are closed (not waited for).
    #[arg(short, long)]
    pub lazy: bool,
    /// Seconds to wait for the server to exit.
    #[arg(long, default_value_t = 60, value_name = "SECONDS")]
    pub timeout: u64,
    /// Where an emulator is mounted.
    #[arg(value_name = "MOUNTPOINT")]
    pub mountpoint: PathBuf,
}

/// Runs `hddsim emulate`; the message of an error is for stderr.
pub fn emulate(a: &EmulateArgs, out: &mut dyn std::io::Write) -> Result<(), String> {
    if !a.daemon_child {
        // Before the server mounts: the kernel reads the limit when the connection is made.
        if let Some(m) = max_pages::ensure_limit(a.keep_max_pages_limit).message() {
            eprintln!("hddsim emulate: {m}");
        }
    }
    if a.create_sparse && !a.daemon_child {
        let capacity = profile::load(&a.profile)
            .map_err(|e| e.to_string())?
            .capacity_bytes;
        backing::create_sparse(&a.backing, capacity)?;
    }
    if a.foreground || a.daemon_child {
        return serve(a, out);
    }
    let exe = std::env::current_exe()
        .map_err(|e| format!("cannot find the hddsim executable to start the server: {e}"))?;
    let mut cmd = Command::new(exe);
    cmd.args(["emulate", "--daemon-child", "--profile", &a.profile]);
    cmd.arg("--backing").arg(&a.backing);
    cmd.args([
        "--clock",
        if a.clock == Clock::Real {
            "real"
        } else {
            "virtual"
        },
    ]);
    if let Some(l) = &a.log {
        cmd.arg("--log").arg(absolute(l)?);
    }
    if let Some(s) = &a.stats {
        cmd.arg("--stats").arg(absolute(s)?);
    }
    if let Some(w) = &a.write_log {
        cmd.arg("--write-log").arg(absolute(w)?);
    }
    if a.sync_backing {
        cmd.arg("--sync-backing");
    }
    if a.handler_arrival {
        cmd.arg("--handler-arrival");
    }
    if a.reply_at_completion {
        cmd.arg("--reply-at-completion");
    }
    if a.no_realtime {
        cmd.arg("--no-realtime");
    }
    if let Some(b) = &a.bad_sectors {
        cmd.arg("--bad-sectors").arg(b);
    }
    if let Some(n) = a.latent_errors {
        cmd.arg("--latent-errors").arg(n.to_string());
        cmd.arg("--seed").arg(a.seed.to_string());
    }
    cmd.arg("--").arg(&a.mountpoint);
    match daemon::start_server(cmd).map_err(|e| format!("emulate failed: {e}"))? {
        Started::Ready(pid) => writeln!(
            out,
            "{}: emulating {} on {} (server pid {pid})",
            a.mountpoint.display(),
            a.profile,
            a.backing.display()
        )
        .map_err(|e| e.to_string()),
        // The server's own message, without its "hddsim: error: " prefix.
        Started::Failed(err) => Err(err
            .trim_end()
            .trim_start_matches("hddsim: error: ")
            .to_string()),
    }
}

fn absolute(p: &Path) -> Result<PathBuf, String> {
    std::path::absolute(p).map_err(|e| format!("{}: {e}", p.display()))
}

fn serve(a: &EmulateArgs, out: &mut dyn std::io::Write) -> Result<(), String> {
    let signals = daemon::prepare_server(a.daemon_child).map_err(|e| e.to_string())?;
    let profile = profile::load(&a.profile).map_err(|e| e.to_string())?;
    let mp =
        mounts::absolute(&a.mountpoint).map_err(|e| format!("{}: {e}", a.mountpoint.display()))?;
    match std::fs::metadata(&mp) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return Err(format!("{}: not a directory", mp.display())),
        Err(e) => return Err(format!("{}: mount point: {e}", mp.display())),
    }
    if let Some(m) = mounts::mount_at(&mp).map_err(|e| format!("/proc/self/mountinfo: {e}"))? {
        if m.fstype == FSTYPE {
            return Err(format!(
                "{}: already an emulator's mount (of {}); unmount it first",
                mp.display(),
                m.source
            ));
        }
    }
    let backing = Backing::open(&a.backing, profile.capacity_bytes)?;
    let latent = latent_errors(a, backing.size(), profile.physical_sector_bytes)?;
    let log = match &a.log {
        Some(p) => Some(File::create(p).map_err(|e| format!("{}: {e}", p.display()))?),
        None => None,
    };
    let queue = DriveQueue::new(&profile, a.clock, log).map_err(|e| format!("request log: {e}"))?;
    if a.clock == Clock::Real && !a.no_realtime {
        // This thread serves the session; the repliers and the stamp reader follow the flag.
        match super::server::set_realtime() {
            Ok(()) => super::server::REALTIME.store(true, std::sync::atomic::Ordering::Relaxed),
            Err(e) => eprintln!(
                "hddsim emulate: serving at the normal priority (a real-time one needs root: {e})"
            ),
        }
    }
    let (size, path) = (backing.size(), backing.path().to_path_buf());
    let mut fs = EmulatorFs::with_options(
        backing,
        &format!("{} ({})", profile.stem, profile.name),
        queue,
        a.stats.clone(),
        a.sync_backing,
    );
    if !latent.is_empty() {
        fs.set_latent_errors(latent, profile.read_error_recovery_ns);
    }
    if let Some(p) = &a.write_log {
        let f = File::create(p).map_err(|e| format!("{}: {e}", p.display()))?;
        let w = super::writelog::Writer::new(std::io::BufWriter::with_capacity(8 << 20, f), size)
            .map_err(|e| format!("{}: {e}", p.display()))?;
        fs.set_write_log(w);
    }
    let errors = fs.shutdown_errors();
    let options = [
        MountOption::FSName(path.display().to_string()),
        MountOption::CUSTOM("subtype=hddsim".into()),
        MountOption::DefaultPermissions,
        MountOption::NoDev,
        MountOption::NoSuid,
        MountOption::RW,
    ];
    // Before the mount: the kernel's first requests come as soon as it is made.
    let stamps = if a.clock == Clock::Real && !a.handler_arrival {
        kernel_stamps()
    } else {
        None
    };
    if let Some(k) = &stamps {
        fs.set_kernel_stamps(Arc::clone(k));
    }
    if a.reply_at_completion {
        fs.set_reply_at_completion();
    }
    let mut session = fuser::Session::new(fs, &mp, &options)
        .map_err(|e| format!("{}: cannot mount: {e}", mp.display()))?;
    if let Some(k) = &stamps {
        // The connection's number: the minor of the mount's st_dev. Set before the session
        // serves its first request.
        match mounts::mount_at(&mp) {
            Ok(Some(m)) if m.fstype == FSTYPE => {
                k.set_disk(&mp.join(super::server::DISK_NAME));
                k.set_connection(super::kstamp::connection_number(m.dev))
            }
            _ => eprintln!(
                "hddsim emulate: {}: mount not found in /proc/self/mountinfo; arrivals are the \
                 handler's times",
                mp.display()
            ),
        }
    }
    if a.daemon_child {
        daemon::report_ready().map_err(|e| e.to_string())?;
    } else {
        writeln!(
            out,
            "{}: emulating {} on {} ({} bytes, clock {:?}); serving in the foreground until \
             it is unmounted (`hddsim umount {}`, or Ctrl-C)",
            mp.display(),
            profile.name,
            path.display(),
            size,
            a.clock,
            mp.display()
        )
        .and_then(|()| out.flush())
        .map_err(|e| e.to_string())?;
    }
    daemon::unmount_on_signal(signals, &mp, FSTYPE);
    let served = session.run();
    // Ends the session: destroy() waits for the requests in service and writes the log.
    drop(session);
    served.map_err(|e| format!("{}: serving failed: {e}", mp.display()))?;
    let errors = errors.lock().unwrap_or_else(|e| e.into_inner()).join("; ");
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// The kernel's queueing times of the requests ([`super::kstamp`]), or `None` (said on
/// stderr) where they cannot be recorded.
fn kernel_stamps() -> Option<Arc<KernelStamps>> {
    match KernelStamps::start(&std::env::temp_dir()) {
        Ok(Some(k)) => Some(Arc::new(k)),
        Ok(None) => {
            eprintln!(
                "hddsim emulate: no tracefs or no fuse_request_send tracepoint here; arrivals \
                 are the handler's times"
            );
            None
        }
        Err(e) => {
            eprintln!(
                "hddsim emulate: cannot record the kernel's request times ({e}); arrivals are \
                 the handler's times"
            );
            None
        }
    }
}

/// The latent sector errors `--bad-sectors` and `--latent-errors` ask for, on a drive of
/// `size` bytes.
fn latent_errors(a: &EmulateArgs, size: u64, physical: u32) -> Result<LatentErrors, String> {
    let mut errors = match &a.bad_sectors {
        Some(list) => LatentErrors::parse(list, size)?,
        None => LatentErrors::none(),
    };
    if let Some(n) = a.latent_errors {
        errors.extend(&LatentErrors::generate(n, a.seed, size, physical));
    }
    Ok(errors)
}

/// Runs `hddsim umount`.
pub fn umount(a: &UmountArgs, out: &mut dyn std::io::Write) -> Result<(), String> {
    let (entry, pids) = mounts::unmount_typed(&a.mountpoint, a.lazy, FSTYPE)
        .map_err(|e| format!("umount failed: {e}"))?;
    let mp = entry.mountpoint.display();
    if a.lazy {
        return writeln!(
            out,
            "{mp}: detached; the emulator releases {} once the files open on it are closed",
            entry.source
        )
        .map_err(|e| e.to_string());
    }
    if !mounts::wait_exited(&pids, Duration::from_secs(a.timeout)) {
        return Err(format!(
            "umount failed: {mp}: unmounted, but the emulator has not exited after {} s; {} \
             stays held until it does",
            a.timeout, entry.source
        ));
    }
    writeln!(out, "{mp}: unmounted; {} released", entry.source).map_err(|e| e.to_string())
}
