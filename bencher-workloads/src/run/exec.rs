//! Running a list of operations on a Cannyls `Storage`, timing each call.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::io;

use cannyls::lump::{LumpData, LumpId};
use cannyls::nvm::NonVolatileMemory;
use cannyls::storage::Storage;
use cannyls::ErrorKind;
use indicatif::ProgressBar;

use super::content;
use super::oplog::{monotonic_ns, OpLog};
use super::stats::{Recorder, StatKind};
use crate::generate::Op;

/// How to run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExecOptions {
    /// Check what the storage returns: every `get` (content, not only presence and length),
    /// every `delete` (the lump is read back and checked first, outside the timing), and the
    /// return values of `put` (new or replaced), `delete` and `delete_range` (exactly the live
    /// lumps in the range).
    pub verify: bool,
    /// What the puts store (and `verify` checks).
    pub content: content::Content,
}

/// Where a run reports as it goes: the op-log and the progress bar, both optional.
#[derive(Debug, Default)]
pub struct Hooks {
    /// One line per operation.
    pub op_log: Option<OpLog>,
    /// Advanced as operations complete (about ten times a second).
    pub progress: Option<ProgressBar>,
}

/// What a completed run measured.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The times, by kind and overall.
    pub recorder: Recorder,
    /// From just before the first operation to just after the last (including preparing the
    /// data of puts, checks and the op-log), in nanoseconds.
    pub wall_ns: u64,
    /// Operations run.
    pub ops: u64,
    /// Payload bytes of `New`/`OverWrite` puts.
    pub put_bytes: u64,
    /// Payload bytes of embedded puts.
    pub embed_bytes: u64,
    /// Payload bytes read by gets.
    pub get_bytes: u64,
    /// The peak of the data region's usage as Cannyls' allocator counts it (bytes allocated −
    /// released: lumps rounded up to the block size, with their trailers), sampled after every
    /// operation; `None` when not measured (a replay).
    pub data_usage_peak_bytes: Option<u64>,
}

/// Why a run stopped.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Cannyls returned an error.
    #[error("operation #{seq} ({op}) failed: {}", brief(error))]
    Cannyls {
        /// Its position in the operation list, from 0.
        seq: usize,
        /// What it was.
        op: OpText,
        /// The error.
        error: cannyls::Error,
    },
    /// Cannyls returned something other than what was stored.
    #[error("verification failed at operation #{seq} ({op}): lump {id}: {problem}")]
    Verify {
        /// Its position in the operation list, from 0.
        seq: usize,
        /// What it was.
        op: OpText,
        /// The lump.
        id: u64,
        /// What is wrong.
        problem: String,
    },
    /// The op-log could not be written.
    #[error("writing the op-log: {0}")]
    OpLog(#[source] io::Error),
}

impl RunError {
    /// Whether Cannyls said the storage is full.
    pub fn is_storage_full(&self) -> bool {
        matches!(self, RunError::Cannyls { error, .. } if *error.kind() == ErrorKind::StorageFull)
    }

    /// The lump a verification failure is about.
    pub fn lump_id(&self) -> Option<u64> {
        match self {
            RunError::Verify { id, .. } => Some(*id),
            _ => None,
        }
    }
}

/// A Cannyls error on one line: its kind and cause, without the tracking history.
pub fn brief(e: &cannyls::Error) -> String {
    let text = e.to_string();
    text.lines().next().unwrap_or("").trim().to_string()
}

/// An operation described for people: `Put(262144) of lump 5`, `Get of lump 5 (1048576
/// bytes)`, `Delete of lump 5`, `DeleteRange 3..9`, `Sync`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpText(pub Op);

impl fmt::Display for OpText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Op::Put {
                id,
                size,
                embedded,
                overwrite,
            } => {
                let what = match (embedded, overwrite) {
                    (true, _) => "Embed",
                    (false, true) => "OverWrite",
                    (false, false) => "New",
                };
                write!(f, "{what}({size}) of lump {id}")
            }
            Op::Get { id, size } => write!(f, "Get of lump {id} ({size} bytes)"),
            Op::Delete { id } => write!(f, "Delete of lump {id}"),
            Op::DeleteRange { start, end } => write!(f, "DeleteRange {start}..{end}"),
            Op::Sync => f.write_str("Sync"),
        }
    }
}

/// What the runner knows of the lumps it put.
#[derive(Debug, Default)]
struct Lumps {
    /// id → version of its last put (0 for the first). Ids never put in this run (a storage
    /// opened with lumps in it) are taken as version 0.
    versions: HashMap<u64, u32>,
    /// id → size of the live lumps this run put.
    live: BTreeMap<u64, u32>,
}

impl Lumps {
    fn version(&self, id: u64) -> u32 {
        self.versions.get(&id).copied().unwrap_or(0)
    }

    fn next_version(&self, id: u64) -> u32 {
        self.versions.get(&id).map_or(0, |v| v.wrapping_add(1))
    }
}

fn lump_id(id: u64) -> LumpId {
    LumpId::new(u128::from(id))
}

/// Checks a lump read back: present, of the expected length, and (if `content`) holding the
/// content of `id` at `version`.
fn check_read(
    data: Option<&LumpData>,
    id: u64,
    version: u32,
    size: Option<u32>,
    content: Option<content::Content>,
) -> Result<(), String> {
    let Some(data) = data else {
        return Err("the lump is live but the storage returned nothing (None)".into());
    };
    let bytes = data.as_bytes();
    if let Some(size) = size {
        if bytes.len() != size as usize {
            return Err(format!("read {} bytes, expected {size} bytes", bytes.len()));
        }
    }
    if let Some(content) = content {
        if let Some((at, expected)) = content.first_mismatch(id, version, bytes) {
            return Err(format!(
                "content differs at byte {at} of {}: expected 0x{expected:02x}, found 0x{:02x} \
                 (version {version})",
                bytes.len(),
                bytes[at]
            ));
        }
    }
    Ok(())
}

/// Runs `ops` in order on `storage`, timing each Cannyls call alone: the data of a put is
/// prepared before its timer starts, and checks happen after it stops.
///
/// Every put stores the [`content`] of its lump id at its version. Without `verify`, a `get`
/// that returns nothing or the wrong length still fails the run (the operations only read live
/// lumps, so either means a lost lump); `verify` adds the checks of [`ExecOptions::verify`].
///
/// Stops at the first error: a Cannyls error (e.g. `StorageFull`), a failed check (naming the
/// lump), or an op-log that cannot be written. `hooks.op_log` is flushed either way.
pub fn execute<N: NonVolatileMemory>(
    storage: &mut Storage<N>,
    ops: &[Op],
    opts: ExecOptions,
    hooks: &mut Hooks,
) -> Result<Outcome, RunError> {
    execute_with_clock(storage, ops, opts, hooks, &mut monotonic_ns)
}

/// [`execute`] timed by `clock` (nanoseconds): it is read once before the first operation,
/// just before and just after each Cannyls call, and once after the last operation. What
/// happens between the two reads around a call is what that operation's time measures; a
/// test clock sees exactly that.
fn execute_with_clock<N: NonVolatileMemory>(
    storage: &mut Storage<N>,
    ops: &[Op],
    opts: ExecOptions,
    hooks: &mut Hooks,
    clock: &mut dyn FnMut() -> u64,
) -> Result<Outcome, RunError> {
    let result = execute_inner(storage, ops, opts, hooks, clock);
    if let Some(log) = hooks.op_log.as_mut() {
        let flushed = log.flush().map_err(RunError::OpLog);
        if result.is_ok() {
            flushed?;
        }
    }
    if let Some(progress) = &hooks.progress {
        progress.set_position(result.as_ref().map_or(0, |o| o.ops));
        progress.finish_and_clear();
    }
    result
}

fn execute_inner<N: NonVolatileMemory>(
    storage: &mut Storage<N>,
    ops: &[Op],
    opts: ExecOptions,
    hooks: &mut Hooks,
    clock: &mut dyn FnMut() -> u64,
) -> Result<Outcome, RunError> {
    let mut lumps = Lumps::default();
    let mut out = Outcome {
        recorder: Recorder::default(),
        wall_ns: 0,
        ops: 0,
        put_bytes: 0,
        embed_bytes: 0,
        get_bytes: 0,
        data_usage_peak_bytes: Some(0),
    };
    let mut peak_usage = 0u64;
    let mut last_progress = 0u64;
    let wall_start = clock();
    for (seq, op) in ops.iter().enumerate() {
        let cannyls_error = |error: cannyls::Error| RunError::Cannyls {
            seq,
            op: OpText(*op),
            error,
        };
        let verify_error = |id: u64, problem: String| RunError::Verify {
            seq,
            op: OpText(*op),
            id,
            problem,
        };
        let (kind, bytes, start, end) = match *op {
            Op::Put {
                id, size, embedded, ..
            } => {
                let version = lumps.next_version(id);
                let data = if embedded {
                    let mut bytes = vec![0; size as usize];
                    opts.content.fill(id, version, &mut bytes);
                    LumpData::new_embedded(bytes).map_err(cannyls_error)?
                } else {
                    let mut data = storage
                        .allocate_lump_data(size as usize)
                        .map_err(cannyls_error)?;
                    opts.content.fill(id, version, data.as_bytes_mut());
                    data
                };
                let lid = lump_id(id);
                let start = clock();
                let result = storage.put(&lid, &data);
                let end = clock();
                let created = result.map_err(cannyls_error)?;
                drop(data);
                let was_live = lumps.live.insert(id, size).is_some();
                lumps.versions.insert(id, version);
                if opts.verify && created == was_live {
                    return Err(verify_error(
                        id,
                        if created {
                            "put reports a new lump, but this run had put it and not deleted it"
                                .into()
                        } else {
                            "put reports it replaced a lump, but the lump was not live".into()
                        },
                    ));
                }
                let bytes = u64::from(size);
                if embedded {
                    out.embed_bytes += bytes;
                    (StatKind::Embed(size), bytes, start, end)
                } else {
                    out.put_bytes += bytes;
                    (StatKind::Put(size), bytes, start, end)
                }
            }
            Op::Get { id, size } => {
                let lid = lump_id(id);
                let start = clock();
                let result = storage.get(&lid);
                let end = clock();
                let data = result.map_err(cannyls_error)?;
                check_read(
                    data.as_ref(),
                    id,
                    lumps.version(id),
                    Some(size),
                    opts.verify.then_some(opts.content),
                )
                .map_err(|problem| verify_error(id, problem))?;
                drop(data);
                out.get_bytes += u64::from(size);
                (StatKind::Get(size), u64::from(size), start, end)
            }
            Op::Delete { id } => {
                let lid = lump_id(id);
                if opts.verify {
                    let data = storage.get(&lid).map_err(cannyls_error)?;
                    let size = lumps.live.get(&id).copied();
                    check_read(
                        data.as_ref(),
                        id,
                        lumps.version(id),
                        size,
                        Some(opts.content),
                    )
                    .map_err(|problem| {
                        verify_error(id, format!("read back before the delete: {problem}"))
                    })?;
                }
                let start = clock();
                let result = storage.delete(&lid);
                let end = clock();
                let deleted = result.map_err(cannyls_error)?;
                lumps.live.remove(&id);
                if opts.verify && !deleted {
                    return Err(verify_error(
                        id,
                        "delete reports no such lump, but it was live".into(),
                    ));
                }
                (StatKind::Delete, 0, start, end)
            }
            Op::DeleteRange {
                start: first,
                end: last,
            } => {
                let range = lump_id(first)..lump_id(last);
                let start = clock();
                let result = storage.delete_range(range);
                let end = clock();
                let mut removed: Vec<u64> = result
                    .map_err(cannyls_error)?
                    .iter()
                    .map(|l| l.as_u128() as u64)
                    .collect();
                let expected: Vec<u64> = if first < last {
                    lumps.live.range(first..last).map(|(&id, _)| id).collect()
                } else {
                    Vec::new()
                };
                for id in &expected {
                    lumps.live.remove(id);
                }
                if opts.verify {
                    removed.sort_unstable();
                    if removed != expected {
                        let id = removed
                            .iter()
                            .zip(&expected)
                            .find(|(a, b)| a != b)
                            .map(|(a, _)| *a)
                            .or_else(|| expected.get(removed.len()).copied())
                            .or_else(|| removed.get(expected.len()).copied())
                            .unwrap_or(first);
                        return Err(verify_error(
                            id,
                            format!(
                                "delete_range removed {} lumps, expected the {} live lumps in \
                                 {first}..{last}",
                                removed.len(),
                                expected.len()
                            ),
                        ));
                    }
                }
                (StatKind::DeleteRange, 0, start, end)
            }
            Op::Sync => {
                let start = clock();
                let result = storage.journal_sync();
                let end = clock();
                result.map_err(cannyls_error)?;
                (StatKind::Sync, 0, start, end)
            }
        };
        out.recorder.record(kind, end - start, bytes);
        out.ops += 1;
        peak_usage = peak_usage.max(storage.metrics().data_region().usage_bytes());
        if let Some(log) = hooks.op_log.as_mut() {
            log.record(seq, op, bytes, start, end)
                .map_err(RunError::OpLog)?;
        }
        if let Some(progress) = &hooks.progress {
            if end - last_progress >= 100_000_000 {
                progress.set_position(out.ops);
                last_progress = end;
            }
        }
    }
    out.wall_ns = clock() - wall_start;
    out.data_usage_peak_bytes = Some(peak_usage);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use std::io::{self, Read, Seek, SeekFrom, Write};
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;

    use cannyls::block::BlockSize;
    use cannyls::nvm::MemoryNvm;
    use cannyls::storage::StorageBuilder;

    use super::*;
    use crate::dsl::parse;
    use crate::generate::{expand, GenerateOptions};

    /// Device calls seen by a [`CountingNvm`] and its split halves.
    #[derive(Debug, Default)]
    struct Counts {
        reads: AtomicU64,
        writes: AtomicU64,
    }

    /// A `MemoryNvm` that counts the reads and writes Cannyls makes.
    #[derive(Debug)]
    struct CountingNvm {
        inner: MemoryNvm,
        counts: Arc<Counts>,
    }

    impl Read for CountingNvm {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.counts.reads.fetch_add(1, Ordering::SeqCst);
            self.inner.read(buf)
        }
    }

    impl Write for CountingNvm {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.counts.writes.fetch_add(1, Ordering::SeqCst);
            self.inner.write(buf)
        }
        fn flush(&mut self) -> io::Result<()> {
            self.inner.flush()
        }
    }

    impl Seek for CountingNvm {
        fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
            self.inner.seek(pos)
        }
    }

    impl NonVolatileMemory for CountingNvm {
        fn sync(&mut self) -> cannyls::Result<()> {
            self.inner.sync()
        }
        fn position(&self) -> u64 {
            self.inner.position()
        }
        fn capacity(&self) -> u64 {
            self.inner.capacity()
        }
        fn block_size(&self) -> BlockSize {
            self.inner.block_size()
        }
        fn split(self, position: u64) -> cannyls::Result<(Self, Self)> {
            let (a, b) = self.inner.split(position)?;
            let counts = self.counts;
            Ok((
                CountingNvm {
                    inner: a,
                    counts: Arc::clone(&counts),
                },
                CountingNvm { inner: b, counts },
            ))
        }
    }

    /// What an operation's time covers: only its Cannyls call. Content is generated (puts)
    /// and checked (`--verify`: gets, and deletes, which read the lump back first) outside
    /// the span, and no read of a check happens inside the span of a put or delete.
    #[test]
    fn the_timed_span_of_an_operation_holds_only_its_cannyls_call() {
        for content in [content::Content::Stream, content::Content::Zeros] {
            timed_spans_hold_only_the_cannyls_call(content);
        }
    }

    fn timed_spans_hold_only_the_cannyls_call(content: content::Content) {
        let counts = Arc::new(Counts::default());
        let nvm = CountingNvm {
            inner: MemoryNvm::new(vec![0; 16 << 20]),
            counts: Arc::clone(&counts),
        };
        let mut storage = StorageBuilder::new()
            .journal_region_ratio(0.25)
            .create(nvm)
            .unwrap();
        let workload = parse(
            "t.wl",
            "Command { 20.times { New(5000); Embed(100); }; 10.times { Get; OverWrite(7000); }; \
             Get(0, 10); Delete; Delete(50, 60); DeleteRange(0, 50); Sync; }",
        )
        .unwrap();
        let ops = expand(&workload, &GenerateOptions::default()).unwrap().ops;
        // At each clock read: (content calls, device reads, device writes) so far.
        let mut marks: Vec<(u64, u64, u64)> = Vec::new();
        let mut clock = || {
            marks.push((
                content::CALLS.with(|c| c.get()),
                counts.reads.load(Ordering::SeqCst),
                counts.writes.load(Ordering::SeqCst),
            ));
            marks.len() as u64
        };
        let outcome = execute_with_clock(
            &mut storage,
            &ops,
            ExecOptions {
                verify: true,
                content,
            },
            &mut Hooks::default(),
            &mut clock,
        )
        .unwrap();
        assert_eq!(outcome.ops, ops.len() as u64);
        // The run's first and last reads, and two around each call.
        assert_eq!(marks.len(), 2 + 2 * ops.len());
        let (mut puts, mut gets) = (0, 0);
        for (i, op) in ops.iter().enumerate() {
            let (start, end) = (marks[1 + 2 * i], marks[2 + 2 * i]);
            let what = format!("{content:?}: operation #{i} ({})", OpText(*op));
            assert_eq!(
                start.0, end.0,
                "{what}: content generated or checked in its timed span"
            );
            match op {
                Op::Put {
                    embedded: false, ..
                } => {
                    assert_eq!(start.1, end.1, "{what}: a device read in its timed span");
                    assert!(
                        end.2 > start.2,
                        "{what}: its data was not written in its span"
                    );
                    puts += 1;
                }
                Op::Get { .. } => {
                    assert!(end.1 > start.1, "{what}: nothing read in its span");
                    gets += 1;
                }
                Op::Put { .. } | Op::Delete { .. } | Op::DeleteRange { .. } => {
                    assert_eq!(start.1, end.1, "{what}: a device read in its timed span");
                }
                Op::Sync => {}
            }
        }
        assert_eq!((puts, gets), (30, 11));
        // The checks did run, outside the spans: every put's content was generated, every
        // get and delete checked.
        assert!(marks.last().unwrap().0 >= 40 + 11 + 2);
    }
}
