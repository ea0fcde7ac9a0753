//! The workload side of `minfs-bench`: the cannyls_bencher workload language (with this
//! project's `Sync`), its deterministic expansion into Cannyls operations, and the CLI.
//!
//! ```
//! use bencher_workloads::{dsl, expand, GenerateOptions, Op};
//!
//! let workload = dsl::parse("example.wl", "Seed: 1; Command { 2.times { New(4K); }; Get(0, 0); }")?;
//! let expansion = expand(&workload, &GenerateOptions::default())?;
//! assert_eq!(expansion.ops.len(), 3);
//! assert_eq!(expansion.ops[2], Op::Get { id: 1, size: 4096 });
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! A runner takes [`Expansion::ops`] in order: [`Op::Put`] (`embedded` → an embedded
//! lump), [`Op::Get`], [`Op::Delete`], [`Op::DeleteRange`] (end exclusive) and
//! [`Op::Sync`] (`journal_sync`), with ids as `LumpId::new(id as u128)`. [`run`] is that
//! runner (`minfs-bench run`): backends, timing, statistics, verification.

#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod cli;
pub mod compare;
pub mod dsl;
pub mod generate;
pub mod hdd;
pub mod run;
pub mod summary;

pub use dsl::{parse, ParseError, Workload};
pub use generate::{expand, Expansion, GenerateError, GenerateOptions, Op, OpKind};
pub use summary::Summary;
