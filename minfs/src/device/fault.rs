//! [`FaultDevice`]: an in-memory [`BlockDevice`] **for tests** that keeps what the media would
//! hold after a power cut, and injects I/O errors.
//!
//! # The media model
//! The device holds a *durable* image and, in order, the writes made since the last successful
//! [`flush`](BlockDevice::flush) (*pending* writes, with their bytes). Reads see the *volatile*
//! view: the durable image with every pending write applied in order, as a drive with a write
//! cache returns it. A successful flush makes every pending write durable.
//!
//! A power cut ([`MediaState`], from [`FaultDevice::media`] or replayed from a trace with
//! [`MediaState::apply`]) gives the durable image plus, for each pending write independently,
//! one [`Fate`]:
//! - [`Fate::Lost`]: none of it reached the media; [`Fate::Kept`]: all of it did;
//! - for a write of several logical sectors, *torn* at a logical-sector boundary (the atomic
//!   unit the contract promises — e.g. a 4 KiB write on a 512-byte-sector device, or a 64 KiB
//!   metadata slot on any device): [`Fate::Prefix`]`(k)` keeps its first *k* sectors,
//!   [`Fate::Suffix`]`(k)` its last *k*, and [`Fate::Subset`]`(seed)` a pseudo-random subset.
//!
//! [`MediaState::with_atomic_unit`] models a media that writes larger units atomically (e.g.
//! the 4 KiB physical sector of a 512e disk, which most drives honour but the contract, and
//! minfs, do not rely on): writes then tear only at multiples of that unit on the device.
//!
//! # 512e media: read-modify-write of physical sectors
//! [`MediaState::with_rmw_physical`] models a 512e drive (512-byte logical sectors, 4 KiB
//! physical ones) **without power-loss protection** for its internal read-modify-write: a
//! pending write that covers only *part* of a physical sector makes the drive read that physical
//! sector, merge the new logical sectors in and write all of it back; a power cut during that
//! write can ruin the whole physical sector — all its logical sectors, including neighbours the
//! host never touched and that were flushed long before (Dell, "4K Sector HDD FAQ", 2014: most
//! client, cloud and cold drives have no protection for it; enterprise drives keep it in
//! non-volatile cache). Such a write then has, besides today's fates (the physical sector
//! comes back old, or new — the merged content — or torn at logical sectors as always),
//! [`Fate::Ruined`]: each physical sector it covers only in part comes back either
//! **unreadable** (every logical sector of it fails to read with `EIO` on the
//! [`CrashDevice`], [`CrashDevice::make_unreadable`]) or **garbage** (deterministic
//! pseudo-random bytes); the rest of the write is lost or kept. A write of whole physical
//! sectors keeps today's fates only. The ruin is the last thing that happens (the power cut):
//! it wins over every other write. [`MediaState::image`] has no unreadable sectors: there they
//! are garbage too.
//!
//! The surviving writes are applied in their original order, so where pending writes overlap
//! the later one wins. [`MediaState::variants`] enumerates every combination of lost, kept,
//! prefix and suffix fates when there are few enough, and otherwise samples them.
//!
//! # Injected errors
//! [`FaultDevice::inject`] fails the *n*-th read, write or flush (counted per kind from 0, over
//! the device's life; requests refused for breaking the contract are not counted) once or from
//! then on ([`FaultMode`]). What a failed operation did to the media:
//! - a failed **read** changes nothing, and fills the caller's buffer with `0xEE` bytes;
//! - a failed **write** of *n* sectors puts its first ⌊*n*/2⌋ sectors into the cache (visible to
//!   reads, pending like any unflushed write) and nothing else — a device that failed halfway;
//! - a failed **flush** makes nothing durable: every pending write stays pending (a crash may
//!   still lose, keep or tear each one, which covers a flush that got partway).
//!
//! # Unreadable sectors
//! [`FaultDevice::make_unreadable`] and [`CrashDevice::make_unreadable`] mark logical sectors
//! as a drive's latent sector errors: a read touching one fails with `EIO` (and fills the
//! caller's buffer with `0xEE` bytes) and changes nothing, as a drive reports an uncorrectable
//! sector. A later write that covers a marked sector whole clears the mark (the drive writes,
//! or reallocates, the sector); one that covers only part of it cannot, and leaves it marked.
//! The marks are not part of [`MediaState`]: they are set on the device a test runs or on the
//! crash image it opens.
//!
//! # Contract checks
//! Requests are checked like the real devices' (alignment to the logical sector, range) and
//! refused with [`std::io::ErrorKind::InvalidInput`] before anything else happens.
//!
//! # Traces
//! With [`FaultDevice::record_trace`] every operation is logged ([`TraceEntry`], with the bytes
//! each write put into the cache), so a test can run a workload once and afterwards rebuild the
//! media state after every operation with [`MediaState::apply`] — a crash after each of them —
//! without running the workload again.

use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::sync::{Arc, Mutex, MutexGuard};

use super::{check_request, BlockDevice};

/// Logical sectors that fail to read (latent sector errors), by byte offset.
#[derive(Debug, Clone, Default)]
struct BadSectors {
    sector: u64,
    offsets: std::collections::BTreeSet<u64>,
}

impl BadSectors {
    fn new(sector: u32) -> BadSectors {
        BadSectors {
            sector: u64::from(sector),
            offsets: Default::default(),
        }
    }

    /// Marks every logical sector that `offset..offset + len` touches.
    fn mark(&mut self, offset: u64, len: u64) {
        let first = offset / self.sector * self.sector;
        let end = offset.saturating_add(len);
        let mut at = first;
        while at < end {
            self.offsets.insert(at);
            at += self.sector;
        }
    }

    /// The first marked sector in `offset..offset + len`, if any.
    fn first_in(&self, offset: u64, len: u64) -> Option<u64> {
        self.offsets.range(offset..offset + len).next().copied()
    }

    /// Clears the marks a write of `len` bytes at `offset` covers whole (requests are
    /// sector-aligned, so that is every sector it touches).
    fn write(&mut self, offset: u64, len: u64) {
        if self.offsets.is_empty() {
            return;
        }
        let hit: Vec<u64> = self.offsets.range(offset..offset + len).copied().collect();
        for at in hit {
            self.offsets.remove(&at);
        }
    }

    /// The error a read of `len` bytes at `offset` gets, if it touches a marked sector.
    fn check_read(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        match self.first_in(offset, buf.len() as u64) {
            None => Ok(()),
            Some(bad) => {
                buf.fill(0xEE);
                Err(io::Error::new(
                    io::Error::from_raw_os_error(libc::EIO).kind(),
                    UnreadableSector {
                        offset: bad,
                        request_offset: offset,
                        request_len: buf.len() as u64,
                    },
                ))
            }
        }
    }
}

/// The error of a read that touched an unreadable sector (its `raw_os_error` is not set; its
/// message names the sector).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnreadableSector {
    /// Byte offset of the first unreadable sector the read touched.
    pub offset: u64,
    pub request_offset: u64,
    pub request_len: u64,
}

impl fmt::Display for UnreadableSector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unrecoverable read error (EIO): sector at byte {} is unreadable ({} bytes at byte {})",
            self.offset, self.request_len, self.request_offset
        )
    }
}

impl std::error::Error for UnreadableSector {}

/// The kind of a device operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OpKind {
    Read,
    Write,
    Flush,
}

impl OpKind {
    /// All three kinds.
    pub const ALL: [OpKind; 3] = [OpKind::Read, OpKind::Write, OpKind::Flush];

    fn index(self) -> usize {
        match self {
            OpKind::Read => 0,
            OpKind::Write => 1,
            OpKind::Flush => 2,
        }
    }
}

impl fmt::Display for OpKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            OpKind::Read => "read",
            OpKind::Write => "write",
            OpKind::Flush => "flush",
        })
    }
}

/// Whether an injected error happens once or for good.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FaultMode {
    /// Only the chosen operation fails.
    Once,
    /// The chosen operation and every later one of its kind fail.
    Forever,
}

/// An error to inject: the `nth` (from 0) operation of `kind` fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fault {
    pub kind: OpKind,
    pub nth: u64,
    pub mode: FaultMode,
}

impl Fault {
    fn hits(&self, kind: OpKind, index: u64) -> bool {
        kind == self.kind
            && match self.mode {
                FaultMode::Once => index == self.nth,
                FaultMode::Forever => index >= self.nth,
            }
    }
}

/// What happens to one pending (unflushed) write at a power cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fate {
    /// Nothing of it reached the media.
    Lost,
    /// All of it reached the media.
    Kept,
    /// Its first `k` pieces (logical sectors, or atomic units: [`MediaState::pieces_of`])
    /// reached the media, the others did not (0 < k < pieces).
    Prefix(u32),
    /// Its last `k` pieces reached the media, the others did not (0 < k < pieces).
    Suffix(u32),
    /// Each piece reached the media or not, as drawn from this seed.
    Subset(u64),
    /// Only with [`MediaState::with_rmw_physical`], for a write that covers some physical
    /// sector only in part: every such physical sector is ruined (all its logical sectors);
    /// the write's other pieces all reached the media or none did.
    Ruined(Ruin),
}

/// How [`Fate::Ruined`] leaves a write (see the [module docs](self#512e-media-read-modify-write-of-physical-sectors)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ruin {
    /// The ruined physical sectors fail to read (`EIO`) on a [`CrashDevice`], rather than
    /// reading back garbage.
    pub unreadable: bool,
    /// The write's pieces outside its partly covered physical sectors reached the media (else
    /// none of them did).
    pub rest_kept: bool,
}

impl Fate {
    /// Whether only part of the write reached the media (torn at a piece boundary; not
    /// [`Fate::Ruined`]).
    pub fn is_torn(self) -> bool {
        matches!(self, Fate::Prefix(_) | Fate::Suffix(_) | Fate::Subset(_))
    }

    /// Whether the write ruined the physical sectors it covered in part ([`Fate::Ruined`]).
    pub fn is_ruined(self) -> bool {
        matches!(self, Fate::Ruined(_))
    }

    /// Whether piece `i` of a write of `n` pieces reached the media.
    fn keeps(self, i: u32, n: u32, subset: &mut Option<XorShift>) -> bool {
        match self {
            Fate::Lost => false,
            Fate::Kept => true,
            Fate::Prefix(k) => i < k,
            Fate::Suffix(k) => i >= n.saturating_sub(k),
            Fate::Subset(seed) => subset.get_or_insert_with(|| XorShift::new(seed)).next() & 1 == 1,
            Fate::Ruined(r) => r.rest_kept,
        }
    }
}

/// A write made since the last successful flush.
#[derive(Debug, Clone)]
pub struct PendingWrite {
    pub offset: u64,
    pub data: Arc<[u8]>,
}

/// One operation of a [`FaultDevice`], as logged by [`FaultDevice::record_trace`].
#[derive(Debug, Clone)]
pub struct TraceEntry {
    pub kind: OpKind,
    /// Byte offset (0 for a flush).
    pub offset: u64,
    /// Bytes asked for (0 for a flush).
    pub len: u64,
    /// Whether an error was injected.
    pub failed: bool,
    /// For a write: the bytes that went into the cache at `offset` (all of them, or for a
    /// failed write the part that got there; `None` when nothing did).
    pub cached: Option<Arc<[u8]>>,
}

/// A small deterministic generator (xorshift64*), so that crash variants are reproducible.
#[derive(Debug, Clone)]
struct XorShift(u64);

impl XorShift {
    fn new(seed: u64) -> XorShift {
        // Never 0 (a fixed point), and nearby seeds give unrelated streams.
        XorShift(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `0..n` (n > 0), close enough for tests.
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// What the media holds at a power cut: the durable image and the pending writes in order.
#[derive(Clone)]
pub struct MediaState {
    /// Shared with the [`CrashDevice`]s made from this state (copied on the next flush if
    /// they are still alive).
    durable: Arc<Vec<u8>>,
    pending: Vec<PendingWrite>,
    sector: u32,
    /// Writes tear only at multiples of this (≥ `sector`).
    unit: u32,
    /// The physical sector of a 512e drive whose read-modify-write can ruin it
    /// ([`MediaState::with_rmw_physical`]).
    rmw: Option<u32>,
}

impl fmt::Debug for MediaState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MediaState")
            .field("len", &self.durable.len())
            .field("sector", &self.sector)
            .field("unit", &self.unit)
            .field("rmw", &self.rmw)
            .field(
                "pending",
                &self
                    .pending
                    .iter()
                    .map(|w| (w.offset, w.data.len()))
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl MediaState {
    /// A media holding `durable` with nothing pending, whose writes tear at
    /// `logical_sector_size` boundaries (what the [`BlockDevice`] contract allows).
    pub fn new(durable: Vec<u8>, logical_sector_size: u32) -> MediaState {
        assert!(
            logical_sector_size.is_power_of_two(),
            "logical sector size {logical_sector_size} is not a power of two"
        );
        MediaState {
            durable: Arc::new(durable),
            pending: Vec::new(),
            sector: logical_sector_size,
            unit: logical_sector_size,
            rmw: None,
        }
    }

    /// The same media writing `unit` bytes atomically: writes tear only at multiples of
    /// `unit` on the device (e.g. the physical sector of a 512e disk, the stronger promise
    /// most drives keep but minfs does not rely on). `unit` is a power-of-two multiple of the
    /// logical sector.
    pub fn with_atomic_unit(self, unit: u32) -> MediaState {
        assert!(
            unit.is_power_of_two() && unit >= self.sector,
            "atomic unit {unit} is not a power-of-two multiple of the {}-byte sector",
            self.sector
        );
        MediaState { unit, ..self }
    }

    /// The size writes tear at.
    pub fn atomic_unit(&self) -> u32 {
        self.unit
    }

    /// The same media as a 512e drive without power-loss protection for its read-modify-write
    /// of `physical`-byte physical sectors: a pending write covering some physical sector only
    /// in part may also be [`Fate::Ruined`] (see the
    /// [module docs](self#512e-media-read-modify-write-of-physical-sectors)). `physical` is a
    /// power-of-two multiple of the logical sector; equal to it, nothing changes.
    pub fn with_rmw_physical(self, physical: u32) -> MediaState {
        assert!(
            physical.is_power_of_two() && physical >= self.sector,
            "physical sector {physical} is not a power-of-two multiple of the {}-byte sector",
            self.sector
        );
        MediaState {
            rmw: Some(physical),
            ..self
        }
    }

    /// The physical sector size of [`MediaState::with_rmw_physical`], if set.
    pub fn rmw_physical(&self) -> Option<u32> {
        self.rmw
    }

    /// The physical sectors (byte offsets) that pending write `i` covers only in part, when
    /// the media is [`MediaState::with_rmw_physical`] (else none): at most its first and its
    /// last.
    pub fn partial_physical_of(&self, i: usize) -> Vec<u64> {
        let (Some(p), Some(w)) = (self.rmw, self.pending.get(i)) else {
            return Vec::new();
        };
        let p = u64::from(p);
        if w.data.is_empty() || p == u64::from(self.sector) {
            return Vec::new();
        }
        let end = w.offset + w.data.len() as u64;
        let first = w.offset / p * p;
        let last = (end - 1) / p * p;
        let mut out = Vec::new();
        if w.offset != first || end < first + p {
            out.push(first);
        }
        if last != first && end != last + p {
            out.push(last);
        }
        out
    }

    /// The physical sectors ruined when pending write `i` meets `fates[i]`, in order, with
    /// whether each is unreadable (else garbage): those of every [`Fate::Ruined`] write.
    pub fn ruined_sectors(&self, fates: &[Fate]) -> Vec<(u64, bool)> {
        let mut out: Vec<(u64, bool)> = Vec::new();
        for (i, &fate) in fates.iter().enumerate() {
            if let Fate::Ruined(r) = fate {
                for at in self.partial_physical_of(i) {
                    match out.iter_mut().find(|(o, _)| *o == at) {
                        // Unreadable wins over garbage.
                        Some(e) => e.1 |= r.unreadable,
                        None => out.push((at, r.unreadable)),
                    }
                }
            }
        }
        out
    }

    /// The durable image (what a crash that loses every pending write leaves).
    pub fn durable(&self) -> &[u8] {
        &self.durable
    }

    /// The pending writes, oldest first.
    pub fn pending(&self) -> &[PendingWrite] {
        &self.pending
    }

    /// Adds a pending write.
    pub fn write(&mut self, offset: u64, data: Arc<[u8]>) {
        assert!(
            offset as usize + data.len() <= self.durable.len(),
            "write of {} bytes at {offset} past the end of a {}-byte media",
            data.len(),
            self.durable.len()
        );
        self.pending.push(PendingWrite { offset, data });
    }

    /// Makes every pending write durable.
    pub fn flush(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let durable = Arc::make_mut(&mut self.durable);
        for w in std::mem::take(&mut self.pending) {
            let at = w.offset as usize;
            durable[at..at + w.data.len()].copy_from_slice(&w.data);
        }
    }

    /// Replays one traced operation: a write's cached bytes become pending, a successful flush
    /// makes them durable, anything else changes nothing.
    pub fn apply(&mut self, entry: &TraceEntry) {
        match entry.kind {
            OpKind::Write => {
                if let Some(data) = &entry.cached {
                    self.write(entry.offset, data.clone());
                }
            }
            OpKind::Flush if !entry.failed => self.flush(),
            _ => {}
        }
    }

    /// What reads see: the durable image with every pending write applied (all kept).
    pub fn volatile(&self) -> Vec<u8> {
        self.image(&vec![Fate::Kept; self.pending.len()])
    }

    /// The pieces pending write `i` tears into: its bytes cut at every multiple of the atomic
    /// unit (its logical sectors, unless [`MediaState::with_atomic_unit`]), as
    /// `(device offset, length)`.
    pub fn pieces_of(&self, i: usize) -> Vec<(u64, usize)> {
        let w = &self.pending[i];
        let unit = u64::from(self.unit);
        let end = w.offset + w.data.len() as u64;
        let mut out = Vec::new();
        let mut at = w.offset;
        while at < end {
            let next = ((at / unit + 1) * unit).min(end);
            out.push((at, (next - at) as usize));
            at = next;
        }
        out
    }

    /// How many pieces pending write `i` tears into.
    pub fn piece_count(&self, i: usize) -> u32 {
        let w = &self.pending[i];
        let unit = u64::from(self.unit);
        if w.data.is_empty() {
            return 0;
        }
        let last = w.offset + w.data.len() as u64 - 1;
        (last / unit - w.offset / unit + 1) as u32
    }

    /// The fates [`MediaState::variants`] enumerates for pending write `i`: lost, kept, and for
    /// a write of n > 1 pieces ([`MediaState::pieces_of`]) every prefix and suffix of 1..n
    /// pieces.
    ///
    /// With [`MediaState::with_rmw_physical`], a write that covers a physical sector in part
    /// has also [`Fate::Ruined`]: unreadable or garbage, the rest of it lost, and (when it has
    /// pieces outside its partly covered physical sectors) kept.
    pub fn fates(&self, i: usize) -> Vec<Fate> {
        let n = self.piece_count(i);
        let mut v = vec![Fate::Lost, Fate::Kept];
        v.extend((1..n).map(Fate::Prefix));
        v.extend((1..n).map(Fate::Suffix));
        v.extend(self.ruins(i).into_iter().map(Fate::Ruined));
        v
    }

    /// The [`Ruin`]s pending write `i` may meet (none unless it covers a physical sector in
    /// part on [`MediaState::with_rmw_physical`] media).
    fn ruins(&self, i: usize) -> Vec<Ruin> {
        let partial = self.partial_physical_of(i);
        if partial.is_empty() {
            return Vec::new();
        }
        // Pieces outside the partly covered physical sectors: the write touches more physical
        // sectors than those.
        let p = u64::from(self.rmw.unwrap_or(self.sector));
        let w = &self.pending[i];
        let end = w.offset + w.data.len() as u64;
        let has_rest = (end - 1) / p - w.offset / p + 1 > partial.len() as u64;
        let mut v = Vec::new();
        for unreadable in [true, false] {
            v.push(Ruin {
                unreadable,
                rest_kept: false,
            });
            if has_rest {
                v.push(Ruin {
                    unreadable,
                    rest_kept: true,
                });
            }
        }
        v
    }

    /// How many variants [`MediaState::variants`] would enumerate without a limit
    /// (saturating).
    pub fn variant_count(&self) -> u64 {
        (0..self.pending.len()).fold(1u64, |acc, i| {
            acc.saturating_mul(self.fates(i).len() as u64)
        })
    }

    /// The crash variants to check, as one fate per pending write.
    ///
    /// When there are at most `max` combinations of the [`MediaState::fates`], all of them.
    /// Otherwise `max` of them (`max` ≥ 2): every write lost, every write kept, then (512e
    /// media) each [`Fate::Ruined`] of each write with the writes before it kept and the ones
    /// after it lost, then for each
    /// pending write the stream cut inside it at each physical-sector boundary
    /// (`physical_sector_size`: the writes before it kept, a prefix of it, the ones after lost),
    /// then random combinations drawn from `seed` (lost, kept, prefixes, suffixes and random
    /// subsets), without duplicates.
    pub fn variants(&self, max: usize, physical_sector_size: u32, seed: u64) -> Vec<Vec<Fate>> {
        let fates: Vec<Vec<Fate>> = (0..self.pending.len()).map(|i| self.fates(i)).collect();
        let total = self.variant_count();
        if total <= max as u64 {
            let mut out = Vec::with_capacity(total as usize);
            let mut digits = vec![0usize; fates.len()];
            loop {
                out.push(digits.iter().zip(&fates).map(|(&d, f)| f[d]).collect());
                // Mixed-radix increment.
                let mut i = 0;
                loop {
                    if i == digits.len() {
                        return out;
                    }
                    digits[i] += 1;
                    if digits[i] < fates[i].len() {
                        break;
                    }
                    digits[i] = 0;
                    i += 1;
                }
            }
        }
        let n = self.pending.len();
        let mut out: Vec<Vec<Fate>> = vec![vec![Fate::Lost; n], vec![Fate::Kept; n]];
        // 512e media: each ruin of each write, the writes before it kept, the ones after lost.
        for i in 0..n {
            for r in self.ruins(i) {
                let mut v = vec![Fate::Kept; i];
                v.push(Fate::Ruined(r));
                v.resize(n, Fate::Lost);
                out.push(v);
            }
        }
        out.truncate(max);
        let physical = u64::from(physical_sector_size.max(1));
        'cuts: for i in 0..n {
            for (k, (at, _)) in self.pieces_of(i).into_iter().enumerate().skip(1) {
                if at % physical != 0 {
                    continue;
                }
                if out.len() >= max {
                    break 'cuts;
                }
                let mut v = vec![Fate::Kept; i];
                v.push(Fate::Prefix(k as u32));
                v.resize(n, Fate::Lost);
                out.push(v);
            }
        }
        let mut rng = XorShift::new(seed);
        let mut tries = 0usize;
        while out.len() < max && tries < max * 20 {
            tries += 1;
            let v = self.random_variant_with(&mut rng);
            if !out.contains(&v) {
                out.push(v);
            }
        }
        out.truncate(max);
        out
    }

    /// One random variant drawn from `seed`: each pending write independently lost, kept,
    /// torn to a prefix, a suffix or a random subset of its pieces (or, on 512e media, one time
    /// in four for a write that covers a physical sector in part, [`Fate::Ruined`]).
    pub fn random_variant(&self, seed: u64) -> Vec<Fate> {
        self.random_variant_with(&mut XorShift::new(seed))
    }

    fn random_variant_with(&self, rng: &mut XorShift) -> Vec<Fate> {
        (0..self.pending.len())
            .map(|i| {
                let ruins = self.ruins(i);
                if !ruins.is_empty() && rng.below(4) == 0 {
                    return Fate::Ruined(ruins[rng.below(ruins.len() as u64) as usize]);
                }
                let n = self.piece_count(i);
                let choice = if n > 1 { rng.below(5) } else { rng.below(2) };
                match choice {
                    0 => Fate::Lost,
                    1 => Fate::Kept,
                    2 => Fate::Prefix(1 + rng.below(u64::from(n) - 1) as u32),
                    3 => Fate::Suffix(1 + rng.below(u64::from(n) - 1) as u32),
                    _ => Fate::Subset(rng.next()),
                }
            })
            .collect()
    }

    /// The image after a power cut in which pending write `i` met `fates[i]`.
    pub fn image(&self, fates: &[Fate]) -> Vec<u8> {
        let mut out = Vec::new();
        self.image_into(fates, &mut out);
        out
    }

    /// [`MediaState::image`] into `out` (reusing its allocation).
    pub fn image_into(&self, fates: &[Fate], out: &mut Vec<u8>) {
        out.clear();
        out.extend_from_slice(&self.durable);
        self.for_each_kept(fates, |at, bytes| {
            let at = at as usize;
            out[at..at + bytes.len()].copy_from_slice(bytes);
        });
    }

    /// The image after a power cut in which pending write `i` met `fates[i]`, as a device,
    /// without copying the image: see [`CrashDevice`].
    pub fn crash_device(&self, fates: &[Fate], physical_sector_size: u32) -> CrashDevice {
        let mut overlay = BTreeMap::new();
        self.for_each_kept(fates, |at, bytes| {
            overlay.insert(at, Box::<[u8]>::from(bytes));
        });
        let mut bad = BadSectors::new(self.sector);
        if let Some(p) = self.rmw {
            for (at, unreadable) in self.ruined_sectors(fates) {
                if unreadable {
                    bad.mark(at, u64::from(p));
                }
            }
        }
        CrashDevice {
            base: self.durable.clone(),
            overlay: Mutex::new(overlay),
            bad: Mutex::new(bad),
            logical: self.sector,
            physical: physical_sector_size,
        }
    }

    /// Calls `f(offset, bytes)` for each logical sector of the pending writes that reaches the
    /// media when pending write `i` meets `fates[i]`, in write order (later calls win): the
    /// durable image plus these is the crash image, without copying the image. Last come the
    /// logical sectors of the physical sectors that [`Fate::Ruined`] writes ruined, as garbage
    /// (drawn from their offset).
    pub fn for_each_kept(&self, fates: &[Fate], mut f: impl FnMut(u64, &[u8])) {
        assert_eq!(
            fates.len(),
            self.pending.len(),
            "one fate per pending write"
        );
        let s = self.sector as usize;
        for (i, (w, &fate)) in self.pending.iter().zip(fates).enumerate() {
            let pieces = self.pieces_of(i);
            let n = pieces.len() as u32;
            let mut subset = None;
            for (p, (at, len)) in pieces.into_iter().enumerate() {
                if fate.keeps(p as u32, n, &mut subset) {
                    let rel = (at - w.offset) as usize;
                    for sector in (rel..rel + len).step_by(s) {
                        f(w.offset + sector as u64, &w.data[sector..sector + s]);
                    }
                }
            }
        }
        let Some(physical) = self.rmw else { return };
        let mut garbage = vec![0u8; s];
        for (at, _) in self.ruined_sectors(fates) {
            for sector in (at..at + u64::from(physical)).step_by(s) {
                let mut rng = XorShift::new(sector ^ 0x6A09_E667_F3BC_C908);
                for b in garbage.chunks_mut(8) {
                    b.copy_from_slice(&rng.next().to_le_bytes()[..b.len()]);
                }
                f(sector, &garbage);
            }
        }
    }
}

/// A crash image as a [`BlockDevice`], from [`MediaState::crash_device`]: the durable image,
/// shared rather than copied, with the surviving sectors of the pending writes laid over it per
/// logical sector. Writes (a recovery's) go over it too; `flush` does nothing (it has no cache).
/// It checks requests like the real devices.
pub struct CrashDevice {
    base: Arc<Vec<u8>>,
    overlay: Mutex<BTreeMap<u64, Box<[u8]>>>,
    bad: Mutex<BadSectors>,
    logical: u32,
    physical: u32,
}

impl fmt::Debug for CrashDevice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CrashDevice")
            .field("len", &self.base.len())
            .field("logical", &self.logical)
            .field("physical", &self.physical)
            .finish_non_exhaustive()
    }
}

impl CrashDevice {
    fn overlay(&self) -> MutexGuard<'_, BTreeMap<u64, Box<[u8]>>> {
        self.overlay.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Marks the logical sectors that `offset..offset + len` touches unreadable (see the
    /// [module docs](self#unreadable-sectors)).
    pub fn make_unreadable(&self, offset: u64, len: u64) {
        self.bad().mark(offset, len);
    }

    /// Byte offsets of the sectors marked unreadable now.
    pub fn unreadable_sectors(&self) -> Vec<u64> {
        self.bad().offsets.iter().copied().collect()
    }

    fn bad(&self) -> MutexGuard<'_, BadSectors> {
        self.bad.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The whole content, as one buffer (unreadable sectors with what they last held).
    pub fn to_vec(&self) -> Vec<u8> {
        let mut out = self.base.to_vec();
        for (&at, bytes) in self.overlay().iter() {
            out[at as usize..at as usize + bytes.len()].copy_from_slice(bytes);
        }
        out
    }
}

impl BlockDevice for CrashDevice {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        check_request(self, buf.as_ptr(), buf.len(), offset)?;
        self.bad().check_read(buf, offset)?;
        let at = offset as usize;
        buf.copy_from_slice(&self.base[at..at + buf.len()]);
        for (&pos, bytes) in self.overlay().range(offset..offset + buf.len() as u64) {
            let rel = (pos - offset) as usize;
            buf[rel..rel + bytes.len()].copy_from_slice(bytes);
        }
        Ok(())
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        check_request(self, buf.as_ptr(), buf.len(), offset)?;
        let s = self.logical as usize;
        self.bad().write(offset, buf.len() as u64);
        let mut o = self.overlay();
        for (i, sector) in buf.chunks(s).enumerate() {
            o.insert(offset + (i * s) as u64, sector.into());
        }
        Ok(())
    }

    fn flush(&self) -> io::Result<()> {
        Ok(())
    }

    fn len(&self) -> u64 {
        self.base.len() as u64
    }

    fn logical_sector_size(&self) -> u32 {
        self.logical
    }

    fn physical_sector_size(&self) -> u32 {
        self.physical
    }

    fn is_read_only(&self) -> bool {
        false
    }
}

/// Operation counters of a [`FaultDevice`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OpCounts {
    pub reads: u64,
    pub writes: u64,
    pub flushes: u64,
    /// Operations that failed by injection.
    pub injected: u64,
}

impl OpCounts {
    /// Operations of every kind.
    pub fn total(&self) -> u64 {
        self.reads + self.writes + self.flushes
    }

    /// Operations of `kind`.
    pub fn of(&self, kind: OpKind) -> u64 {
        match kind {
            OpKind::Read => self.reads,
            OpKind::Write => self.writes,
            OpKind::Flush => self.flushes,
        }
    }
}

struct State {
    volatile: Vec<u8>,
    media: MediaState,
    counts: [u64; 3],
    injected: u64,
    faults: Vec<Fault>,
    trace: Option<Vec<TraceEntry>>,
    bad: BadSectors,
}

/// A test device: an in-memory image with a write cache that a test can crash, and
/// injectable I/O errors. See the [module docs](self).
pub struct FaultDevice {
    len: u64,
    logical: u32,
    physical: u32,
    state: Mutex<State>,
}

impl fmt::Debug for FaultDevice {
    /// Concise: geometry and counters, not the image.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.lock();
        f.debug_struct("FaultDevice")
            .field("len", &self.len)
            .field("logical", &self.logical)
            .field("physical", &self.physical)
            .field("counts", &st.counts)
            .field("pending", &st.media.pending.len())
            .field("faults", &st.faults)
            .finish()
    }
}

impl FaultDevice {
    /// A zero-filled device of `len` bytes (durable), with these sector sizes.
    pub fn new(len: u64, logical: u32, physical: u32) -> FaultDevice {
        FaultDevice::from_bytes(vec![0; len as usize], logical, physical)
    }

    /// A device whose durable content is `bytes`.
    pub fn from_bytes(bytes: Vec<u8>, logical: u32, physical: u32) -> FaultDevice {
        FaultDevice {
            len: bytes.len() as u64,
            logical,
            physical,
            state: Mutex::new(State {
                volatile: bytes.clone(),
                media: MediaState::new(bytes, logical),
                counts: [0; 3],
                injected: 0,
                faults: Vec::new(),
                trace: None,
                bad: BadSectors::new(logical),
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves consistent data (each operation updates the
        // state only after its checks); keep going.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds an error to inject.
    pub fn inject(&self, fault: Fault) {
        self.lock().faults.push(fault);
    }

    /// Removes every error still to inject (a `Forever` one stops failing).
    pub fn clear_faults(&self) {
        self.lock().faults.clear();
    }

    /// Operations so far (each counted when it starts; contract violations are not counted).
    pub fn counts(&self) -> OpCounts {
        let st = self.lock();
        OpCounts {
            reads: st.counts[0],
            writes: st.counts[1],
            flushes: st.counts[2],
            injected: st.injected,
        }
    }

    /// Starts (or restarts, discarding the old one) logging every operation.
    pub fn record_trace(&self) {
        self.lock().trace = Some(Vec::new());
    }

    /// The log since [`FaultDevice::record_trace`] (empty when not recording); logging
    /// continues with an empty log.
    pub fn take_trace(&self) -> Vec<TraceEntry> {
        self.lock()
            .trace
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// Marks the logical sectors that `offset..offset + len` touches unreadable (see the
    /// [module docs](self#unreadable-sectors)).
    pub fn make_unreadable(&self, offset: u64, len: u64) {
        self.lock().bad.mark(offset, len);
    }

    /// Byte offsets of the sectors marked unreadable now.
    pub fn unreadable_sectors(&self) -> Vec<u64> {
        self.lock().bad.offsets.iter().copied().collect()
    }

    /// What the media holds right now, for crashing: durable image plus pending writes.
    pub fn media(&self) -> MediaState {
        self.lock().media.clone()
    }

    /// The durable image (a crash now that loses every pending write).
    pub fn durable_image(&self) -> Vec<u8> {
        self.lock().media.durable.to_vec()
    }

    /// What reads see now (no crash).
    pub fn volatile_image(&self) -> Vec<u8> {
        self.lock().volatile.clone()
    }

    /// Counts an operation of `kind` and tells whether it fails by injection.
    fn start(st: &mut State, kind: OpKind) -> bool {
        let index = st.counts[kind.index()];
        st.counts[kind.index()] += 1;
        let fail = st.faults.iter().any(|f| f.hits(kind, index));
        if fail {
            st.injected += 1;
        }
        fail
    }

    fn injected_error(kind: OpKind, offset: u64, len: usize) -> io::Error {
        io::Error::other(format!(
            "injected {kind} error ({len} bytes at byte {offset})"
        ))
    }

    fn log(st: &mut State, entry: TraceEntry) {
        if let Some(t) = st.trace.as_mut() {
            t.push(entry);
        }
    }
}

impl BlockDevice for FaultDevice {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        check_request(self, buf.as_ptr(), buf.len(), offset)?;
        let mut st = self.lock();
        let failed = FaultDevice::start(&mut st, OpKind::Read);
        FaultDevice::log(
            &mut st,
            TraceEntry {
                kind: OpKind::Read,
                offset,
                len: buf.len() as u64,
                failed,
                cached: None,
            },
        );
        if failed {
            buf.fill(0xEE);
            return Err(FaultDevice::injected_error(OpKind::Read, offset, buf.len()));
        }
        st.bad.check_read(buf, offset)?;
        let at = offset as usize;
        buf.copy_from_slice(&st.volatile[at..at + buf.len()]);
        Ok(())
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        check_request(self, buf.as_ptr(), buf.len(), offset)?;
        let mut st = self.lock();
        let failed = FaultDevice::start(&mut st, OpKind::Write);
        let keep = if failed {
            let s = self.logical as usize;
            buf.len() / s / 2 * s
        } else {
            buf.len()
        };
        let cached: Option<Arc<[u8]>> = (keep > 0).then(|| Arc::from(&buf[..keep]));
        if let Some(data) = &cached {
            let at = offset as usize;
            st.volatile[at..at + keep].copy_from_slice(data);
            st.media.write(offset, data.clone());
            st.bad.write(offset, keep as u64);
        }
        FaultDevice::log(
            &mut st,
            TraceEntry {
                kind: OpKind::Write,
                offset,
                len: buf.len() as u64,
                failed,
                cached,
            },
        );
        if failed {
            return Err(FaultDevice::injected_error(
                OpKind::Write,
                offset,
                buf.len(),
            ));
        }
        Ok(())
    }

    fn flush(&self) -> io::Result<()> {
        let mut st = self.lock();
        let failed = FaultDevice::start(&mut st, OpKind::Flush);
        FaultDevice::log(
            &mut st,
            TraceEntry {
                kind: OpKind::Flush,
                offset: 0,
                len: 0,
                failed,
                cached: None,
            },
        );
        if failed {
            return Err(FaultDevice::injected_error(OpKind::Flush, 0, 0));
        }
        st.media.flush();
        Ok(())
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn logical_sector_size(&self) -> u32 {
        self.logical
    }

    fn physical_sector_size(&self) -> u32 {
        self.physical
    }

    fn is_read_only(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn aligned(len: usize, fill: u8) -> crate::AlignedBuf {
        let mut b = crate::AlignedBuf::zeroed(len, 4096);
        b.fill(fill);
        b
    }

    #[test]
    fn writes_are_durable_only_after_flush() {
        let dev = FaultDevice::new(16384, 512, 4096);
        dev.write_at(&aligned(4096, 1), 4096).unwrap();
        let mut back = aligned(4096, 0);
        dev.read_at(&mut back, 4096).unwrap();
        assert!(back.iter().all(|&b| b == 1), "reads see the cache");
        assert!(dev.durable_image().iter().all(|&b| b == 0));
        let media = dev.media();
        assert_eq!(media.pending().len(), 1);
        // Lost, kept, 7 prefixes, 7 suffixes.
        assert_eq!(media.variant_count(), 16);
        let variants = media.variants(100, 4096, 1);
        assert_eq!(variants.len(), 16);
        for v in &variants {
            let img = media.image(v);
            let kept = img[4096..8192].chunks(512).filter(|s| s[0] == 1).count();
            match v[0] {
                Fate::Lost => assert_eq!(kept, 0),
                Fate::Kept => assert_eq!(kept, 8),
                Fate::Prefix(k) => {
                    assert_eq!(kept, k as usize);
                    assert_eq!(img[4096], 1);
                }
                Fate::Suffix(k) => {
                    assert_eq!(kept, k as usize);
                    assert_eq!(img[8191], 1);
                }
                Fate::Subset(_) | Fate::Ruined(_) => unreachable!("not enumerated"),
            }
            // Sectors are whole: old or new, never mixed.
            for s in img.chunks(512) {
                assert!(s.iter().all(|&b| b == s[0]));
            }
        }
        dev.flush().unwrap();
        assert!(dev.media().pending().is_empty());
        assert!(dev.durable_image()[4096..8192].iter().all(|&b| b == 1));
    }

    #[test]
    fn a_crash_device_is_the_crash_image_without_copying_it() {
        let dev = FaultDevice::new(1 << 20, 512, 4096);
        dev.write_at(&aligned(65536, 3), 0).unwrap();
        dev.flush().unwrap();
        dev.write_at(&aligned(8192, 4), 4096).unwrap();
        dev.write_at(&aligned(4096, 5), 8192).unwrap();
        let media = dev.media();
        for fates in media.variants(64, 4096, 3) {
            let crash = media.crash_device(&fates, 4096);
            assert_eq!(crash.to_vec(), media.image(&fates), "{fates:?}");
            let mut buf = aligned(16384, 0);
            crash.read_at(&mut buf, 0).unwrap();
            assert_eq!(&buf[..], &media.image(&fates)[..16384]);
            // Writes land over it, not in the shared image.
            crash.write_at(&aligned(512, 9), 1024).unwrap();
            crash.read_at(&mut buf, 0).unwrap();
            assert_eq!(buf[1024], 9);
            assert_eq!(media.durable()[1024], 3);
            assert!(crash.write_at(&buf[..100], 0).is_err(), "contract checked");
        }
    }

    #[test]
    fn an_atomic_unit_tears_writes_only_at_its_boundaries() {
        let dev = FaultDevice::new(1 << 16, 512, 4096);
        dev.write_at(&aligned(1024, 1), 1024).unwrap();
        dev.write_at(&aligned(8192, 2), 2048).unwrap();
        let media = dev.media();
        assert_eq!(media.piece_count(0), 2);
        assert_eq!(media.piece_count(1), 16);
        let media = media.with_atomic_unit(4096);
        assert_eq!(media.pieces_of(0), vec![(1024, 1024)]);
        assert_eq!(
            media.pieces_of(1),
            vec![(2048, 2048), (4096, 4096), (8192, 2048)]
        );
        // Lost/kept for the first; lost, kept, 2 prefixes, 2 suffixes for the second.
        assert_eq!(media.variant_count(), 2 * 6);
        let img = media.image(&[Fate::Lost, Fate::Prefix(1)]);
        assert_eq!((img[2047], img[2048], img[4095], img[4096]), (0, 2, 2, 0));
        let img = media.image(&[Fate::Kept, Fate::Suffix(2)]);
        assert_eq!((img[1024], img[2048], img[4096], img[10239]), (1, 0, 2, 2));
        // Random variants: each piece of the second write is all new or all old.
        for seed in 0..50 {
            let v = media.random_variant(seed);
            let img = media.image(&v);
            for (at, len) in media.pieces_of(1) {
                let piece = &img[at as usize..at as usize + len];
                let new = piece.iter().filter(|&&b| b == 2).count();
                assert!(new == 0 || new == len, "{v:?}: piece at {at} torn");
            }
        }
    }

    /// 512e media: a write of one logical sector inside a flushed physical sector comes back
    /// old, new (merged), or with the whole physical sector ruined — unreadable or garbage,
    /// its flushed neighbours too.
    #[test]
    fn a_512e_partial_write_comes_back_old_new_or_with_its_physical_sector_ruined() {
        let dev = FaultDevice::new(16384, 512, 4096);
        dev.write_at(&aligned(8192, 1), 0).unwrap();
        dev.flush().unwrap();
        dev.write_at(&aligned(512, 2), 1024).unwrap();
        let plain = dev.media();
        assert_eq!(plain.fates(0), vec![Fate::Lost, Fate::Kept], "not 512e");
        let media = plain.with_rmw_physical(4096);
        assert_eq!(media.partial_physical_of(0), vec![0]);
        let fates = media.fates(0);
        assert_eq!(fates.len(), 4, "{fates:?}");
        let mut seen = [false; 4];
        let mut buf = aligned(4096, 0);
        for fate in fates {
            let img = media.image(&[fate]);
            let crash = media.crash_device(&[fate], 4096);
            assert_eq!(crash.to_vec(), img, "{fate:?}");
            // The next physical sector is never touched.
            assert!(img[4096..8192].iter().all(|&b| b == 1), "{fate:?}");
            crash.read_at(&mut buf, 4096).unwrap();
            let sectors: Vec<&[u8]> = img[..4096].chunks(512).collect();
            match fate {
                Fate::Lost => {
                    seen[0] = true;
                    assert!(img[..4096].iter().all(|&b| b == 1));
                }
                Fate::Kept => {
                    seen[1] = true;
                    assert!(sectors[2].iter().all(|&b| b == 2));
                    assert!(sectors[1].iter().chain(sectors[3]).all(|&b| b == 1));
                }
                Fate::Ruined(r) => {
                    // Every logical sector of the physical sector, the flushed neighbours
                    // too: neither old nor new.
                    for s in &sectors {
                        assert!(s.iter().any(|&b| b != 1) && s.iter().any(|&b| b != 2));
                    }
                    assert!(!r.rest_kept || fate != Fate::Lost);
                    if r.unreadable {
                        seen[2] = true;
                        assert_eq!(crash.unreadable_sectors().len(), 8);
                        for at in (0..4096).step_by(512) {
                            let e = crash.read_at(&mut buf[..512], at).unwrap_err();
                            assert!(e.to_string().contains("unreadable"), "{e}");
                        }
                    } else {
                        seen[3] = true;
                        assert!(crash.unreadable_sectors().is_empty());
                        crash.read_at(&mut buf, 0).unwrap();
                        assert_eq!(&buf[..], &img[..4096]);
                    }
                    assert_eq!(media.ruined_sectors(&[fate]), vec![(0, r.unreadable)]);
                }
                other => panic!("unexpected fate {other:?}"),
            }
        }
        assert_eq!(seen, [true; 4], "old, new, unreadable, garbage");
        // Garbage is deterministic.
        let g = Fate::Ruined(Ruin {
            unreadable: false,
            rest_kept: false,
        });
        assert_eq!(media.image(&[g]), media.image(&[g]));
    }

    /// 512e media: a write with a partial head and tail sector has both ruined, and the whole
    /// physical sectors between them lost or kept; whole-physical-sector writes keep today's
    /// fates; every variant is enumerated, sampled and drawn deterministically.
    #[test]
    fn a_512e_write_ruins_only_its_partial_physical_sectors() {
        let dev = FaultDevice::new(1 << 16, 512, 4096);
        dev.write_at(&aligned(16384, 1), 0).unwrap();
        dev.flush().unwrap();
        // Sectors 3584..8704: head [0, 4096) and tail [8192, 12288) partial, [4096, 8192) whole.
        dev.write_at(&aligned(5120, 2), 3584).unwrap();
        // A whole physical sector.
        dev.write_at(&aligned(4096, 3), 12288).unwrap();
        let plain = dev.media();
        let media = plain.clone().with_rmw_physical(4096);
        assert_eq!(media.partial_physical_of(0), vec![0, 8192]);
        assert!(media.partial_physical_of(1).is_empty());
        assert_eq!(
            media.fates(1),
            plain.fates(1),
            "whole sectors: today's fates"
        );
        assert_eq!(media.fates(0).len(), plain.fates(0).len() + 4);
        assert_eq!(
            media.variant_count(),
            (plain.fates(0).len() as u64 + 4) * plain.fates(1).len() as u64
        );
        for unreadable in [true, false] {
            for rest_kept in [true, false] {
                let fates = [
                    Fate::Ruined(Ruin {
                        unreadable,
                        rest_kept,
                    }),
                    Fate::Kept,
                ];
                let img = media.image(&fates);
                let crash = media.crash_device(&fates, 4096);
                let whole = if rest_kept { 2 } else { 1 };
                assert!(img[4096..8192].iter().all(|&b| b == whole), "{fates:?}");
                assert!(img[12288..16384].iter().all(|&b| b == 3), "{fates:?}");
                for at in [0usize, 3584, 8192, 11776] {
                    let s = &img[at..at + 512];
                    assert!(s.iter().any(|&b| b != 1) && s.iter().any(|&b| b != 2));
                }
                let bad = crash.unreadable_sectors();
                if unreadable {
                    assert_eq!(bad.len(), 16);
                    assert_eq!((bad[0], bad[8]), (0, 8192));
                } else {
                    assert!(bad.is_empty());
                }
            }
        }
        // Enumerated when few: every ruin is among the variants.
        let all = media.variants(1000, 4096, 1);
        assert_eq!(all.len() as u64, media.variant_count());
        assert_eq!(
            all.iter().filter(|v| v[0].is_ruined()).count(),
            4 * plain.fates(1).len()
        );
        // Sampled when many: each ruin right after all lost and all kept.
        let some = media.variants(6, 4096, 1);
        assert_eq!(some.len(), 6);
        assert!(some[2..]
            .iter()
            .all(|v| v[0].is_ruined() && v[1] == Fate::Lost));
        assert_eq!(some, media.variants(6, 4096, 1));
        // Random variants: deterministic, some ruined, never on plain media.
        let drawn: Vec<Vec<Fate>> = (0..200).map(|s| media.random_variant(s)).collect();
        assert!(drawn.iter().any(|v| v[0].is_ruined()));
        assert!(drawn.iter().all(|v| !v[1].is_ruined()));
        assert_eq!(drawn[7], media.random_variant(7));
        assert!((0..200).all(|s| !plain.random_variant(s)[0].is_ruined()));
        // Logical = physical: nothing is partial.
        let dev = FaultDevice::new(8192, 4096, 4096);
        dev.write_at(&aligned(4096, 1), 4096).unwrap();
        assert!(dev
            .media()
            .with_rmw_physical(4096)
            .partial_physical_of(0)
            .is_empty());
    }

    #[test]
    fn later_overlapping_writes_win() {
        let dev = FaultDevice::new(8192, 512, 512);
        dev.write_at(&aligned(1024, 1), 0).unwrap();
        dev.write_at(&aligned(512, 2), 512).unwrap();
        let media = dev.media();
        assert_eq!(media.volatile(), dev.volatile_image());
        let img = media.image(&[Fate::Kept, Fate::Kept]);
        assert_eq!((img[0], img[512]), (1, 2));
        let img = media.image(&[Fate::Kept, Fate::Lost]);
        assert_eq!((img[0], img[512]), (1, 1));
        let img = media.image(&[Fate::Lost, Fate::Kept]);
        assert_eq!((img[0], img[512]), (0, 2));
        // 4 fates for the first (lost, kept, prefix 1, suffix 1), 2 for the second.
        assert_eq!(media.variant_count(), 8);
    }

    #[test]
    fn sampling_keeps_the_extremes_and_is_deterministic() {
        let dev = FaultDevice::new(1 << 20, 512, 4096);
        dev.write_at(&aligned(65536, 3), 0).unwrap();
        dev.write_at(&aligned(65536, 4), 65536).unwrap();
        let media = dev.media();
        assert_eq!(media.variant_count(), 256 * 256);
        let v = media.variants(40, 4096, 7);
        assert_eq!(v.len(), 40);
        assert_eq!(v[0], vec![Fate::Lost; 2]);
        assert_eq!(v[1], vec![Fate::Kept; 2]);
        assert_eq!(v[2], vec![Fate::Prefix(8), Fate::Lost]);
        assert_eq!(v, media.variants(40, 4096, 7));
        let mut seen = std::collections::HashSet::new();
        assert!(v.iter().all(|x| seen.insert(x.clone())), "no duplicates");
        // A random subset keeps whole sectors only.
        let img = media.image(&[Fate::Subset(99), Fate::Lost]);
        let kept = img[..65536].chunks(512).filter(|s| s[0] == 3).count();
        assert!(kept > 0 && kept < 128, "{kept}");
    }

    #[test]
    fn injected_errors_count_per_kind_and_model_a_half_written_request() {
        let dev = FaultDevice::new(16384, 512, 512);
        dev.inject(Fault {
            kind: OpKind::Write,
            nth: 1,
            mode: FaultMode::Once,
        });
        dev.inject(Fault {
            kind: OpKind::Flush,
            nth: 0,
            mode: FaultMode::Forever,
        });
        dev.record_trace();
        dev.write_at(&aligned(2048, 1), 0).unwrap();
        let e = dev.write_at(&aligned(2048, 2), 4096).unwrap_err();
        assert!(e.to_string().contains("injected write error"), "{e}");
        dev.write_at(&aligned(512, 3), 8192).unwrap();
        assert!(dev.flush().is_err());
        assert!(dev.flush().is_err(), "forever");
        let v = dev.volatile_image();
        assert_eq!(&v[4096..4096 + 1024], &[2u8; 1024][..], "first half cached");
        assert_eq!(&v[5120..6144], &[0u8; 1024][..], "second half not");
        assert!(
            dev.durable_image().iter().all(|&b| b == 0),
            "nothing durable"
        );
        assert_eq!(dev.media().pending().len(), 3);
        let c = dev.counts();
        assert_eq!((c.reads, c.writes, c.flushes, c.injected), (0, 3, 2, 3));
        // Replaying the trace gives the same media.
        let mut replay = MediaState::new(vec![0; 16384], 512);
        for e in dev.take_trace() {
            replay.apply(&e);
        }
        assert_eq!(replay.volatile(), v);
        assert_eq!(replay.pending().len(), 3);
        let mut buf = aligned(512, 0);
        dev.inject(Fault {
            kind: OpKind::Read,
            nth: 0,
            mode: FaultMode::Once,
        });
        assert!(dev.read_at(&mut buf, 0).is_err());
        assert!(buf.iter().all(|&b| b == 0xEE));
        dev.read_at(&mut buf, 0).unwrap();
        assert!(buf.iter().all(|&b| b == 1));
    }

    #[test]
    fn unreadable_sectors_fail_reads_until_rewritten() {
        let dev = FaultDevice::new(16384, 512, 4096);
        dev.write_at(&aligned(4096, 7), 4096).unwrap();
        dev.flush().unwrap();
        dev.make_unreadable(5000, 1);
        assert_eq!(dev.unreadable_sectors(), vec![4608]);
        let mut buf = aligned(4096, 0);
        let e = dev.read_at(&mut buf, 4096).unwrap_err();
        assert_eq!(e.kind(), io::Error::from_raw_os_error(libc::EIO).kind());
        assert!(e.to_string().contains("sector at byte 4608"), "{e}");
        assert!(buf.iter().all(|&b| b == 0xEE));
        // Reads that miss the sector work.
        dev.read_at(&mut buf[..512], 4096).unwrap();
        dev.read_at(&mut buf[..512], 5120).unwrap();
        assert!(buf[..512].iter().all(|&b| b == 7));
        assert!(super::super::is_media_error(&e), "{e}");
        // A write over it clears it.
        dev.write_at(&aligned(512, 8), 4608).unwrap();
        assert!(dev.unreadable_sectors().is_empty());
        dev.read_at(&mut buf, 4096).unwrap();
        assert_eq!((buf[0], buf[512], buf[1024]), (7, 8, 7));

        // The same on a crash image.
        let media = dev.media();
        let crash = media.crash_device(&vec![Fate::Kept; media.pending().len()], 4096);
        crash.make_unreadable(0, 4096);
        assert_eq!(crash.unreadable_sectors().len(), 8);
        assert!(crash.read_at(&mut buf[..512], 1024).is_err());
        crash.write_at(&aligned(1024, 1), 1024).unwrap();
        assert_eq!(crash.unreadable_sectors().len(), 6);
        crash.read_at(&mut buf[..1024], 1024).unwrap();
        assert!(crash.read_at(&mut buf[..4096], 0).is_err());
    }

    /// Several marked ranges: each read touching one fails with a media error naming the
    /// first marked sector it touches; one write covering several clears them all, a write
    /// beside them none; other errors are not media errors.
    #[test]
    fn latent_sector_errors_are_media_errors_cleared_by_covering_writes() {
        use super::super::is_media_error;
        let dev = FaultDevice::new(1 << 16, 512, 4096);
        dev.make_unreadable(8192, 1024);
        dev.make_unreadable(20480, 512);
        assert_eq!(dev.unreadable_sectors(), vec![8192, 8704, 20480]);
        let mut buf = aligned(16384, 0);
        let e = dev.read_at(&mut buf, 4096).unwrap_err();
        assert!(is_media_error(&e), "{e}");
        assert!(e.to_string().contains("sector at byte 8192"), "{e}");
        let e = dev.read_at(&mut buf[..4096], 20480).unwrap_err();
        assert!(is_media_error(&e) && e.to_string().contains("20480"), "{e}");
        // Not media errors: a refused request, an injected failure, a plain OS error.
        let refused = dev.read_at(&mut buf[..100], 0).unwrap_err();
        assert!(!is_media_error(&refused));
        assert!(!is_media_error(&io::Error::from_raw_os_error(libc::EINVAL)));
        assert!(is_media_error(&io::Error::from_raw_os_error(libc::EIO)));
        dev.inject(Fault {
            kind: OpKind::Read,
            nth: dev.counts().reads,
            mode: FaultMode::Once,
        });
        assert!(!is_media_error(
            &dev.read_at(&mut buf[..512], 0).unwrap_err()
        ));
        // A write beside the marks clears none; one over the first range clears both of its
        // sectors and leaves the other range marked.
        dev.write_at(&aligned(512, 1), 7680).unwrap();
        assert_eq!(dev.unreadable_sectors().len(), 3);
        dev.write_at(&aligned(4096, 2), 8192).unwrap();
        assert_eq!(dev.unreadable_sectors(), vec![20480]);
        dev.read_at(&mut buf, 4096).unwrap();
        assert!(buf[4096..8192].iter().all(|&b| b == 2));
        assert!(dev.read_at(&mut buf[..512], 20480).is_err());
    }

    #[test]
    fn contract_violations_are_refused_without_counting() {
        let dev = FaultDevice::new(8192, 512, 4096);
        let buf = aligned(1024, 0);
        for (b, off) in [(&buf[..512], 100u64), (&buf[..100], 0), (&buf[1..513], 0)] {
            let e = dev.write_at(b, off).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        }
        let e = dev.write_at(&buf[..1024], 7680).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        assert_eq!(dev.counts().total(), 0);
    }
}
