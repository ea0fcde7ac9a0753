//! `minfs write`: stdin into a file.
//!
//! A write that fails changes nothing where that can be known in advance: an input longer than
//! the room from the offset to the end of the file is refused before anything is written. The
//! length of a regular-file input is known up front; a piped input is held in memory (up to
//! [`HOLD_LIMIT`], or the room left if less) before the first byte is written. Only a piped
//! input longer than both is written as it arrives; if it then overruns the file, or a device
//! write fails, the error says exactly which bytes of the file were changed.

use std::io::Read;
use std::process::ExitCode;

use anyhow::{anyhow, bail, Context};

use super::{parse_size, TargetArg};
use crate::{AlignedBuf, FileHandle, Filesystem, OpenMode};

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    target: TargetArg,
    /// File name.
    name: String,
    /// Byte offset in the file (a multiple of the logical sector size).
    #[arg(long, default_value = "0", value_parser = parse_size, allow_hyphen_values = true)]
    offset: u64,
}

/// Bytes per device write.
const CHUNK: usize = 1 << 20;

/// How much of a piped input is held in memory before anything is written.
pub(crate) const HOLD_LIMIT: usize = 64 << 20;

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    let fs = Filesystem::open(&a.target.target, OpenMode::ReadWrite).context("write failed")?;
    let f = fs.open_file(&a.name).context("write failed")?;
    let lss = f.sector_size() as usize;
    let target = a.target.target.display();
    if a.offset % lss as u64 != 0 {
        bail!(
            "write failed: {target}: offset {} is not a multiple of the {lss}-byte logical sector",
            a.offset
        );
    }
    let stdin = std::io::stdin();
    let known_len = regular_file_left(&stdin);
    if let Some(len) = known_len {
        check_room(&f, a.offset, len)
            .map_err(|e| anyhow!("write failed: {target}: {e}; nothing was written"))?;
    }
    // An input whose length is known needs no holding back.
    let hold = if known_len.is_some() { 0 } else { HOLD_LIMIT };
    let total = copy(&mut stdin.lock(), &f, a.offset, hold)
        .map_err(|e| anyhow!("write failed: {target}: {e}"))?;
    println!("wrote {total} bytes to {} at offset {}", a.name, a.offset);
    Ok(ExitCode::SUCCESS)
}

/// The bytes left to read in stdin if it is a regular file (`minfs write … < FILE`).
fn regular_file_left(stdin: &std::io::Stdin) -> Option<u64> {
    use std::io::Seek;
    use std::os::fd::AsFd;
    let file = std::fs::File::from(stdin.as_fd().try_clone_to_owned().ok()?);
    let meta = file.metadata().ok()?;
    if !meta.is_file() {
        return None;
    }
    // The duplicate shares stdin's file position; reading it does not move it.
    let pos = (&file).stream_position().ok()?;
    Some(meta.len().saturating_sub(pos))
}

/// Refuses `len` input bytes at `offset` that do not fit in the file.
fn check_room(f: &FileHandle, offset: u64, len: u64) -> Result<(), String> {
    if len > f.size().saturating_sub(offset) {
        return Err(too_long(f, offset, &format!("{len} bytes")));
    }
    Ok(())
}

/// An input of `len` (a description) does not fit in `f` at `offset`.
fn too_long(f: &FileHandle, offset: u64, len: &str) -> String {
    let size = f.size();
    format!(
        "the input ({len}) does not fit in {:?} at offset {offset}: the file is {size} bytes, \
         {} of them from the offset on; grow it first (minfs grow)",
        f.name(),
        size.saturating_sub(offset)
    )
}

/// Copies `input` into `f` at `offset` and flushes; returns the bytes written.
///
/// Up to `hold` bytes (or the room left plus one, if less) are read before anything is written,
/// so an input that overruns the file within them is refused with the file unchanged. A longer
/// input is written as it arrives; an error after the first write names the bytes changed.
pub(crate) fn copy(
    input: &mut dyn Read,
    f: &FileHandle,
    offset: u64,
    hold: usize,
) -> Result<u64, String> {
    let size = f.size();
    if offset > size {
        return Err(format!(
            "offset {offset} is past the end of {:?} ({size} bytes); nothing was written",
            f.name()
        ));
    }
    let room = size - offset;
    let limit = (hold as u64).min(room + 1) as usize;
    let mut held = Vec::new();
    let eof = read_up_to(input, &mut held, limit)
        .map_err(|e| format!("reading stdin: {e}; nothing was written"))?;
    if held.len() as u64 > room {
        // Say how long the input is, if it ends within the hold (read, not kept).
        let rest = std::io::copy(&mut input.take(hold as u64), &mut std::io::sink()).ok();
        let len = match rest {
            Some(n) if n < hold as u64 => format!("{} bytes", held.len() as u64 + n),
            _ => format!("more than {} bytes", held.len() as u64 + rest.unwrap_or(0)),
        };
        return Err(too_long(f, offset, &len) + "; nothing was written");
    }
    let mut w = Writer {
        f,
        buf: AlignedBuf::zeroed(CHUNK, 4096),
        start: offset,
        at: offset,
    };
    for piece in held.chunks(CHUNK) {
        w.write(piece)?;
    }
    drop(held);
    if !eof {
        // Past the hold: stream, refusing only once the input overruns the file.
        loop {
            let mut n = 0;
            while n < CHUNK {
                match input.read(&mut w.buf[n..]) {
                    Ok(0) => break,
                    Ok(k) => n += k,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(w.changed(&format!("reading stdin: {e}"), 0)),
                }
            }
            if n == 0 {
                break;
            }
            if w.at + n as u64 > size {
                let len = format!("more than {room} bytes");
                return Err(w.changed(&too_long(f, offset, &len), 0));
            }
            w.write_buffered(n)?;
            if n < CHUNK {
                break;
            }
        }
    }
    f.flush()
        .map_err(|e| w.changed(&format!("flushing: {e}"), 0))?;
    Ok(w.at - offset)
}

/// Reads `input` into `out` until EOF or `limit` bytes; returns whether EOF was seen (with
/// exactly `limit` bytes read, the next read finds out).
fn read_up_to(input: &mut dyn Read, out: &mut Vec<u8>, limit: usize) -> std::io::Result<bool> {
    let got = input.take(limit as u64).read_to_end(out)?;
    Ok(got < limit)
}

/// Writes consecutive input pieces into the file, keeping track of what was written.
struct Writer<'a> {
    f: &'a FileHandle,
    buf: AlignedBuf,
    /// File offset of the first input byte.
    start: u64,
    /// File offset of the next input byte.
    at: u64,
}

impl Writer<'_> {
    /// Writes `data` (at most [`CHUNK`] bytes) at the current offset.
    fn write(&mut self, data: &[u8]) -> Result<(), String> {
        self.buf[..data.len()].copy_from_slice(data);
        self.write_buffered(data.len())
    }

    /// Writes the first `n` bytes of the buffer at the current offset. A partial last sector
    /// keeps the file's bytes after the input (read-modify-write).
    fn write_buffered(&mut self, n: usize) -> Result<(), String> {
        let lss = self.f.sector_size() as usize;
        let io_len = n.div_ceil(lss) * lss;
        if io_len != n {
            let mut tail = AlignedBuf::zeroed(lss, 4096);
            let tail_off = self.at + (io_len - lss) as u64;
            self.f
                .read_at(&mut tail, tail_off)
                .map_err(|e| self.changed(&e.to_string(), 0))?;
            let keep = io_len - n;
            self.buf[n..io_len].copy_from_slice(&tail[lss - keep..]);
        }
        self.f
            .write_at(&self.buf[..io_len], self.at)
            .map_err(|e| self.changed(&e.to_string(), n))?;
        self.at += n as u64;
        Ok(())
    }

    /// `why`, and which bytes of the file were changed before it (`maybe` more bytes after
    /// them may hold part of a write that failed).
    fn changed(&self, why: &str, maybe: usize) -> String {
        let name = self.f.name();
        let (start, at) = (self.start, self.at);
        let done = if at == start {
            format!("nothing was written to {name:?}")
        } else {
            format!(
                "bytes {start}..{at} of {name:?} were overwritten with the input's first {} bytes",
                at - start
            )
        };
        let partly = if maybe > 0 {
            format!(
                ", bytes {at}..{} may hold part of the input's next {maybe}",
                at + maybe as u64
            )
        } else {
            String::new()
        };
        let rest = if maybe > 0 || at > start {
            format!("; the rest of {name:?} is unchanged")
        } else {
            String::new()
        };
        format!("{why}; {done}{partly}{rest}")
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::{FormatOptions, MemDevice};

    fn file(size: u64) -> (Filesystem, FileHandle) {
        let dev = Arc::new(MemDevice::new(16 << 20, 512, 4096));
        let fs = Filesystem::format(dev, "mem", &FormatOptions::default()).unwrap();
        fs.create("z", size).unwrap();
        let f = fs.open_file("z").unwrap();
        let pattern: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
        copy(&mut &pattern[..], &f, 0, HOLD_LIMIT).unwrap();
        (fs, f)
    }

    fn contents(f: &FileHandle) -> Vec<u8> {
        let mut buf = AlignedBuf::zeroed(f.size().next_multiple_of(512) as usize, 4096);
        f.read_at(&mut buf, 0).unwrap();
        buf[..f.size() as usize].to_vec()
    }

    #[test]
    fn an_input_that_overruns_within_the_hold_changes_nothing() {
        let (_fs, f) = file(3 << 20);
        let before = contents(&f);
        let input = vec![0xAAu8; (3 << 20) - 4096 + 1];
        let err = copy(&mut &input[..], &f, 4096, HOLD_LIMIT).unwrap_err();
        assert!(err.contains("nothing was written"), "{err}");
        assert!(err.contains("3141632 of them from the offset on"), "{err}");
        assert_eq!(contents(&f), before);
        // The input that just fits is written.
        assert_eq!(
            copy(&mut &input[1..], &f, 4096, HOLD_LIMIT),
            Ok(input.len() as u64 - 1)
        );
    }

    #[test]
    fn an_input_that_overruns_past_the_hold_names_the_bytes_written() {
        let (_fs, f) = file(3 << 20);
        let before = contents(&f);
        let input = vec![0xAAu8; (3 << 20) + 100];
        // Hold 1 MiB: the first 1 MiB is written before the input is seen to be too long, then
        // 1 MiB more as it streams, and the third MiB overruns.
        let err = copy(&mut &input[..], &f, 512, 1 << 20).unwrap_err();
        let written = 2u64 << 20;
        assert!(
            err.contains(&format!(
                "bytes 512..{} of \"z\" were overwritten with the input's first {written} bytes; the rest of \"z\" is unchanged",
                512 + written
            )),
            "{err}"
        );
        let after = contents(&f);
        assert!(after[512..512 + written as usize]
            .iter()
            .all(|&b| b == 0xAA));
        assert_eq!(after[..512], before[..512]);
        assert_eq!(
            after[512 + written as usize..],
            before[512 + written as usize..]
        );
    }

    #[test]
    fn a_hold_of_exactly_the_input_still_sees_its_end() {
        let (_fs, f) = file(1 << 20);
        let input = vec![1u8; 4096];
        assert_eq!(copy(&mut &input[..], &f, 0, 4096), Ok(4096));
        assert_eq!(copy(&mut &input[..], &f, 0, 0), Ok(4096));
        assert!(contents(&f)[..4096].iter().all(|&b| b == 1));
    }
}
