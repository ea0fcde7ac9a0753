//! Modelled HDD time (`docs/HDD-MODEL.md`, `minfs-bench hdd-replay`): the block requests a
//! run really issued — captured with tracefs while it ran on a loop device — replayed through
//! a service-time model of a 7200 rpm 512e desktop drive, and charged to the run's
//! operations.
//!
//! - [`profile`]: the drive's parameters, each with its source (`profiles/*.toml`);
//! - [`trace`]: the tracefs text (`block_rq_issue` / `block_rq_complete`, `mono` clock) and
//!   the pairing of issues with completions;
//! - [`model`]: the drive — rotation with the platter's angle tracked over modelled time,
//!   seeks t(x) = t0 + A·x + B·√x, zoned transfer R(u) = R_out·√(1 − u·(1 − k²)), the 512e
//!   read-modify-write, the 64 MB write-back cache with background destage, read look-ahead,
//!   the command overhead;
//! - [`replay`]: the closed-loop replay (a request starts at the later of its issue time moved
//!   by the accumulated modelled-minus-real difference and the previous request's modelled
//!   completion; think time kept as measured) and the charging rule: an operation's modelled
//!   latency = its measured latency + the change of that difference across it.
//!
//! **Mapping.** The trace's sectors are used as the modelled drive's sectors: the device under
//! test (a loop device of a few GiB) is modelled as a region at the start of the 1 TB drive,
//! i.e. its outer, fastest zone. A trace that touches a sector beyond the profile's capacity
//! is refused.
//!
//! ```no_run
//! use bencher_workloads::hdd;
//!
//! let profile = hdd::profile::load("st1000dm003")?;
//! let trace = hdd::trace::parse(&std::fs::read_to_string("run.trace")?, None)?;
//! let ops = hdd::replay::parse_oplog(&std::fs::read_to_string("run.oplog")?)?;
//! let out = hdd::model_run(&hdd::Inputs {
//!     profile: &profile,
//!     trace: &trace,
//!     ops: &ops,
//!     run: None,
//!     trace_label: "run.trace",
//!     oplog_label: "run.oplog",
//! })?;
//! println!("{}", out.report.model.modelled_total_elapsed_ns);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod cache;
pub mod model;
pub mod profile;
pub mod replay;
pub mod trace;

use std::io::{self, Write};

use serde::Serialize;

use crate::run::report::{RunInfo, RunReport};
use crate::run::stats::human_ns;
use crate::run::Outcome;
use model::DriveStats;
use profile::Profile;
use replay::{InputError, OpRecord, RequestCounts};
use trace::Trace;

/// What `hdd-replay` writes: a [`RunReport`] of the modelled latencies (the same JSON shape as
/// `minfs-bench run --json`) plus the `model` object.
#[derive(Debug, Clone, Serialize)]
pub struct HddReport {
    /// The modelled run (its keys are top-level in the JSON).
    #[serde(flatten)]
    pub report: RunReport,
    /// How it was modelled.
    pub model: ModelSummary,
}

/// The `model` object.
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
    /// The sum of their modelled latencies (= `total_elapsed_ns`).
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

/// What [`model_run`] needs.
#[derive(Debug, Clone, Copy)]
pub struct Inputs<'a> {
    /// The drive.
    pub profile: &'a Profile,
    /// The paired trace.
    pub trace: &'a Trace,
    /// The op-log.
    pub ops: &'a [OpRecord],
    /// The real run's report (`--run`): its info fields are copied.
    pub run: Option<&'a RunReport>,
    /// The trace's name, for the report when there is no `run`.
    pub trace_label: &'a str,
    /// The op-log's name, likewise.
    pub oplog_label: &'a str,
}

/// The outcome of [`model_run`].
#[derive(Debug, Clone)]
pub struct ModelOutput {
    /// The report.
    pub report: HddReport,
    /// Per operation: modelled start (trace clock, ns) and modelled latency.
    pub modelled_ops: Vec<(u64, u64)>,
}

/// Replays the trace, charges the operations and builds the report.
///
/// Without `run`, the info fields are: `workload` = the op-log's name, `backend` = the
/// trace's name, `seed` 0, `scale` 1, `sync_every` null, `verify` false and the storage
/// figures (`capacity`, `block_size`, `journal_ratio`, `journal_region_bytes`,
/// `data_region_bytes`) 0. `wall_ns` is the run's wall time (`run`) or the span of the op-log
/// (from the first start to the last end), plus the change of the shift across the op-log.
pub fn model_run(inp: &Inputs<'_>) -> Result<ModelOutput, InputError> {
    let (trace, ops, profile) = (inp.trace, inp.ops, inp.profile);
    if let Some(run) = inp.run {
        if run.ops != ops.len() as u64 {
            return Err(InputError {
                line: 0,
                message: format!(
                    "the run report has {} operations but the op-log {}: not the same run",
                    run.ops,
                    ops.len()
                ),
            });
        }
    }
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

    let measured_wall = match inp.run {
        Some(run) => run.wall_ns,
        None => match (ops.first(), ops.last()) {
            (Some(f), Some(l)) => l.end_ns - f.start_ns,
            _ => 0,
        },
    };
    let wall = (measured_wall as f64 + charged.span_shift_ns)
        .max(0.0)
        .round() as u64;
    let info = match inp.run {
        Some(run) => run.info.clone(),
        None => RunInfo {
            workload: inp.oplog_label.to_string(),
            backend: inp.trace_label.to_string(),
            capacity: 0,
            block_size: 0,
            journal_ratio: 0.0,
            journal_region_bytes: 0,
            data_region_bytes: 0,
            seed: 0,
            scale: 1.0,
            sync_every: None,
            verify: false,
        },
    };
    let outcome = Outcome {
        recorder: charged.recorder.clone(),
        wall_ns: wall,
        ops: ops.len() as u64,
        put_bytes: charged.put_bytes,
        embed_bytes: charged.embed_bytes,
        get_bytes: charged.get_bytes,
        data_usage_peak_bytes: None,
    };
    let report = RunReport::new(info, &outcome);
    let requests = trace.requests.len() as u64;
    let model = ModelSummary {
        profile: profile.stem.clone(),
        profile_name: profile.name.clone(),
        device: format!("{},{}", trace.dev.0, trace.dev.1),
        requests,
        unmatched_requests: trace.unmatched_issues as u64,
        unmatched_completions: trace.unmatched_completions as u64,
        error_completions: trace.errors as u64,
        counts: RequestCounts::of(trace),
        requests_in_ops: charged.requests_in_ops,
        requests_outside_ops: requests - charged.requests_in_ops,
        measured_total_elapsed_ns: charged.measured_total_ns,
        modelled_total_elapsed_ns: report.total_elapsed_ns,
        measured_device_busy_ns: measured_busy.round() as u64,
        modelled_device_busy_ns: modelled_busy.round() as u64,
        measured_trace_span_ns: measured_span,
        modelled_trace_span_ns: modelled_span.round() as u64,
        sequential_limit_ns: replay::sequential_limit_ns(trace, profile).round() as u64,
        unattributed_shift_ns: charged.unattributed_shift_ns.round() as i64,
        clamped_ops: charged.clamped,
        drive: rep.drive.clone(),
    };
    let modelled_ops = charged
        .ops
        .iter()
        .map(|&(start, lat)| (start.max(0) as u64, lat))
        .collect();
    Ok(ModelOutput {
        report: HddReport { report, model },
        modelled_ops,
    })
}

impl HddReport {
    /// The text for people: the run report of the modelled latencies, then the model.
    pub fn write_text(&self, out: &mut dyn Write) -> io::Result<()> {
        self.report.write_text(out)?;
        let m = &self.model;
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
