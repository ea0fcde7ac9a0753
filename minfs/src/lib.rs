//! minfs: a minimal user-space filesystem for one preallocated image file or block device.
//!
//! A few named files, each held in 4 KiB-aligned extents; metadata (superblock + file table)
//! in two checksummed slots updated crash-atomically without a journal; all I/O with O_DIRECT
//! straight from the caller's buffers. The format is described in `docs/FORMAT.md`.
//!
//! ```no_run
//! use minfs::{Filesystem, OpenMode};
//! # fn main() -> minfs::Result<()> {
//! let fs = Filesystem::open("disk.img".as_ref(), OpenMode::ReadWrite)?;
//! fs.create("data", 1 << 30)?;
//! let f = fs.open_file("data")?;
//! let mut buf = minfs::AlignedBuf::zeroed(4096, 4096);
//! buf.fill(7);
//! f.write_at(&buf, 0)?;
//! f.flush()?;
//! # Ok(()) }
//! ```
#![deny(unsafe_code)]

pub mod alloc;
pub mod content;
pub mod device;
pub mod error;
mod file;
pub mod format;
mod fs;
pub mod fsck;
#[cfg(feature = "fuse")]
pub mod fuse;
pub mod mkfs;
mod mountinfo;
pub mod probe;
pub mod scrub;
pub mod signature;
pub mod size;
mod sys;

#[cfg(feature = "cli")]
pub mod cli;

/// The examples of this crate's README, compiled and run as doc-tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

pub use device::{
    BlockDevice, FileDevice, LockHolder, MemDevice, OpenMode, SparseMemDevice, TargetKind,
};
pub use error::{Corruption, Error, Result, SlotId};
pub use file::FileHandle;
pub use fs::{ExtentInfo, FileStat, Filesystem, FormatOptions, Info};
pub use sys::{AlignedBuf, HugeAlloc, HugeAllocStats};
