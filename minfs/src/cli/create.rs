//! `minfs create` and `minfs grow`.

use std::process::ExitCode;

use anyhow::Context;

use super::{parse_size, TargetArg};
use crate::{FileStat, Filesystem, OpenMode};

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    target: TargetArg,
    /// File name (1 to 64 bytes, no '/').
    name: String,
    /// Size, e.g. 10G; preallocated as one extent when possible.
    #[arg(short, long, value_parser = parse_size, allow_hyphen_values = true)]
    size: u64,
}

#[derive(Debug, clap::Args)]
pub struct GrowArgs {
    #[command(flatten)]
    target: TargetArg,
    name: String,
    /// New size (not smaller than the current one).
    #[arg(short, long, value_parser = parse_size, allow_hyphen_values = true)]
    size: u64,
}

fn describe(s: &FileStat) -> String {
    let first = s
        .extents
        .first()
        .map_or(String::new(), |e| format!(", first at byte {}", e.offset));
    format!(
        "{}: {} bytes in {}{first}",
        s.name,
        s.size,
        super::count(s.extents.len() as u64, "extent")
    )
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    let fs = Filesystem::open(&a.target.target, OpenMode::ReadWrite).context("create failed")?;
    let s = fs.create(&a.name, a.size).context("create failed")?;
    println!("created {}", describe(&s));
    Ok(ExitCode::SUCCESS)
}

pub fn run_grow(a: GrowArgs) -> anyhow::Result<ExitCode> {
    let fs = Filesystem::open(&a.target.target, OpenMode::ReadWrite).context("grow failed")?;
    let s = fs.grow(&a.name, a.size).context("grow failed")?;
    println!("grew {}", describe(&s));
    Ok(ExitCode::SUCCESS)
}
