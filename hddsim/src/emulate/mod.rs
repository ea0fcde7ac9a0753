//! The drive in real time: requests served with the model's timing (`hddsim emulate`).
//!
//! A thin layer over [`Drive`]: [`DriveQueue`] takes the requests in the order they arrive
//! and serves them one at a time, first come first served, the way the replay does
//! ([`crate::replay`]): request i starts at `max(arrival_i, end_{i−1})` and completes at
//! `Drive::submit(request_i, start_i)`; it is *queued* (NCQ) when it arrived while the
//! previous one was still in service. Because the drive serves in arrival order, a request's
//! completion time is known the moment it arrives; the FUSE server ([`server`]) then moves
//! its data to or from the backing image and replies at that time. A request arrives when
//! the server's handler takes it, before any copy of its data ([`DriveQueue::submit_arrived`]).
//!
//! Two clocks ([`Clock`]): `real` — the model's clock is CLOCK_MONOTONIC since the mount,
//! replies wait for their modelled completion; `virtual` — a request arrives when the
//! previous one completed (closed loop, no think time), replies are not delayed, and the
//! service times are only recorded: the same request sequence gives the same times on every
//! run, for tests.

pub mod backing;
pub mod cli;
pub mod kstamp;
pub mod latent;
pub mod replypath;
pub mod server;
pub mod writelog;

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::time::Instant;

use serde::Serialize;

use crate::model::{Drive, DriveRequest, DriveStats};
use crate::profile::Profile;
use crate::trace::ReqOp;

/// How time passes in the emulator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Clock {
    /// Replies wait for their modelled completion (CLOCK_MONOTONIC).
    Real,
    /// Replies are immediate; each request starts when the previous one completed.
    Virtual,
}

/// A request's place on the model's clock (ns since the mount, or since the first request in
/// virtual time).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scheduled {
    /// Its number, from 0.
    pub seq: u64,
    /// When it arrived.
    pub arrival: f64,
    /// When the drive began it.
    pub start: f64,
    /// When it completes.
    pub end: f64,
    /// It arrived while the previous one was in service.
    pub queued: bool,
}

impl Scheduled {
    /// The modelled service time (end − start), ns.
    pub fn service_ns(&self) -> f64 {
        self.end - self.start
    }

    /// The modelled response time (end − arrival), ns.
    pub fn response_ns(&self) -> f64 {
        self.end - self.arrival
    }
}

/// Counts of what the drive was asked, for `stats.json`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RequestStats {
    /// Reads.
    pub reads: u64,
    /// Writes.
    pub writes: u64,
    /// Flushes (fsync/fdatasync of the drive's file).
    pub flushes: u64,
    /// Reads by size in bytes: how many of each size the model saw.
    pub read_sizes: BTreeMap<u64, u64>,
    /// Writes by size in bytes.
    pub write_sizes: BTreeMap<u64, u64>,
    /// Requests that arrived while the drive was busy (they waited in its queue).
    pub queued: u64,
    /// Sum of the modelled service times (ns).
    pub service_ns: u64,
    /// Sum of the modelled response times, queueing included (ns).
    pub response_ns: u64,
    /// Reads that touched an unreadable sector and failed (EIO) after the error recovery
    /// time ([`latent`]).
    pub read_errors: u64,
    /// Times the drive was put back as at power-on ([`DriveQueue::reset`]).
    pub resets: u64,
    /// Requests that reached the drive after one issued later (the host's threads passed
    /// them on out of order): served in the order they came, each counted as arriving with
    /// the one before it. A replay of the trace, which orders by issue, serves them in issue
    /// order.
    pub out_of_order: u64,
}

/// Why [`DriveQueue::reset`] refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ResetRefused {
    /// The modelled cache holds this many dirty sectors: flush first.
    #[error("the drive's cache holds {0} dirty sectors; flush it first (fsync the disk)")]
    Dirty(u64),
    /// A request is in service for this many more ns.
    #[error("a request is in service for another {0} ns")]
    Busy(u64),
}

/// The modelled drive's command queue: requests in, modelled times out.
#[derive(Debug)]
pub struct DriveQueue {
    drive: Drive,
    /// The drive's profile, for [`DriveQueue::reset`].
    profile: Profile,
    /// The model's time 0 on this queue's clock (ns): the arrival of the first request after
    /// the last reset (0 before any). The drive's angle is the time since then, as in a
    /// replay, whose clock starts at the first request of its trace.
    epoch: f64,
    /// The next request's arrival becomes the epoch (a reset happened).
    new_epoch: bool,
    clock: Clock,
    t0: Instant,
    last_end: f64,
    /// The previous request's arrival (model clock).
    last_arrival: f64,
    seq: u64,
    stats: RequestStats,
    log: Option<BufWriter<File>>,
}

impl DriveQueue {
    /// An idle drive of `profile` whose clock starts now; `log` receives one line per
    /// request (see [`DriveQueue::LOG_HEADER`]).
    pub fn new(profile: &Profile, clock: Clock, log: Option<File>) -> std::io::Result<Self> {
        let mut log = log.map(BufWriter::new);
        if let Some(l) = log.as_mut() {
            writeln!(l, "{}", Self::LOG_HEADER)?;
        }
        Ok(DriveQueue {
            drive: Drive::new(profile),
            profile: profile.clone(),
            epoch: 0.0,
            new_epoch: false,
            clock,
            t0: Instant::now(),
            last_end: 0.0,
            last_arrival: 0.0,
            seq: 0,
            stats: RequestStats::default(),
            log,
        })
    }

    /// The request log's header line. Times are ns on the model's clock, printed exactly
    /// (Rust's shortest round-trip form of the f64).
    pub const LOG_HEADER: &'static str =
        "# seq\top\tsector\tsectors\tarrival_ns\tstart_ns\tend_ns\tqueued";

    /// The clock.
    pub fn clock(&self) -> Clock {
        self.clock
    }

    /// The instant the model's clock counts from.
    pub fn origin(&self) -> Instant {
        self.t0
    }

    /// Takes a request (512-byte sectors) as it arrives now and returns its modelled times.
    pub fn submit(&mut self, op: ReqOp, sector: u64, sectors: u64) -> Scheduled {
        self.submit_with(op, sector, sectors, 0.0, Instant::now())
    }

    /// [`DriveQueue::submit`] for a request that arrived at `arrived` (the moment the server
    /// took it, before it copied its data): in real time the drive starts it from then, not
    /// from when the server got round to submitting it. An `arrived` before the previous
    /// request's arrival counts as that arrival (the drive takes requests in order).
    pub fn submit_arrived(
        &mut self,
        op: ReqOp,
        sector: u64,
        sectors: u64,
        arrived: Instant,
    ) -> Scheduled {
        self.submit_with(op, sector, sectors, 0.0, arrived)
    }

    /// A read that touches an unreadable sector ([`latent`]): the drive serves it as any read
    /// (seek, rotation, transfer), then keeps retrying for `recovery_ns` before it reports
    /// the error, busy all the while.
    pub fn submit_failed_read(
        &mut self,
        sector: u64,
        sectors: u64,
        recovery_ns: f64,
        arrived: Instant,
    ) -> Scheduled {
        self.stats.read_errors += 1;
        self.submit_with(ReqOp::Read, sector, sectors, recovery_ns.max(0.0), arrived)
    }

    /// [`DriveQueue::submit`], the request taking `extra_ns` longer than the model says.
    fn submit_with(
        &mut self,
        op: ReqOp,
        sector: u64,
        sectors: u64,
        extra_ns: f64,
        arrived: Instant,
    ) -> Scheduled {
        let arrival = match self.clock {
            Clock::Real => {
                let at = arrived.saturating_duration_since(self.t0).as_nanos() as f64;
                if at < self.last_arrival {
                    self.stats.out_of_order += 1;
                }
                at.max(self.last_arrival)
            }
            Clock::Virtual => self.last_end,
        };
        self.last_arrival = arrival;
        let start = arrival.max(self.last_end);
        let queued = arrival < self.last_end;
        let req = DriveRequest {
            queued,
            ..DriveRequest::new(op, sector, sectors)
        };
        if self.new_epoch {
            self.epoch = start;
            self.new_epoch = false;
        }
        let end = self.drive.submit(&req, start - self.epoch) + self.epoch + extra_ns;
        self.last_end = end;
        let s = Scheduled {
            seq: self.seq,
            arrival,
            start,
            end,
            queued,
        };
        self.seq += 1;
        let st = &mut self.stats;
        match op {
            ReqOp::Read => {
                st.reads += 1;
                *st.read_sizes.entry(sectors * 512).or_default() += 1;
            }
            ReqOp::Write => {
                st.writes += 1;
                *st.write_sizes.entry(sectors * 512).or_default() += 1;
            }
            _ => st.flushes += 1,
        }
        st.queued += u64::from(queued);
        st.service_ns += s.service_ns().round() as u64;
        st.response_ns += s.response_ns().round() as u64;
        if let Some(l) = self.log.as_mut() {
            let name = match op {
                ReqOp::Read => "R",
                ReqOp::Write => "W",
                ReqOp::Flush => "F",
                ReqOp::Discard => "D",
                ReqOp::Other => "N",
            };
            // A failed log write is reported at the end (flush_log); serving goes on.
            let _ = writeln!(
                l,
                "{}\t{name}\t{sector}\t{sectors}\t{arrival}\t{start}\t{end}\t{}",
                s.seq,
                u8::from(queued)
            );
        }
        s
    }

    /// Puts the modelled drive back as at power-on ([`Drive::reset`]): its cache empty, the
    /// head at sector 0, nothing in service, its clock starting again at the next request's
    /// arrival (as a replay's starts at its first request: the platter's angle then matches a
    /// replay of what follows), so that what follows does not depend on what came before. Refused while the cache holds dirty data (flush first) or a request is
    /// in service at `now`. The statistics are kept; `resets` counts it.
    pub fn reset(&mut self, now: Instant) -> Result<(), ResetRefused> {
        let dirty = self.drive.dirty_sectors();
        if dirty > 0 {
            return Err(ResetRefused::Dirty(dirty));
        }
        let now_ns = match self.clock {
            Clock::Real => now.saturating_duration_since(self.t0).as_nanos() as f64,
            Clock::Virtual => self.last_end,
        };
        if self.last_end > now_ns {
            return Err(ResetRefused::Busy((self.last_end - now_ns) as u64));
        }
        self.drive.reset(&self.profile);
        self.new_epoch = true;
        self.stats.resets += 1;
        Ok(())
    }

    /// Writes out the request log.
    pub fn flush_log(&mut self) -> std::io::Result<()> {
        match self.log.as_mut() {
            Some(l) => l.flush(),
            None => Ok(()),
        }
    }

    /// What the drive was asked so far.
    pub fn request_stats(&self) -> &RequestStats {
        &self.stats
    }

    /// What the drive did so far.
    pub fn drive_stats(&self) -> &DriveStats {
        self.drive.stats()
    }

    /// Dirty sectors in the modelled cache (as of the last request).
    pub fn dirty_sectors(&self) -> u64 {
        self.drive.dirty_sectors()
    }

    /// When the last request completes (model clock, ns).
    pub fn busy_until(&self) -> f64 {
        self.last_end
    }
}

/// One line of a request log, parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct LogLine {
    /// The operation.
    pub op: ReqOp,
    /// First sector (512-byte units).
    pub sector: u64,
    /// Sectors.
    pub sectors: u64,
    /// Its modelled times.
    pub times: Scheduled,
}

/// Parses a request log (`--log`); an error names the line.
pub fn parse_log(text: &str) -> Result<Vec<LogLine>, String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let bad = || format!("request log line {}: cannot parse `{line}`", i + 1);
        let f: Vec<&str> = line.split('\t').collect();
        if f.len() != 8 {
            return Err(bad());
        }
        let op = match f[1] {
            "R" => ReqOp::Read,
            "W" => ReqOp::Write,
            "F" => ReqOp::Flush,
            "D" => ReqOp::Discard,
            "N" => ReqOp::Other,
            _ => return Err(bad()),
        };
        let n = |k: usize| f[k].parse::<u64>().map_err(|_| bad());
        let t = |k: usize| f[k].parse::<f64>().map_err(|_| bad());
        out.push(LogLine {
            op,
            sector: n(2)?,
            sectors: n(3)?,
            times: Scheduled {
                seq: n(0)?,
                arrival: t(4)?,
                start: t(5)?,
                end: t(6)?,
                queued: f[7] == "1",
            },
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn profile() -> Profile {
        Profile::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("profiles/st1000dm003.toml"))
            .unwrap()
    }

    #[test]
    fn a_reset_drive_serves_as_a_new_one_and_is_refused_while_dirty_or_busy() {
        let p = profile();
        // The same reads on a drive that has served other work, then reset, and on a new one:
        // the same cache hits and the same seeks (the cache and the head start over; the
        // rotational waits differ, the platter's angle being the clock's).
        let reads = |q: &mut DriveQueue| -> (u64, u64, f64) {
            let before = q.drive_stats().clone();
            for (sector, n) in [
                (1u64 << 20, 8u64),
                (5 << 20, 256),
                (1 << 20, 8),
                (900 << 20, 2048),
            ] {
                q.submit(ReqOp::Read, sector, n);
            }
            let after = q.drive_stats();
            (
                after.cache_read_hits - before.cache_read_hits,
                after.media_reads - before.media_reads,
                after.read_seek_ns - before.read_seek_ns,
            )
        };
        let mut fresh = DriveQueue::new(&p, Clock::Virtual, None).unwrap();
        let want = reads(&mut fresh);
        let mut used = DriveQueue::new(&p, Clock::Virtual, None).unwrap();
        // Work that leaves state: the first read's sectors cached, the head elsewhere, and
        // dirty data.
        used.submit(ReqOp::Read, 1 << 20, 8);
        used.submit(ReqOp::Read, 1_500_000_000, 64);
        used.submit(ReqOp::Write, 300 << 20, 2048);
        assert_eq!(
            used.reset(Instant::now()),
            Err(ResetRefused::Dirty(2048)),
            "dirty data refuses a reset"
        );
        used.submit(ReqOp::Flush, 0, 0);
        used.reset(Instant::now()).unwrap();
        let got = reads(&mut used);
        assert_eq!((got.0, got.1), (want.0, want.1), "{got:?} {want:?}");
        assert!((got.2 - want.2).abs() < 1.0, "{got:?} {want:?}");
        assert_eq!(used.request_stats().resets, 1);
        // The clock starts again at the first request after the reset, as a replay's at the
        // first request of its trace: the same requests take the same times, rotation
        // included, as on a new drive.
        let services = |q: &mut DriveQueue| -> Vec<f64> {
            [
                (7u64 << 20, 64u64),
                (400 << 20, 8),
                (7 << 20, 2048),
                (123 << 20, 256),
            ]
            .iter()
            .map(|&(sector, n)| q.submit(ReqOp::Read, sector, n).service_ns())
            .collect()
        };
        let mut fresh = DriveQueue::new(&p, Clock::Virtual, None).unwrap();
        let new_drive = services(&mut fresh);
        used.submit(ReqOp::Write, 9 << 20, 64);
        used.submit(ReqOp::Flush, 0, 0);
        used.reset(Instant::now()).unwrap();
        let after_reset = services(&mut used);
        for (g, w) in after_reset.iter().zip(&new_drive) {
            assert!((g - w).abs() < 1e-3, "{after_reset:?} {new_drive:?}");
        }
        // Without the reset the first read is a cache hit and the seeks differ: the
        // comparison above can fail.
        let mut warm = DriveQueue::new(&p, Clock::Virtual, None).unwrap();
        warm.submit(ReqOp::Read, 1 << 20, 8);
        warm.submit(ReqOp::Read, 1_500_000_000, 64);
        let stale = reads(&mut warm);
        assert!(
            stale.0 > want.0 && (stale.2 - want.2).abs() > 1.0,
            "{stale:?} {want:?}"
        );
        // A request still in service (real clock: its completion is in the future) refuses it.
        let mut busy = DriveQueue::new(&p, Clock::Real, None).unwrap();
        busy.submit(ReqOp::Read, 1_900_000_000, 2048);
        assert!(matches!(
            busy.reset(busy.origin()),
            Err(ResetRefused::Busy(_))
        ));
    }

    #[test]
    fn virtual_clock_is_closed_loop_and_logged() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let mut q = DriveQueue::new(
            &profile(),
            Clock::Virtual,
            Some(File::create(&path).unwrap()),
        )
        .unwrap();
        let a = q.submit(ReqOp::Write, 0, 2048);
        let b = q.submit(ReqOp::Read, 1 << 20, 8);
        let c = q.submit(ReqOp::Flush, 0, 0);
        assert_eq!(a.start, 0.0);
        assert_eq!(b.start, a.end);
        assert_eq!(c.start, b.end);
        assert!(!b.queued && b.service_ns() > 0.0);
        assert_eq!(q.dirty_sectors(), 0);
        q.flush_log().unwrap();
        let lines = parse_log(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[1].times, b);
        assert_eq!(
            (lines[1].op, lines[1].sector, lines[1].sectors),
            (ReqOp::Read, 1 << 20, 8)
        );
        let st = q.request_stats();
        assert_eq!((st.reads, st.writes, st.flushes), (1, 1, 1));
        assert_eq!(st.write_sizes.get(&(1 << 20)), Some(&1));
    }

    /// A read of an unreadable sector takes the recovery time on top of the read's own, and
    /// the drive is busy all that time: the next request starts after it.
    #[test]
    fn a_failed_read_takes_the_recovery_time_and_holds_the_drive() {
        let mut q = DriveQueue::new(&profile(), Clock::Virtual, None).unwrap();
        let mut r = DriveQueue::new(&profile(), Clock::Virtual, None).unwrap();
        let ok = q.submit(ReqOp::Read, 5000, 8);
        let failed = r.submit_failed_read(5000, 8, 7e9, Instant::now());
        assert_eq!(failed.end, ok.end + 7e9);
        let next = r.submit(ReqOp::Read, 6000, 8);
        assert_eq!(next.start, failed.end);
        assert_eq!(r.request_stats().read_errors, 1);
        assert_eq!(q.request_stats().read_errors, 0);
    }

    /// Regression: a cache hit far beyond the look-ahead's window extended its limit to there,
    /// and the next read in between was charged the "streaming" of everything up to it (1284 s
    /// for one 4 KiB read): an emulator then held every later reply for that long. Fixed in the
    /// model; this guards the emulator's use of it.
    #[test]
    fn far_cache_hit_does_not_stretch_the_lookahead() {
        let mut q = DriveQueue::new(&profile(), Clock::Virtual, None).unwrap();
        let far = 1_000_000_000;
        q.submit(ReqOp::Read, far, 8); // now cached
        q.submit(ReqOp::Read, 1000, 8); // a miss: the look-ahead starts after it
        q.submit(ReqOp::Read, far, 8); // a hit far beyond the look-ahead
        let s = q.submit(ReqOp::Read, 500_000_000, 8); // a miss in between
                                                       // At most a full-stroke seek, a revolution and the overhead.
        assert!(s.service_ns() < 30e6, "{} ms", s.service_ns() / 1e6);
    }

    /// Regression (`emulated_write_arrival_after_its_data_copy`): the server stamped a
    /// request's arrival when it submitted it, after copying a write's data and waiting for
    /// write-behind room (2.1 ms median for a 1 MiB write, traced with FUSE's
    /// `fuse_request_send`), so the modelled drive idled — destaging, reading ahead — while
    /// the host copied. The arrival is now the moment the handler took the request; later
    /// requests never arrive before earlier ones.
    #[test]
    fn emulated_write_arrival_after_its_data_copy() {
        let mut q = DriveQueue::new(&profile(), Clock::Real, None).unwrap();
        let arrived = Instant::now();
        std::thread::sleep(std::time::Duration::from_millis(30));
        let at = arrived.duration_since(q.origin()).as_nanos() as f64;
        let s = q.submit_arrived(ReqOp::Write, 0, 2048, arrived);
        assert_eq!(
            s.arrival, at,
            "the arrival is the handler's, not the submit's"
        );
        assert_eq!(s.start, at);
        // A request stamped before the previous one's arrival arrives with it, not earlier.
        let late = q.submit_arrived(ReqOp::Read, 1 << 20, 8, arrived);
        assert_eq!(late.arrival, s.arrival);
        assert_eq!(late.start, s.end);
        assert!(late.queued);
    }
}
