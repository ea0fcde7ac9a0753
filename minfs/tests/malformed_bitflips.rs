//! Reliability suite 4: malformed metadata. Every single-bit flip of both 64 KiB metadata
//! slots, flips behind re-sealed checksums, and random multi-byte garbage in both slots at once.
//! Open must either use the other (intact) slot with exactly the original files, or accept a
//! consistent state, or return a `Corrupted`/`NoValidSlot`/`NotMinfs` error that names what is
//! wrong — never panic, never read outside the device (nor, when opening, outside the two slots).
//!
//! `tests/malformed.rs` already throws proptest-generated random bytes and re-sealed edits at
//! both slots; this suite is the exhaustive, counted counterpart and checks more per case: the
//! exact files and generation open ends up with, the error's wording, and every read and write
//! open makes (through [`Checked`], a wrapper around the real devices that records each request
//! and refuses, counting it, anything outside the device or misaligned).
//!
//! # What runs, and why it is split this way
//! A full `Filesystem::open_device` decodes the intact slot in full (the zero check of the file
//! table's padding and the CRCs dominate): about 70 µs with the workspace's test profile
//! (minfs at opt-level 1, crc32c at 3), about 0.5 ms in a plain debug build. 1,048,576 of them
//! would take more than a minute even so, hence:
//! 1. **Every bit of both slots** (2 × 524,288 flips), at the decode level: a flip in the
//!    superblock block goes through `slot::decode`, a flip in the file table through
//!    `file_table::decode` against the (unchanged, already decoded) superblock — the call
//!    `slot::decode` makes next. Each must be refused as a bad magic or checksum of exactly the
//!    structure that was hit.
//! 2. **Full opens** (`open_device` on a `MemDevice`) for every bit of both superblock blocks
//!    (65,536, read-only), and, read-write (so the damaged slot is rewritten on open), every
//!    bit of both file tables' header, records and CRC plus every 61st bit of their padding.
//!    Each must open the other slot with the original files and generation, read exactly the
//!    two slots, and write nothing but the damaged slot.
//! 3. **Flips behind a re-sealed checksum** (both CRCs and the superblock's `file_table_crc`
//!    recomputed, so the decoders' field validation is what is tested): every bit of both
//!    superblocks (but the CRC fields) and of both file tables' header and records, plus a
//!    stride of the padding, decoded; those of the active slot's fields, header and records
//!    also fully opened. Each is either accepted as a consistent state (extents inside the
//!    data area and not overlapping, allocation matching the size, valid unique names; then
//!    every file's first and last sector is read) or refused with an error naming the field
//!    and value; open itself must always succeed, since the other slot is intact.
//! 4. **Garbage in both slots at once**: fixed cases (zeroed, swapped, magic only) and
//!    `MINFS_GARBAGE_CASES` (default 5000) seeded random ones — random ranges, scattered bytes,
//!    whole random slots, and re-sealed variants. Open returns `NoValidSlot` naming both slots'
//!    problems, `NotMinfs` when neither slot has the magic, or a consistent filesystem.
//! 5. **An on-disk image** opened through `FileDevice` (O_DIRECT) for a sample of flips: both
//!    slots hold the last commit, so a flip in either changes nothing.
//!
//! The last line printed is the counts line of the reliability script.

use std::collections::BTreeMap;
use std::io;
use std::os::unix::fs::FileExt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use minfs::format::superblock::{field as sbf, Superblock};
use minfs::format::{
    file_table, name_problem, slot, BLOCK_SIZE, FILE_TABLE_OFFSET, FILE_TABLE_SIZE, SLOT_SIZE,
    SUPERBLOCK_MAGIC, SUPERBLOCK_SIZE,
};
use minfs::{
    AlignedBuf, BlockDevice, Corruption, Error, FileDevice, FileStat, Filesystem, FormatOptions,
    MemDevice, OpenMode, SlotId,
};
use testutil::XorShift;

/// Size of the in-memory target.
const DEV_LEN: u64 = 8 << 20;
const SLOT: usize = SLOT_SIZE as usize;
/// Both slots: the metadata region open reads.
const META: usize = 2 * SLOT;
const TARGET: &str = "bitflip-target";

// ---------------------------------------------------------------------------------------------
// A device wrapper that checks and records every request.

#[derive(Debug, Default)]
struct IoLog {
    reads: Vec<(u64, usize)>,
    writes: Vec<(u64, usize)>,
    /// Requests outside the device or misaligned (refused, never passed on).
    bad: Vec<String>,
}

/// Wraps a real device: forwards every request that keeps the `BlockDevice` contract, records
/// it, and refuses (and records) one that does not. `read_only` overrides the inner device's.
#[derive(Debug)]
struct Checked<D> {
    inner: D,
    read_only: AtomicBool,
    log: Mutex<IoLog>,
}

impl<D: BlockDevice> Checked<D> {
    fn new(inner: D) -> Checked<D> {
        Checked {
            inner,
            read_only: AtomicBool::new(false),
            log: Mutex::new(IoLog::default()),
        }
    }

    fn take_log(&self) -> IoLog {
        std::mem::take(&mut *self.log.lock().unwrap_or_else(|e| e.into_inner()))
    }

    fn check(&self, what: &str, ptr: *const u8, len: usize, offset: u64) -> io::Result<()> {
        let lss = u64::from(self.inner.logical_sector_size());
        let end = offset.checked_add(len as u64);
        let problem = if end.is_none_or(|e| e > self.inner.len()) {
            Some(format!(
                "{what} of {len} bytes at {offset} past the device's {} bytes",
                self.inner.len()
            ))
        } else if offset % lss != 0 || len as u64 % lss != 0 || ptr as usize as u64 % lss != 0 {
            Some(format!(
                "{what} of {len} bytes at {offset} (buffer {ptr:p}) not aligned to {lss}"
            ))
        } else {
            None
        };
        let mut log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        match problem {
            Some(p) => {
                log.bad.push(p.clone());
                Err(io::Error::new(io::ErrorKind::InvalidInput, p))
            }
            None => {
                if what == "read" {
                    log.reads.push((offset, len));
                } else {
                    log.writes.push((offset, len));
                }
                Ok(())
            }
        }
    }

    /// Writes `meta` (both slots) to the inner device, unrecorded.
    fn put_meta(&self, meta: &[u8]) {
        let mut buf = AlignedBuf::zeroed(META, 4096);
        buf.copy_from_slice(meta);
        self.inner.write_at(&buf, 0).unwrap();
    }

    /// Both slots as the inner device holds them.
    fn get_meta(&self) -> Vec<u8> {
        let mut buf = AlignedBuf::zeroed(META, 4096);
        self.inner.read_at(&mut buf, 0).unwrap();
        buf.to_vec()
    }
}

impl<D: BlockDevice> BlockDevice for Checked<D> {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.check("read", buf.as_ptr(), buf.len(), offset)?;
        self.inner.read_at(buf, offset)
    }
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        if self.is_read_only() {
            self.log
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .bad
                .push(format!(
                    "write of {} bytes at {offset} to a read-only device",
                    buf.len()
                ));
            return Err(io::Error::new(io::ErrorKind::PermissionDenied, "read-only"));
        }
        self.check("write", buf.as_ptr(), buf.len(), offset)?;
        self.inner.write_at(buf, offset)
    }
    fn flush(&self) -> io::Result<()> {
        self.inner.flush()
    }
    fn len(&self) -> u64 {
        self.inner.len()
    }
    fn logical_sector_size(&self) -> u32 {
        self.inner.logical_sector_size()
    }
    fn physical_sector_size(&self) -> u32 {
        self.inner.physical_sector_size()
    }
    fn is_read_only(&self) -> bool {
        self.read_only.load(Ordering::Relaxed) || self.inner.is_read_only()
    }
}

// ---------------------------------------------------------------------------------------------
// Counting.

/// Counters by name, and the first few failures in words.
#[derive(Debug, Default)]
struct Tally {
    n: BTreeMap<&'static str, u64>,
    failures: Vec<String>,
}

impl Tally {
    fn add(&mut self, key: &'static str) {
        *self.n.entry(key).or_default() += 1;
    }
    fn get(&self, key: &str) -> u64 {
        self.n.get(key).copied().unwrap_or(0)
    }
    /// Counts a failure of kind `key` (one of [`FAILURE_KEYS`]).
    fn fail(&mut self, key: &'static str, what: String) {
        debug_assert!(FAILURE_KEYS.contains(&key));
        self.add(key);
        if self.failures.len() < 20 {
            self.failures.push(format!("{key}: {what}"));
        }
    }
    fn merge(&mut self, other: Tally) {
        for (k, v) in other.n {
            *self.n.entry(k).or_default() += v;
        }
        for f in other.failures {
            if self.failures.len() < 20 {
                self.failures.push(f);
            }
        }
    }
}

const FAILURE_KEYS: [&str; 5] = [
    "wrong data",
    "unclear errors",
    "stray writes",
    "out-of-range reads",
    "panics",
];

fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(non-string panic)".into())
}

/// Whether the message of `c` names what is wrong: the structure, field, record or file, and
/// the offending value.
fn explains(c: &Corruption) -> bool {
    let m = c.to_string();
    let has = |s: &str| m.contains(s);
    match c {
        Corruption::BadMagic { structure, .. } => has(structure) && has("magic"),
        Corruption::BadChecksum {
            structure, stored, ..
        } => has(structure) && has("checksum") && has(&format!("{stored:#010x}")),
        Corruption::UnsupportedVersion { found, .. } => has(&found.to_string()),
        Corruption::BadField {
            structure,
            field,
            value,
            ..
        } => has(structure) && has(&format!("`{field}`")) && has(&value.to_string()),
        Corruption::BadName { index, reason, .. } => has(&format!("record {index}")) && has(reason),
        Corruption::TruncatedRecord { index, end, .. } => {
            has(&format!("record {index}")) && has(&end.to_string())
        }
        Corruption::ExtentOutOfRange {
            name, start, len, ..
        } => has(&format!("{name:?}")) && has(&start.to_string()) && has(&len.to_string()),
        Corruption::OverlappingExtents { a, b, block } => {
            has(&format!("{a:?}")) && has(&format!("{b:?}")) && has(&block.to_string())
        }
        Corruption::SizeMismatch { name, size, .. } => {
            has(&format!("{name:?}")) && has(&size.to_string())
        }
        Corruption::DuplicateName { name } => has(&format!("{name:?}")),
        Corruption::BeyondDevice {
            total_bytes,
            device_len,
        } => has(&total_bytes.to_string()) && has(&device_len.to_string()),
        _ => false,
    }
}

/// Whether an accepted state is consistent: what a valid slot promises. `None` if so, else why.
fn inconsistency(fs: &Filesystem, dev_len: u64) -> Option<String> {
    let info = fs.info();
    if info.total_bytes > dev_len || info.data_start < 2 * SLOT_SIZE {
        return Some(format!(
            "geometry: data_start {}, total_bytes {} on {dev_len} bytes",
            info.data_start, info.total_bytes
        ));
    }
    if info.files.len() > 256 {
        return Some(format!("{} files", info.files.len()));
    }
    let mut ranges = Vec::new();
    for f in &info.files {
        if let Some(p) = name_problem(&f.name) {
            return Some(format!("name {:?}: {p}", f.name));
        }
        let alloc: u64 = f.extents.iter().map(|e| e.length).sum();
        if alloc != f.allocated || alloc != f.size.div_ceil(BLOCK_SIZE) * BLOCK_SIZE {
            return Some(format!("{:?}: size {} in {alloc} bytes", f.name, f.size));
        }
        for e in &f.extents {
            if e.length == 0
                || e.offset < info.data_start
                || e.offset
                    .checked_add(e.length)
                    .is_none_or(|x| x > info.total_bytes)
            {
                return Some(format!("{:?}: extent {e:?} outside the data area", f.name));
            }
            ranges.push((e.offset, e.offset + e.length, f.name.clone()));
        }
    }
    ranges.sort();
    for w in ranges.windows(2) {
        if w[0].1 > w[1].0 {
            return Some(format!("{:?} and {:?} overlap", w[0].2, w[1].2));
        }
    }
    None
}

/// Reads the first and last sector of every file (through the checking device).
fn read_every_file(fs: &Filesystem) -> Result<(), String> {
    let mut buf = AlignedBuf::zeroed(4096, 4096);
    for f in fs.list() {
        if f.size == 0 {
            continue;
        }
        let h = fs.open_file(&f.name).map_err(|e| e.to_string())?;
        let lss = u64::from(h.sector_size());
        let last = (f.size - 1) / lss * lss;
        for at in [0, last] {
            h.read_at(&mut buf[..lss as usize], at)
                .map_err(|e| format!("reading {:?} at {at}: {e}", f.name))?;
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The images.

/// Recomputes the CRCs of one slot: with `table`, the file table's and the superblock's copy
/// of it, then always the superblock's.
fn reseal(slot: &mut [u8], table: bool) {
    if table {
        let ft = &mut slot[FILE_TABLE_OFFSET..];
        let crc = crc32c::crc32c(&ft[..FILE_TABLE_SIZE - 4]);
        ft[FILE_TABLE_SIZE - 4..].copy_from_slice(&crc.to_le_bytes());
        slot[sbf::FILE_TABLE_CRC].copy_from_slice(&crc.to_le_bytes());
    }
    let crc = crc32c::crc32c(&slot[..SUPERBLOCK_SIZE - 4]);
    slot[SUPERBLOCK_SIZE - 4..SUPERBLOCK_SIZE].copy_from_slice(&crc.to_le_bytes());
}

/// The reference filesystem, made through the library: several files, one in two extents, an
/// empty one, a 64-byte UTF-8 name, a hole left by a removed file; then a rewrite. Both slots
/// hold the last commit (the same generation).
struct Base {
    image: Vec<u8>,
    files: Vec<FileStat>,
    generation: [u64; 2],
    active: SlotId,
    /// Per slot: the decoded superblock and the bytes of the file table's header + records.
    sb: [Superblock; 2],
    records_end: [usize; 2],
}

fn build_base() -> Base {
    let dev = Arc::new(MemDevice::new(DEV_LEN, 512, 4096));
    let fs = Filesystem::format(
        dev.clone(),
        "base",
        &FormatOptions {
            label: "bit-flips".into(),
            ..Default::default()
        },
    )
    .unwrap();
    fs.create("a", 100_000).unwrap();
    fs.create("tmp", 40_000).unwrap();
    fs.create("b", 5).unwrap();
    fs.grow("a", 300_000).unwrap();
    fs.create("empty", 0).unwrap();
    fs.create(&"é".repeat(32), 1 << 20).unwrap();
    fs.remove("tmp").unwrap();
    fs.create("c", 9000).unwrap();
    fs.rewrite_metadata(1).unwrap();
    let files = fs.list();
    assert!(files.iter().any(|f| f.extents.len() > 1), "{files:?}");
    drop(fs);
    let image = dev.snapshot();
    let mut generation = [0; 2];
    let mut sb = Vec::new();
    let mut records_end = [0; 2];
    for id in SlotId::BOTH {
        let s = id.index();
        let decoded = slot::decode(&image[s * SLOT..(s + 1) * SLOT], id, DEV_LEN).unwrap();
        generation[s] = decoded.sb.generation;
        records_end[s] =
            FILE_TABLE_OFFSET + file_table::HEADER_SIZE + decoded.sb.file_table_len as usize;
        sb.push(decoded.sb);
    }
    let active = if generation[1] > generation[0] {
        SlotId::B
    } else {
        SlotId::A
    };
    Base {
        image,
        files,
        generation,
        active,
        sb: [sb[0].clone(), sb[1].clone()],
        records_end,
    }
}

/// What one open did.
struct Opened {
    result: std::thread::Result<Result<Filesystem, Error>>,
    log: IoLog,
}

fn open<D: BlockDevice + 'static>(dev: &Arc<Checked<D>>, writable: bool, target: &str) -> Opened {
    dev.read_only.store(!writable, Ordering::Relaxed);
    dev.take_log();
    let d: Arc<dyn BlockDevice> = dev.clone();
    let result = catch_unwind(AssertUnwindSafe(|| Filesystem::open_device(d, target)));
    Opened {
        result,
        log: dev.take_log(),
    }
}

/// Which writes an open may make: none, the given slot's, or the slot it did not choose.
#[derive(Debug, Clone, Copy)]
enum Writes {
    None,
    Slot(SlotId),
    Inactive,
}

/// Checks the requests of an open: exactly the two slots read, nothing refused, and only the
/// writes `rule` allows (`chosen` is the slot the open chose, if it succeeded).
fn judge_io(t: &mut Tally, case: &str, log: &IoLog, rule: Writes, chosen: Option<SlotId>) {
    for b in &log.bad {
        t.fail("out-of-range reads", format!("{case}: {b}"));
    }
    let mut reads = log.reads.clone();
    reads.sort();
    if reads != [(0, SLOT), (SLOT_SIZE, SLOT)] {
        t.fail(
            "out-of-range reads",
            format!("{case}: open read {reads:?}, not the two slots"),
        );
    }
    for &(off, len) in &log.writes {
        let allowed = match (rule, chosen) {
            (Writes::Slot(s), Some(c)) => off == s.offset() && c == s.other(),
            (Writes::Inactive, Some(c)) => off == c.other().offset(),
            _ => false,
        };
        if !allowed || len != SLOT || log.writes.len() > 1 {
            t.fail(
                "stray writes",
                format!("{case}: open wrote {len} bytes at {off}"),
            );
        }
    }
}

/// The slot an open chose and its generation (a heal of the other slot copies the state with
/// its generation and leaves the chosen slot active).
fn chosen(fs: &Filesystem) -> (SlotId, u64) {
    let info = fs.info();
    (info.active_slot, info.generation)
}

/// Checks an open that must succeed: it must choose slot `expect.0` with generation `expect.1`
/// and files `expect.2`, or, if `expect` is `None`, any consistent state. Returns the
/// filesystem and the slot and generation it chose.
fn judge_open(
    t: &mut Tally,
    case: &str,
    o: Opened,
    expect: Option<(SlotId, u64, &[FileStat])>,
    rule: Writes,
) -> Option<(Filesystem, SlotId, u64)> {
    let fs = match o.result {
        Err(p) => {
            judge_io(t, case, &o.log, rule, None);
            t.fail("panics", format!("{case}: {}", panic_text(&*p)));
            return None;
        }
        Ok(Err(e)) => {
            judge_io(t, case, &o.log, rule, None);
            t.fail("wrong data", format!("{case}: open failed: {e}"));
            return None;
        }
        Ok(Ok(fs)) => fs,
    };
    let (slot, generation) = chosen(&fs);
    judge_io(t, case, &o.log, rule, Some(slot));
    let files = fs.list();
    match expect {
        Some((want_slot, want_gen, want_files)) => {
            if slot != want_slot || generation != want_gen || files != want_files {
                t.fail(
                    "wrong data",
                    format!(
                        "{case}: opened {slot} generation {generation} with {} files, expected {want_slot} generation {want_gen} with {} files",
                        files.len(),
                        want_files.len()
                    ),
                );
            }
        }
        None => {
            if let Some(why) = inconsistency(&fs, DEV_LEN) {
                t.fail(
                    "wrong data",
                    format!("{case}: accepted an inconsistent state: {why}"),
                );
            }
        }
    }
    Some((fs, slot, generation))
}

/// The files of a decoded slot as `Filesystem::list` shows them (by name).
fn stats_of(files: &[minfs::format::FileEntry]) -> Vec<FileStat> {
    let mut v: Vec<FileStat> = files
        .iter()
        .map(|f| FileStat {
            name: f.name.clone(),
            size: f.size,
            allocated: f.allocated_blocks() * BLOCK_SIZE,
            extents: f
                .extents
                .iter()
                .map(|e| minfs::ExtentInfo {
                    offset: e.byte_offset(),
                    length: e.byte_len(),
                })
                .collect(),
        })
        .collect();
    v.sort_by(|a, b| a.name.cmp(&b.name));
    v
}

/// Runs `f` on every case, spread over the machine's cores; each worker has its own device
/// holding the base image.
fn parallel<T: Sync>(
    base: &Base,
    cases: &[T],
    f: impl Fn(&mut Tally, &Arc<Checked<MemDevice>>, &T) + Sync,
) -> Tally {
    let threads = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .clamp(1, 8);
    let next = AtomicUsize::new(0);
    let tallies: Vec<Tally> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let dev = Arc::new(Checked::new(MemDevice::from_bytes(
                        base.image.clone(),
                        512,
                        4096,
                    )));
                    let mut t = Tally::default();
                    loop {
                        let start = next.fetch_add(256, Ordering::Relaxed);
                        if start >= cases.len() {
                            break;
                        }
                        for c in &cases[start..(start + 256).min(cases.len())] {
                            f(&mut t, &dev, c);
                        }
                    }
                    t
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    let mut all = Tally::default();
    for t in tallies {
        all.merge(t);
    }
    all
}

// ---------------------------------------------------------------------------------------------
// The parts.

/// Part 1: every bit of both slots, decoded.
fn every_bit_decoded(base: &Base) -> Tally {
    // Cases: (slot, first bit) of runs of 4096 bits.
    let cases: Vec<(usize, usize)> = (0..2)
        .flat_map(|s| (0..SLOT * 8).step_by(4096).map(move |b| (s, b)))
        .collect();
    parallel(base, &cases, |t, _dev, &(s, first)| {
        let id = SlotId::BOTH[s];
        let mut buf = base.image[s * SLOT..(s + 1) * SLOT].to_vec();
        for bit in first..first + 4096 {
            let (byte, mask) = (bit / 8, 1u8 << (bit % 8));
            buf[byte] ^= mask;
            let r = catch_unwind(AssertUnwindSafe(|| {
                if byte < SUPERBLOCK_SIZE {
                    slot::decode(&buf, id, DEV_LEN).map(|_| ())
                } else {
                    file_table::decode(&buf[FILE_TABLE_OFFSET..], &base.sb[s]).map(|_| ())
                }
            }));
            buf[byte] ^= mask;
            t.add("bit flips");
            let case = || format!("{id} byte {byte} bit {}", bit % 8);
            match r {
                Err(p) => t.fail("panics", format!("{}: {}", case(), panic_text(&*p))),
                Ok(Ok(())) => t.fail("wrong data", format!("{}: flip went unnoticed", case())),
                Ok(Err(c)) => {
                    t.add("corrupted errors");
                    let (structure, magic) = if byte < SUPERBLOCK_SIZE {
                        ("superblock", byte < 8)
                    } else {
                        ("file table", byte - FILE_TABLE_OFFSET < 8)
                    };
                    let right = match &c {
                        Corruption::BadMagic { structure: st, .. } => magic && *st == structure,
                        Corruption::BadChecksum { structure: st, .. } => !magic && *st == structure,
                        _ => false,
                    };
                    if !right || !explains(&c) {
                        t.fail("unclear errors", format!("{}: {c}", case()));
                    }
                }
            }
        }
    })
}

/// Part 2: full opens of single-bit flips; the other slot must be used, unchanged.
fn full_opens(base: &Base) -> Tally {
    let mut cases: Vec<(usize, usize)> = Vec::new();
    for s in 0..2 {
        // Every bit of the superblock block.
        cases.extend((0..SUPERBLOCK_SIZE * 8).map(|b| (s, b)));
        // Every bit of the file table's header, records and CRC; a stride of its padding.
        cases.extend((FILE_TABLE_OFFSET * 8..base.records_end[s] * 8).map(|b| (s, b)));
        cases.extend(((SLOT - 4) * 8..SLOT * 8).map(|b| (s, b)));
        cases.extend(
            (base.records_end[s] * 8..(SLOT - 4) * 8)
                .step_by(61)
                .map(|b| (s, b)),
        );
    }
    parallel(base, &cases, |t, dev, &(s, bit)| {
        let id = SlotId::BOTH[s];
        let (byte, mask) = (bit / 8, 1u8 << (bit % 8));
        let writable = byte >= SUPERBLOCK_SIZE;
        let mut meta = base.image[..META].to_vec();
        meta[s * SLOT + byte] ^= mask;
        dev.put_meta(&meta);
        let case = format!("open with {id} byte {byte} bit {} flipped", bit % 8);
        let other = id.other();
        let o = open(dev, writable, TARGET);
        t.add("full opens");
        let fs = judge_open(
            t,
            &case,
            o,
            Some((other, base.generation[other.index()], &base.files)),
            if writable {
                Writes::Slot(id)
            } else {
                Writes::None
            },
        );
        if let Some((fs, _, _)) = fs {
            t.add("opened via other slot");
            drop(fs);
            if writable {
                // The damaged slot was healed from the other one: valid, the same generation.
                let now = dev.get_meta();
                match slot::decode(&now[s * SLOT..(s + 1) * SLOT], id, DEV_LEN) {
                    Ok(r) if r.sb.generation == base.generation[other.index()] => {}
                    Ok(r) => t.fail(
                        "wrong data",
                        format!("{case}: rewritten with generation {}", r.sb.generation),
                    ),
                    Err(e) => t.fail("wrong data", format!("{case}: not rewritten: {e}")),
                }
            }
        }
        dev.put_meta(&base.image[..META]);
    })
}

/// Part 3: flips behind re-sealed checksums.
fn resealed_flips(base: &Base) -> Tally {
    // (slot, bit, open fully)
    let mut cases: Vec<(usize, usize, bool)> = Vec::new();
    for s in 0..2 {
        let full = SlotId::BOTH[s] == base.active;
        for byte in 0..SUPERBLOCK_SIZE - 4 {
            if sbf::FILE_TABLE_CRC.contains(&byte) {
                continue; // recomputed by the reseal
            }
            let is_field = byte < sbf::PADDING.start || byte % 127 == 0;
            for bit in 0..8 {
                cases.push((s, byte * 8 + bit, full && is_field));
            }
        }
        for byte in FILE_TABLE_OFFSET..base.records_end[s] {
            for bit in 0..8 {
                cases.push((s, byte * 8 + bit, full));
            }
        }
        for (i, byte) in (base.records_end[s]..SLOT - 4).step_by(61).enumerate() {
            cases.push((s, byte * 8 + i % 8, full && i % 16 == 0));
        }
    }
    parallel(base, &cases, |t, dev, &(s, bit, full)| {
        let id = SlotId::BOTH[s];
        let (byte, mask) = (bit / 8, 1u8 << (bit % 8));
        let mut buf = base.image[s * SLOT..(s + 1) * SLOT].to_vec();
        buf[byte] ^= mask;
        reseal(&mut buf, byte >= SUPERBLOCK_SIZE);
        let case = format!("{id} byte {byte} bit {} flipped and resealed", bit % 8);
        t.add("resealed flips");
        let decoded = catch_unwind(AssertUnwindSafe(|| slot::decode(&buf, id, DEV_LEN)));
        let decoded = match decoded {
            Err(p) => {
                t.fail("panics", format!("{case}: {}", panic_text(&*p)));
                return;
            }
            Ok(d) => d,
        };
        match &decoded {
            Ok(_) => t.add("resealed accepted"),
            Err(c) => {
                t.add("resealed rejected");
                if !explains(c) {
                    t.fail("unclear errors", format!("{case}: {c}"));
                }
            }
        }
        if !full {
            return;
        }
        let mut meta = base.image[..META].to_vec();
        meta[s * SLOT..(s + 1) * SLOT].copy_from_slice(&buf);
        dev.put_meta(&meta);
        t.add("resealed opens");
        let o = open(dev, true, TARGET);
        // Open must succeed: on the flipped slot if it decodes (and is newer), else on the
        // other one with the original files. Only the slot not chosen may be rewritten.
        if let Some((fs, slot, generation)) = judge_open(t, &case, o, None, Writes::Inactive) {
            let files = fs.list();
            if slot == id {
                let same = decoded
                    .as_ref()
                    .is_ok_and(|d| d.sb.generation == generation && stats_of(&d.files) == files);
                if !same {
                    t.fail(
                        "wrong data",
                        format!("{case}: opened {id}, which does not decode to these files"),
                    );
                }
            } else {
                let other = id.other();
                if generation != base.generation[other.index()] || files != base.files {
                    t.fail(
                        "wrong data",
                        format!("{case}: fell back to different files"),
                    );
                }
                t.add("resealed fell back");
            }
            if let Err(e) = read_every_file(&fs) {
                t.fail("wrong data", format!("{case}: {e}"));
            }
            drop(fs);
            for b in dev.take_log().bad {
                t.fail("out-of-range reads", format!("{case}: reading files: {b}"));
            }
        }
        dev.put_meta(&base.image[..META]);
    })
}

/// One garbage case: how both slots are mangled.
#[derive(Debug, Clone)]
enum Garbage {
    Zeroed,
    Swapped,
    MagicOnly,
    Random { seed: u64 },
}

fn mangle(base: &Base, g: &Garbage) -> Vec<u8> {
    let mut meta = base.image[..META].to_vec();
    match g {
        Garbage::Zeroed => meta.fill(0),
        Garbage::Swapped => {
            let (a, b) = meta.split_at_mut(SLOT);
            a.swap_with_slice(b);
        }
        Garbage::MagicOnly => {
            meta.fill(0);
            for s in 0..2 {
                meta[s * SLOT..s * SLOT + 8].copy_from_slice(&SUPERBLOCK_MAGIC);
            }
        }
        Garbage::Random { seed } => {
            let mut r = XorShift(seed | 1);
            let kind = r.next() % 6;
            for s in 0..2 {
                let slot = &mut meta[s * SLOT..(s + 1) * SLOT];
                match kind {
                    // A random range of random bytes.
                    0 | 1 => {
                        let len = 2 + (r.next() % 4095) as usize;
                        let at = (r.next() as usize) % (SLOT - len);
                        for b in &mut slot[at..at + len] {
                            *b = r.next() as u8;
                        }
                    }
                    // Scattered random bytes, biased to the fields and records.
                    2 | 3 => {
                        for _ in 0..2 + r.next() % 31 {
                            let at = match r.next() % 3 {
                                0 => (r.next() % 160) as usize,
                                1 => FILE_TABLE_OFFSET + (r.next() % 400) as usize,
                                _ => (r.next() as usize) % SLOT,
                            };
                            slot[at] = r.next() as u8;
                        }
                    }
                    // A whole random slot.
                    4 => slot.iter_mut().for_each(|b| *b = r.next() as u8),
                    // A random value in a random superblock field.
                    _ => {
                        let (_, f) = &minfs::format::superblock::LAYOUT
                            [(r.next() as usize) % (minfs::format::superblock::LAYOUT.len() - 2)];
                        let v = match r.next() % 4 {
                            0 => u64::MAX,
                            1 => 0,
                            2 => 1 << (r.next() % 64),
                            _ => r.next(),
                        };
                        for (i, at) in f.clone().enumerate() {
                            slot[at] = v.to_le_bytes()[i % 8];
                        }
                    }
                }
            }
            // Odd kinds are resealed, so the field checks behind the CRCs are reached.
            if kind % 2 == 1 {
                for slot in meta.chunks_mut(SLOT) {
                    reseal(slot, true);
                }
            }
        }
    }
    meta
}

/// Part 4: garbage in both slots at once.
fn garbage(base: &Base, n: u64) -> Tally {
    let mut cases = vec![Garbage::Zeroed, Garbage::Swapped, Garbage::MagicOnly];
    let mut seeds = XorShift(0x6d69_6e66_735f_6734);
    cases.extend((0..n).map(|_| Garbage::Random { seed: seeds.next() }));
    parallel(base, &cases, |t, dev, g| {
        let meta = mangle(base, g);
        dev.put_meta(&meta);
        let case = format!("garbage {g:?}");
        t.add("garbage cases");
        let o = open(dev, true, TARGET);
        let magic = |s: usize| meta[s * SLOT..s * SLOT + 8] == SUPERBLOCK_MAGIC;
        match o.result {
            Err(p) => {
                judge_io(t, &case, &o.log, Writes::None, None);
                t.fail("panics", format!("{case}: {}", panic_text(&*p)));
            }
            Ok(Ok(fs)) => {
                t.add("garbage accepted");
                judge_io(t, &case, &o.log, Writes::Inactive, Some(chosen(&fs).0));
                if let Some(why) = inconsistency(&fs, DEV_LEN) {
                    t.fail("wrong data", format!("{case}: accepted {why}"));
                }
                if let Err(e) = read_every_file(&fs) {
                    t.fail("wrong data", format!("{case}: {e}"));
                }
                drop(fs);
                for b in dev.take_log().bad {
                    t.fail("out-of-range reads", format!("{case}: reading files: {b}"));
                }
            }
            Ok(Err(e)) => {
                t.add("garbage refused");
                judge_io(t, &case, &o.log, Writes::None, None);
                let msg = e.to_string();
                let clear = match &e {
                    Error::NoValidSlot { a, b, .. } => {
                        msg.contains(TARGET)
                            && msg.contains("slot A: ")
                            && msg.contains("slot B: ")
                            && explains(a)
                            && explains(b)
                    }
                    Error::NotMinfs { .. } => {
                        msg.contains(TARGET)
                            && msg.contains("not a minfs")
                            && !magic(0)
                            && !magic(1)
                    }
                    Error::Corrupted { corruption, .. } => {
                        msg.contains(TARGET) && explains(corruption)
                    }
                    _ => false,
                };
                if !clear {
                    t.fail("unclear errors", format!("{case}: {e}"));
                }
            }
        }
        dev.put_meta(&base.image[..META]);
    })
}

/// Part 5: an image file through `FileDevice` (O_DIRECT), both slots holding the last commit.
fn on_disk(dir: &Path) -> Tally {
    let img = dir.join("bitflips.img");
    minfs::mkfs::mkfs(
        &img,
        &FormatOptions {
            size: Some(DEV_LEN),
            ..Default::default()
        },
        false,
    )
    .unwrap();
    let fs = Filesystem::open(&img, OpenMode::ReadWrite).unwrap();
    fs.create("a", 100_000).unwrap();
    fs.create("b", 5).unwrap();
    fs.create("keep", 1 << 20).unwrap();
    fs.create("late", 8192).unwrap();
    let current = (fs.info().generation, fs.list());
    drop(fs);
    let pristine = std::fs::read(&img).unwrap()[..META].to_vec();
    let write_meta = |meta: &[u8]| {
        let f = std::fs::OpenOptions::new().write(true).open(&img).unwrap();
        f.write_all_at(meta, 0).unwrap();
        f.sync_all().unwrap();
    };
    let mut t = Tally::default();
    let mut r = XorShift(0x0d15_c0de);
    for i in 0..96u64 {
        let s = (i % 2) as usize;
        let id = SlotId::BOTH[s];
        // Half in the superblock block, half in the file table's first 512 bytes or anywhere.
        let byte = match i % 4 {
            0 | 1 => (r.next() % SUPERBLOCK_SIZE as u64) as usize,
            2 => FILE_TABLE_OFFSET + (r.next() % 512) as usize,
            _ => (r.next() % SLOT as u64) as usize,
        };
        let bit = r.next() % 8;
        let mut meta = pristine.clone();
        meta[s * SLOT + byte] ^= 1 << bit;
        write_meta(&meta);
        let writable = i % 3 == 0;
        let mode = if writable {
            OpenMode::ReadWrite
        } else {
            OpenMode::ReadOnly
        };
        let case = format!("{} with {id} byte {byte} bit {bit} flipped", img.display());
        t.add("disk samples");
        let dev = Arc::new(Checked::new(FileDevice::open(&img, mode).unwrap()));
        let o = open(&dev, writable, &img.display().to_string());
        // Either slot damaged: the other holds the same last commit.
        let (generation, files) = &current;
        judge_open(
            &mut t,
            &case,
            o,
            Some((id.other(), *generation, files)),
            if writable {
                Writes::Slot(id)
            } else {
                Writes::None
            },
        );
        drop(dev);
        write_meta(&pristine);
    }
    // Both slots damaged on disk: refused, naming the image and both slots.
    let mut meta = pristine.clone();
    meta[sbf::TOTAL_BYTES.start] ^= 1;
    meta[SLOT + FILE_TABLE_OFFSET + 100] ^= 0x40;
    write_meta(&meta);
    t.add("disk samples");
    match catch_unwind(|| Filesystem::open(&img, OpenMode::ReadOnly)) {
        Err(p) => t.fail("panics", panic_text(&*p)),
        Ok(Ok(_)) => t.fail("wrong data", "both slots damaged, yet it opened".into()),
        Ok(Err(e)) => {
            let msg = e.to_string();
            let ok = matches!(e, Error::NoValidSlot { .. })
                && msg.contains(&img.display().to_string())
                && msg.contains("slot A: superblock checksum mismatch")
                && msg.contains("slot B: file table checksum mismatch");
            if !ok {
                t.fail("unclear errors", msg);
            }
        }
    }
    t
}

// ---------------------------------------------------------------------------------------------

#[test]
fn malformed_metadata_bit_flips() {
    let garbage_cases = testutil::env_num("MINFS_GARBAGE_CASES", 5000).unwrap();
    // A decoder panic would otherwise print once per case; show the first few only (the
    // tally counts them all), and restore the default hook for this test's own assertions.
    let shown = Arc::new(AtomicUsize::new(0));
    let default_hook = std::panic::take_hook();
    {
        let shown = shown.clone();
        std::panic::set_hook(Box::new(move |info| {
            if shown.fetch_add(1, Ordering::Relaxed) < 3 {
                eprintln!("panic caught by the suite: {info}");
            }
        }));
    }

    // The checking wrapper catches what it is there to catch.
    let probe = Checked::new(MemDevice::new(DEV_LEN, 512, 4096));
    let mut b = AlignedBuf::zeroed(4096, 4096);
    assert!(probe.read_at(&mut b, DEV_LEN - 512).is_err());
    assert!(probe.read_at(&mut b[..512], 100).is_err());
    assert!(probe.read_at(&mut b[..512], 0).is_ok());
    let log = probe.take_log();
    assert_eq!((log.bad.len(), log.reads), (2, vec![(0, 512)]));

    let base = build_base();
    assert_eq!(base.generation[0], base.generation[1]);
    let dir = tempfile::Builder::new()
        .prefix("minfs-bitflips-")
        .tempdir_in(testutil::scratch_dir())
        .unwrap();

    let mut all = Tally::default();
    type Part<'a> = (&'static str, Box<dyn Fn() -> Tally + 'a>);
    let parts: [Part; 5] = [
        ("every bit, decoded", Box::new(|| every_bit_decoded(&base))),
        ("full opens", Box::new(|| full_opens(&base))),
        ("resealed flips", Box::new(|| resealed_flips(&base))),
        (
            "garbage in both slots",
            Box::new(|| garbage(&base, garbage_cases)),
        ),
        ("on-disk image", Box::new(|| on_disk(dir.path()))),
    ];
    for (name, part) in parts {
        let t0 = Instant::now();
        let t = part();
        println!("{name}: {:.1?}, {:?}", t0.elapsed(), t.n);
        all.merge(t);
    }
    std::panic::set_hook(default_hook);

    assert_eq!(all.get("bit flips"), 2 * SLOT as u64 * 8);
    let keys = [
        "bit flips",
        "opened via other slot",
        "corrupted errors",
        "full opens",
        "resealed flips",
        "resealed accepted",
        "resealed rejected",
        "garbage cases",
        "garbage refused",
        "garbage accepted",
        "disk samples",
    ];
    let line: Vec<String> = keys
        .iter()
        .chain(FAILURE_KEYS.iter())
        .map(|k| format!("{k}: {}", all.get(k)))
        .collect();
    for f in &all.failures {
        println!("FAILURE {f}");
    }
    testutil::report_counts(
        env!("CARGO_TARGET_TMPDIR"),
        "malformed_bitflips",
        &line.join(", "),
    );
    let failed: u64 = FAILURE_KEYS.iter().map(|k| all.get(k)).sum();
    assert_eq!(failed, 0, "failures (first 20): {:#?}", all.failures);
    assert_eq!(all.get("corrupted errors"), all.get("bit flips"));
    assert_eq!(all.get("opened via other slot"), all.get("full opens"));
    assert!(all.get("resealed accepted") > 0 && all.get("resealed rejected") > 0);
    assert!(all.get("garbage refused") > 0);
}
