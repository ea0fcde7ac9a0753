//! A metadata slot: superblock + file table, written and read as one 64 KiB unit.

use super::file_table;
use super::superblock::Superblock;
use super::{FileEntry, FILE_TABLE_OFFSET, SLOT_SIZE, SUPERBLOCK_SIZE};
use crate::alloc::Allocator;
use crate::error::{Corruption, SlotId};
use crate::sys::AlignedBuf;

/// A validated slot: the superblock, the files, and the free-space map they imply.
#[derive(Debug, Clone)]
pub struct Slot {
    pub sb: Superblock,
    pub files: Vec<FileEntry>,
    pub alloc: Allocator,
}

/// Encodes a slot. The superblock's `slot`, `file_count`, `file_table_len` and
/// `file_table_crc` are taken from `id` and `files`; the rest from `sb`.
/// Returns `Err(needed)` when the file table does not fit.
pub fn encode(sb: &Superblock, files: &[FileEntry], id: SlotId) -> Result<AlignedBuf, usize> {
    let table = file_table::encode(files, sb.generation)?;
    let mut sb = sb.clone();
    sb.slot = id;
    sb.file_count = files.len() as u32;
    sb.file_table_len = file_table::payload_len(files) as u32;
    sb.file_table_crc = super::le_u32(&table, table.len() - 4);
    let mut buf = AlignedBuf::zeroed(SLOT_SIZE as usize, 4096);
    buf[..SUPERBLOCK_SIZE].copy_from_slice(&sb.encode());
    buf[FILE_TABLE_OFFSET..].copy_from_slice(&table);
    Ok(buf)
}

/// Decodes and validates slot `id` from its 64 KiB, read from a target of `device_len` bytes:
/// superblock, that the filesystem fits on the target, file table, and that no two extents
/// share a block (by sorting the extents; nothing here costs more for a larger device).
pub fn decode(buf: &[u8], id: SlotId, device_len: u64) -> Result<Slot, Corruption> {
    if buf.len() != SLOT_SIZE as usize {
        return Err(Corruption::BadField {
            structure: "slot",
            field: "buffer length",
            value: buf.len() as u64,
            expected: SLOT_SIZE.to_string(),
        });
    }
    let sb = Superblock::decode(&buf[..SUPERBLOCK_SIZE], id)?;
    if sb.total_bytes > device_len {
        return Err(Corruption::BeyondDevice {
            total_bytes: sb.total_bytes,
            device_len,
        });
    }
    let files = file_table::decode(&buf[FILE_TABLE_OFFSET..], &sb)?;
    let alloc = Allocator::from_files(sb.first_data_block(), sb.block_count, &files)?;
    Ok(Slot { sb, files, alloc })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::superblock::tests::sample;
    use crate::format::Extent;

    const LEN: u64 = 64 << 20;

    fn files() -> Vec<FileEntry> {
        vec![
            FileEntry {
                name: "a".into(),
                size: 8192,
                extents: vec![Extent { start: 256, len: 2 }],
            },
            FileEntry {
                name: "b".into(),
                size: 4096,
                extents: vec![Extent { start: 258, len: 1 }],
            },
        ]
    }

    #[test]
    fn roundtrip() {
        let sb = sample(SlotId::B);
        let buf = encode(&sb, &files(), SlotId::B).unwrap();
        let slot = decode(&buf, SlotId::B, LEN).unwrap();
        assert_eq!(slot.files, files());
        assert_eq!(slot.sb.generation, sb.generation);
        assert_eq!(slot.sb.file_count, 2);
        assert_eq!(slot.alloc.free_blocks(), sb.block_count - 3);
    }

    #[test]
    fn flipped_bytes_in_either_part_are_detected() {
        let buf = encode(&sample(SlotId::A), &files(), SlotId::A).unwrap();
        for i in (0..buf.len()).step_by(7) {
            let mut b = buf.to_vec();
            b[i] ^= 0x04;
            assert!(
                decode(&b, SlotId::A, LEN).is_err(),
                "flip at byte {i} went unnoticed"
            );
        }
    }

    /// Regression: a checksum-valid superblock claiming an enormous filesystem made decode
    /// allocate a bitmap for it before the size was compared with the target.
    #[test]
    fn huge_total_bytes_is_refused_before_allocating_the_bitmap() {
        let mut sb = sample(SlotId::A);
        sb.total_bytes = 1 << 62;
        sb.block_count = (sb.total_bytes - sb.data_start) / 4096;
        let buf = encode(&sb, &[], SlotId::A).unwrap();
        assert_eq!(
            decode(&buf, SlotId::A, LEN).unwrap_err(),
            Corruption::BeyondDevice {
                total_bytes: 1 << 62,
                device_len: LEN
            }
        );
    }

    #[test]
    fn overlapping_files_are_refused() {
        let mut f = files();
        f[1].extents[0].start = 257;
        let buf = encode(&sample(SlotId::A), &f, SlotId::A).unwrap();
        let err = decode(&buf, SlotId::A, LEN).unwrap_err();
        assert_eq!(
            err,
            Corruption::OverlappingExtents {
                a: "a".into(),
                b: "b".into(),
                block: 257
            }
        );
    }

    #[test]
    fn superblock_and_table_of_different_commits_do_not_mix() {
        let sb = sample(SlotId::A);
        let old = encode(&sb, &files(), SlotId::A).unwrap();
        let mut sb2 = sb.clone();
        sb2.generation += 2;
        let new = encode(&sb2, &files()[..1], SlotId::A).unwrap();
        let mut torn = new.to_vec();
        torn[FILE_TABLE_OFFSET..].copy_from_slice(&old[FILE_TABLE_OFFSET..]);
        assert!(decode(&torn, SlotId::A, LEN).is_err());
        let mut torn = old.to_vec();
        torn[FILE_TABLE_OFFSET..].copy_from_slice(&new[FILE_TABLE_OFFSET..]);
        assert!(decode(&torn, SlotId::A, LEN).is_err());
    }
}
