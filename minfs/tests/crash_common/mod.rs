//! Shared by the reliability suites (`crash_sweep.rs`, `io_errors.rs`): a workload of minfs
//! operations run on a [`FaultDevice`] against a model, the log of what each step did on the
//! device, and the check of an image left by a crash or an I/O error.
#![allow(dead_code)]

pub mod bad_sectors;

use std::collections::BTreeMap;
use std::sync::Arc;

use minfs::device::fault::{FaultDevice, TraceEntry};
use minfs::format::{blocks_for, BLOCK_SIZE, DATA_START};
use minfs::fsck::{self, Problem};
use minfs::{AlignedBuf, BlockDevice, Error, FileStat, Filesystem, FormatOptions, MemDevice};

/// Prints a suite's counts line and writes it to
/// `$CARGO_TARGET_TMPDIR/reliability-<suite>.txt`, where `scripts/test.sh` picks it up for
/// CI's log (cargo test hides a passing test's output).
pub fn report(suite: &str, counts: &str) {
    testutil::report_counts(env!("CARGO_TARGET_TMPDIR"), suite, counts);
}

/// Device size and sector sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    pub len: u64,
    pub logical: u32,
    pub physical: u32,
}

/// The reference geometry: a 4 MiB 512e device (512-byte logical, 4 KiB physical sectors), so
/// a 4 KiB write tears into 8 sectors and a 64 KiB slot into 128.
pub const REFERENCE: Geometry = Geometry {
    len: 4 << 20,
    logical: 512,
    physical: 4096,
};

/// The reference workload on a 4Kn device (4096-byte logical sectors): slots tear into 16.
pub const REFERENCE_4KN: Geometry = Geometry {
    len: 4 << 20,
    logical: 4096,
    physical: 4096,
};

/// One step of a workload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// `Filesystem::format` of the whole device (fixed UUID and time).
    Format,
    Create(String, u64),
    /// Grow to this size.
    Grow(String, u64),
    Remove(String),
    /// Write `len` bytes of the step's stamp at `offset` through a new handle.
    Write(String, u64, u64),
    /// Read `len` bytes at `offset` through a new handle and compare with what was written.
    Read(String, u64, u64),
    /// `Filesystem::flush`.
    Flush,
    /// `FileHandle::flush` on a new handle of the file.
    FlushFile(String),
    /// Drop the filesystem and open the device again.
    Reopen,
}

fn s(name: &str) -> String {
    name.to_string()
}

/// The reference metadata workload: mkfs, creates, in-place and fragmenting grows, removes
/// and reuse of the freed blocks, data written across extents and flushed (or not), reads,
/// reopens, and refused requests (no space, exists, not found) — about 300 device operations.
pub fn reference_workload() -> Vec<Step> {
    use Step::*;
    let mut w = vec![
        Format,
        Create(s("a"), 8192),
        Create(s("b"), 4096),
        Create(s("c"), 100_000),
        Create(s("d"), 0),
        Write(s("a"), 0, 8192),
        FlushFile(s("a")),
        // b follows a: the grow takes a second extent; the write spans both.
        Grow(s("a"), 20_000),
        Write(s("a"), 4096, 12_288),
        Read(s("a"), 0, 16_384),
        Flush,
        Remove(s("b")),
        // Reuses b's block.
        Create(s("e"), 4096),
        Grow(s("d"), 5000),
        Write(s("d"), 0, 4096),
        // Refused without I/O.
        Create(s("big"), 64 << 20),
        Create(s("a"), 1),
        Remove(s("nosuch")),
        Grow(s("c"), 200_000),
        // Written, not flushed: the next commit's first flush makes it durable.
        Write(s("c"), 98_304, 8192),
        Create(s("f"), 300_000),
        Reopen,
        Read(s("c"), 98_304, 8192),
    ];
    // Rounds of creates, grows and removes that fragment the free space.
    for round in 0..8u64 {
        let g = format!("g{round}");
        let h = format!("h{round}");
        w.push(Create(g.clone(), 4096 * (1 + round % 3)));
        w.push(Create(h.clone(), 10_000 + 7_777 * round));
        w.push(Grow(g.clone(), 4096 * (4 + round)));
        w.push(Write(g.clone(), 4096, 8192));
        if round % 4 == 0 {
            w.push(FlushFile(g.clone()));
        } else if round % 2 == 0 {
            w.push(Flush);
        }
        w.push(Remove(h.clone()));
        if round >= 2 {
            w.push(Remove(format!("g{}", round - 2)));
        }
        if round == 3 {
            w.push(Reopen);
        }
    }
    w.extend([
        Grow(s("e"), 65_536),
        Write(s("e"), 0, 65_536),
        Remove(s("c")),
        Create(s("last"), 4096),
        Flush,
        Read(s("e"), 0, 65_536),
    ]);
    w
}

/// A random workload of `len` steps after the format, from `seed`: mostly valid requests
/// (the model decides what each should do), with writes, reads, flushes and reopens.
pub fn random_workload(seed: u64, len: usize, geometry: Geometry) -> Vec<Step> {
    let mut rng = testutil::XorShift(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let names = ["a", "b", "c", "d", "e", "f", "g", "h"];
    let data_blocks = (geometry.len - DATA_START) / BLOCK_SIZE;
    let mut sizes: BTreeMap<&str, u64> = BTreeMap::new();
    let mut w = vec![Step::Format];
    while w.len() <= len {
        let name = names[(rng.next() % names.len() as u64) as usize];
        let pick = rng.next() % 20;
        let size = match rng.next() % 3 {
            0 => rng.next() % 9000,
            1 => (rng.next() % (data_blocks / 6)) * BLOCK_SIZE,
            _ => 1 + rng.next() % (data_blocks / 4 * BLOCK_SIZE),
        };
        let step = match (pick, sizes.get(name).copied()) {
            (0..=5, None) => {
                sizes.insert(name, size);
                Step::Create(s(name), size)
            }
            (0..=5, Some(_)) => Step::Create(s(name), size),
            (6..=8, Some(old)) => {
                let new = old + size / 4;
                sizes.insert(name, new);
                Step::Grow(s(name), new)
            }
            (9..=10, _) => {
                sizes.remove(name);
                Step::Remove(s(name))
            }
            (11..=14, Some(sz)) if sz > 0 => {
                // Whole logical sectors inside the file's addressable range.
                let lss = u64::from(geometry.logical);
                let sectors = sz.div_ceil(lss);
                let off = rng.next() % sectors;
                let n = 1 + rng.next() % (sectors - off).min(12_288 / lss + 2);
                if pick == 14 {
                    Step::Read(s(name), off * lss, n * lss)
                } else {
                    Step::Write(s(name), off * lss, n * lss)
                }
            }
            (15..=16, _) => Step::Flush,
            (17, _) => Step::FlushFile(s(name)),
            (18, _) => Step::Reopen,
            _ => continue,
        };
        w.push(step);
    }
    w
}

/// What a step is expected to do, by the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    Ok,
    NoSpace,
    Exists,
    NotFound,
    /// A write or read that does not fit in the file (random workloads after a failed grow).
    OutOfRange,
}

/// The files as the live filesystem listed them after a step, with the step that created each
/// (to tell a file from a later one of the same name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    pub files: Vec<FileStat>,
    pub created_by: BTreeMap<String, usize>,
}

/// What one step did.
#[derive(Debug, Clone)]
pub struct StepRecord {
    /// Its index in the workload.
    pub index: usize,
    pub step: Step,
    /// Device operations before the step started and after it ended: the step's operations
    /// are `start..end`.
    pub start: u64,
    pub end: u64,
    /// Whether it did what the model expected (an injected error makes it false).
    pub as_expected: bool,
    /// Whether it returned `Ok`.
    pub ok: bool,
    /// The live files after the step (`None` while there is no filesystem).
    pub after: Option<Snapshot>,
}

/// A data write: which file, where, and the device operation that wrote each piece.
#[derive(Debug, Clone)]
pub struct DataWrite {
    /// The workload step that wrote it.
    pub step: usize,
    pub file: (String, usize),
    pub offset: u64,
    pub len: u64,
    pub stamp: u64,
    /// `(device offset, length, file offset, device operation index)` per contiguous piece.
    pub pieces: Vec<(u64, u64, u64, u64)>,
}

/// The deterministic content of the 512 bytes at file offset `at` written by `stamp`.
pub fn fill(buf: &mut [u8], stamp: u64, file_offset: u64) {
    for (i, chunk) in buf.chunks_mut(512).enumerate() {
        let word = (stamp << 32) | ((file_offset / 512 + i as u64) & 0xFFFF_FFFF);
        for (j, b) in chunk.chunks_mut(8).enumerate() {
            b.copy_from_slice(&(word ^ (j as u64).wrapping_mul(0x0101_0101)).to_le_bytes());
        }
    }
}

/// Runs steps on a [`FaultDevice`], checking each result against the model and logging.
pub struct Runner {
    pub geometry: Geometry,
    pub dev: Arc<FaultDevice>,
    pub fs: Option<Filesystem>,
    model: BTreeMap<String, u64>,
    created_by: BTreeMap<String, usize>,
    pub records: Vec<StepRecord>,
    pub writes: Vec<DataWrite>,
}

/// A step that did not do what the model said.
#[derive(Debug)]
pub struct Deviation {
    pub step: usize,
    pub expected: Expect,
    pub result: Result<(), Error>,
}

impl Runner {
    /// A zero-filled device, tracing every operation.
    pub fn new(geometry: Geometry) -> Runner {
        let dev = Arc::new(FaultDevice::new(
            geometry.len,
            geometry.logical,
            geometry.physical,
        ));
        dev.record_trace();
        Runner {
            geometry,
            dev,
            fs: None,
            model: BTreeMap::new(),
            created_by: BTreeMap::new(),
            records: Vec::new(),
            writes: Vec::new(),
        }
    }

    fn ops(&self) -> u64 {
        self.dev.counts().total()
    }

    fn data_blocks(&self) -> u64 {
        (self.geometry.len / BLOCK_SIZE * BLOCK_SIZE - DATA_START) / BLOCK_SIZE
    }

    fn expect(&self, step: &Step) -> Expect {
        let used: u64 = self.model.values().map(|s| blocks_for(*s)).sum();
        let free = self.data_blocks() - used;
        match step {
            Step::Format | Step::Flush | Step::Reopen => Expect::Ok,
            Step::FlushFile(n) => match self.model.contains_key(n) {
                true => Expect::Ok,
                false => Expect::NotFound,
            },
            Step::Create(n, size) => {
                if self.model.contains_key(n) {
                    Expect::Exists
                } else if blocks_for(*size) > free {
                    Expect::NoSpace
                } else {
                    Expect::Ok
                }
            }
            Step::Grow(n, size) => match self.model.get(n) {
                None => Expect::NotFound,
                Some(old) if blocks_for(*size).saturating_sub(blocks_for(*old)) > free => {
                    Expect::NoSpace
                }
                Some(_) => Expect::Ok,
            },
            Step::Remove(n) => match self.model.contains_key(n) {
                true => Expect::Ok,
                false => Expect::NotFound,
            },
            Step::Write(n, off, len) | Step::Read(n, off, len) => match self.model.get(n) {
                None => Expect::NotFound,
                Some(size) => {
                    let lss = u64::from(self.geometry.logical);
                    if off + len > size.div_ceil(lss) * lss {
                        Expect::OutOfRange
                    } else {
                        Expect::Ok
                    }
                }
            },
        }
    }

    fn fs(&self) -> Result<&Filesystem, Error> {
        self.fs.as_ref().ok_or_else(|| Error::InvalidArgument {
            target: "runner".into(),
            reason: "no filesystem".into(),
        })
    }

    fn exec(&mut self, index: usize, step: &Step) -> Result<(), Error> {
        match step {
            Step::Format => {
                let opts = FormatOptions {
                    uuid: Some([7; 16]),
                    time: Some(1_700_000_000),
                    ..Default::default()
                };
                self.fs = Some(Filesystem::format(self.dev.clone(), "fault", &opts)?);
                Ok(())
            }
            Step::Create(n, size) => self.fs()?.create(n, *size).map(drop),
            Step::Grow(n, size) => self.fs()?.grow(n, *size).map(drop),
            Step::Remove(n) => self.fs()?.remove(n),
            Step::Flush => self.fs()?.flush(),
            Step::FlushFile(n) => self.fs()?.open_file(n)?.flush(),
            Step::Reopen => {
                self.fs = None;
                self.fs = Some(Filesystem::open_device(self.dev.clone(), "fault")?);
                Ok(())
            }
            Step::Write(n, off, len) => {
                let f = self.fs()?.open_file(n)?;
                let mut buf = AlignedBuf::zeroed(*len as usize, 4096);
                let stamp = index as u64 + 1;
                fill(&mut buf, stamp, *off);
                let mut pieces = Vec::new();
                // Map the request onto the extents as minfs does, to know each piece's
                // device range; the pieces are the step's device writes, in order.
                let mut file_pos = 0u64;
                let mut op = self.ops();
                for e in f.extents() {
                    let (fs0, fs1) = (file_pos, file_pos + e.byte_len());
                    let (a, b) = ((*off).max(fs0), (off + len).min(fs1));
                    if a < b {
                        pieces.push((e.byte_offset() + (a - fs0), b - a, a, op));
                        op += 1;
                    }
                    file_pos = fs1;
                }
                let r = f.write_at(&buf, *off);
                // Pieces after a failed one were never issued.
                let end = self.ops();
                pieces.retain(|p| p.3 < end);
                if !matches!(
                    r,
                    Err(Error::OutOfRange { .. }) | Err(Error::Poisoned { .. })
                ) {
                    self.writes.push(DataWrite {
                        step: index,
                        file: (n.clone(), self.created_by[n]),
                        offset: *off,
                        len: *len,
                        stamp,
                        pieces,
                    });
                }
                r
            }
            Step::Read(n, off, len) => {
                let f = self.fs()?.open_file(n)?;
                let mut buf = AlignedBuf::zeroed(*len as usize, 4096);
                f.read_at(&mut buf, *off)?;
                // What reads must see: the last write of each 512 bytes (no crash).
                let file = (n.clone(), self.created_by[n]);
                for (i, chunk) in buf.chunks(512).enumerate() {
                    let at = off + i as u64 * 512;
                    let last = self
                        .writes
                        .iter()
                        .rev()
                        .find(|w| w.file == file && w.offset <= at && at < w.offset + w.len);
                    if let Some(w) = last {
                        let mut want = [0u8; 512];
                        fill(&mut want, w.stamp, at);
                        assert!(
                            chunk == want,
                            "step {index} {step:?}: bytes at {at} are not those of stamp {}",
                            w.stamp
                        );
                    }
                }
                Ok(())
            }
        }
    }

    /// Runs `step` (number `index` of the workload), updates the model, logs it; returns the
    /// deviation when it did not do what the model said.
    pub fn step(&mut self, index: usize, step: &Step) -> Result<(), Deviation> {
        let expected = self.expect(step);
        let start = self.ops();
        let result = self.exec(index, step);
        let end = self.ops();
        let got = match &result {
            Ok(()) => Expect::Ok,
            Err(Error::NoSpace { .. }) => Expect::NoSpace,
            Err(Error::FileExists { .. }) => Expect::Exists,
            Err(Error::FileNotFound { .. }) => Expect::NotFound,
            Err(Error::OutOfRange { .. }) => Expect::OutOfRange,
            Err(_) => {
                // Anything else is a deviation (an I/O error, poisoning).
                self.records.push(StepRecord {
                    index,
                    step: step.clone(),
                    start,
                    end,
                    as_expected: false,
                    ok: false,
                    after: self.snapshot(),
                });
                return Err(Deviation {
                    step: index,
                    expected,
                    result,
                });
            }
        };
        let ok = got == expected;
        if ok && got == Expect::Ok {
            match step {
                Step::Create(n, size) => {
                    self.model.insert(n.clone(), *size);
                    self.created_by.insert(n.clone(), index);
                }
                Step::Grow(n, size) => {
                    self.model.insert(n.clone(), *size);
                }
                Step::Remove(n) => {
                    self.model.remove(n);
                    self.created_by.remove(n);
                }
                _ => {}
            }
        }
        if ok {
            if let Some(fs) = &self.fs {
                let live: BTreeMap<String, u64> =
                    fs.list().into_iter().map(|f| (f.name, f.size)).collect();
                assert_eq!(
                    live, self.model,
                    "step {index} {step:?}: files differ from the model"
                );
            }
        }
        self.records.push(StepRecord {
            index,
            step: step.clone(),
            start,
            end,
            as_expected: ok,
            ok: result.is_ok(),
            after: self.snapshot(),
        });
        if ok {
            Ok(())
        } else {
            Err(Deviation {
                step: index,
                expected,
                result,
            })
        }
    }

    /// The live files now.
    pub fn snapshot(&self) -> Option<Snapshot> {
        self.fs.as_ref().map(|fs| Snapshot {
            files: fs.list(),
            created_by: self.created_by.clone(),
        })
    }

    /// Runs every step; panics on the first deviation from the model (no faults injected).
    pub fn run_all(&mut self, steps: &[Step]) {
        for (i, step) in steps.iter().enumerate() {
            if let Err(d) = self.step(i, step) {
                panic!(
                    "step {i} {step:?}: expected {:?}, got {:?}",
                    d.expected, d.result
                );
            }
        }
    }

    /// Drops the filesystem and takes the trace: the log of a finished run.
    pub fn finish(mut self) -> RunLog {
        self.fs = None;
        let trace = self.dev.take_trace();
        RunLog::new(self.geometry, self.records, self.writes, trace)
    }
}

/// A finished run: what each step did and every device operation.
pub struct RunLog {
    pub geometry: Geometry,
    pub records: Vec<StepRecord>,
    pub writes: Vec<DataWrite>,
    pub trace: Vec<TraceEntry>,
    /// The step that formatted the device.
    format_step: Option<usize>,
}

/// Why a crash image was judged wrong (each counted once per image).
#[derive(Debug, Default, Clone, Copy)]
pub struct Verdict {
    pub reopen_failure: bool,
    pub fsck_error: bool,
    pub lost_files: bool,
    pub lost_data: bool,
    pub overlap: bool,
    /// Data sectors checked.
    pub sectors: u64,
    /// Data sectors not checked because a 512e read-modify-write ruined their physical sector
    /// (a data write of part of a physical sector, see [`RunLog::check_image_ruined`]).
    pub ruined_sectors: u64,
}

impl Verdict {
    pub fn ok(&self) -> bool {
        !(self.reopen_failure
            || self.fsck_error
            || self.lost_files
            || self.lost_data
            || self.overlap)
    }
}

/// Totals over many images.
#[derive(Debug, Default, Clone, Copy)]
pub struct Tally {
    pub images: u64,
    pub torn: u64,
    pub reopen_failures: u64,
    pub fsck_errors: u64,
    pub lost_files: u64,
    pub lost_data: u64,
    pub overlaps: u64,
    pub panics: u64,
    /// Images of a second crash, during the recovery (open) of a crash image.
    pub recovery_crashes: u64,
    /// Data sectors checked.
    pub sectors: u64,
    /// Images with a physical sector ruined by a 512e read-modify-write.
    pub ruined_images: u64,
    /// Data sectors left unchecked because their physical sector was ruined.
    pub ruined_sectors: u64,
}

impl Tally {
    pub fn add(&mut self, v: &Verdict) {
        self.images += 1;
        self.reopen_failures += u64::from(v.reopen_failure);
        self.fsck_errors += u64::from(v.fsck_error);
        self.lost_files += u64::from(v.lost_files);
        self.lost_data += u64::from(v.lost_data);
        self.overlaps += u64::from(v.overlap);
        self.sectors += v.sectors;
        self.ruined_sectors += v.ruined_sectors;
    }

    pub fn merge(&mut self, o: &Tally) {
        self.images += o.images;
        self.torn += o.torn;
        self.reopen_failures += o.reopen_failures;
        self.fsck_errors += o.fsck_errors;
        self.lost_files += o.lost_files;
        self.lost_data += o.lost_data;
        self.overlaps += o.overlaps;
        self.panics += o.panics;
        self.recovery_crashes += o.recovery_crashes;
        self.sectors += o.sectors;
        self.ruined_images += o.ruined_images;
        self.ruined_sectors += o.ruined_sectors;
    }

    pub fn failures(&self) -> u64 {
        self.reopen_failures
            + self.fsck_errors
            + self.lost_files
            + self.lost_data
            + self.overlaps
            + self.panics
    }
}

impl RunLog {
    pub fn new(
        geometry: Geometry,
        records: Vec<StepRecord>,
        writes: Vec<DataWrite>,
        trace: Vec<TraceEntry>,
    ) -> RunLog {
        let format_step = records
            .iter()
            .position(|r| r.step == Step::Format && r.as_expected);
        RunLog {
            geometry,
            records,
            writes,
            trace,
            format_step,
        }
    }

    /// Operations in the run.
    pub fn ops(&self) -> u64 {
        self.trace.len() as u64
    }

    /// Whether the API promises data write `w` durable at crash point `k` (`k` operations
    /// done): a later step that returned `Ok` by then flushed it — `Flush`, `FlushFile` of its
    /// file, or a commit (create, grow, remove: a commit's first step is a flush). This is the
    /// promise, not what the device saw, so a flush that does not flush is caught.
    fn promised_durable(&self, w: &DataWrite, k: u64) -> bool {
        self.records.iter().any(|r| {
            r.index > w.step
                && r.end <= k
                && r.ok
                && r.as_expected
                && match &r.step {
                    Step::Flush | Step::Create(..) | Step::Grow(..) | Step::Remove(_) => true,
                    Step::FlushFile(n) => *n == w.file.0,
                    _ => false,
                }
        })
    }

    /// The states a crash after `k` operations may leave: the state after the last step that
    /// ended by then, and (when one was under way) after the step in flight. `None` stands
    /// for "no filesystem yet". `extra` adds states (e.g. where an interrupted step would have
    /// led).
    pub fn allowed_states(&self, k: u64) -> Vec<Option<&Snapshot>> {
        let mut out = Vec::new();
        let done = self.records.iter().rposition(|r| r.end <= k);
        out.push(done.and_then(|i| self.records[i].after.as_ref()));
        if let Some(r) = self.records.iter().find(|r| r.start < k && k < r.end) {
            out.push(r.after.as_ref());
        }
        out
    }

    /// Whether the format had returned by crash point `k`.
    fn formatted_by(&self, k: u64) -> bool {
        self.format_step.is_some_and(|i| self.records[i].end <= k)
    }

    /// [`RunLog::check_image`] of an image in memory.
    pub fn check_bytes(
        &self,
        image: Vec<u8>,
        k: u64,
        allowed: &[Option<&Snapshot>],
        why: &mut Vec<String>,
    ) -> Verdict {
        let g = self.geometry;
        let dev = Arc::new(MemDevice::from_bytes(image, g.logical, g.physical));
        self.check_image(dev, k, allowed, why)
    }

    /// Checks an image left by a crash after `k` operations (or, for an injected error, by
    /// the run's end): open, fsck, files against `allowed` states, no overlap, the data.
    pub fn check_image(
        &self,
        dev: Arc<dyn BlockDevice>,
        k: u64,
        allowed: &[Option<&Snapshot>],
        why: &mut Vec<String>,
    ) -> Verdict {
        self.check_image_ruined(dev, k, allowed, &[], why)
    }

    /// [`RunLog::check_image`] of a 512e crash image in which the physical sectors at
    /// `ruined` (byte offsets, of the geometry's physical size) were ruined by a
    /// read-modify-write: every check as usual — minfs's metadata is never written in part of
    /// a physical sector, so it must not notice — except that data sectors in them are not
    /// compared (counted in [`Verdict::ruined_sectors`]): a data write of part of a physical
    /// sector is the caller's choice and loses what shares that sector on such a drive.
    pub fn check_image_ruined(
        &self,
        dev: Arc<dyn BlockDevice>,
        k: u64,
        allowed: &[Option<&Snapshot>],
        ruined: &[u64],
        why: &mut Vec<String>,
    ) -> Verdict {
        let mut v = Verdict::default();
        let may_be_blank = !self.formatted_by(k) || allowed.iter().any(|s| s.is_none());
        // fsck before open: at most one slot invalid or one commit behind (an interrupted
        // commit: torn, or between its two slot writes).
        match fsck::check_device(dev.as_ref(), "crash") {
            Ok(r) => {
                let bad: Vec<&Problem> = r
                    .problems
                    .iter()
                    .filter(|p| {
                        !matches!(p, Problem::SlotInvalid { .. } | Problem::StaleSlot { .. })
                    })
                    .collect();
                let invalid = r.problems.len() - bad.len();
                if (!bad.is_empty() || invalid > 1) && !may_be_blank {
                    v.fsck_error = true;
                    why.push(format!("fsck before open: {:?}", r.problems));
                }
            }
            Err(Error::NotMinfs { .. }) if may_be_blank => {}
            Err(e) => {
                v.reopen_failure = true;
                why.push(format!("fsck before open: {e}"));
            }
        }
        let fs = match Filesystem::open_device(dev.clone(), "crash") {
            Ok(fs) => fs,
            Err(Error::NotMinfs { .. } | Error::NoValidSlot { .. }) if may_be_blank => {
                return v;
            }
            Err(e) => {
                v.reopen_failure = true;
                why.push(format!("open: {e}"));
                return v;
            }
        };
        // Open has already rewritten an interrupted slot: fsck is clean right away.
        match fsck::check_device(dev.as_ref(), "crash") {
            Ok(r) if r.is_clean() => {}
            Ok(r) => {
                v.fsck_error = true;
                why.push(format!("fsck right after open: {:?}", r.problems));
            }
            Err(e) => {
                v.fsck_error = true;
                why.push(format!("fsck right after open: {e}"));
            }
        }
        let files = fs.list();
        let matched = allowed.iter().find(|s| match s {
            Some(s) => s.files == files,
            None => files.is_empty(),
        });
        let Some(state) = matched else {
            v.lost_files = true;
            why.push(format!(
                "files {:?} are none of the allowed states {:?}",
                names(&files),
                allowed
                    .iter()
                    .map(|s| s.map(|s| names(&s.files)))
                    .collect::<Vec<_>>()
            ));
            return v;
        };
        // No two files share a block; every extent inside the data area.
        let mut ranges: Vec<(u64, u64)> = files
            .iter()
            .flat_map(|f| f.extents.iter().map(|e| (e.offset, e.offset + e.length)))
            .collect();
        ranges.sort();
        let total = fs.superblock().total_bytes;
        if ranges.windows(2).any(|w| w[0].1 > w[1].0)
            || ranges.iter().any(|r| r.0 < DATA_START || r.1 > total)
        {
            v.overlap = true;
            why.push(format!("extents overlap or stray: {ranges:?}"));
        }
        // The data.
        if let Some(state) = state {
            match self.check_data(&fs, state, k, ruined) {
                Ok((n, r)) => {
                    v.sectors = n;
                    v.ruined_sectors = r;
                }
                Err(e) => {
                    v.lost_data = true;
                    why.push(e);
                }
            }
        }
        // The recovered filesystem takes a commit, and fsck finds nothing.
        let probe = "after-crash";
        match fs.create(probe, 4096) {
            Ok(_) => {
                if let Err(e) = fs.remove(probe) {
                    v.reopen_failure = true;
                    why.push(format!("remove after recovery: {e}"));
                }
            }
            Err(Error::NoSpace { .. } | Error::TooManyFiles { .. }) => {}
            Err(e) => {
                v.reopen_failure = true;
                why.push(format!("create after recovery: {e}"));
            }
        }
        drop(fs);
        match fsck::check_device(dev.as_ref(), "crash") {
            Ok(r) if r.is_clean() => {}
            Ok(r) => {
                v.fsck_error = true;
                why.push(format!("fsck after open: {:?}", r.problems));
            }
            Err(e) => {
                v.fsck_error = true;
                why.push(format!("fsck after open: {e}"));
            }
        }
        v
    }

    /// Every logical sector that a write of a file in `state` covered holds the bytes of the
    /// last write promised durable at crash point `k` ([`RunLog::promised_durable`]) or of a
    /// later write begun by then (a sector no write was promised durable for is not checked:
    /// its old content is unknown).
    /// Data sectors in the physical sectors at `ruined` are skipped, and counted (the second
    /// number returned).
    fn check_data(
        &self,
        fs: &Filesystem,
        state: &Snapshot,
        k: u64,
        ruined: &[u64],
    ) -> Result<(u64, u64), String> {
        let mut checked = 0;
        let mut skipped = 0;
        let lss = u64::from(self.geometry.logical);
        let pss = u64::from(self.geometry.physical);
        for (name, &created) in &state.created_by {
            let file = (name.clone(), created);
            let writes: Vec<&DataWrite> = self.writes.iter().filter(|w| w.file == file).collect();
            if writes.is_empty() {
                continue;
            }
            let f = fs.open_file(name).map_err(|e| e.to_string())?;
            let size = f.size();
            // Device byte offset of a file offset.
            let extents = f.extents();
            let device_offset = |at: u64| {
                let mut pos = 0;
                for e in &extents {
                    if at < pos + e.byte_len() {
                        return Some(e.byte_offset() + (at - pos));
                    }
                    pos += e.byte_len();
                }
                None
            };
            // Sectors to check, by file offset.
            let mut sectors: Vec<u64> = writes
                .iter()
                .flat_map(|w| (w.offset / lss..(w.offset + w.len) / lss).map(|s| s * lss))
                .filter(|&at| at < size.div_ceil(lss) * lss)
                .collect();
            sectors.sort_unstable();
            sectors.dedup();
            let mut buf = AlignedBuf::zeroed(lss as usize, 4096);
            let mut want = vec![0u8; lss as usize];
            for at in sectors {
                // (stamp, durable) of each write of this sector begun before the crash.
                let mut cands: Vec<(u64, bool)> = Vec::new();
                for w in &writes {
                    if !(w.offset <= at && at < w.offset + w.len) {
                        continue;
                    }
                    let Some(piece) = w.pieces.iter().find(|p| p.2 <= at && at < p.2 + p.1) else {
                        continue;
                    };
                    let op = piece.3;
                    if op >= k || op >= self.ops() || self.trace[op as usize].cached.is_none() {
                        continue;
                    }
                    let entry = &self.trace[op as usize];
                    // A failed write cached only its first part.
                    let cached = entry.cached.as_ref().map_or(0, |c| c.len() as u64);
                    if at - piece.2 + lss > cached {
                        continue;
                    }
                    cands.push((w.stamp, self.promised_durable(w, k)));
                }
                let Some(last_durable) = cands.iter().rposition(|c| c.1) else {
                    continue; // the old content is unknown
                };
                if !ruined.is_empty()
                    && device_offset(at).is_some_and(|d| ruined.contains(&(d / pss * pss)))
                {
                    skipped += 1;
                    continue;
                }
                f.read_at(&mut buf, at).map_err(|e| e.to_string())?;
                checked += 1;
                let ok = cands[last_durable..].iter().any(|&(stamp, _)| {
                    fill(&mut want, stamp, at);
                    buf[..] == want[..]
                });
                if !ok {
                    return Err(format!(
                        "{name}: sector at {at} holds none of stamps {:?}",
                        &cands[last_durable..]
                    ));
                }
            }
        }
        Ok((checked, skipped))
    }
}

fn names(files: &[FileStat]) -> Vec<(String, u64)> {
    files.iter().map(|f| (f.name.clone(), f.size)).collect()
}
