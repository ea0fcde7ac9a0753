//! The FUSE side of the emulator: a directory with two files.
//!
//! - `disk`: the drive. Its size is the backing image's. Every read, write and fsync is one
//!   request of the modelled drive ([`DriveQueue`]); its data goes to or from the backing image
//!   with O_DIRECT (`fsync` also `fdatasync`s the image with `--sync-backing`) and the reply
//!   is sent at the
//!   request's modelled completion. Opens are answered with `FOPEN_DIRECT_IO`, so the kernel's
//!   requests (a loop device's, or an application's O_DIRECT ones) reach the model as made,
//!   up to FUSE's 1 MiB. Writes must be whole 512-byte sectors (a disk takes nothing else);
//!   reads of any range are served by reading the sectors around them.
//! - `stats.json`: what the drive was asked (request counts and sizes), what it did
//!   ([`DriveStats`](crate::DriveStats)), the modelled cache's dirty sectors, the most
//!   requests outstanding at once, late replies. A snapshot taken at each open.
//!
//! The session thread takes each request, gives it its modelled time and hands it to a
//! worker thread, which waits until the modelled completion and replies: requests the kernel
//! has outstanding together are in the drive's queue together.
//!
//! Writes are written behind, as a drive's cache does: the data is copied into the emulator's
//! memory and written to the backing image (O_DIRECT) by writer threads in arrival order
//! (overlapping writes one after the other), while the reply waits only for the modelled
//! completion — so the host's own disk does not slow the emulated one down as long as it
//! keeps up on average. At most [`WRITE_BEHIND_BYTES`] wait to be written; beyond that the
//! session waits (counted in `late_replies` when it makes replies late). A read waits for
//! the pending writes it overlaps, then reads the backing image; a flush waits for every
//! write that arrived before it (and `fdatasync`s the image with `--sync-backing`: off by
//! default, since the host disk's flush time would be added to the emulated flush's). A failed backing write fails the
//! next flush; after a failed backing write or flush every request answers `EIO` until
//! remounted.

use std::ffi::OsStr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use fuser::consts::{FOPEN_DIRECT_IO, FUSE_ASYNC_DIO};
use fuser::{
    FileAttr, FileType, KernelConfig, ReplyAttr, ReplyData, ReplyDirectory, ReplyEmpty, ReplyEntry,
    ReplyOpen, ReplyStatfs, ReplyWrite, Request, TimeOrNow, FUSE_ROOT_ID,
};
use libc::c_int;
use minfs::AlignedBuf;
use serde::Serialize;

use super::backing::{Backing, BackingStats};
use super::kstamp::{KernelStamps, StampStats};
use super::latent::LatentErrors;
use super::replypath::{Class, Key, PathStats};
use super::{Clock, DriveQueue, RequestStats, Scheduled};
use crate::model::DriveStats;
use crate::trace::ReqOp;

const TTL: Duration = Duration::from_secs(1);
const ROOT: u64 = FUSE_ROOT_ID;
const DISK: u64 = 2;
const STATS: u64 = 3;
const CONTROL: u64 = 4;
/// The drive's file in the mount.
pub const DISK_NAME: &str = "disk";
/// The statistics file in the mount.
pub const STATS_NAME: &str = "stats.json";
/// The control file in the mount: writing `reset` puts the modelled drive back as at
/// power-on ([`DriveQueue::reset`]).
pub const CONTROL_NAME: &str = "control";
/// Reply threads: more than the kernel keeps outstanding (max_background).
const REPLIERS: usize = 72;
/// Threads writing pending writes to the backing image.
const WRITERS: usize = 8;
/// Most bytes of acknowledged-or-in-service writes not yet on the backing image.
pub const WRITE_BEHIND_BYTES: u64 = 256 << 20;
/// Requests the kernel may have outstanding at once (FUSE max_background; NCQ's depth is 32).
const MAX_BACKGROUND: u16 = 64;

type Job = Box<dyn FnOnce() + Send>;

/// The serving threads (the session's, the repliers, the stamp reader) run at a real-time
/// priority ([`set_realtime`]); set before the server is made.
pub static REALTIME: AtomicBool = AtomicBool::new(false);

/// The real-time priority of the serving threads: above every normal thread (the program
/// under test, the loop device's workers, other work on the host), below the kernel's own
/// real-time threads (its interrupt threads run at 50).
pub const REALTIME_PRIORITY: u8 = 10;

/// Puts the calling thread in `SCHED_FIFO` at [`REALTIME_PRIORITY`]: a thread that sleeps until
/// its request's modelled completion then runs the moment it wakes, not when the scheduler
/// gets round to it on a host whose CPUs the program under test keeps busy. Needs root (or
/// CAP_SYS_NICE); the kernel's real-time throttling (`sched_rt_runtime_us`) bounds what such
/// threads can take.
pub fn set_realtime() -> Result<(), String> {
    use thread_priority::unix::{
        set_thread_priority_and_policy, thread_native_id, RealtimeThreadSchedulePolicy,
        ThreadSchedulePolicy,
    };
    let prio = thread_priority::ThreadPriority::from_posix(thread_priority::ScheduleParams {
        sched_priority: i32::from(REALTIME_PRIORITY),
    });
    set_thread_priority_and_policy(
        thread_native_id(),
        prio,
        ThreadSchedulePolicy::Realtime(RealtimeThreadSchedulePolicy::Fifo),
    )
    .map_err(|e| format!("{e:?}"))
}

/// Puts the calling serving thread at the real-time priority when the emulator serves at it
/// ([`REALTIME`]); a failure leaves it at the normal one (the session's thread said so).
pub fn follow_realtime() {
    if REALTIME.load(Ordering::Relaxed) {
        let _ = set_realtime();
    }
}

/// Threads running jobs in the order they were queued.
#[derive(Debug)]
struct Pool {
    tx: Option<mpsc::Sender<Job>>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Pool {
    fn new(n: usize) -> Pool {
        Pool::with_init(n, || {})
    }

    /// [`Pool::new`], each thread running `init` first.
    fn with_init(n: usize, init: fn()) -> Pool {
        let (tx, rx) = mpsc::channel::<Job>();
        let rx = Arc::new(Mutex::new(rx));
        let threads = (0..n)
            .map(|_| {
                let rx = Arc::clone(&rx);
                std::thread::spawn(move || {
                    init();
                    loop {
                        let job = match rx.lock() {
                            Ok(r) => r.recv(),
                            Err(_) => return,
                        };
                        match job {
                            Ok(job) => job(),
                            Err(_) => return,
                        }
                    }
                })
            })
            .collect();
        Pool {
            tx: Some(tx),
            threads,
        }
    }

    fn run(&self, job: Job) {
        match &self.tx {
            Some(tx) => {
                if let Err(mpsc::SendError(job)) = tx.send(job) {
                    job();
                }
            }
            None => job(),
        }
    }

    /// Runs what is queued, then ends the threads.
    fn join(&mut self) {
        self.tx.take();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// Writes not yet on the backing image: (id, first byte, end byte).
#[derive(Debug, Default)]
struct Pending {
    next_id: u64,
    writes: Vec<(u64, u64, u64)>,
    bytes: u64,
}

impl Pending {
    /// Whether a write with an id below `before` overlapping `[a, b)` is pending.
    fn blocks(&self, before: u64, a: u64, b: u64) -> bool {
        self.writes
            .iter()
            .any(|&(id, s, e)| id < before && s < b && a < e)
    }
}

/// State shared by the session thread and the workers.
#[derive(Debug)]
struct Shared {
    backing: Backing,
    queue: Mutex<DriveQueue>,
    poisoned: AtomicBool,
    outstanding: AtomicU64,
    max_outstanding: AtomicU64,
    late_replies: AtomicU64,
    late_ns: AtomicU64,
    io_errors: AtomicU64,
    fallocates_refused: AtomicU64,
    pending: Mutex<Pending>,
    pending_changed: std::sync::Condvar,
    /// The session has ended: replies are no longer awaited.
    shutdown: AtomicBool,
    /// A flush also `fdatasync`s the backing image.
    sync_backing: bool,
    /// The drive's unreadable sectors ([`super::latent`]).
    latent: Mutex<LatentErrors>,
    /// How long a read of an unreadable sector takes to fail (ns; the profile's
    /// `read_error_recovery_ms`).
    recovery_ns: std::sync::atomic::AtomicU64,
    /// Unreadable sectors made readable again by writes.
    remapped: AtomicU64,
}

impl Shared {
    /// Waits until no write with an id below `before` overlapping `[a, b)` is pending.
    fn wait_pending(&self, before: u64, a: u64, b: u64) {
        let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        while p.blocks(before, a, b) {
            p = self
                .pending_changed
                .wait(p)
                .unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Waits until `lead` before `s` completes (real clock) and accounts for a late reply.
    /// Returns the moment the reply leaves — the one aimed at when the worker waited for it,
    /// else now (it is late: its backing I/O or the host took longer) — and the modelled
    /// completion, for measuring the reply path ([`super::replypath`]); `None` with the
    /// virtual clock.
    fn wait_for(
        &self,
        s: &Scheduled,
        origin: Instant,
        clock: Clock,
        lead: Duration,
    ) -> Option<(Instant, Instant)> {
        let mut sent = None;
        if clock == Clock::Real {
            let due = origin + Duration::from_nanos(s.end.max(0.0) as u64);
            let aim = due.checked_sub(lead).unwrap_or(due);
            let now = Instant::now();
            if aim > now {
                // In slices, so that an unmount ends the wait (the reply then goes nowhere).
                let mut now = now;
                while aim > now && !self.shutdown.load(Ordering::Relaxed) {
                    std::thread::sleep((aim - now).min(Duration::from_millis(50)));
                    now = Instant::now();
                }
                sent = Some((aim, due));
            } else {
                if now - aim > Duration::from_micros(500) {
                    self.late_replies.fetch_add(1, Ordering::Relaxed);
                    self.late_ns
                        .fetch_add((now - aim).as_nanos() as u64, Ordering::Relaxed);
                }
                // Measured from now: a lead learnt too large (every reply then sent at once,
                // none waited for) is corrected by these.
                sent = Some((now, due));
            }
        }
        self.outstanding.fetch_sub(1, Ordering::Relaxed);
        sent
    }

    fn failed(&self) {
        self.io_errors.fetch_add(1, Ordering::Relaxed);
        self.poisoned.store(true, Ordering::Relaxed);
    }
}

/// What `stats.json` holds.
#[derive(Debug, Serialize)]
pub struct Snapshot {
    /// hddsim's version.
    pub version: &'static str,
    /// The profile: its stem, with any overrides (`st1000dm003+write_hit_dirty=merge`), and
    /// its name in parentheses.
    pub profile: String,
    /// `real` or `virtual`.
    pub clock: Clock,
    /// The drive's file size (the backing image's).
    pub size_bytes: u64,
    /// What the drive was asked.
    pub requests: RequestStats,
    /// Requests being served now.
    pub outstanding: u64,
    /// The most served at once.
    pub max_outstanding: u64,
    /// Replies sent more than 0.5 ms after their modelled completion (the backing I/O took
    /// longer than the model), and their total lateness (ns).
    pub late_replies: u64,
    /// Total lateness (ns).
    pub late_ns: u64,
    /// Failed backing reads, writes and flushes.
    pub io_errors: u64,
    /// fallocate requests (a loop device's discards and write-zeroes) answered EOPNOTSUPP.
    pub fallocates_refused: u64,
    /// What the backing image took (data written, zeros punched, host space now).
    pub backing: BackingStats,
    /// Dirty sectors in the modelled cache after the last request.
    pub dirty_sectors: u64,
    /// When the last request completes (ns, model clock).
    pub busy_until_ns: u64,
    /// What the modelled drive did.
    pub drive: DriveStats,
    /// Where the requests' arrival times came from ([`super::kstamp`]): the kernel's
    /// queueing of each FUSE request, or the handler's clock.
    pub arrivals: StampStats,
    /// Latent sector errors: the LBAs still unreadable (as `--bad-sectors` takes them), how
    /// many, and how many writes made readable again.
    pub latent: LatentSnapshot,
    /// The reply path ([`super::replypath`]): replies measured, late (completed by the kernel
    /// over 0.5 ms after the modelled completion) and their total lateness; per request class
    /// how much before the modelled completion replies are sent and what remains. Zero and
    /// empty where the kernel's request ends are not recorded.
    pub reply_path: PathStats,
}

/// The latent sector errors in `stats.json`.
#[derive(Debug, Serialize)]
pub struct LatentSnapshot {
    /// Unreadable 512-byte LBAs now, as ranges (`A-B,C,…`).
    pub unreadable: String,
    /// How many LBAs are unreadable now.
    pub unreadable_sectors: u64,
    /// LBAs made readable again by writes.
    pub remapped_sectors: u64,
    /// How long a failing read takes (ns).
    pub read_error_recovery_ns: u64,
}

/// The FUSE filesystem of `hddsim emulate`.
#[derive(Debug)]
pub struct EmulatorFs {
    shared: Arc<Shared>,
    profile: String,
    size: u64,
    clock: Clock,
    origin: Instant,
    uid: u32,
    gid: u32,
    mounted_at: SystemTime,
    repliers: Pool,
    writers: Pool,
    snapshots: std::collections::HashMap<u64, Arc<Vec<u8>>>,
    next_fh: u64,
    /// Where the final statistics go at unmount.
    stats_out: Option<std::path::PathBuf>,
    /// Errors of the shutdown (writing the log or the statistics), for the caller.
    shutdown_errors: Arc<Mutex<Vec<String>>>,
    /// `--write-log`: every accepted write and flush (see [`super::writelog`]).
    write_log: Option<super::writelog::Writer<std::io::BufWriter<std::fs::File>>>,
    /// The kernel's queueing times of the requests, when recorded ([`super::kstamp`]).
    stamps: Option<Arc<KernelStamps>>,
    /// Replies are sent early by the reply path's lag ([`super::replypath`]); off, they are
    /// sent at the modelled completion (the lag is still measured).
    compensate: bool,
}

impl EmulatorFs {
    /// A filesystem serving `backing` through `queue`.
    pub fn new(backing: Backing, profile: &str, queue: DriveQueue) -> EmulatorFs {
        Self::with_options(backing, profile, queue, None, false)
    }

    /// [`EmulatorFs::new`] that also writes the final statistics to `stats_out` at unmount,
    /// and with `sync_backing` makes each flush `fdatasync` the backing image too.
    pub fn with_options(
        backing: Backing,
        profile: &str,
        queue: DriveQueue,
        stats_out: Option<std::path::PathBuf>,
        sync_backing: bool,
    ) -> EmulatorFs {
        let clock = queue.clock();
        let origin = queue.origin();
        let size = backing.size();
        EmulatorFs {
            shared: Arc::new(Shared {
                backing,
                queue: Mutex::new(queue),
                poisoned: AtomicBool::new(false),
                outstanding: AtomicU64::new(0),
                max_outstanding: AtomicU64::new(0),
                late_replies: AtomicU64::new(0),
                late_ns: AtomicU64::new(0),
                io_errors: AtomicU64::new(0),
                fallocates_refused: AtomicU64::new(0),
                pending: Mutex::new(Pending::default()),
                pending_changed: std::sync::Condvar::new(),
                shutdown: AtomicBool::new(false),
                sync_backing,
                latent: Mutex::new(LatentErrors::none()),
                recovery_ns: AtomicU64::new(0),
                remapped: AtomicU64::new(0),
            }),
            profile: profile.to_string(),
            size,
            clock,
            origin,
            uid: nix::unistd::getuid().as_raw(),
            gid: nix::unistd::getgid().as_raw(),
            mounted_at: SystemTime::now(),
            // A sleeping replier wakes within microseconds of its aim, not the default
            // timer slack's 50 µs later.
            repliers: Pool::with_init(REPLIERS, || {
                let _ = nix::sys::prctl::set_timerslack(1);
                follow_realtime();
            }),
            writers: Pool::new(WRITERS),
            snapshots: std::collections::HashMap::new(),
            next_fh: 1,
            stats_out,
            shutdown_errors: Arc::new(Mutex::new(Vec::new())),
            write_log: None,
            stamps: None,
            compensate: true,
        }
    }

    /// Takes each request's arrival from `stamps` (the kernel's queueing time) instead of
    /// the handler's clock.
    pub fn set_kernel_stamps(&mut self, stamps: Arc<KernelStamps>) {
        self.stamps = Some(stamps);
    }

    /// Sends replies at the modelled completion instead of early by the reply path's lag
    /// (which is still measured): what the emulator did before 2026-11-29.
    pub fn set_reply_at_completion(&mut self) {
        self.compensate = false;
    }

    /// The arrival of request `unique` of `op` at `sector` over `sectors`, whose handler
    /// started at `entry`, and whether a loop device over the drive made it
    /// ([`KernelStamps::arrival_of`]).
    fn arrival(
        &self,
        unique: u64,
        entry: Instant,
        op: ReqOp,
        sector: u64,
        sectors: u64,
    ) -> (Instant, bool) {
        match &self.stamps {
            Some(k) => k.arrival_of(unique, entry, op, sector, sectors),
            None => (entry, false),
        }
    }

    /// Records every write and flush accepted from now on in `log` ([`super::writelog`]).
    pub fn set_write_log(
        &mut self,
        log: super::writelog::Writer<std::io::BufWriter<std::fs::File>>,
    ) {
        self.write_log = Some(log);
    }

    /// Logs a write (`Some(data)`) or a flush (`None`) as accepted. A log that cannot be
    /// written would be incomplete: the drive then fails, like one whose backing write failed.
    fn log_accepted(&mut self, sector: u64, data: Option<&[u8]>) {
        let Some(log) = self.write_log.as_mut() else {
            return;
        };
        let res = match data {
            Some(d) => log.write(sector, d),
            None => log.flush_mark(),
        };
        if let Err(e) = res {
            self.shared.failed();
            self.write_log = None;
            self.shutdown_errors
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(format!("writing the write log: {e}"));
        }
    }

    /// Gives the drive these unreadable sectors; a read touching one fails with `EIO` after
    /// `recovery_ns`, a write covering one makes it readable again ([`super::latent`]).
    pub fn set_latent_errors(&mut self, errors: LatentErrors, recovery_ns: f64) {
        *self.shared.latent.lock().unwrap_or_else(|e| e.into_inner()) = errors;
        self.shared
            .recovery_ns
            .store(recovery_ns.max(0.0) as u64, Ordering::Relaxed);
    }

    /// Where the errors of the shutdown will be (read after the session ended).
    pub fn shutdown_errors(&self) -> Arc<Mutex<Vec<String>>> {
        Arc::clone(&self.shutdown_errors)
    }

    /// The statistics now.
    pub fn snapshot(&self) -> Snapshot {
        let q = self.shared.queue.lock().unwrap_or_else(|e| e.into_inner());
        let sh = &self.shared;
        Snapshot {
            version: env!("CARGO_PKG_VERSION"),
            profile: self.profile.clone(),
            clock: self.clock,
            size_bytes: self.size,
            requests: q.request_stats().clone(),
            outstanding: sh.outstanding.load(Ordering::Relaxed),
            max_outstanding: sh.max_outstanding.load(Ordering::Relaxed),
            late_replies: sh.late_replies.load(Ordering::Relaxed),
            late_ns: sh.late_ns.load(Ordering::Relaxed),
            io_errors: sh.io_errors.load(Ordering::Relaxed),
            fallocates_refused: sh.fallocates_refused.load(Ordering::Relaxed),
            backing: sh.backing.stats(),
            dirty_sectors: q.dirty_sectors(),
            busy_until_ns: q.busy_until().round() as u64,
            drive: q.drive_stats().clone(),
            arrivals: self.stamps.as_ref().map(|k| k.stats()).unwrap_or_default(),
            reply_path: self
                .stamps
                .as_ref()
                .and_then(|k| k.reply_path().map(|p| p.stats()))
                .unwrap_or_default(),
            latent: {
                let l = sh.latent.lock().unwrap_or_else(|e| e.into_inner());
                LatentSnapshot {
                    unreadable: l.to_list(),
                    unreadable_sectors: l.len() as u64,
                    remapped_sectors: sh.remapped.load(Ordering::Relaxed),
                    read_error_recovery_ns: sh.recovery_ns.load(Ordering::Relaxed),
                }
            },
        }
    }

    /// Waits for the requests in service, then writes out the request log.
    pub fn finish(&mut self) -> std::io::Result<()> {
        self.shared.shutdown.store(true, Ordering::Relaxed);
        self.repliers.join();
        self.writers.join();
        self.shared
            .queue
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .flush_log()
    }

    fn attr(&self, ino: u64) -> Option<FileAttr> {
        let (kind, perm, size, nlink) = match ino {
            ROOT => (FileType::Directory, 0o755, 0, 2),
            DISK => (FileType::RegularFile, 0o644, self.size, 1),
            STATS => (FileType::RegularFile, 0o444, 0, 1),
            CONTROL => (FileType::RegularFile, 0o200, 0, 1),
            _ => return None,
        };
        let t = self.mounted_at;
        Some(FileAttr {
            ino,
            size,
            blocks: size.div_ceil(512),
            atime: t,
            mtime: t,
            ctime: t,
            crtime: t,
            kind,
            perm,
            nlink,
            uid: self.uid,
            gid: self.gid,
            rdev: 0,
            blksize: 4096,
            flags: 0,
        })
    }

    /// Takes a request into the drive's queue and hands `work` (the backing I/O and the
    /// reply) to a worker, which runs it and replies at the modelled completion.
    fn dispatch<F>(
        &self,
        unique: u64,
        op: ReqOp,
        sector: u64,
        sectors: u64,
        arrived: (Instant, bool),
        work: F,
    ) where
        F: FnOnce(&Shared) -> Box<dyn FnOnce() + Send> + Send + 'static,
    {
        self.dispatch_with(unique, op, sector, sectors, false, arrived, work)
    }

    /// [`EmulatorFs::dispatch`]; with `failed_read`, a read that fails after the error
    /// recovery time ([`DriveQueue::submit_failed_read`]). `arrived`: the request's arrival
    /// at the drive (before any copy of its data: [`EmulatorFs::arrival`]), and whether a
    /// loop device over the drive made it (its completion is then that loop device's).
    #[allow(clippy::too_many_arguments)]
    fn dispatch_with<F>(
        &self,
        unique: u64,
        op: ReqOp,
        sector: u64,
        sectors: u64,
        failed_read: bool,
        (arrived, via_block): (Instant, bool),
        work: F,
    ) where
        F: FnOnce(&Shared) -> Box<dyn FnOnce() + Send> + Send + 'static,
    {
        let sh = Arc::clone(&self.shared);
        let n = sh.outstanding.fetch_add(1, Ordering::Relaxed) + 1;
        sh.max_outstanding.fetch_max(n, Ordering::Relaxed);
        let s = {
            let mut q = sh.queue.lock().unwrap_or_else(|e| e.into_inner());
            if failed_read {
                let ns = sh.recovery_ns.load(Ordering::Relaxed) as f64;
                q.submit_failed_read(sector, sectors, ns, arrived)
            } else {
                q.submit_arrived(op, sector, sectors, arrived)
            }
        };
        let (origin, clock) = (self.origin, self.clock);
        // The reply is aimed at the modelled completion less the reply path's lag for its
        // class, so that the kernel sees it complete then ([`super::replypath`]).
        let (class, key) = if via_block {
            (
                Class::of(op, sectors * 512).on_block_device(),
                Key::block(op, sector, sectors),
            )
        } else {
            (Class::of(op, sectors * 512), Key::Fuse(unique))
        };
        let stamps = self.stamps.clone();
        let compensate = self.compensate;
        self.repliers.run(Box::new(move || {
            let reply = work(&sh);
            let path = stamps.as_ref().and_then(|k| k.reply_path().map(|p| (k, p)));
            let lead = match path {
                Some((_, p)) if compensate => p.lead(class),
                _ => 0,
            };
            let waited = sh.wait_for(&s, origin, clock, Duration::from_nanos(lead));
            // A failed read's reply (an error, no data) is not the path of a read's.
            if let (Some((k, p)), Some((left, due)), false) = (path, waited, failed_read) {
                p.sent(key, class, k.mono_ns(left), k.mono_ns(due));
            }
            reply();
        }));
    }

    /// Registers a write of `[a, b)` as pending (waiting while too much is) and returns its id.
    fn register_write(&self, a: u64, b: u64) -> u64 {
        let sh = &self.shared;
        let mut p = sh.pending.lock().unwrap_or_else(|e| e.into_inner());
        while p.bytes > 0 && p.bytes + (b - a) > WRITE_BEHIND_BYTES {
            p = sh
                .pending_changed
                .wait(p)
                .unwrap_or_else(|e| e.into_inner());
        }
        let id = p.next_id;
        p.next_id += 1;
        p.writes.push((id, a, b));
        p.bytes += b - a;
        id
    }

    /// The id the next write will get: everything below it arrived earlier.
    fn write_epoch(&self) -> u64 {
        self.shared
            .pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .next_id
    }

    /// A command written to `control`: `reset` ([`DriveQueue::reset`]; `EBUSY` while
    /// requests are outstanding or the modelled cache is dirty); `trace PATH` and `trace off`
    /// ([`KernelStamps::trace_to`], [`KernelStamps::trace_off`]; `EOPNOTSUPP` where the
    /// kernel's stamps are not recorded). Anything else is `EINVAL`.
    fn control(&self, data: &[u8]) -> Result<(), c_int> {
        let cmd = std::str::from_utf8(data).map(str::trim);
        if let Some(rest) = cmd
            .ok()
            .and_then(|c| c.strip_prefix("trace "))
            .map(str::trim)
        {
            let stamps = self.stamps.as_ref().ok_or(libc::EOPNOTSUPP)?;
            let errno = |e: std::io::Error| e.raw_os_error().unwrap_or(libc::EIO);
            return if rest == "off" {
                stamps.trace_off().map(|_| ()).map_err(errno)
            } else {
                stamps.trace_to(std::path::Path::new(rest)).map_err(errno)
            };
        }
        match cmd {
            Ok("reset") => {
                if self.shared.outstanding.load(Ordering::Relaxed) > 0 {
                    return Err(libc::EBUSY);
                }
                self.shared
                    .queue
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .reset(Instant::now())
                    .map_err(|_| libc::EBUSY)
            }
            _ => Err(libc::EINVAL),
        }
    }

    fn check(&self) -> Result<(), c_int> {
        if self.shared.poisoned.load(Ordering::Relaxed) {
            Err(libc::EIO)
        } else {
            Ok(())
        }
    }
}

impl fuser::Filesystem for EmulatorFs {
    fn init(&mut self, _req: &Request<'_>, config: &mut KernelConfig) -> Result<(), c_int> {
        // Asynchronous direct I/O: a loop device's requests go out together, not one by one.
        let _ = config.add_capabilities(FUSE_ASYNC_DIO);
        if let Err(max) = config.set_max_write(16 << 20) {
            let _ = config.set_max_write(max);
        }
        if let Err(max) = config.set_max_background(MAX_BACKGROUND) {
            let _ = config.set_max_background(max);
        }
        let _ = config.set_congestion_threshold(MAX_BACKGROUND * 3 / 4);
        Ok(())
    }

    fn destroy(&mut self) {
        let mut errors = Vec::new();
        if let Err(e) = self.finish() {
            errors.push(format!("writing the request log: {e}"));
        }
        if let Some(log) = self.write_log.take() {
            if let Err(e) = log.finish() {
                errors.push(format!("writing the write log: {e}"));
            }
        }
        if let Some(path) = &self.stats_out {
            let mut text = serde_json::to_vec_pretty(&self.snapshot()).unwrap_or_default();
            text.push(b'\n');
            if let Err(e) = std::fs::write(path, text) {
                errors.push(format!("writing the statistics to {}: {e}", path.display()));
            }
        }
        self.shutdown_errors
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend(errors);
    }

    fn lookup(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEntry) {
        let ino = match name.to_str() {
            Some(DISK_NAME) if parent == ROOT => DISK,
            Some(STATS_NAME) if parent == ROOT => STATS,
            Some(CONTROL_NAME) if parent == ROOT => CONTROL,
            _ => return reply.error(libc::ENOENT),
        };
        match self.attr(ino) {
            Some(a) => reply.entry(&TTL, &a, 0),
            None => reply.error(libc::ENOENT),
        }
    }

    fn getattr(&mut self, _req: &Request<'_>, ino: u64, _fh: Option<u64>, reply: ReplyAttr) {
        match self.attr(ino) {
            Some(a) => reply.attr(&TTL, &a),
            None => reply.error(libc::ENOENT),
        }
    }

    fn setattr(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        _atime: Option<TimeOrNow>,
        _mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<u64>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<u32>,
        reply: ReplyAttr,
    ) {
        let Some(a) = self.attr(ino) else {
            return reply.error(libc::ENOENT);
        };
        // A drive's size, mode and owner are fixed; times are accepted and not kept.
        let same = size.is_none_or(|s| s == a.size)
            && mode.is_none_or(|m| m & 0o7777 == u32::from(a.perm))
            && uid.is_none_or(|u| u == a.uid)
            && gid.is_none_or(|g| g == a.gid);
        if same {
            reply.attr(&TTL, &a)
        } else {
            reply.error(libc::EPERM)
        }
    }

    fn open(&mut self, _req: &Request<'_>, ino: u64, flags: i32, reply: ReplyOpen) {
        match ino {
            DISK => {
                if let Err(e) = self.check() {
                    return reply.error(e);
                }
                if flags & libc::O_TRUNC != 0 {
                    return reply.error(libc::EPERM);
                }
                reply.opened(0, FOPEN_DIRECT_IO)
            }
            STATS => {
                if flags & libc::O_ACCMODE != libc::O_RDONLY {
                    return reply.error(libc::EACCES);
                }
                let mut text = serde_json::to_vec_pretty(&self.snapshot()).unwrap_or_default();
                text.push(b'\n');
                let fh = self.next_fh;
                self.next_fh += 1;
                self.snapshots.insert(fh, Arc::new(text));
                reply.opened(fh, FOPEN_DIRECT_IO)
            }
            CONTROL => {
                if flags & libc::O_ACCMODE != libc::O_WRONLY {
                    return reply.error(libc::EACCES);
                }
                reply.opened(0, FOPEN_DIRECT_IO)
            }
            ROOT => reply.opened(0, 0),
            _ => reply.error(libc::ENOENT),
        }
    }

    fn release(
        &mut self,
        _req: &Request<'_>,
        _ino: u64,
        fh: u64,
        _flags: i32,
        _lock_owner: Option<u64>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        self.snapshots.remove(&fh);
        reply.ok();
    }

    fn flush(&mut self, _req: &Request<'_>, _ino: u64, _fh: u64, _lo: u64, reply: ReplyEmpty) {
        // close(2): not a cache flush (fsync is).
        reply.ok();
    }

    fn read(
        &mut self,
        req: &Request<'_>,
        ino: u64,
        fh: u64,
        offset: i64,
        size: u32,
        _flags: i32,
        _lock_owner: Option<u64>,
        reply: ReplyData,
    ) {
        let entry = Instant::now();
        let Ok(offset) = u64::try_from(offset) else {
            return reply.error(libc::EINVAL);
        };
        if ino == STATS {
            let Some(text) = self.snapshots.get(&fh) else {
                return reply.error(libc::EBADF);
            };
            let a = (offset as usize).min(text.len());
            let b = (a + size as usize).min(text.len());
            return reply.data(&text[a..b]);
        }
        if ino != DISK {
            return reply.error(libc::EISDIR);
        }
        if let Err(e) = self.check() {
            return reply.error(e);
        }
        let end = (offset + u64::from(size)).min(self.size);
        if end <= offset {
            return reply.data(&[]);
        }
        // The sectors around the range: what the drive reads.
        let a = offset / 512 * 512;
        let b = end.div_ceil(512) * 512;
        let arrived = self.arrival(req.unique(), entry, ReqOp::Read, a / 512, (b - a) / 512);
        let unreadable = self
            .shared
            .latent
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .first_in(a / 512, (b - a) / 512);
        if unreadable.is_some() {
            // An unrecovered read error: EIO once the drive has given up.
            return self.dispatch_with(
                req.unique(),
                ReqOp::Read,
                a / 512,
                (b - a) / 512,
                true,
                arrived,
                move |_| Box::new(move || reply.error(libc::EIO)),
            );
        }
        let epoch = self.write_epoch();
        self.dispatch(
            req.unique(),
            ReqOp::Read,
            a / 512,
            (b - a) / 512,
            arrived,
            move |sh| {
                sh.wait_pending(epoch, a, b);
                let mut buf = AlignedBuf::zeroed((b - a) as usize, 4096);
                let res = sh.backing.read_exact_at(&mut buf, a);
                Box::new(move || match res {
                    Ok(()) => {
                        let skip = (offset - a) as usize;
                        reply.data(&buf[skip..skip + (end - offset) as usize])
                    }
                    Err(e) => reply.error(e.raw_os_error().unwrap_or(libc::EIO)),
                })
            },
        );
    }

    fn write(
        &mut self,
        req: &Request<'_>,
        ino: u64,
        _fh: u64,
        offset: i64,
        data: &[u8],
        _write_flags: u32,
        _flags: i32,
        _lock_owner: Option<u64>,
        reply: ReplyWrite,
    ) {
        // The request's arrival: the kernel's queueing time where recorded, else now, before
        // the copy of its data below, which a drive would overlap with its own transfer.
        let entry = Instant::now();
        if ino == CONTROL {
            return match self.control(data) {
                Ok(()) => reply.written(data.len() as u32),
                Err(e) => reply.error(e),
            };
        }
        if ino != DISK {
            return reply.error(libc::EBADF);
        }
        if let Err(e) = self.check() {
            return reply.error(e);
        }
        let Ok(offset) = u64::try_from(offset) else {
            return reply.error(libc::EINVAL);
        };
        let len = data.len() as u64;
        if offset % 512 != 0 || len % 512 != 0 {
            // A disk takes whole sectors.
            return reply.error(libc::EINVAL);
        }
        if offset + len > self.size {
            return reply.error(libc::ENOSPC);
        }
        if len == 0 {
            return reply.written(0);
        }
        let arrived = self.arrival(req.unique(), entry, ReqOp::Write, offset / 512, len / 512);
        self.log_accepted(offset / 512, Some(data));
        // A write makes the unreadable sectors it covers readable again (rewritten or
        // reallocated), from its arrival on.
        let remapped = self
            .shared
            .latent
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .write(offset / 512, len / 512);
        self.shared.remapped.fetch_add(remapped, Ordering::Relaxed);
        let mut buf = AlignedBuf::zeroed(data.len(), 4096);
        buf.copy_from_slice(data);
        let id = self.register_write(offset, offset + len);
        let sh = Arc::clone(&self.shared);
        self.writers.run(Box::new(move || {
            sh.wait_pending(id, offset, offset + len);
            if sh.backing.write_at(&buf, offset).is_err() {
                sh.failed();
            }
            let mut p = sh.pending.lock().unwrap_or_else(|e| e.into_inner());
            p.writes.retain(|w| w.0 != id);
            p.bytes -= len;
            drop(p);
            sh.pending_changed.notify_all();
        }));
        // Acknowledged at the modelled completion, as a drive acknowledges a write in its
        // cache; a failed backing write fails the next flush.
        self.dispatch(
            req.unique(),
            ReqOp::Write,
            offset / 512,
            len / 512,
            arrived,
            move |_| Box::new(move || reply.written(len as u32)),
        );
    }

    fn fsync(&mut self, req: &Request<'_>, ino: u64, _fh: u64, _ds: bool, reply: ReplyEmpty) {
        let entry = Instant::now();
        if ino != DISK {
            return reply.ok();
        }
        if let Err(e) = self.check() {
            return reply.error(e);
        }
        let arrived = self.arrival(req.unique(), entry, ReqOp::Flush, 0, 0);
        self.log_accepted(0, None);
        let epoch = self.write_epoch();
        self.dispatch(req.unique(), ReqOp::Flush, 0, 0, arrived, move |sh| {
            sh.wait_pending(epoch, 0, u64::MAX);
            let res = if sh.sync_backing {
                sh.backing.sync_data()
            } else {
                Ok(())
            };
            if res.is_err() {
                sh.failed();
            }
            let ok = res.is_ok() && !sh.poisoned.load(Ordering::Relaxed);
            Box::new(move || {
                if ok {
                    reply.ok()
                } else {
                    reply.error(libc::EIO)
                }
            })
        });
    }

    /// A loop device turns discards and write-zeroes into fallocate (punch, zero range). The
    /// modelled drive, like the real ST1000DM003, has neither TRIM nor WRITE SAME: refused
    /// with EOPNOTSUPP, on which the loop device stops offering both and the kernel writes
    /// zeroes as ordinary writes (`blkdev_issue_zeroout`'s fallback), which the model times
    /// as the real drive's writes.
    #[allow(clippy::too_many_arguments)]
    fn fallocate(
        &mut self,
        _req: &Request<'_>,
        _ino: u64,
        _fh: u64,
        _offset: i64,
        _length: i64,
        _mode: i32,
        reply: ReplyEmpty,
    ) {
        self.shared
            .fallocates_refused
            .fetch_add(1, Ordering::Relaxed);
        reply.error(libc::EOPNOTSUPP)
    }

    fn readdir(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        _fh: u64,
        offset: i64,
        mut reply: ReplyDirectory,
    ) {
        if ino != ROOT {
            return reply.error(libc::ENOTDIR);
        }
        let entries = [
            (ROOT, FileType::Directory, "."),
            (ROOT, FileType::Directory, ".."),
            (DISK, FileType::RegularFile, DISK_NAME),
            (STATS, FileType::RegularFile, STATS_NAME),
            (CONTROL, FileType::RegularFile, CONTROL_NAME),
        ];
        for (i, (ino, kind, name)) in entries.iter().enumerate().skip(offset.max(0) as usize) {
            if reply.add(*ino, (i + 1) as i64, *kind, name) {
                break;
            }
        }
        reply.ok()
    }

    fn statfs(&mut self, _req: &Request<'_>, _ino: u64, reply: ReplyStatfs) {
        reply.statfs(self.size / 4096, 0, 0, 3, 0, 4096, 255, 4096)
    }
}
