//! The `minfs` command line, in the style of e2fsprogs. `main.rs` only calls [`main`].
//!
//! Exit codes: `fsck` follows e2fsck (0 clean, 1 errors corrected, 4 errors left uncorrected,
//! 8 operational error, 16 usage error); `scrub` or-s bits as xfs_scrub does (1 metadata
//! problems, 2 unreadable sectors, 4 interrupted; 8 operational error, 16 usage error); every
//! other command exits 0 on success, 1 on failure and 2 on a usage error.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod cat;
mod completions;
mod create;
mod fsck;
#[cfg(feature = "fuse")]
mod helpers;
mod info;
mod ls;
mod manual;
mod mkfs;
#[cfg(feature = "fuse")]
pub mod mount;
mod probe;
mod rm;
mod scrub;
mod tune;
#[cfg(feature = "fuse")]
mod umount;
mod write;

#[cfg(feature = "fuse")]
pub use helpers::{Helper, HELPERS};
pub use manual::{command, exit_statuses};

/// Exit code of a failed command (other than fsck).
pub const EXIT_FAILURE: u8 = 1;
/// Exit code of a usage error (other than fsck).
pub const EXIT_USAGE: u8 = 2;

#[derive(Debug, Parser)]
#[command(
    name = "minfs",
    version,
    about = "A minimal filesystem for one image file or block device: a few named files in 4 KiB-aligned extents, O_DIRECT I/O.",
    long_about = "A minimal filesystem for one image file or block device: a few named files in 4 KiB-aligned extents, O_DIRECT I/O.\n\n\
        minfs has no journal: its metadata, a superblock and a file table, sits in two checksummed slots updated crash-atomically, \
        and file I/O goes straight from the caller's buffers to the device with O_DIRECT. It gives Cannyls the raw region it wants \
        while keeping a superblock that says what the device holds, named files, a check and repair (fsck), and refusal to overwrite \
        another filesystem's data.\n\n\
        TARGET is an image file or a block device. Sizes take K, M, G, T, P, E or KiB, MiB, GiB, TiB, PiB, EiB (powers of 1024) and KB, MB, GB, TB, PB, EB (powers of 1000). Only one process opens a target \
        read-write at a time; info, ls, cat and fsck -n open it read-only.",
    after_help = "Exit codes: 0 success, 1 failure, 2 usage error; fsck: 0 clean, 1 corrected, 4 uncorrected, 8 operational error, 16 usage error; scrub: bits 1 metadata problems, 2 unreadable sectors, 4 interrupted, 8 operational error, 16 usage error."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Make a filesystem on an image file (created and preallocated with --size) or a block
    /// device.
    ///
    /// Writes the reserved area: two 64 KiB metadata slots, each holding a checksummed superblock
    /// and file table, with one commit of an empty file table. An image that does not exist is
    /// created and preallocated (fallocate) to --size; an existing image keeps its size, and a
    /// block device is used whole. A target that holds a known signature (a filesystem, a
    /// partition table, RAID or LVM metadata, a minfs, or anything libblkid finds through
    /// wipefs) or non-zero bytes minfs cannot name (from a sample: the first and last MiB and
    /// 256 reads spread over the target; on an image, the start of each data extent) is refused
    /// unless -f. With -f, the signatures libblkid still finds after formatting (a backup GPT in
    /// the last sector, MD superblocks at the end) are wiped, each printed. -n prints what would
    /// be made and writes nothing.
    Mkfs(mkfs::Args),
    /// Show the superblock and the files (like tune2fs -l).
    ///
    /// Prints the active slot's superblock (UUID, label, format version, generation, sector and
    /// block sizes, total and free bytes, the slot offsets, creation and update times) and each
    /// file with its size and extents. --json prints one JSON object. The target is opened
    /// read-only, so this works while another process has it open read-write.
    Info(info::Args),
    /// Check (and with -y or -p repair) both metadata slots and the extents.
    ///
    /// Reads both metadata slots and checks their checksums and generations, and that the files'
    /// extents lie in the data area, overlap nowhere and agree with the free-block count. -n (the
    /// default) changes nothing and opens the target read-only; -y copies the newest valid slot
    /// over a damaged or stale one; -p (or -a, preen: what the boot-time check passes) repairs
    /// only what is safe unattended and otherwise writes nothing and exits 4. fsck(8) runs this
    /// as fsck.minfs. The options and the exit status are e2fsck's.
    Fsck(fsck::Args),
    /// List the files.
    ///
    /// One name per line, sorted; -l adds each file's size, allocated bytes, number of extents and
    /// first device offset; --json prints an array of objects. The target is opened read-only.
    Ls(ls::Args),
    /// Create a preallocated file of a given size.
    ///
    /// Allocates its 4 KiB blocks, in one extent when a free run is long enough, and commits the
    /// new file table before returning: once the command has returned the file survives a crash.
    /// Its bytes are whatever the blocks held (not zeroed). A name is at most 64 bytes; a
    /// filesystem holds at most 256 files.
    Create(create::Args),
    /// Grow a file to a larger size.
    ///
    /// Adds blocks for the new size and commits; the bytes already in the file stay where they are
    /// (extents never move). A smaller size is refused: files never shrink.
    Grow(create::GrowArgs),
    /// Remove a file.
    ///
    /// Commits the file table without it and frees its blocks; their contents are not erased.
    Rm(rm::Args),
    /// Change the label or the UUID (as tune2fs -L/-U).
    ///
    /// -L sets the label (up to 32 bytes), -U the UUID (a UUID, `random` or `time`); both
    /// change in one commit through the two metadata slots, so a crash leaves the old or the new
    /// pair, never a mix. A mounted target or one open read-write elsewhere is refused. udev's
    /// /dev/disk/by-label and by-uuid links follow once the device is closed (the minfs rule
    /// watches it).
    Tune(tune::Args),
    /// Write a file's contents to stdout.
    ///
    /// Reads the file with O_DIRECT from its first byte up to its size. The target is opened
    /// read-only; a closed pipe (as into head) ends the output quietly.
    Cat(cat::Args),
    /// Copy stdin into a file at an offset (the file does not grow).
    ///
    /// --offset must be a multiple of the logical sector size; a partial last sector keeps the
    /// file's bytes after the input. An input longer than the room from the offset to the end of
    /// the file is refused before anything is written: the length of a regular-file input is
    /// checked first, and a piped input is held in memory (up to 64 MiB) before the first write.
    /// Only a piped input longer than that can fail after writing, and the error then says which
    /// bytes of the file were changed. The data is flushed to the device before the command
    /// returns.
    Write(write::Args),
    /// Mount the filesystem with FUSE: its files as ordinary files under MOUNTPOINT.
    ///
    /// Files can be read, written, created, truncated, preallocated and removed; rename,
    /// directories and links are refused (EPERM). fsync flushes the device. The server holds the
    /// target as a read-write opener does (flock, and O_EXCL on a block device), also with -o ro,
    /// until it is unmounted. Without --foreground the server runs in the background and the
    /// command returns once the mount exists.
    #[cfg(feature = "fuse")]
    Mount(mount::Args),
    /// Unmount a minfs mount and wait until its server has released the target.
    ///
    /// Returns only once the server has flushed, released the target and exited (up to --timeout
    /// seconds), so the target can be opened read-write (fsck -y, mkfs) right after. --lazy
    /// detaches the mount even with files open and does not wait.
    #[cfg(feature = "fuse")]
    Umount(umount::Args),
    /// Find unreadable sectors: the checks of fsck -n, then every allocated extent read.
    ///
    /// Checks the metadata as fsck -n does, then reads both metadata slots and every file's
    /// extents in device order with large O_DIRECT reads (--all: the free space too). A read
    /// that fails with an I/O error (EIO) is narrowed down to the unreadable logical sectors,
    /// and each run of them is printed with what it belongs to: the file and the byte range in
    /// it, a metadata slot, or free space. Rewriting those bytes (the file's owner restoring
    /// them from elsewhere) makes the drive reallocate the sectors. The target is opened
    /// read-only without the lock, so a scrub runs beside `minfs mount` or an in-process
    /// writer; it never writes. It reads the file table of the moment it starts. minfs keeps
    /// no data checksums: bytes that read back wrong without an error are not detected.
    /// Ctrl-C stops after the current read and prints the offset to resume from (--from).
    /// Exit status: bits, as xfs_scrub's: 0 clean, 1 metadata problems, 2 unreadable sectors
    /// found, 4 interrupted, 8 operational error, 16 usage error.
    Scrub(scrub::Args),
    /// Recognise minfs on a device for udev, read-only (what libblkid cannot).
    ///
    /// Reads the two metadata slots without a lock and writes nothing. On a minfs target it
    /// prints a blkid-like line, or with --export the udev properties ID_FS_TYPE=minfs,
    /// ID_FS_USAGE, ID_FS_UUID(_ENC), ID_FS_LABEL(_ENC) and ID_FS_VERSION that the rule
    /// 64-minfs.rules imports to make /dev/disk/by-uuid and by-label links; on anything else it
    /// prints nothing and exits 0.
    Probe(probe::Args),
    /// Print a completion script for bash, zsh, fish, elvish or powershell to stdout.
    ///
    /// scripts/install.sh installs the bash, zsh and fish scripts; this prints one for another
    /// shell or place, e.g. `minfs completions bash >
    /// ~/.local/share/bash-completion/completions/minfs`.
    Completions(completions::Args),
}

/// Parses a size such as `10G`, `256K`, `500MB` or `4096` ([`crate::size`]: K, M, G, T, P,
/// E and KiB, … are powers of 1024, KB, MB, … powers of 1000). The size options take values
/// starting with `-` (`allow_hyphen_values`) so that a negative one gets this message rather
/// than clap's "unexpected argument".
pub(crate) fn parse_size(s: &str) -> Result<u64, String> {
    crate::size::parse_size(s).map_err(|e| e.to_string())
}

/// Target argument shared by the subcommands.
#[derive(Debug, clap::Args)]
pub(crate) struct TargetArg {
    /// Image file or block device.
    #[arg(value_name = "TARGET")]
    pub target: PathBuf,
}

/// Runs `minfs` with the process arguments.
pub fn main() -> ExitCode {
    main_with(std::env::args_os())
}

/// Runs `minfs` with `args` (the first is the program name).
pub fn main_with<I: IntoIterator<Item = OsString>>(args: I) -> ExitCode {
    let args: Vec<OsString> = args.into_iter().collect();
    #[cfg(feature = "fuse")]
    if let Some(code) = helpers::dispatch(&args) {
        return code;
    }
    let is_fsck = args.get(1).is_some_and(|a| a == "fsck");
    let is_scrub = args.get(1).is_some_and(|a| a == "scrub");
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(e) => {
            let code = match e.kind() {
                clap::error::ErrorKind::DisplayHelp
                | clap::error::ErrorKind::DisplayVersion
                | clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
                    if e.exit_code() == 0 =>
                {
                    0
                }
                _ if is_fsck => fsck::EXIT_USAGE,
                _ if is_scrub => scrub::EXIT_USAGE,
                _ => EXIT_USAGE,
            };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    let failure = match cli.command {
        Command::Fsck(_) => fsck::EXIT_OPERATIONAL,
        Command::Scrub(_) => scrub::EXIT_OPERATIONAL,
        _ => EXIT_FAILURE,
    };
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            let _ = std::io::stdout().flush();
            eprintln!("minfs: {}", render(&e));
            ExitCode::from(failure)
        }
    }
}

/// The error and its causes, `: `-separated as `{:#}` prints them, but without a cause whose
/// text is already there: minfs errors carry their source (an OS error) in their own message,
/// and `{:#}` would print it a second time.
fn render(e: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in e.chain() {
        let cause = cause.to_string();
        if text.contains(&cause) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&cause);
    }
    text
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Mkfs(a) => mkfs::run(a),
        Command::Info(a) => info::run(a),
        Command::Fsck(a) => fsck::run(a),
        Command::Ls(a) => ls::run(a),
        Command::Create(a) => create::run(a),
        Command::Grow(a) => create::run_grow(a),
        Command::Rm(a) => rm::run(a),
        Command::Tune(a) => tune::run(a),
        Command::Cat(a) => cat::run(a),
        Command::Write(a) => write::run(a),
        #[cfg(feature = "fuse")]
        Command::Mount(a) => mount::run(a),
        #[cfg(feature = "fuse")]
        Command::Umount(a) => umount::run(a),
        Command::Scrub(a) => scrub::run(a),
        Command::Probe(a) => probe::run(a),
        Command::Completions(a) => completions::run(a),
    }
}

/// Tells (on stderr) that open read the mirror slot because the other is invalid, which a
/// read-only command leaves as it is.
pub(crate) fn note_mirror_slot(fs: &crate::Filesystem, target: &std::path::Path) {
    if let Some((bad, why)) = fs.invalid_slot_at_open() {
        eprintln!(
            "minfs: {}: {bad} is invalid ({why}); read from its mirror, {}. Repair with \
             `minfs fsck -y {}`.",
            target.display(),
            bad.other(),
            target.display()
        );
    }
}

/// Writes to stdout; a closed pipe (e.g. `minfs cat … | head`) ends the output quietly.
pub(crate) fn out(bytes: &[u8]) -> anyhow::Result<bool> {
    match std::io::stdout().lock().write_all(bytes) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(false),
        Err(e) => Err(anyhow::Error::new(e).context("writing to stdout")),
    }
}

/// `1, "file"` → `"1 file"`, `2, "file"` → `"2 files"`.
pub(crate) fn count(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// `1234567` → `"1234567 (1.2 MiB)"`.
pub(crate) fn human(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{bytes} B")
    } else {
        format!("{bytes} ({v:.1} {})", UNITS[u])
    }
}
