//! `minfs umount`: unmounts a minfs mount and waits until its server has exited, so the
//! target is free for `mkfs`, `fsck -y` or another mount as soon as this returns.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context};

use nix::mount::MntFlags;

use crate::fuse::mounts::{self, MountEntry};
use crate::fuse::FSTYPE;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Detach now even with files open; the server exits once they are closed (not waited for).
    #[arg(short, long)]
    lazy: bool,
    /// Seconds to wait for the server to flush, release the target and exit.
    #[arg(long, default_value_t = 60, value_name = "SECONDS")]
    timeout: u64,
    /// Where a minfs filesystem is mounted.
    #[arg(value_name = "MOUNTPOINT")]
    mountpoint: PathBuf,
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    let flags = if a.lazy {
        MntFlags::MNT_DETACH
    } else {
        MntFlags::empty()
    };
    let entry = unmount_and_wait(&a.mountpoint, flags, a.timeout)?;
    let mp = entry.mountpoint.display();
    if a.lazy {
        println!(
            "{mp}: detached; the server releases {} once the files open on it are closed",
            entry.source
        );
        return Ok(ExitCode::SUCCESS);
    }
    println!("{mp}: unmounted; {} released", entry.source);
    Ok(ExitCode::SUCCESS)
}

/// Unmounts the minfs mount at `mountpoint` with umount2's `flags` and, unless lazily
/// (MNT_DETACH), waits up to `timeout` seconds for its server to flush, release the target and
/// exit. Shared by `minfs umount` and `umount.fuse.minfs`, which umount(8) runs.
pub(crate) fn unmount_and_wait(
    mountpoint: &std::path::Path,
    flags: MntFlags,
    timeout: u64,
) -> anyhow::Result<MountEntry> {
    let (entry, pids) =
        mounts::unmount_with_flags(mountpoint, flags, FSTYPE).context("umount failed")?;
    if flags.contains(MntFlags::MNT_DETACH) {
        return Ok(entry);
    }
    if !mounts::wait_exited(&pids, Duration::from_secs(timeout)) {
        let left: Vec<String> = pids
            .iter()
            .filter(|&&p| !mounts::exited(p))
            .map(|p| p.to_string())
            .collect();
        bail!(
            "umount failed: {}: unmounted, but its server (pid {}) has not exited after {timeout} s; \
             {} stays held until it does",
            entry.mountpoint.display(),
            left.join(", "),
            entry.source
        );
    }
    Ok(entry)
}
