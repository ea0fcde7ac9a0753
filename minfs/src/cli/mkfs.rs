//! `minfs mkfs`.

use std::process::ExitCode;

use crate::format::SLOT_OFFSETS;
use crate::mkfs::mkfs;
use crate::{FormatOptions, TargetKind};
use anyhow::Context;

use super::{human, parse_size, TargetArg};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Overwrite a target that holds another filesystem, a signature or data minfs does not
    /// recognise (never a mounted one); signatures libblkid still finds after formatting (a
    /// backup GPT, RAID superblocks at the end, ...) are wiped and listed.
    #[arg(short, long)]
    force: bool,
    /// Show what would be done; write nothing.
    #[arg(short = 'n', long = "dry-run")]
    dry_run: bool,
    /// Filesystem label (up to 32 bytes).
    #[arg(short = 'L', long, default_value = "")]
    label: String,
    /// Size (e.g. 10G, 500GB): creates an image of that size; on a block device uses only that
    /// much.
    #[arg(short, long, value_parser = parse_size, allow_hyphen_values = true)]
    size: Option<u64>,
    /// Print nothing but errors.
    #[arg(short, long)]
    quiet: bool,
    #[command(flatten)]
    target: TargetArg,
}

/// `mkfs.minfs`'s arguments, which mkfs(8) passes as `mkfs.minfs [OPTIONS] DEVICE [SIZE]`:
/// `minfs mkfs`'s, and SIZE after the target.
#[cfg(feature = "fuse")]
#[derive(Debug, clap::Args)]
pub struct HelperArgs {
    #[command(flatten)]
    args: Args,
    /// The size, as mkfs(8) passes it: a number of 1 KiB blocks (mkfs(8)'s and mke2fs's
    /// blocks), or a size with a unit as -s takes it (10G, 500GB). The same as -s, which it
    /// may not be given with.
    #[arg(value_name = "SIZE", allow_hyphen_values = true)]
    blocks: Option<String>,
}

/// SIZE of `mkfs.minfs`: a bare number counts 1 KiB blocks.
#[cfg(feature = "fuse")]
fn helper_size(s: &str) -> Result<u64, String> {
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        return s
            .parse::<u64>()
            .ok()
            .and_then(|n| n.checked_mul(1024))
            .ok_or_else(|| format!("invalid SIZE {s:?}: more than 2^64 - 1 bytes"));
    }
    parse_size(s).map_err(|e| format!("SIZE: {e}"))
}

/// Runs `mkfs.minfs`; a bad SIZE is a usage error (the message, `Err`).
#[cfg(feature = "fuse")]
pub fn run_helper(h: HelperArgs) -> Result<anyhow::Result<ExitCode>, String> {
    let mut a = h.args;
    if let Some(blocks) = &h.blocks {
        if a.size.is_some() {
            return Err(format!(
                "the size is given twice: -s and SIZE ({blocks}); give one"
            ));
        }
        a.size = Some(helper_size(blocks)?);
    }
    Ok(run(a))
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
    if a.quiet {
        return Ok(ExitCode::SUCCESS);
    }
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
    for w in &o.wiped {
        println!(
            "{t}: wiped a {} signature at byte {} ({:#x}, {} bytes), as libblkid found it",
            w.kind, w.offset, w.offset, w.len
        );
    }
    if a.force && !a.dry_run && !o.blkid_checked {
        println!(
            "{t}: wipefs (util-linux) is not installed: signatures beyond minfs's first MiB \
             (a backup GPT, RAID superblocks at the end) were not looked for"
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
