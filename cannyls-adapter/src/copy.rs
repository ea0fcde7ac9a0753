//! The second copy of a Cannyls storage's header and journal region, kept by [`crate::MinfsNvm`]
//! in the same minfs file.
//!
//! # Why
//! Cannyls 0.10 keeps its whole index in the journal region and nowhere else (lumps in the data
//! region carry no id or checksum), and reads all of it from the head when it opens a storage.
//! One unreadable sector in the storage header or the live journal keeps the whole storage
//! from opening. The copy lets [`crate::MinfsNvm`] serve such a sector from elsewhere on the
//! disk and rewrite it in place (a write makes the drive reallocate the sector).
//!
//! # Layout (docs/FORMAT.md, "A Cannyls storage in a minfs file")
//! The file holds, in order: the Cannyls storage (`[0, storage_end)`, what Cannyls sees), then
//! unused bytes up to the **image** (a byte-for-byte copy of `[0, journal_end)`: the storage
//! header region, the journal header block and the ring), then the **trailer**: the file's
//! last block (the storage's block size), zeros and then [`TRAILER_LEN`] bytes ([`Trailer`])
//! at its end, so that the last logical sector of the file finds it whatever the block size.
//! The image starts at least [`MIN_DISTANCE`] bytes (by default) after the primary's bytes:
//! latent sector errors come in clusters whose next error lies up to 8 MiB further
//! (hddsim/src/emulate/latent.rs, after Bairavasundaram et al., SIGMETRICS 2007), so a cluster
//! would need at least nine errors in a row, the last one exactly on the copy of the first, to
//! hit a block and its copy.
//!
//! # Keeping it (the crash argument)
//! The image is a *delayed* mirror of the primary, written so that walking it from its own
//! journal header (as Cannyls walks a journal) only ever passes through bytes that are, at the
//! same ring positions, what the primary durably holds:
//! - the image is written only with bytes of the primary's **committed** journal (after the
//!   flush that made them durable), and only where the primary wrote since the copy last
//!   caught up — ring space the primary wrote as free, which is free in the copy too, since
//!   the copy's journal header moves with the primary's (below);
//! - the copy's `EndOfRecords` moves forward the way the primary's does: the blocks after the
//!   block(s) holding it are written first ("staged"), and only after a flush are the blocks
//!   holding it rewritten with the records that lead into them ("confirmed"). A catch-up is
//!   one write: it confirms the previous stage and stages what the primary wrote since, with
//!   the staged `EndOfRecords` blocks rewritten with the very bytes they already hold. A torn
//!   catch-up therefore leaves the copy's walk ending at its old or at its new
//!   `EndOfRecords`, as a torn held block does for the primary (crate docs, "Write order");
//! - when Cannyls moves the ring head (its GC writes the journal header), the copy is first
//!   brought level with the primary's committed journal (catch-ups and flushes), and then both
//!   journal headers are written in one batch and flushed, before any later ring write — so
//!   each copy's head points into records it holds, and neither ring is overwritten where its
//!   durable header still needs it;
//! - the trailer says whether the image is a copy at all ([`CopyState::Valid`]) and whether it
//!   was level with the primary when the memory was last dropped ([`Trailer::clean`]); it is
//!   rewritten (and flushed) only at the start of a build, at its end, when a memory opens
//!   (marking it not clean) and when it is dropped (marking it clean).
//!
//! A catch-up costs a seek to the copy and back (about 6.5 ms on the modelled ST1000DM003:
//! `bencher-workloads/examples/copy_cost_model.rs`; at every sync, as a synchronous copy would,
//! durable-256k is 48 % slower there), so it is not done at every `journal_sync`: by default
//! at the first sync after [`CopyPolicy::max_age`] (1 s) or [`CopyPolicy::max_syncs`] syncs
//! since the last one, when [`MAX_PENDING`] bytes or a quarter of the ring wait, whenever the
//! head moves, and when the memory is dropped. **What a bad sector can then still cost**: the journal records of the syncs since
//! the last catch-up (at most about a second's worth, plus any written just before the storage
//! went idle) are on the primary only until the next catch-up; an unreadable sector among them
//! found at the next open after a crash is a hole that only `minfs-cannyls fsck --salvage` gets
//! past. After a clean close the copy is level and vouches for everything.
//!
//! # Using it at open
//! The open's fallback serves the walk of [`crate::recovery`] when a read of the primary fails with
//! an unreadable sector: the storage header and journal header from the image, ring bytes
//! from the image as far as the copy vouches for them — along the path the walk of the copy
//! itself takes from its head to its `EndOfRecords` (read once, when first needed), from the
//! primary's head on, and its `EndOfRecords` only when the trailer says the copy was level at
//! a clean close. Whole blocks so vouched for are then written back to the primary.

use std::collections::VecDeque;
use std::fmt;
use std::time::{Duration, Instant};

use cannyls::block::BlockSize;
use minfs::{AlignedBuf, FileHandle};

use crate::recovery::{
    self, is_unreadable, sector_align, Fallback, Inspection, Layout, Served, WalkInfo, RECORD_HEAD,
    TAG_DELETE, TAG_DELETE_RANGE, TAG_EMBED, TAG_PUT,
};

/// The trailer's magic number.
pub const TRAILER_MAGIC: [u8; 8] = *b"MCLSCOPY";
/// The trailer's format version.
pub const TRAILER_VERSION: u16 = 1;
/// Encoded bytes of a trailer (at the end of the file's last block).
pub const TRAILER_LEN: usize = 128;
/// The least distance, by default, between a byte of the primary and its copy: 64 MiB (see the
/// module docs).
pub const MIN_DISTANCE: u64 = 64 << 20;
/// How far the next latent error of a cluster lies at most in the emulator's model
/// (`hddsim::emulate::latent::CLUSTER_SPAN`, an estimate): a copy closer than this is reported.
pub const CLUSTER_SPAN: u64 = 8 << 20;
/// Journal bytes waiting for the copy that trigger a catch-up at the next sync.
pub const MAX_PENDING: u64 = 8 << 20;

/// The fields of the trailer: name, offset within its [`TRAILER_LEN`] bytes, length (bytes).
/// docs/FORMAT.md has the same table (checked by `tests/format_doc.rs`).
pub const TRAILER_FIELDS: &[(&str, usize, usize)] = &[
    ("magic", 0, 8),
    ("version", 8, 2),
    ("state", 10, 1),
    ("clean", 11, 1),
    ("block_size", 12, 2),
    ("reserved", 14, 2),
    ("instance_uuid", 16, 16),
    ("image_offset", 32, 8),
    ("image_len", 40, 8),
    ("generation", 48, 8),
    ("clean_head", 56, 8),
    ("clean_end", 64, 8),
    ("reserved", 72, 52),
    ("crc32c", 124, 4),
];

/// Whether the image is a copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyState {
    /// Being (re)built: not a copy of anything yet.
    Building,
    /// A copy, kept as the module docs say.
    Valid,
}

/// The copy's trailer: where the image is and what state it is in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trailer {
    /// Whether the image is a copy.
    pub state: CopyState,
    /// The storage's block size (the trailer is the file's last block of this size).
    pub block_size: u16,
    /// The storage's instance UUID (from its header): the copy belongs to that storage.
    pub uuid: [u8; 16],
    /// File offset of the image (the copy of the storage's byte 0).
    pub image: u64,
    /// Bytes copied: the storage header region and the journal region.
    pub len: u64,
    /// Incremented at every trailer write.
    pub generation: u64,
    /// When the memory was last dropped with the copy level with the primary: the ring head
    /// and the ring position of the `EndOfRecords` then. `None` while a memory has it open (or
    /// after a crash).
    pub clean: Option<(u64, u64)>,
}

impl Trailer {
    /// The [`TRAILER_LEN`] bytes.
    pub fn encode(&self) -> [u8; TRAILER_LEN] {
        let mut b = [0u8; TRAILER_LEN];
        b[0..8].copy_from_slice(&TRAILER_MAGIC);
        b[8..10].copy_from_slice(&TRAILER_VERSION.to_be_bytes());
        b[10] = match self.state {
            CopyState::Building => 0,
            CopyState::Valid => 1,
        };
        b[11] = u8::from(self.clean.is_some());
        b[12..14].copy_from_slice(&self.block_size.to_be_bytes());
        b[16..32].copy_from_slice(&self.uuid);
        b[32..40].copy_from_slice(&self.image.to_be_bytes());
        b[40..48].copy_from_slice(&self.len.to_be_bytes());
        b[48..56].copy_from_slice(&self.generation.to_be_bytes());
        let (h, e) = self.clean.unwrap_or((0, 0));
        b[56..64].copy_from_slice(&h.to_be_bytes());
        b[64..72].copy_from_slice(&e.to_be_bytes());
        let crc = crc32c::crc32c(&b[..124]);
        b[124..128].copy_from_slice(&crc.to_be_bytes());
        b
    }

    /// Decodes the last [`TRAILER_LEN`] bytes of `bytes`; the error names what is wrong.
    pub fn decode(bytes: &[u8]) -> Result<Trailer, String> {
        if bytes.len() < TRAILER_LEN {
            return Err(format!("{} bytes, less than a trailer", bytes.len()));
        }
        let b = &bytes[bytes.len() - TRAILER_LEN..];
        if b[0..8] != TRAILER_MAGIC {
            return Err("no copy trailer (magic \"MCLSCOPY\" missing)".into());
        }
        let stored = u32::from_be_bytes(b[124..128].try_into().expect("4 bytes"));
        let computed = crc32c::crc32c(&b[..124]);
        if stored != computed {
            return Err(format!(
                "copy trailer checksum {stored:#010x} does not match its bytes ({computed:#010x})"
            ));
        }
        let u16_at = |i: usize| u16::from_be_bytes([b[i], b[i + 1]]);
        let u64_at = |i: usize| u64::from_be_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        let version = u16_at(8);
        if version != TRAILER_VERSION {
            return Err(format!(
                "copy trailer version {version}: only {TRAILER_VERSION} is understood"
            ));
        }
        let state = match b[10] {
            0 => CopyState::Building,
            1 => CopyState::Valid,
            s => return Err(format!("copy trailer state {s} is none of 0 and 1")),
        };
        let clean = match b[11] {
            0 => None,
            1 => Some((u64_at(56), u64_at(64))),
            c => return Err(format!("copy trailer clean flag {c} is none of 0 and 1")),
        };
        let block_size = u16_at(12);
        if BlockSize::new(block_size).is_err() {
            return Err(format!("copy trailer: invalid block size {block_size}"));
        }
        if b[14..16].iter().chain(&b[72..124]).any(|&x| x != 0) {
            return Err("copy trailer: reserved bytes are not zero".into());
        }
        let mut uuid = [0u8; 16];
        uuid.copy_from_slice(&b[16..32]);
        Ok(Trailer {
            state,
            block_size,
            uuid,
            image: u64_at(32),
            len: u64_at(40),
            generation: u64_at(48),
            clean,
        })
    }

    /// File offset of the trailer block.
    pub fn at(&self) -> u64 {
        self.image + self.len
    }

    /// The file size this trailer implies (image, copied bytes, trailer block).
    pub fn file_size(&self) -> u64 {
        self.at() + u64::from(self.block_size)
    }

    /// The whole trailer block.
    fn block(&self, align: usize) -> AlignedBuf {
        let bs = usize::from(self.block_size);
        let mut buf = AlignedBuf::zeroed(bs, align);
        buf[bs - TRAILER_LEN..].copy_from_slice(&self.encode());
        buf
    }
}

/// How often the copy catches up with the primary (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CopyPolicy {
    /// Catch up at the first sync this long after the last catch-up.
    pub max_age: Duration,
    /// Catch up at the latest at this many syncs after the last catch-up.
    pub max_syncs: u32,
}

impl Default for CopyPolicy {
    fn default() -> Self {
        CopyPolicy {
            max_age: Duration::from_secs(1),
            max_syncs: 1024,
        }
    }
}

/// What [`crate::MinfsNvm`] does about a copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CopyOptions {
    /// Make a copy when a storage is created through this memory (and keep any copy a
    /// storage has). Without it a new storage gets none; a storage that has one still keeps
    /// it.
    pub create: bool,
    /// The least distance between the primary's bytes and their copy, in the file.
    pub min_distance: u64,
    /// When the copy catches up.
    pub policy: CopyPolicy,
}

impl Default for CopyOptions {
    fn default() -> Self {
        CopyOptions {
            create: true,
            min_distance: MIN_DISTANCE,
            policy: CopyPolicy::default(),
        }
    }
}

/// Reads the trailer at the end of `file`: `Ok(None)` when the file's last sector holds none
/// (or its bytes do not fit the file), `Err` for a device error (an unreadable last sector
/// included: the caller decides).
pub fn find(file: &FileHandle) -> minfs::Result<Option<Trailer>> {
    let sector = u64::from(file.sector_size().max(1));
    let size = file.size();
    if size < 2 * sector || size % sector != 0 {
        return Ok(None);
    }
    let mut buf = AlignedBuf::zeroed(sector as usize, sector_align(file));
    file.read_at(&mut buf, size - sector)?;
    Ok(Trailer::decode(&buf).ok().filter(|t| {
        let bs = u64::from(t.block_size);
        t.file_size() == size
            && t.image % bs == 0
            && t.len % bs == 0
            && t.len > bs
            && t.image >= t.len
    }))
}

/// The instance UUID in a storage header's bytes (after magic, header size, versions and
/// block size).
pub fn header_uuid(header: &[u8]) -> [u8; 16] {
    let mut u = [0u8; 16];
    u.copy_from_slice(&header[12..28]);
    u
}

/// Where a copy of a storage of `layout` goes in a file of `file_size` bytes: `(image, new
/// file size)`. The image is at the end of the file (before the trailer block), at least
/// `min_distance` after the primary's journal and after the storage's end; the file grows when
/// it must.
pub fn placement(layout: &Layout, file_size: u64, min_distance: u64) -> (u64, u64) {
    let bs = u64::from(layout.block_size);
    let len = layout.journal_start + layout.journal_size;
    let storage_end = len + layout.data_size;
    let least_image = (storage_end.max(len.saturating_add(min_distance))).div_ceil(bs) * bs;
    let size = (least_image + len + bs).max(file_size / bs * bs);
    (size - bs - len, size)
}

/// Grows `file` to `size` bytes when it is smaller.
fn grow(file: &FileHandle, size: u64) -> minfs::Result<()> {
    if size > file.size() {
        file.filesystem().grow(file.name(), size)?;
    }
    Ok(())
}

fn read_at(file: &FileHandle, offset: u64, len: u64) -> minfs::Result<AlignedBuf> {
    let mut buf = AlignedBuf::zeroed(len as usize, sector_align(file));
    file.read_at(&mut buf, offset)?;
    Ok(buf)
}

/// The smallest distance, on the device, between a byte of `[a, a + n)` and one of `[b, b +
/// n)` of `file` (its extents decide): what one cluster of latent errors would have to span.
pub fn device_distance(file: &FileHandle, a: u64, b: u64, n: u64) -> u64 {
    let ex = file.extents();
    let x = crate::lumps::device_ranges(&ex, a, n);
    let y = crate::lumps::device_ranges(&ex, b, n);
    let mut best = u64::MAX;
    for &(p, pl) in &x {
        for &(q, ql) in &y {
            let d = if p + pl <= q {
                q - (p + pl)
            } else {
                p.saturating_sub(q + ql)
            };
            best = best.min(d);
        }
    }
    best
}

/// What the copy vouches for, found by walking it (see the module docs, "Using it at open").
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Trust {
    /// The copy's head.
    pub head: u64,
    /// Ring ranges of whole records along the copy's walk, in order.
    pub path: Vec<(u64, u64)>,
    /// The walk followed a `GoToFront`.
    pub wrapped: bool,
    /// The copy's `EndOfRecords` (its walk's end) is vouched for too: the trailer says the
    /// copy was level with the primary there at a clean close.
    pub eor: bool,
}

impl Trust {
    /// Walks the copy whose trailer is `t`: `None` when it vouches for nothing.
    pub(crate) fn of(file: &FileHandle, t: &Trailer) -> minfs::Result<Option<Trust>> {
        if t.state != CopyState::Valid {
            return Ok(None);
        }
        let header = match read_at(file, t.image, u64::from(t.block_size)) {
            Ok(h) => h,
            Err(e) if is_unreadable(&e) => return Ok(None),
            Err(e) => return Err(e),
        };
        if header_uuid(&header) != t.uuid {
            return Ok(None);
        }
        let (found, info) = recovery::walk_with(file, t.image, t.len, None, None, &mut |_, _| {})?;
        let (path, eor) = match &found {
            Inspection::Clean { head, end, .. } => (info.path(), t.clean == Some((*head, *end))),
            Inspection::TornTail(_) => (info.path(), false),
            Inspection::Hole(h) if h.head.is_some() => (info.path(), false),
            _ => return Ok(None),
        };
        Ok(Some(Trust {
            head: info.head,
            path,
            wrapped: info.wrap.is_some(),
            eor,
        }))
    }

    /// The path from the primary's head `ph`, which must lie on it (else the copy vouches for
    /// nothing: its bytes and the primary's are not known to agree).
    fn effective(&self, ph: u64) -> Option<Vec<(u64, u64)>> {
        for (i, &(a, b)) in self.path.iter().enumerate() {
            if a <= ph && ph < b || (ph == b && i + 1 == self.path.len()) {
                let mut p = vec![(ph, b)];
                p.extend_from_slice(&self.path[i + 1..]);
                return Some(p);
            }
        }
        None
    }

    /// The ring bytes the copy vouches for, from the primary's head `ph`: its path from there
    /// (whole records), and its `EndOfRecords` too when [`Trust::eor`].
    pub(crate) fn vouched(&self, ph: u64) -> Vec<(u64, u64)> {
        let Some(mut path) = self.effective(ph) else {
            return Vec::new();
        };
        if self.eor {
            if let Some(last) = path.last_mut() {
                last.1 += RECORD_HEAD;
            }
        }
        path.retain(|(a, b)| a < b);
        path
    }

    /// The vouched bytes among ring `[start, end)`: `[from, to)`, the first run of them.
    pub(crate) fn vouch(&self, ph: u64, start: u64, end: u64) -> Option<(u64, u64)> {
        self.vouched(ph)
            .into_iter()
            .map(|(a, b)| (a.max(start), b.min(end)))
            .find(|(a, b)| a < b)
    }
}

/// Whether every byte of `[a, b)` that is in `interpreted` is also in `vouched`.
pub fn covered(a: u64, b: u64, interpreted: &[(u64, u64)], vouched: &[(u64, u64)]) -> bool {
    interpreted.iter().all(|&(i0, i1)| {
        let (x0, x1) = (i0.max(a), i1.min(b));
        if x0 >= x1 {
            return true;
        }
        // [x0, x1) must lie within the union of `vouched`.
        let mut at = x0;
        let mut v: Vec<(u64, u64)> = vouched.to_vec();
        v.sort_unstable();
        for (v0, v1) in v {
            if v0 <= at && at < v1 {
                at = v1;
            }
            if at >= x1 {
                return true;
            }
        }
        at >= x1
    })
}

/// A write back to the primary from the copy: file offset and bytes.
pub type Rewrite = (u64, AlignedBuf);

/// The [`Fallback`] of an opening memory: its copy (see the module docs).
pub(crate) struct OpenFallback<'a> {
    file: &'a FileHandle,
    trailer: Trailer,
    head: Option<u64>,
    trust: Option<Option<Trust>>,
    /// What to write back to the primary once the walk is done: the storage header region
    /// and the journal header block.
    pub(crate) rewrites: Vec<Rewrite>,
    /// Whole ring blocks read from the copy: ring position and bytes. Which of them may be
    /// written back is known once the walk is done ([`OpenFallback::ring_rewrites`]).
    served: Vec<(u64, AlignedBuf)>,
    /// Reads of the copy that failed with an unreadable sector.
    pub(crate) failed_reads: u64,
    /// Journal header from the copy (its head), when the primary's was unreadable.
    pub(crate) head_from_copy: bool,
}

impl<'a> OpenFallback<'a> {
    pub(crate) fn new(file: &'a FileHandle, trailer: Trailer) -> Self {
        OpenFallback {
            file,
            trailer,
            head: None,
            trust: None,
            rewrites: Vec::new(),
            served: Vec::new(),
            failed_reads: 0,
            head_from_copy: false,
        }
    }

    fn bs(&self) -> u64 {
        u64::from(self.trailer.block_size)
    }

    fn copy_read(&mut self, offset: u64, len: u64) -> Option<AlignedBuf> {
        match read_at(self.file, offset, len) {
            Ok(b) => Some(b),
            Err(e) => {
                if is_unreadable(&e) {
                    self.failed_reads += 1;
                }
                log::warn!(
                    "{}: file {:?}: reading the copy: {e}",
                    self.file.target(),
                    self.file.name()
                );
                None
            }
        }
    }

    fn journal_start(&self) -> u64 {
        recovery::FULL_HEADER_SIZE.div_ceil(self.bs()) * self.bs()
    }
}

impl Fallback for OpenFallback<'_> {
    fn primary_header(&mut self, sector: &[u8]) {
        if sector.len() >= 28 && sector[..4] == *b"lusf" && header_uuid(sector) != self.trailer.uuid
        {
            // The trailer is another storage's (one made in this file before): no copy.
            self.trailer.state = CopyState::Building;
        }
    }

    fn storage_header(&mut self, len: usize) -> Option<AlignedBuf> {
        if self.trailer.state != CopyState::Valid {
            return None;
        }
        let region = self.journal_start();
        let buf = self.copy_read(self.trailer.image, region)?;
        if header_uuid(&buf) != self.trailer.uuid {
            return None;
        }
        let mut out = AlignedBuf::zeroed(len, sector_align(self.file));
        out.copy_from_slice(&buf[..len]);
        self.rewrites.push((0, buf));
        Some(out)
    }

    fn journal_header(&mut self) -> Option<AlignedBuf> {
        if self.trailer.state != CopyState::Valid {
            return None;
        }
        let at = self.journal_start();
        let buf = self.copy_read(self.trailer.image + at, self.bs())?;
        let mut out = AlignedBuf::zeroed(buf.len(), sector_align(self.file));
        out.copy_from_slice(&buf);
        self.rewrites.push((at, buf));
        self.head_from_copy = true;
        Some(out)
    }

    fn set_head(&mut self, head: u64) {
        self.head = Some(head);
    }

    fn ring(&mut self, start: u64, end: u64) -> Option<Served> {
        let head = self.head?;
        if self.trailer.state != CopyState::Valid {
            return None;
        }
        if self.trust.is_none() {
            let t = Trust::of(self.file, &self.trailer).unwrap_or_else(|e| {
                log::warn!(
                    "{}: file {:?}: walking the copy: {e}",
                    self.file.target(),
                    self.file.name()
                );
                None
            });
            self.trust = Some(t);
        }
        let bs = self.bs();
        let (from, to) = self.trust.as_ref()?.as_ref()?.vouch(head, start, end)?;
        let ring = self.trailer.image + self.journal_start() + bs;
        let read_end = to.div_ceil(bs) * bs;
        let buf = self.copy_read(ring + start, read_end - start)?;
        let mut out = AlignedBuf::zeroed((to - start) as usize, sector_align(self.file));
        out[(from - start) as usize..]
            .copy_from_slice(&buf[(from - start) as usize..(to - start) as usize]);
        self.served.push((start, buf));
        Some(Served { from, to, buf: out })
    }
}

impl OpenFallback<'_> {
    /// The ring blocks read from the copy that may be written back to the primary, now that
    /// the primary's walk read `interpreted` (ring ranges): those whose every byte the walk
    /// read, the copy vouches for (the others hold bytes nobody reads, or bytes the copy does
    /// not know); as file offsets.
    pub(crate) fn ring_rewrites(&self, interpreted: &[(u64, u64)]) -> Vec<Rewrite> {
        let Some(Some(trust)) = &self.trust else {
            return Vec::new();
        };
        let Some(head) = self.head else {
            return Vec::new();
        };
        let vouched = trust.vouched(head);
        let bs = self.bs();
        let ring = self.journal_start() + bs;
        let mut out: Vec<Rewrite> = Vec::new();
        let mut done = std::collections::BTreeSet::new();
        for (start, buf) in &self.served {
            for (k, chunk) in buf.chunks(bs as usize).enumerate() {
                let at = start + k as u64 * bs;
                if chunk.len() as u64 == bs
                    && covered(at, at + bs, interpreted, &vouched)
                    && done.insert(at)
                {
                    let mut b = AlignedBuf::zeroed(bs as usize, sector_align(self.file));
                    b.copy_from_slice(chunk);
                    out.push((ring + at, b));
                }
            }
        }
        out
    }
}

/// What became of the copy when a memory opened.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum CopyAtOpen {
    /// The storage has no copy.
    #[default]
    None,
    /// The copy was level with the primary (a clean close): kept as it is.
    Level,
    /// The copy was (re)built from the primary (after a crash, an unreadable sector, a
    /// rebuild that did not finish, or `add-copy`).
    Rebuilt,
    /// A rebuild failed (an unreadable sector of the primary outside what the walk read, or
    /// no room): the copy vouches for nothing until one succeeds.
    Failed(String),
}

/// What opening a memory did with unreadable sectors and the copy
/// ([`crate::MinfsNvm::opened`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OpenReport {
    /// Ranges of the file (offset, length) that could not be read and were served from the
    /// copy and rewritten in place.
    pub rewritten: Vec<(u64, u64)>,
    /// Reads of the file that failed with an unreadable sector (each costs the drive's error
    /// recovery time).
    pub failed_reads: u64,
    /// Reads of the copy that failed so.
    pub copy_failed_reads: u64,
    /// The copy's trailer could not be read (the copy was rebuilt).
    pub trailer_unreadable: bool,
    /// What became of the copy.
    pub copy: CopyAtOpen,
}

/// Counts of what a memory did with its copy.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CopyStats {
    /// Catch-up writes.
    pub catch_ups: u64,
    /// Bytes they wrote.
    pub bytes: u64,
}

/// The copy while a memory has the storage open (see the module docs).
pub(crate) struct Session {
    layout: Layout,
    bs: u64,
    trailer: Trailer,
    /// Blocks from the copy's end region to the last block the primary wrote, in journal
    /// order: ring position and the primary's current bytes.
    blocks: VecDeque<(u64, Vec<u8>)>,
    /// The front blocks that hold the copy's `EndOfRecords`.
    end_len: usize,
    /// The primary wrote into the end region since it was last written to the copy.
    end_changed: bool,
    /// A stage written: the blocks that hold its `EndOfRecords`, with their bytes then.
    pending: Option<Vec<(u64, Vec<u8>)>>,
    /// Ring position up to which the primary's records were followed: its `EndOfRecords` when
    /// `at_eor`.
    end: Option<u64>,
    at_eor: bool,
    /// The copy's journal head.
    pub(crate) head: u64,
    /// A copy write not yet flushed.
    pub(crate) unflushed: bool,
    syncs: u32,
    since: Instant,
    pending_bytes: u64,
    policy: CopyPolicy,
    /// Set when the primary's journal could not be followed: the copy is left (not clean) and
    /// rebuilt at the next open.
    pub(crate) lost: Option<String>,
    pub(crate) stats: CopyStats,
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("image", &self.trailer.image)
            .field("blocks", &self.blocks.len())
            .field("end_len", &self.end_len)
            .field("pending", &self.pending.as_ref().map(|p| p.len()))
            .field("end", &self.end)
            .field("head", &self.head)
            .field("lost", &self.lost)
            .finish()
    }
}

impl Session {
    /// A session for a copy level with the primary, whose journal has head `head` and its
    /// `EndOfRecords` at `end`; `eor_blocks` are the ring blocks that hold it, with their bytes.
    fn new(
        layout: Layout,
        trailer: Trailer,
        head: u64,
        end: u64,
        eor_blocks: Vec<(u64, Vec<u8>)>,
        policy: CopyPolicy,
    ) -> Session {
        Session {
            layout,
            bs: u64::from(layout.block_size),
            trailer,
            end_len: eor_blocks.len(),
            blocks: eor_blocks.into(),
            end_changed: false,
            pending: None,
            end: Some(end),
            at_eor: true,
            head,
            unflushed: false,
            syncs: 0,
            since: Instant::now(),
            pending_bytes: 0,
            policy,
            lost: None,
            stats: CopyStats::default(),
        }
    }

    /// When to catch up from now on.
    pub(crate) fn set_policy(&mut self, policy: CopyPolicy) {
        self.policy = policy;
    }

    fn ring_base(&self) -> u64 {
        self.trailer.image + self.layout.ring_start()
    }

    /// Marks the trailer not clean (written now, flushed by the commit that makes the
    /// primary's next journal write durable), once per session: a copy left level at a clean
    /// close and opened again stays clean until the journal is written.
    pub(crate) fn mark_dirty(&mut self, file: &FileHandle) -> minfs::Result<()> {
        if self.trailer.clean.is_some() && self.trailer.state == CopyState::Valid {
            self.set_trailer(file, CopyState::Valid, None)?;
        }
        Ok(())
    }

    /// Writes the trailer with `state` and `clean` (the next generation); not flushed.
    fn set_trailer(
        &mut self,
        file: &FileHandle,
        state: CopyState,
        clean: Option<(u64, u64)>,
    ) -> minfs::Result<()> {
        let t = Trailer {
            state,
            clean,
            generation: self.trailer.generation + 1,
            ..self.trailer.clone()
        };
        write_trailer_block(file, &t)?;
        self.trailer = t;
        self.unflushed = true;
        Ok(())
    }

    /// The primary wrote `data` at ring position `pos` (block-aligned): what it holds there now.
    pub(crate) fn note_ring_write(&mut self, pos: u64, data: &[u8]) {
        if self.lost.is_some() {
            return;
        }
        let bs = self.bs as usize;
        for (i, chunk) in data.chunks(bs).enumerate() {
            let at = pos + (i * bs) as u64;
            match self.blocks.iter().rposition(|(p, _)| *p == at) {
                Some(k) => {
                    self.blocks[k].1.copy_from_slice(chunk);
                    if k < self.end_len {
                        self.end_changed = true;
                    }
                }
                None => {
                    self.blocks.push_back((at, chunk.to_vec()));
                    self.pending_bytes += self.bs;
                }
            }
        }
        self.follow();
    }

    /// The byte at ring position `p` as the primary holds it now, if among `blocks`.
    fn byte_at(&self, p: u64) -> Option<u8> {
        let b = p / self.bs * self.bs;
        self.blocks
            .iter()
            .rev()
            .find(|(at, _)| *at == b)
            .map(|(_, d)| d[(p - b) as usize])
    }

    fn bytes_at(&self, p: u64, n: u64) -> Option<Vec<u8>> {
        (p..p + n).map(|q| self.byte_at(q)).collect()
    }

    /// Follows the primary's records from where it was through what it wrote, to its new
    /// `EndOfRecords` (every journal write of Cannyls ends with one, or with a `GoToFront`).
    fn follow(&mut self) {
        let cap = self.layout.ring_size();
        let Some(mut pos) = self.end else { return };
        self.at_eor = false;
        loop {
            if pos + RECORD_HEAD > cap {
                self.lose(format!(
                    "a record at ring position {pos} runs past the ring"
                ));
                return;
            }
            let Some(tag) = self.byte_at(pos + 4) else {
                // Not written yet.
                self.end = Some(pos);
                return;
            };
            let size = match tag {
                0 => {
                    self.end = Some(pos);
                    self.at_eor = true;
                    return;
                }
                1 => {
                    // GoToFront: the records go on at ring position 0.
                    pos = 0;
                    continue;
                }
                TAG_PUT => RECORD_HEAD + 23,
                TAG_DELETE => RECORD_HEAD + 16,
                TAG_DELETE_RANGE => RECORD_HEAD + 32,
                TAG_EMBED => match self.bytes_at(pos + RECORD_HEAD + 16, 2) {
                    Some(l) => RECORD_HEAD + 18 + u64::from(u16::from_be_bytes([l[0], l[1]])),
                    None => {
                        self.end = Some(pos);
                        return;
                    }
                },
                t => {
                    self.lose(format!("an unknown record tag {t} at ring position {pos}"));
                    return;
                }
            };
            pos += size;
        }
    }

    fn lose(&mut self, why: String) {
        if self.lost.is_none() {
            self.lost = Some(why);
        }
    }

    /// Whether the copy was given up this session (it is then marked "building" and rebuilt at
    /// the next open).
    pub(crate) fn is_lost(&self) -> bool {
        self.lost.is_some()
    }

    /// Gives the copy up: its trailer says "building" from the next flush on, so that it
    /// vouches for nothing until it is rebuilt.
    pub(crate) fn give_up(&mut self, file: &FileHandle, why: &str) -> minfs::Result<()> {
        self.lose(why.to_string());
        if self.trailer.state == CopyState::Valid {
            log::warn!(
                "{}: file {:?}: the copy of the Cannyls journal is given up until the next open \
                 rebuilds it: {why}",
                file.target(),
                file.name()
            );
            self.set_trailer(file, CopyState::Building, None)?;
        }
        Ok(())
    }

    /// Whether a catch-up is due at this sync (counted).
    pub(crate) fn due(&mut self) -> bool {
        self.syncs += 1;
        self.lost.is_none()
            && !self.caught_up()
            && (self.syncs >= self.policy.max_syncs
                || self.pending_bytes >= self.layout.ring_size() / 4
                || self.since.elapsed() >= self.policy.max_age
                || self.pending_bytes >= MAX_PENDING)
    }

    fn caught_up(&self) -> bool {
        self.pending.is_none() && self.blocks.len() == self.end_len && !self.end_changed
    }

    /// The blocks holding the primary's `EndOfRecords`, as indexes into `blocks` (`None` while
    /// its records were not followed to one).
    fn eor_indexes(&self) -> Option<(usize, usize)> {
        let end = self.end.filter(|_| self.at_eor)?;
        let (a, b) = (
            end / self.bs * self.bs,
            (end + RECORD_HEAD - 1) / self.bs * self.bs,
        );
        let i = self.blocks.iter().rposition(|(p, _)| *p == a)?;
        let j = self.blocks.iter().rposition(|(p, _)| *p == b)?;
        Some((i, j))
    }

    /// One catch-up write (see the module docs); the caller flushes before the next. Does
    /// nothing while the primary's records were not followed to an `EndOfRecords`.
    pub(crate) fn catch_up(&mut self, file: &FileHandle) -> minfs::Result<()> {
        if self.lost.is_some() || self.caught_up() || self.unflushed {
            return Ok(());
        }
        let Some((e0, e1)) = self.eor_indexes() else {
            return Ok(());
        };
        let n = self.blocks.len();
        let eor_now: Vec<(u64, Vec<u8>)> = (e0..=e1).map(|k| self.blocks[k].clone()).collect();
        match self.pending.take() {
            Some(staged) => {
                // Confirm the stage (its EndOfRecords blocks as they were staged, the blocks
                // before as they are: unchanged since), and stage what came after it.
                let writes: Vec<(u64, Vec<u8>)> = self
                    .blocks
                    .iter()
                    .map(|(p, d)| match staged.iter().find(|(q, _)| q == p) {
                        Some((_, then)) => (*p, then.clone()),
                        None => (*p, d.clone()),
                    })
                    .collect();
                let Some(front) = self.blocks.iter().position(|(p, _)| *p == staged[0].0) else {
                    return self.give_up(file, "a staged block is missing");
                };
                self.write_runs(file, &writes)?;
                let changed = staged
                    .iter()
                    .any(|(p, then)| self.blocks.iter().any(|(q, now)| q == p && now != then));
                self.blocks.drain(..front);
                self.end_len = staged.len();
                self.end_changed = changed;
                self.pending = (self.blocks.len() > self.end_len).then_some(eor_now);
            }
            None if n == self.end_len => {
                // The primary wrote only within the blocks holding the copy's EndOfRecords:
                // one write of them (torn, the copy's walk ends at the old or at the new
                // EndOfRecords, as a torn held block does for the primary).
                let writes: Vec<(u64, Vec<u8>)> = self.blocks.iter().cloned().collect();
                self.write_runs(file, &writes)?;
                self.blocks.drain(..e0);
                self.end_len = e1 - e0 + 1;
                self.end_changed = false;
            }
            None => {
                // Stage the blocks after the copy's EndOfRecords blocks, which stay as they are.
                let writes: Vec<(u64, Vec<u8>)> =
                    self.blocks.iter().skip(self.end_len).cloned().collect();
                self.write_runs(file, &writes)?;
                self.pending = Some(eor_now);
            }
        }
        self.unflushed = true;
        self.syncs = 0;
        self.since = Instant::now();
        self.pending_bytes = 0;
        self.stats.catch_ups += 1;
        Ok(())
    }

    /// Writes ring blocks, each run of consecutive positions as one write.
    fn write_runs(&mut self, file: &FileHandle, blocks: &[(u64, Vec<u8>)]) -> minfs::Result<()> {
        let base = self.ring_base();
        let mut i = 0;
        while i < blocks.len() {
            let mut j = i + 1;
            while j < blocks.len() && blocks[j].0 == blocks[j - 1].0 + self.bs {
                j += 1;
            }
            let mut buf = AlignedBuf::zeroed((j - i) * self.bs as usize, sector_align(file));
            for (k, (_, d)) in blocks[i..j].iter().enumerate() {
                buf[k * self.bs as usize..(k + 1) * self.bs as usize].copy_from_slice(d);
            }
            file.write_at(&buf, base + blocks[i].0)?;
            self.stats.bytes += buf.len() as u64;
            i = j;
        }
        Ok(())
    }

    /// Catch-ups and flushes until the copy is level with the primary's committed journal;
    /// whether it is.
    pub(crate) fn level(&mut self, file: &FileHandle) -> minfs::Result<bool> {
        for _ in 0..4 {
            if self.lost.is_some() || self.caught_up() {
                break;
            }
            if self.unflushed {
                file.flush()?;
                self.unflushed = false;
            }
            self.catch_up(file)?;
            if !self.unflushed {
                // Nothing could be written: the records were not followed to their end.
                break;
            }
            file.flush()?;
            self.unflushed = false;
        }
        Ok(self.lost.is_none() && self.caught_up())
    }

    /// Writes the copy's journal header (ring head `head`), in the batch of the primary's.
    pub(crate) fn write_head(
        &mut self,
        file: &FileHandle,
        header: &[u8],
        head: u64,
    ) -> minfs::Result<()> {
        let at = self.trailer.image + self.layout.journal_start;
        let mut buf = AlignedBuf::zeroed(header.len(), sector_align(file));
        buf.copy_from_slice(header);
        file.write_at(&buf, at)?;
        self.head = head;
        self.unflushed = true;
        Ok(())
    }

    /// Mirrors a write into the storage header region (`offset` within the memory).
    pub(crate) fn mirror(
        &mut self,
        file: &FileHandle,
        offset: u64,
        data: &[u8],
    ) -> minfs::Result<()> {
        let mut buf = AlignedBuf::zeroed(data.len(), sector_align(file));
        buf.copy_from_slice(data);
        file.write_at(&buf, self.trailer.image + offset)?;
        self.unflushed = true;
        Ok(())
    }

    /// Levels the copy and marks it clean (the memory is being dropped); flushed.
    pub(crate) fn close(&mut self, file: &FileHandle, head: u64) -> minfs::Result<()> {
        if self.trailer.clean.is_some() || self.lost.is_some() {
            // Still clean (nothing written this session), or given up.
            return Ok(());
        }
        if !self.level(file)? || self.head != head {
            return Ok(());
        }
        let Some(end) = self.end.filter(|_| self.at_eor) else {
            return Ok(());
        };
        self.set_trailer(file, CopyState::Valid, Some((head, end)))?;
        file.flush()?;
        self.unflushed = false;
        Ok(())
    }

    /// Whether ring bytes `[start, end)` (a read the primary failed) are vouched for by the
    /// copy now: whole blocks from the head's (when the head starts it) to the copy's end
    /// region, in journal order.
    fn vouches_ring(&self, start: u64, end: u64, head: u64) -> bool {
        let cap = self.layout.ring_size() / self.bs * self.bs;
        let Some(front) = self.blocks.front().map(|b| b.0) else {
            return false;
        };
        let hb = head / self.bs * self.bs;
        let dist = |q: u64| (q + cap - hb) % cap;
        let limit = dist(front);
        let last = (end - 1) / self.bs * self.bs;
        let mut b = start / self.bs * self.bs;
        loop {
            // The head's block holds, before the head, bytes the copy may not have (the
            // journal's newest records, when its tail came round to it).
            if dist(b) >= limit || (b == hb && head != hb) {
                return false;
            }
            if b == last {
                return true;
            }
            b += self.bs;
        }
    }

    /// The copy's bytes for the memory's `[offset, offset + len)` when it vouches for them now
    /// (the storage header region, the journal header while heads agree, committed ring
    /// blocks); `head` is the primary's durable head.
    pub(crate) fn serve(
        &self,
        file: &FileHandle,
        offset: u64,
        len: u64,
        head: u64,
    ) -> minfs::Result<Option<AlignedBuf>> {
        let l = &self.layout;
        let end = offset + len;
        let ok = if end <= l.journal_start {
            true
        } else if offset >= l.journal_start && end <= l.ring_start() {
            self.head == head
        } else if offset >= l.ring_start() && end <= l.journal_start + l.journal_size {
            self.lost.is_none()
                && self.vouches_ring(offset - l.ring_start(), end - l.ring_start(), head)
        } else {
            false
        };
        if !ok {
            return Ok(None);
        }
        read_at(file, self.trailer.image + offset, len).map(Some)
    }
}

/// Zeroes the trailer block of `t` and flushes: the file has no copy from now on.
pub(crate) fn forget(file: &FileHandle, t: &Trailer) -> minfs::Result<()> {
    let zero = AlignedBuf::zeroed(usize::from(t.block_size), sector_align(file));
    file.write_at(&zero, t.at())?;
    file.flush()
}

/// Writes the trailer block `t` (not flushed).
pub(crate) fn write_trailer_block(file: &FileHandle, t: &Trailer) -> minfs::Result<()> {
    file.write_at(&t.block(sector_align(file)), t.at())
}

/// Makes (or remakes) the copy of the storage whose layout is `layout` in `file`: the trailer
/// says "building" (flushed), the image gets the storage header region, the journal header and
/// the ring blocks of the journal's path (`info`), read from the primary (flushed), then the
/// trailer says "valid" (flushed). Grows the file first when the copy does not fit.
pub(crate) fn build(
    file: &FileHandle,
    layout: &Layout,
    info: &WalkInfo,
    end: u64,
    opts: &CopyOptions,
    old: Option<&Trailer>,
) -> minfs::Result<Session> {
    let bs = u64::from(layout.block_size);
    let len = layout.journal_start + layout.journal_size;
    let (image, _size) = match old {
        Some(t)
            if t.len == len
                && t.block_size == layout.block_size
                && t.image >= len + layout.data_size =>
        {
            (t.image, t.file_size())
        }
        _ => {
            // As far as asked when the filesystem has room, else right after the storage.
            let far = placement(layout, file.size(), opts.min_distance);
            let near = placement(layout, file.size(), 0);
            match grow(file, far.1) {
                Ok(()) => far,
                Err(minfs::Error::NoSpace { .. }) if near != far => {
                    grow(file, near.1)?;
                    log::warn!(
                        "{}: file {:?}: no room for the copy of the Cannyls journal {} bytes \
                         away; it goes right after the storage",
                        file.target(),
                        file.name(),
                        opts.min_distance
                    );
                    near
                }
                Err(e) => return Err(e),
            }
        }
    };
    let header = read_at(file, 0, bs)?;
    let mut trailer = Trailer {
        state: CopyState::Building,
        block_size: layout.block_size,
        uuid: header_uuid(&header),
        image,
        len,
        generation: old.map_or(0, |t| t.generation) + 1,
        clean: None,
    };
    write_trailer_block(file, &trailer)?;
    file.flush()?;
    // The storage header region and the journal header.
    let top = read_at(file, 0, layout.ring_start())?;
    file.write_at(&top, image)?;
    // The ring blocks of the path, and those holding the EndOfRecords.
    let ring = layout.ring_start();
    let cap = layout.ring_size() / bs * bs;
    let mut ranges: Vec<(u64, u64)> = info
        .path()
        .into_iter()
        .map(|(a, b)| (a / bs * bs, b.div_ceil(bs) * bs))
        .collect();
    ranges.push((end / bs * bs, (end + RECORD_HEAD).div_ceil(bs) * bs));
    const CHUNK: u64 = 4 << 20;
    for (a, b) in ranges {
        let mut at = a;
        while at < b.min(cap) {
            let n = (b.min(cap) - at).min(CHUNK);
            let buf = read_at(file, ring + at, n)?;
            file.write_at(&buf, image + ring + at)?;
            at += n;
        }
    }
    file.flush()?;
    trailer.state = CopyState::Valid;
    trailer.generation += 1;
    write_trailer_block(file, &trailer)?;
    file.flush()?;
    let d = device_distance(file, 0, image, len);
    if d < CLUSTER_SPAN {
        log::warn!(
            "{}: file {:?}: the copy of the Cannyls journal lies {d} bytes from it on the \
             device, less than the {CLUSTER_SPAN} bytes one cluster of latent errors may span",
            file.target(),
            file.name()
        );
    }
    let eor = eor_blocks(file, layout, end)?;
    Ok(Session::new(
        *layout,
        trailer,
        info.head,
        end,
        eor,
        opts.policy,
    ))
}

/// The ring blocks holding an `EndOfRecords` at `end`, with the primary's bytes.
fn eor_blocks(file: &FileHandle, layout: &Layout, end: u64) -> minfs::Result<Vec<(u64, Vec<u8>)>> {
    let bs = u64::from(layout.block_size);
    let (a, b) = (end / bs * bs, (end + RECORD_HEAD - 1) / bs * bs);
    let mut out = Vec::new();
    let mut p = a;
    while p <= b {
        let buf = read_at(file, layout.ring_start() + p, bs)?;
        out.push((p, buf.to_vec()));
        p += bs;
    }
    Ok(out)
}

/// A session for a copy that is level with the primary (its trailer says so: clean at the
/// primary's head and end). Its trailer is marked not clean at the first journal write.
pub(crate) fn resume(
    file: &FileHandle,
    layout: &Layout,
    trailer: &Trailer,
    head: u64,
    end: u64,
    policy: CopyPolicy,
) -> minfs::Result<Session> {
    let eor = eor_blocks(file, layout, end)?;
    Ok(Session::new(
        *layout,
        trailer.clone(),
        head,
        end,
        eor,
        policy,
    ))
}

/// What [`check`] found about a storage's copy.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Check {
    /// The copy's trailer (`None`: the storage has no copy, or it could not be read).
    pub trailer: Option<Trailer>,
    /// The file's last sector (where the trailer is) could not be read.
    pub trailer_unreadable: bool,
    /// The least distance on the device between the primary's header and journal and the
    /// copy.
    pub distance: Option<u64>,
    /// The primary's ring head and its `EndOfRecords` (`None` for what could not be read).
    pub primary: (Option<u64>, Option<u64>),
    /// The copy's head and `EndOfRecords`.
    pub copy: (Option<u64>, Option<u64>),
    /// Ring bytes the primary's walk reads (its path and its `EndOfRecords`).
    pub primary_path: Vec<(u64, u64)>,
    /// Ring bytes the copy vouches for, from the primary's head: what an open would serve
    /// from it.
    pub vouched: Vec<(u64, u64)>,
    /// Where the copy differs from the primary in what must agree — the storage header region
    /// and the vouched ring bytes: `(offset in the storage, length)`. Must be empty.
    pub differ: Vec<(u64, u64)>,
    /// What could not be read to compare: `(offset in the storage, length, whose)`.
    pub unreadable: Vec<(u64, u64, &'static str)>,
    /// Why the copy, valid by its trailer, is damaged: its walk does not get past its head,
    /// its header belongs to another storage, or it is torn although it was left level.
    pub damaged: Option<String>,
}

impl Check {
    /// The storage has a copy that is a copy (not being built).
    pub fn valid(&self) -> bool {
        self.trailer
            .as_ref()
            .is_some_and(|t| t.state == CopyState::Valid)
    }

    /// The copy agrees with the primary wherever it vouches (and in the storage header), and
    /// is not damaged.
    pub fn agree(&self) -> bool {
        self.differ.is_empty() && self.damaged.is_none()
    }

    /// The copy is level with the primary: same head, same `EndOfRecords`.
    pub fn level(&self) -> bool {
        self.valid() && self.primary == self.copy && self.primary.1.is_some()
    }

    /// Journal bytes the primary holds past the copy's `EndOfRecords` (what the copy lags).
    pub fn lag(&self) -> Option<u64> {
        let (Some(pe), Some(ce)) = (self.primary.1, self.copy.1) else {
            return None;
        };
        let t = self.trailer.as_ref()?;
        let cap = (t.len - journal_start(t.block_size) - u64::from(t.block_size)).max(1);
        Some((pe + cap - ce) % cap)
    }
}

fn journal_start(block_size: u16) -> u64 {
    let bs = u64::from(block_size);
    recovery::FULL_HEADER_SIZE.div_ceil(bs) * bs
}

/// Compares the copy of the storage in `file` with the primary, read-only (what `minfs-cannyls
/// fsck` reports): its trailer, distance, both journals' heads and ends, and every byte the
/// copy vouches for.
pub fn check(file: &FileHandle) -> minfs::Result<Check> {
    let mut c = Check::default();
    c.trailer = match find(file) {
        Ok(t) => t,
        Err(e) if is_unreadable(&e) => {
            c.trailer_unreadable = true;
            None
        }
        Err(e) => return Err(e),
    };
    let Some(t) = c.trailer.clone() else {
        return Ok(c);
    };
    let bs = u64::from(t.block_size);
    c.distance = Some(device_distance(file, 0, t.image, t.len));
    let js = journal_start(t.block_size);
    // The primary's walk (plain: no fallback).
    let mut path = Vec::new();
    let (found, info) = recovery::walk_with(file, 0, t.image, None, None, &mut |_, _| {})?;
    match &found {
        Inspection::Clean { end, .. } => {
            c.primary = (Some(info.head), Some(*end));
            path = info.path();
            path.push((*end, end + RECORD_HEAD));
        }
        Inspection::TornTail(_) | Inspection::Unrepairable { .. } => {
            // The walk reads the record where it stops too.
            c.primary = (Some(info.head), None);
            path = info.path();
            path.push((info.stop, info.stop + RECORD_HEAD));
        }
        Inspection::Hole(h) => {
            c.primary = (h.head, None);
            if h.head.is_some() {
                path = info.path();
            }
            let at = h.at.map_or(js, |a| js + bs + a);
            c.unreadable.push((at, h.len, "primary"));
        }
        Inspection::NoStorage(_) => {}
    }
    c.primary_path = path;
    if t.state != CopyState::Valid {
        // Being built: not a copy of anything yet.
        return Ok(c);
    }
    // The storage header region.
    compare(file, 0, t.image, js, &mut c)?;
    let trust = Trust::of(file, &t)?;
    let (cf, ci) = recovery::walk_with(file, t.image, t.len, None, None, &mut |_, _| {})?;
    c.damaged = match &cf {
        Inspection::Unrepairable { at, found, .. } => Some(format!(
            "its journal cannot be walked from its head (at ring position {at}: {found})"
        )),
        Inspection::NoStorage(why) => Some(why.clone()),
        Inspection::TornTail(cut) if t.clean.is_some() => Some(format!(
            "it was left level, but its journal is torn at ring position {}: {}",
            cut.at, cut.found
        )),
        _ if trust.is_none() => Some("its storage header is not this storage's".into()),
        _ => None,
    };
    if let Some(trust) = &trust {
        c.copy = (
            Some(ci.head),
            matches!(cf, Inspection::Clean { .. }).then_some(ci.stop),
        );
        let head = c.primary.0.unwrap_or(trust.head);
        c.vouched = trust.vouched(head);
        let ring = js + bs;
        for (a, b) in c.vouched.clone() {
            compare(file, ring + a, t.image + ring + a, b - a, &mut c)?;
        }
    }
    Ok(c)
}

/// Compares `len` bytes of the storage at `at` with the copy's at `copy_at`, recording
/// differences and unreadable ranges in `c`.
fn compare(file: &FileHandle, at: u64, copy_at: u64, len: u64, c: &mut Check) -> minfs::Result<()> {
    let sector = u64::from(file.sector_size().max(1));
    const CHUNK: u64 = 1 << 20;
    let mut off = 0;
    while off < len {
        let n = (len - off).min(CHUNK);
        let (a0, a1) = (
            (at + off) / sector * sector,
            (at + off + n).div_ceil(sector) * sector,
        );
        let (b0, b1) = (
            (copy_at + off) / sector * sector,
            (copy_at + off + n).div_ceil(sector) * sector,
        );
        let read = |o: u64, e: u64| read_at(file, o, e - o);
        match (read(a0, a1), read(b0, b1)) {
            (Ok(p), Ok(q)) => {
                let p = &p[(at + off - a0) as usize..][..n as usize];
                let q = &q[(copy_at + off - b0) as usize..][..n as usize];
                if let Some(i) = p.iter().zip(q).position(|(x, y)| x != y) {
                    let j = p
                        .iter()
                        .zip(q)
                        .rposition(|(x, y)| x != y)
                        .expect("one differs");
                    c.differ.push((at + off + i as u64, (j - i + 1) as u64));
                }
            }
            (Err(e), _) if is_unreadable(&e) => c.unreadable.push((at + off, n, "primary")),
            (_, Err(e)) if is_unreadable(&e) => c.unreadable.push((at + off, n, "copy")),
            (Err(e), _) | (_, Err(e)) => return Err(e),
        }
        off += n;
    }
    Ok(())
}

/// What [`repair`] did with one unreadable range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repaired {
    /// The range: file offset and length.
    pub range: (u64, u64),
    /// How it was repaired, or why not.
    pub how: RepairHow,
    /// It reads now.
    pub readable: bool,
}

/// How [`repair`] dealt with a range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RepairHow {
    /// Written back from the copy by the journal walk of an open.
    FromCopy,
    /// Rewritten by the rebuild of the copy from the journal (or otherwise readable now).
    Rebuilt,
    /// In ring space no walk reads (the journal's or the copy's): zeroed.
    Zeroed,
    /// Neither copy vouches for it: still unreadable (`fsck --salvage` is the last resort).
    Left,
}

impl fmt::Display for Repaired {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (at, len) = self.range;
        let how = match self.how {
            RepairHow::FromCopy => "rewritten from the copy",
            RepairHow::Rebuilt => "rewritten by the rebuild of the copy from the journal",
            RepairHow::Zeroed => "in ring space no walk reads: zeroed",
            RepairHow::Left => {
                "left: the copy cannot vouch for it (unreadable in both copies, or in the \
                 copy's lag); `minfs-cannyls fsck --salvage` is the last resort"
            }
        };
        write!(
            f,
            "file bytes {at}..{}: {how}; {}",
            at + len,
            if self.readable {
                "readable now"
            } else {
                "still unreadable"
            }
        )
    }
}

/// Rewrites the unreadable `ranges` (file offsets and lengths, as a scrub found them) of the
/// storage header, journal and copy of the storage in `file` of `fs` (`minfs-cannyls scrub
/// --repair`): an open serves from the copy, and writes back, what the journal walk needs;
/// the copy is rebuilt from the journal (every block of its path, and its trailer); what is
/// still unreadable in ring space no walk reads (the journal's past its end, the copy's past
/// its path) is zeroed. The storage is opened read-write (the target's lock).
pub fn repair(
    fs: &minfs::Filesystem,
    file: &str,
    ranges: &[(u64, u64)],
) -> crate::Result<Vec<Repaired>> {
    let has_copy = find(&fs.open_file(file)?).ok().flatten().is_some();
    let nvm = if has_copy {
        crate::MinfsNvm::rebuild_copy(fs, file)?
    } else {
        crate::MinfsNvm::from_filesystem(fs, file)?
    };
    let from_copy: Vec<(u64, u64)> = nvm
        .opened()
        .map(|o| o.rewritten.clone())
        .unwrap_or_default();
    drop(nvm);
    let handle = fs.open_file(file)?;
    let c = check(&handle)?;
    let layout = match recovery::layout(&handle, 0, handle.size())? {
        Ok(l) => l,
        Err(why) => {
            return Err(crate::Error::NoStorage {
                target: handle.target().to_string(),
                file: file.to_string(),
                reason: why,
            })
        }
    };
    let (ring, ring_end) = (
        layout.ring_start(),
        layout.journal_start + layout.journal_size,
    );
    let bs = u64::from(layout.block_size);
    let sector = u64::from(handle.sector_size().max(1));
    let readable = |at: u64, len: u64| {
        let (a, b) = (at / sector * sector, (at + len).div_ceil(sector) * sector);
        read_at(&handle, a, b - a).is_ok()
    };
    let mut out = Vec::new();
    for &(at, len) in ranges {
        if readable(at, len) {
            let how = if from_copy.iter().any(|&(r, n)| r < at + len && at < r + n) {
                RepairHow::FromCopy
            } else {
                RepairHow::Rebuilt
            };
            out.push(Repaired {
                range: (at, len),
                how,
                readable: true,
            });
            continue;
        }
        // Ring space no walk reads.
        let copy_image = c.trailer.as_ref().map(|t| t.image);
        let place = if at >= ring && at + len <= ring_end {
            Some((ring, c.primary_path.clone()))
        } else {
            copy_image
                .filter(|&i| at >= i + ring && at + len <= i + ring_end)
                .map(|i| (i + ring, c.vouched.clone()))
        };
        let mut how = RepairHow::Left;
        if let Some((base, path)) = place {
            let rel = at - base;
            let (b0, b1) = (rel / bs * bs, (rel + len).div_ceil(bs) * bs);
            if path.iter().all(|&(a, b)| b <= b0 || b1 <= a) {
                let zero = AlignedBuf::zeroed((b1 - b0) as usize, sector_align(&handle));
                handle.write_at(&zero, base + b0)?;
                handle.flush()?;
                how = RepairHow::Zeroed;
            }
        }
        out.push(Repaired {
            range: (at, len),
            how,
            readable: readable(at, len),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Trailer {
        Trailer {
            state: CopyState::Valid,
            block_size: 4096,
            uuid: [7; 16],
            image: 80 << 20,
            len: 1 << 20,
            generation: 3,
            clean: Some((4096, 8192)),
        }
    }

    #[test]
    fn trailer_roundtrips() {
        for t in [
            sample(),
            Trailer {
                clean: None,
                state: CopyState::Building,
                ..sample()
            },
        ] {
            let b = t.encode();
            assert_eq!(Trailer::decode(&b).unwrap(), t);
            // At the end of a block.
            let mut block = vec![0u8; 4096];
            block[4096 - TRAILER_LEN..].copy_from_slice(&b);
            assert_eq!(Trailer::decode(&block).unwrap(), t);
        }
    }

    #[test]
    fn every_flipped_trailer_byte_is_refused() {
        let b = sample().encode();
        for i in 0..TRAILER_LEN {
            let mut c = b;
            c[i] ^= 0x10;
            assert!(Trailer::decode(&c).is_err(), "byte {i} flipped");
        }
    }

    #[test]
    fn fields_cover_the_trailer() {
        let mut at = 0;
        for (name, off, len) in TRAILER_FIELDS {
            assert_eq!(*off, at, "{name}");
            at += len;
        }
        assert_eq!(at, TRAILER_LEN);
    }

    #[test]
    fn placement_keeps_its_distance() {
        let l = Layout {
            block_size: 4096,
            journal_start: 4096,
            journal_size: 64 << 10,
            data_size: 8 << 20,
        };
        let len = 4096 + (64 << 10);
        // A small storage: the image goes MIN_DISTANCE after the journal.
        let (image, size) = placement(&l, 8 << 20, MIN_DISTANCE);
        assert!(image >= len + MIN_DISTANCE && image >= len + l.data_size);
        assert_eq!(size, image + len + 4096);
        // A large one: right after the storage.
        let big = Layout {
            data_size: 1 << 30,
            ..l
        };
        let (image, _) = placement(&big, len + (1 << 30), MIN_DISTANCE);
        assert_eq!(image, (len + (1 << 30)).div_ceil(4096) * 4096);
        // A file already larger: at its end.
        let (image, size) = placement(&l, 200 << 20, MIN_DISTANCE);
        assert_eq!(size, 200 << 20);
        assert_eq!(image, (200 << 20) - 4096 - len);
    }
}
