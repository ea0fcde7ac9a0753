//! Journal-tail recovery: finds where a Cannyls 0.10 journal really ends after a crash and,
//! where Cannyls would refuse the storage, cuts the journal there before Cannyls reads it.
//!
//! # The format read here (Cannyls 0.10, storage format 1.1)
//! - Storage header region, at 0, `ceil(44, block size)` bytes: `"lusf"`, `u16` header size
//!   (38), `u16` major version (1), `u16` minor version (≤ 1), `u16` block size, 16-byte
//!   instance UUID, `u64` journal region size, `u64` data region size (all big-endian).
//! - Journal region: its first block is the journal header (`u64` ring head, then zeros); the
//!   rest is the ring. Records are `[u32 Adler-32 of the rest][u8 tag][payload]`:
//!   `EndOfRecords` (tag 0, no payload), `GoToFront` (1), `Put` (3: `u128` id, `u16` length in
//!   blocks, `u40` start block), `Embed` (4: `u128` id, `u16` length, the bytes), `Delete`
//!   (5: `u128` id), `DeleteRange` (6: two `u128` ids). There are no sequence numbers.
//! - Cannyls reads the ring from the head: records up to `EndOfRecords`, following one
//!   `GoToFront` back to ring position 0. Any record that fails to decode or to match its
//!   checksum makes `StorageBuilder::open` fail with `StorageCorrupted`.
//!
//! # How Cannyls writes the ring (what the rule below relies on)
//! Every append writes the record **and a fresh `EndOfRecords` right after it**, in Cannyls'
//! in-memory journal buffer; the buffer reaches the memory as one block-aligned write that
//! starts at the block holding the previous durable `EndOfRecords` (the previous tail) and
//! rewrites the bytes before it unchanged. `journal_sync` issues that write, then flushes. So
//! after a crash the ring holds: everything up to the tail of the last `journal_sync` that
//! returned (durable), then the unacknowledged writes, each of which may be lost, kept, or torn
//! at sector boundaries.
//!
//! # The rule
//! Walk from the head exactly as Cannyls does. The journal ends at the first `EndOfRecords`
//! (clean), or at the first record that cannot be read: it runs past the ring's end, has an
//! unknown tag, or fails its checksum, or is a second `GoToFront`. The repair writes an
//! `EndOfRecords` there, zeroes the rest of the ring up to [`CLEAR_AHEAD`] bytes after it
//! (free ring space, never reaching the head), and flushes.
//!
//! Why the cut is at the real end — everything acknowledged before it, nothing half-applied:
//! - A durable record is never unreadable: it was written whole and flushed, and later writes
//!   rewrite the bytes before the tail only with themselves. So the first unreadable record is
//!   past the last acknowledged `EndOfRecords`: unacknowledged, like everything after it.
//! - Every record before the cut was read whole with a matching checksum, and, with
//!   [`crate::MinfsNvm`]'s write order (crate docs), it is this epoch's and its data is
//!   durable: the epoch's bytes other than the held block are flushed before that block is
//!   written, so the walk gets past the old `EndOfRecords` only through bytes of this epoch.
//!   A stale record from an earlier lap could be met only past the end of what this epoch
//!   wrote — the walk stops before, at this epoch's `EndOfRecords` — or inside the held block
//!   when it tore (a block larger than the device's atomic write): there the old bytes are
//!   the previous version of that block, whose records before the old tail are identical and
//!   whose bytes after it are Cannyls' buffer padding. A record boundary of the new bytes
//!   meeting, at a sector boundary, a whole valid record in that padding is the one case this
//!   argument does not exclude; the crash suite has met none (its counts line).
//! - After the wrap the walk reading up to the head means it read stale bytes, and a record at
//!   the head that cannot be read leaves nothing to keep: both are
//!   [`Inspection::Unrepairable`], and opening fails with
//!   [`crate::Error::JournalUnrepairable`] rather than guessing.

use std::fmt;

use cannyls::block::BlockSize;
use minfs::{AlignedBuf, FileHandle};

/// How many bytes after a cut the repair zeroes (bounded by the head and the ring's end).
pub const CLEAR_AHEAD: u64 = 64 << 10;

const MAGIC: &[u8; 4] = b"lusf";
const HEADER_SIZE: u16 = 38;
pub(crate) const FULL_HEADER_SIZE: u64 = 44;
const MAJOR_VERSION: u16 = 1;
const MINOR_VERSION: u16 = 1;

const TAG_END_OF_RECORDS: u8 = 0;
const TAG_GO_TO_FRONT: u8 = 1;
pub(crate) const TAG_PUT: u8 = 3;
pub(crate) const TAG_EMBED: u8 = 4;
pub(crate) const TAG_DELETE: u8 = 5;
pub(crate) const TAG_DELETE_RANGE: u8 = 6;
/// Checksum and tag.
pub(crate) const RECORD_HEAD: u64 = 5;
/// The bytes of an `EndOfRecords`: Adler-32 of `[0]` (0x00010001), then the tag.
pub(crate) const END_OF_RECORDS: [u8; 5] = [0, 1, 0, 1, TAG_END_OF_RECORDS];

/// Where a Cannyls storage's regions are within its memory (from its storage header).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// The storage's block size.
    pub block_size: u16,
    /// Where the journal region starts (after the storage header region).
    pub journal_start: u64,
    /// The journal region's size (its header block and the ring).
    pub journal_size: u64,
    /// The data region's size.
    pub data_size: u64,
}

impl Layout {
    /// Where the ring starts (after the journal header block).
    pub fn ring_start(&self) -> u64 {
        self.journal_start + u64::from(self.block_size)
    }

    /// Where the storage ends, relative to its start: the end of its data region.
    pub fn storage_end(&self) -> u64 {
        self.journal_start + self.journal_size + self.data_size
    }

    /// The ring's size in bytes.
    pub fn ring_size(&self) -> u64 {
        self.journal_size - u64::from(self.block_size)
    }

    /// Decodes a storage header from its first bytes: `Err(why)` when they are not a Cannyls
    /// 0.10 storage header (no `lusf` magic, another version, or a storage header and journal
    /// region that do not fit `capacity`).
    ///
    /// The data region may end past `capacity`: Cannyls' own `FileNvm` (what FrugalOS' file
    /// devices are) creates an empty file and lets the storage's writes extend it, so such a
    /// file — e.g. one on `minfs mount` — is shorter than its storage until the data region's
    /// last block has been written. Bytes past the end were never written, so no lump lies
    /// there.
    pub fn decode(bytes: &[u8], capacity: u64) -> Result<Layout, String> {
        if bytes.len() < FULL_HEADER_SIZE as usize || &bytes[..4] != MAGIC {
            return Err("no Cannyls storage header (magic \"lusf\" missing)".into());
        }
        let u16_at = |i: usize| u16::from_be_bytes([bytes[i], bytes[i + 1]]);
        let u64_at = |i: usize| u64::from_be_bytes(bytes[i..i + 8].try_into().expect("8 bytes"));
        let (header_size, major, minor, block_size) = (u16_at(4), u16_at(6), u16_at(8), u16_at(10));
        if header_size != HEADER_SIZE || major != MAJOR_VERSION || minor > MINOR_VERSION {
            return Err(format!(
                "storage header size {header_size}, version {major}.{minor}: only Cannyls \
                 storage format 1.0/1.1 (header size 38) is understood"
            ));
        }
        if BlockSize::new(block_size).is_err() {
            return Err(format!("storage header: invalid block size {block_size}"));
        }
        let (journal_size, data_size) = (u64_at(28), u64_at(36));
        let bs = u64::from(block_size);
        let journal_start = FULL_HEADER_SIZE.div_ceil(bs) * bs;
        let journal_end = journal_start.checked_add(journal_size);
        let fits = journal_size > bs
            && journal_size % bs == 0
            && journal_end.is_some_and(|end| end <= capacity)
            && journal_end.and_then(|e| e.checked_add(data_size)).is_some();
        if !fits {
            return Err(format!(
                "storage header: a journal region of {journal_size} bytes (data region {data_size} \
                 bytes) at block size {block_size} does not fit the memory's {capacity} bytes"
            ));
        }
        Ok(Layout {
            block_size,
            journal_start,
            journal_size,
            data_size,
        })
    }
}

/// Why the walk stopped before an `EndOfRecords`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unreadable {
    /// The record would run past the ring's end.
    PastRingEnd {
        /// The record's tag.
        tag: u8,
    },
    /// The tag is none of Cannyls'.
    UnknownTag(u8),
    /// The stored checksum does not match the record.
    Checksum {
        /// The record's tag.
        tag: u8,
        /// The checksum stored.
        stored: u32,
        /// The checksum of the bytes.
        computed: u32,
    },
    /// A second `GoToFront`.
    SecondWrap,
    /// After the wrap, the record reaches the head.
    ReachesHead,
}

impl fmt::Display for Unreadable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unreadable::PastRingEnd { tag } => {
                write!(f, "a record (tag {tag}) that runs past the ring's end")
            }
            Unreadable::UnknownTag(t) => write!(f, "an unknown record tag {t}"),
            Unreadable::Checksum {
                tag,
                stored,
                computed,
            } => write!(
                f,
                "a record (tag {tag}) whose checksum {stored:#010x} does not match its bytes \
                 ({computed:#010x})"
            ),
            Unreadable::SecondWrap => write!(f, "a second GoToFront"),
            Unreadable::ReachesHead => write!(f, "a record that reaches the head after the wrap"),
        }
    }
}

/// What [`inspect`] found in a memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Inspection {
    /// No Cannyls storage header (a new file, or not a storage): nothing to check.
    NoStorage(String),
    /// The journal ends with an `EndOfRecords`: Cannyls opens it as it is.
    Clean {
        /// The storage layout.
        layout: Layout,
        /// The ring head (from the journal header).
        head: u64,
        /// Ring position of the `EndOfRecords`.
        end: u64,
        /// Records before it.
        records: u64,
    },
    /// The journal's tail cannot be read: Cannyls would refuse it; [`repair`] cuts it.
    TornTail(Cut),
    /// Bytes the walk needs cannot be read, from the storage nor from its copy (an
    /// unreadable sector in both, or in a storage without a copy): nothing after them can be
    /// shown to be current; `minfs-cannyls fsck --salvage` is the last resort.
    Hole(Hole),
    /// No position can be shown to be the journal's end (the record at the head cannot be
    /// read, or the walk met stale records after the wrap).
    Unrepairable {
        /// The storage layout.
        layout: Layout,
        /// The ring head.
        head: u64,
        /// Ring position where the walk stopped.
        at: u64,
        /// What was found at the head.
        found: Unreadable,
    },
}

/// Journal bytes the walk needed and could read from neither the storage nor its copy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hole {
    /// The storage layout.
    pub layout: Layout,
    /// The ring head; `None` when the journal header block itself is unreadable.
    pub head: Option<u64>,
    /// Ring position of the record that needed the bytes.
    pub record_at: u64,
    /// Ring position of the unreadable bytes (whole blocks); `None` for the journal header.
    pub at: Option<u64>,
    /// Their length.
    pub len: u64,
    /// Whole records read before it.
    pub records: u64,
}

impl fmt::Display for Hole {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.head, self.at) {
            (None, _) | (_, None) => write!(
                f,
                "the journal header block ({} bytes at byte {} of the storage) is unreadable, \
                 and no copy of it could be read",
                self.len, self.layout.journal_start
            ),
            (Some(head), Some(at)) => write!(
                f,
                "after {} whole records from the head at ring position {head}, the record at \
                 ring position {} needs ring bytes {at}..{} (file offset {}), which are \
                 unreadable and no copy of them could be read",
                self.records,
                self.record_at,
                at + self.len,
                self.layout.ring_start() + at
            ),
        }
    }
}

/// Where a journal is cut, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cut {
    /// The storage layout.
    pub layout: Layout,
    /// The ring head.
    pub head: u64,
    /// Ring position of the first unreadable record: the `EndOfRecords` goes here.
    pub at: u64,
    /// Whole records before it (kept).
    pub records: u64,
    /// What was found there.
    pub found: Unreadable,
}

/// A repair made on open (see [`crate::MinfsNvm::recovery`]): what was cut and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecoveryReport {
    /// The minfs target.
    pub target: String,
    /// The minfs file.
    pub file: String,
    /// The cut.
    pub cut: Cut,
    /// Byte offset of the cut within the file.
    pub file_offset: u64,
    /// Bytes zeroed after the new `EndOfRecords` (unacknowledged leftovers).
    pub cleared: u64,
}

impl fmt::Display for RecoveryReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = &self.cut;
        write!(
            f,
            "{}: file {:?}: Cannyls journal repaired: after {} whole records from the head at \
             ring position {}, found {} at ring position {} (file offset {}): an unacknowledged \
             write torn by a crash; wrote an EndOfRecords there and zeroed the {} bytes after it",
            self.target,
            self.file,
            c.records,
            c.head,
            c.found,
            c.at,
            self.file_offset,
            self.cleared
        )
    }
}

/// What a walk needs when a read of the storage fails with an unreadable sector: the same
/// bytes from somewhere it can vouch for (the copy, [`crate::copy`]). Each method returns `None`
/// when it cannot.
pub(crate) trait Fallback {
    /// The storage's first sector was read: the fallback serves only a copy of that storage.
    fn primary_header(&mut self, sector: &[u8]);
    /// The storage header region (`[0, journal_start)` of the memory).
    fn storage_header(&mut self, len: usize) -> Option<AlignedBuf>;
    /// The journal header block.
    fn journal_header(&mut self) -> Option<AlignedBuf>;
    /// The primary's ring head is known (from its journal header or from the fallback's): what
    /// a copy may vouch for starts there.
    fn set_head(&mut self, head: u64);
    /// Ring bytes from `start` (a multiple of the block size) towards `end`, or `None`.
    fn ring(&mut self, start: u64, end: u64) -> Option<Served>;
}

/// Ring bytes a [`Fallback`] serves: `buf` holds `[start, to)`, of which it vouches for
/// `[from, to)` (the bytes before `from`, e.g. those of the head's block before the head, are
/// nobody's concern or not known).
pub(crate) struct Served {
    pub(crate) from: u64,
    pub(crate) to: u64,
    pub(crate) buf: AlignedBuf,
}

/// Reads the ring of the storage at `base` of `file` through a window of whole blocks.
///
/// "Read what is needed": a window is up to [`WINDOW`] bytes from the block of the first byte
/// asked for. When a window read fails with an unreadable sector, that read is not repeated
/// in smaller pieces (each failed read costs the drive's error recovery time, up to minutes):
/// the bytes come from the [`Fallback`] as far as it vouches for them, and past that only the
/// blocks the walk then asks for are read, one request each — so an unreadable sector the walk
/// never needs (free ring space past `EndOfRecords`) costs that one failed read and no
/// failure. A needed range that cannot be read from either is a hole ([`Stop::Hole`]).
pub(crate) struct RingReader<'a, 'f> {
    file: &'a FileHandle,
    block: BlockSize,
    /// File offset of ring position 0.
    base: u64,
    cap: u64,
    window_start: u64,
    window: AlignedBuf,
    /// The window's bytes before this are not to be used.
    window_valid: u64,
    /// Ring ranges whose window read failed: read only what is needed there.
    bad: Vec<(u64, u64)>,
    fallback: Option<&'a mut (dyn Fallback + 'f)>,
    /// Reads that failed with an unreadable sector.
    pub(crate) failed_reads: u64,
    /// Known end of what the walk needs (a hint; reads stop there).
    limit: Option<u64>,
}

/// Why a [`RingReader`] gave no bytes.
#[derive(Debug)]
pub(crate) enum Stop {
    /// A device error other than an unreadable sector the fallback could serve.
    Io(minfs::Error),
    /// Ring bytes `[at, at + len)` that neither the storage nor its fallback can give.
    Hole { at: u64, len: u64 },
}

impl From<minfs::Error> for Stop {
    fn from(e: minfs::Error) -> Stop {
        Stop::Io(e)
    }
}

/// Whether `e` is a read that touched an unreadable sector (`EIO`), which a copy may serve.
pub(crate) fn is_unreadable(e: &minfs::Error) -> bool {
    match e {
        minfs::Error::Io { source, .. } => minfs::device::is_media_error(source),
        _ => false,
    }
}

const WINDOW: u64 = 1 << 20;

impl<'a, 'f> RingReader<'a, 'f> {
    pub(crate) fn new(
        file: &'a FileHandle,
        block: BlockSize,
        base: u64,
        cap: u64,
        fallback: Option<&'a mut (dyn Fallback + 'f)>,
    ) -> Self {
        RingReader {
            file,
            block,
            base,
            cap,
            window_start: 0,
            window: AlignedBuf::zeroed(0, sector_align(file)),
            window_valid: 0,
            bad: Vec::new(),
            fallback,
            failed_reads: 0,
            limit: None,
        }
    }

    fn in_bad(&self, pos: u64) -> bool {
        self.bad.iter().any(|&(a, b)| a <= pos && pos < b)
    }

    fn read(&mut self, start: u64, end: u64) -> minfs::Result<AlignedBuf> {
        let mut buf = AlignedBuf::zeroed((end - start) as usize, sector_align(self.file));
        self.file.read_at(&mut buf, self.base + start)?;
        Ok(buf)
    }

    /// `len` bytes at ring position `pos` (the caller keeps them within the ring).
    pub(crate) fn get(&mut self, pos: u64, len: u64) -> Result<&[u8], Stop> {
        let end = pos + len;
        let have = self.window_valid..self.window_start + self.window.len() as u64;
        if pos < have.start || end > have.end {
            self.load(pos, end)?;
        }
        let at = (pos - self.window_start) as usize;
        Ok(&self.window[at..at + len as usize])
    }

    fn install(&mut self, start: u64, valid: u64, buf: AlignedBuf) {
        self.window = buf;
        self.window_start = start;
        self.window_valid = valid;
    }

    fn load(&mut self, pos: u64, end: u64) -> Result<(), Stop> {
        let start = self.block.floor_align(pos);
        let ring_end = self.block.floor_align(self.cap);
        let needed = self.block.ceil_align(end).min(ring_end);
        if self.in_bad(start) {
            return self.load_needed(pos, end, start, needed);
        }
        let mut stop = self.block.ceil_align(end).max(start + WINDOW).min(ring_end);
        if let Some(limit) = self.limit.filter(|&l| l >= start) {
            stop = stop.min(self.block.ceil_align(limit + RECORD_HEAD).max(needed));
        }
        match self.read(start, stop) {
            Ok(buf) => {
                self.install(start, start, buf);
                Ok(())
            }
            Err(e) if is_unreadable(&e) => {
                self.failed_reads += 1;
                self.bad.push((start, stop));
                match self.fallback.as_mut().and_then(|f| f.ring(start, stop)) {
                    Some(s) if s.from <= pos && s.to >= end => {
                        self.install(start, s.from, s.buf);
                        Ok(())
                    }
                    // The fallback vouches for less than is needed: the rest from the storage,
                    // from the block where the fallback stopped.
                    Some(s) if s.from <= pos => {
                        let from = self.block.floor_align(s.to).max(start);
                        let rest = match self.read(from, needed) {
                            Ok(rest) => rest,
                            Err(e) if is_unreadable(&e) => {
                                self.failed_reads += 1;
                                return Err(Stop::Hole {
                                    at: from,
                                    len: needed - from,
                                });
                            }
                            Err(e) => return Err(Stop::Io(e)),
                        };
                        let mut buf =
                            AlignedBuf::zeroed((needed - start) as usize, sector_align(self.file));
                        let k = (from - start) as usize;
                        buf[..k].copy_from_slice(&s.buf[..k]);
                        buf[k..].copy_from_slice(&rest);
                        self.install(start, s.from, buf);
                        Ok(())
                    }
                    _ => self.load_needed(pos, end, start, needed),
                }
            }
            Err(e) => Err(Stop::Io(e)),
        }
    }

    /// Reads exactly the blocks `[start, needed)` (for bytes `[pos, end)`), from the storage
    /// or else its fallback.
    fn load_needed(&mut self, pos: u64, end: u64, start: u64, needed: u64) -> Result<(), Stop> {
        match self.read(start, needed) {
            Ok(buf) => {
                self.install(start, start, buf);
                Ok(())
            }
            Err(e) if is_unreadable(&e) => {
                self.failed_reads += 1;
                match self.fallback.as_mut().and_then(|f| f.ring(start, needed)) {
                    Some(s) if s.from <= pos && s.to >= end => {
                        self.install(start, s.from, s.buf);
                        Ok(())
                    }
                    _ => Err(Stop::Hole {
                        at: start,
                        len: needed - start,
                    }),
                }
            }
            Err(e) => Err(Stop::Io(e)),
        }
    }
}

/// The alignment O_DIRECT needs for `file`'s buffers.
pub(crate) fn sector_align(file: &FileHandle) -> usize {
    file.sector_size().max(1) as usize
}

/// Reads the storage header of the memory `[base, base + capacity)` of `file`.
pub(crate) fn layout(
    file: &FileHandle,
    base: u64,
    capacity: u64,
) -> minfs::Result<Result<Layout, String>> {
    layout_with(file, base, capacity, None)
}

/// [`layout`], serving an unreadable header from `fallback`.
pub(crate) fn layout_with(
    file: &FileHandle,
    base: u64,
    capacity: u64,
    mut fallback: Option<&mut (dyn Fallback + '_)>,
) -> minfs::Result<Result<Layout, String>> {
    let sector = u64::from(file.sector_size());
    if capacity < sector || sector < FULL_HEADER_SIZE {
        return Ok(Err(format!(
            "a memory of {capacity} bytes on {sector}-byte sectors holds no storage header"
        )));
    }
    let mut buf = AlignedBuf::zeroed(sector as usize, sector_align(file));
    match file.read_at(&mut buf, base) {
        Ok(()) => {}
        Err(e) if is_unreadable(&e) => {
            return match fallback.and_then(|f| f.storage_header(sector as usize)) {
                Some(copy) => Ok(Layout::decode(&copy, capacity)),
                None => Err(e),
            }
        }
        Err(e) => return Err(e),
    }
    let layout = Layout::decode(&buf, capacity);
    if let Some(f) = fallback.as_deref_mut() {
        f.primary_header(&buf);
    }
    // The rest of the storage header region, which Cannyls reads whole: its copy's when it
    // cannot be read (written back with the rest).
    if let (Ok(l), Some(f)) = (&layout, fallback) {
        if l.journal_start > sector {
            let mut rest =
                AlignedBuf::zeroed((l.journal_start - sector) as usize, sector_align(file));
            match file.read_at(&mut rest, base + sector) {
                Ok(()) => {}
                Err(e) if is_unreadable(&e) => {
                    if f.storage_header(sector as usize).is_none() {
                        return Err(e);
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }
    Ok(layout)
}

/// Walks the journal of the storage in `[base, base + capacity)` of `file` (Cannyls' rules,
/// see the module docs) without writing anything.
pub fn inspect(file: &FileHandle, base: u64, capacity: u64) -> minfs::Result<Inspection> {
    walk(file, base, capacity, &mut |_, _| {})
}

/// [`inspect`], calling `visit(ring position, record bytes)` for each whole record before the
/// end, in order (`Put`, `Embed`, `Delete` and `DeleteRange`; not `GoToFront`): what Cannyls
/// replays to rebuild its lump index when it opens the storage.
pub(crate) fn walk(
    file: &FileHandle,
    base: u64,
    capacity: u64,
    visit: &mut dyn FnMut(u64, &[u8]),
) -> minfs::Result<Inspection> {
    Ok(walk_with(file, base, capacity, None, None, visit)?.0)
}

/// A record of the journal, as the walk reads it: `Put`, `Embed`, `Delete` or `DeleteRange`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record {
    /// Ring position.
    pub pos: u64,
    /// Bytes.
    pub len: u64,
    /// Tag (3 `Put`, 4 `Embed`, 5 `Delete`, 6 `DeleteRange`).
    pub tag: u8,
    /// The lump id (the first of a `DeleteRange`).
    pub id: u128,
}

/// [`inspect`], with the records read before the end, in order.
pub fn records(
    file: &FileHandle,
    base: u64,
    capacity: u64,
) -> minfs::Result<(Inspection, Vec<Record>)> {
    let mut out = Vec::new();
    let found = walk(file, base, capacity, &mut |pos, b| {
        out.push(Record {
            pos,
            len: b.len() as u64,
            tag: b[4],
            id: u128::from_be_bytes(b[5..21].try_into().expect("16 bytes")),
        })
    })?;
    Ok((found, out))
}

/// How a walk went, beyond its [`Inspection`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct WalkInfo {
    /// Ring position of the `GoToFront` the walk followed.
    pub(crate) wrap: Option<u64>,
    /// Reads that failed with an unreadable sector.
    pub(crate) failed_reads: u64,
    /// Ring position of the record where the walk stopped (the `EndOfRecords` when clean).
    pub(crate) stop: u64,
    /// The ring head.
    pub(crate) head: u64,
}

impl WalkInfo {
    /// The ring ranges the walk read as whole records (and the `GoToFront`), in order: from
    /// the head to the `GoToFront`'s end and from 0 to `stop`, or from the head to `stop`.
    pub(crate) fn path(&self) -> Vec<(u64, u64)> {
        match self.wrap {
            Some(w) => vec![(self.head, w + RECORD_HEAD), (0, self.stop)],
            None => vec![(self.head, self.stop)],
        }
    }
}

/// [`walk`] with a [`Fallback`] for unreadable sectors and an optional hint of where the
/// journal ends (`limit`, a ring position the walk need not read past).
pub(crate) fn walk_with<'f>(
    file: &FileHandle,
    base: u64,
    capacity: u64,
    mut fallback: Option<&mut (dyn Fallback + 'f)>,
    limit: Option<u64>,
    visit: &mut dyn FnMut(u64, &[u8]),
) -> minfs::Result<(Inspection, WalkInfo)> {
    let mut info = WalkInfo::default();
    let layout = match layout_with(file, base, capacity, fallback.as_deref_mut())? {
        Ok(l) => l,
        Err(why) => return Ok((Inspection::NoStorage(why), info)),
    };
    let bs = u64::from(layout.block_size);
    let mut hbuf = AlignedBuf::zeroed(bs as usize, sector_align(file));
    let head = match file.read_at(&mut hbuf, base + layout.journal_start) {
        Ok(()) => u64::from_be_bytes(hbuf[..8].try_into().expect("8 bytes")),
        Err(e) if is_unreadable(&e) => {
            info.failed_reads += 1;
            match fallback.as_deref_mut().and_then(|f| f.journal_header()) {
                Some(copy) => u64::from_be_bytes(copy[..8].try_into().expect("8 bytes")),
                None => {
                    return Ok((
                        Inspection::Hole(Hole {
                            layout,
                            head: None,
                            record_at: 0,
                            at: None,
                            len: bs,
                            records: 0,
                        }),
                        info,
                    ))
                }
            }
        }
        Err(e) => return Err(e),
    };
    info.head = head;
    if let Some(f) = fallback.as_deref_mut() {
        f.set_head(head);
    }
    let cap = layout.ring_size();
    if head >= cap {
        return Ok((
            Inspection::Unrepairable {
                layout,
                head,
                at: head,
                found: Unreadable::PastRingEnd { tag: 0 },
            },
            info,
        ));
    }
    walk_from(
        file, base, layout, head, head, false, fallback, limit, info, visit,
    )
}

/// Walks the ring of the storage at `base` (layout `layout`, ring head `head`) from ring
/// position `start` — the head, or 0 as if a `GoToFront` had been followed (`wrapped`) — as
/// Cannyls does.
#[allow(clippy::too_many_arguments)]
pub(crate) fn walk_from<'f>(
    file: &FileHandle,
    base: u64,
    layout: Layout,
    head: u64,
    start: u64,
    wrapped: bool,
    fallback: Option<&mut (dyn Fallback + 'f)>,
    limit: Option<u64>,
    mut info: WalkInfo,
    visit: &mut dyn FnMut(u64, &[u8]),
) -> minfs::Result<(Inspection, WalkInfo)> {
    let block = BlockSize::new(layout.block_size).expect("checked by decode");
    let bs = u64::from(layout.block_size);
    let cap = layout.ring_size();
    let mut ring = RingReader::new(file, block, base + layout.ring_start(), cap, fallback);
    ring.limit = limit;
    let (mut pos, mut wrapped, mut records) = (start, wrapped, 0u64);
    macro_rules! get {
        ($p:expr, $n:expr) => {
            match ring.get($p, $n) {
                Ok(b) => b,
                Err(Stop::Io(e)) => return Err(e),
                Err(Stop::Hole { at, len }) => {
                    info.failed_reads += ring.failed_reads;
                    info.stop = pos;
                    return Ok((
                        Inspection::Hole(Hole {
                            layout,
                            head: Some(head),
                            record_at: pos,
                            at: Some(at),
                            len,
                            records,
                        }),
                        info,
                    ));
                }
            }
        };
    }
    let found = loop {
        if pos + RECORD_HEAD > cap {
            break Unreadable::PastRingEnd { tag: 0 };
        }
        let head5 = get!(pos, RECORD_HEAD);
        let stored = u32::from_be_bytes(head5[..4].try_into().expect("4 bytes"));
        let tag = head5[4];
        let size = match tag {
            TAG_END_OF_RECORDS | TAG_GO_TO_FRONT => RECORD_HEAD,
            TAG_PUT => RECORD_HEAD + 16 + 2 + 5,
            TAG_DELETE => RECORD_HEAD + 16,
            TAG_DELETE_RANGE => RECORD_HEAD + 32,
            TAG_EMBED => {
                if pos + RECORD_HEAD + 18 > cap {
                    break Unreadable::PastRingEnd { tag };
                }
                let len = get!(pos + RECORD_HEAD + 16, 2);
                RECORD_HEAD + 18 + u64::from(u16::from_be_bytes([len[0], len[1]]))
            }
            other => break Unreadable::UnknownTag(other),
        };
        if pos + size > cap {
            break Unreadable::PastRingEnd { tag };
        }
        if wrapped && pos + size > head {
            break Unreadable::ReachesHead;
        }
        let computed = adler32::RollingAdler32::from_buffer(get!(pos + 4, size - 4)).hash();
        if computed != stored {
            break Unreadable::Checksum {
                tag,
                stored,
                computed,
            };
        }
        match tag {
            TAG_END_OF_RECORDS => {
                info.failed_reads += ring.failed_reads;
                info.stop = pos;
                return Ok((
                    Inspection::Clean {
                        layout,
                        head,
                        end: pos,
                        records,
                    },
                    info,
                ));
            }
            TAG_GO_TO_FRONT if wrapped => break Unreadable::SecondWrap,
            TAG_GO_TO_FRONT => {
                wrapped = true;
                info.wrap = Some(pos);
                pos = 0;
            }
            _ => {
                visit(pos, get!(pos, size));
                records += 1;
                pos += size;
            }
        }
    };
    info.failed_reads += ring.failed_reads;
    info.stop = pos;
    // Nothing read before it (the head itself), stale content met after the wrap, or no room
    // for an EndOfRecords: no position can be shown to be the end.
    let no_room = pos + RECORD_HEAD > cap || (wrapped && pos + RECORD_HEAD > head);
    if (pos == head && !wrapped) || found == Unreadable::ReachesHead || no_room {
        return Ok((
            Inspection::Unrepairable {
                layout,
                head,
                at: pos,
                found,
            },
            info,
        ));
    }
    let _ = bs;
    Ok((
        Inspection::TornTail(Cut {
            layout,
            head,
            at: pos,
            records,
            found,
        }),
        info,
    ))
}

/// Cuts the journal at `cut` (an `EndOfRecords`, then zeros up to [`CLEAR_AHEAD`] bytes, never
/// past the head or the ring's end) and flushes. Returns the bytes zeroed.
pub fn repair(file: &FileHandle, base: u64, cut: &Cut) -> minfs::Result<u64> {
    let layout = &cut.layout;
    let block = BlockSize::new(layout.block_size).expect("checked by decode");
    let cap = layout.ring_size();
    let limit = if cut.head > cut.at { cut.head } else { cap };
    let eor_end = cut.at + END_OF_RECORDS.len() as u64;
    let clear_end = limit.min(block.ceil_align(eor_end).max(eor_end + CLEAR_AHEAD));
    let start = block.floor_align(cut.at);
    let stop = block.ceil_align(clear_end).min(block.floor_align(cap));
    let mut buf = AlignedBuf::zeroed((stop - start) as usize, sector_align(file));
    let at = base + layout.ring_start() + start;
    file.read_at(&mut buf, at)?;
    let rel = (cut.at - start) as usize;
    buf[rel..rel + END_OF_RECORDS.len()].copy_from_slice(&END_OF_RECORDS);
    let cleared = clear_end.saturating_sub(eor_end);
    buf[rel + END_OF_RECORDS.len()..(clear_end - start) as usize].fill(0);
    file.write_at(&buf, at)?;
    file.flush()?;
    Ok(cleared)
}
