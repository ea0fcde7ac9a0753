//! `minfs-cannyls fsck [-n|-y] [--salvage [--drop-at-risk]] TARGET [FILE]`: checks, and with
//! `-y` repairs, the journal of a Cannyls storage held in a file of a minfs filesystem (see
//! [`crate::recovery`]) and its copy ([`crate::copy`]): that the copy agrees with the journal
//! wherever it vouches for it; unreadable sectors the copy serves; `--salvage`, the last
//! resort when both are unreadable ([`crate::salvage`]).
//!
//! Exit codes, as e2fsck's: 0 clean, 1 errors corrected, 4 errors left uncorrected, 8
//! operational error (cannot open the target or the file, no Cannyls storage in it, an I/O
//! error), 16 usage error.
//!
//! `minfs-cannyls add-copy [--min-distance BYTES] TARGET [FILE]`: gives a storage a copy of its
//! header and journal (a storage made before copies, or without one), or rebuilds it. Exit
//! codes: 0 done, 8 operational error, 16 usage error.
//!
//! `minfs-cannyls scrub TARGET [FILE]`: `minfs scrub` over the file's extents, each unreadable
//! range named with the lumps whose data it holds (or the storage header, the journal)
//! from the storage's own index, read without writing ([`crate::lumps`]). Exit codes are
//! `minfs scrub`'s bits: 0 clean, 1 the minfs metadata or the storage's index has problems, 2
//! unreadable sectors found (with `--repair`: left unrepaired), 8 operational error, 16 usage
//! error. `--repair` rewrites unreadable sectors of the storage header, the journal and the
//! copy from the other copy (or, in space neither uses, with zeros) and reports each.
//!
//! `minfs-cannyls lumps [--json] TARGET [FILE]`: every lump the storage's index lists, with
//! its bytes in the file and on the device (read-only, as scrub). Exit codes: 0, 1 the index
//! cannot be read, 8 operational error, 16 usage error.
//!
//! `minfs-cannyls mount [--log FILE] [-o OPTIONS] [--foreground] TARGET DIR`: `minfs mount`,
//! serving each Cannyls storage file through a [`crate::MinfsNvm`] ([`crate::mount`]). Exit
//! codes: 0 mounted (with `--foreground`: served until unmounted), 1 the mount or the server
//! failed, 16 usage error.
//!
//! `minfs-cannyls delete [--yes] TARGET FILE LUMPID...`: deletes the named lumps from the
//! storage, all or none ([`crate::delete`]); without `--yes` only says what it would delete.
//! Exit codes: 0 deleted (or, without --yes, every lump present), 4 a lump named is absent:
//! nothing deleted, 8 operational error (among them a target in use), 16 usage error (among
//! them a malformed lump id).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use minfs::{Filesystem, OpenMode};

use cannyls::lump::LumpId;

use crate::copy::{self, CopyOptions, CopyState};
use crate::delete::{self, DeleteError};
use crate::lumps::{self as lumpmap, LumpMap, Place};
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

/// Delete: a lump named is not in the storage; nothing was deleted.
pub const DELETE_ABSENT: u8 = 4;

/// Scrub: nothing found.
pub const SCRUB_CLEAN: u8 = 0;
/// Scrub bit: the minfs metadata, or the storage's index (header, journal), has problems.
pub const SCRUB_METADATA: u8 = 1;
/// Scrub bit: unreadable sectors were found.
pub const SCRUB_BAD_SECTORS: u8 = 2;

/// The exit statuses of `minfs-cannyls` (`fsck` has e2fsck's, `scrub` `minfs scrub`'s bits).
pub fn exit_statuses(subcommand: Option<&str>) -> Vec<(u8, &'static str)> {
    if subcommand == Some("scrub") {
        return vec![
            (SCRUB_CLEAN, "clean: every sector of the file could be read"),
            (
                SCRUB_METADATA,
                "bit: the minfs metadata or the storage's index (header, journal) has problems",
            ),
            (
                SCRUB_BAD_SECTORS,
                "bit: unreadable sectors found (each named with its lumps or region)",
            ),
            (EXIT_OPERATIONAL, "operational error"),
            (EXIT_USAGE, "usage error"),
        ];
    }
    if subcommand == Some("lumps") {
        return vec![
            (EXIT_CLEAN, "the index was read and listed"),
            (
                SCRUB_METADATA,
                "the storage's index cannot be read (no storage, or a journal unreadable from its head)",
            ),
            (EXIT_OPERATIONAL, "operational error"),
            (EXIT_USAGE, "usage error"),
        ];
    }
    if subcommand == Some("add-copy") {
        return vec![
            (EXIT_CLEAN, "the storage has a copy, made or rebuilt"),
            (
                EXIT_OPERATIONAL,
                "operational error (target in use, no storage, no room, I/O)",
            ),
            (EXIT_USAGE, "usage error"),
        ];
    }
    if subcommand == Some("delete") {
        return vec![
            (
                EXIT_CLEAN,
                "every lump named deleted and the journal synced (without --yes: every lump named is present)",
            ),
            (DELETE_ABSENT, "a lump named is not in the storage: nothing deleted"),
            (
                EXIT_OPERATIONAL,
                "operational error (target or file missing, target in use, no storage, I/O error)",
            ),
            (EXIT_USAGE, "usage error (among them a malformed lump id)"),
        ];
    }
    vec![
        (EXIT_CLEAN, "clean"),
        (
            EXIT_CORRECTED,
            "errors corrected (a torn journal tail cut, sectors rewritten from the copy, the copy rebuilt, a journal salvaged)",
        ),
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
    /// Find unreadable sectors in a storage's file and name the lumps they hit.
    ///
    /// Reads every extent of FILE as `minfs scrub --file FILE` does (large O_DIRECT reads, a
    /// failed read narrowed to the unreadable logical sectors; read-only, without the target's
    /// lock, so it runs beside the process that has the storage open) and maps each unreadable
    /// range of the file to the lumps whose data it holds — or to the storage header, the
    /// journal header or the journal ring — from the storage's own index: the journal walked
    /// from its head as Cannyls replays it, nothing written. Records the storage holds in
    /// memory and has not written yet are not in that index. Exit status: bits, as `minfs
    /// scrub`: 0 clean, 1 the minfs metadata or the storage's index has problems, 2 unreadable
    /// sectors found, 8 operational error, 16 usage error.
    Scrub(ScrubArgs),
    /// List the lumps of a storage: id, where its bytes are in the file and on the device.
    ///
    /// Reads the storage's index as scrub does (the journal walked from its head, nothing
    /// written, without the target's lock: records a running process holds in memory are not
    /// in it). One line per lump: its id (32 hex digits), `data` (blocks in the data region)
    /// or `journal` (embedded in its record), its byte range in FILE, its bytes (whole blocks
    /// for a data lump) and the byte ranges on the device. Exit status: 0 listed, 1 the
    /// storage's index cannot be read, 8 operational error, 16 usage error.
    Lumps(LumpsArgs),
    /// Delete named lumps from a storage (all or none), e.g. those a scrub found unreadable.
    ///
    /// Opens the storage read-write through MinfsNvm, taking the target's lock: a target
    /// another process holds (`minfs mount`, a running FrugalOS or other Cannyls client) is
    /// refused (exit 8): stop it first. Every lump named is looked up first; if any is absent
    /// nothing is deleted (exit 4). Then each is deleted and the journal synced before the
    /// storage is closed. The lumps' data is not read, so a lump over unreadable sectors
    /// deletes like any other. Without --yes nothing is opened for writing: the index is read
    /// as `lumps` reads it and what would be deleted is printed (exit 0 when every lump named
    /// is present). An application that re-puts absent lumps from other copies (FrugalOS'
    /// repair) then restores them. Exit status: 0 deleted, 4 a lump named is absent, 8
    /// operational error, 16 usage error (e.g. a malformed lump id).
    Delete(DeleteArgs),
    /// Give a storage a copy of its header and journal region, or rebuild its copy.
    ///
    /// The copy (kept by MinfsNvm, used when a sector of the header or journal cannot be read)
    /// goes at the end of FILE, which grows by the storage header region, the journal region
    /// and one block, placed at least --min-distance bytes after the journal (64 MiB by
    /// default; right after the storage when the filesystem has no room for that). A storage
    /// made before copies existed, or with MinfsNvm::without_copy, has none. Opens the
    /// storage read-write (the target's lock: stop whatever holds it first). Exit status: 0
    /// done, 8 operational error, 16 usage error.
    AddCopy(AddCopyArgs),
    /// Mount a minfs filesystem as `minfs mount` does, serving each Cannyls storage file in it
    /// through MinfsNvm, so that storages opened by path (FrugalOS's file devices, Cannyls'
    /// FileNvm) keep a copy of their header and journal.
    ///
    /// A storage created on the mount gets its copy at its first sync (the file grows by the
    /// copy; it shows its whole size); an existing one keeps the copy it has (`add-copy` gives
    /// one, unmounted). At each open of a storage file a torn journal tail is cut and unreadable
    /// header and journal sectors are served from the copy and rewritten in place; at its last
    /// close the copy is brought level. Files holding no storage are served plainly. Options
    /// and the background server as `minfs mount`. Exit status: 0 mounted (or, with
    /// --foreground, unmounted again), 1 the mount or the server failed, 16 usage error. The
    /// server's warnings (sectors served from the copy, a journal cut) go to the
    /// file named by --log, else nowhere once it runs in the background.
    Mount(MountArgs),
}

#[derive(Debug, clap::Args)]
struct AddCopyArgs {
    /// The least distance, in bytes, between the journal and its copy in the file.
    #[arg(long, value_name = "BYTES", default_value_t = copy::MIN_DISTANCE)]
    min_distance: u64,
    /// The minfs target: an image file or a block device.
    target: PathBuf,
    /// The minfs file holding the storage.
    #[arg(default_value = DEFAULT_FILE)]
    file: String,
}

#[derive(Debug, clap::Args)]
struct LumpsArgs {
    /// Print one JSON object: the lumps, each with its id, region, file and device ranges.
    #[arg(long)]
    json: bool,
    /// The minfs target: an image file or a block device.
    target: PathBuf,
    /// The minfs file holding the storage.
    #[arg(default_value = DEFAULT_FILE)]
    file: String,
}

#[derive(Debug, clap::Args)]
struct DeleteArgs {
    /// Delete. Without it, only print what would be deleted (nothing is opened for writing).
    #[arg(long)]
    yes: bool,
    /// The minfs target: an image file or a block device.
    target: PathBuf,
    /// The minfs file holding the storage.
    file: String,
    /// The lumps to delete: 1 to 32 hexadecimal digits each, as `lumps` and `scrub` print them.
    #[arg(required = true, value_name = "LUMPID", value_parser = delete::parse_lump_id)]
    lumps: Vec<LumpId>,
}

#[derive(Debug, clap::Args)]
struct ScrubArgs {
    /// Print one JSON object: each bad range with its device and file offsets, length,
    /// regions and lump ids (32 hex digits); the lumps hit; counts.
    #[arg(long)]
    json: bool,
    /// Read at most this many MB (10^6 bytes) per second on average.
    #[arg(long, value_name = "MB/s", value_parser = parse_rate)]
    rate: Option<f64>,
    /// Rewrite unreadable sectors of the storage header, the journal and the copy from the
    /// other copy (space neither uses: with zeros), and report each. Opens the storage
    /// read-write (the target's lock: stop whatever holds it first).
    #[arg(long)]
    repair: bool,
    /// The minfs target: an image file or a block device.
    target: PathBuf,
    /// The minfs file holding the storage.
    #[arg(default_value = DEFAULT_FILE)]
    file: String,
}

fn parse_rate(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(r) if r.is_finite() && r > 0.0 => Ok(r),
        _ => Err(format!("{s:?} is not a positive number of MB/s")),
    }
}

#[derive(Debug, clap::Args)]
struct FsckArgs {
    /// Check only; change nothing (the default).
    #[arg(short = 'n', conflicts_with = "yes")]
    no: bool,
    /// Repair: cut a torn journal tail (an EndOfRecords where the first unreadable record
    /// starts), rewrite unreadable sectors from the copy, rebuild a copy that disagrees.
    #[arg(short = 'y')]
    yes: bool,
    /// The last resort when journal bytes are unreadable in the file and in its copy: keep
    /// what can be vouched for (see docs/RELIABILITY.md) and report what is lost; writes the
    /// salvaged journal only with -y.
    #[arg(long)]
    salvage: bool,
    /// With --salvage: drop the lumps at risk too (their latest record precedes the hole),
    /// so that nothing is served that salvage cannot vouch for.
    #[arg(long, requires = "salvage")]
    drop_at_risk: bool,
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
    let a = match cli.command {
        Command::Fsck(a) => a,
        Command::Lumps(a) => {
            return match lumps(&a) {
                Ok(code) => ExitCode::from(code),
                Err(e) => {
                    eprintln!(
                        "minfs-cannyls: lumps: {}: file {:?}: {e}",
                        a.target.display(),
                        a.file
                    );
                    ExitCode::from(EXIT_OPERATIONAL)
                }
            }
        }
        Command::Delete(a) => return ExitCode::from(delete_cmd(&a)),
        Command::Mount(a) => return mount_cmd(a),
        Command::AddCopy(a) => {
            return match add_copy(&a) {
                Ok(code) => ExitCode::from(code),
                Err(e) => {
                    eprintln!(
                        "minfs-cannyls: add-copy: {}: file {:?}: {e}",
                        a.target.display(),
                        a.file
                    );
                    ExitCode::from(EXIT_OPERATIONAL)
                }
            }
        }
        Command::Scrub(a) => {
            return match scrub(&a) {
                Ok(code) => ExitCode::from(code),
                Err(e) => {
                    eprintln!(
                        "minfs-cannyls: scrub: {}: file {:?}: {e}",
                        a.target.display(),
                        a.file
                    );
                    ExitCode::from(EXIT_OPERATIONAL)
                }
            }
        }
    };
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
    // The copy.
    let check = copy::check(&file).map_err(|e| e.to_string())?;
    let mut copy_problem = false;
    match (&check.trailer, check.trailer_unreadable) {
        (_, true) => {
            println!(
                "{name}: the copy's trailer (the file's last block) cannot be read: the copy \
                 is not used; an open rebuilds it"
            );
            copy_problem = true;
        }
        (None, _) => println!(
            "{name}: no copy of the Cannyls header and journal (a storage made without one): \
             `minfs-cannyls add-copy` gives it one"
        ),
        (Some(t), _) if t.state == CopyState::Building => {
            println!(
                "{name}: the copy at file offset {} is being built (a rebuild did not finish): \
                 it is not used; an open rebuilds it",
                t.image
            );
            copy_problem = true;
        }
        (Some(t), _) => {
            let d = check.distance.unwrap_or(0);
            let state = if check.level() {
                "level with the journal".to_string()
            } else if let Some(lag) = check.lag() {
                format!(
                    "{lag} journal bytes behind it (the storage was not closed cleanly; an open \
                     rebuilds the copy)"
                )
            } else {
                "not level with the journal".to_string()
            };
            println!(
                "{name}: copy of the header and journal at file offset {} ({} bytes, {d} bytes \
                 from them on the device{}): {state}; {}",
                t.image,
                t.len,
                if d < copy::CLUSTER_SPAN {
                    format!(
                        ", less than the {} bytes one cluster of latent errors may span",
                        copy::CLUSTER_SPAN
                    )
                } else {
                    String::new()
                },
                if let Some(why) = &check.damaged {
                    format!("it is DAMAGED: {why}; it vouches for nothing")
                } else if check.agree() {
                    format!(
                        "it agrees with the journal wherever it vouches for it ({} bytes)",
                        check.vouched.iter().map(|(a, b)| b - a).sum::<u64>()
                    )
                } else {
                    format!("it DISAGREES with the journal at {:?}", check.differ)
                }
            );
            copy_problem = !check.agree();
        }
    }
    for (at, len, whose) in &check.unreadable {
        println!("{name}: unreadable: {len} bytes at storage offset {at} ({whose})");
    }
    // The journal, with the copy for unreadable sectors (nothing written here).
    let sector = u64::from(file.sector_size().max(1));
    let capacity = check
        .trailer
        .as_ref()
        .map_or(file.size() / sector * sector, |t| t.image);
    let mut fallback = check
        .trailer
        .clone()
        .map(|t| copy::OpenFallback::new(&file, t));
    let (found, info) = recovery::walk_with(
        &file,
        0,
        capacity,
        fallback.as_mut().map(|f| f as &mut dyn recovery::Fallback),
        None,
        &mut |_, _| {},
    )
    .map_err(|e| e.to_string())?;
    let served = fallback.as_ref().map_or(0, |f| {
        let mut read = info.path();
        read.push((info.stop, info.stop + recovery::RECORD_HEAD));
        f.rewrites.len() + f.ring_rewrites(&read).len()
    });
    drop(fallback);
    if served > 0 {
        println!(
            "{name}: {served} unreadable block(s) of the header and journal, readable from the \
             copy{}",
            if a.yes {
                ""
            } else {
                "; left (`fsck -y` or an open rewrites them from the copy)"
            }
        );
    }
    let fixable = served > 0 || copy_problem;
    let code = match found {
        Inspection::NoStorage(why) => return Err(why),
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
            if fixable {
                EXIT_UNCORRECTED
            } else {
                EXIT_CLEAN
            }
        }
        Inspection::TornTail(cut) => {
            println!(
                "{name}: Cannyls journal torn: after {} records from the head at ring position \
                 {}, found {} at ring position {}{}",
                cut.records,
                cut.head,
                cut.found,
                cut.at,
                if a.yes {
                    ""
                } else {
                    "; left uncorrected (Cannyls refuses to open it; `minfs-cannyls fsck -y` or \
                     `MinfsNvm::open` cuts it there)"
                }
            );
            EXIT_UNCORRECTED
        }
        Inspection::Hole(hole) => {
            let e = Error::JournalUnreadable {
                target: a.target.display().to_string(),
                file: a.file.clone(),
                hole: Box::new(hole),
            };
            println!("{e}");
            if !a.salvage {
                return Ok(EXIT_UNCORRECTED);
            }
            drop(file);
            let file = fs.open_file(&a.file).map_err(|e| e.to_string())?;
            let opts = crate::salvage::Options {
                write: a.yes,
                drop_at_risk: a.drop_at_risk,
            };
            return match crate::salvage::salvage(&file, opts).map_err(|e| e.to_string())? {
                Ok(r) => {
                    for line in r.to_string().lines() {
                        println!("{name}: salvage: {line}");
                    }
                    match r.written_at {
                        Some(q) => {
                            println!(
                                "{name}: salvage: wrote the salvaged journal ({} lumps) at ring \
                                 position {q}; the copy is rebuilt at the next open",
                                r.kept.len()
                            );
                            Ok(EXIT_CORRECTED)
                        }
                        None => {
                            println!("{name}: salvage: nothing written (without -y)");
                            Ok(EXIT_UNCORRECTED)
                        }
                    }
                }
                Err(why) => {
                    println!("{name}: salvage: {why}");
                    Ok(EXIT_UNCORRECTED)
                }
            };
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
            return Ok(EXIT_UNCORRECTED);
        }
    };
    if code == EXIT_CLEAN || !a.yes {
        return Ok(code);
    }
    // -y: an open does the repairs (cut, rewrites from the copy, and rebuilds the copy).
    drop(file);
    let nvm = if copy_problem || served > 0 {
        MinfsNvm::rebuild_copy(&fs, &a.file)
    } else {
        MinfsNvm::from_filesystem(&fs, &a.file)
    }
    .map_err(|e| e.to_string())?;
    if let Some(report) = nvm.recovery() {
        println!("{report}");
    }
    if let Some(o) = nvm.opened() {
        for (at, len) in &o.rewritten {
            println!("{name}: rewrote {len} bytes at file offset {at} from the copy");
        }
        if o.copy == copy::CopyAtOpen::Rebuilt {
            println!("{name}: rebuilt the copy from the journal");
        }
    }
    Ok(EXIT_CORRECTED)
}

fn add_copy(a: &AddCopyArgs) -> Result<u8, String> {
    let name = format!("{}:{}", a.target.display(), a.file);
    let fs = Filesystem::open(&a.target, OpenMode::ReadWrite).map_err(|e| e.to_string())?;
    let opts = CopyOptions {
        min_distance: a.min_distance,
        ..CopyOptions::default()
    };
    let nvm = MinfsNvm::add_copy(&fs, &a.file, opts).map_err(|e| e.to_string())?;
    drop(nvm);
    let file = fs.open_file(&a.file).map_err(|e| e.to_string())?;
    let c = copy::check(&file).map_err(|e| e.to_string())?;
    let t = c.trailer.clone().ok_or("no copy was made")?;
    println!(
        "{name}: copy of the header and journal at file offset {} ({} bytes; the file is now {} \
         bytes), {} bytes from them on the device; {}",
        t.image,
        t.len,
        file.size(),
        c.distance.unwrap_or(0),
        if c.level() && c.agree() {
            "level with the journal"
        } else {
            "NOT level with the journal"
        }
    );
    Ok(EXIT_CLEAN)
}

/// What a scrub found, for the text and JSON output.
struct Named {
    device_offset: u64,
    file_offset: u64,
    length: u64,
    regions: Vec<&'static str>,
    lumps: Vec<String>,
}

fn scrub(a: &ScrubArgs) -> Result<u8, String> {
    let name = format!("{}:{}", a.target.display(), a.file);
    let opts = minfs::scrub::Options {
        file: Some(a.file.clone()),
        rate: a.rate.map(|r| r * 1e6),
        ..Default::default()
    };
    let stop = std::sync::atomic::AtomicBool::new(false);
    let report =
        minfs::scrub::scrub(&a.target, &opts, &stop, &mut |_| {}).map_err(|e| e.to_string())?;
    // The storage's index, read-only. An unreadable header or journal leaves it unknown.
    let fs = Filesystem::open(&a.target, OpenMode::ReadOnly).map_err(|e| e.to_string())?;
    let file = fs.open_file(&a.file).map_err(|e| e.to_string())?;
    let sector = u64::from(file.sector_size().max(1));
    let capacity = file.size() / sector * sector;
    let map: Result<LumpMap, String> = match LumpMap::read(&file, 0, capacity) {
        Ok(Ok(m)) => Ok(m),
        Ok(Err(why)) => Err(why),
        Err(e) => Err(format!("reading the storage's index: {e}")),
    };
    let mut named = Vec::new();
    for b in &report.bad {
        let minfs::scrub::Owner::File { file_offset, .. } = &b.owner else {
            continue;
        };
        let (regions, lumps) = match &map {
            Ok(m) => (
                m.regions(*file_offset, b.length)
                    .into_iter()
                    .map(|r| r.as_str())
                    .collect(),
                m.lumps_in(*file_offset, b.length)
                    .into_iter()
                    .map(|id| id.to_string())
                    .collect(),
            ),
            Err(_) => (vec!["unknown"], Vec::new()),
        };
        named.push(Named {
            device_offset: b.device_offset,
            file_offset: *file_offset,
            length: b.length,
            regions,
            lumps,
        });
    }
    let mut hit: Vec<String> = named.iter().flat_map(|n| n.lumps.clone()).collect();
    hit.sort();
    hit.dedup();
    // --repair: the header, journal and copy ranges, rewritten from the other copy.
    let mut repaired: Vec<(String, bool)> = Vec::new();
    let repairable = |n: &Named| {
        n.regions.iter().any(|r| {
            matches!(
                *r,
                "storage-header" | "journal-header" | "journal" | "copy" | "unknown"
            )
        }) && !n.regions.contains(&"data")
    };
    if a.repair {
        drop(file);
        drop(fs);
        let ranges: Vec<(u64, u64)> = named
            .iter()
            .filter(|n| repairable(n))
            .map(|n| (n.file_offset, n.length))
            .collect();
        if !ranges.is_empty() {
            let fs = Filesystem::open(&a.target, OpenMode::ReadWrite).map_err(|e| e.to_string())?;
            repaired = copy::repair(&fs, &a.file, &ranges)
                .map_err(|e| e.to_string())?
                .into_iter()
                .map(|r| (r.to_string(), r.readable))
                .collect();
        }
    }
    let unrepaired = report.bad.len() - repaired.iter().filter(|r| r.1).count();
    let mut code = SCRUB_CLEAN;
    if !report.metadata.is_clean() || map.is_err() {
        code |= SCRUB_METADATA;
    }
    if unrepaired > 0 {
        code |= SCRUB_BAD_SECTORS;
    }
    if a.json {
        let ranges: Vec<serde_json::Value> = named
            .iter()
            .map(|n| {
                serde_json::json!({
                    "device_offset": n.device_offset,
                    "file_offset": n.file_offset,
                    "length": n.length,
                    "regions": n.regions,
                    "lumps": n.lumps,
                })
            })
            .collect();
        let v = serde_json::json!({
            "target": a.target.display().to_string(),
            "file": a.file,
            "exit_code": code,
            "metadata_clean": report.metadata.is_clean(),
            "metadata_problems": report.metadata.problems.iter().map(|p| p.to_string()).collect::<Vec<_>>(),
            "index": match &map {
                Ok(m) => serde_json::json!({
                    "read": true,
                    "lumps": m.lumps.len(),
                    "journal_clean": matches!(m.journal, Inspection::Clean { .. }),
                    "block_size": m.layout.block_size,
                }),
                Err(why) => serde_json::json!({ "read": false, "error": why }),
            },
            "bytes_read": report.bytes_done,
            "duration_s": report.duration.as_secs_f64(),
            "bad_sectors": report.bad_sectors(),
            "bad_ranges": ranges,
            "lumps_hit": hit,
            "repaired": repaired.iter().map(|(line, ok)| serde_json::json!({"what": line, "readable": ok})).collect::<Vec<_>>(),
        });
        println!(
            "{}",
            serde_json::to_string_pretty(&v).map_err(|e| e.to_string())?
        );
        return Ok(code);
    }
    for p in &report.metadata.problems {
        println!("{name}: minfs metadata: {p}");
    }
    match &map {
        Ok(m) => println!(
            "{name}: Cannyls storage, block size {}: {} lumps in its journal{}",
            m.layout.block_size,
            m.lumps.len(),
            if matches!(m.journal, Inspection::Clean { .. }) {
                ""
            } else {
                " (its tail is torn: run `minfs-cannyls fsck`)"
            }
        ),
        Err(why) => println!("{name}: the storage's index cannot be read: {why}"),
    }
    for n in &named {
        println!(
            "{name}: unreadable: file bytes {}..{} (device bytes {}..{}), {}: {}",
            n.file_offset,
            n.file_offset + n.length,
            n.device_offset,
            n.device_offset + n.length,
            n.regions.join(", "),
            if n.lumps.is_empty() {
                "no lump".to_string()
            } else {
                format!("lumps {}", n.lumps.join(", "))
            }
        );
    }
    for (line, _) in &repaired {
        println!("{name}: repair: {line}");
    }
    println!(
        "{name}: read {} bytes in {:.1} s: {} unreadable sectors, {} lumps hit{}",
        report.bytes_done,
        report.duration.as_secs_f64(),
        report.bad_sectors(),
        hit.len(),
        if a.repair {
            format!(
                "; {} of {} unreadable ranges repaired",
                repaired.iter().filter(|r| r.1).count(),
                report.bad.len()
            )
        } else {
            String::new()
        }
    );
    Ok(code)
}

/// A storage's index (or why it cannot be read) and its file's extents.
type Index = (Result<LumpMap, String>, Vec<minfs::format::Extent>);

/// The storage's index, read-only, with the file's extents: `Ok((Err(why), _))` when the file
/// holds no storage or its journal cannot be walked.
fn read_index(target: &std::path::Path, file: &str) -> Result<Index, String> {
    let fs = Filesystem::open(target, OpenMode::ReadOnly).map_err(|e| e.to_string())?;
    let file = fs.open_file(file).map_err(|e| e.to_string())?;
    let sector = u64::from(file.sector_size().max(1));
    let capacity = file.size() / sector * sector;
    let map = LumpMap::read(&file, 0, capacity)
        .map_err(|e| format!("reading the storage's index: {e}"))?;
    Ok((map, file.extents()))
}

fn lumps(a: &LumpsArgs) -> Result<u8, String> {
    let name = format!("{}:{}", a.target.display(), a.file);
    let (map, extents) = read_index(&a.target, &a.file)?;
    let m = match map {
        Ok(m) => m,
        Err(why) => {
            if a.json {
                let v = serde_json::json!({
                    "target": a.target.display().to_string(),
                    "file": a.file,
                    "index": { "read": false, "error": why },
                });
                println!(
                    "{}",
                    serde_json::to_string_pretty(&v).map_err(|e| e.to_string())?
                );
            } else {
                println!("{name}: the storage's index cannot be read: {why}");
            }
            return Ok(SCRUB_METADATA);
        }
    };
    struct Row {
        id: String,
        region: &'static str,
        start: u64,
        len: u64,
        dev: Vec<(u64, u64)>,
    }
    let rows: Vec<Row> = m
        .lumps
        .iter()
        .map(|(id, p)| {
            let (start, end) = p.range();
            Row {
                id: LumpId::new(*id).to_string(),
                region: match p {
                    Place::Data { .. } => "data",
                    Place::Journal { .. } => "journal",
                },
                start,
                len: end - start,
                dev: lumpmap::device_ranges(&extents, start, end - start),
            }
        })
        .collect();
    let clean = matches!(m.journal, Inspection::Clean { .. });
    if a.json {
        // Where the journal's live records start: the ring's head block (what an open reads
        // first), as file and device bytes.
        let journal = match &m.journal {
            Inspection::Clean { head, end, .. } => {
                let bs = u64::from(m.layout.block_size);
                let ring = m.base + m.layout.ring_start();
                let at = ring + head / bs * bs;
                let dev = lumpmap::device_ranges(&extents, at, bs);
                // The live records' ring bytes, [head, end), wrapping at the ring's end.
                let live: Vec<(u64, u64)> = if end >= head {
                    vec![(ring + head, end - head)]
                } else {
                    vec![(ring + head, m.layout.ring_size() - head), (ring, *end)]
                };
                let live_dev: Vec<serde_json::Value> = live
                    .iter()
                    .flat_map(|&(o, l)| lumpmap::device_ranges(&extents, o, l))
                    .map(|(o, l)| serde_json::json!({"offset": o, "length": l}))
                    .collect();
                serde_json::json!({
                    "file_offset": m.base + m.layout.journal_start,
                    "size": m.layout.journal_size,
                    "ring_file_offset": ring,
                    "head": head,
                    "end": end,
                    "head_block_file_offset": at,
                    "head_block_device_offset": dev.first().map(|d| d.0),
                    "live_device_ranges": live_dev,
                })
            }
            _ => serde_json::Value::Null,
        };
        let lumps: Vec<serde_json::Value> = rows
            .iter()
            .map(|Row { id, region, start, len, dev }| {
                serde_json::json!({
                    "id": id,
                    "region": region,
                    "file_offset": start,
                    "length": len,
                    "device_ranges": dev.iter().map(|(o, l)| serde_json::json!({"offset": o, "length": l})).collect::<Vec<_>>(),
                })
            })
            .collect();
        let v = serde_json::json!({
            "target": a.target.display().to_string(),
            "file": a.file,
            "index": {
                "read": true,
                "journal_clean": clean,
                "block_size": m.layout.block_size,
                "journal": journal,
            },
            "lumps": lumps,
        });
        println!(
            "{}",
            serde_json::to_string_pretty(&v).map_err(|e| e.to_string())?
        );
        return Ok(EXIT_CLEAN);
    }
    println!(
        "{name}: Cannyls storage, block size {}: {} lumps in its journal{}",
        m.layout.block_size,
        rows.len(),
        if clean {
            ""
        } else {
            " (its tail is torn: run `minfs-cannyls fsck`)"
        }
    );
    for Row {
        id,
        region,
        start,
        len,
        dev,
    } in &rows
    {
        let dev: Vec<String> = dev.iter().map(|(o, l)| format!("{o}..{}", o + l)).collect();
        println!(
            "{id} {region:<7} file bytes {start}..{} ({len} bytes), device bytes {}",
            start + len,
            if dev.is_empty() {
                "-".to_string()
            } else {
                dev.join(", ")
            }
        );
    }
    Ok(EXIT_CLEAN)
}

fn delete_cmd(a: &DeleteArgs) -> u8 {
    let name = format!("{}:{}", a.target.display(), a.file);
    let mut ids = a.lumps.clone();
    ids.sort();
    ids.dedup();
    if !a.yes {
        // Read-only: what would be deleted.
        let map = match read_index(&a.target, &a.file) {
            Ok((Ok(m), _)) => m,
            Ok((Err(why), _)) => {
                eprintln!(
                    "minfs-cannyls: delete: {name}: the storage's index cannot be read: {why}"
                );
                return EXIT_OPERATIONAL;
            }
            Err(e) => {
                eprintln!("minfs-cannyls: delete: {name}: {e}");
                return EXIT_OPERATIONAL;
            }
        };
        let absent: Vec<String> = ids
            .iter()
            .filter(|id| !map.lumps.contains_key(&id.as_u128()))
            .map(|id| id.to_string())
            .collect();
        if !absent.is_empty() {
            eprintln!(
                "minfs-cannyls: delete: {name}: no such lump{}: {}; nothing would be deleted",
                if absent.len() == 1 { "" } else { "s" },
                absent.join(", ")
            );
            return DELETE_ABSENT;
        }
        for id in &ids {
            let (s, e) = map.lumps[&id.as_u128()].range();
            println!("{name}: would delete lump {id} ({} bytes)", e - s);
        }
        println!(
            "{name}: nothing deleted (without --yes); stop whatever holds the target, then run \
             again with --yes"
        );
        return EXIT_CLEAN;
    }
    match delete::delete_lumps(&a.target, &a.file, &ids) {
        Ok(done) => {
            for d in &done {
                println!(
                    "{name}: deleted lump {} ({} bytes)",
                    d.id, d.approximate_size
                );
            }
            println!(
                "{name}: {} lump{} deleted, journal synced",
                done.len(),
                if done.len() == 1 { "" } else { "s" }
            );
            EXIT_CLEAN
        }
        Err(e @ DeleteError::Absent { .. }) => {
            eprintln!("minfs-cannyls: delete: {e}");
            DELETE_ABSENT
        }
        Err(DeleteError::Open(crate::Error::Minfs(e))) if e.is_in_use() => {
            eprintln!(
                "minfs-cannyls: delete: {e}; nothing deleted: stop the process that holds it \
                 (e.g. `minfs umount`, stop FrugalOS) and run again"
            );
            EXIT_OPERATIONAL
        }
        Err(e @ DeleteError::Open(_)) => {
            eprintln!("minfs-cannyls: delete: {e}; nothing deleted");
            EXIT_OPERATIONAL
        }
        Err(e) => {
            eprintln!(
                "minfs-cannyls: delete: {e} (deletes made before it are durable only if the \
                 storage synced them: check with `minfs-cannyls lumps`)"
            );
            EXIT_OPERATIONAL
        }
    }
}

#[derive(Debug, clap::Args)]
struct MountArgs {
    /// Append the server's warnings to FILE (with a time stamp each); passed to the background
    /// server as MINFS_CANNYLS_LOG.
    #[arg(long, value_name = "FILE")]
    log: Option<PathBuf>,
    #[command(flatten)]
    mount: minfs::cli::mount::Args,
}

/// The environment variable naming the mount server's log file.
pub const LOG_ENV: &str = "MINFS_CANNYLS_LOG";

fn mount_cmd(a: MountArgs) -> ExitCode {
    if let Some(p) = &a.log {
        match std::path::absolute(p) {
            // Before any thread: the server started next inherits it.
            Ok(p) => std::env::set_var(LOG_ENV, p),
            Err(e) => {
                eprintln!("minfs-cannyls: mount: --log {}: {e}", p.display());
                return ExitCode::from(EXIT_USAGE);
            }
        }
    }
    if let Some(p) = std::env::var_os(LOG_ENV) {
        if let Err(e) = crate::logfile::init(Path::new(&p)) {
            eprintln!(
                "minfs-cannyls: mount: log file {}: {e}",
                Path::new(&p).display()
            );
            return ExitCode::from(1);
        }
    }
    let make: minfs::cli::mount::MakeServices = || Box::new(crate::mount::CannylsServices);
    match minfs::cli::mount::run_with(a.mount, Some(make)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("minfs-cannyls: {e:#}");
            ExitCode::from(1)
        }
    }
}
