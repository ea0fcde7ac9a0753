//! The library's error type. Every message names the target it is about.

use std::fmt;
use std::io;

/// One of the two metadata slots.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub enum SlotId {
    A,
    B,
}

impl SlotId {
    pub const BOTH: [SlotId; 2] = [SlotId::A, SlotId::B];

    /// 0 for A, 1 for B: the slot's index in the superblock's `slot` field.
    pub fn index(self) -> usize {
        match self {
            SlotId::A => 0,
            SlotId::B => 1,
        }
    }

    pub fn other(self) -> SlotId {
        match self {
            SlotId::A => SlotId::B,
            SlotId::B => SlotId::A,
        }
    }

    /// Byte offset of the slot on the target.
    pub fn offset(self) -> u64 {
        crate::format::SLOT_OFFSETS[self.index()]
    }
}

impl fmt::Display for SlotId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SlotId::A => "slot A",
            SlotId::B => "slot B",
        })
    }
}

/// What is wrong with on-disk metadata. Each variant carries the offending values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Corruption {
    #[error("bad magic {found:02x?} in the {structure}")]
    BadMagic {
        structure: &'static str,
        found: [u8; 8],
    },
    #[error("{structure} checksum mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    BadChecksum {
        structure: &'static str,
        stored: u32,
        computed: u32,
    },
    #[error("format version {found} is not supported (this minfs reads version {supported})")]
    UnsupportedVersion { found: u32, supported: u32 },
    #[error("{structure} field `{field}` = {value} is invalid: {expected}")]
    BadField {
        structure: &'static str,
        field: &'static str,
        value: u64,
        expected: String,
    },
    #[error("file record {index}: name {name:?} is invalid: {reason}")]
    BadName {
        index: u32,
        name: String,
        reason: &'static str,
    },
    #[error("file record {index} ends at byte {end} of the file table, past its {len} bytes")]
    TruncatedRecord { index: u32, end: u64, len: u64 },
    #[error("file {name:?}: extent of {len} blocks at block {start} lies outside the data area (blocks {first}..{end})")]
    ExtentOutOfRange {
        name: String,
        start: u64,
        len: u64,
        first: u64,
        end: u64,
    },
    #[error("files {a:?} and {b:?} both claim block {block}")]
    OverlappingExtents { a: String, b: String, block: u64 },
    #[error("file {name:?}: size {size} needs {needed} blocks but its extents hold {allocated}")]
    SizeMismatch {
        name: String,
        size: u64,
        needed: u64,
        allocated: u64,
    },
    #[error("file name {name:?} appears twice")]
    DuplicateName { name: String },
    #[error("filesystem size {total_bytes} exceeds the target's size of {device_len} bytes")]
    BeyondDevice { total_bytes: u64, device_len: u64 },
    /// The slot could not be read (a latent sector error, EIO): treated like a bad checksum.
    #[error("unreadable: reading {len} bytes at byte {offset} failed: {error}")]
    Unreadable {
        offset: u64,
        len: u64,
        /// The device's error, as text (`io::Error` is not `Clone`).
        error: String,
    },
}

/// Errors of the minfs library.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error("{target}: {context}: {source}")]
    Io {
        target: String,
        context: String,
        #[source]
        source: io::Error,
    },
    #[error("{target}: not a minfs filesystem (no minfs superblock in slot A or slot B)")]
    NotMinfs { target: String },
    #[error("{target}: {slot}: {corruption}")]
    Corrupted {
        target: String,
        slot: SlotId,
        corruption: Corruption,
    },
    #[error("{target}: corrupted: no valid metadata slot (slot A: {a}; slot B: {b})")]
    NoValidSlot {
        target: String,
        a: Box<Corruption>,
        b: Box<Corruption>,
    },
    #[error("{target}: {reason}")]
    NotATarget { target: String, reason: String },
    #[error("{target}: locked by {holder}; {}", holder.advice())]
    Locked {
        target: String,
        /// Who holds the lock, as far as `/proc` tells.
        holder: crate::LockHolder,
    },
    #[error("{target}: device is busy: {detail}")]
    Busy { target: String, detail: String },
    #[error("{target}: holds {kind} (signature at byte {offset}); refusing to overwrite it without --force (-f)")]
    ExistingSignature {
        target: String,
        kind: String,
        offset: u64,
    },
    #[error("{target}: holds data minfs does not recognise: a non-zero byte at byte {offset} of its {size} bytes (no known signature; {bytes_read} bytes sampled, see docs/SYSTEM.md); refusing to overwrite it without --force (-f)")]
    UnknownData {
        target: String,
        /// The target's size.
        size: u64,
        /// The first non-zero byte found.
        offset: u64,
        bytes_read: u64,
    },
    #[error("{target}: wiping the {kind} signature at byte {offset}: {reason}")]
    Wipe {
        target: String,
        kind: String,
        offset: u64,
        reason: String,
    },
    #[error("{target}: {size} bytes is too small for minfs (at least {min} bytes)")]
    TooSmall { target: String, size: u64, min: u64 },
    #[error("{target}: invalid size: {reason}")]
    BadSize { target: String, reason: String },
    #[error("{target}: the host filesystem does not support O_DIRECT")]
    DirectIoUnsupported { target: String },
    #[error("{target}: cannot preallocate {size} bytes for the image (fallocate): {source}")]
    Fallocate {
        target: String,
        /// The bytes asked for.
        size: u64,
        #[source]
        source: io::Error,
    },
    #[error("{target}: no space for {name:?}: needs {needed_blocks} blocks of 4096 bytes, {free_blocks} free")]
    NoSpace {
        target: String,
        name: String,
        needed_blocks: u64,
        free_blocks: u64,
    },
    #[error("{target}: too many files (at most {max})")]
    TooManyFiles { target: String, max: usize },
    #[error("{target}: file table full: {files} files with {extents} extents in total need {needed} bytes of records, a slot holds {capacity} (at most {max_extents} extents in total, fewer with more files)")]
    FileTableFull {
        target: String,
        /// Files and extents of the table that did not fit.
        files: usize,
        extents: usize,
        needed: usize,
        capacity: usize,
        max_extents: usize,
    },
    #[error("{target}: file {name:?} already exists")]
    FileExists { target: String, name: String },
    #[error("{target}: no file named {name:?}")]
    FileNotFound { target: String, name: String },
    #[error("{target}: invalid file name {name:?}: {reason}")]
    InvalidName {
        target: String,
        name: String,
        reason: &'static str,
    },
    #[error("{target}: file {name:?} is open; close its handles first")]
    FileBusy { target: String, name: String },
    #[error("{target}: file {name:?} is {size} bytes; minfs files grow but never shrink (asked for {new_size})")]
    Shrink {
        target: String,
        name: String,
        size: u64,
        new_size: u64,
    },
    #[error("{target}: {what} {value} is not a multiple of {align}")]
    Unaligned {
        target: String,
        what: &'static str,
        value: u64,
        align: u64,
    },
    #[error("{target}: file {name:?}: I/O of {len} bytes at offset {offset} goes past the file's {limit} addressable bytes")]
    OutOfRange {
        target: String,
        name: String,
        offset: u64,
        len: u64,
        limit: u64,
    },
    #[error("{target}: an earlier write or flush failed; this handle refuses further I/O (reopen the target)")]
    Poisoned { target: String },
    #[error("{target}: opened read-only")]
    ReadOnly { target: String },
    #[error("{target}: {reason}")]
    InvalidArgument { target: String, reason: String },
}

/// The library's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Whether the request itself was wrong (alignment, range, a bad name, size or argument),
    /// as opposed to the target or the device: what a caller maps to "invalid input".
    pub fn is_invalid_input(&self) -> bool {
        matches!(
            self,
            Error::Unaligned { .. }
                | Error::OutOfRange { .. }
                | Error::InvalidArgument { .. }
                | Error::InvalidName { .. }
                | Error::BadSize { .. }
                | Error::Shrink { .. }
        )
    }

    /// Whether the target is held by someone else: another read-write opener (`Locked` on an
    /// image; on a block device its exclusive open fails first, giving `Busy`), a mount, or
    /// the kernel.
    pub fn is_in_use(&self) -> bool {
        matches!(self, Error::Locked { .. } | Error::Busy { .. })
    }

    pub(crate) fn io(target: &str, context: impl Into<String>, source: io::Error) -> Error {
        Error::Io {
            target: target.to_string(),
            context: context.into(),
            source,
        }
    }
}
