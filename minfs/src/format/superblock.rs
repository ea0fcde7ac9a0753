//! The superblock: the first 4 KiB of a slot. See `docs/FORMAT.md`, "Superblock".

use std::ops::Range;

use super::{
    check_seal, le_u32, le_u64, seal, BLOCK_SIZE, FORMAT_VERSION, LABEL_SIZE, MAX_FILES, MAX_SIZE,
    SLOT_OFFSETS, SLOT_SIZE, SUPERBLOCK_MAGIC, SUPERBLOCK_SIZE,
};
use crate::error::{Corruption, SlotId};

/// Byte ranges of the superblock's fields. `LAYOUT` lists them for the format document test.
pub mod field {
    use std::ops::Range;
    pub const MAGIC: Range<usize> = 0..8;
    pub const VERSION: Range<usize> = 8..12;
    pub const SLOT: Range<usize> = 12..16;
    pub const SLOT_OFFSET: Range<usize> = 16..24;
    pub const GENERATION: Range<usize> = 24..32;
    pub const UUID: Range<usize> = 32..48;
    pub const LABEL: Range<usize> = 48..80;
    pub const BLOCK_SIZE: Range<usize> = 80..84;
    pub const SLOT_SIZE: Range<usize> = 84..88;
    pub const LOGICAL_SECTOR_SIZE: Range<usize> = 88..92;
    pub const PHYSICAL_SECTOR_SIZE: Range<usize> = 92..96;
    pub const TOTAL_BYTES: Range<usize> = 96..104;
    pub const DATA_START: Range<usize> = 104..112;
    pub const BLOCK_COUNT: Range<usize> = 112..120;
    pub const FREE_BLOCKS: Range<usize> = 120..128;
    pub const FILE_COUNT: Range<usize> = 128..132;
    pub const FILE_TABLE_LEN: Range<usize> = 132..136;
    pub const FILE_TABLE_CRC: Range<usize> = 136..140;
    pub const RESERVED: Range<usize> = 140..144;
    pub const CREATED: Range<usize> = 144..152;
    pub const UPDATED: Range<usize> = 152..160;
    pub const PADDING: Range<usize> = 160..4092;
    pub const CRC: Range<usize> = 4092..4096;
}

/// `(name, offset, size)` of every superblock field, in order.
pub const LAYOUT: &[(&str, Range<usize>)] = &[
    ("magic", field::MAGIC),
    ("version", field::VERSION),
    ("slot", field::SLOT),
    ("slot_offset", field::SLOT_OFFSET),
    ("generation", field::GENERATION),
    ("uuid", field::UUID),
    ("label", field::LABEL),
    ("block_size", field::BLOCK_SIZE),
    ("slot_size", field::SLOT_SIZE),
    ("logical_sector_size", field::LOGICAL_SECTOR_SIZE),
    ("physical_sector_size", field::PHYSICAL_SECTOR_SIZE),
    ("total_bytes", field::TOTAL_BYTES),
    ("data_start", field::DATA_START),
    ("block_count", field::BLOCK_COUNT),
    ("free_blocks", field::FREE_BLOCKS),
    ("file_count", field::FILE_COUNT),
    ("file_table_len", field::FILE_TABLE_LEN),
    ("file_table_crc", field::FILE_TABLE_CRC),
    ("reserved", field::RESERVED),
    ("created", field::CREATED),
    ("updated", field::UPDATED),
    ("padding", field::PADDING),
    ("crc", field::CRC),
];

const S: &str = "superblock";

/// The decoded superblock of one slot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Superblock {
    pub slot: SlotId,
    pub generation: u64,
    pub uuid: [u8; 16],
    pub label: String,
    /// Sector sizes of the target when it was formatted (informational).
    pub logical_sector_size: u32,
    pub physical_sector_size: u32,
    /// Size of the filesystem in bytes (a multiple of 4096, at most the target's size).
    pub total_bytes: u64,
    /// Byte offset of the first data block.
    pub data_start: u64,
    /// Number of data blocks: `(total_bytes - data_start) / 4096`.
    pub block_count: u64,
    /// Free data blocks, as recorded (fsck checks it against the extents).
    pub free_blocks: u64,
    pub file_count: u32,
    /// Bytes of file records in the file table.
    pub file_table_len: u32,
    /// CRC32C of the file table area, binding it to this superblock.
    pub file_table_crc: u32,
    /// Unix seconds of mkfs and of the last update.
    pub created: u64,
    pub updated: u64,
}

impl Superblock {
    /// Index of the first data block.
    pub fn first_data_block(&self) -> u64 {
        self.data_start / BLOCK_SIZE
    }

    /// One past the last data block.
    pub fn end_block(&self) -> u64 {
        self.total_bytes / BLOCK_SIZE
    }

    /// Encodes into a 4096-byte block, sealed with its CRC32C.
    pub fn encode(&self) -> [u8; SUPERBLOCK_SIZE] {
        let mut b = [0u8; SUPERBLOCK_SIZE];
        b[field::MAGIC].copy_from_slice(&SUPERBLOCK_MAGIC);
        b[field::VERSION].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
        b[field::SLOT].copy_from_slice(&(self.slot.index() as u32).to_le_bytes());
        b[field::SLOT_OFFSET].copy_from_slice(&self.slot.offset().to_le_bytes());
        b[field::GENERATION].copy_from_slice(&self.generation.to_le_bytes());
        b[field::UUID].copy_from_slice(&self.uuid);
        let label = self.label.as_bytes();
        let n = label.len().min(LABEL_SIZE);
        b[field::LABEL.start..field::LABEL.start + n].copy_from_slice(&label[..n]);
        b[field::BLOCK_SIZE].copy_from_slice(&(BLOCK_SIZE as u32).to_le_bytes());
        b[field::SLOT_SIZE].copy_from_slice(&(SLOT_SIZE as u32).to_le_bytes());
        b[field::LOGICAL_SECTOR_SIZE].copy_from_slice(&self.logical_sector_size.to_le_bytes());
        b[field::PHYSICAL_SECTOR_SIZE].copy_from_slice(&self.physical_sector_size.to_le_bytes());
        b[field::TOTAL_BYTES].copy_from_slice(&self.total_bytes.to_le_bytes());
        b[field::DATA_START].copy_from_slice(&self.data_start.to_le_bytes());
        b[field::BLOCK_COUNT].copy_from_slice(&self.block_count.to_le_bytes());
        b[field::FREE_BLOCKS].copy_from_slice(&self.free_blocks.to_le_bytes());
        b[field::FILE_COUNT].copy_from_slice(&self.file_count.to_le_bytes());
        b[field::FILE_TABLE_LEN].copy_from_slice(&self.file_table_len.to_le_bytes());
        b[field::FILE_TABLE_CRC].copy_from_slice(&self.file_table_crc.to_le_bytes());
        b[field::CREATED].copy_from_slice(&self.created.to_le_bytes());
        b[field::UPDATED].copy_from_slice(&self.updated.to_le_bytes());
        seal(&mut b);
        b
    }

    /// Whether `buf` starts with the superblock magic (a minfs slot, valid or not).
    pub fn has_magic(buf: &[u8]) -> bool {
        buf.len() >= 8 && buf[field::MAGIC] == SUPERBLOCK_MAGIC
    }

    /// Decodes and validates the superblock expected in slot `slot`. Every geometry field is
    /// checked before any arithmetic uses it.
    pub fn decode(buf: &[u8], slot: SlotId) -> Result<Superblock, Corruption> {
        if buf.len() != SUPERBLOCK_SIZE {
            return Err(bad("buffer length", buf.len() as u64, "4096"));
        }
        if !Self::has_magic(buf) {
            let mut found = [0u8; 8];
            found.copy_from_slice(&buf[field::MAGIC]);
            return Err(Corruption::BadMagic {
                structure: S,
                found,
            });
        }
        check_seal(buf, S)?;
        let version = le_u32(buf, field::VERSION.start);
        if version != FORMAT_VERSION {
            return Err(Corruption::UnsupportedVersion {
                found: version,
                supported: FORMAT_VERSION,
            });
        }
        let idx = le_u32(buf, field::SLOT.start);
        if idx as usize != slot.index() {
            return Err(bad(
                "slot",
                idx.into(),
                &format!("{} ({slot})", slot.index()),
            ));
        }
        let own = le_u64(buf, field::SLOT_OFFSET.start);
        if own != SLOT_OFFSETS[slot.index()] {
            return Err(bad(
                "slot_offset",
                own,
                &format!("{} (where {slot} lives)", SLOT_OFFSETS[slot.index()]),
            ));
        }
        let block_size = le_u32(buf, field::BLOCK_SIZE.start);
        if u64::from(block_size) != BLOCK_SIZE {
            return Err(bad("block_size", block_size.into(), "4096"));
        }
        let slot_size = le_u32(buf, field::SLOT_SIZE.start);
        if u64::from(slot_size) != SLOT_SIZE {
            return Err(bad("slot_size", slot_size.into(), "65536"));
        }
        let lss = le_u32(buf, field::LOGICAL_SECTOR_SIZE.start);
        if !lss.is_power_of_two() || !(512..=65536).contains(&lss) {
            return Err(bad(
                "logical_sector_size",
                lss.into(),
                "a power of two from 512 to 65536",
            ));
        }
        let pss = le_u32(buf, field::PHYSICAL_SECTOR_SIZE.start);
        if !pss.is_power_of_two() || pss < lss || pss > 65536 {
            return Err(bad(
                "physical_sector_size",
                pss.into(),
                "a power of two, at least the logical sector size, at most 65536",
            ));
        }
        let data_start = le_u64(buf, field::DATA_START.start);
        let min_data_start = SLOT_OFFSETS[1] + SLOT_SIZE;
        if data_start % BLOCK_SIZE != 0 || data_start < min_data_start {
            return Err(bad(
                "data_start",
                data_start,
                &format!("a multiple of 4096, at least {min_data_start}"),
            ));
        }
        let total_bytes = le_u64(buf, field::TOTAL_BYTES.start);
        if total_bytes % BLOCK_SIZE != 0 || total_bytes <= data_start || total_bytes > MAX_SIZE {
            return Err(bad(
                "total_bytes",
                total_bytes,
                &format!(
                    "a multiple of 4096 greater than data_start ({data_start}), at most {MAX_SIZE}"
                ),
            ));
        }
        let block_count = le_u64(buf, field::BLOCK_COUNT.start);
        let expect_blocks = (total_bytes - data_start) / BLOCK_SIZE;
        if block_count != expect_blocks {
            return Err(bad(
                "block_count",
                block_count,
                &format!("{expect_blocks} = (total_bytes - data_start) / 4096"),
            ));
        }
        let free_blocks = le_u64(buf, field::FREE_BLOCKS.start);
        if free_blocks > block_count {
            return Err(bad(
                "free_blocks",
                free_blocks,
                &format!("at most block_count ({block_count})"),
            ));
        }
        let file_count = le_u32(buf, field::FILE_COUNT.start);
        if file_count as usize > MAX_FILES {
            return Err(bad(
                "file_count",
                file_count.into(),
                &format!("at most {MAX_FILES}"),
            ));
        }
        let file_table_len = le_u32(buf, field::FILE_TABLE_LEN.start);
        if file_table_len as usize > super::file_table::PAYLOAD_CAPACITY {
            return Err(bad(
                "file_table_len",
                file_table_len.into(),
                &format!("at most {}", super::file_table::PAYLOAD_CAPACITY),
            ));
        }
        let reserved = le_u32(buf, field::RESERVED.start);
        if reserved != 0 {
            return Err(bad("reserved", reserved.into(), "0"));
        }
        if let Some(i) = buf[field::PADDING].iter().position(|&x| x != 0) {
            return Err(bad(
                "padding",
                (field::PADDING.start + i) as u64,
                "all zero (value is the offset of the first non-zero byte)",
            ));
        }
        let label_bytes = &buf[field::LABEL];
        let label_len = label_bytes
            .iter()
            .position(|&x| x == 0)
            .unwrap_or(LABEL_SIZE);
        if label_bytes[label_len..].iter().any(|&x| x != 0) {
            return Err(bad(
                "label",
                label_len as u64,
                "UTF-8 followed only by NUL bytes (value is the label's length)",
            ));
        }
        let label = std::str::from_utf8(&label_bytes[..label_len])
            .map_err(|e| {
                bad(
                    "label",
                    e.valid_up_to() as u64,
                    "valid UTF-8 (value is the offset of the first bad byte)",
                )
            })?
            .to_string();
        let mut uuid = [0u8; 16];
        uuid.copy_from_slice(&buf[field::UUID]);
        Ok(Superblock {
            slot,
            generation: le_u64(buf, field::GENERATION.start),
            uuid,
            label,
            logical_sector_size: lss,
            physical_sector_size: pss,
            total_bytes,
            data_start,
            block_count,
            free_blocks,
            file_count,
            file_table_len,
            file_table_crc: le_u32(buf, field::FILE_TABLE_CRC.start),
            created: le_u64(buf, field::CREATED.start),
            updated: le_u64(buf, field::UPDATED.start),
        })
    }
}

fn bad(field: &'static str, value: u64, expected: &str) -> Corruption {
    super::bad_field(S, field, value, expected)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn sample(slot: SlotId) -> Superblock {
        Superblock {
            slot,
            generation: 7,
            uuid: *b"0123456789abcdef",
            label: "cannyls-0".into(),
            logical_sector_size: 512,
            physical_sector_size: 4096,
            total_bytes: 64 << 20,
            data_start: super::super::DATA_START,
            block_count: (63 << 20) / 4096,
            free_blocks: 100,
            file_count: 2,
            file_table_len: 120,
            file_table_crc: 0xdead_beef,
            created: 1_700_000_000,
            updated: 1_700_000_100,
        }
    }

    #[test]
    fn roundtrip() {
        for slot in SlotId::BOTH {
            let sb = sample(slot);
            let bytes = sb.encode();
            assert_eq!(Superblock::decode(&bytes, slot), Ok(sb));
        }
    }

    #[test]
    fn every_flipped_byte_is_detected() {
        let bytes = sample(SlotId::A).encode();
        for i in 0..bytes.len() {
            for bit in [0x01u8, 0x80] {
                let mut b = bytes;
                b[i] ^= bit;
                assert!(
                    Superblock::decode(&b, SlotId::A).is_err(),
                    "flip of bit {bit:#x} at byte {i} went unnoticed"
                );
            }
        }
    }

    #[test]
    fn slot_b_superblock_is_not_accepted_as_slot_a() {
        let bytes = sample(SlotId::B).encode();
        let err = Superblock::decode(&bytes, SlotId::A).unwrap_err();
        assert!(
            matches!(
                err,
                Corruption::BadField {
                    field: "slot",
                    value: 1,
                    ..
                }
            ),
            "{err}"
        );
    }

    /// A checksum-valid superblock with nonsense geometry is refused and the error names the
    /// field and the value.
    #[test]
    fn bad_geometry_names_field_and_value() {
        let mut b = sample(SlotId::A).encode();
        b[field::BLOCK_COUNT].copy_from_slice(&u64::MAX.to_le_bytes());
        seal(&mut b);
        let err = Superblock::decode(&b, SlotId::A).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("block_count") && msg.contains(&u64::MAX.to_string()),
            "{msg}"
        );

        let mut b = sample(SlotId::A).encode();
        b[field::TOTAL_BYTES].copy_from_slice(&4096u64.to_le_bytes());
        seal(&mut b);
        let msg = Superblock::decode(&b, SlotId::A).unwrap_err().to_string();
        assert!(msg.contains("total_bytes") && msg.contains("4096"), "{msg}");

        let mut b = sample(SlotId::A).encode();
        b[field::VERSION].copy_from_slice(&9u32.to_le_bytes());
        seal(&mut b);
        assert_eq!(
            Superblock::decode(&b, SlotId::A),
            Err(Corruption::UnsupportedVersion {
                found: 9,
                supported: 1
            })
        );
    }

    #[test]
    fn layout_is_contiguous_and_covers_the_block() {
        let mut at = 0;
        for (name, r) in LAYOUT {
            assert_eq!(r.start, at, "field {name} does not follow the previous one");
            at = r.end;
        }
        assert_eq!(at, SUPERBLOCK_SIZE);
    }
}
