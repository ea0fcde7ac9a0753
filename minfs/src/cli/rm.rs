//! `minfs rm`.

use std::process::ExitCode;

use anyhow::Context;

use super::TargetArg;
use crate::{Filesystem, OpenMode};

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    target: TargetArg,
    /// File name.
    name: String,
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    let fs = Filesystem::open(&a.target.target, OpenMode::ReadWrite).context("rm failed")?;
    fs.remove(&a.name).context("rm failed")?;
    Ok(ExitCode::SUCCESS)
}
