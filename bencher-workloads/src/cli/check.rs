//! `minfs-bench check [--scale F] [--seed S] [--sync-every N] [--block-size B] [--json] FILE`:
//! parse and expand a workload, run nothing, and say what it would do — including the
//! capacity `run` would give Cannyls by default (`scripts/compare.sh` sizes its device by it).

use std::io::Write;
use std::process::ExitCode;

use clap::Args;
use serde::Serialize;

use super::{load, WorkloadArgs};
use crate::summary::Summary;

/// Arguments of `check`.
#[derive(Debug, Clone, Args)]
pub struct CheckArgs {
    /// Which workload, and how to expand it.
    #[command(flatten)]
    pub workload: WorkloadArgs,
    /// Print one JSON object instead of the summary for people.
    #[arg(long)]
    pub json: bool,
    /// The storage block size to plan the capacity for (as `run --block-size`). Without it the
    /// capacity is shown at 512 (the default of file:, raw: and memory runs) and at 4096 (of
    /// minfs: runs).
    #[arg(long, value_name = "BYTES")]
    pub block_size: Option<u32>,
}

/// The block sizes `check` plans for without `--block-size`: Cannyls' 512 (the default of
/// `run`'s file:, file-prealloc:, raw: and memory backends) and 4096 (of its minfs: backend).
const DEFAULT_BLOCK_SIZES: [u32; 2] = [512, cannyls_adapter::DEFAULT_BLOCK_SIZE];

/// The capacity planned at one block size.
#[derive(Debug, Clone, Serialize)]
pub struct Capacity {
    /// The storage block size.
    pub block_size: u32,
    /// The capacity `run` gives Cannyls at it without `--capacity`, in bytes.
    pub capacity: u64,
}

/// What `check --json` prints.
#[derive(Debug, Clone, Serialize)]
pub struct CheckReport {
    /// The workload file as given.
    pub file: String,
    /// The seed used.
    pub seed: u64,
    /// The scale used.
    pub scale: f64,
    /// `--sync-every`, if given.
    pub sync_every: Option<u64>,
    /// Counts and bytes.
    #[serde(flatten)]
    pub summary: Summary,
    /// Commands skipped because the live list was empty.
    pub skipped: u64,
    /// The block size `capacity` is planned for (`--block-size`, or 512).
    pub block_size: u32,
    /// The capacity `run` gives Cannyls without `--capacity`, in bytes.
    pub capacity: u64,
    /// The capacity at each block size planned for: `--block-size`, or 512 and 4096.
    pub capacities: Vec<Capacity>,
}

/// Runs `check`.
pub fn check(
    args: &CheckArgs,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<ExitCode> {
    let loaded = match load(&args.workload) {
        Ok(loaded) => loaded,
        Err(e) => {
            e.report(err)?;
            return Ok(e.exit_code());
        }
    };
    let block_sizes = match args.block_size {
        Some(b) if b == 0 || b % 512 != 0 => {
            writeln!(
                err,
                "minfs-bench: error: --block-size {b} is not a positive multiple of 512"
            )?;
            return Ok(ExitCode::from(super::EXIT_USAGE));
        }
        Some(b) => vec![b],
        None => DEFAULT_BLOCK_SIZES.to_vec(),
    };
    let capacities: Vec<Capacity> = block_sizes
        .iter()
        .map(|&block_size| Capacity {
            block_size,
            capacity: crate::run::capacity::plan(&loaded.expansion.ops, block_size).capacity,
        })
        .collect();
    let report = CheckReport {
        file: loaded.file,
        seed: loaded.expansion.seed,
        scale: args.workload.scale,
        sync_every: args.workload.sync_every.map(|n| n.get()),
        summary: Summary::of(&loaded.expansion.ops),
        skipped: loaded.expansion.skipped,
        block_size: capacities[0].block_size,
        capacity: capacities[0].capacity,
        capacities,
    };
    if args.json {
        serde_json::to_writer(&mut *out, &report)?;
        writeln!(out)?;
    } else {
        write_human(&report, out)?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// `26843545600 (25.0 GiB)`.
fn bytes(n: u64) -> String {
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut value = n as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{n} ({value:.1} {})", UNITS[unit])
}

fn write_human(r: &CheckReport, out: &mut dyn Write) -> std::io::Result<()> {
    let s = &r.summary;
    let o = &s.operations;
    writeln!(out, "workload        {}", r.file)?;
    writeln!(out, "seed            {}", r.seed)?;
    writeln!(out, "scale           {}", r.scale)?;
    if let Some(n) = r.sync_every {
        writeln!(out, "sync every      {n} mutating operations")?;
    }
    writeln!(out, "operations      {}", s.total_operations)?;
    writeln!(
        out,
        "  put           {} (new {}, overwrite {})",
        o.put, s.new_puts, s.overwrites
    )?;
    writeln!(out, "  embed         {}", o.embed)?;
    writeln!(out, "  get           {}", o.get)?;
    writeln!(out, "  delete        {}", o.delete)?;
    writeln!(out, "  delete_range  {}", o.delete_range)?;
    writeln!(out, "  sync          {}", o.sync)?;
    writeln!(out, "put bytes       {}", bytes(s.put_bytes))?;
    writeln!(out, "embed bytes     {}", bytes(s.embed_bytes))?;
    writeln!(out, "get bytes       {}", bytes(s.get_bytes))?;
    writeln!(
        out,
        "peak live       {} in up to {} lumps",
        bytes(s.peak_live_bytes),
        s.peak_live_lumps
    )?;
    writeln!(
        out,
        "final live      {} lumps, {}",
        s.final_live_lumps,
        bytes(s.final_live_bytes)
    )?;
    for (i, c) in r.capacities.iter().enumerate() {
        let label = if i == 0 { "capacity" } else { "" };
        let backends = match (r.capacities.len(), c.block_size) {
            (1, _) => None,
            (_, 4096) => Some("minfs:"),
            _ => Some("file:, file-prealloc:, raw: and memory"),
        };
        match backends {
            None => writeln!(
                out,
                "{label:<16}{} (run's default at block size {})",
                bytes(c.capacity),
                c.block_size
            )?,
            Some(backends) => writeln!(
                out,
                "{label:<16}{} at block size {}: run's default for {backends}",
                bytes(c.capacity),
                c.block_size
            )?,
        }
    }
    if r.skipped > 0 {
        writeln!(
            out,
            "skipped         {} commands on an empty live list (emitted as nothing)",
            r.skipped
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::bytes;

    #[test]
    fn human_bytes() {
        assert_eq!(bytes(0), "0 B");
        assert_eq!(bytes(1023), "1023 B");
        assert_eq!(bytes(1024), "1024 (1.0 KiB)");
        assert_eq!(bytes(26_843_545_600), "26843545600 (25.0 GiB)");
        assert_eq!(bytes(u64::MAX), "18446744073709551615 (16.0 EiB)");
    }
}
