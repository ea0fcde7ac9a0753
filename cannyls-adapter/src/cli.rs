//! `minfs-cannyls fsck [-n|-y] TARGET [FILE]`: checks, and with `-y` repairs, the journal of a
//! Cannyls storage held in a file of a minfs filesystem (see [`crate::recovery`]).
//!
//! Exit codes, as e2fsck's: 0 clean, 1 errors corrected, 4 errors left uncorrected, 8
//! operational error (cannot open the target or the file, no Cannyls storage in it, an I/O
//! error), 16 usage error.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use minfs::{Filesystem, OpenMode};

use crate::recovery::{self, Inspection};
use crate::{Error, MinfsNvm};

/// No errors.
pub const EXIT_CLEAN: u8 = 0;
/// Errors were found and corrected.
pub const EXIT_CORRECTED: u8 = 1;
/// Errors were left uncorrected.
pub const EXIT_UNCORRECTED: u8 = 4;
/// Operational error.
pub const EXIT_OPERATIONAL: u8 = 8;
/// Usage error.
pub const EXIT_USAGE: u8 = 16;

/// The file `minfs-bench`'s `minfs:TARGET` backend uses when none is named.
pub const DEFAULT_FILE: &str = "cannyls.lusf";

#[derive(Debug, Parser)]
#[command(
    name = "minfs-cannyls",
    version,
    about = "Cannyls storages on minfs",
    long_about = "Cannyls storages on minfs: checks and repairs of the Cannyls storage in a minfs \
                  file, the one cannyls-adapter's MinfsNvm gives Cannyls as its memory.\n\n\
                  Cannyls 0.10 refuses to open a storage whose journal ends in a record a crash \
                  tore. fsck walks the journal as Cannyls will and, with -y, cuts such a tail the \
                  way MinfsNvm does when it opens the storage.",
    after_help = "Exit codes (as e2fsck): 0 clean, 1 corrected, 4 uncorrected, 8 operational \
                  error, 16 usage error."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The clap definition of `minfs-cannyls` (for man pages and completions: `docgen`).
pub fn command() -> clap::Command {
    <Cli as clap::CommandFactory>::command()
}

/// The exit statuses of `minfs-cannyls` (its only subcommand, `fsck`, has e2fsck's).
pub fn exit_statuses(_subcommand: Option<&str>) -> Vec<(u8, &'static str)> {
    vec![
        (EXIT_CLEAN, "clean"),
        (EXIT_CORRECTED, "errors corrected (a torn journal tail cut)"),
        (EXIT_UNCORRECTED, "errors left uncorrected"),
        (EXIT_OPERATIONAL, "operational error"),
        (EXIT_USAGE, "usage error"),
    ]
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Check a storage's journal; with -y, cut a torn tail (what `MinfsNvm::open` also does).
    ///
    /// Walks the journal of the Cannyls storage in FILE from its head as Cannyls does when it
    /// opens the storage. It is clean when it ends in an EndOfRecords (exit 0). A record a crash
    /// tore is reported and left with -n (exit 4), and cut with -y: an EndOfRecords is written
    /// where the first unreadable record starts (exit 1). A journal that cannot be read from its
    /// head is reported and left (exit 4); a missing target or file, or a file with no storage, is
    /// an operational error (exit 8).
    Fsck(FsckArgs),
}

#[derive(Debug, clap::Args)]
struct FsckArgs {
    /// Check only; change nothing (the default).
    #[arg(short = 'n', conflicts_with = "yes")]
    no: bool,
    /// Repair: cut a torn journal tail (an EndOfRecords where the first unreadable record starts).
    #[arg(short = 'y')]
    yes: bool,
    /// The minfs target: an image file or a block device.
    target: PathBuf,
    /// The minfs file holding the storage.
    #[arg(default_value = DEFAULT_FILE)]
    file: String,
}

/// Runs `minfs-cannyls` with the process arguments.
pub fn main() -> ExitCode {
    main_with(std::env::args_os())
}

/// Runs `minfs-cannyls` with `args` (the first is the program name).
pub fn main_with<I: IntoIterator<Item = OsString>>(args: I) -> ExitCode {
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.exit_code() == 0 { 0 } else { EXIT_USAGE });
        }
    };
    let Command::Fsck(a) = cli.command;
    match fsck(&a) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!(
                "minfs-cannyls: {}: file {:?}: {e}",
                a.target.display(),
                a.file
            );
            ExitCode::from(EXIT_OPERATIONAL)
        }
    }
}

fn fsck(a: &FsckArgs) -> Result<u8, String> {
    let _ = a.no;
    let name = format!("{}:{}", a.target.display(), a.file);
    let mode = if a.yes {
        OpenMode::ReadWrite
    } else {
        OpenMode::ReadOnly
    };
    let fs = Filesystem::open(&a.target, mode).map_err(|e| e.to_string())?;
    let file = fs.open_file(&a.file).map_err(|e| e.to_string())?;
    let sector = u64::from(file.sector_size().max(1));
    let capacity = file.size() / sector * sector;
    let found = recovery::inspect(&file, 0, capacity).map_err(|e| e.to_string())?;
    match found {
        Inspection::NoStorage(why) => Err(why),
        Inspection::Clean {
            head,
            end,
            records,
            layout,
        } => {
            println!(
                "{name}: Cannyls journal clean: {records} records from the head at ring position \
                 {head} to the EndOfRecords at {end} (block size {})",
                layout.block_size
            );
            Ok(EXIT_CLEAN)
        }
        Inspection::TornTail(cut) if !a.yes => {
            println!(
                "{name}: Cannyls journal torn: after {} records from the head at ring position \
                 {}, found {} at ring position {}; left uncorrected (Cannyls refuses to open it; \
                 `minfs-cannyls fsck -y` or `MinfsNvm::open` cuts it there)",
                cut.records, cut.head, cut.found, cut.at
            );
            Ok(EXIT_UNCORRECTED)
        }
        Inspection::TornTail(_) => {
            drop(file);
            let nvm = MinfsNvm::from_filesystem(&fs, &a.file).map_err(|e| e.to_string())?;
            let report = nvm.recovery().ok_or("the journal was repaired meanwhile")?;
            println!("{report}");
            Ok(EXIT_CORRECTED)
        }
        Inspection::Unrepairable {
            head, at, found, ..
        } => {
            let e = Error::JournalUnrepairable {
                target: a.target.display().to_string(),
                file: a.file.clone(),
                head,
                at,
                found,
            };
            println!("{e}");
            Ok(EXIT_UNCORRECTED)
        }
    }
}
