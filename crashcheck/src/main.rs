//! `crashcheck`: crash states of a run recorded on the emulated drive, checked per target.
//!
//! ```text
//! crashcheck check --target T --initial IMG --write-log LOG --op-log OPLOG --workdir DIR
//!                  --minfs BIN --minfs-cannyls BIN [--points N] [--subsets N] [--seed S]
//!                  [--no-512e] [--wrong-bound] [--workload NAME] [--json FILE]
//! crashcheck summary DIR
//! crashcheck replay --write-log LOG IMAGE
//! ```
//!
//! Exit codes: 0 done (the counts are in the report, whatever they are); 1 the check could
//! not be made (a missing or damaged file, a tool that does not run); 2 usage error.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use crashcheck::expect::Bound;
use crashcheck::recover::{Target, Tools};

#[derive(Debug, Parser)]
#[command(
    name = "crashcheck",
    version,
    about = "Power-cut crash states of a recorded run, checked per target"
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Build the crash states of a run and check each (prints the counts as JSON).
    Check {
        /// The target the run used.
        #[arg(long, value_enum)]
        target: Target,
        /// The image as it was before the run.
        #[arg(long)]
        initial: PathBuf,
        /// The run's write log (hddsim emulate --write-log).
        #[arg(long)]
        write_log: PathBuf,
        /// The run's op-log (minfs-bench run --op-log).
        #[arg(long)]
        op_log: PathBuf,
        /// A directory on a filesystem with reflinks (XFS, btrfs) for the states.
        #[arg(long)]
        workdir: PathBuf,
        /// The minfs binary.
        #[arg(long, default_value = "minfs")]
        minfs: PathBuf,
        /// The minfs-cannyls binary.
        #[arg(long, default_value = "minfs-cannyls")]
        minfs_cannyls: PathBuf,
        /// Crash points, spread evenly over the flushes (all flushes when at least as many).
        #[arg(long, default_value_t = 40)]
        points: usize,
        /// Random subsets of the in-flight writes per crash point.
        #[arg(long, default_value_t = 2)]
        subsets: usize,
        /// Seed of the subsets and torn writes.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// The media is not 512e: no ruined physical sectors.
        #[arg(long)]
        no_512e: bool,
        /// Deliberately wrong: take each operation as acknowledged by the flush before it
        /// started (shows that the checker reports losses).
        #[arg(long)]
        wrong_bound: bool,
        /// The workload's name for the report (default: the op-log's file stem).
        #[arg(long)]
        workload: Option<String>,
        /// Write the report to FILE as well.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// The Markdown table of the reports (check-*.json) under DIR.
    Summary {
        /// A directory of reports.
        dir: PathBuf,
    },
    /// Apply every write of a write log to IMAGE (which must hold the initial image).
    Replay {
        /// The write log.
        #[arg(long)]
        write_log: PathBuf,
        /// The image.
        image: PathBuf,
    },
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("crashcheck: error: {e}");
            ExitCode::from(1)
        }
    }
}

fn run(cli: Cli) -> Result<(), String> {
    match cli.command {
        Cmd::Check {
            target,
            initial,
            write_log,
            op_log,
            workdir,
            minfs,
            minfs_cannyls,
            points,
            subsets,
            seed,
            no_512e,
            wrong_bound,
            workload,
            json,
        } => {
            let workload = workload.unwrap_or_else(|| {
                op_log
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default()
            });
            let args = crashcheck::CheckArgs {
                target,
                initial,
                write_log,
                op_log,
                workdir,
                points,
                subsets,
                seed,
                bound: if wrong_bound {
                    Bound::BeforeOpStart
                } else {
                    Bound::SyncReturn
                },
                rmw_512e: !no_512e,
                tools: Tools {
                    minfs,
                    minfs_cannyls,
                },
            };
            let report =
                crashcheck::check(&args, &workload, &mut |s| eprintln!("crashcheck: {s}"))?;
            let text = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())? + "\n";
            if let Some(p) = json {
                std::fs::write(&p, &text).map_err(|e| format!("{}: {e}", p.display()))?;
            }
            print!("{text}");
            Ok(())
        }
        Cmd::Summary { dir } => {
            print!("{}", crashcheck::summary(&dir)?);
            Ok(())
        }
        Cmd::Replay { write_log, image } => {
            let (w, f) = hddsim::emulate::writelog::replay_onto(&write_log, &image)
                .map_err(|e| e.to_string())?;
            println!("{}: applied {w} writes ({f} flushes)", image.display());
            Ok(())
        }
    }
}
