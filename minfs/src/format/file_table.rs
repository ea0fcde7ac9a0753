//! The file table: the 60 KiB after the superblock in a slot. See `docs/FORMAT.md`,
//! "File table".

use std::collections::HashSet;
use std::ops::Range;

use super::superblock::Superblock;
use super::{
    blocks_for, check_seal, le_u16, le_u32, le_u64, name_problem, seal, Extent, FileEntry,
    FILE_TABLE_MAGIC, FILE_TABLE_SIZE, MAX_NAME_LEN,
};
use crate::error::Corruption;

/// Byte ranges of the header fields.
pub mod field {
    use std::ops::Range;
    pub const MAGIC: Range<usize> = 0..8;
    pub const GENERATION: Range<usize> = 8..16;
    pub const FILE_COUNT: Range<usize> = 16..20;
    pub const PAYLOAD_LEN: Range<usize> = 20..24;
    pub const RESERVED: Range<usize> = 24..32;
}
/// Size of the header before the records.
pub const HEADER_SIZE: usize = 32;
/// Size of a record before its name: name_len (1), flags (1), extent_count (2), size (8).
pub const RECORD_HEADER_SIZE: usize = 12;
/// Size of one extent in a record: start block (8), block count (8).
pub const EXTENT_SIZE: usize = 16;
/// Bytes available for records: the area less header and trailing CRC.
pub const PAYLOAD_CAPACITY: usize = FILE_TABLE_SIZE - HEADER_SIZE - 4;
/// Most extents a file table holds: all in one file with a one-byte name. With more files,
/// each record's header and name leave room for fewer.
pub const MAX_EXTENTS: usize = (PAYLOAD_CAPACITY - RECORD_HEADER_SIZE - 1) / EXTENT_SIZE;

/// `(name, range)` of the header fields, for the format document test.
pub const LAYOUT: &[(&str, Range<usize>)] = &[
    ("magic", field::MAGIC),
    ("generation", field::GENERATION),
    ("file_count", field::FILE_COUNT),
    ("payload_len", field::PAYLOAD_LEN),
    ("reserved", field::RESERVED),
];

const S: &str = "file table";

/// Bytes the records of `files` take.
pub fn payload_len(files: &[FileEntry]) -> usize {
    files
        .iter()
        .map(|f| RECORD_HEADER_SIZE + f.name.len() + EXTENT_SIZE * f.extents.len())
        .sum()
}

/// Encodes `files` with `generation` into a sealed area of `FILE_TABLE_SIZE` bytes.
/// Returns `Err(needed)` when the records do not fit (`needed` = payload bytes required).
pub fn encode(files: &[FileEntry], generation: u64) -> Result<Vec<u8>, usize> {
    let len = payload_len(files);
    if len > PAYLOAD_CAPACITY || files.iter().any(|f| f.extents.len() > u16::MAX as usize) {
        return Err(len);
    }
    let mut b = vec![0u8; FILE_TABLE_SIZE];
    b[field::MAGIC].copy_from_slice(&FILE_TABLE_MAGIC);
    b[field::GENERATION].copy_from_slice(&generation.to_le_bytes());
    b[field::FILE_COUNT].copy_from_slice(&(files.len() as u32).to_le_bytes());
    b[field::PAYLOAD_LEN].copy_from_slice(&(len as u32).to_le_bytes());
    let mut at = HEADER_SIZE;
    for f in files {
        let name = f.name.as_bytes();
        b[at] = name.len() as u8;
        b[at + 1] = 0;
        b[at + 2..at + 4].copy_from_slice(&(f.extents.len() as u16).to_le_bytes());
        b[at + 4..at + 12].copy_from_slice(&f.size.to_le_bytes());
        at += RECORD_HEADER_SIZE;
        b[at..at + name.len()].copy_from_slice(name);
        at += name.len();
        for e in &f.extents {
            b[at..at + 8].copy_from_slice(&e.start.to_le_bytes());
            b[at + 8..at + 16].copy_from_slice(&e.len.to_le_bytes());
            at += EXTENT_SIZE;
        }
    }
    seal(&mut b);
    Ok(b)
}

/// Decodes and validates the file table that `sb` commits to: magic, checksum, generation,
/// counts and lengths against the superblock, then every record (name, extents inside the data
/// area, allocation matching the size). Overlaps between files are checked by the slot.
pub fn decode(buf: &[u8], sb: &Superblock) -> Result<Vec<FileEntry>, Corruption> {
    if buf.len() != FILE_TABLE_SIZE {
        return Err(bad(
            "buffer length",
            buf.len() as u64,
            &FILE_TABLE_SIZE.to_string(),
        ));
    }
    if buf[field::MAGIC] != FILE_TABLE_MAGIC {
        let mut found = [0u8; 8];
        found.copy_from_slice(&buf[field::MAGIC]);
        return Err(Corruption::BadMagic {
            structure: S,
            found,
        });
    }
    let crc = check_seal(buf, S)?;
    if crc != sb.file_table_crc {
        return Err(bad(
            "crc",
            crc.into(),
            &format!(
                "{:#010x} (the superblock's file_table_crc)",
                sb.file_table_crc
            ),
        ));
    }
    let generation = le_u64(buf, field::GENERATION.start);
    if generation != sb.generation {
        return Err(bad(
            "generation",
            generation,
            &format!("{} (the superblock's)", sb.generation),
        ));
    }
    let count = le_u32(buf, field::FILE_COUNT.start);
    if count != sb.file_count {
        return Err(bad(
            "file_count",
            count.into(),
            &format!("{} (the superblock's)", sb.file_count),
        ));
    }
    let len = le_u32(buf, field::PAYLOAD_LEN.start);
    if len != sb.file_table_len || len as usize > PAYLOAD_CAPACITY {
        return Err(bad(
            "payload_len",
            len.into(),
            &format!(
                "{} (the superblock's file_table_len), at most {PAYLOAD_CAPACITY}",
                sb.file_table_len
            ),
        ));
    }
    let reserved = le_u64(buf, field::RESERVED.start);
    if reserved != 0 {
        return Err(bad("reserved", reserved, "0"));
    }
    let end = HEADER_SIZE + len as usize;
    if let Some(i) = buf[end..FILE_TABLE_SIZE - 4].iter().position(|&x| x != 0) {
        return Err(bad(
            "padding",
            (end + i) as u64,
            "all zero after the records (value is the offset of the first non-zero byte)",
        ));
    }
    let (first, last) = (sb.first_data_block(), sb.end_block());
    let mut files = Vec::with_capacity(count as usize);
    let mut names = HashSet::new();
    let mut at = HEADER_SIZE;
    for index in 0..count {
        let need = |at: usize, n: usize| -> Result<(), Corruption> {
            if at + n > end {
                Err(Corruption::TruncatedRecord {
                    index,
                    end: (at + n - HEADER_SIZE) as u64,
                    len: len.into(),
                })
            } else {
                Ok(())
            }
        };
        need(at, RECORD_HEADER_SIZE)?;
        let name_len = buf[at] as usize;
        let flags = buf[at + 1];
        let extent_count = le_u16(buf, at + 2) as usize;
        let size = le_u64(buf, at + 4);
        if flags != 0 {
            return Err(bad("record flags", flags.into(), "0"));
        }
        if name_len == 0 || name_len > MAX_NAME_LEN {
            return Err(bad("record name_len", name_len as u64, "1 to 64"));
        }
        at += RECORD_HEADER_SIZE;
        need(at, name_len)?;
        let raw = &buf[at..at + name_len];
        let name = std::str::from_utf8(raw).map_err(|_| Corruption::BadName {
            index,
            name: String::from_utf8_lossy(raw).into_owned(),
            reason: "not UTF-8",
        })?;
        if let Some(reason) = name_problem(name) {
            return Err(Corruption::BadName {
                index,
                name: name.to_string(),
                reason,
            });
        }
        at += name_len;
        need(at, extent_count * EXTENT_SIZE)?;
        let mut extents = Vec::with_capacity(extent_count);
        let mut allocated: u64 = 0;
        for _ in 0..extent_count {
            let e = Extent {
                start: le_u64(buf, at),
                len: le_u64(buf, at + 8),
            };
            at += EXTENT_SIZE;
            let inside = e.len > 0
                && e.start >= first
                && e.start.checked_add(e.len).is_some_and(|x| x <= last);
            if !inside {
                return Err(Corruption::ExtentOutOfRange {
                    name: name.to_string(),
                    start: e.start,
                    len: e.len,
                    first,
                    end: last,
                });
            }
            // Cannot overflow: each extent lies inside [first, last).
            allocated += e.len;
            extents.push(e);
        }
        let needed = blocks_for(size);
        if needed != allocated {
            return Err(Corruption::SizeMismatch {
                name: name.to_string(),
                size,
                needed,
                allocated,
            });
        }
        if !names.insert(name.to_string()) {
            return Err(Corruption::DuplicateName {
                name: name.to_string(),
            });
        }
        files.push(FileEntry {
            name: name.to_string(),
            size,
            extents,
        });
    }
    if at != end {
        return Err(bad(
            "payload_len",
            len.into(),
            &format!("{} (the bytes the records take)", at - HEADER_SIZE),
        ));
    }
    Ok(files)
}

fn bad(field: &'static str, value: u64, expected: &str) -> Corruption {
    super::bad_field(S, field, value, expected)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::SlotId;
    use crate::format::superblock::tests::sample;

    fn files() -> Vec<FileEntry> {
        vec![
            FileEntry {
                name: "cannyls-0.lusf".into(),
                size: 3 * 4096 + 1,
                extents: vec![Extent { start: 256, len: 4 }],
            },
            FileEntry {
                name: "b".into(),
                size: 5 * 4096,
                extents: vec![Extent { start: 300, len: 2 }, Extent { start: 400, len: 3 }],
            },
            FileEntry {
                name: "empty".into(),
                size: 0,
                extents: vec![],
            },
        ]
    }

    fn sb_for(table: &[u8], files: &[FileEntry]) -> Superblock {
        let mut sb = sample(SlotId::A);
        sb.file_count = files.len() as u32;
        sb.file_table_len = payload_len(files) as u32;
        sb.file_table_crc = le_u32(table, FILE_TABLE_SIZE - 4);
        sb
    }

    #[test]
    fn roundtrip() {
        let f = files();
        let table = encode(&f, 7).unwrap();
        let sb = sb_for(&table, &f);
        assert_eq!(decode(&table, &sb), Ok(f));
    }

    #[test]
    fn every_flipped_byte_is_detected() {
        let f = files();
        let table = encode(&f, 7).unwrap();
        let sb = sb_for(&table, &f);
        // Every byte of the area is covered by the checksum, padding included.
        for i in (0..FILE_TABLE_SIZE).step_by(1) {
            let mut b = table.clone();
            b[i] ^= 0x10;
            assert!(decode(&b, &sb).is_err(), "flip at byte {i} went unnoticed");
        }
    }

    #[test]
    fn generation_must_match_the_superblock() {
        let f = files();
        let table = encode(&f, 6).unwrap();
        let sb = sb_for(&table, &f);
        let err = decode(&table, &sb).unwrap_err();
        assert!(
            matches!(
                err,
                Corruption::BadField {
                    field: "generation",
                    value: 6,
                    ..
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn checksum_valid_but_out_of_range_extent_is_named() {
        let mut f = files();
        f[1].extents[1] = Extent {
            start: u64::MAX - 1,
            len: 3,
        };
        let table = encode(&f, 7).unwrap();
        let sb = sb_for(&table, &f);
        let err = decode(&table, &sb).unwrap_err();
        assert!(
            matches!(&err, Corruption::ExtentOutOfRange { name, start, .. } if name == "b" && *start == u64::MAX - 1),
            "{err}"
        );
    }

    #[test]
    fn size_must_match_allocation() {
        let mut f = files();
        f[0].size = 100 * 4096;
        let table = encode(&f, 7).unwrap();
        let sb = sb_for(&table, &f);
        assert!(matches!(
            decode(&table, &sb),
            Err(Corruption::SizeMismatch {
                needed: 100,
                allocated: 4,
                ..
            })
        ));
    }

    #[test]
    fn too_large_table_is_refused_by_encode() {
        let many: Vec<FileEntry> = (0..200)
            .map(|i| FileEntry {
                name: format!("f{i}"),
                size: 4096 * 30,
                extents: (0..30)
                    .map(|j| Extent {
                        start: 1000 + i * 100 + j * 2,
                        len: 1,
                    })
                    .collect(),
            })
            .collect();
        assert!(encode(&many, 1).is_err());
    }
}
