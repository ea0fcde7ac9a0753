//! `hddsim`: a service-time model of a 512e desktop hard disk, driven by block traces
//! (`docs/HDD-MODEL.md`).
//!
//! The block requests a run really issued — captured with tracefs while it ran on a loop
//! device — are replayed through the model of one drive, and the modelled time is charged to
//! the run's operations (an op-log). The model can also be driven one request at a time
//! ([`model::Drive::submit`]: a request sent at time t → its completion time), which is what
//! an emulator serving requests with the drive's timing needs.
//!
//! - [`profile`]: the drive's parameters, each with its source (`profiles/*.toml`);
//! - [`trace`]: the tracefs text (`block_rq_issue` / `block_rq_complete`, `mono` clock) and
//!   the pairing of issues with completions;
//! - [`model`]: the drive — rotation with the platter's angle tracked over modelled time,
//!   seeks, zoned transfer, the write-back cache with background destage and the 512e rules,
//!   read look-ahead, queued reads, the command overhead;
//! - [`replay`]: the closed-loop replay of a trace and the charging of operations;
//! - [`summary`]: [`model_run`], the whole job: replay, charge, and the figures of the run;
//! - [`demerit`]: DiskSim's demerit figure between two response-time distributions;
//! - [`validate`]: synthetic traces against the drive's published figures;
//! - [`emulate`]: the drive in real time behind a FUSE file (`hddsim emulate`).
//!
//! ```no_run
//! let profile = hddsim::profile::load("st1000dm003")?;
//! let trace = hddsim::trace::parse(&std::fs::read_to_string("run.trace")?, None)?;
//! let ops = hddsim::replay::parse_oplog(&std::fs::read_to_string("run.oplog")?)?;
//! let out = hddsim::model_run(&profile, &trace, &ops)?;
//! println!("modelled {} ns", out.summary.modelled_total_elapsed_ns);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![deny(unsafe_code)]
#![warn(missing_docs)]

mod cache;
pub mod cli;
pub mod demerit;
pub mod emulate;
pub mod model;
pub mod profile;
pub mod replay;
pub mod summary;
pub mod trace;
pub mod validate;

pub use model::{Drive, DriveRequest, DriveStats};
pub use profile::{Profile, ProfileError};
pub use replay::{InputError, OpKind, OpRecord};
pub use summary::{model_run, ModelSummary, Modelled};
pub use trace::{ReqOp, Trace, TraceError};

/// A duration for people (`1.5ms`, `2.003s`).
pub fn human_ns(ns: u64) -> String {
    format!("{:?}", std::time::Duration::from_nanos(ns))
}

/// The examples of this crate's README, compiled (and run where they can) as doc-tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
