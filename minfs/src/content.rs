//! Whether a target holds data: mkfs refuses to overwrite non-zero bytes it cannot name unless
//! forced. The decision reads a bounded sample of the target, so it costs about the same on a
//! 2 MiB image and on a 20 TB disk (see `docs/SYSTEM.md`, "What mkfs refuses"):
//!
//! - the first and the last [`EDGE_LEN`] bytes (partition tables, superblocks and RAID/LVM
//!   metadata sit there);
//! - [`SAMPLES`] reads of [`SAMPLE_LEN`] bytes spread evenly over the whole target;
//! - on an image file, the first [`SAMPLE_LEN`] bytes of each of its first [`MAX_EXTENTS`]
//!   data extents, found with `lseek(SEEK_DATA/SEEK_HOLE)`; holes are skipped without reading,
//!   so a sparse 1 TB image costs a handful of reads.
//!
//! A target that passes may still hold non-zero bytes between the samples (data of a few MiB
//! in the middle of a block device, say); all-zero, sparse and freshly fallocated images pass.

use std::io;
use std::os::fd::AsRawFd;

use crate::device::{BlockDevice, FileDevice, TargetKind};
use crate::sys::AlignedBuf;

/// Bytes read at each end of the target.
pub const EDGE_LEN: u64 = 1024 * 1024;
/// Evenly spaced samples across the target.
pub const SAMPLES: u64 = 256;
/// Bytes per sample.
pub const SAMPLE_LEN: u64 = 64 * 1024;
/// Data extents of an image file whose start is read (beyond them, only the even samples).
pub const MAX_EXTENTS: usize = 1024;

/// The first non-zero byte found by the sampled reads, and how much was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// Byte offset of the first non-zero byte among those read.
    pub offset: u64,
    /// Bytes read to decide.
    pub bytes_read: u64,
}

/// What the scan read when it found nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clean {
    pub bytes_read: u64,
    /// Reads made (holes are not read).
    pub reads: u64,
}

/// The data ranges of `dev` (sorted, disjoint): the whole target for a block device; for an
/// image the ranges `SEEK_DATA` reports, at most [`MAX_EXTENTS`] of them (the rest as one).
fn data_ranges(dev: &FileDevice) -> Vec<(u64, u64)> {
    let len = dev.len();
    if dev.kind() == TargetKind::BlockDevice || len == 0 {
        return vec![(0, len)];
    }
    use nix::unistd::{lseek, Whence};
    let fd = dev.file().as_raw_fd();
    let mut out = Vec::new();
    let mut pos: u64 = 0;
    while pos < len {
        let start = match lseek(fd, pos as i64, Whence::SeekData) {
            Ok(s) => s as u64,
            // ENXIO: no data after pos.
            Err(nix::errno::Errno::ENXIO) => break,
            // SEEK_DATA unsupported: all of it is data.
            Err(_) => return vec![(0, len)],
        };
        if out.len() == MAX_EXTENTS {
            out.push((start, len));
            break;
        }
        let end = match lseek(fd, start as i64, Whence::SeekHole) {
            Ok(e) => (e as u64).min(len),
            Err(_) => len,
        };
        if end <= start {
            break;
        }
        out.push((start, end));
        pos = end;
    }
    out
}

/// The sampled reads: `(offset, len)`, sorted by offset, inside the data ranges, aligned to
/// `align` (the logical sector size).
fn plan(len: u64, ranges: &[(u64, u64)], align: u64) -> Vec<(u64, u64)> {
    let mut wanted: Vec<(u64, u64)> = Vec::new();
    wanted.push((0, EDGE_LEN.min(len)));
    wanted.push((len.saturating_sub(EDGE_LEN), len));
    if len > 2 * EDGE_LEN {
        let step = len / SAMPLES;
        for i in 0..SAMPLES {
            let at = i * step;
            wanted.push((at, (at + SAMPLE_LEN).min(len)));
        }
    }
    for &(s, e) in ranges.iter().take(MAX_EXTENTS) {
        wanted.push((s, (s + SAMPLE_LEN).min(e)));
    }
    // Intersect with the data ranges, align, sort and merge.
    let mut reads: Vec<(u64, u64)> = Vec::new();
    for (s, e) in wanted {
        for &(rs, re) in ranges {
            let (a, b) = (s.max(rs), e.min(re));
            if a < b {
                let a = a / align * align;
                let b = b
                    .div_ceil(align)
                    .saturating_mul(align)
                    .min(len / align * align);
                if a < b {
                    reads.push((a, b));
                }
            }
        }
    }
    reads.sort_unstable();
    let mut merged: Vec<(u64, u64)> = Vec::new();
    for (s, e) in reads {
        match merged.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => merged.push((s, e)),
        }
    }
    merged.into_iter().map(|(s, e)| (s, e - s)).collect()
}

/// Reads the sample of `dev` described in the module's note; the first non-zero byte found
/// (lowest offset), or what was read when everything was zero.
pub fn scan(dev: &FileDevice) -> io::Result<Result<Clean, Found>> {
    let align = u64::from(dev.logical_sector_size()).max(512);
    let ranges = data_ranges(dev);
    let reads = plan(dev.len(), &ranges, align);
    let chunk = EDGE_LEN as usize;
    let mut buf = AlignedBuf::zeroed(chunk, 4096);
    let (mut bytes_read, mut n) = (0u64, 0u64);
    for (off, len) in reads {
        let mut done = 0u64;
        while done < len {
            let piece = (len - done).min(chunk as u64) as usize;
            let b = &mut buf[..piece];
            dev.read_at(b, off + done)?;
            bytes_read += piece as u64;
            n += 1;
            if let Some(i) = b.iter().position(|&x| x != 0) {
                return Ok(Err(Found {
                    offset: off + done + i as u64,
                    bytes_read,
                }));
            }
            done += piece as u64;
        }
    }
    Ok(Ok(Clean {
        bytes_read,
        reads: n,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_covers_edges_samples_and_extents() {
        const T: u64 = 1 << 40;
        // A sparse 1 TiB image with one extent of 4 MiB in the middle.
        let mid = T / 2 + 12345 * 4096;
        let p = plan(T, &[(mid, mid + (4 << 20))], 512);
        assert_eq!(p, vec![(mid, SAMPLE_LEN)]);
        // A block device: edges plus 256 samples (the first sample is inside the first edge).
        let p = plan(T, &[(0, T)], 512);
        assert_eq!(p.len(), 2 + SAMPLES as usize - 1);
        assert_eq!(p[0], (0, EDGE_LEN));
        assert_eq!(*p.last().unwrap(), (T - EDGE_LEN, EDGE_LEN));
        // A small target is read whole, once.
        assert_eq!(plan(3 << 20, &[(0, 3 << 20)], 512), vec![(0, 3 << 20)]);
        // Unaligned extents are widened to sectors, and stay inside the target.
        let p = plan(10 << 20, &[(1000, 3000)], 512);
        assert_eq!(p, vec![(512, 2560)]);
    }
}
