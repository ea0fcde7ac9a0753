//! `minfs fsck`, with e2fsck's exit codes.

use std::process::ExitCode;

use crate::error::SlotId;
use crate::fsck::{check, repair, Report};

use super::TargetArg;

/// No errors.
pub const EXIT_CLEAN: u8 = 0;
/// Errors were found and corrected.
pub const EXIT_CORRECTED: u8 = 1;
/// Errors were left uncorrected.
pub const EXIT_UNCORRECTED: u8 = 4;
/// Operational error (cannot open, not minfs, I/O error).
pub const EXIT_OPERATIONAL: u8 = 8;
/// Usage error.
pub const EXIT_USAGE: u8 = 16;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Check only; change nothing (the default).
    #[arg(short = 'n', conflicts_with = "yes")]
    no: bool,
    /// Repair what can be repaired (copy the newest valid slot into the other one).
    #[arg(short = 'y')]
    yes: bool,
    #[command(flatten)]
    target: TargetArg,
}

fn print(report: &Report, target: &str) {
    for id in SlotId::BOTH {
        match report.generations[id.index()] {
            Some(g) => println!("{id}: valid, generation {g}"),
            None => println!("{id}: invalid"),
        }
    }
    for p in &report.problems {
        println!("{target}: {p}");
    }
}

fn summary(report: &Report, target: &str) {
    println!(
        "{target}: {}, {}/{} blocks used",
        super::count(report.files as u64, "file"),
        report.block_count - report.free_blocks,
        report.block_count
    );
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    let _ = a.no;
    let path = &a.target.target;
    let target = path.display().to_string();
    println!(
        "minfs fsck {}: checking {target}",
        env!("CARGO_PKG_VERSION")
    );
    if !a.yes {
        let r = check(path).map_err(|e| anyhow::anyhow!("fsck failed: {e}"))?;
        print(&r, &target);
        if r.is_clean() {
            println!("{target}: clean");
            summary(&r, &target);
            return Ok(ExitCode::from(EXIT_CLEAN));
        }
        if r.problems.iter().all(|p| p.repairable()) {
            println!(
                "{target}: {} error(s) found, left uncorrected (run `minfs fsck -y {target}` to repair)",
                r.problems.len()
            );
        } else {
            println!(
                "{target}: {} error(s) found; no valid metadata slot is left to repair from, so `fsck -y` cannot fix them",
                r.problems.len()
            );
        }
        return Ok(ExitCode::from(EXIT_UNCORRECTED));
    }
    let (before, after) = repair(path).map_err(|e| anyhow::anyhow!("fsck failed: {e}"))?;
    print(&before, &target);
    if before.is_clean() {
        println!("{target}: clean");
        summary(&before, &target);
        return Ok(ExitCode::from(EXIT_CLEAN));
    }
    if after.is_clean() {
        println!(
            "{target}: metadata slots repaired from the newest valid one; now generations {} and {}",
            after.generations[0].unwrap_or(0),
            after.generations[1].unwrap_or(0)
        );
        println!("{target}: ***** FILESYSTEM WAS MODIFIED *****");
        summary(&after, &target);
        return Ok(ExitCode::from(EXIT_CORRECTED));
    }
    for p in &after.problems {
        println!("{target}: still wrong: {p}");
    }
    println!("{target}: errors left uncorrected");
    Ok(ExitCode::from(EXIT_UNCORRECTED))
}
