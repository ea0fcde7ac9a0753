//! `minfs cat`.

use std::process::ExitCode;

use anyhow::Context;

use super::{out, TargetArg};
use crate::{AlignedBuf, Filesystem, OpenMode};

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    target: TargetArg,
    /// File name.
    name: String,
}

/// Bytes read per request.
const CHUNK: usize = 1 << 20;

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    let fs = Filesystem::open(&a.target.target, OpenMode::ReadOnly).context("cat failed")?;
    let f = fs.open_file(&a.name).context("cat failed")?;
    let size = f.size();
    let lss = u64::from(f.sector_size());
    let mut buf = AlignedBuf::zeroed(CHUNK, 4096);
    let mut at = 0u64;
    while at < size {
        let want = (size - at).min(CHUNK as u64);
        let io_len = want.div_ceil(lss) * lss;
        f.read_at(&mut buf[..io_len as usize], at)
            .context("cat failed")?;
        if !out(&buf[..want as usize])? {
            break;
        }
        at += want;
    }
    Ok(ExitCode::SUCCESS)
}
