//! `minfs ls`.

use std::process::ExitCode;

use anyhow::Context;

use super::TargetArg;
use crate::{Filesystem, OpenMode};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Long listing: size, allocated bytes, extents, first extent's offset.
    #[arg(short = 'l')]
    long: bool,
    /// Print a JSON array of files.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    target: TargetArg,
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    let fs = Filesystem::open(&a.target.target, OpenMode::ReadOnly).context("ls failed")?;
    super::note_mirror_slot(&fs, &a.target.target);
    let files = fs.list();
    if a.json {
        println!("{}", serde_json::to_string_pretty(&files)?);
    } else if a.long {
        println!(
            "{:>16} {:>16} {:>7} {:>16}  NAME",
            "SIZE", "ALLOCATED", "EXTENTS", "OFFSET"
        );
        for f in &files {
            let off = f
                .extents
                .first()
                .map_or("-".to_string(), |e| e.offset.to_string());
            println!(
                "{:>16} {:>16} {:>7} {:>16}  {}",
                f.size,
                f.allocated,
                f.extents.len(),
                off,
                f.name
            );
        }
    } else {
        for f in &files {
            println!("{}", f.name);
        }
    }
    Ok(ExitCode::SUCCESS)
}
