//! When the kernel queued each FUSE request: a request's arrival at the emulated drive.
//!
//! A request reaches the server's handler some time after the kernel queued it: for a 1 MiB
//! write, after the kernel has copied its data to the server (about 0.45 ms on the 2-vCPU
//! VM, docs/COMPARISON.md). A drive takes a command when the host sends it and overlaps the
//! data's transfer with its own work, so time-stamping a request at the handler gives the
//! modelled drive idle time the real one does not get: it destages and reads ahead in it.
//!
//! FUSE's `fuse_request_send` tracepoint fires when the kernel queues a request for the
//! server, with the connection and the request's `unique` id. [`KernelStamps`] records it in
//! a tracefs instance of its own (clock `mono`, which is `Instant`'s clock on Linux), reads
//! the instance's `trace_pipe` in a thread, and gives each request the kernel's time
//! ([`KernelStamps::arrival`]). Where tracefs or the tracepoint is missing, or a stamp does
//! not come in time, the handler's own time stands (counted).
//!
//! A request a loop device over the drive's file made was issued earlier still: the loop
//! device's `block_rq_issue` is when the host's block layer handed it to the "drive" (on a
//! real disk, the driver's command), and its worker reaches FUSE some 20–200 µs later. The
//! instance also records the block tracepoints of loop devices (major 7); a loop device whose
//! `loop/backing_file` is the drive's file ([`KernelStamps::set_disk`]) is ours, and a FUSE
//! request matching one of its issued requests (operation, first sector, sectors) arrives at
//! that issue. Its `block_rq_complete` is where the host sees the request complete: the
//! reply path ([`super::replypath`]) is measured to it.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

use super::replypath::{Key, ReplyPath};
use super::writelog::monotonic_ns;
use crate::trace::{EventKind, ReqOp};

/// How long a handler waits for its request's stamp before taking its own time: the
/// tracepoint fired before the server could read the request, so the stamp is normally
/// there already or about to be read.
const STAMP_WAIT: Duration = Duration::from_millis(2);
/// After this many requests in a row found no stamp, handlers stop waiting for one (the
/// tracepoint has gone quiet: a handler would otherwise wait [`STAMP_WAIT`] every time).
const MISSES_BEFORE_GIVING_UP: u64 = 64;
/// Stamps kept at most (requests of other FUSE connections, and of requests never handled,
/// would otherwise pile up); the oldest go first.
const MAX_STAMPS: usize = 1 << 16;

/// A `fuse_request_send` line's fields: (connection, unique, time in ns of CLOCK_MONOTONIC).
pub fn parse_send(line: &str) -> Option<(u64, u64, u64)> {
    parse_event(line, "fuse_request_send")
}

/// A `fuse_request_end` line's fields (the kernel has the server's reply): (connection,
/// unique, time in ns of CLOCK_MONOTONIC).
pub fn parse_end(line: &str) -> Option<(u64, u64, u64)> {
    parse_event(line, "fuse_request_end")
}

/// Either event: the one whose name is `name`.
fn parse_event(line: &str, name: &str) -> Option<(u64, u64, u64)> {
    let (time_ns, event, payload) = crate::trace::event_fields(line.trim())?;
    if event != name {
        return None;
    }
    let mut words = payload.split_whitespace();
    let mut field = |name: &str| -> Option<u64> {
        (words.next()? == name).then_some(())?;
        words.next()?.parse().ok()
    };
    let connection = field("connection")?;
    let unique = field("req")?;
    Some((connection, unique, time_ns))
}

/// The FUSE connection number of a mount whose files have `st_dev` (major, minor), as the
/// tracepoint gives it (the kernel's `dev_t`: MAJOR << 20 | MINOR).
pub fn connection_number(dev: (u32, u32)) -> u64 {
    (u64::from(dev.0) << 20) | u64::from(dev.1)
}

#[derive(Debug, Default)]
struct Stamps {
    /// (connection, unique) → CLOCK_MONOTONIC ns.
    by_request: HashMap<(u64, u64), u64>,
    /// Insertion order, for dropping the oldest.
    order: std::collections::VecDeque<(u64, u64)>,
}

impl Stamps {
    /// Records request `key`'s stamp, dropping the oldest beyond [`MAX_STAMPS`] (entries
    /// already taken by handlers stay in `order` until they age out: the map is what counts).
    fn insert(&mut self, key: (u64, u64), mono_ns: u64) {
        self.by_request.insert(key, mono_ns);
        self.order.push_back(key);
        while self.order.len() > MAX_STAMPS {
            if let Some(k) = self.order.pop_front() {
                self.by_request.remove(&k);
            }
        }
    }
}

/// Block requests of the loop devices over the drive's file.
#[derive(Debug, Default)]
struct BlockStamps {
    /// Loop devices (major, minor) and whether they are over the drive's file, as found at
    /// the time given (looked up again a second later: loop devices come and go).
    ours: HashMap<(u32, u32), (bool, Instant)>,
    /// Issued requests not yet taken by a handler: (op, sector, sectors) → issue times.
    issues: HashMap<(u8, u64, u64), std::collections::VecDeque<u64>>,
    /// Insertion order, for dropping the oldest.
    order: std::collections::VecDeque<(u8, u64, u64)>,
}

impl BlockStamps {
    fn insert(&mut self, key: (u8, u64, u64), mono_ns: u64) {
        self.issues.entry(key).or_default().push_back(mono_ns);
        self.order.push_back(key);
        while self.order.len() > MAX_STAMPS {
            if let Some(k) = self.order.pop_front() {
                if let Some(q) = self.issues.get_mut(&k) {
                    q.pop_front();
                    if q.is_empty() {
                        self.issues.remove(&k);
                    }
                }
            }
        }
    }

    /// The oldest issue of `key` not yet taken.
    fn take(&mut self, key: (u8, u64, u64)) -> Option<u64> {
        let q = self.issues.get_mut(&key)?;
        let t = q.pop_front();
        if q.is_empty() {
            self.issues.remove(&key);
        }
        t
    }
}

/// Loop devices' block numbers (major 7) as the block tracepoints' `dev` field has them.
const LOOP_FILTER: &str = "dev >= 7340032 && dev < 8388608";

/// The block events of the loop devices over the drive, written as read
/// ([`KernelStamps::trace_to`]): the trace a replay of the run takes, with the very
/// timestamps the drive's arrivals came from.
#[derive(Debug, Default)]
struct TraceOut {
    out: Option<std::io::BufWriter<std::fs::File>>,
    /// Lines written to `out`.
    lines: u64,
    /// `trace_off` asked at this CLOCK_MONOTONIC ns: the file is closed once everything
    /// recorded before it has been read.
    off_at: Option<u64>,
    /// What closing gave: lines written, or the error.
    closed: Option<Result<u64, String>>,
}

#[derive(Debug)]
struct Shared {
    stamps: Mutex<Stamps>,
    /// The trace being written ([`TraceOut`]).
    trace: Mutex<TraceOut>,
    trace_closed: Condvar,
    /// The loop devices' requests ([`BlockStamps`]).
    block: Mutex<BlockStamps>,
    /// The drive's file (`MOUNTPOINT/disk`): a loop device over it is ours.
    disk: Mutex<Option<std::path::PathBuf>>,
    /// Requests given their loop device's issue time, and the sum of (kernel's FUSE queueing
    /// − block issue), ns.
    block_stamped: AtomicU64,
    block_lead_ns: AtomicU64,
    /// Time handlers spent waiting for their request's stamp (ns).
    wait_ns: AtomicU64,
    arrived: Condvar,
    stop: AtomicBool,
    /// The connection served (0: not known yet).
    connection: AtomicU64,
    /// `Instant` and CLOCK_MONOTONIC ns taken together.
    base: (Instant, u64),
    /// Requests given the kernel's time, and given the handler's.
    stamped: AtomicU64,
    unstamped: AtomicU64,
    /// Sum of (handler time − kernel time), ns, over the stamped requests.
    lead_ns: AtomicU64,
    /// Requests in a row that found no stamp.
    misses: AtomicU64,
    /// The reply path's lag, learnt from `fuse_request_end` ([`super::replypath`]); `None`
    /// where that tracepoint is missing.
    reply_path: Option<ReplyPath>,
}

impl Shared {
    fn new(reply_path: bool) -> Shared {
        Shared {
            reply_path: reply_path.then(ReplyPath::new),
            block: Mutex::new(BlockStamps::default()),
            disk: Mutex::new(None),
            trace: Mutex::new(TraceOut::default()),
            trace_closed: Condvar::new(),
            block_stamped: AtomicU64::new(0),
            block_lead_ns: AtomicU64::new(0),
            wait_ns: AtomicU64::new(0),
            stamps: Mutex::new(Stamps::default()),
            arrived: Condvar::new(),
            stop: AtomicBool::new(false),
            connection: AtomicU64::new(0),
            base: (Instant::now(), monotonic_ns()),
            stamped: AtomicU64::new(0),
            unstamped: AtomicU64::new(0),
            lead_ns: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }
}

/// The kernel's queueing times of one FUSE connection's requests (see the module's note).
#[derive(Debug)]
pub struct KernelStamps {
    shared: Arc<Shared>,
    reader: Option<JoinHandle<()>>,
    // Declared last: dropped after the reader has stopped and closed `trace_pipe`.
    _tracing: Option<devguard::Tracing>,
}

/// What [`KernelStamps`] did, for `stats.json`.
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct StampStats {
    /// Requests whose arrival is the kernel's queueing time.
    pub kernel_stamped: u64,
    /// Requests whose arrival is the handler's time (no stamp in time, or stamps off).
    pub handler_stamped: u64,
    /// Mean time from the kernel's queueing to the handler, over the stamped requests (ns).
    pub mean_lead_ns: u64,
    /// Requests a loop device over the drive's file made, whose arrival is that loop
    /// device's issue (`block_rq_issue`).
    pub block_stamped: u64,
    /// Mean time from the loop device's issue to the kernel's queueing for the server, over
    /// those (ns): the host's time that a real drive's command does not spend.
    pub mean_block_lead_ns: u64,
    /// Mean time a handler waited for its request's stamp to be read from the trace (ns).
    pub mean_wait_ns: u64,
}

impl KernelStamps {
    /// Starts recording `fuse_request_send` (and `fuse_request_end`, for the reply path,
    /// where the kernel has it) in a tracefs instance `hddsim-PID` (its own tracefs mount in
    /// `mount_parent`). `Ok(None)` where tracefs, instances or the send tracepoint are
    /// missing.
    pub fn start(mount_parent: &Path) -> std::io::Result<Option<KernelStamps>> {
        let name = format!("hddsim-{}", std::process::id());
        let start = |events: &[(&str, &str)]| {
            devguard::Tracing::start_events(mount_parent, ".hddsim-tracefs", &name, events, 1024)
        };
        let mut ends = true;
        let full = [
            ("fuse/fuse_request_send", ""),
            ("fuse/fuse_request_end", ""),
            ("block/block_rq_issue", LOOP_FILTER),
            ("block/block_rq_complete", LOOP_FILTER),
        ];
        let tracing = match start(&full)? {
            Some(t) => Some(t),
            None => {
                ends = false;
                start(&full[..1])?
            }
        };
        let Some(tracing) = tracing else {
            return Ok(None);
        };
        let pipe = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(tracing.instance().join("trace_pipe"))?;
        tracing.on()?;
        let shared = Arc::new(Shared::new(ends));
        let sh = Arc::clone(&shared);
        let reader = std::thread::Builder::new()
            .name("hddsim-kstamp".into())
            .spawn(move || {
                super::server::follow_realtime();
                read_pipe(pipe, &sh)
            })?;
        Ok(Some(KernelStamps {
            shared,
            reader: Some(reader),
            _tracing: Some(tracing),
        }))
    }

    /// Stamps with no tracefs behind them, filled by [`KernelStamps::insert`] (tests).
    #[cfg(test)]
    fn detached() -> KernelStamps {
        KernelStamps {
            shared: Arc::new(Shared::new(true)),
            reader: None,
            _tracing: None,
        }
    }

    /// Records a stamp as the reader does (tests).
    #[cfg(test)]
    fn insert(&self, connection: u64, unique: u64, mono_ns: u64) {
        self.shared
            .stamps
            .lock()
            .unwrap()
            .insert((connection, unique), mono_ns);
    }

    /// The reply path's lag per class ([`super::replypath`]), where the kernel reports
    /// requests' ends.
    pub fn reply_path(&self) -> Option<&ReplyPath> {
        self.shared.reply_path.as_ref()
    }

    /// Writes the block events (`block_rq_issue`, `block_rq_complete`) of the loop devices
    /// over the drive to `path` from now on, as read from the trace (the lines tracefs
    /// prints): what `hddsim replay` takes, with the timestamps the modelled arrivals came
    /// from, so that a replay of the run sees the requests the drive saw when it saw them. A
    /// trace already being written is closed first.
    pub fn trace_to(&self, path: &Path) -> std::io::Result<()> {
        let f = std::fs::File::create(path)
            .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        let mut t = self.shared.trace.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(mut old) = t.out.take() {
            let _ = old.flush();
        }
        *t = TraceOut {
            out: Some(std::io::BufWriter::with_capacity(1 << 20, f)),
            ..TraceOut::default()
        };
        Ok(())
    }

    /// Stops the trace: waits (at most 2 s) until every event recorded before now has been
    /// read and written, closes the file and returns the lines written.
    pub fn trace_off(&self) -> std::io::Result<u64> {
        let sh = &self.shared;
        let mut t = sh.trace.lock().unwrap_or_else(|e| e.into_inner());
        if t.out.is_none() {
            return Err(std::io::Error::other("no trace is being written"));
        }
        t.off_at = Some(monotonic_ns());
        t.closed = None;
        let deadline = Instant::now() + Duration::from_secs(2);
        while t.closed.is_none() {
            let now = Instant::now();
            if now >= deadline {
                // The reader is stuck: close what there is.
                t.off_at = None;
                let lines = t.lines;
                let res = t.out.take().map(|mut o| o.flush());
                return match res {
                    Some(Err(e)) => Err(e),
                    _ => Ok(lines),
                };
            }
            t = sh
                .trace_closed
                .wait_timeout(t, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        match t.closed.take() {
            Some(Ok(n)) => Ok(n),
            Some(Err(e)) => Err(std::io::Error::other(e)),
            None => Ok(0),
        }
    }

    /// `at` on CLOCK_MONOTONIC, in ns (the tracepoints' clock).
    pub fn mono_ns(&self, at: Instant) -> u64 {
        let (base_i, base_m) = self.shared.base;
        if at >= base_i {
            base_m + (at - base_i).as_nanos() as u64
        } else {
            base_m.saturating_sub((base_i - at).as_nanos() as u64)
        }
    }

    /// Sets the drive's file: loop devices over it are ours (see the module's note).
    pub fn set_disk(&self, disk: &Path) {
        *self.shared.disk.lock().unwrap_or_else(|e| e.into_inner()) = Some(disk.to_path_buf());
    }

    /// The arrival of request `unique` of `op` at `sector` over `sectors`, which the handler
    /// took at `entry`: its loop device's issue where a loop device over the drive's file made
    /// it (then `true`), else [`KernelStamps::arrival`].
    pub fn arrival_of(
        &self,
        unique: u64,
        entry: Instant,
        op: ReqOp,
        sector: u64,
        sectors: u64,
    ) -> (Instant, bool) {
        let queued = self.arrival(unique, entry);
        let sh = &self.shared;
        let issued = sh
            .block
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take((op as u8, sector, sectors));
        match issued {
            Some(t) => {
                let at = self.instant(t).min(queued);
                sh.block_stamped.fetch_add(1, Ordering::Relaxed);
                sh.block_lead_ns
                    .fetch_add((queued - at).as_nanos() as u64, Ordering::Relaxed);
                (at, true)
            }
            None => (queued, false),
        }
    }

    /// CLOCK_MONOTONIC ns as an `Instant`.
    fn instant(&self, t: u64) -> Instant {
        let (base_i, base_m) = self.shared.base;
        if t >= base_m {
            base_i + Duration::from_nanos(t - base_m)
        } else {
            base_i
                .checked_sub(Duration::from_nanos(base_m - t))
                .unwrap_or(base_i)
        }
    }

    /// Sets the connection served (see [`connection_number`]).
    pub fn set_connection(&self, connection: u64) {
        self.shared.connection.store(connection, Ordering::Relaxed);
    }

    /// The arrival of request `unique`, which the handler took at `entry`: the kernel's
    /// queueing time when its stamp is there or comes within [`STAMP_WAIT`] (never later
    /// than `entry`), else `entry`.
    pub fn arrival(&self, unique: u64, entry: Instant) -> Instant {
        let waited_from = Instant::now();
        let at = self.arrival_inner(unique, entry);
        self.shared
            .wait_ns
            .fetch_add(waited_from.elapsed().as_nanos() as u64, Ordering::Relaxed);
        at
    }

    fn arrival_inner(&self, unique: u64, entry: Instant) -> Instant {
        let sh = &self.shared;
        let conn = sh.connection.load(Ordering::Relaxed);
        let found = (conn != 0)
            .then(|| {
                let key = (conn, unique);
                let wait = if sh.misses.load(Ordering::Relaxed) < MISSES_BEFORE_GIVING_UP {
                    STAMP_WAIT
                } else {
                    Duration::ZERO
                };
                let deadline = Instant::now() + wait;
                let mut s = sh.stamps.lock().unwrap_or_else(|e| e.into_inner());
                loop {
                    if let Some(t) = s.by_request.remove(&key) {
                        return Some(t);
                    }
                    let now = Instant::now();
                    if now >= deadline {
                        return None;
                    }
                    s = sh
                        .arrived
                        .wait_timeout(s, deadline - now)
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                }
            })
            .flatten();
        let Some(t) = found else {
            sh.unstamped.fetch_add(1, Ordering::Relaxed);
            if conn != 0 {
                sh.misses.fetch_add(1, Ordering::Relaxed);
            }
            return entry;
        };
        sh.misses.store(0, Ordering::Relaxed);
        let at = self.instant(t).min(entry);
        sh.stamped.fetch_add(1, Ordering::Relaxed);
        sh.lead_ns
            .fetch_add((entry - at).as_nanos() as u64, Ordering::Relaxed);
        at
    }

    /// What it did so far.
    pub fn stats(&self) -> StampStats {
        let sh = &self.shared;
        let stamped = sh.stamped.load(Ordering::Relaxed);
        let block = sh.block_stamped.load(Ordering::Relaxed);
        StampStats {
            kernel_stamped: stamped,
            handler_stamped: sh.unstamped.load(Ordering::Relaxed),
            mean_lead_ns: sh.lead_ns.load(Ordering::Relaxed) / stamped.max(1),
            block_stamped: block,
            mean_block_lead_ns: sh.block_lead_ns.load(Ordering::Relaxed) / block.max(1),
            mean_wait_ns: sh.wait_ns.load(Ordering::Relaxed)
                / (stamped + sh.unstamped.load(Ordering::Relaxed)).max(1),
        }
    }
}

impl Drop for KernelStamps {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.reader.take() {
            let _ = t.join();
        }
        // `_tracing` is dropped next: recording off, the instance and its mount removed.
    }
}

/// Closes the trace if `trace_off` asked and everything recorded before then has been read:
/// called when the pipe has been found empty.
fn close_trace_if_asked(sh: &Shared) {
    let mut t = sh.trace.lock().unwrap_or_else(|e| e.into_inner());
    let Some(off_at) = t.off_at else {
        return;
    };
    if monotonic_ns() < off_at {
        return;
    }
    let lines = t.lines;
    let failed = matches!(t.closed, Some(Err(_)));
    let res = match t.out.take() {
        Some(mut o) => o.flush().map_err(|e| e.to_string()),
        None => Ok(()),
    };
    t.off_at = None;
    t.closed = Some(if failed {
        Err("writing the trace failed".into())
    } else {
        res.map(|()| lines)
    });
    drop(t);
    sh.trace_closed.notify_all();
}

/// Whether loop device `dev` is over the drive's file (its `loop/backing_file` in sysfs),
/// looked up at most once a second per device.
fn is_ours(sh: &Shared, b: &mut BlockStamps, dev: (u32, u32)) -> bool {
    if let Some(&(ours, at)) = b.ours.get(&dev) {
        if at.elapsed() < Duration::from_secs(1) {
            return ours;
        }
    }
    let disk = sh.disk.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let ours = disk.is_some_and(|disk| {
        std::fs::read_to_string(format!(
            "/sys/dev/block/{}:{}/loop/backing_file",
            dev.0, dev.1
        ))
        .is_ok_and(|f| {
            let f = Path::new(f.trim_end_matches('\n'));
            f == disk || std::fs::canonicalize(f).is_ok_and(|f| f == disk)
        })
    });
    b.ours.insert(dev, (ours, Instant::now()));
    ours
}

/// The reader thread: parses `trace_pipe` until told to stop.
fn read_pipe(mut pipe: std::fs::File, sh: &Shared) {
    let mut buf = vec![0u8; 64 << 10];
    let mut partial = String::new();
    while !sh.stop.load(Ordering::Relaxed) {
        let mut fds = [PollFd::new(pipe.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, PollTimeout::from(20u16)) {
            Ok(0) => {
                close_trace_if_asked(sh);
                continue;
            }
            Ok(_) => {}
            Err(nix::errno::Errno::EINTR) => continue,
            Err(_) => return,
        }
        let n = match pipe.read(&mut buf) {
            Ok(0) => continue,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return,
        };
        partial.push_str(&String::from_utf8_lossy(&buf[..n]));
        let Some(cut) = partial.rfind('\n') else {
            continue;
        };
        let lines: String = partial.drain(..=cut).collect();
        let conn = sh.connection.load(Ordering::Relaxed);
        let mut sends = Vec::new();
        let mut ends = Vec::new();
        let mut block = Vec::new();
        let newest = lines
            .lines()
            .rev()
            .find_map(|l| crate::trace::event_fields(l.trim()).map(|(t, _, _)| t))
            .unwrap_or(0);
        for line in lines.lines() {
            if let Some((c, unique, t)) = parse_send(line) {
                sends.push(((c, unique), t));
            } else if let Some((c, unique, t)) = parse_end(line) {
                if c == conn {
                    ends.push((Key::Fuse(unique), t));
                }
            } else if let Ok(Some(ev)) = crate::trace::parse_line(line, 0) {
                block.push((ev, line));
            }
        }
        // The loop devices' issues first: a handler woken by its request's send stamp looks
        // for the issue that preceded it, which must be there by then.
        if !block.is_empty() {
            let mut b = sh.block.lock().unwrap_or_else(|e| e.into_inner());
            let mut t = sh.trace.lock().unwrap_or_else(|e| e.into_inner());
            for (ev, line) in block {
                if !is_ours(sh, &mut b, ev.dev) {
                    continue;
                }
                if let Some(out) = t.out.as_mut() {
                    // A write error is reported when the trace is closed.
                    if writeln!(out, "{}", line.trim_end()).is_err() {
                        t.closed = Some(Err("writing the trace failed".into()));
                    }
                    t.lines += 1;
                }
                // A flush is issued at sector 0 and completes at sector −1: one key.
                let key = match ev.rwbs.op {
                    ReqOp::Flush => (ReqOp::Flush as u8, 0, 0),
                    op => (op as u8, ev.sector, ev.nr_sectors),
                };
                match ev.kind {
                    EventKind::Issue => b.insert(key, ev.time_ns),
                    EventKind::Complete => ends.push((Key::Block(key.0, key.1, key.2), ev.time_ns)),
                }
            }
        }
        if !sends.is_empty() {
            let mut s = sh.stamps.lock().unwrap_or_else(|e| e.into_inner());
            for (key, t) in sends {
                s.insert(key, t);
            }
            drop(s);
            sh.arrived.notify_all();
        }
        if let Some(rp) = &sh.reply_path {
            for (key, t) in ends {
                rp.ended(key, t);
            }
        }
        // The pipe gives the events in time order: once one recorded after `trace_off` was
        // asked has been read, everything before it has been written.
        if newest
            >= sh
                .trace
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .off_at
                .unwrap_or(u64::MAX)
        {
            close_trace_if_asked(sh);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_send_line_gives_connection_request_and_time() {
        let l = "    kworker/u8:1-28057   [000] ...2. 21185.369736: fuse_request_send: \
                 connection 39 req 16 opcode 15 (FUSE_READ) len 80 ";
        assert_eq!(parse_send(l), Some((39, 16, 21_185_369_736_000)));
        // Nanosecond precision too.
        let l = "hddsim-1 [001] ..... 5.000000001: fuse_request_send: connection 7 req 2 \
                 opcode 16 (FUSE_WRITE) len 8784";
        assert_eq!(parse_send(l), Some((7, 2, 5_000_000_001)));
    }

    #[test]
    fn other_lines_give_nothing() {
        for l in [
            "",
            "# tracer: nop",
            "hddsim-16854 [000] ..... 21185.376991: fuse_request_end: connection 39 req 16 \
             len 131088 error 0",
            "x [000] ..... 1.5: fuse_request_send: connection x req 1",
            "x [000] ..... 1.5: fuse_request_send: req 1 connection 2",
            "x [000] ..... 1.: fuse_request_send: connection 1 req 1",
        ] {
            assert_eq!(parse_send(l), None, "{l}");
        }
    }

    #[test]
    fn a_request_arrives_when_the_kernel_queued_it() {
        let k = KernelStamps::detached();
        k.set_connection(39);
        let now_m = monotonic_ns();
        let entry = Instant::now();
        // Queued 450 µs before the handler took it (a 1 MiB write's copy).
        k.insert(39, 16, now_m - 450_000);
        let at = k.arrival(16, entry);
        let lead = entry - at;
        assert!(
            lead >= Duration::from_micros(449) && lead <= Duration::from_micros(600),
            "{lead:?}"
        );
        // Taken once: the same unique again (a later request) has no stamp.
        let t = Instant::now();
        assert_eq!(k.arrival(16, t), t);
        // Another connection's request of the same number is not ours.
        k.insert(40, 17, now_m - 450_000);
        let t = Instant::now();
        assert_eq!(k.arrival(17, t), t);
        // Never later than the handler's own time.
        k.insert(39, 18, monotonic_ns() + 1_000_000_000);
        let t = Instant::now();
        assert_eq!(k.arrival(18, t), t);
        let st = k.stats();
        assert_eq!((st.kernel_stamped, st.handler_stamped), (2, 2), "{st:?}");
    }

    #[test]
    fn without_a_connection_or_a_stamp_the_handlers_time_stands() {
        let k = KernelStamps::detached();
        k.insert(39, 1, monotonic_ns());
        // The connection is not known yet: no wait, the handler's time.
        let t = Instant::now();
        assert_eq!(k.arrival(1, t), t);
        k.set_connection(39);
        // No stamp: waits at most STAMP_WAIT, then the handler's time.
        let t = Instant::now();
        assert_eq!(k.arrival(2, t), t);
        assert!(t.elapsed() >= STAMP_WAIT);
        // After enough misses in a row it stops waiting.
        k.shared
            .misses
            .store(MISSES_BEFORE_GIVING_UP, Ordering::Relaxed);
        let t = Instant::now();
        assert_eq!(k.arrival(3, t), t);
        assert!(t.elapsed() < STAMP_WAIT, "{:?}", t.elapsed());
        // A stamp found again resumes waiting.
        k.insert(39, 4, monotonic_ns());
        k.arrival(4, Instant::now());
        assert_eq!(k.shared.misses.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn the_connection_is_the_kernels_dev_t() {
        assert_eq!(connection_number((0, 39)), 39);
        assert_eq!(connection_number((1, 2)), (1 << 20) | 2);
    }
}
