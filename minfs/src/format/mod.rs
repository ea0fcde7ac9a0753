//! The on-disk format. `docs/FORMAT.md` is its description; the constants here and the tables
//! there are checked against each other by `tests/format_doc.rs`.
//!
//! A target is laid out as:
//! ```text
//! 0        64 KiB    128 KiB                1 MiB                               total_bytes
//! | slot A | slot B  | reserved (zeroed)    | data blocks (4 KiB each) ...     |
//! ```
//! A slot is a superblock (4 KiB) followed by the file table (60 KiB). Updates write the
//! inactive slot with generation + 1; open uses the valid slot with the highest generation.

pub mod file_table;
pub mod slot;
pub mod superblock;

use crate::error::Corruption;

/// Allocation unit; every extent starts and ends on a multiple of it.
pub const BLOCK_SIZE: u64 = 4096;
/// Size of one metadata slot (superblock + file table).
pub const SLOT_SIZE: u64 = 64 * 1024;
/// Byte offsets of slot A and slot B.
pub const SLOT_OFFSETS: [u64; 2] = [0, SLOT_SIZE];
/// Byte offset of the first data block written by this version's mkfs.
pub const DATA_START: u64 = 1024 * 1024;
/// The format version this code writes and reads.
pub const FORMAT_VERSION: u32 = 1;
/// Size of the superblock at the start of a slot.
pub const SUPERBLOCK_SIZE: usize = 4096;
/// Offset of the file table inside a slot.
pub const FILE_TABLE_OFFSET: usize = SUPERBLOCK_SIZE;
/// Size of the file table area in a slot.
pub const FILE_TABLE_SIZE: usize = SLOT_SIZE as usize - SUPERBLOCK_SIZE;
/// Most files one filesystem holds.
pub const MAX_FILES: usize = 256;
/// Longest file name, in bytes of UTF-8.
pub const MAX_NAME_LEN: usize = 64;
/// Size of the label field (UTF-8, NUL-padded).
pub const LABEL_SIZE: usize = 32;
/// Smallest filesystem: the reserved area plus 1 MiB of data.
pub const MIN_SIZE: u64 = DATA_START + 1024 * 1024;
/// Largest filesystem: the largest multiple of 4096 that is a valid file offset (`off_t`, a
/// signed 64-bit integer), 8 EiB − 4 KiB. Nothing in minfs grows with the size (see
/// `docs/FORMAT.md`, "Limits").
pub const MAX_SIZE: u64 = i64::MAX as u64 / BLOCK_SIZE * BLOCK_SIZE;
/// Magic number at the start of a superblock.
pub const SUPERBLOCK_MAGIC: [u8; 8] = *b"MINFS-SB";
/// Magic number at the start of a file table.
pub const FILE_TABLE_MAGIC: [u8; 8] = *b"MINFS-FT";

/// Why `size` (not a multiple of [`BLOCK_SIZE`]) is no filesystem size; below [`MIN_SIZE`] the
/// minimum is named too, so `-s 1K` does not lead to `-s 4K`, refused next.
pub fn size_reason(size: u64) -> String {
    if size < MIN_SIZE {
        format!(
            "{size} is not a multiple of 4096, and a filesystem needs at least {MIN_SIZE} bytes (2 MiB)"
        )
    } else {
        format!("{size} is not a multiple of 4096")
    }
}

/// A run of contiguous 4 KiB blocks. `start` is the block index counted from byte 0 of the
/// target (so the byte offset is `start * 4096`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub struct Extent {
    pub start: u64,
    pub len: u64,
}

impl Extent {
    /// Byte offset of the extent on the target.
    pub fn byte_offset(&self) -> u64 {
        self.start * BLOCK_SIZE
    }
    /// Length in bytes.
    pub fn byte_len(&self) -> u64 {
        self.len * BLOCK_SIZE
    }
    /// One past the last block.
    pub fn end(&self) -> u64 {
        self.start + self.len
    }
}

/// A file as the file table records it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FileEntry {
    pub name: String,
    pub size: u64,
    pub extents: Vec<Extent>,
}

impl FileEntry {
    /// Blocks its extents hold.
    pub fn allocated_blocks(&self) -> u64 {
        self.extents.iter().map(|e| e.len).sum()
    }
}

/// Blocks needed to hold `size` bytes.
pub fn blocks_for(size: u64) -> u64 {
    size.div_ceil(BLOCK_SIZE)
}

/// Why `name` cannot be a file name, if it cannot.
pub fn name_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        Some("empty")
    } else if name.len() > MAX_NAME_LEN {
        Some("longer than 64 bytes")
    } else if name.contains('/') {
        Some("contains '/'")
    } else if name.contains('\0') {
        Some("contains a NUL byte")
    } else if name == "." || name == ".." {
        Some("'.' and '..' are reserved")
    } else {
        None
    }
}

/// A `Corruption::BadField` of `structure`.
pub(crate) fn bad_field(
    structure: &'static str,
    field: &'static str,
    value: u64,
    expected: &str,
) -> Corruption {
    Corruption::BadField {
        structure,
        field,
        value,
        expected: expected.to_string(),
    }
}

/// Stores the CRC32C of `buf[..len - 4]` in the last four bytes (little-endian).
pub(crate) fn seal(buf: &mut [u8]) {
    let n = buf.len() - 4;
    let crc = crc32c::crc32c(&buf[..n]);
    buf[n..].copy_from_slice(&crc.to_le_bytes());
}

/// Checks the CRC32C stored by [`seal`].
pub(crate) fn check_seal(buf: &[u8], structure: &'static str) -> Result<u32, Corruption> {
    let n = buf.len() - 4;
    let stored = le_u32(buf, n);
    let computed = crc32c::crc32c(&buf[..n]);
    if stored != computed {
        return Err(Corruption::BadChecksum {
            structure,
            stored,
            computed,
        });
    }
    Ok(stored)
}

pub(crate) fn le_u16(buf: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(buf[at..at + 2].try_into().expect("2 bytes"))
}
pub(crate) fn le_u32(buf: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(buf[at..at + 4].try_into().expect("4 bytes"))
}
pub(crate) fn le_u64(buf: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(buf[at..at + 8].try_into().expect("8 bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_constants_are_consistent() {
        assert_eq!(SLOT_OFFSETS[1], SLOT_OFFSETS[0] + SLOT_SIZE);
        assert!(DATA_START >= SLOT_OFFSETS[1] + SLOT_SIZE);
        assert_eq!(DATA_START % BLOCK_SIZE, 0);
        assert_eq!(SUPERBLOCK_SIZE + FILE_TABLE_SIZE, SLOT_SIZE as usize);
    }

    #[test]
    fn names() {
        assert_eq!(name_problem("cannyls.lusf"), None);
        assert_eq!(name_problem(&"x".repeat(64)), None);
        assert!(name_problem(&"x".repeat(65)).is_some());
        assert!(name_problem("").is_some());
        assert!(name_problem("a/b").is_some());
        assert!(name_problem("a\0").is_some());
        assert!(name_problem("..").is_some());
    }
}
