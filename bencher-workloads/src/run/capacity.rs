//! How large a Cannyls storage a list of operations needs, and how to split it between the
//! journal and the data region.
//!
//! A Cannyls storage is a header (one block), a journal region (a ring buffer; 1% of the
//! rest by default) and a data region. What the operations keep live at their peak:
//! - in the data region, each live non-embedded lump's bytes plus Cannyls' 2-byte trailer,
//!   rounded up to the block size;
//! - in the journal, one record per live lump: 28 bytes for a lump in the data region
//!   (`Put`), 23 bytes plus the data for an embedded one (`Embed`).
//!
//! The default capacity ([`Plan::capacity`]) gives the data region [`HEADROOM`] × its peak
//! (room for the allocator's fragmentation), and the journal the larger of Cannyls' default
//! 1% and what its garbage collection needs ([`Plan::journal_bytes`]), plus the header, rounded
//! up to a MiB. [`journal_ratio`] then turns a capacity into the `journal_region_ratio` given
//! to `StorageBuilder`: Cannyls' default 0.01 whenever that is enough (every reference
//! workload), more only where embedded lumps fill the journal.

use std::collections::BTreeMap;

use crate::generate::Op;

/// The data region gets this many times its peak of live bytes.
pub const HEADROOM: f64 = 1.5;

/// Cannyls' default share of the journal region (`StorageBuilder::journal_region_ratio`).
pub const DEFAULT_JOURNAL_RATIO: f64 = 0.01;

/// Bytes of a journal `Put` record (checksum 4, tag 1, lump id 16, length 2, portion 5).
pub const PUT_RECORD: u64 = 28;
/// Bytes of a journal `Embed` record without its data (checksum, tag, lump id, length).
pub const EMBED_RECORD: u64 = 23;
/// Bytes of a journal `DeleteRange` record, the largest record without data.
pub const DELETE_RANGE_RECORD: u64 = 37;
/// Records Cannyls' journal GC takes from the head at a time (`journal_gc_queue_size`); they
/// stay allocated until the whole batch is relocated.
pub const GC_QUEUE: u64 = 4096;
/// Size of Cannyls' storage header before padding to the block size.
const HEADER_BYTES: u64 = 512;
const MIB: u64 = 1 << 20;

/// What a list of operations needs from a Cannyls storage of a given block size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    /// The block size planned for.
    pub block_size: u32,
    /// The peak of live bytes in the data region (block-rounded, with trailers).
    pub peak_data_bytes: u64,
    /// The peak of live journal record bytes.
    pub peak_journal_bytes: u64,
    /// The journal region this plan asks for: 4 × the live records (GC starts when the ring is
    /// half full and relocates as it goes), plus two GC batches of the largest record, plus
    /// 64 KiB and the journal's header block.
    pub journal_bytes: u64,
    /// The data region this plan asks for: [`HEADROOM`] × the peak, block-aligned.
    pub data_bytes: u64,
    /// The default capacity: header + journal (at least 1% of journal + data) + data, rounded
    /// up to a MiB.
    pub capacity: u64,
}

fn ceil_to(n: u64, unit: u64) -> u64 {
    n.div_ceil(unit).saturating_mul(unit)
}

/// Bytes a non-embedded lump of `size` bytes takes in the data region.
pub fn data_lump_bytes(size: u32, block_size: u32) -> u64 {
    ceil_to(u64::from(size) + 2, u64::from(block_size))
}

/// Bytes of the header region for `block_size`.
pub fn header_bytes(block_size: u32) -> u64 {
    ceil_to(HEADER_BYTES, u64::from(block_size))
}

/// Plans the storage for `ops` with blocks of `block_size` bytes (512 or a multiple).
pub fn plan(ops: &[Op], block_size: u32) -> Plan {
    let bs = u64::from(block_size.max(512));
    // id → bytes it holds in the data region and in the journal.
    let mut live: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
    let (mut data, mut journal) = (0u64, 0u64);
    let (mut peak_data, mut peak_journal) = (0u64, 0u64);
    let mut records = 0u64;
    let mut max_record = DELETE_RANGE_RECORD;
    let remove = |entry: Option<(u64, u64)>, data: &mut u64, journal: &mut u64| {
        if let Some((d, j)) = entry {
            *data -= d;
            *journal -= j;
        }
    };
    for op in ops {
        match *op {
            Op::Put {
                id, size, embedded, ..
            } => {
                let cost = if embedded {
                    let record = EMBED_RECORD + u64::from(size);
                    max_record = max_record.max(record);
                    (0, record)
                } else {
                    (data_lump_bytes(size, block_size.max(512)), PUT_RECORD)
                };
                remove(live.insert(id, cost), &mut data, &mut journal);
                data += cost.0;
                journal += cost.1;
                records += 1;
            }
            Op::Delete { id } => {
                remove(live.remove(&id), &mut data, &mut journal);
                records += 1;
            }
            Op::DeleteRange { start, end } => {
                if start < end {
                    let ids: Vec<u64> = live.range(start..end).map(|(&id, _)| id).collect();
                    for id in ids {
                        remove(live.remove(&id), &mut data, &mut journal);
                    }
                }
                records += 1;
            }
            Op::Get { .. } | Op::Sync => {}
        }
        peak_data = peak_data.max(data);
        peak_journal = peak_journal.max(journal);
    }
    let journal_bytes = ceil_to(
        4 * peak_journal + 2 * records.min(GC_QUEUE) * max_record + (64 << 10) + bs,
        bs,
    );
    let data_bytes = ceil_to((peak_data as f64 * HEADROOM).ceil() as u64, bs);
    // At Cannyls' default ratio the journal is 1% of journal + data.
    let body = (data_bytes + journal_bytes)
        .max((data_bytes as f64 / (1.0 - DEFAULT_JOURNAL_RATIO)).ceil() as u64 + bs);
    let capacity = ceil_to(header_bytes(block_size) + body + 2 * bs, MIB);
    Plan {
        block_size,
        peak_data_bytes: peak_data,
        peak_journal_bytes: peak_journal,
        journal_bytes,
        data_bytes,
        capacity,
    }
}

/// The `journal_region_ratio` for a storage of `capacity` bytes whose journal should hold
/// `journal_bytes`: Cannyls' default 0.01 when that gives enough, else the share that does
/// (at most 1).
pub fn journal_ratio(capacity: u64, block_size: u32, journal_bytes: u64) -> f64 {
    let body = capacity.saturating_sub(header_bytes(block_size));
    if body == 0 {
        return DEFAULT_JOURNAL_RATIO;
    }
    let at_default = (body as f64 * DEFAULT_JOURNAL_RATIO) as u64;
    if at_default >= journal_bytes {
        return DEFAULT_JOURNAL_RATIO;
    }
    // Round up to 1e-6 so that Cannyls' ⌊body × ratio⌋ is not below journal_bytes.
    let ratio = ((journal_bytes as f64 / body as f64) * 1e6).ceil() / 1e6;
    ratio.min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(id: u64, size: u32, embedded: bool) -> Op {
        Op::Put {
            id,
            size,
            embedded,
            overwrite: false,
        }
    }

    #[test]
    fn lump_sizes() {
        assert_eq!(data_lump_bytes(0, 512), 512);
        assert_eq!(data_lump_bytes(510, 512), 512);
        assert_eq!(data_lump_bytes(511, 512), 1024);
        assert_eq!(data_lump_bytes(262_144, 512), 513 * 512);
        assert_eq!(data_lump_bytes(262_144, 4096), 65 * 4096);
        assert_eq!(header_bytes(512), 512);
        assert_eq!(header_bytes(4096), 4096);
    }

    #[test]
    fn data_workload_keeps_the_default_ratio() {
        let ops: Vec<Op> = (1..=100).map(|id| put(id, 1 << 20, false)).collect();
        let p = plan(&ops, 512);
        assert_eq!(p.peak_data_bytes, 100 * ((1 << 20) + 512));
        assert_eq!(p.peak_journal_bytes, 100 * PUT_RECORD);
        assert!(p.capacity % MIB == 0);
        assert!(p.capacity as f64 >= 1.5 * p.peak_data_bytes as f64 / 0.99);
        assert_eq!(
            journal_ratio(p.capacity, 512, p.journal_bytes),
            DEFAULT_JOURNAL_RATIO
        );
    }

    #[test]
    fn embedded_workload_gets_a_larger_journal() {
        let mut ops: Vec<Op> = (1..=2000).map(|id| put(id, 2048, true)).collect();
        ops.push(Op::Delete { id: 1 });
        ops.push(Op::DeleteRange { start: 1, end: 11 });
        let p = plan(&ops, 512);
        assert_eq!(p.peak_data_bytes, 0);
        assert_eq!(p.peak_journal_bytes, 2000 * (EMBED_RECORD + 2048));
        assert!(p.journal_bytes >= 4 * p.peak_journal_bytes);
        let ratio = journal_ratio(p.capacity, 512, p.journal_bytes);
        assert!(ratio > DEFAULT_JOURNAL_RATIO && ratio <= 1.0, "{ratio}");
        let body = p.capacity - header_bytes(512);
        assert!((body as f64 * ratio) as u64 >= p.journal_bytes);
        assert!(body - p.journal_bytes >= p.data_bytes);
    }

    #[test]
    fn overwrites_and_deletes_release_space() {
        let ops = [
            put(1, 1000, false),
            Op::Put {
                id: 1,
                size: 5000,
                embedded: false,
                overwrite: true,
            },
            Op::Delete { id: 1 },
            put(2, 100, false),
        ];
        let p = plan(&ops, 512);
        assert_eq!(p.peak_data_bytes, data_lump_bytes(5000, 512));
    }

    #[test]
    fn nothing_still_plans_a_storage() {
        let p = plan(&[Op::Sync], 4096);
        assert!(p.capacity >= MIB);
        let ratio = journal_ratio(p.capacity, 4096, p.journal_bytes);
        assert!(ratio > DEFAULT_JOURNAL_RATIO && ratio < 0.1, "{ratio}");
    }
}
