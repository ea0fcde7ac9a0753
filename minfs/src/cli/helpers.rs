//! The programs util-linux and systemd run for a filesystem type: `mkfs.minfs` (mkfs(8)),
//! `fsck.minfs` (fsck(8), and so the boot-time check), `mount.minfs` (mount(8) for type
//! `minfs`), `mount.fuse.minfs` (for type `fuse.minfs`) and `umount.fuse.minfs` (umount(8):
//! a minfs mount's type is `fuse.minfs`). They are names of the `minfs` binary (links to it,
//! installed in /sbin by `scripts/install.sh` and the Debian package): [`dispatch`] picks the
//! helper from the name it was run by.
//!
//! `minfs SPEC DIR -o OPTIONS` is also a mount: that is how mount.fuse(8) (package fuse3)
//! runs the program of a `fuse.minfs` mount when it is the helper mount(8) found.
//!
//! The argument conventions, from util-linux 2.38's sources: mount(8) runs
//! `/sbin/mount.TYPE SPEC DIR [-s] [-f] [-n] [-v] [-o OPTIONS] [-t TYPE.SUBTYPE] [-N NS]`
//! (libmount `exec_helper`; `-t` only when the helper's name does not end in the type) and
//! umount(8) `/sbin/umount.TYPE DIR [-n] [-l] [-f] [-v] [-r] [-t TYPE.SUBTYPE] [-N NS]`, both
//! searching /sbin, /sbin/fs.d and /sbin/fs; mkfs(8) runs `mkfs.TYPE [OPTIONS] DEVICE [SIZE]`
//! from PATH; fsck(8) runs `fsck.TYPE [OPTIONS] DEVICE` from PATH, the options being the
//! ones it does not use itself (systemd-fsck: `fsck -a -T -l -M [-C FD] DEVICE`).

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{CommandFactory, Parser};

use super::{fsck, mkfs, render};

/// mount(8)'s exit codes (also umount(8)'s).
pub mod mount_exit {
    /// Success.
    pub const OK: u8 = 0;
    /// Incorrect invocation or permissions.
    pub const USAGE: u8 = 1;
    /// System error (cannot start the server process).
    pub const SYSTEM: u8 = 2;
    /// Mount (or unmount) failure.
    pub const FAILURE: u8 = 32;
}

/// One helper program: a name of the `minfs` binary.
#[derive(Debug, Clone, Copy)]
pub struct Helper {
    /// The name util-linux runs it by (the page's name).
    pub name: &'static str,
    /// Other names it answers to in the same way (their pages point to this one).
    pub aliases: &'static [&'static str],
    /// Its clap definition.
    pub command: fn() -> clap::Command,
    /// Its exit statuses, (status, meaning).
    pub exit_statuses: fn() -> Vec<(u8, &'static str)>,
}

impl Helper {
    /// The helper's name and its aliases: the links to install.
    pub fn names(&self) -> impl Iterator<Item = &'static str> {
        std::iter::once(self.name).chain(self.aliases.iter().copied())
    }
}

/// Every helper. `scripts/install.sh` links each name (and alias) to `minfs`; docgen writes
/// a page for each.
pub const HELPERS: &[Helper] = &[
    Helper {
        name: "mkfs.minfs",
        aliases: &[],
        command: MkfsHelper::command,
        exit_statuses: mkfs_statuses,
    },
    Helper {
        name: "fsck.minfs",
        aliases: &["fsck.fuse.minfs"],
        command: FsckHelper::command,
        exit_statuses: fsck_statuses,
    },
    Helper {
        name: "mount.minfs",
        aliases: &["mount.fuse.minfs"],
        command: MountHelper::command,
        exit_statuses: mount_statuses,
    },
    Helper {
        name: "umount.fuse.minfs",
        aliases: &[],
        command: UmountHelper::command,
        exit_statuses: umount_statuses,
    },
];

fn mkfs_statuses() -> Vec<(u8, &'static str)> {
    vec![
        (0, "success"),
        (
            super::EXIT_FAILURE,
            "failure: nothing was made (the message names the target and what is wrong)",
        ),
        (super::EXIT_USAGE, "usage error"),
    ]
}

fn fsck_statuses() -> Vec<(u8, &'static str)> {
    super::exit_statuses(Some("fsck"))
}

fn mount_statuses() -> Vec<(u8, &'static str)> {
    vec![
        (mount_exit::OK, "mounted (and ready: the server answers)"),
        (
            mount_exit::USAGE,
            "incorrect invocation: a bad argument, -t naming another type, -N",
        ),
        (
            mount_exit::SYSTEM,
            "system error: the server process could not be started",
        ),
        (
            mount_exit::FAILURE,
            "mount failure: an unknown option, a target that is not minfs or is in use, a \
             missing mount point, a failed mount(2) (the message says which)",
        ),
    ]
}

fn umount_statuses() -> Vec<(u8, &'static str)> {
    vec![
        (
            mount_exit::OK,
            "unmounted, and the server has released the target (with -l: detached)",
        ),
        (mount_exit::USAGE, "incorrect invocation"),
        (
            mount_exit::FAILURE,
            "unmount failure: not a minfs mount, busy, or the server did not exit in time",
        ),
    ]
}

/// `mkfs.minfs`.
#[derive(Debug, Parser)]
#[command(
    name = "mkfs.minfs",
    version,
    about = "Make a minfs filesystem (run by mkfs -t minfs).",
    long_about = "Make a minfs filesystem on DEVICE (a block device, or an image file) — what \
        `mkfs -t minfs [OPTIONS] DEVICE [SIZE]` runs. The same as `minfs mkfs`: a target that \
        holds a known signature (another filesystem, a partition table, a minfs) is refused \
        unless -f (-F), a mounted or busy block device always; -n writes nothing. An image \
        that does not exist is created with the size given (SIZE, or -s).",
    mut_arg("force", |a| a.visible_short_alias('F'))
)]
struct MkfsHelper {
    #[command(flatten)]
    args: mkfs::HelperArgs,
}

/// `fsck.minfs`.
#[derive(Debug, Parser)]
#[command(
    name = "fsck.minfs",
    version,
    about = "Check and repair a minfs filesystem (run by fsck -t minfs and the boot-time check).",
    long_about = "Check and repair a minfs filesystem — what fsck(8) runs for type minfs (and \
        fuse.minfs), and so what the boot-time check of an /etc/fstab line with a pass number \
        runs: `fsck -a` (systemd-fsck) passes -a. The same as `minfs fsck`, with e2fsck's \
        options and exit codes. -n (the default) only reads; -y repairs; -p or -a (preen) \
        repairs only what is safe unattended, and otherwise writes nothing and exits 4."
)]
struct FsckHelper {
    #[command(flatten)]
    args: fsck::Args,
}

/// `mount.minfs` (and `mount.fuse.minfs`, and `minfs SPEC DIR -o OPTIONS`).
#[derive(Debug, Parser)]
#[command(
    name = "mount.minfs",
    version,
    about = "Mount a minfs filesystem (run by mount -t minfs and for /etc/fstab lines).",
    long_about = "Mount the minfs filesystem on SPEC (a block device or an image file) on DIR \
        with FUSE — what mount(8) runs for type minfs (as mount.minfs) and fuse.minfs (as \
        mount.fuse.minfs; mount.fuse(8) runs `minfs SPEC DIR -o OPTIONS` instead when it is \
        the helper found). It starts the server as `minfs mount` does and returns once the \
        mount is ready; the mount shows as type fuse.minfs with SPEC's canonical path as its \
        source. umount(8) (through umount.fuse.minfs) or `minfs umount` unmounts it and returns \
        once the server has released SPEC. Prints nothing on success unless -v."
)]
struct MountHelper {
    /// The minfs filesystem: a block device or an image file.
    #[arg(value_name = "SPEC")]
    spec: PathBuf,
    /// The mount point, an existing directory.
    #[arg(value_name = "DIR")]
    dir: PathBuf,
    /// Sloppy (mount -s): ignore unknown mount options instead of refusing them.
    #[arg(short = 's')]
    sloppy: bool,
    /// Fake (mount -f): check SPEC, DIR and the options, and mount nothing.
    #[arg(short = 'f')]
    fake: bool,
    /// No mtab (mount -n): nothing to do, minfs writes no mtab or utab.
    #[arg(short = 'n')]
    no_mtab: bool,
    /// Verbose (mount -v): say what was mounted and which options had no effect.
    #[arg(short = 'v')]
    verbose: bool,
    /// Mount options, comma-separated (as minfs mount -o). Honoured: ro, rw, noexec, exec,
    /// noatime, atime, sync, async, dirsync, allow_other, and nofail as mount(8) has it: a SPEC
    /// that does not exist is not an error (exit 0, nothing mounted). Accepted without effect:
    /// mount(8)'s, systemd's and mount.fuse's (defaults, [no]auto, _netdev, [no]user[s],
    /// [no]owner, [no]group, x-*, X-*, comment=, [no]dev, [no]suid, default_permissions) and
    /// the access-time ones ([no]relatime, [no]strictatime, [no]diratime, [no]lazytime). Any
    /// other is refused by name (exit 32), unless -s.
    #[arg(short = 'o', value_name = "OPTIONS")]
    options: Vec<String>,
    /// The type, as mount(8) passes it to a helper of another name: minfs or fuse.minfs.
    #[arg(short = 't', value_name = "TYPE")]
    fstype: Option<String>,
    /// A mount namespace (mount -N): not supported; refused.
    #[arg(short = 'N', value_name = "NS")]
    namespace: Option<String>,
}

/// `umount.fuse.minfs`.
#[derive(Debug, Parser)]
#[command(
    name = "umount.fuse.minfs",
    version,
    about = "Unmount a minfs filesystem (run by umount for a minfs mount).",
    long_about = "Unmount the minfs mount at DIR — what umount(8) runs for a mount of type \
        fuse.minfs — and return once its server has flushed, released the target and exited \
        (as minfs umount), so the target can be checked or mounted again right after. Prints \
        nothing on success unless -v."
)]
struct UmountHelper {
    /// Where a minfs filesystem is mounted.
    #[arg(value_name = "DIR")]
    dir: PathBuf,
    /// No mtab (umount -n): nothing to do.
    #[arg(short = 'n')]
    no_mtab: bool,
    /// Lazy (umount -l): detach now; the server exits once the files open on it are closed
    /// (not waited for).
    #[arg(short = 'l')]
    lazy: bool,
    /// Force (umount -f): abort the FUSE connection (umount2 MNT_FORCE, as root).
    #[arg(short = 'f')]
    force: bool,
    /// Verbose (umount -v): say what was unmounted.
    #[arg(short = 'v')]
    verbose: bool,
    /// Remount read-only if unmounting fails (umount -r): accepted; a FUSE mount cannot be,
    /// so a failure stays a failure.
    #[arg(short = 'r')]
    read_only_fallback: bool,
    /// The type, as umount(8) passes it to a helper of another name: fuse.minfs or minfs.
    #[arg(short = 't', value_name = "TYPE")]
    fstype: Option<String>,
    /// A mount namespace (umount -N): not supported; refused.
    #[arg(short = 'N', value_name = "NS")]
    namespace: Option<String>,
}

/// The program name's last component.
fn basename(arg0: &OsString) -> String {
    Path::new(arg0)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Runs the helper that `args[0]` names, or `minfs SPEC DIR …` (mount.fuse's form: the first
/// argument an absolute path, which no subcommand is); `None` for plain `minfs`.
pub fn dispatch(args: &[OsString]) -> Option<ExitCode> {
    let name = basename(args.first()?);
    let code = match name.as_str() {
        "mkfs.minfs" => mkfs_main(args),
        "fsck.minfs" => fsck_main("fsck.minfs", args),
        "fsck.fuse.minfs" => fsck_main("fsck.fuse.minfs", args),
        "mount.minfs" => mount_main("mount.minfs", args),
        "mount.fuse.minfs" => mount_main("mount.fuse.minfs", args),
        "umount.fuse.minfs" => umount_main("umount.fuse.minfs", args),
        _ if args
            .get(1)
            .is_some_and(|a| a.to_string_lossy().starts_with('/')) =>
        {
            mount_main("minfs", args)
        }
        _ => return None,
    };
    Some(ExitCode::from(code))
}

/// Parses `args` as `P`, with `usage` as the exit code of a bad invocation (0 for --help and
/// --version).
fn parse<P: Parser>(name: &'static str, args: &[OsString], usage: u8) -> Result<P, u8> {
    let cmd = P::command().name(name).bin_name(name);
    match cmd
        .try_get_matches_from(args)
        .and_then(|m| <P as clap::FromArgMatches>::from_arg_matches(&m))
    {
        Ok(p) => Ok(p),
        Err(e) => {
            let _ = e.print();
            Err(if e.exit_code() == 0 { 0 } else { usage })
        }
    }
}

/// An error of a helper, as `minfs` prints its own.
fn report(name: &str, e: &anyhow::Error) {
    let _ = std::io::stdout().flush();
    eprintln!("{name}: {}", render(e));
}

fn mkfs_main(args: &[OsString]) -> u8 {
    let h = match parse::<MkfsHelper>("mkfs.minfs", args, super::EXIT_USAGE) {
        Ok(h) => h,
        Err(code) => return code,
    };
    match mkfs::run_helper(h.args) {
        Err(usage) => {
            eprintln!("mkfs.minfs: {usage}");
            super::EXIT_USAGE
        }
        Ok(Ok(_)) => 0,
        Ok(Err(e)) => {
            report("mkfs.minfs", &e);
            super::EXIT_FAILURE
        }
    }
}

fn fsck_main(name: &'static str, args: &[OsString]) -> u8 {
    let h = match parse::<FsckHelper>(name, args, fsck::EXIT_USAGE) {
        Ok(h) => h,
        Err(code) => return code,
    };
    match fsck::run_code(h.args) {
        Ok(code) => code,
        Err(e) => {
            report(name, &e);
            fsck::EXIT_OPERATIONAL
        }
    }
}

/// `-t TYPE` given to a helper: it must be minfs's.
fn check_type(name: &str, fstype: Option<&str>) -> Result<(), u8> {
    match fstype {
        None | Some("minfs") | Some("fuse.minfs") => Ok(()),
        Some(other) => {
            eprintln!("{name}: -t {other}: this helper handles type minfs (or fuse.minfs) only");
            Err(mount_exit::USAGE)
        }
    }
}

fn no_namespace(name: &str, ns: Option<&str>) -> Result<(), u8> {
    match ns {
        None => Ok(()),
        Some(ns) => {
            eprintln!(
                "{name}: -N {ns}: mounting in another mount namespace is not supported; run the \
                 command inside it (nsenter -m)"
            );
            Err(mount_exit::USAGE)
        }
    }
}

fn mount_main(name: &'static str, args: &[OsString]) -> u8 {
    let h = match parse::<MountHelper>(name, args, mount_exit::USAGE) {
        Ok(h) => h,
        Err(code) => return code,
    };
    if let Err(code) = check_type(name, h.fstype.as_deref())
        .and_then(|()| no_namespace(name, h.namespace.as_deref()))
    {
        return code;
    }
    let _ = h.no_mtab;
    let mut cfg = crate::fuse::MountConfig::default();
    let ignored = match crate::fuse::options::apply(&mut cfg, &h.options, h.sloppy) {
        Ok(ignored) => ignored,
        Err(e) => {
            eprintln!("{name}: {}: {e}", h.spec.display());
            return mount_exit::FAILURE;
        }
    };
    if h.verbose && !ignored.is_empty() {
        println!("{name}: options without effect: {}", ignored.join(","));
    }
    // nofail, as mount(8) has it for the filesystems it mounts itself: a device that does not
    // exist is not an error (mount(8) leaves that to a helper: it returns the helper's status).
    if ignored.iter().any(|o| o == "nofail") && !h.spec.exists() {
        if h.verbose {
            println!(
                "{name}: {} does not exist; nofail: nothing mounted",
                h.spec.display()
            );
        }
        return mount_exit::OK;
    }
    // The options the server is given: the honoured ones, as the config holds them.
    let honoured: Vec<&str> = [
        (cfg.read_only, "ro"),
        (cfg.noexec, "noexec"),
        (cfg.noatime, "noatime"),
        (cfg.sync, "sync"),
        (cfg.dirsync, "dirsync"),
        (cfg.allow_other, "allow_other"),
    ]
    .into_iter()
    .filter_map(|(on, o)| on.then_some(o))
    .collect();
    let options = if honoured.is_empty() {
        Vec::new()
    } else {
        vec![honoured.join(",")]
    };
    if h.fake {
        return match fake_mount(&h.spec, &h.dir) {
            Ok(()) => {
                if h.verbose {
                    println!(
                        "{name}: -f: would mount {} on {}",
                        h.spec.display(),
                        h.dir.display()
                    );
                }
                mount_exit::OK
            }
            Err(e) => {
                report(name, &e);
                mount_exit::FAILURE
            }
        };
    }
    if let Some(m) = crate::fuse::max_pages::ensure_limit(false).message() {
        if h.verbose {
            println!("{name}: {m}");
        }
    }
    match super::mount::spawn_server(&options, None, &h.spec, &h.dir) {
        Ok(crate::fuse::daemon::Started::Ready(pid)) => {
            if h.verbose {
                println!(
                    "{name}: mounted {} on {} (server pid {pid})",
                    h.spec.display(),
                    h.dir.display()
                );
            }
            mount_exit::OK
        }
        Ok(crate::fuse::daemon::Started::Failed(err)) => {
            // The server's own message ("minfs: mount failed: ...").
            eprint!("{err}");
            mount_exit::FAILURE
        }
        Err(e) => {
            report(name, &e);
            if e.to_string().contains("cannot start the server process")
                || e.to_string().contains("cannot find the minfs executable")
            {
                mount_exit::SYSTEM
            } else {
                mount_exit::FAILURE
            }
        }
    }
}

/// mount -f: what a mount would check first — SPEC holds minfs (opened read-only), DIR is a
/// directory — without mounting.
fn fake_mount(spec: &Path, dir: &Path) -> anyhow::Result<()> {
    use anyhow::Context;
    crate::Filesystem::open(spec, crate::OpenMode::ReadOnly).context("mount failed")?;
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => anyhow::bail!("mount failed: {}: not a directory", dir.display()),
        Err(e) => anyhow::bail!("mount failed: {}: mount point: {e}", dir.display()),
    }
}

fn umount_main(name: &'static str, args: &[OsString]) -> u8 {
    let h = match parse::<UmountHelper>(name, args, mount_exit::USAGE) {
        Ok(h) => h,
        Err(code) => return code,
    };
    if let Err(code) = check_type(name, h.fstype.as_deref())
        .and_then(|()| no_namespace(name, h.namespace.as_deref()))
    {
        return code;
    }
    let _ = (h.no_mtab, h.read_only_fallback);
    let mut flags = nix::mount::MntFlags::empty();
    if h.lazy {
        flags |= nix::mount::MntFlags::MNT_DETACH;
    }
    if h.force {
        flags |= nix::mount::MntFlags::MNT_FORCE;
    }
    match super::umount::unmount_and_wait(&h.dir, flags, 60) {
        Ok(entry) => {
            if h.verbose {
                println!(
                    "{name}: {} unmounted; {} released",
                    entry.mountpoint.display(),
                    entry.source
                );
            }
            mount_exit::OK
        }
        Err(e) => {
            report(name, &e);
            mount_exit::FAILURE
        }
    }
}
