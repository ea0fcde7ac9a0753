//! `minfs umount`: unmounts a minfs mount and waits until its server has exited, so the
//! target is free for `mkfs`, `fsck -y` or another mount as soon as this returns.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context};

use crate::fuse::mounts;

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
    let (entry, pids) = mounts::unmount(&a.mountpoint, a.lazy).context("umount failed")?;
    let mp = entry.mountpoint.display();
    if a.lazy {
        println!(
            "{mp}: detached; the server releases {} once the files open on it are closed",
            entry.source
        );
        return Ok(ExitCode::SUCCESS);
    }
    if !mounts::wait_exited(&pids, Duration::from_secs(a.timeout)) {
        let left: Vec<String> = pids
            .iter()
            .filter(|&&p| !mounts::exited(p))
            .map(|p| p.to_string())
            .collect();
        bail!(
            "umount failed: {mp}: unmounted, but its server (pid {}) has not exited after {} s; \
             {} stays held until it does",
            left.join(", "),
            a.timeout,
            entry.source
        );
    }
    println!("{mp}: unmounted; {} released", entry.source);
    Ok(ExitCode::SUCCESS)
}
