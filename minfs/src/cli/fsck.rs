//! `minfs fsck` (and `fsck.minfs`, which fsck(8) runs), with e2fsck's options and exit codes.

use std::fs::File;
use std::io::Write;
use std::process::ExitCode;

use crate::error::SlotId;
use crate::fsck::{check, preen, repair, Preened, Problem, Report};

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
    /// Check only; change nothing (the default). The target is opened read-only.
    #[arg(short = 'n', conflicts_with_all = ["yes", "preen"])]
    no: bool,
    /// Repair what can be repaired (copy the newest valid slot into the other one).
    #[arg(short = 'y', conflicts_with = "preen")]
    yes: bool,
    /// Preen (what the boot-time check, fsck -a, passes): repair without a question only what
    /// is safe unattended — one slot torn by an interrupted commit or unreadable, or older than
    /// the other, while the other holds the last commit; a wrong free-block count. Anything
    /// else (slots of two filesystems, two states under one generation, a slot from a newer
    /// minfs, no valid slot) is reported, nothing is written, and the exit status is 4: run
    /// fsck -y by hand. A clean target is only read.
    #[arg(short = 'p', visible_short_alias = 'a')]
    preen: bool,
    /// Check even if the filesystem seems clean: accepted for fsck(8)'s sake; minfs checks both
    /// slots and every extent every time.
    #[arg(short = 'f')]
    force: bool,
    /// Report progress on file descriptor FD, e2fsck's way: a line "PASS CURRENT MAX TARGET"
    /// when the check starts ("1 0 1 TARGET") and ends ("1 1 1 TARGET"), and when a repair is
    /// done ("2 1 1 TARGET"); 0 prints those steps on stdout instead; a negative FD reports
    /// nothing.
    #[arg(short = 'C', value_name = "FD", allow_negative_numbers = true)]
    progress: Option<i32>,
    #[command(flatten)]
    target: TargetArg,
}

/// Where -C sends progress.
enum Progress {
    None,
    Stdout,
    Fd(File),
}

impl Progress {
    /// The descriptor `fd` of -C, opened through /proc/self/fd (no unsafe code); an error
    /// names it when it is not open for writing.
    fn open(fd: Option<i32>) -> Result<Progress, String> {
        match fd {
            None => Ok(Progress::None),
            Some(fd) if fd < 0 => Ok(Progress::None),
            Some(0) => Ok(Progress::Stdout),
            Some(fd) => std::fs::OpenOptions::new()
                .append(true)
                .open(format!("/proc/self/fd/{fd}"))
                .map(Progress::Fd)
                .map_err(|e| format!("-C {fd}: file descriptor {fd} cannot be written: {e}")),
        }
    }

    fn report(&mut self, pass: u32, current: u32, max: u32, target: &str) {
        match self {
            Progress::None => {}
            Progress::Stdout => {
                let step = match (pass, current == max) {
                    (1, false) => "check started",
                    (1, true) => "check done",
                    _ => "repair done",
                };
                println!("{target}: {step}");
            }
            // A reader that went away must not fail the check.
            Progress::Fd(f) => {
                let _ = writeln!(f, "{pass} {current} {max} {target}");
            }
        }
    }
}

/// The errors a report lists: every problem but [`Problem::NoValidSlot`], which is the verdict
/// on the slots' own errors (the summary line says it), not another error to count.
fn listed(report: &Report) -> Vec<&Problem> {
    report
        .problems
        .iter()
        .filter(|p| !matches!(p, Problem::NoValidSlot))
        .collect()
}

fn print(report: &Report, target: &str, preening: bool) {
    for id in SlotId::BOTH {
        match report.generations[id.index()] {
            Some(g) => println!("{id}: valid, generation {g}"),
            None => println!("{id}: invalid"),
        }
    }
    for p in listed(report) {
        if preening && !p.preen_safe() {
            println!("{target}: {p} (not repaired in preen mode)");
        } else {
            println!("{target}: {p}");
        }
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

/// The repaired state, or what is still wrong.
fn after_repair(after: &Report, target: &str) -> u8 {
    if after.is_clean() {
        println!(
            "{target}: metadata slots repaired from the newest valid one; now generations {} and {}",
            after.generations[0].unwrap_or(0),
            after.generations[1].unwrap_or(0)
        );
        println!("{target}: ***** FILESYSTEM WAS MODIFIED *****");
        summary(after, target);
        return EXIT_CORRECTED;
    }
    for p in &after.problems {
        println!("{target}: still wrong: {p}");
    }
    println!("{target}: errors left uncorrected");
    EXIT_UNCORRECTED
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    run_code(a).map(ExitCode::from)
}

/// Runs fsck; the exit status (an error is an operational error, 8, for the caller to print).
pub fn run_code(a: Args) -> anyhow::Result<u8> {
    let _ = (a.no, a.force);
    let path = &a.target.target;
    let target = path.display().to_string();
    let mut progress = match Progress::open(a.progress) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("fsck: {e}");
            return Ok(EXIT_USAGE);
        }
    };
    println!(
        "minfs fsck {}: checking {target}{}",
        env!("CARGO_PKG_VERSION"),
        if a.preen { " (preen)" } else { "" }
    );
    let failed = |e: crate::Error| anyhow::anyhow!("fsck failed: {e}");
    progress.report(1, 0, 1, &target);
    if a.preen {
        let outcome = preen(path).map_err(failed)?;
        progress.report(1, 1, 1, &target);
        return Ok(match outcome {
            Preened::Clean(r) => {
                print(&r, &target, true);
                println!("{target}: clean");
                summary(&r, &target);
                EXIT_CLEAN
            }
            Preened::Repaired { before, after } => {
                progress.report(2, 1, 1, &target);
                print(&before, &target, true);
                after_repair(&after, &target)
            }
            Preened::Refused(r) => {
                print(&r, &target, true);
                println!(
                    "{target}: UNEXPECTED INCONSISTENCY: {} error(s) found, not all of them safe to \
                     repair unattended; nothing was written. Look at it, then run \
                     `minfs fsck -y {target}` (or fsck.minfs -y) by hand.",
                    listed(&r).len()
                );
                EXIT_UNCORRECTED
            }
        });
    }
    if !a.yes {
        let r = check(path).map_err(failed)?;
        progress.report(1, 1, 1, &target);
        print(&r, &target, false);
        if r.is_clean() {
            println!("{target}: clean");
            summary(&r, &target);
            return Ok(EXIT_CLEAN);
        }
        if r.problems.iter().all(|p| p.repairable()) {
            println!(
                "{target}: {} error(s) found, left uncorrected (run `minfs fsck -y {target}` to repair)",
                listed(&r).len()
            );
        } else {
            println!(
                "{target}: {} error(s) found; no valid metadata slot is left to repair from, so `fsck -y` cannot fix them",
                listed(&r).len()
            );
        }
        return Ok(EXIT_UNCORRECTED);
    }
    let (before, after) = repair(path).map_err(failed)?;
    progress.report(1, 1, 1, &target);
    print(&before, &target, false);
    if before.is_clean() {
        println!("{target}: clean");
        summary(&before, &target);
        return Ok(EXIT_CLEAN);
    }
    progress.report(2, 1, 1, &target);
    Ok(after_repair(&after, &target))
}
