//! Shared by the documentation tests.

pub mod markdown;
