//! Where each lump of a Cannyls storage lies in its minfs file, from the storage's own index,
//! read without writing: the journal walked from its head as Cannyls replays it when it opens
//! the storage ([`crate::recovery`]), `Put` and `Embed` records adding lumps, `Delete` and
//! `DeleteRange` removing them. With that map an unreadable byte range of the file (from
//! `minfs scrub`) is named: the lumps whose data it holds, or the storage header, the journal
//! header or the journal ring.
//!
//! The map is the one on the media: a storage open elsewhere may hold records not yet written
//! (Cannyls' journal buffer, [`crate::MinfsNvm`]'s held block), which the map lacks.

use std::collections::BTreeMap;
use std::fmt;

use cannyls::lump::LumpId;
use minfs::FileHandle;

use crate::recovery::{
    self, Inspection, Layout, RECORD_HEAD, TAG_DELETE, TAG_DELETE_RANGE, TAG_EMBED, TAG_PUT,
};

/// Where a lump's bytes are, as byte offsets in the minfs file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// In the data region: whole blocks.
    Data {
        /// First byte in the file.
        start: u64,
        /// Bytes (its blocks).
        len: u64,
    },
    /// Embedded in its journal record (a small lump).
    Journal {
        /// First byte of the data in the file.
        start: u64,
        /// Bytes.
        len: u64,
    },
}

impl Place {
    /// `(start, end)`: the lump's bytes in the file.
    pub fn range(&self) -> (u64, u64) {
        match *self {
            Place::Data { start, len } | Place::Journal { start, len } => (start, start + len),
        }
    }
}

/// What part of the storage a byte of its file belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Region {
    /// The storage header region (magic, layout): Cannyls cannot open the storage without it.
    StorageHeader,
    /// The journal header block (the ring's head position).
    JournalHeader,
    /// The journal ring (records, and embedded lumps' data).
    Journal,
    /// The data region (lumps' blocks).
    Data,
    /// The copy of the storage header and journal region, or its trailer ([`crate::copy`]).
    Copy,
    /// Past the storage's end (file space Cannyls does not use).
    Unused,
}

impl Region {
    /// The name in reports and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Region::StorageHeader => "storage-header",
            Region::JournalHeader => "journal-header",
            Region::Journal => "journal",
            Region::Data => "data",
            Region::Copy => "copy",
            Region::Unused => "unused",
        }
    }
}

impl fmt::Display for Region {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The lumps of a storage and where they lie.
#[derive(Debug, Clone)]
pub struct LumpMap {
    /// The storage's layout (from its header).
    pub layout: Layout,
    /// Where the storage starts in the file.
    pub base: u64,
    /// Every lump the journal lists, by id.
    pub lumps: BTreeMap<u128, Place>,
    /// How the journal walk ended (clean, or a torn tail Cannyls would refuse: the lumps are
    /// then those before the tear).
    pub journal: Inspection,
    /// Where the copy and its trailer are in the file (`[image, file end)`), when it has one.
    pub copy: Option<(u64, u64)>,
}

impl LumpMap {
    /// Reads the map of the storage in `[base, base + capacity)` of `file` (nothing is
    /// written). `Ok(Err(why))` when the file holds no storage or its journal cannot be
    /// walked from its head.
    pub fn read(
        file: &FileHandle,
        base: u64,
        capacity: u64,
    ) -> minfs::Result<Result<LumpMap, String>> {
        let mut records: Vec<(u64, Vec<u8>)> = Vec::new();
        // Unreadable journal sectors come from the copy, when it vouches for them (read only).
        let trailer = if base == 0 {
            crate::copy::find(file).ok().flatten()
        } else {
            None
        };
        let capacity = trailer.as_ref().map_or(capacity, |t| capacity.min(t.image));
        let mut fallback = trailer.map(|t| crate::copy::OpenFallback::new(file, t));
        let (journal, _) = recovery::walk_with(
            file,
            base,
            capacity,
            fallback.as_mut().map(|f| f as &mut dyn recovery::Fallback),
            None,
            &mut |pos, bytes| records.push((pos, bytes.to_vec())),
        )?;
        let layout = match &journal {
            Inspection::NoStorage(why) => return Ok(Err(why.clone())),
            Inspection::Clean { layout, .. } => *layout,
            Inspection::TornTail(cut) => cut.layout,
            Inspection::Hole(hole) => {
                return Ok(Err(format!("the journal cannot be read: {hole}")));
            }
            Inspection::Unrepairable {
                layout,
                head,
                at,
                found,
            } => {
                let _ = layout;
                return Ok(Err(format!(
                    "the journal cannot be walked from its head at ring position {head}: \
                     stopped at {at}, found {found}"
                )));
            }
        };
        let bs = u64::from(layout.block_size);
        let data_start = base + layout.journal_start + layout.journal_size;
        let ring_start = base + layout.ring_start();
        let mut lumps = BTreeMap::new();
        let id_at = |b: &[u8], i: usize| u128::from_be_bytes(b[i..i + 16].try_into().expect("16"));
        let h = RECORD_HEAD as usize;
        for (pos, b) in records {
            match b[4] {
                TAG_PUT => {
                    let len = u64::from(u16::from_be_bytes([b[h + 16], b[h + 17]]));
                    let mut start = [0u8; 8];
                    start[3..].copy_from_slice(&b[h + 18..h + 23]);
                    let start = u64::from_be_bytes(start);
                    lumps.insert(
                        id_at(&b, h),
                        Place::Data {
                            start: data_start + start * bs,
                            len: len * bs,
                        },
                    );
                }
                TAG_EMBED => {
                    let len = u64::from(u16::from_be_bytes([b[h + 16], b[h + 17]]));
                    lumps.insert(
                        id_at(&b, h),
                        Place::Journal {
                            start: ring_start + pos + RECORD_HEAD + 18,
                            len,
                        },
                    );
                }
                TAG_DELETE => {
                    lumps.remove(&id_at(&b, h));
                }
                TAG_DELETE_RANGE => {
                    let (a, z) = (id_at(&b, h), id_at(&b, h + 16));
                    let gone: Vec<u128> = lumps.range(a..z).map(|(k, _)| *k).collect();
                    for k in gone {
                        lumps.remove(&k);
                    }
                }
                _ => {}
            }
        }
        let copy = crate::copy::find(file)
            .ok()
            .flatten()
            .map(|t| (base + t.image, base + t.file_size()));
        Ok(Ok(LumpMap {
            layout,
            base,
            lumps,
            journal,
            copy,
        }))
    }

    /// The regions `[offset, offset + len)` of the file touches, in order.
    pub fn regions(&self, offset: u64, len: u64) -> Vec<Region> {
        let l = &self.layout;
        let bounds = [
            (
                self.base,
                self.base + l.journal_start,
                Region::StorageHeader,
            ),
            (
                self.base + l.journal_start,
                self.base + l.ring_start(),
                Region::JournalHeader,
            ),
            (
                self.base + l.ring_start(),
                self.base + l.journal_start + l.journal_size,
                Region::Journal,
            ),
            (
                self.base + l.journal_start + l.journal_size,
                self.base + l.storage_end(),
                Region::Data,
            ),
        ];
        let end = offset + len;
        let mut out: Vec<Region> = bounds
            .iter()
            .filter(|(a, b, _)| offset < *b && *a < end)
            .map(|(_, _, r)| *r)
            .collect();
        let storage_end = bounds[3].1;
        let (copy_start, copy_end) = self.copy.unwrap_or((u64::MAX, u64::MAX));
        if offset < copy_end && copy_start < end {
            out.push(Region::Copy);
        }
        let unused_end = end.min(copy_start);
        if (unused_end > storage_end && offset < copy_start) || offset < self.base {
            out.push(Region::Unused);
        }
        out
    }

    /// The lumps whose bytes `[offset, offset + len)` of the file overlaps, by id.
    pub fn lumps_in(&self, offset: u64, len: u64) -> Vec<LumpId> {
        let end = offset + len;
        self.lumps
            .iter()
            .filter(|(_, p)| {
                let (a, b) = p.range();
                offset < b && a < end
            })
            .map(|(id, _)| LumpId::new(*id))
            .collect()
    }
}

/// Where the file bytes `[offset, offset + len)` lie on the device, given the file's extents
/// in file order ([`FileHandle::extents`]): `(device offset, length)` pieces, in file order.
/// Bytes past the file's last extent are left out.
pub fn device_ranges(extents: &[minfs::format::Extent], offset: u64, len: u64) -> Vec<(u64, u64)> {
    let end = offset.saturating_add(len);
    let mut out = Vec::new();
    let mut file_at = 0u64;
    for e in extents {
        let (a, b) = (file_at, file_at + e.byte_len());
        file_at = b;
        if b <= offset {
            continue;
        }
        if a >= end {
            break;
        }
        let from = offset.max(a);
        let to = end.min(b);
        out.push((e.byte_offset() + (from - a), to - from));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use minfs::format::Extent;

    #[test]
    fn device_ranges_follow_the_extents_in_file_order() {
        // Blocks of 4096: file bytes 0..8192 at block 10, 8192..20480 at block 3.
        let ex = [Extent { start: 10, len: 2 }, Extent { start: 3, len: 3 }];
        assert_eq!(device_ranges(&ex, 0, 512), vec![(40960, 512)]);
        assert_eq!(
            device_ranges(&ex, 8000, 400),
            vec![(40960 + 8000, 192), (3 * 4096, 208)]
        );
        assert_eq!(device_ranges(&ex, 8192, 4096), vec![(3 * 4096, 4096)]);
        assert!(device_ranges(&ex, 20480, 512).is_empty());
        assert_eq!(
            device_ranges(&ex, 20000, 1000),
            vec![(3 * 4096 + 11808, 480)]
        );
    }
}
