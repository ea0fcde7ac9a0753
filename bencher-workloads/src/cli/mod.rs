//! The `minfs-bench` command: argument parsing and the subcommands. `main.rs` only calls
//! [`run()`].
//!
//! Exit codes: 0 success, 1 failure, 2 usage error or a workload that is refused (does
//! not parse, or expands past `--max-ops`).

pub mod check;
pub mod compare;
pub mod completions;
pub mod hdd_replay;
pub mod report;
pub mod run;

use std::ffi::OsString;
use std::io::{self, Write};
use std::num::NonZeroU64;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use crate::dsl::{self, ParseError, Workload};
use crate::generate::{self, Expansion, GenerateError, GenerateOptions, DEFAULT_MAX_OPS};

pub use completions::{command, exit_statuses};

/// Exit code of a usage error or a refused workload.
pub const EXIT_USAGE: u8 = 2;

/// `minfs-bench`.
#[derive(Debug, Parser)]
#[command(
    name = "minfs-bench",
    version,
    about = "Cannyls benchmarks from cannyls_bencher workload files (docs/DSL.md)",
    long_about = "Cannyls benchmarks from cannyls_bencher workload files (docs/DSL.md).\n\n\
        check expands a workload and says what it would do; run runs it on a fresh Cannyls storage \
        (on a minfs file, on a file through Cannyls' FileNvm, on a bare block device, or in memory) \
        and reports the latency of every kind of operation; report renders a comparison directory \
        of scripts/compare.sh; hdd-replay replays a run's block trace through the HDD model \
        (docs/HDD-MODEL.md). The workload language is described in docs/DSL.md, the shipped \
        workloads in docs/WORKLOADS.md.\n\n\
        The shipped workloads (*.wl) are installed in PREFIX/share/minfs-bench/workloads: \
        /usr/share/minfs-bench/workloads from the Debian package, \
        /usr/local/share/minfs-bench/workloads from scripts/install.sh by default (in the source \
        tree: bencher-workloads/workloads), e.g. \
        minfs-bench check /usr/share/minfs-bench/workloads/seq-256k.wl."
)]
pub struct Cli {
    /// The subcommand.
    #[command(subcommand)]
    pub command: Commands,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Commands {
    /// Parse and expand a workload and summarize the operations; runs nothing.
    ///
    /// Prints the operation counts by kind, the bytes put, embedded and read, the peak of live
    /// bytes and lumps, the final live set, and the commands skipped on an empty live list; --json
    /// prints one JSON object. The workload language is described in docs/DSL.md.
    Check(check::CheckArgs),
    /// Run a workload on a Cannyls storage and report the times of its operations.
    ///
    /// Makes a fresh Cannyls storage on the backend (--backend minfs:TARGET[:FILE], file:PATH,
    /// file-prealloc:PATH, raw:BLOCKDEV or memory), runs the workload's operations in order and
    /// prints the latency statistics of each kind of operation. --json writes the report as JSON;
    /// --op-log writes one line per operation with its CLOCK_MONOTONIC start and end, for
    /// hdd-replay.
    // The workload file is `--workload FILE` here (positional in `check`), listed first.
    #[command(
        mut_arg("file", |a| a
            .long("workload")
            .value_name("FILE")
            .help(WORKLOAD_FILE_HELP)
            .display_order(0)),
        mut_arg("scale", |a| a.display_order(1)),
        mut_arg("seed", |a| a.display_order(2)),
        mut_arg("sync_every", |a| a.display_order(3)),
    )]
    Run(run::RunArgs),
    /// Replay a block trace of a run through the HDD model (docs/HDD-MODEL.md) and report the
    /// modelled operation latencies.
    ///
    /// The block requests a run issued (a tracefs trace captured while it ran on a loop device)
    /// are replayed through hddsim's service-time model of a 7200 rpm 512e drive and charged to
    /// the run's operations (its op-log). The output is run's report with the modelled latencies,
    /// plus the model's figures.
    HddReplay(hdd_replay::HddReplayArgs),
    /// Render a comparison directory into DIR/report.md and SVG plots in DIR/plots/.
    ///
    /// Reads what scripts/compare.sh writes (compare.json, and per workload and target each run's
    /// JSON report, op-log and modelled reports), writes report.md with the targets' latencies
    /// side by side and as ratios to minfs, and the plots, and prints the path of report.md.
    Report(report::ReportArgs),
    /// Compare Cannyls on minfs with Cannyls on ext4, XFS and the bare device, on one device
    /// (by default an emulated 512e hard drive), until every comparison is decided or the time
    /// budget is spent.
    ///
    /// Each target is made afresh before every run; each round runs every workload on minfs and
    /// on the targets whose comparison with it is still undecided (or on every target, --runs N
    /// times). Writes the comparison directory (compare.json, SETUP.md, runs/), renders
    /// report.md as `report` does and prints its summary. What it makes (loop device, mounts,
    /// the emulator, the tracefs instance, queue settings) is undone on exit, error, Ctrl-C and
    /// SIGTERM. Needs root. Exit codes: 0 every run succeeded; 1 a run or step failed; 2 usage
    /// error, an --out that is not empty or a refused device; 130 interrupted.
    Compare(Box<compare::CompareArgs>),
    /// Print a completion script for bash, zsh, fish, elvish or powershell to stdout.
    ///
    /// scripts/install.sh installs the bash, zsh and fish scripts; this prints one for another
    /// shell or place, e.g. `minfs-bench completions zsh > ~/.zfunc/_minfs-bench`.
    Completions(completions::CompletionsArgs),
}

/// Where the shipped workloads are, for the help of the workload file arguments.
pub const WORKLOAD_FILE_HELP: &str = "The workload file; the shipped ones are installed in \
    PREFIX/share/minfs-bench/workloads (/usr/share/… from the Debian package, /usr/local/share/… \
    from scripts/install.sh)";

/// The arguments that say which operations a workload file stands for (shared by the
/// subcommands that read a workload).
#[derive(Debug, Clone, Args)]
pub struct WorkloadArgs {
    /// The workload file.
    #[arg(help = WORKLOAD_FILE_HELP)]
    pub file: PathBuf,
    /// Multiply every count (`Ordered[N]`, `Unordered[N]`, `N.times`) by F, rounded to the
    /// nearest integer but at least 1.
    #[arg(
        long,
        value_name = "F",
        default_value_t = 1.0,
        value_parser = parse_scale,
        help = "Multiply every count (Ordered[N], Unordered[N], N.times) by F, rounded to the \
                nearest integer but at least 1"
    )]
    pub scale: f64,
    /// Seed the generator with S instead of the file's `Seed:`.
    #[arg(long, value_name = "S")]
    pub seed: Option<u64>,
    /// Insert a Sync after every N mutating operations (New, OverWrite, Embed, Delete,
    /// DeleteRange).
    #[arg(long, value_name = "N")]
    pub sync_every: Option<NonZeroU64>,
    /// End with a Sync (a journal sync: the storage's data on the media), timed as the run's
    /// last operation, unless the workload ends with one. On a drive with a write cache the
    /// data of a run's last tens of megabytes is otherwise never paid for.
    #[arg(long)]
    pub final_sync: bool,
    /// Refuse a workload that expands to more than N operations.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_OPS)]
    pub max_ops: u64,
}

fn parse_scale(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(f) if f.is_finite() && f > 0.0 => Ok(f),
        _ => Err(format!("`{s}` is not a number greater than 0")),
    }
}

impl WorkloadArgs {
    /// The generator options these arguments ask for.
    pub fn options(&self) -> GenerateOptions {
        GenerateOptions {
            scale: self.scale,
            seed: self.seed,
            sync_every: self.sync_every,
            final_sync: self.final_sync,
            max_ops: self.max_ops,
        }
    }
}

/// A workload read, parsed and expanded.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The file as given.
    pub file: String,
    /// Its syntax tree.
    pub workload: Workload,
    /// Its operations.
    pub expansion: Expansion,
}

/// Why a workload could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file could not be read.
    #[error("cannot read {file}: {source}")]
    Read {
        /// The file.
        file: String,
        /// Why.
        source: io::Error,
    },
    /// It does not parse (renders as `FILE:LINE:COL: message`, the line and a caret).
    #[error("{0}")]
    Parse(#[from] ParseError),
    /// It cannot be expanded.
    #[error("{file}: {source}")]
    Generate {
        /// The file.
        file: String,
        /// Why.
        source: GenerateError,
    },
}

impl LoadError {
    /// 1 for a read error, 2 for a refused workload.
    pub fn exit_code(&self) -> ExitCode {
        match self {
            LoadError::Read { .. } => ExitCode::FAILURE,
            LoadError::Parse(_) | LoadError::Generate { .. } => ExitCode::from(EXIT_USAGE),
        }
    }

    /// Writes the error for a person: a parse error as is, anything else after
    /// `minfs-bench: error: `.
    pub fn report(&self, err: &mut dyn Write) -> io::Result<()> {
        match self {
            LoadError::Parse(e) => writeln!(err, "{e}"),
            other => writeln!(err, "minfs-bench: error: {other}"),
        }
    }
}

/// Largest workload file read (a guard against `/dev/zero` and the like; real workload
/// files are a few hundred bytes).
pub const MAX_FILE_SIZE: u64 = 16 << 20;

fn read_limited(path: &std::path::Path) -> io::Result<Vec<u8>> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(MAX_FILE_SIZE + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_FILE_SIZE {
        return Err(io::Error::other(format!(
            "larger than {} MiB, not a workload file",
            MAX_FILE_SIZE >> 20
        )));
    }
    Ok(bytes)
}

/// Reads, parses and expands the workload `args` name.
pub fn load(args: &WorkloadArgs) -> Result<Loaded, LoadError> {
    let file = args.file.display().to_string();
    let bytes = read_limited(&args.file).map_err(|source| LoadError::Read {
        file: file.clone(),
        source,
    })?;
    let workload = dsl::parse_bytes(&file, &bytes)?;
    let expansion =
        generate::expand(&workload, &args.options()).map_err(|source| LoadError::Generate {
            file: file.clone(),
            source,
        })?;
    Ok(Loaded {
        file,
        workload,
        expansion,
    })
}

/// `minfs-bench` with the process's arguments, stdout and stderr.
pub fn run() -> anyhow::Result<ExitCode> {
    run_with(
        std::env::args_os(),
        &mut io::stdout().lock(),
        &mut io::stderr().lock(),
    )
}

/// `minfs-bench` with `args` (the first is the program name), writing to `out` and `err`.
pub fn run_with<I, T>(args: I, out: &mut dyn Write, err: &mut dyn Write) -> anyhow::Result<ExitCode>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let mut text = e.render().to_string();
            if !text.ends_with('\n') {
                text.push('\n');
            }
            if e.use_stderr() {
                err.write_all(text.as_bytes())?;
                return Ok(ExitCode::from(EXIT_USAGE));
            }
            out.write_all(text.as_bytes())?;
            return Ok(ExitCode::SUCCESS);
        }
    };
    match cli.command {
        Commands::Check(args) => check::check(&args, out, err),
        Commands::Run(args) => run::run(&args, out, err),
        Commands::HddReplay(args) => hdd_replay::hdd_replay(&args, out, err),
        Commands::Report(args) => report::report(&args, out, err),
        Commands::Compare(args) => compare::compare(&args, out, err),
        Commands::Completions(args) => completions::completions(&args, out),
    }
}
