//! The workload language of cannyls_bencher (with this project's `Sync`): syntax tree,
//! parser and parse errors. The language as implemented is described in `docs/DSL.md`.

pub mod ast;
pub mod error;
pub mod parser;

pub use ast::{Command, Section, Weighted, Workload, MAX_EMBED_SIZE, MAX_PUT_SIZE};
pub use error::ParseError;
pub use parser::{parse, parse_bytes, MAX_NESTING};
