//! `minfs-cannyls fsck --salvage`: the last resort when journal bytes needed to open a storage
//! are unreadable in the file **and** in its copy (or it has no copy).
//!
//! Cannyls' journal is its only index, its records carry no sequence number, and its GC
//! re-appends live `Put`s, so position in the ring says nothing about a record's age (see
//! [`crate::copy`]). Skipping unreadable records is therefore not safe in general: a lost
//! `Delete` or overwrite brings back older data, and a lost `Delete` followed by a lost `Put`
//! into the freed blocks leaves the older lump pointing at the newer one's bytes. What
//! salvage does, and what it can vouch for:
//!
//! - It walks the journal from the head (serving unreadable bytes from the copy where it can)
//!   to the **hole**: the records before it are whole and current.
//! - It **resumes** after the hole only where the ring's structure proves the records current:
//!   when the hole lies before the ring's wrap, the journal went on at ring position 0, and a
//!   walk from there ends at an `EndOfRecords` before the head, those records are the
//!   journal's newest (had the journal not wrapped, ring position 0 would start records
//!   written before the head and running into it: the walk would reach the head, not end
//!   before it). Everything else after the hole is **cut**: its records cannot be shown
//!   current. A walk over them that parses (no proof) still names the lumps they mention, as
//!   "possibly lost", and their blocks count as taken.
//! - It **drops lumps whose blocks overlap** another's (or blocks a record after the hole
//!   names): the one written earlier reads the later one's bytes.
//! - Lumps whose latest record precedes the hole are **at risk**: the hole may hold their
//!   delete, an overwrite, or a delete and a put into their blocks. They are kept (their
//!   records lie outside the hole) and named; [`Options::drop_at_risk`] drops them too, so
//!   that nothing is served that salvage cannot vouch for.
//! - It reports the ring bytes lost and the lump ids it knows: those of a record the hole cuts
//!   into (its first bytes readable), and those a parse after the hole names.
//!
//! Writing ([`Options::write`]): a new journal with one record per kept lump (`Put` or
//! `Embed`) and an `EndOfRecords`, written into ring space outside the journal's readable
//! records and flushed, then the journal header pointing at it, flushed: a crash before the
//! header write leaves the old journal as it was, and salvage can run again. The copy's
//! trailer says "building" first, so that the next open rebuilds the copy from the new
//! journal.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use minfs::{AlignedBuf, FileHandle};

use crate::copy::{self, CopyState, OpenFallback, Trailer};
use crate::recovery::{
    self, sector_align, Fallback, Hole, Inspection, Layout, WalkInfo, END_OF_RECORDS, RECORD_HEAD,
    TAG_DELETE, TAG_DELETE_RANGE, TAG_EMBED, TAG_PUT,
};

/// What [`salvage`] may do.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Options {
    /// Write the salvaged journal (else only report what it would keep and lose).
    pub write: bool,
    /// Drop the lumps at risk as well (whose latest record precedes the hole).
    pub drop_at_risk: bool,
}

/// Where a kept lump's bytes are.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Lump {
    /// In the data region: blocks and first block.
    Data { blocks: u16, start: u64 },
    /// Embedded: its bytes.
    Embedded(Vec<u8>),
}

/// What [`salvage`] found and did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// The storage layout.
    pub layout: Layout,
    /// The ring head.
    pub head: u64,
    /// The unreadable ring bytes.
    pub hole: (u64, u64),
    /// Ring bytes whose records are lost: from the record the hole cuts into to where the
    /// walk resumed, or to the journal's (unknown) end — `None`: the ring's end, and on
    /// around up to the head.
    pub lost: (u64, Option<u64>),
    /// The walk resumed at ring position 0 after the hole (the records there proven current).
    pub resumed: bool,
    /// Whole records read before the hole, and after it.
    pub records: (u64, u64),
    /// Lumps kept, by id.
    pub kept: BTreeSet<u128>,
    /// Dropped: their blocks overlap a lump written later (or blocks named after the hole).
    pub dropped_overlap: Vec<u128>,
    /// Kept (or dropped, with [`Options::drop_at_risk`]) although their latest record precedes
    /// the hole.
    pub at_risk: Vec<u128>,
    /// Whether the lumps at risk were dropped.
    pub at_risk_dropped: bool,
    /// Lost: the record the hole cuts into, when its id could be read.
    pub cut_record: Option<u128>,
    /// Named by records after the hole that cannot be shown current: possibly lost (or newer
    /// than what is kept).
    pub possibly_lost: Vec<u128>,
    /// Where the new journal was written (ring position), when it was.
    pub written_at: Option<u64>,
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ids = |v: &[u128]| {
            if v.is_empty() {
                "none".to_string()
            } else {
                v.iter()
                    .map(|i| format!("{i:032x}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        };
        writeln!(
            f,
            "unreadable in the file and its copy: ring bytes {}..{} (file offset {})",
            self.hole.0,
            self.hole.0 + self.hole.1,
            self.layout.ring_start() + self.hole.0
        )?;
        writeln!(
            f,
            "records lost: ring bytes {}..{}",
            self.lost.0,
            self.lost.1.map_or(
                "the journal's end (unknown: up to the ring's end and around to the head)"
                    .to_string(),
                |e| e.to_string()
            )
        )?;
        writeln!(
            f,
            "{} records read before the hole, {} after it ({})",
            self.records.0,
            self.records.1,
            if self.resumed {
                "resumed at ring position 0: the journal wrapped, its records there end before the head"
            } else {
                "cut at the hole: nothing after it can be shown current"
            }
        )?;
        writeln!(f, "lumps kept: {}", self.kept.len())?;
        writeln!(
            f,
            "lumps dropped, their blocks overlapping a lump written later: {}",
            ids(&self.dropped_overlap)
        )?;
        writeln!(
            f,
            "lumps at risk (latest record before the hole: their delete or overwrite may be \
             among the lost records), {}: {}",
            if self.at_risk_dropped {
                "dropped"
            } else {
                "kept"
            },
            ids(&self.at_risk)
        )?;
        writeln!(
            f,
            "lump whose record the hole cuts into (lost): {}",
            self.cut_record
                .map_or("none".into(), |i| format!("{i:032x}"))
        )?;
        write!(
            f,
            "lumps named after the hole (possibly lost or newer than kept): {}",
            ids(&self.possibly_lost)
        )
    }
}

fn id_at(b: &[u8], i: usize) -> u128 {
    u128::from_be_bytes(b[i..i + 16].try_into().expect("16 bytes"))
}

/// Replays `records` (ring position, bytes) into `index` (id → lump and order), from order
/// `first`.
fn replay(records: &[(u64, Vec<u8>)], first: usize, index: &mut BTreeMap<u128, (Lump, usize)>) {
    let h = RECORD_HEAD as usize;
    for (k, (_, b)) in records.iter().enumerate() {
        let order = first + k;
        match b[4] {
            TAG_PUT => {
                let blocks = u16::from_be_bytes([b[h + 16], b[h + 17]]);
                let mut s = [0u8; 8];
                s[3..].copy_from_slice(&b[h + 18..h + 23]);
                index.insert(
                    id_at(b, h),
                    (
                        Lump::Data {
                            blocks,
                            start: u64::from_be_bytes(s),
                        },
                        order,
                    ),
                );
            }
            TAG_EMBED => {
                index.insert(id_at(b, h), (Lump::Embedded(b[h + 18..].to_vec()), order));
            }
            TAG_DELETE => {
                index.remove(&id_at(b, h));
            }
            TAG_DELETE_RANGE => {
                let (a, z) = (id_at(b, h), id_at(b, h + 16));
                let gone: Vec<u128> = index.range(a..z).map(|(k, _)| *k).collect();
                for g in gone {
                    index.remove(&g);
                }
            }
            _ => {}
        }
    }
}

/// A record's bytes: checksum, tag, payload.
fn record(tag: u8, payload: &[u8]) -> Vec<u8> {
    let mut body = vec![tag];
    body.extend_from_slice(payload);
    let sum = adler32::RollingAdler32::from_buffer(&body).hash();
    let mut out = sum.to_be_bytes().to_vec();
    out.extend_from_slice(&body);
    out
}

/// Records of a parse after the hole (no proof): ids named and data blocks taken, from the
/// first offset (within 64 KiB of the hole's end) where a chain of valid records runs to an
/// `EndOfRecords`.
fn after_hole(
    file: &FileHandle,
    layout: &Layout,
    from: u64,
    until: u64,
) -> (Vec<u128>, Vec<(u64, u64)>) {
    let cap = layout.ring_size();
    let end = until.min(cap);
    if from >= end {
        return (Vec::new(), Vec::new());
    }
    let sector = u64::from(file.sector_size().max(1));
    let a = from / sector * sector;
    let b = end.div_ceil(sector) * sector;
    let b = b.min(cap / sector * sector);
    if b <= a {
        return (Vec::new(), Vec::new());
    }
    let mut buf = AlignedBuf::zeroed((b - a) as usize, sector_align(file));
    if file.read_at(&mut buf, layout.ring_start() + a).is_err() {
        return (Vec::new(), Vec::new());
    }
    let bytes = &buf[(from - a) as usize..];
    let parse = |mut p: usize| -> Option<(Vec<&[u8]>, bool)> {
        let mut out = Vec::new();
        loop {
            if p + 5 > bytes.len() {
                return None;
            }
            let size = match bytes[p + 4] {
                0 | 1 => 5,
                TAG_PUT => 28,
                TAG_DELETE => 21,
                TAG_DELETE_RANGE => 37,
                TAG_EMBED if p + 23 <= bytes.len() => {
                    23 + usize::from(u16::from_be_bytes([bytes[p + 21], bytes[p + 22]]))
                }
                _ => return None,
            };
            if p + size > bytes.len() {
                return None;
            }
            let stored = u32::from_be_bytes(bytes[p..p + 4].try_into().expect("4"));
            if adler32::RollingAdler32::from_buffer(&bytes[p + 4..p + size]).hash() != stored {
                return None;
            }
            if bytes[p + 4] <= 1 {
                // An EndOfRecords, or a GoToFront (the records go on at ring position 0).
                return Some((out, bytes[p + 4] == 1));
            }
            out.push(&bytes[p..p + size]);
            p += size;
        }
    };
    for start in 0..bytes.len().min(64 << 10) {
        if let Some((recs, wrapped)) = parse(start).filter(|r| !r.0.is_empty()) {
            let (mut ids, mut taken) = if wrapped && from > 0 {
                // Went round: what follows at ring position 0, up to where this began.
                after_hole(file, layout, 0, from)
            } else {
                (Vec::new(), Vec::new())
            };
            for r in recs {
                match r[4] {
                    TAG_PUT | TAG_EMBED | TAG_DELETE => ids.push(id_at(r, 5)),
                    TAG_DELETE_RANGE => {}
                    _ => {}
                }
                if r[4] == TAG_PUT {
                    let blocks = u64::from(u16::from_be_bytes([r[21], r[22]]));
                    let mut s = [0u8; 8];
                    s[3..].copy_from_slice(&r[23..28]);
                    let s = u64::from_be_bytes(s);
                    taken.push((s, s + blocks));
                }
            }
            ids.sort_unstable();
            ids.dedup();
            return (ids, taken);
        }
    }
    (Vec::new(), Vec::new())
}

/// Salvages the journal of the storage in `file` (see the [module docs](self)): `Ok(Err(why))`
/// when there is nothing to salvage, or nothing it can do.
pub fn salvage(file: &FileHandle, opts: Options) -> minfs::Result<Result<Report, String>> {
    let trailer: Option<Trailer> = copy::find(file).ok().flatten();
    let capacity = trailer
        .as_ref()
        .map_or(file.size(), |t| t.image.min(file.size()));
    let mut fallback = trailer.clone().map(|t| OpenFallback::new(file, t));
    let mut before: Vec<(u64, Vec<u8>)> = Vec::new();
    let (found, info) = recovery::walk_with(
        file,
        0,
        capacity,
        fallback.as_mut().map(|f| f as &mut dyn Fallback),
        None,
        &mut |pos, b| before.push((pos, b.to_vec())),
    )?;
    let hole: Hole = match found {
        Inspection::Hole(h) => h,
        Inspection::Clean { .. } | Inspection::TornTail(_) => {
            return Ok(Err(
                "the journal can be read to its end (a torn tail is cut by `fsck -y` or by \
                 opening it): nothing to salvage"
                    .into(),
            ))
        }
        Inspection::Unrepairable { at, found, .. } => {
            return Ok(Err(format!(
                "the journal cannot be walked from its head (at ring position {at}: {found}), \
                 with no unreadable sector to blame: nothing can be vouched for"
            )))
        }
        Inspection::NoStorage(why) => return Ok(Err(why)),
    };
    let (Some(head), Some(at)) = (hole.head, hole.at) else {
        return Ok(Err(
            "the journal header (the ring's head) is unreadable in the file and its copy: no \
             record can be shown current; the storage must be rebuilt (e.g. from replicas)"
                .into(),
        ));
    };
    let layout = hole.layout;
    let bs = u64::from(layout.block_size);
    let cap = layout.ring_size();
    // The record the hole cuts into: its id, when its first bytes are readable.
    let cut_record = {
        let r = hole.record_at;
        let mut id = None;
        if r + 21 <= at {
            let a = r / bs * bs;
            let b = (r + 21).div_ceil(bs) * bs;
            let mut buf = AlignedBuf::zeroed((b - a) as usize, sector_align(file));
            if file.read_at(&mut buf, layout.ring_start() + a).is_ok() {
                let p = (r - a) as usize;
                if matches!(
                    buf[p + 4],
                    TAG_PUT | TAG_EMBED | TAG_DELETE | TAG_DELETE_RANGE
                ) {
                    id = Some(id_at(&buf, p + 5));
                }
            }
        }
        id
    };
    // Resume at ring position 0: only when the hole lies before the wrap, and the records
    // there end before the head.
    let mut after: Vec<(u64, Vec<u8>)> = Vec::new();
    let mut resumed_end = None;
    if info.wrap.is_none() && head > 0 {
        let (f2, i2) = recovery::walk_from(
            file,
            0,
            layout,
            head,
            0,
            true,
            fallback.as_mut().map(|f| f as &mut dyn Fallback),
            None,
            WalkInfo {
                head,
                ..WalkInfo::default()
            },
            &mut |pos, b| after.push((pos, b.to_vec())),
        )?;
        match f2 {
            Inspection::Clean { end, .. } if end + RECORD_HEAD <= head => resumed_end = Some(end),
            Inspection::TornTail(cut) if cut.at + RECORD_HEAD <= head => resumed_end = Some(cut.at),
            _ => {}
        }
        let _ = i2;
        if resumed_end.is_none() {
            after.clear();
        }
    }
    let resumed = resumed_end.is_some();
    let hole_end = at + hole.len;
    // What a parse after the hole names (no proof).
    let (possibly_lost, taken_after) = if resumed {
        // The first segment after the hole, up to the ring's end.
        after_hole(file, &layout, hole_end, cap)
    } else if info.wrap.is_some() {
        after_hole(file, &layout, hole_end, head)
    } else {
        after_hole(file, &layout, hole_end, cap)
    };
    // Replay.
    let mut index: BTreeMap<u128, (Lump, usize)> = BTreeMap::new();
    replay(&before, 0, &mut index);
    let split = before.len();
    replay(&after, split, &mut index);
    // Overlaps: the lump written earlier goes; and blocks a record after the hole names.
    let mut dropped = BTreeSet::new();
    let mut spans: Vec<(u64, u64, usize, u128)> = index
        .iter()
        .filter_map(|(id, (l, o))| match l {
            Lump::Data { blocks, start } => Some((*start, start + u64::from(*blocks), *o, *id)),
            Lump::Embedded(_) => None,
        })
        .collect();
    spans.sort_unstable();
    for i in 0..spans.len() {
        for j in i + 1..spans.len() {
            if spans[j].0 >= spans[i].1 {
                break;
            }
            let older = if spans[i].2 < spans[j].2 {
                spans[i].3
            } else {
                spans[j].3
            };
            dropped.insert(older);
        }
    }
    for &(a, b, o, id) in &spans {
        if o < split && taken_after.iter().any(|&(x, y)| x < b && a < y) {
            dropped.insert(id);
        }
    }
    for id in &dropped {
        index.remove(id);
    }
    let mut at_risk: Vec<u128> = index
        .iter()
        .filter(|(_, (_, o))| *o < split)
        .map(|(id, _)| *id)
        .collect();
    at_risk.sort_unstable();
    if opts.drop_at_risk {
        for id in &at_risk {
            index.remove(id);
        }
    }
    let mut report = Report {
        layout,
        head,
        hole: (at, hole.len),
        lost: (hole.record_at, if resumed { Some(cap) } else { None }),
        resumed,
        records: (before.len() as u64, after.len() as u64),
        kept: index.keys().copied().collect(),
        dropped_overlap: dropped.into_iter().collect(),
        at_risk,
        at_risk_dropped: opts.drop_at_risk,
        cut_record,
        possibly_lost,
        written_at: None,
    };
    if !opts.write {
        return Ok(Ok(report));
    }
    // The new journal.
    let mut bytes = Vec::new();
    for (id, (l, _)) in &index {
        match l {
            Lump::Data { blocks, start } => {
                let mut p = id.to_be_bytes().to_vec();
                p.extend_from_slice(&blocks.to_be_bytes());
                p.extend_from_slice(&start.to_be_bytes()[3..]);
                bytes.extend(record(TAG_PUT, &p));
            }
            Lump::Embedded(d) => {
                let mut p = id.to_be_bytes().to_vec();
                p.extend_from_slice(&(d.len() as u16).to_be_bytes());
                p.extend_from_slice(d);
                bytes.extend(record(TAG_EMBED, &p));
            }
        }
    }
    bytes.extend_from_slice(&END_OF_RECORDS);
    let need = (bytes.len() as u64).div_ceil(bs) * bs;
    // Where: outside the records read (before the hole, and resumed) and the hole.
    let up = |x: u64| x.div_ceil(bs) * bs;
    let (head_block, ring_end, hole_up) = (head / bs * bs, cap / bs * bs, up(hole_end));
    let (preserved, candidates): (Vec<(u64, u64)>, Vec<u64>) = match (info.wrap, resumed_end) {
        (Some(_), _) => (vec![(head_block, ring_end), (0, hole_up)], vec![hole_up]),
        (None, Some(e)) => (
            vec![(0, up(e + RECORD_HEAD)), (head_block, hole_up)],
            vec![up(e + RECORD_HEAD), hole_up],
        ),
        (None, None) => (vec![(head_block, hole_up)], vec![hole_up, 0]),
    };
    let fits =
        |q: u64| q + need <= ring_end && preserved.iter().all(|&(a, b)| q + need <= a || b <= q);
    let Some(q) = candidates.into_iter().find(|&q| fits(q)) else {
        return Ok(Err(format!(
            "no room in the ring for the salvaged journal ({need} bytes) outside the records \
             it read; nothing written"
        )));
    };
    // The copy vouches for nothing from now on: rebuilt at the next open.
    if let Some(t) = trailer.as_ref().filter(|t| t.state == CopyState::Valid) {
        let t2 = Trailer {
            state: CopyState::Building,
            generation: t.generation + 1,
            clean: None,
            ..t.clone()
        };
        copy::write_trailer_block(file, &t2)?;
        file.flush()?;
    }
    let mut buf = AlignedBuf::zeroed(need as usize, sector_align(file));
    buf[..bytes.len()].copy_from_slice(&bytes);
    file.write_at(&buf, layout.ring_start() + q)?;
    file.flush()?;
    let mut hdr = AlignedBuf::zeroed(bs as usize, sector_align(file));
    hdr[..8].copy_from_slice(&q.to_be_bytes());
    file.write_at(&hdr, layout.journal_start)?;
    file.flush()?;
    report.written_at = Some(q);
    Ok(Ok(report))
}
