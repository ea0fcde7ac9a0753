//! `minfs mkfs`.

use std::process::ExitCode;

use crate::format::SLOT_OFFSETS;
use crate::mkfs::mkfs;
use crate::{FormatOptions, TargetKind};
use anyhow::Context;

use super::{human, parse_size, TargetArg};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Overwrite a target that holds another filesystem or signature (never a mounted one).
    #[arg(short, long)]
    force: bool,
    /// Show what would be done; write nothing.
    #[arg(short = 'n', long = "dry-run")]
    dry_run: bool,
    /// Filesystem label (up to 32 bytes).
    #[arg(short = 'L', long, default_value = "")]
    label: String,
    /// Size (e.g. 10G): creates an image of that size; on a block device uses only that much.
    #[arg(short, long, value_parser = parse_size, allow_hyphen_values = true)]
    size: Option<u64>,
    #[command(flatten)]
    target: TargetArg,
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    let opts = FormatOptions {
        label: a.label,
        size: a.size,
        force: a.force,
        ..Default::default()
    };
    let path = &a.target.target;
    let o = mkfs(path, &opts, a.dry_run).context("mkfs failed")?;
    let sb = &o.superblock;
    let t = path.display();
    if a.dry_run {
        println!("{t}: dry run (-n): nothing was written");
    }
    if o.created_image {
        println!(
            "{t}: created an image of {} bytes, preallocated",
            sb.total_bytes
        );
    }
    if let Some(sig) = &o.replaced {
        println!(
            "{t}: overwrote {} (signature at byte {})",
            sig.kind, sig.offset
        );
    }
    let kind = match o.kind {
        TargetKind::Image => "image file",
        TargetKind::BlockDevice => "block device",
    };
    let uuid = uuid::Uuid::from_bytes(sb.uuid).hyphenated().to_string();
    println!(
        "{} minfs filesystem on {t} ({kind})",
        if a.dry_run { "Would make a" } else { "Made a" }
    );
    println!(
        "UUID:                     {}",
        if a.dry_run { "(chosen at mkfs)" } else { &uuid }
    );
    println!("Label:                    {}", sb.label);
    println!("Size:                     {}", human(sb.total_bytes));
    println!(
        "Data blocks:              {} of 4096 bytes from byte {}",
        sb.block_count, sb.data_start
    );
    println!(
        "Sector sizes:             {} logical, {} physical",
        o.logical_sector_size, o.physical_sector_size
    );
    println!(
        "Metadata slots at:        {}, {}",
        SLOT_OFFSETS[0], SLOT_OFFSETS[1]
    );
    Ok(ExitCode::SUCCESS)
}
