//! Scrubbing a minfs target: finding unreadable sectors before a read needs them.
//!
//! A scrub first runs the metadata checks of `fsck -n` ([`crate::fsck::check_device`]), then
//! reads, in device order, both metadata slots and every extent the active slot's file table
//! records (and with [`Options::all`] the unused part of the reserved area and the free space
//! too), with large reads ([`Options::chunk`], 4 MiB by default) into an aligned buffer: on a
//! [`crate::FileDevice`] these are O_DIRECT reads straight from the device. A read that fails
//! with a media error ([`crate::device::is_media_error`], `EIO`) is narrowed down to the
//! logical sectors that cannot be read: its range is split into up to 16 pieces, each read
//! again, and each failing piece split again, down to single logical sectors — about
//! ⌈log16(chunk / sector)⌉ failing reads per bad sector, which matters on a drive that spends
//! seconds on each. Runs of unreadable sectors are reported as [`BadRange`]s, each with what
//! it belongs to ([`Owner`]): the file and the byte range in it, a metadata slot, free space or
//! the unused reserved area.
//!
//! A scrub never writes, and it opens its target read-only without the lock a read-write
//! opener takes ([`crate::OpenMode::ReadOnly`]), so it runs beside a writer (`minfs mount`, an
//! in-process Cannyls). What it reads is the file table of the moment it starts: extents
//! allocated later are not read, and space freed meanwhile is still read as the file's. While
//! a writer commits, one slot may be caught half-written or one commit behind; the metadata
//! check is therefore repeated a few times ([`METADATA_TRIES`]) and only a problem seen every
//! time is reported.
//!
//! What a scrub cannot find: minfs keeps no checksums of file data, so a sector that reads
//! back without an error but holds the wrong bytes (silent corruption, a misdirected write) is
//! not detected.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::device::{is_media_error, BlockDevice, FileDevice, OpenMode};
use crate::error::{Error, Result, SlotId};
use crate::format::{BLOCK_SIZE, DATA_START, SLOT_SIZE};
use crate::fs::{choose_active, read_slots};
use crate::fsck::{self, Problem};
use crate::sys::AlignedBuf;

/// The default size of one read: 4 MiB.
pub const DEFAULT_CHUNK: usize = 4 << 20;

/// How many pieces a failed read is split into when narrowing it down.
pub const FANOUT: u64 = 16;

/// How often the metadata check runs before a problem is reported (see the module docs).
pub const METADATA_TRIES: usize = 5;

/// How a scrub runs.
#[derive(Debug, Clone)]
pub struct Options {
    /// Read the free space and the unused part of the reserved area too.
    pub all: bool,
    /// Start at this device byte offset (a multiple of the logical sector size): what an
    /// interrupted scrub reported as reached. Everything before it is skipped.
    pub from: u64,
    /// Bytes per read (a multiple of 4096, at least 4096).
    pub chunk: usize,
    /// Read at most this many bytes per second on average (`None`: as fast as the device).
    pub rate: Option<f64>,
    /// Read only this file's extents (no slots, no free space); [`Error::FileNotFound`] when
    /// the active file table has no such file.
    pub file: Option<String>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            all: false,
            from: 0,
            chunk: DEFAULT_CHUNK,
            rate: None,
            file: None,
        }
    }
}

/// What an unreadable range belongs to.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Owner {
    /// Bytes of a file: `file_offset` is where the range starts in the file. A range at or past
    /// `file_size` is preallocated space that holds none of the file's data yet.
    File {
        name: String,
        file_offset: u64,
        file_size: u64,
    },
    /// A metadata slot (the other slot still holds the metadata; `fsck -y` rewrites this one).
    Metadata { slot: SlotId },
    /// The reserved area between slot B and the data area (unused; read with `--all`).
    Reserved,
    /// Free space (read with `--all`).
    Free,
}

impl std::fmt::Display for Owner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Owner::File {
                name, file_offset, ..
            } => write!(f, "file {name:?} at byte {file_offset}"),
            Owner::Metadata { slot } => write!(f, "metadata {slot}"),
            Owner::Reserved => f.write_str("reserved area (unused)"),
            Owner::Free => f.write_str("free space"),
        }
    }
}

/// A run of unreadable logical sectors, all belonging to one [`Owner`].
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct BadRange {
    /// Byte offset on the device.
    pub device_offset: u64,
    /// Length in bytes (a multiple of the logical sector size).
    pub length: u64,
    /// What it belongs to (for a file, where in it the range starts).
    pub owner: Owner,
}

impl BadRange {
    /// One past the last byte on the device.
    pub fn device_end(&self) -> u64 {
        self.device_offset + self.length
    }
}

impl std::fmt::Display for BadRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "unreadable: device bytes {}..{} ({} bytes): ",
            self.device_offset,
            self.device_end(),
            self.length
        )?;
        match &self.owner {
            Owner::File {
                name,
                file_offset,
                file_size,
            } => {
                write!(
                    f,
                    "file {name:?} bytes {file_offset}..{}",
                    file_offset + self.length
                )?;
                if *file_offset >= *file_size {
                    write!(f, " (preallocated, past its size of {file_size})")?;
                }
                Ok(())
            }
            other => write!(f, "{other}"),
        }
    }
}

/// Where a scrub is, for a progress display.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// Bytes covered so far (read, or found unreadable).
    pub done: u64,
    /// Bytes to cover in all (from [`Options::from`]).
    pub total: u64,
    /// The device offset reached (the next byte to read).
    pub offset: u64,
    /// Unreadable logical sectors found so far.
    pub bad_sectors: u64,
}

/// What a scrub found.
#[derive(Debug, Clone)]
pub struct Report {
    /// The target as named.
    pub target: String,
    /// The metadata check (problems seen on every try; see the module docs).
    pub metadata: fsck::Report,
    /// Whether the data was read at all (not when no metadata slot is valid: nothing says
    /// where the files are).
    pub scanned: bool,
    /// [`Options::all`].
    pub all: bool,
    /// The logical sector size: the granularity of the bad ranges.
    pub sector_size: u32,
    /// Where the scrub started ([`Options::from`]).
    pub from: u64,
    /// The device offset reached: everything from `from` up to it that the scrub reads was
    /// read. When interrupted, pass it as [`Options::from`] to go on.
    pub reached: u64,
    /// Whether it read everything it had to (else it was stopped).
    pub complete: bool,
    /// Bytes it had to cover (from `from`).
    pub bytes_total: u64,
    /// Bytes it covered (read without error, or found unreadable).
    pub bytes_done: u64,
    /// Extents, slots and free runs read (or started).
    pub ranges: u64,
    /// Reads that failed with a media error but whose every piece then read fine (a
    /// transient error, counted apart).
    pub transient_errors: u64,
    /// The unreadable ranges, in device order, none overlapping.
    pub bad: Vec<BadRange>,
    /// How long it took.
    pub duration: Duration,
}

impl Report {
    /// Unreadable logical sectors found.
    pub fn bad_sectors(&self) -> u64 {
        self.bad_bytes() / u64::from(self.sector_size.max(1))
    }

    /// Unreadable bytes found.
    pub fn bad_bytes(&self) -> u64 {
        self.bad.iter().map(|b| b.length).sum()
    }

    /// The files with an unreadable range, sorted, each once.
    pub fn files_hit(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .bad
            .iter()
            .filter_map(|b| match &b.owner {
                Owner::File { name, .. } => Some(name.clone()),
                _ => None,
            })
            .collect();
        v.sort();
        v.dedup();
        v
    }

    /// Average rate over the run, bytes per second.
    pub fn rate(&self) -> f64 {
        let s = self.duration.as_secs_f64();
        if s > 0.0 {
            self.bytes_done as f64 / s
        } else {
            0.0
        }
    }
}

/// What one planned read range belongs to.
#[derive(Debug, Clone)]
enum SegOwner {
    File {
        name: String,
        file_offset: u64,
        size: u64,
    },
    Metadata(SlotId),
    Reserved,
    Free,
}

/// A range of the device to read.
#[derive(Debug, Clone)]
struct Segment {
    offset: u64,
    len: u64,
    owner: SegOwner,
}

impl Segment {
    fn owner_at(&self, at: u64) -> Owner {
        match &self.owner {
            SegOwner::File {
                name,
                file_offset,
                size,
            } => Owner::File {
                name: name.clone(),
                file_offset: file_offset + (at - self.offset),
                file_size: *size,
            },
            SegOwner::Metadata(slot) => Owner::Metadata { slot: *slot },
            SegOwner::Reserved => Owner::Reserved,
            SegOwner::Free => Owner::Free,
        }
    }
}

/// The metadata check, repeated while it finds problems (at most [`METADATA_TRIES`] times,
/// 50 ms apart): the first clean result, or the last one with only the problems every try
/// saw.
fn check_metadata(dev: &dyn BlockDevice, target: &str) -> Result<fsck::Report> {
    let mut report = fsck::check_device(dev, target)?;
    let mut seen: Vec<Problem> = report.problems.clone();
    for _ in 1..METADATA_TRIES {
        if seen.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
        report = fsck::check_device(dev, target)?;
        seen.retain(|p| report.problems.contains(p));
        if report.problems.is_empty() {
            seen.clear();
        }
    }
    report.problems = seen;
    Ok(report)
}

/// The ranges to read, in device order: both slots, every file's extents (file table of the
/// active slot), and with `all` the reserved area and the free runs.
fn plan(dev: &dyn BlockDevice, target: &str, opts: &Options) -> Result<Option<Vec<Segment>>> {
    let all = opts.all;
    let slots = read_slots(dev, target)?;
    let Some(active) = choose_active(&slots) else {
        return Ok(None);
    };
    let act = slots[active.index()]
        .as_ref()
        .expect("active slot is valid");
    if let Some(name) = &opts.file {
        let Some(f) = act.files.iter().find(|f| &f.name == name) else {
            return Err(Error::FileNotFound {
                target: target.to_string(),
                name: name.clone(),
            });
        };
        let mut segs = Vec::new();
        push_file_segments(&mut segs, f);
        return Ok(Some(in_device_order(segs)));
    }
    let mut segs = vec![
        Segment {
            offset: SlotId::A.offset(),
            len: SLOT_SIZE,
            owner: SegOwner::Metadata(SlotId::A),
        },
        Segment {
            offset: SlotId::B.offset(),
            len: SLOT_SIZE,
            owner: SegOwner::Metadata(SlotId::B),
        },
    ];
    if all {
        let start = SlotId::B.offset() + SLOT_SIZE;
        segs.push(Segment {
            offset: start,
            len: DATA_START - start,
            owner: SegOwner::Reserved,
        });
        for e in act.alloc.free_runs() {
            if e.len > 0 {
                segs.push(Segment {
                    offset: e.byte_offset(),
                    len: e.byte_len(),
                    owner: SegOwner::Free,
                });
            }
        }
    }
    for f in &act.files {
        push_file_segments(&mut segs, f);
    }
    Ok(Some(in_device_order(segs)))
}

/// Each extent of `f` as a segment it owns, with the extent's offset within the file.
fn push_file_segments(segs: &mut Vec<Segment>, f: &crate::format::FileEntry) {
    let mut file_offset = 0;
    for e in &f.extents {
        segs.push(Segment {
            offset: e.byte_offset(),
            len: e.byte_len(),
            owner: SegOwner::File {
                name: f.name.clone(),
                file_offset,
                size: f.size,
            },
        });
        file_offset += e.byte_len();
    }
}

/// `segs` without empty segments, in device order.
fn in_device_order(mut segs: Vec<Segment>) -> Vec<Segment> {
    segs.retain(|s| s.len > 0);
    segs.sort_by_key(|s| s.offset);
    segs
}

/// Scrubs the filesystem on `path`, opened read-only without a lock (see the module docs).
/// `stop` is polled between reads: once it is set the scrub ends early and its report says
/// how far it got ([`Report::reached`]). `progress` is called after every read.
pub fn scrub(
    path: &std::path::Path,
    opts: &Options,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(&Progress),
) -> Result<Report> {
    let dev = FileDevice::open(path, OpenMode::ReadOnly)?;
    scrub_device(&dev, &path.display().to_string(), opts, stop, progress)
}

/// [`scrub`] on a device. Never writes to it.
pub fn scrub_device(
    dev: &dyn BlockDevice,
    target: &str,
    opts: &Options,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(&Progress),
) -> Result<Report> {
    let started = Instant::now();
    let sector = u64::from(dev.logical_sector_size().max(1));
    if opts.from % sector != 0 {
        return Err(Error::Unaligned {
            target: target.to_string(),
            what: "scrub start (--from)",
            value: opts.from,
            align: sector,
        });
    }
    if opts.from > dev.len() {
        return Err(Error::InvalidArgument {
            target: target.to_string(),
            reason: format!(
                "scrub start (--from) {} is past the end of the device ({} bytes)",
                opts.from,
                dev.len()
            ),
        });
    }
    if opts.chunk < BLOCK_SIZE as usize || opts.chunk % BLOCK_SIZE as usize != 0 {
        return Err(Error::InvalidArgument {
            target: target.to_string(),
            reason: format!(
                "read size {} is not a positive multiple of {BLOCK_SIZE}",
                opts.chunk
            ),
        });
    }
    if let Some(r) = opts.rate {
        if !(r.is_finite() && r > 0.0) {
            return Err(Error::InvalidArgument {
                target: target.to_string(),
                reason: format!("rate {r} bytes/s is not a positive number"),
            });
        }
    }
    let metadata = check_metadata(dev, target)?;
    let mut report = Report {
        target: target.to_string(),
        metadata,
        scanned: false,
        all: opts.all,
        sector_size: sector as u32,
        from: opts.from,
        reached: opts.from,
        complete: true,
        bytes_total: 0,
        bytes_done: 0,
        ranges: 0,
        transient_errors: 0,
        bad: Vec::new(),
        duration: Duration::ZERO,
    };
    let Some(mut segs) = plan(dev, target, opts)? else {
        report.duration = started.elapsed();
        return Ok(report);
    };
    report.scanned = true;
    // Only what lies at or after `from`, and inside the device.
    for s in &mut segs {
        let end = (s.offset + s.len).min(dev.len());
        if s.offset < opts.from {
            let skip = opts.from.min(end) - s.offset;
            if let SegOwner::File { file_offset, .. } = &mut s.owner {
                *file_offset += skip;
            }
            s.offset += skip;
        }
        s.len = end.saturating_sub(s.offset);
    }
    segs.retain(|s| s.len > 0);
    report.bytes_total = segs.iter().map(|s| s.len).sum();
    let align = (sector as usize).max(4096);
    let mut scanner = Scanner {
        dev,
        target,
        sector,
        buf: AlignedBuf::zeroed(opts.chunk, align),
        stop,
        rate: opts.rate,
        started: Instant::now(),
        read_bytes: 0,
        bad_sectors: Vec::new(),
    };
    let total = report.bytes_total;
    let mut done = 0u64;
    let mut reached = opts.from;
    'segments: for seg in &segs {
        report.ranges += 1;
        let end = seg.offset + seg.len;
        let mut at = seg.offset;
        while at < end {
            if stop.load(Ordering::Relaxed) {
                reached = at;
                report.complete = false;
                break 'segments;
            }
            let n = (end - at).min(opts.chunk as u64);
            let before = scanner.bad_sectors.len();
            match scanner.read(at, n)? {
                Outcome::Read => {}
                Outcome::Bad => {
                    if let Some(stopped) = scanner.narrow(at, n)? {
                        // Interrupted while narrowing: resume at the unread piece.
                        done += stopped - at;
                        record(&mut report.bad, seg, &scanner.bad_sectors[before..], sector);
                        reached = stopped;
                        report.complete = false;
                        break 'segments;
                    }
                    if scanner.bad_sectors.len() == before {
                        report.transient_errors += 1;
                    }
                }
            }
            record(&mut report.bad, seg, &scanner.bad_sectors[before..], sector);
            at += n;
            done += n;
            reached = at;
            progress(&Progress {
                done,
                total,
                offset: at,
                bad_sectors: scanner.bad_sectors.len() as u64,
            });
        }
    }
    if report.complete {
        reached = segs.last().map_or(opts.from, |s| s.offset + s.len);
    }
    report.reached = reached.max(opts.from);
    report.bytes_done = done;
    report.duration = started.elapsed();
    Ok(report)
}

/// Adds the unreadable sectors `bad` (device offsets, increasing, all inside `seg`) to
/// `out` as ranges, merging a sector into the previous range when it continues it in the
/// same segment.
fn record(out: &mut Vec<BadRange>, seg: &Segment, bad: &[u64], sector: u64) {
    for &at in bad {
        if let Some(last) = out.last_mut() {
            if last.device_end() == at && at > seg.offset {
                last.length += sector;
                continue;
            }
        }
        out.push(BadRange {
            device_offset: at,
            length: sector,
            owner: seg.owner_at(at),
        });
    }
}

enum Outcome {
    Read,
    Bad,
}

/// The reading side of a scrub: one aligned buffer, the throttle, the unreadable sectors.
struct Scanner<'a> {
    dev: &'a dyn BlockDevice,
    target: &'a str,
    sector: u64,
    buf: AlignedBuf,
    stop: &'a AtomicBool,
    rate: Option<f64>,
    started: Instant,
    /// Bytes asked of the device (for the throttle), failed reads included.
    read_bytes: u64,
    /// Device offsets of the unreadable logical sectors, in the order found (increasing).
    bad_sectors: Vec<u64>,
}

impl Scanner<'_> {
    /// Reads `[at, at + n)`: fine, or failed with a media error; any other error ends the
    /// scrub.
    fn read(&mut self, at: u64, n: u64) -> Result<Outcome> {
        self.throttle(n);
        let res = self.dev.read_at(&mut self.buf[..n as usize], at);
        self.read_bytes += n;
        match res {
            Ok(()) => Ok(Outcome::Read),
            Err(e) if is_media_error(&e) => Ok(Outcome::Bad),
            Err(e) => Err(Error::io(
                self.target,
                format!("scrub: reading {n} bytes at byte {at}"),
                e,
            )),
        }
    }

    /// Narrows a failed read of `[at, at + n)` down to its unreadable logical sectors (see
    /// the module docs). `Some(offset)` when stopped before the end: everything before
    /// `offset` was narrowed.
    fn narrow(&mut self, at: u64, n: u64) -> Result<Option<u64>> {
        if n <= self.sector {
            self.bad_sectors.push(at);
            return Ok(None);
        }
        let piece = (n / FANOUT).div_ceil(self.sector).max(1) * self.sector;
        let end = at + n;
        let mut p = at;
        while p < end {
            if self.stop.load(Ordering::Relaxed) {
                return Ok(Some(p));
            }
            let len = piece.min(end - p);
            if let Outcome::Bad = self.read(p, len)? {
                if let Some(stopped) = self.narrow(p, len)? {
                    return Ok(Some(stopped));
                }
            }
            p += len;
        }
        Ok(None)
    }

    /// Sleeps so that reading `n` more bytes keeps the average at most the rate.
    fn throttle(&self, n: u64) {
        let Some(rate) = self.rate else { return };
        let due = self.started + Duration::from_secs_f64((self.read_bytes + n) as f64 / rate);
        loop {
            let now = Instant::now();
            if now >= due || self.stop.load(Ordering::Relaxed) {
                return;
            }
            std::thread::sleep((due - now).min(Duration::from_millis(100)));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::device::FaultDevice;
    use crate::fs::{Filesystem, FormatOptions};

    /// A 64 MiB filesystem on a fault device with files `a` (3 MiB, written in two grows so
    /// that it has two extents around `b`) and `b` (1 MiB).
    fn fixture() -> (Arc<FaultDevice>, Filesystem) {
        let dev = Arc::new(FaultDevice::new(64 << 20, 512, 4096));
        let fs = Filesystem::format(
            dev.clone() as Arc<dyn BlockDevice>,
            "fault",
            &FormatOptions::default(),
        )
        .unwrap();
        fs.create("a", 1 << 20).unwrap();
        fs.create("b", 1 << 20).unwrap();
        fs.grow("a", 3 << 20).unwrap();
        (dev, fs)
    }

    fn run(dev: &FaultDevice, opts: &Options) -> Report {
        scrub_device(dev, "fault", opts, &AtomicBool::new(false), &mut |_| {}).unwrap()
    }

    #[test]
    fn a_clean_target_reads_every_extent_and_finds_nothing() {
        let (dev, fs) = fixture();
        let r = run(&dev, &Options::default());
        assert!(r.metadata.is_clean() && r.scanned && r.complete);
        assert!(r.bad.is_empty());
        // Two slots, a's two extents, b's one.
        assert_eq!(r.ranges, 5);
        assert_eq!(r.bytes_total, 2 * SLOT_SIZE + (4 << 20));
        assert_eq!(r.bytes_done, r.bytes_total);
        let all = run(
            &dev,
            &Options {
                all: true,
                ..Options::default()
            },
        );
        assert_eq!(all.bytes_total, DATA_START + fs.info().block_count * 4096);
    }

    #[test]
    fn bad_sectors_are_named_with_their_file_once_each() {
        let (dev, fs) = fixture();
        let a = fs.stat("a").unwrap();
        let b = fs.stat("b").unwrap();
        assert_eq!(a.extents.len(), 2, "{a:?}");
        // Two neighbouring sectors in a's second extent, one in b, one in free space.
        let a2 = a.extents[1].offset;
        dev.make_unreadable(a2 + 8192, 1024);
        dev.make_unreadable(b.extents[0].offset + 512 * 1000, 512);
        let free = fs.info().total_bytes - (1 << 20);
        dev.make_unreadable(free, 512);
        let writes = dev.counts().writes;
        let r = run(
            &dev,
            &Options {
                chunk: 1 << 20,
                ..Options::default()
            },
        );
        assert_eq!(dev.counts().writes, writes, "a scrub never writes");
        assert_eq!(r.bad.len(), 2, "{:#?}", r.bad);
        assert_eq!(
            r.bad[0],
            BadRange {
                device_offset: b.extents[0].offset + 512_000,
                length: 512,
                owner: Owner::File {
                    name: "b".into(),
                    file_offset: 512_000,
                    file_size: 1 << 20
                }
            }
        );
        assert_eq!(
            r.bad[1],
            BadRange {
                device_offset: a2 + 8192,
                length: 1024,
                owner: Owner::File {
                    name: "a".into(),
                    file_offset: a.extents[0].length + 8192,
                    file_size: 3 << 20
                }
            }
        );
        assert_eq!(r.bad_sectors(), 3);
        assert_eq!(r.files_hit(), vec!["a".to_string(), "b".to_string()]);
        // With --all the free one is found too, as free space.
        let all = run(
            &dev,
            &Options {
                all: true,
                ..Options::default()
            },
        );
        assert_eq!(all.bad.len(), 3);
        assert_eq!(all.bad[2].owner, Owner::Free);
        assert_eq!(all.bad[2].device_offset, free);
        // Rewriting the sectors clears them: the next scrub is clean.
        let f = fs.open_file("a").unwrap();
        let buf = AlignedBuf::zeroed(4096, 4096);
        f.write_at(&buf, a.extents[0].length + 8192).unwrap();
        let g = fs.open_file("b").unwrap();
        g.write_at(&buf[..512], 512_000).unwrap();
        assert!(run(&dev, &Options::default()).bad.is_empty());
    }

    #[test]
    fn one_file_only() {
        let (dev, fs) = fixture();
        let a = fs.stat("a").unwrap();
        let b = fs.stat("b").unwrap();
        dev.make_unreadable(a.extents[1].offset, 512);
        dev.make_unreadable(b.extents[0].offset, 512);
        let only = |name: &str| {
            run(
                &dev,
                &Options {
                    file: Some(name.into()),
                    ..Options::default()
                },
            )
        };
        let r = only("a");
        assert_eq!(r.bytes_total, 3 << 20);
        assert_eq!(r.files_hit(), vec!["a".to_string()]);
        assert_eq!(only("b").files_hit(), vec!["b".to_string()]);
        let e = scrub_device(
            dev.as_ref(),
            "fault",
            &Options {
                file: Some("nope".into()),
                ..Options::default()
            },
            &AtomicBool::new(false),
            &mut |_| {},
        )
        .unwrap_err();
        assert!(e.to_string().contains("no file named \"nope\""), "{e}");
    }

    #[test]
    fn an_unreadable_slot_is_reported_as_metadata() {
        let (dev, _fs) = fixture();
        dev.make_unreadable(SLOT_SIZE + 4096, 512);
        let r = run(&dev, &Options::default());
        assert_eq!(r.bad.len(), 1);
        assert_eq!(r.bad[0].owner, Owner::Metadata { slot: SlotId::B });
        assert!(!r.metadata.is_clean(), "fsck sees it too");
    }

    #[test]
    fn from_skips_what_was_read_and_stop_reports_where_to_resume() {
        let (dev, fs) = fixture();
        let a = fs.stat("a").unwrap();
        let first = a.extents[0].offset;
        dev.make_unreadable(first + 4096, 512);
        // From past that sector: not found.
        let r = run(
            &dev,
            &Options {
                from: first + 8192,
                ..Options::default()
            },
        );
        assert!(r.bad.is_empty());
        assert_eq!(r.bytes_total, (4 << 20) - 8192);
        // Stopped after the first read: resuming from `reached` covers the rest, and the two
        // runs together cover everything exactly once.
        let stop = AtomicBool::new(false);
        let opts = Options {
            chunk: 64 << 10,
            ..Options::default()
        };
        let r1 = scrub_device(dev.as_ref(), "fault", &opts, &stop, &mut |p| {
            if p.done >= 3 * (64 << 10) {
                stop.store(true, Ordering::Relaxed)
            }
        })
        .unwrap();
        assert!(!r1.complete);
        let r2 = run(
            &dev,
            &Options {
                from: r1.reached,
                ..opts.clone()
            },
        );
        assert!(r2.complete);
        assert_eq!(
            r1.bytes_done + r2.bytes_done,
            run(&dev, &opts).bytes_total,
            "{} + {}",
            r1.bytes_done,
            r2.bytes_done
        );
        assert_eq!(r1.bad.len() + r2.bad.len(), 1);
        // A start that is not sector-aligned, or past the end, is refused naming it.
        let e = scrub_device(
            dev.as_ref(),
            "fault",
            &Options {
                from: 100,
                ..Options::default()
            },
            &AtomicBool::new(false),
            &mut |_| {},
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("--from") && e.to_string().contains("100"),
            "{e}"
        );
    }

    #[test]
    fn narrowing_costs_few_failing_reads() {
        let (dev, fs) = fixture();
        let a = fs.stat("a").unwrap();
        dev.make_unreadable(a.extents[0].offset + 123 * 512, 512);
        let reads = dev.counts().reads;
        let r = run(&dev, &Options::default());
        assert_eq!(r.bad_sectors(), 1);
        // 4 MiB chunk → 256 KiB → 16 KiB → 1 KiB → 512 B: each level 16 reads at most.
        // Reads besides: two slots for the check, two for the plan, five ranges.
        let extra = dev.counts().reads - reads - 4 - 5;
        assert!(extra > 0 && extra <= 3 * FANOUT, "{extra} reads");
    }

    #[test]
    fn a_device_error_other_than_a_media_error_ends_the_scrub() {
        let (dev, _fs) = fixture();
        dev.inject(crate::device::fault::Fault {
            kind: crate::device::fault::OpKind::Read,
            nth: dev.counts().reads + 4,
            mode: crate::device::fault::FaultMode::Once,
        });
        let e = scrub_device(
            dev.as_ref(),
            "fault",
            &Options::default(),
            &AtomicBool::new(false),
            &mut |_| {},
        )
        .unwrap_err();
        assert!(e.to_string().contains("scrub: reading"), "{e}");
    }
}
