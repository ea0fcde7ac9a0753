//! `minfs info`.

use std::process::ExitCode;

use anyhow::Context;

use super::{human, TargetArg};
use crate::{Filesystem, OpenMode};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    target: TargetArg,
}

fn time(t: u64) -> String {
    format!("{t} (Unix seconds)")
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    let fs = Filesystem::open(&a.target.target, OpenMode::ReadOnly).context("info failed")?;
    let i = fs.info();
    if a.json {
        println!("{}", serde_json::to_string_pretty(&i)?);
        return Ok(ExitCode::SUCCESS);
    }
    let rows: Vec<(&str, String)> = vec![
        ("Filesystem magic", "MINFS-SB".into()),
        ("Filesystem UUID", i.uuid.clone()),
        ("Filesystem label", i.label.clone()),
        ("Format version", i.format_version.to_string()),
        ("Generation", i.generation.to_string()),
        ("Active slot", format!("{:?}", i.active_slot)),
        (
            "Superblock offsets",
            format!("{}, {}", i.superblock_offsets[0], i.superblock_offsets[1]),
        ),
        ("Block size", i.block_size.to_string()),
        ("Logical sector size", i.logical_sector_size.to_string()),
        ("Physical sector size", i.physical_sector_size.to_string()),
        ("Total bytes", human(i.total_bytes)),
        ("Data start", i.data_start.to_string()),
        ("Block count", i.block_count.to_string()),
        ("Free blocks", i.free_blocks.to_string()),
        ("Free bytes", human(i.free_bytes)),
        (
            "File count",
            format!("{} (at most {})", i.files.len(), i.max_files),
        ),
        ("Filesystem created", time(i.created)),
        ("Last update", time(i.updated)),
    ];
    for (k, v) in rows {
        println!("{:<26}{v}", format!("{k}:"));
    }
    for f in &i.files {
        let ext: Vec<String> = f
            .extents
            .iter()
            .map(|e| format!("{}+{}", e.offset, e.length))
            .collect();
        println!(
            "{:<26}{} bytes, extents {}",
            format!("File {:?}:", f.name),
            f.size,
            ext.join(" ")
        );
    }
    Ok(ExitCode::SUCCESS)
}
