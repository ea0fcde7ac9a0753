//! Running an expanded workload on a Cannyls storage (`minfs-bench run`), as a library.
//!
//! ```
//! use bencher_workloads::run::{self, backend, capacity, ExecOptions, Hooks};
//! use bencher_workloads::{dsl, expand, GenerateOptions};
//!
//! let workload = dsl::parse("w.wl", "Command { 10.times { New(4K); }; Get; Delete; Sync; }")?;
//! let ops = expand(&workload, &GenerateOptions::default())?.ops;
//! let plan = capacity::plan(&ops, 512);
//! let setup = backend::Setup {
//!     capacity: None,
//!     planned: plan.capacity,
//!     journal_bytes: plan.journal_bytes,
//!     journal_ratio: None,
//!     block_size: 512,
//!     force: false,
//!     journal_copy: true,
//! };
//! let mut opened = backend::open(&backend::BackendSpec::Memory, &setup)?;
//! let outcome = opened.storage.execute(&ops, ExecOptions { verify: true, ..Default::default() }, &mut Hooks::default())?;
//! assert_eq!(outcome.ops, 13);
//! assert_eq!(outcome.recorder.overall().count(), 13);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! - [`backend`]: the `--backend` specs and making a fresh storage on one;
//! - [`capacity`]: the default capacity and journal share for a list of operations;
//! - [`content`]: what each lump holds (a function of its id and version), for `--verify`;
//! - [`execute`]: the timed loop, on any `Storage<N>`;
//! - [`stats`], [`report`]: percentiles per kind, the text and JSON reports;
//! - [`oplog`]: the CLOCK_MONOTONIC clock and the per-operation log.

pub mod backend;
pub mod capacity;
pub mod content;
mod exec;
pub mod oplog;
pub mod report;
pub mod stats;

pub use exec::{brief, execute, ExecOptions, Hooks, OpText, Outcome, RunError};

use indicatif::ProgressBar;

/// A progress bar on stderr for `len` operations, or `None` when stderr is not a terminal.
pub fn progress_bar(len: u64) -> Option<ProgressBar> {
    use std::io::IsTerminal;
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = ProgressBar::new(len);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{elapsed_precise} [{wide_bar}] {pos}/{len} ops, eta {eta}",
        )
        .expect("a valid template")
        .progress_chars("=> "),
    );
    Some(bar)
}
