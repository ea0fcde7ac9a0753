//! `minfs write`: stdin into a file.

use std::io::Read;
use std::process::ExitCode;

use anyhow::{bail, Context};

use super::{parse_size, TargetArg};
use crate::{AlignedBuf, Filesystem, OpenMode};

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    target: TargetArg,
    /// File name.
    name: String,
    /// Byte offset in the file (a multiple of the logical sector size).
    #[arg(long, default_value = "0", value_parser = parse_size)]
    offset: u64,
}

const CHUNK: usize = 1 << 20;

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    let fs = Filesystem::open(&a.target.target, OpenMode::ReadWrite).context("write failed")?;
    let f = fs.open_file(&a.name).context("write failed")?;
    let lss = f.sector_size() as usize;
    if a.offset % lss as u64 != 0 {
        bail!(
            "write failed: {}: offset {} is not a multiple of the {lss}-byte logical sector",
            a.target.target.display(),
            a.offset
        );
    }
    let mut stdin = std::io::stdin().lock();
    let mut buf = AlignedBuf::zeroed(CHUNK, 4096);
    let mut at = a.offset;
    let mut total = 0u64;
    loop {
        // Fill the chunk as far as stdin goes.
        let mut n = 0;
        while n < CHUNK {
            match stdin.read(&mut buf[n..]) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(anyhow::Error::new(e).context("reading stdin")),
            }
        }
        if n == 0 {
            break;
        }
        if at + n as u64 > f.size() {
            bail!(
                "write failed: {}: {} bytes at offset {at} go past the end of {:?} ({} bytes); grow it first",
                a.target.target.display(),
                n,
                a.name,
                f.size()
            );
        }
        let io_len = n.div_ceil(lss) * lss;
        if io_len != n {
            // The last sector is partial: keep the file's bytes after the input.
            let mut tail = AlignedBuf::zeroed(lss, 4096);
            let tail_off = at + (io_len - lss) as u64;
            f.read_at(&mut tail, tail_off).context("write failed")?;
            let keep = io_len - n;
            buf[n..io_len].copy_from_slice(&tail[lss - keep..]);
        }
        f.write_at(&buf[..io_len], at).context("write failed")?;
        at += n as u64;
        total += n as u64;
        if n < CHUNK {
            break;
        }
    }
    f.flush().context("write failed")?;
    println!("wrote {total} bytes to {} at offset {}", a.name, a.offset);
    Ok(ExitCode::SUCCESS)
}
