//! Modelled HDD time for `minfs-bench hdd-replay`: the [`hddsim`] crate (`docs/HDD-MODEL.md`)
//! replays a run's block trace and charges its op-log; this module turns the charged
//! operations into a [`RunReport`] — the same JSON shape as `minfs-bench run --json` — plus
//! the `model` object ([`hddsim::ModelSummary`]).
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

use std::io::{self, Write};

pub use hddsim::summary::write_modelled_oplog;
pub use hddsim::{model, profile, replay, trace, ModelSummary};
use serde::Serialize;

use crate::run::report::{RunInfo, RunReport};
use crate::run::stats::{Recorder, StatKind};
use crate::run::Outcome;
use hddsim::{InputError, OpKind, OpRecord, Profile, Trace};

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

/// The statistics kind (`Put(size)`, …) of an op-log's operation.
pub fn stat_kind(op: &OpRecord) -> StatKind {
    // The op-log parser refused byte counts over 32 bits.
    let size = u32::try_from(op.bytes).unwrap_or(u32::MAX);
    match op.op_kind() {
        OpKind::Put => StatKind::Put(size),
        OpKind::Embed => StatKind::Embed(size),
        OpKind::Get => StatKind::Get(size),
        OpKind::Delete => StatKind::Delete,
        OpKind::DeleteRange => StatKind::DeleteRange,
        _ => StatKind::Sync,
    }
}

/// Replays the trace ([`hddsim::model_run`]), charges the operations and builds the report.
///
/// Without `run`, the info fields are: `workload` = the op-log's name, `backend` = the
/// trace's name, `seed` 0, `scale` 1, `sync_every` null, `verify` false and the storage
/// figures (`capacity`, `block_size`, `journal_ratio`, `journal_region_bytes`,
/// `data_region_bytes`) 0. `wall_ns` is the run's wall time (`run`) or the span of the op-log
/// (from the first start to the last end), plus the change of the shift across the op-log.
pub fn model_run(inp: &Inputs<'_>) -> Result<ModelOutput, InputError> {
    let ops = inp.ops;
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
    let modelled = hddsim::model_run(inp.profile, inp.trace, ops)?;
    let charged = &modelled.charged;
    let mut recorder = Recorder::default();
    for (op, &(_, lat)) in ops.iter().zip(&charged.ops) {
        recorder.record(stat_kind(op), lat, op.bytes);
    }
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
            content: Default::default(),
        },
    };
    let outcome = Outcome {
        recorder,
        wall_ns: wall,
        ops: ops.len() as u64,
        put_bytes: charged.put_bytes,
        embed_bytes: charged.embed_bytes,
        get_bytes: charged.get_bytes,
        // A modelled run has no Cannyls storage to ask.
        data_usage_peak_bytes: None,
    };
    let report = RunReport::new(info, &outcome);
    let modelled_ops = modelled.modelled_ops();
    Ok(ModelOutput {
        report: HddReport {
            report,
            model: modelled.summary,
        },
        modelled_ops,
    })
}

impl HddReport {
    /// The text for people: the run report of the modelled latencies, then the model.
    pub fn write_text(&self, out: &mut dyn Write) -> io::Result<()> {
        self.report.write_text(out)?;
        self.model.write_text(out)
    }
}
