//! The closed-loop replay of a trace through a [`Drive`], and charging the modelled time to
//! the operations of an op-log.
//!
//! # Replay
//! Requests are taken in the order they were issued. The model keeps a *shift* S: how far
//! the modelled timeline is ahead of the real one (negative: behind). Request i starts at
//!
//! ```text
//! start_i = max(issue_i + S(issue_i), end_{i−1})
//! ```
//!
//! — its real issue time moved by the shift, but never before the drive finished the
//! previous request (the drive serves one at a time) — and completes at end_i =
//! `Drive::submit(request_i, start_i)`. The shift at real time t is
//!
//! ```text
//! S(t) = max{ end_j : complete_j ≤ t } − max{ complete_j : complete_j ≤ t }
//! ```
//!
//! over the requests j that had really completed by t (0 before the first): when the host
//! is waiting for nothing, its next action happens as long after the last modelled
//! completion as it really happened after the last real one. So host time between a
//! completion and the next issue ("think time": CPU, locks, the filesystem's own work) is
//! kept as measured, and requests that were in flight together on the real device (a large
//! I/O split in two) are served one after the other.
//!
//! All model times are relative to the first request's issue time (the model's clock starts
//! at 0 there).
//!
//! # Charging operations
//! An operation from `start` to `end` (op-log, CLOCK_MONOTONIC) takes, modelled,
//!
//! ```text
//! modelled = (end − start) + S(end) − S(start)
//! ```
//!
//! i.e. its measured latency plus the change of the shift across it: the modelled service
//! time of the requests it waited for replaces their real service time, and everything
//! else it did (CPU, copies, locks) is kept as measured. The gap between two operations
//! keeps its measured length unless a request completed inside it (then that request's
//! change of the shift falls in the gap, charged to no operation; its sum is reported as
//! `unattributed_shift_ns`). A modelled latency below 0 (not possible for well-formed
//! input) is clamped to 0 and counted. Modelled start and end (for `--oplog-out`) are
//! `start + S(start)` and that plus the modelled latency.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fmt;

use serde::Serialize;

use crate::model::{Drive, DriveRequest, DriveStats};
use crate::profile::Profile;
use crate::trace::{ReqOp, Trace};

/// One operation of an op-log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpRecord {
    /// Its line, from 1.
    pub line: usize,
    /// `seq`.
    pub seq: u64,
    /// `kind` (`new`, `overwrite`, `embed`, `get`, `delete`, `delete_range`, `sync`).
    pub kind: String,
    /// `id` as written.
    pub id: String,
    /// `bytes`.
    pub bytes: u64,
    /// `start_ns`.
    pub start_ns: u64,
    /// `end_ns`.
    pub end_ns: u64,
}

/// The kind of an operation of an op-log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum OpKind {
    /// `new` or `overwrite`: a put of `bytes`.
    Put,
    /// `embed`: an embedded put.
    Embed,
    /// `get`.
    Get,
    /// `delete`.
    Delete,
    /// `delete_range`.
    DeleteRange,
    /// `sync`.
    Sync,
}

impl OpKind {
    /// The kind an op-log's `kind` column names.
    pub fn parse(kind: &str) -> Option<OpKind> {
        Some(match kind {
            "new" | "overwrite" => OpKind::Put,
            "embed" => OpKind::Embed,
            "get" => OpKind::Get,
            "delete" => OpKind::Delete,
            "delete_range" => OpKind::DeleteRange,
            "sync" => OpKind::Sync,
            _ => return None,
        })
    }
}

impl OpRecord {
    /// The kind of the operation (checked when the op-log was parsed).
    pub fn op_kind(&self) -> OpKind {
        OpKind::parse(&self.kind).unwrap_or(OpKind::Sync)
    }
}

/// An op-log or replay input that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError {
    /// Its line, from 1 (0: not about a line).
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}", self.message)
        } else {
            write!(f, "line {}: {}", self.line, self.message)
        }
    }
}

impl std::error::Error for InputError {}

/// Parses an op-log (`run::oplog` writes it): `#` lines skipped, then `seq kind id bytes
/// start_ns end_ns`, tab- (or space-) separated.
pub fn parse_oplog(text: &str) -> Result<Vec<OpRecord>, InputError> {
    let mut ops = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let t = raw.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let bad = |what: String| InputError {
            line,
            message: format!("{what}: `{t}`"),
        };
        let f: Vec<&str> = t.split_whitespace().collect();
        if f.len() != 6 {
            return Err(bad(format!(
                "{} fields, expected 6 (seq kind id bytes start_ns end_ns)",
                f.len()
            )));
        }
        let num = |k: usize, name: &str| {
            f[k].parse::<u64>()
                .map_err(|_| bad(format!("{name} `{}` is not a number", f[k])))
        };
        let op = OpRecord {
            line,
            seq: num(0, "seq")?,
            kind: f[1].to_string(),
            id: f[2].to_string(),
            bytes: num(3, "bytes")?,
            start_ns: num(4, "start_ns")?,
            end_ns: num(5, "end_ns")?,
        };
        if OpKind::parse(&op.kind).is_none() || u32::try_from(op.bytes).is_err() {
            return Err(bad(format!(
                "kind `{}` is not one of new, overwrite, embed, get, delete, delete_range, sync \
                 (or its bytes do not fit 32 bits)",
                op.kind
            )));
        }
        if op.end_ns < op.start_ns {
            return Err(bad("end_ns is before start_ns".into()));
        }
        if let Some(prev) = ops.last() {
            let prev: &OpRecord = prev;
            if op.start_ns < prev.end_ns {
                return Err(bad(format!(
                    "starts before the previous operation (line {}) ended",
                    prev.line
                )));
            }
        }
        ops.push(op);
    }
    Ok(ops)
}

/// One request as replayed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Replayed {
    /// Real issue (ns, trace clock).
    pub issue_ns: u64,
    /// Real completion (ns, trace clock).
    pub complete_ns: u64,
    /// Modelled start (ns, model clock: 0 = the first issue).
    pub start: f64,
    /// Modelled completion (model clock).
    pub end: f64,
}

/// The shift S(t) as a step function of real time.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Shift {
    /// (real completion time, S from then on), by time.
    steps: Vec<(u64, f64)>,
}

impl Shift {
    /// S(t) in nanoseconds.
    pub fn at(&self, t: u64) -> f64 {
        let i = self.steps.partition_point(|&(c, _)| c <= t);
        if i == 0 {
            0.0
        } else {
            self.steps[i - 1].1
        }
    }

    /// The last value.
    pub fn last(&self) -> f64 {
        self.steps.last().map_or(0.0, |s| s.1)
    }
}

/// A replayed trace.
#[derive(Debug, Clone)]
pub struct Replay {
    /// The requests, in issue order.
    pub requests: Vec<Replayed>,
    /// S(t).
    pub shift: Shift,
    /// The first issue (ns, trace clock): the model clock's 0.
    pub origin_ns: u64,
    /// What the drive did.
    pub drive: DriveStats,
}

/// Counts of the requests in a trace.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RequestCounts {
    /// Reads.
    pub reads: u64,
    /// Writes.
    pub writes: u64,
    /// Flushes (`F` requests; preflushes and FUA writes are counted with the writes).
    pub flushes: u64,
    /// Writes with a preflush.
    pub preflush_writes: u64,
    /// FUA writes.
    pub fua_writes: u64,
    /// Discards (modelled as the command overhead).
    pub discards: u64,
    /// Other requests (modelled as the command overhead).
    pub other_requests: u64,
    /// Requests the device refused as unsupported (completed with EOPNOTSUPP, −95: a loop
    /// device's write-zeroes where its file cannot take them), given no drive time: the
    /// kernel then writes the zeroes as ordinary writes, which the trace holds.
    pub refused: u64,
    /// Bytes read.
    pub read_bytes: u64,
    /// Bytes written.
    pub write_bytes: u64,
    /// Writes that re-open a 4 KiB sector: the previous write ended on a 4 KiB boundary and
    /// this one starts inside the 4 KiB sector just below that end (1–7 sectors back), so
    /// it covers part of a sector the host had written whole (ext4's and XFS's zero-padded
    /// block tails). Counted from the trace alone, without the model.
    pub reopen_writes: u64,
    /// Those of them with a read issued between the previous write and them.
    pub reopen_writes_after_read: u64,
    /// Writes that cover a 4096-byte physical sector only in part: they do not start, or do
    /// not end, on a 4096-byte boundary (a 512e drive must read the rest of that sector back,
    /// or merge it in its cache, before it can write it). Every such write counts — a put
    /// re-opening a zero-padded block as well as Cannyls' journal writes at block size 512 —
    /// once, however many of its ends are partial. Counted from the trace alone.
    pub partial_sector_writes: u64,
    /// Those issued while a put (`new`, `overwrite` or `embed`) of the op-log ran (start ≤
    /// issue ≤ end): the put's data (and the journal records Cannyls writes within a put,
    /// when its journal buffer wraps or its sync countdown runs out).
    pub partial_sector_writes_in_puts: u64,
    /// Those issued while a sync of the op-log ran: Cannyls writes its journal at a sync (its
    /// journal buffer holds the records until then).
    pub partial_sector_writes_in_syncs: u64,
}

/// 512-byte sectors in a physical sector of a 512e drive (4096 bytes).
pub const PHYSICAL_SECTOR_SECTORS: u64 = 8;

/// Whether a write of `sectors` 512-byte sectors at `sector` covers a 4096-byte physical
/// sector only in part (it does not start, or does not end, on a 4096-byte boundary). An
/// empty request covers nothing.
pub fn is_partial_sector_write(sector: u64, sectors: u64) -> bool {
    sectors > 0
        && (sector % PHYSICAL_SECTOR_SECTORS != 0
            || (sector + sectors) % PHYSICAL_SECTOR_SECTORS != 0)
}

impl RequestCounts {
    /// The counts of `trace`; `ops` (its op-log, in time order; may be empty) only tells which
    /// operation each partial-sector write was issued in.
    pub fn of(trace: &Trace, ops: &[OpRecord]) -> RequestCounts {
        let mut c = RequestCounts::default();
        // The previous data write's end (512-byte sectors), and whether a read came since.
        let mut last_end: Option<u64> = None;
        let mut read_since = false;
        // The first operation that had not ended by the current request's issue (requests
        // are in issue order, operations in time order and not overlapping).
        let mut k = 0;
        for r in &trace.requests {
            while k < ops.len() && ops[k].end_ns < r.issue_ns {
                k += 1;
            }
            if refused(r) {
                c.refused += 1;
                continue;
            }
            match r.rwbs.op {
                ReqOp::Read => {
                    c.reads += 1;
                    c.read_bytes += r.data_bytes();
                    read_since |= r.sectors > 0;
                }
                ReqOp::Write => {
                    c.writes += 1;
                    c.write_bytes += r.data_bytes();
                    c.preflush_writes += u64::from(r.rwbs.preflush);
                    c.fua_writes += u64::from(r.rwbs.fua);
                    if is_partial_sector_write(r.sector, r.sectors) {
                        c.partial_sector_writes += 1;
                        let during = ops
                            .get(k)
                            .filter(|op| op.start_ns <= r.issue_ns)
                            .map(OpRecord::op_kind);
                        match during {
                            Some(OpKind::Put | OpKind::Embed) => {
                                c.partial_sector_writes_in_puts += 1;
                            }
                            Some(OpKind::Sync) => c.partial_sector_writes_in_syncs += 1,
                            _ => {}
                        }
                    }
                    if r.sectors > 0 {
                        if let Some(e) = last_end {
                            if e % 8 == 0 && r.sector < e && r.sector + 8 > e {
                                c.reopen_writes += 1;
                                c.reopen_writes_after_read += u64::from(read_since);
                            }
                        }
                        last_end = Some(r.sector + r.sectors);
                        read_since = false;
                    }
                }
                ReqOp::Flush => c.flushes += 1,
                ReqOp::Discard => c.discards += 1,
                ReqOp::Other => c.other_requests += 1,
            }
        }
        c
    }
}

/// EOPNOTSUPP: what a completion carries when the device did not support the request.
const EOPNOTSUPP: i64 = -95;

/// Whether the device refused `r` as unsupported: it never reached the drive (a real drive
/// without the command is not even sent it), so it takes no drive time.
fn refused(r: &crate::trace::Request) -> bool {
    r.error == EOPNOTSUPP
}

/// Checks that every request lies within the drive.
pub fn check_capacity(trace: &Trace, profile: &Profile) -> Result<(), InputError> {
    let cap = profile.capacity_bytes / 512;
    for r in &trace.requests {
        let data = matches!(r.rwbs.op, ReqOp::Read | ReqOp::Write | ReqOp::Discard);
        if data && r.sectors > 0 && r.sector.saturating_add(r.sectors) > cap {
            return Err(InputError {
                line: r.line,
                message: format!(
                    "request at sector {} + {} ends past the {} sectors ({} bytes) of the \
                     profile `{}`: the trace's LBAs are used as the drive's LBAs",
                    r.sector, r.sectors, cap, profile.capacity_bytes, profile.stem
                ),
            });
        }
    }
    Ok(())
}

/// Replays `trace` on a fresh drive of `profile` (see the module documentation).
pub fn replay(trace: &Trace, profile: &Profile) -> Result<Replay, InputError> {
    check_capacity(trace, profile)?;
    let origin = trace.requests.first().map_or(0, |r| r.issue_ns);
    let rel = |t: u64| (t - origin) as f64;
    let mut drive = Drive::new(profile);
    let mut out: Vec<Replayed> = Vec::with_capacity(trace.requests.len());
    // Replayed requests not yet really completed, by real completion.
    let mut pending: BinaryHeap<Reverse<(u64, usize)>> = BinaryHeap::new();
    let (mut max_c, mut max_e) = (None::<u64>, f64::NEG_INFINITY);
    let mut prev_end = f64::NEG_INFINITY;
    for (i, r) in trace.requests.iter().enumerate() {
        while let Some(&Reverse((c, j))) = pending.peek() {
            if c > r.issue_ns {
                break;
            }
            pending.pop();
            max_c = Some(max_c.map_or(c, |m: u64| m.max(c)));
            max_e = max_e.max(out[j].end);
        }
        let s = match max_c {
            Some(c) => max_e - rel(c),
            None => 0.0,
        };
        let sent = rel(r.issue_ns) + s;
        if refused(r) {
            // Answered at once, outside the drive's queue.
            let at = sent.max(0.0);
            out.push(Replayed {
                issue_ns: r.issue_ns,
                complete_ns: r.complete_ns,
                start: at,
                end: at,
            });
            pending.push(Reverse((r.complete_ns, i)));
            continue;
        }
        let start = sent.max(prev_end).max(0.0);
        let req = DriveRequest {
            op: r.rwbs.op,
            sector: r.sector,
            sectors: r.sectors,
            preflush: r.rwbs.preflush,
            fua: r.rwbs.fua,
            queued: sent < prev_end,
        };
        let end = drive.submit(&req, start);
        prev_end = end;
        out.push(Replayed {
            issue_ns: r.issue_ns,
            complete_ns: r.complete_ns,
            start,
            end,
        });
        pending.push(Reverse((r.complete_ns, i)));
    }
    // S(t) afterwards, over every request.
    let mut order: Vec<usize> = (0..out.len()).collect();
    order.sort_by_key(|&i| (out[i].complete_ns, i));
    let mut steps: Vec<(u64, f64)> = Vec::with_capacity(out.len());
    let (mut mc, mut me) = (0u64, f64::NEG_INFINITY);
    for i in order {
        mc = mc.max(out[i].complete_ns);
        me = me.max(out[i].end);
        let s = me - rel(mc);
        match steps.last_mut() {
            Some(last) if last.0 == out[i].complete_ns => last.1 = s,
            _ => steps.push((out[i].complete_ns, s)),
        }
    }
    Ok(Replay {
        requests: out,
        shift: Shift { steps },
        origin_ns: origin,
        drive: drive.stats().clone(),
    })
}

/// The operations with their modelled latencies.
#[derive(Debug, Clone)]
pub struct Charged {
    /// Per operation: (modelled start on the trace clock, modelled latency), both ns.
    pub ops: Vec<(i128, u64)>,
    /// Sum of the measured latencies.
    pub measured_total_ns: u64,
    /// Operations whose modelled latency was clamped to 0.
    pub clamped: u64,
    /// Requests issued within an operation (start ≤ issue ≤ end).
    pub requests_in_ops: u64,
    /// S(last op end) − S(first op start) − Σ per-op changes: modelled time added between
    /// operations.
    pub unattributed_shift_ns: f64,
    /// S(last op end) − S(first op start).
    pub span_shift_ns: f64,
    /// Payload bytes of puts, embedded puts and gets.
    pub put_bytes: u64,
    /// Embedded puts' bytes.
    pub embed_bytes: u64,
    /// Gets' bytes.
    pub get_bytes: u64,
}

/// Charges the replay to the operations (see the module documentation).
pub fn charge(replay: &Replay, ops: &[OpRecord]) -> Charged {
    let mut out = Vec::with_capacity(ops.len());
    let mut measured = 0u64;
    let mut clamped = 0;
    let mut sum_delta = 0.0;
    let (mut put, mut embed, mut get) = (0, 0, 0);
    for op in ops {
        let s0 = replay.shift.at(op.start_ns);
        let s1 = replay.shift.at(op.end_ns);
        let lat = (op.end_ns - op.start_ns) as f64 + s1 - s0;
        sum_delta += s1 - s0;
        let lat = if lat < 0.0 {
            clamped += 1;
            0
        } else {
            lat.round() as u64
        };
        measured += op.end_ns - op.start_ns;
        match op.op_kind() {
            OpKind::Put => put += op.bytes,
            OpKind::Embed => embed += op.bytes,
            OpKind::Get => get += op.bytes,
            _ => {}
        }
        out.push((op.start_ns as i128 + s0.round() as i128, lat));
    }
    // Requests issued inside operations (both lists are in time order).
    let mut in_ops = 0;
    let mut k = 0;
    for r in &replay.requests {
        while k < ops.len() && ops[k].end_ns < r.issue_ns {
            k += 1;
        }
        if k < ops.len() && ops[k].start_ns <= r.issue_ns {
            in_ops += 1;
        }
    }
    let span = match (ops.first(), ops.last()) {
        (Some(f), Some(l)) => replay.shift.at(l.end_ns) - replay.shift.at(f.start_ns),
        _ => 0.0,
    };
    Charged {
        ops: out,
        measured_total_ns: measured,
        clamped,
        requests_in_ops: in_ops,
        unattributed_shift_ns: span - sum_delta,
        span_shift_ns: span,
        put_bytes: put,
        embed_bytes: embed,
        get_bytes: get,
    }
}

/// The union of intervals' lengths.
pub fn busy_ns(mut intervals: Vec<(f64, f64)>) -> f64 {
    intervals.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
    let mut total = 0.0;
    let mut cur: Option<(f64, f64)> = None;
    for (s, e) in intervals {
        match cur {
            Some((cs, ce)) if s <= ce => cur = Some((cs, ce.max(e))),
            Some((cs, ce)) => {
                total += ce - cs;
                cur = Some((s, e));
            }
            None => cur = Some((s, e)),
        }
    }
    if let Some((cs, ce)) = cur {
        total += ce - cs;
    }
    total
}

/// The time to move all the bytes the trace reads and writes as one sequential stream
/// starting at its lowest sector: no seek, no rotational wait, no 512e penalty (the physical
/// limit of the drive for this much data at this place).
pub fn sequential_limit_ns(trace: &Trace, profile: &Profile) -> f64 {
    let drive = Drive::new(profile);
    let data = trace
        .requests
        .iter()
        .filter(|r| matches!(r.rwbs.op, ReqOp::Read | ReqOp::Write) && r.sectors > 0);
    let lo = data.clone().map(|r| r.sector).min();
    let sectors: u64 = data.map(|r| r.sectors).sum();
    let Some(lo) = lo else { return 0.0 };
    let cap = drive.capacity_sectors();
    let end = lo.saturating_add(sectors);
    let mut t = drive.stream_ns(lo, end.min(cap));
    if end > cap {
        // Past the end of the drive (cannot happen for a trace that fits): at the inner rate.
        t += (end - cap) as f64 * 512.0 / drive.rate_at_sector(cap) * 1e9;
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oplog_lines() {
        let text = "# minfs-bench op-log\n# seq\tkind\tid\tbytes\tstart_ns\tend_ns\n\
                    0\tnew\t1\t262144\t100\t200\n1\tsync\t-\t0\t300\t400\n\
                    2\tdelete_range\t1..3\t0\t500\t500\n";
        let ops = parse_oplog(text).unwrap();
        assert_eq!(ops.len(), 3);
        assert_eq!((ops[0].op_kind(), ops[0].bytes), (OpKind::Put, 262_144));
        assert_eq!(ops[1].op_kind(), OpKind::Sync);
        assert_eq!((ops[2].line, ops[2].id.as_str()), (5, "1..3"));
        for (bad, want) in [
            ("0\tnew\t1\t10\t5\n", "line 1: 5 fields"),
            ("0\tfly\t1\t10\t5\t6\n", "line 1: kind `fly`"),
            ("0\tnew\t1\tx\t5\t6\n", "bytes `x` is not a number"),
            ("0\tnew\t1\t10\t6\t5\n", "end_ns is before start_ns"),
            (
                "0\tnew\t1\t10\t5\t9\n1\tnew\t2\t10\t8\t9\n",
                "line 2: starts before the previous",
            ),
            ("0\tnew\t1\t99999999999\t5\t6\n", "do not fit 32 bits"),
        ] {
            let e = parse_oplog(bad).unwrap_err().to_string();
            assert!(e.contains(want), "{bad:?}: {e}");
        }
    }

    /// A trace of `(op, sector, sectors)` requests, one after another.
    fn trace_of(reqs: &[(&str, u64, u64)]) -> Trace {
        let mut text = String::new();
        for (i, &(op, sector, n)) in reqs.iter().enumerate() {
            let t = 1000.0 + i as f64 * 0.001;
            text += &format!(
                "b-1 [000] ..... {t:.6}: block_rq_issue: 7,0 {op} {} () {sector} + {n} be,0,4 [b]\n\
                 b-1 [000] ..... {:.6}: block_rq_complete: 7,0 {op} () {sector} + {n} be,0,4 [0]\n",
                n * 512,
                t + 0.0005
            );
        }
        crate::trace::parse(&text, None).unwrap()
    }

    #[test]
    fn reopening_writes_are_counted_from_the_trace() {
        let c = RequestCounts::of(
            &trace_of(&[
                // ext4's puts: 520 sectors (a 4 KiB-aligned end), the next starting 7 back.
                ("W", 0, 520),
                ("W", 513, 527),
                // A read between: counted as after a read.
                ("R", 100_000, 2048),
                ("W", 1033, 7),
                // Exact appends (ends not 4 KiB-aligned, or starting at the end): none.
                ("W", 1040, 513),
                ("W", 1553, 513),
                ("W", 2066, 6),
                ("W", 2072, 8),
                // Starting a whole 4 KiB sector back, or before it: none.
                ("W", 2072, 8),
                ("W", 2060, 20),
                // A write elsewhere, then one re-opening the sector below its end.
                ("W", 50_000, 16),
                ("W", 50_015, 1),
            ]),
            &[],
        );
        assert_eq!(c.writes, 11);
        assert_eq!((c.reopen_writes, c.reopen_writes_after_read), (3, 1));
    }

    /// An op-log record of `kind` from `start_ns` to `end_ns`.
    fn op(kind: &str, start_ns: u64, end_ns: u64) -> OpRecord {
        OpRecord {
            line: 1,
            seq: 0,
            kind: kind.to_string(),
            id: "1".to_string(),
            bytes: 4096,
            start_ns,
            end_ns,
        }
    }

    /// Every write that covers a 4096-byte physical sector in part counts once (partial at its
    /// start, at its end, or both, as a 512-byte write is), aligned writes and reads do not;
    /// each is put to the operation it was issued in.
    #[test]
    fn partial_sector_writes_are_counted_from_the_trace() {
        let trace = trace_of(&[
            // In a put: aligned (8 sectors at 8), partial at the start, partial at the end.
            ("W", 8, 16),
            ("W", 9, 15),
            ("W", 16, 12),
            // In a sync: a 512-byte write (partial at both ends: one write), one of 4096
            // bytes not on a boundary, an aligned one, a read of part of a sector.
            ("W", 100, 1),
            ("W", 13, 8),
            ("W", 104, 8),
            ("R", 3, 1),
            // Outside any operation: a 512-byte write.
            ("W", 0, 1),
        ]);
        // trace_of issues request i at 1000 s + i ms.
        let at = |i: u64| 1_000_000_000_000 + i * 1_000_000;
        let ops = [
            op("new", at(0) - 1000, at(2) + 1000),
            op("sync", at(3) - 1000, at(6) + 1000),
        ];
        let c = RequestCounts::of(&trace, &ops);
        assert_eq!(c.writes, 7);
        assert_eq!(
            (
                c.partial_sector_writes,
                c.partial_sector_writes_in_puts,
                c.partial_sector_writes_in_syncs
            ),
            (5, 2, 2)
        );
        // Without the op-log: the same total, nothing put to an operation.
        let c = RequestCounts::of(&trace, &[]);
        assert_eq!(
            (
                c.partial_sector_writes,
                c.partial_sector_writes_in_puts,
                c.partial_sector_writes_in_syncs
            ),
            (5, 0, 0)
        );
        assert!(!is_partial_sector_write(8, 0));
    }

    /// Regression: on an emulated drive (a loop device over `hddsim emulate`'s file) ext4's
    /// lazy init issues write-zeroes the file refuses (EOPNOTSUPP), then writes the zeroes;
    /// the replay charged each refused request a command's time the drive never spent.
    #[test]
    fn refused_write_zeroes_take_no_drive_time() {
        let profile = Profile::load(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("profiles/st1000dm003.toml"),
        )
        .unwrap();
        let line = |t: &str, ev: &str, rest: &str| {
            format!("  kworker/0:1H-44 [000] ..... {t}: block_rq_{ev}: 7,1 {rest}\n")
        };
        let write = line("1.000000", "issue", "WS 4096 () 0 + 8 be,0,4 [kw]")
            + &line("1.001000", "complete", "WS () 0 + 8 be,0,4 [0]");
        let zeroes = line("1.002000", "issue", "NS 2097152 () 9392 + 4096 be,0,4 [kw]")
            + &line("1.002100", "complete", "NS () 9392 + 4096 be,0,4 [-95]");
        let alone = replay(&crate::trace::parse(&write, None).unwrap(), &profile).unwrap();
        let with = replay(
            &crate::trace::parse(&(write + &zeroes), None).unwrap(),
            &profile,
        )
        .unwrap();
        let refused = with.requests[1];
        assert_eq!(refused.start, refused.end);
        assert_eq!(with.drive, alone.drive);
        let counts = RequestCounts::of(&crate::trace::parse(&zeroes, None).unwrap(), &[]);
        assert_eq!((counts.refused, counts.other_requests), (1, 0));
    }

    #[test]
    fn shift_steps() {
        let s = Shift {
            steps: vec![(10, 5.0), (20, -2.0)],
        };
        assert_eq!(
            (s.at(9), s.at(10), s.at(19), s.at(25)),
            (0.0, 5.0, 5.0, -2.0)
        );
        assert_eq!(busy_ns(vec![(0.0, 10.0), (5.0, 12.0), (20.0, 21.0)]), 13.0);
    }
}
