//! The whole modelling job: replay a trace, charge the op-log's operations, and gather the
//! figures of the run ([`ModelSummary`], the `model` object of `minfs-bench hdd-replay`'s
//! JSON).

use std::io::{self, Write};

use serde::Serialize;

use crate::human_ns;
use crate::model::DriveStats;
use crate::profile::Profile;
use crate::replay::{self, Charged, InputError, OpRecord, Replay, RequestCounts};
use crate::trace::Trace;

/// The figures of a modelled run.
#[derive(Debug, Clone, Serialize)]
pub struct ModelSummary {
    /// The profile's file stem (`st1000dm003`).
    pub profile: String,
    /// Its `name`.
    pub profile_name: String,
    /// The traced device (`MAJOR,MINOR`).
    pub device: String,
    /// Requests replayed (issued and completed in the trace).
    pub requests: u64,
    /// Requests issued but not completed in the trace (left out).
    pub unmatched_requests: u64,
    /// Completions without an issue in the trace (ignored; mostly the 0-sector completions of
    /// empty preflush requests).
    pub unmatched_completions: u64,
    /// Completions with a non-zero error code (replayed like the others).
    pub error_completions: u64,
    /// Reads, writes, flushes, … and bytes.
    #[serde(flatten)]
    pub counts: RequestCounts,
    /// Requests issued while an operation of the op-log was running.
    pub requests_in_ops: u64,
    /// The others (making the storage before the first operation, background requests).
    pub requests_outside_ops: u64,
    /// The sum of the operations' measured latencies.
    pub measured_total_elapsed_ns: u64,
    /// The sum of their modelled latencies.
    pub modelled_total_elapsed_ns: u64,
    /// Time the real device had at least one request in flight.
    pub measured_device_busy_ns: u64,
    /// The modelled drive's time serving requests, from each start to its completion, as the
    /// host sees it (a write completes once in the cache; `media_busy_ns` is the media's).
    pub modelled_device_busy_ns: u64,
    /// From the first issue to the last completion, real.
    pub measured_trace_span_ns: u64,
    /// The same, modelled.
    pub modelled_trace_span_ns: u64,
    /// Moving all the bytes read and written as one sequential stream from the lowest sector
    /// the trace touches: the drive's physical limit for this much data.
    pub sequential_limit_ns: u64,
    /// Modelled time added (or, negative, saved) between operations rather than within them.
    pub unattributed_shift_ns: i64,
    /// Operations whose modelled latency came out negative and was clamped to 0.
    pub clamped_ops: u64,
    /// What the drive did.
    #[serde(flatten)]
    pub drive: DriveStats,
}

/// The outcome of [`model_run`].
#[derive(Debug, Clone)]
pub struct Modelled {
    /// The figures.
    pub summary: ModelSummary,
    /// The replay (per request: real and modelled times).
    pub replay: Replay,
    /// The operations charged: per operation its modelled start (trace clock) and latency.
    pub charged: Charged,
}

impl Modelled {
    /// Per operation: modelled start (trace clock, ns, clamped at 0) and modelled latency.
    pub fn modelled_ops(&self) -> Vec<(u64, u64)> {
        self.charged
            .ops
            .iter()
            .map(|&(start, lat)| (start.max(0) as u64, lat))
            .collect()
    }
}

/// Replays `trace` on a fresh drive of `profile` and charges `ops` (see [`replay`]).
///
/// Refused: a trace that touches a sector past the profile's capacity, and an op-log and a
/// trace that do not overlap in time.
pub fn model_run(
    profile: &Profile,
    trace: &Trace,
    ops: &[OpRecord],
) -> Result<Modelled, InputError> {
    if let (Some(first), Some(last), Some(r0)) = (ops.first(), ops.last(), trace.requests.first()) {
        let t_end = trace
            .requests
            .iter()
            .map(|r| r.complete_ns)
            .max()
            .unwrap_or(0);
        if last.end_ns < r0.issue_ns || first.start_ns > t_end {
            return Err(InputError {
                line: 0,
                message: format!(
                    "the op-log ({:.6}–{:.6} s) and the trace ({:.6}–{:.6} s) do not overlap \
                     in time: not captured together, or the trace_clock was not `mono`",
                    first.start_ns as f64 / 1e9,
                    last.end_ns as f64 / 1e9,
                    r0.issue_ns as f64 / 1e9,
                    t_end as f64 / 1e9
                ),
            });
        }
    }
    let rep = replay::replay(trace, profile)?;
    let charged = replay::charge(&rep, ops);

    let measured_busy = replay::busy_ns(
        trace
            .requests
            .iter()
            .map(|r| (r.issue_ns as f64, r.complete_ns as f64))
            .collect(),
    );
    let modelled_busy = replay::busy_ns(rep.requests.iter().map(|r| (r.start, r.end)).collect());
    let measured_span = match (
        trace.requests.first(),
        trace.requests.iter().map(|r| r.complete_ns).max(),
    ) {
        (Some(f), Some(c)) => c - f.issue_ns,
        _ => 0,
    };
    let modelled_span = rep.requests.iter().map(|r| r.end).fold(0.0f64, f64::max);
    let requests = trace.requests.len() as u64;
    let summary = ModelSummary {
        profile: profile.stem.clone(),
        profile_name: profile.name.clone(),
        device: format!("{},{}", trace.dev.0, trace.dev.1),
        requests,
        unmatched_requests: trace.unmatched_issues as u64,
        unmatched_completions: trace.unmatched_completions as u64,
        error_completions: trace.errors as u64,
        counts: RequestCounts::of(trace, ops),
        requests_in_ops: charged.requests_in_ops,
        requests_outside_ops: requests - charged.requests_in_ops,
        measured_total_elapsed_ns: charged.measured_total_ns,
        modelled_total_elapsed_ns: charged.ops.iter().map(|&(_, lat)| lat).sum(),
        measured_device_busy_ns: measured_busy.round() as u64,
        modelled_device_busy_ns: modelled_busy.round() as u64,
        measured_trace_span_ns: measured_span,
        modelled_trace_span_ns: modelled_span.round() as u64,
        sequential_limit_ns: replay::sequential_limit_ns(trace, profile).round() as u64,
        unattributed_shift_ns: charged.unattributed_shift_ns.round() as i64,
        clamped_ops: charged.clamped,
        drive: rep.drive.clone(),
    };
    Ok(Modelled {
        summary,
        replay: rep,
        charged,
    })
}

impl ModelSummary {
    /// The model's lines of the text report (`model …`, `requests …`, `total elapsed …`,
    /// `device busy …`, `drive: …`).
    pub fn write_text(&self, out: &mut dyn Write) -> io::Result<()> {
        let m = self;
        let ratio = |a: u64, b: u64| {
            if b == 0 {
                String::from("-")
            } else {
                format!("{:.2}x", a as f64 / b as f64)
            }
        };
        writeln!(out, "model     {} ({})", m.profile, m.profile_name)?;
        writeln!(
            out,
            "requests  {} replayed from device {} ({} reads, {} writes, {} flushes, {} FUA, {} \
             discards, {} other; {} in operations), {} issued but not completed, {} \
             completions without an issue",
            m.requests,
            m.device,
            m.counts.reads,
            m.counts.writes,
            m.counts.flushes,
            m.counts.fua_writes,
            m.counts.discards,
            m.counts.other_requests,
            m.requests_in_ops,
            m.unmatched_requests,
            m.unmatched_completions
        )?;
        writeln!(
            out,
            "total elapsed by commands: measured {}, modelled {} ({})",
            human_ns(m.measured_total_elapsed_ns),
            human_ns(m.modelled_total_elapsed_ns),
            ratio(m.modelled_total_elapsed_ns, m.measured_total_elapsed_ns)
        )?;
        writeln!(
            out,
            "device busy: measured {}, modelled {} (media {}); sequential limit {} ({} read + {} \
             written bytes as one stream)",
            human_ns(m.measured_device_busy_ns),
            human_ns(m.modelled_device_busy_ns),
            human_ns(m.drive.media_busy_ns.round() as u64),
            human_ns(m.sequential_limit_ns),
            m.counts.read_bytes,
            m.counts.write_bytes
        )?;
        writeln!(
            out,
            "drive: {} media reads, {} cache read hits, {} destage runs, {} 512e \
             read-modify-writes ({}), {} cache-full waits ({}), flush waits {}, {} requests \
             rounded out to whole sectors",
            m.drive.media_reads,
            m.drive.cache_read_hits,
            m.drive.destage_runs,
            m.drive.rmw_penalties,
            human_ns(m.drive.rmw_ns.round() as u64),
            m.drive.cache_full_waits,
            human_ns(m.drive.cache_full_wait_ns.round() as u64),
            human_ns(m.drive.flush_wait_ns.round() as u64),
            m.drive.misaligned_requests
        )?;
        let d = &m.drive;
        writeln!(
            out,
            "write hits: {} writes re-open a 4 KiB sector in the trace ({} after a read), {} \
             cover a 4 KiB sector in part ({} in puts, {} in syncs); the drive re-opened {} clean and {} dirty physical sectors, cleared {} segments ({} \
             sectors), {} write-first waits ({}), {} segment waits ({}); read-modify-writes by \
             cause: {} flush, {} pressure, {} write-first; {} of re-opened sectors",
            m.counts.reopen_writes,
            m.counts.reopen_writes_after_read,
            m.counts.partial_sector_writes,
            m.counts.partial_sector_writes_in_puts,
            m.counts.partial_sector_writes_in_syncs,
            d.reopened_clean,
            d.reopened_dirty,
            d.segments_cleared,
            d.cleared_sectors,
            d.write_first_waits,
            human_ns(d.write_first_wait_ns.round() as u64),
            d.segment_full_waits,
            human_ns(d.segment_full_wait_ns.round() as u64),
            d.rmw_for_flush,
            d.rmw_for_pressure,
            d.rmw_for_write_first,
            d.rmw_of_reopened_clean
        )
    }
}

/// Writes a modelled op-log: the op-log's lines with the modelled start and end.
pub fn write_modelled_oplog(
    out: &mut dyn Write,
    ops: &[OpRecord],
    modelled: &[(u64, u64)],
) -> io::Result<()> {
    out.write_all(
        b"# minfs-bench op-log, modelled by minfs-bench hdd-replay: start_ns and end_ns are the \
          modelled times on the trace's CLOCK_MONOTONIC timeline\n# seq\tkind\tid\tbytes\tstart_ns\tend_ns\n",
    )?;
    for (op, &(start, lat)) in ops.iter().zip(modelled) {
        writeln!(
            out,
            "{}\t{}\t{}\t{}\t{}\t{}",
            op.seq,
            op.kind,
            op.id,
            op.bytes,
            start,
            start + lat
        )?;
    }
    Ok(())
}
