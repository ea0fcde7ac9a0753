//! `minfs scrub`: the metadata checks of `fsck -n`, then every allocated extent read to find
//! unreadable sectors ([`crate::scrub`]). Exit codes are bits, in the style of fsck and
//! xfs_scrub: see [`EXIT_CLEAN`] and the constants after it.

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use nix::sys::signal::{SigSet, Signal};

use super::TargetArg;
use crate::scrub::{self, Options, Report};

/// Nothing found: the metadata is clean and every sector read could be read.
pub const EXIT_CLEAN: u8 = 0;
/// The metadata checks of `fsck -n` found problems (`minfs fsck` says more).
pub const EXIT_METADATA: u8 = 1;
/// Unreadable sectors were found (listed with what they belong to).
pub const EXIT_BAD_SECTORS: u8 = 2;
/// The scrub was interrupted (SIGINT, SIGTERM) before it read everything; it printed where to
/// resume (`--from`).
pub const EXIT_INCOMPLETE: u8 = 4;
/// Operational error: cannot open the target, not minfs, a read failed other than with a
/// media error.
pub const EXIT_OPERATIONAL: u8 = 8;
/// Usage error.
pub const EXIT_USAGE: u8 = 16;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Also read the free space and the unused reserved area (unreadable sectors there are
    /// reported as such: nothing is lost, but a later allocation would get them).
    #[arg(long)]
    all: bool,
    /// Start at this device byte offset (what an interrupted scrub printed); sizes such as 4G
    /// are accepted. A multiple of the logical sector size.
    #[arg(long, value_name = "OFFSET", value_parser = super::parse_size, allow_hyphen_values = true)]
    from: Option<u64>,
    /// Read at most this many MB (10^6 bytes) per second on average, to leave the drive to
    /// its workload. Default: as fast as the device reads.
    #[arg(long, value_name = "MB/s", value_parser = parse_rate, allow_hyphen_values = true)]
    rate: Option<f64>,
    /// Bytes per read (a multiple of 4096; default 4M).
    #[arg(long, value_name = "SIZE", value_parser = super::parse_size, default_value = "4M")]
    chunk: u64,
    /// Read only this file's extents (not the metadata slots nor other files).
    #[arg(long, value_name = "NAME")]
    file: Option<String>,
    /// Print one JSON object (bad ranges with file, file offset, device offset and length;
    /// counts; bytes read; duration) instead of text.
    #[arg(long)]
    json: bool,
    /// No progress bar (it is drawn on stderr only when stderr is a terminal).
    #[arg(long)]
    no_progress: bool,
    #[command(flatten)]
    target: TargetArg,
}

fn parse_rate(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(r) if r.is_finite() && r > 0.0 => Ok(r),
        _ => Err(format!("{s:?} is not a positive number of MB/s")),
    }
}

/// The exit status for `report` (the bits above, or-ed).
pub fn exit_code(report: &Report) -> u8 {
    let mut code = EXIT_CLEAN;
    if !report.metadata.is_clean() {
        code |= EXIT_METADATA;
    }
    if !report.bad.is_empty() {
        code |= EXIT_BAD_SECTORS;
    }
    if !report.complete {
        code |= EXIT_INCOMPLETE;
    }
    code
}

/// A flag set by the first SIGINT or SIGTERM (the scrub then stops after its current read and
/// says where to resume); a second one ends the process at once.
fn stop_on_signal() -> Arc<AtomicBool> {
    let stop = Arc::new(AtomicBool::new(false));
    let mut signals = SigSet::empty();
    signals.add(Signal::SIGINT);
    signals.add(Signal::SIGTERM);
    // Blocked here, before the progress bar's thread exists, so that only the waiting thread
    // takes them.
    if signals.thread_block().is_ok() {
        let flag = Arc::clone(&stop);
        std::thread::spawn(move || {
            while signals.wait().is_ok() {
                if flag.swap(true, Ordering::Relaxed) {
                    std::process::exit(i32::from(EXIT_INCOMPLETE | 128));
                }
            }
        });
    }
    stop
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    run_code(a).map(ExitCode::from)
}

/// Runs the scrub; the exit status (an error is operational, 8, for the caller to print).
pub fn run_code(a: Args) -> anyhow::Result<u8> {
    let path = &a.target.target;
    let target = path.display().to_string();
    if a.chunk == 0 || a.chunk % 4096 != 0 || a.chunk > 1 << 30 {
        eprintln!(
            "minfs: scrub: --chunk {}: must be a multiple of 4096 of at most 1 GiB",
            a.chunk
        );
        return Ok(EXIT_USAGE);
    }
    let opts = Options {
        all: a.all,
        from: a.from.unwrap_or(0),
        chunk: a.chunk as usize,
        rate: a.rate.map(|r| r * 1e6),
        file: a.file.clone(),
    };
    let stop = stop_on_signal();
    let bar = if a.no_progress {
        indicatif::ProgressBar::hidden()
    } else {
        let b = indicatif::ProgressBar::with_draw_target(
            None,
            indicatif::ProgressDrawTarget::stderr_with_hz(4),
        );
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "scrub {bytes}/{total_bytes} [{wide_bar}] {bytes_per_sec} ETA {eta} {msg}",
            )
            .expect("a valid template")
            .progress_chars("=> "),
        );
        b
    };
    let mut update = |p: &scrub::Progress| {
        if bar.length() != Some(p.total) {
            bar.set_length(p.total);
        }
        bar.set_position(p.done);
        if p.bad_sectors > 0 {
            bar.set_message(format!("{} unreadable sectors", p.bad_sectors));
        }
    };
    let report = scrub::scrub(path, &opts, &stop, &mut update)
        .map_err(|e| anyhow::anyhow!("scrub failed: {e}"))?;
    bar.finish_and_clear();
    let code = exit_code(&report);
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&json(&report, code, a.rate))?
        );
    } else {
        print_text(&report, &target);
    }
    if !report.complete {
        eprintln!(
            "minfs: scrub interrupted at device byte {}; resume with --from {}",
            report.reached, report.reached
        );
    }
    Ok(code)
}

/// The `--json` object.
fn json(r: &Report, code: u8, rate_limit: Option<f64>) -> serde_json::Value {
    serde_json::json!({
        "target": r.target,
        "exit_code": code,
        "metadata": {
            "clean": r.metadata.is_clean(),
            "problems": r.metadata.problems.iter().map(|p| p.to_string()).collect::<Vec<_>>(),
            "files": r.metadata.files,
        },
        "scanned": r.scanned,
        "all": r.all,
        "complete": r.complete,
        "from": r.from,
        "reached": r.reached,
        "sector_size": r.sector_size,
        "bytes_total": r.bytes_total,
        "bytes_read": r.bytes_done,
        "ranges_read": r.ranges,
        "duration_s": r.duration.as_secs_f64(),
        "rate_mb_per_s": r.rate() / 1e6,
        "rate_limit_mb_per_s": rate_limit,
        "bad_sectors": r.bad_sectors(),
        "bad_bytes": r.bad_bytes(),
        "transient_errors": r.transient_errors,
        "files_hit": r.files_hit(),
        "bad_ranges": r.bad,
    })
}

fn print_text(r: &Report, target: &str) {
    println!("minfs scrub {}: {target}", env!("CARGO_PKG_VERSION"));
    if r.metadata.is_clean() {
        println!(
            "{target}: metadata clean ({})",
            super::count(r.metadata.files as u64, "file")
        );
    }
    for p in &r.metadata.problems {
        println!("{target}: metadata: {p}");
    }
    if !r.scanned {
        println!("{target}: no valid metadata slot: the data was not read");
        return;
    }
    for b in &r.bad {
        println!("{target}: {b}");
    }
    let secs = r.duration.as_secs_f64();
    println!(
        "{target}: read {} in {} ({:.1} s, {:.1} MB/s){}: {} in {}",
        super::human(r.bytes_done),
        super::count(r.ranges, "range"),
        secs,
        r.rate() / 1e6,
        if r.all { ", free space included" } else { "" },
        super::count(r.bad_sectors(), "unreadable sector"),
        super::count(r.bad.len() as u64, "bad range"),
    );
    let files = r.files_hit();
    if !files.is_empty() {
        println!("{target}: files hit: {}", files.join(", "));
    }
    if r.transient_errors > 0 {
        println!(
            "{target}: {} read(s) failed once and then read fine piece by piece (transient)",
            r.transient_errors
        );
    }
    if !r.complete {
        println!(
            "{target}: interrupted at device byte {}; resume with `minfs scrub --from {} {target}`",
            r.reached, r.reached
        );
    }
    let _ = Duration::ZERO;
}
