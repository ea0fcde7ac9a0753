//! [`MinfsNvm`]: one [minfs] file as the non-volatile memory of a [Cannyls] storage.
//!
//! Cannyls (the per-disk engine of FrugalOS) keeps its lumps in a
//! [`NonVolatileMemory`]: a byte range with block-aligned, positional I/O. [`MinfsNvm`]
//! implements it over a file of a minfs filesystem (an image file or a whole block device), so
//! several Cannyls storages can share one disk without a kernel filesystem under them.
//!
//! - **No extra copy**: reads and writes go straight from Cannyls' buffer to the device (minfs
//!   does one O_DIRECT `pread`/`pwrite` per contiguous extent piece). Cannyls allocates that
//!   buffer per put and get from the global allocator; with
//!   `#[global_allocator] static ALLOC: minfs::HugeAlloc = minfs::HugeAlloc::for_lumps();`
//!   in the program it is on a huge page and a 1 MiB lump is one device request, not two or
//!   three (docs/BUFFERS.md in the repository).
//! - **Durability**: [`NonVolatileMemory::sync`] flushes the device ([`FileHandle::flush`]);
//!   `Write::flush` does nothing, as with Cannyls' own `FileNvm`, because nothing is buffered.
//! - **Block size**: by default [`DEFAULT_BLOCK_SIZE`] (4096), or the device's physical sector
//!   size when that is larger, so that every Cannyls write covers whole physical sectors: on a
//!   512e disk no write makes the drive read-modify-write a 4 KiB sector, which a power cut can
//!   ruin whole, neighbours and all (docs/RELIABILITY.md). It must be a multiple of the
//!   device's logical sector size; a device where it is not is refused
//!   ([`Error::NoDefaultBlockSize`]). [`MinfsNvm::with_block_size`] picks another multiple of
//!   the logical sector, e.g. 512 (Cannyls' own default: smaller lumps, but on 512e disks
//!   without power-loss protection a crash can ruin acknowledged data). A file that already
//!   holds a Cannyls storage opens ([`MinfsNvm::open`], [`MinfsNvm::from_filesystem`]) with the
//!   block size recorded in its header, so storages made at 512 still open. A Cannyls storage's
//!   block size must be a multiple of its memory's: create the storage with
//!   [`MinfsNvm::create_storage`] (or [`MinfsNvm::storage_builder`]).
//!   `StorageBuilder::new().create(nvm)` asks for 512 and is refused by Cannyls; the file
//!   [`MinfsNvm::create`] made for it is then removed again, since nothing was written to it.
//! - **Sharing**: a [`FileHandle`] is `Clone + Send + Sync`; [`NonVolatileMemory::split`] gives
//!   two views (journal and data regions) of the same file, like `FileNvm::split`.
//! - **One read-write open per target and process**: minfs locks the target with
//!   `flock(LOCK_EX | LOCK_NB)`. For several storages in one filesystem, open the
//!   [`Filesystem`] once and use [`MinfsNvm::create_in`] / [`MinfsNvm::from_filesystem`].
//!
//! # Crash recovery and write order
//! Cannyls 0.10 refuses to open a storage whose journal ends in a record a crash tore
//! (`StorageCorrupted`, frugalos/cannyls issue #27), and its journal has no sequence numbers, so
//! a record left from an earlier lap of the ring reads as valid. [`MinfsNvm`] makes the
//! journal's tail certain, in two parts:
//!
//! - **Write order** (in the views Cannyls splits the memory into, found from the storage
//!   header): the first write to the journal ring after a sync has its first block — the one
//!   holding the previous `EndOfRecords` — *held* in memory (reads see it); everything else is
//!   written at once. At the ring's next sync (`journal_sync`, or Cannyls' own periodic one):
//!   flush, write the held block, flush. Until that block lands, the journal ends at the old
//!   `EndOfRecords` whatever else of the epoch reached the media; once it lands, everything the
//!   new records point to (the epoch's journal bytes, and data-region bytes written before
//!   them) is already durable. A journal header write (Cannyls' GC moving the ring head) is
//!   held too, and written after the held block, flushed: Cannyls writes and syncs it while the
//!   records its GC relocated are still in its own buffer, so a crash between would otherwise
//!   lose acknowledged lumps. A sync therefore costs two device flushes when the ring was
//!   written (three when the head moved) instead of one.
//! - **Recovery on open** ([`recovery`]): [`MinfsNvm::from_handle`] (and so every opening
//!   constructor) walks the journal as Cannyls will and, if its tail cannot be read, writes an
//!   `EndOfRecords` at the first unreadable record and flushes, before Cannyls reads it; the
//!   repair is reported by [`MinfsNvm::recovery`] and a `log` warning. With the write order
//!   above, only the held block can be partly on the media (when the block is larger than the
//!   device's atomic write, e.g. 4096 on 512-byte sectors): the cut falls in that block.
//!   `minfs-cannyls fsck` checks and repairs the same way.
//!
//! # A copy of the header and journal
//! Cannyls' journal is its only index: one unreadable sector of the storage header or the live
//! journal keeps the whole storage from opening. A storage created through a [`MinfsNvm`]
//! gets a second copy of its header and journal region at the end of the same file, far from
//! the first ([`copy`]; [`MinfsNvm::without_copy`] makes none, [`MinfsNvm::add_copy`] gives one
//! to a storage made before). Opening reads what it needs, serves an unreadable sector from
//! the other copy and writes it back in place ([`MinfsNvm::opened`] says what it did); the
//! copy catches up with the journal about once a second (so the records of the last second
//! before a crash are on one copy only). When both copies of a block are unreadable the open
//! fails with [`Error::JournalUnreadable`]; `minfs-cannyls fsck --salvage` ([`salvage`]) is
//! the last resort.
//!
//! Not covered (Cannyls issue #28): a delete hands the lump's data-region space to the next put
//! at once, and that put's data is written at once, while the delete record waits for the next
//! `journal_sync`. After a crash before that sync, the deleted lump can still be listed and
//! read the new lump's bytes. Call `journal_sync` after deletes (or overwrites) before putting
//! into the space they free; the crash suite counts these reads apart.
//!
//! # Requests and errors
//! Positions and lengths are multiples of the block size and buffer addresses are multiples of
//! the device's logical sector size (Cannyls' `AlignedBytes` are aligned to the block size).
//! Anything else, and any write that does not fit before the capacity, fails with
//! [`cannyls::ErrorKind::InvalidInput`] — inside `Read`/`Write`/`Seek` as a [`std::io::Error`]
//! of kind [`std::io::ErrorKind::InvalidInput`] wrapping the Cannyls error, which Cannyls turns
//! back into its own error of the same kind — and nothing is read or written. As with `FileNvm`,
//! a read at the capacity returns `Ok(0)` and a read that crosses it is cut short there; a seek
//! may go to the capacity but not past it. Device errors are [`cannyls::ErrorKind::Other`].
//!
//! Constructors return this crate's [`Error`] (a minfs error, or a block size that does not
//! suit the device); it converts into a [`cannyls::Error`] (and a [`std::io::Error`]) with `?`
//! or `From`, keeping the original as the cause.
//!
//! # Example
//! ```
//! use cannyls::lump::LumpId;
//! use cannyls::storage::StorageBuilder;
//! use cannyls_adapter::MinfsNvm;
//! use minfs::FormatOptions;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // A 64 MiB minfs image (minfs needs a host filesystem that supports O_DIRECT).
//! let dir = tempfile::Builder::new().tempdir_in("/var/tmp")?;
//! let image = dir.path().join("disk.img");
//! minfs::mkfs::mkfs(
//!     &image,
//!     &FormatOptions { size: Some(64 << 20), ..Default::default() },
//!     false,
//! )?;
//!
//! // A 32 MiB minfs file holding a Cannyls storage.
//! let nvm = MinfsNvm::create(&image, "lusf", 32 << 20)?;
//! let mut storage = nvm.create_storage()?;
//! let id = LumpId::new(42);
//! let data = storage.allocate_lump_data_with_bytes(b"hello minfs")?;
//! storage.put(&id, &data)?;
//! storage.journal_sync()?; // durable from here on
//! drop(storage);
//!
//! // Reopen: the lump is there.
//! let mut storage = StorageBuilder::new().open(MinfsNvm::open(&image, "lusf")?)?;
//! assert_eq!(storage.get(&id)?.unwrap().as_bytes(), b"hello minfs");
//! drop(storage);
//! assert!(minfs::fsck::check(&image)?.is_clean());
//! # Ok(()) }
//! ```
//!
//! # Under Cannyls' asynchronous `Device`
//! Build the storage on the device thread, and wait until the device runs before the first
//! request: one sent right after `spawn` fails with `DeviceBusy` while the storage opens.
//! ```
//! use cannyls::deadline::Deadline;
//! use cannyls::device::DeviceBuilder;
//! use cannyls::lump::LumpId;
//! use cannyls::storage::StorageBuilder;
//! use cannyls_adapter::minfs::{self, FormatOptions};
//! use cannyls_adapter::MinfsNvm;
//! use fibers_global::execute;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::Builder::new().tempdir_in("/var/tmp")?;
//! let image = dir.path().join("disk.img");
//! let size = Some(64 << 20);
//! minfs::mkfs::mkfs(&image, &FormatOptions { size, ..Default::default() }, false)?;
//! drop(MinfsNvm::create(&image, "lusf", 32 << 20)?.create_storage()?);
//!
//! let path = image.clone();
//! let device = DeviceBuilder::new().spawn(move || {
//!     let nvm = MinfsNvm::open(&path, "lusf")?; // our Error converts into Cannyls' with `?`
//!     StorageBuilder::new().open(nvm)
//! });
//! let device = execute(device.wait_for_running())?;
//! let d = device.handle();
//! let data = d.allocate_lump_data_with_bytes(b"hello device")?;
//! execute(d.request().journal_sync().put(LumpId::new(7), data))?;
//! let got = execute(d.request().get(LumpId::new(7)))?;
//! assert_eq!(got.unwrap().as_bytes(), b"hello device");
//! device.stop(Deadline::Immediate);
//! execute(device)?;
//! # Ok(()) }
//! ```
//!
//! [minfs]: minfs
//! [Cannyls]: cannyls
#![deny(unsafe_code)]
#![warn(missing_docs)]

use std::fmt;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use cannyls::block::BlockSize;
use cannyls::nvm::NonVolatileMemory;
use cannyls::storage::{Storage, StorageBuilder, StorageHeader};
use cannyls::ErrorKind;
use minfs::{AlignedBuf, FileHandle, Filesystem, OpenMode};
use trackable::error::ErrorKindExt;
use trackable::track;

/// The block size of a new [`MinfsNvm`] (unless the device's physical sector is larger): 4 KiB,
/// the physical sector of 512e and 4Kn disks.
pub const DEFAULT_BLOCK_SIZE: u32 = 4096;

pub mod cli;
pub mod copy;
pub mod delete;
pub mod logfile;
pub mod lumps;
pub mod mount;
pub mod recovery;
pub mod salvage;

/// The minfs library, re-exported so that a crate depending on this one can make and open
/// filesystems (`cannyls_adapter::minfs::mkfs::mkfs`, `cannyls_adapter::minfs::Filesystem`)
/// without naming minfs in its own `Cargo.toml`.
pub use minfs;

/// The Rust examples of this crate's README, compiled and run as doc-tests so that they keep
/// working as written.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

pub use copy::{CopyOptions, CopyPolicy, CopyStats};
pub use recovery::{Inspection, RecoveryReport};

/// Whether opening a memory recovers the Cannyls storage in its file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Recover {
    /// Recover a storage if the file holds one.
    Yes,
    /// Recover the storage the file must hold ([`Error::NoStorage`] if none).
    Required,
    /// A file just created: its blocks hold no storage.
    No,
}

/// What opening a memory does with the storage's copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CopyAt {
    /// Keep it: resumed when it was left level, else rebuilt; none made.
    Keep,
    /// Rebuild it if there is one.
    Rebuild,
    /// Make one (or rebuild it).
    Add,
}

/// Errors of opening, creating or configuring a [`MinfsNvm`].
///
/// Converts into [`cannyls::Error`] (kind `InvalidInput` for bad arguments, `Other` otherwise)
/// and into [`std::io::Error`], with this error as the cause.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// minfs refused or failed: opening the target (e.g. [`minfs::Error::Locked`] when the
    /// target is already open read-write in this or another process), a missing or existing
    /// file, no space, an I/O error.
    Minfs(minfs::Error),
    /// The block size asked for is not a multiple of the device's logical sector size (or is
    /// not a valid Cannyls block size).
    InvalidBlockSize {
        /// The minfs target.
        target: String,
        /// The minfs file.
        file: String,
        /// The block size asked for.
        block_size: u64,
        /// The device's logical sector size.
        sector_size: u32,
    },
    /// The default block size — [`DEFAULT_BLOCK_SIZE`], or the device's physical sector size
    /// when larger — is not a multiple of the device's logical sector size or not a valid
    /// Cannyls block size (at most 65024), so none can be chosen: pick one with
    /// [`MinfsNvm::with_block_size`].
    NoDefaultBlockSize {
        /// The minfs target.
        target: String,
        /// The minfs file.
        file: String,
        /// The device's logical sector size.
        logical: u32,
        /// The device's physical sector size.
        physical: u32,
    },
    /// A split view's start is not a multiple of the block size asked for, so the view cannot
    /// use it (set the block size before splitting).
    UnalignedView {
        /// The minfs target.
        target: String,
        /// The minfs file.
        file: String,
        /// The view's start within the file.
        view_start: u64,
        /// The block size asked for.
        block_size: u64,
    },
    /// The Cannyls journal in the file cannot be read from its head, so no position can be
    /// shown to be its end: the storage is not opened (see [`recovery`]).
    JournalUnrepairable {
        /// The minfs target.
        target: String,
        /// The minfs file.
        file: String,
        /// The ring head from the journal header.
        head: u64,
        /// Ring position where the walk stopped.
        at: u64,
        /// What was found there.
        found: recovery::Unreadable,
    },
    /// Journal bytes needed to open the storage cannot be read, from the file nor from the
    /// copy (an unreadable sector in both, or in a storage without a copy): the storage is not
    /// opened; `minfs-cannyls fsck --salvage` is the last resort (docs/RELIABILITY.md).
    JournalUnreadable {
        /// The minfs target.
        target: String,
        /// The minfs file.
        file: String,
        /// What could not be read.
        hole: Box<recovery::Hole>,
    },
    /// A capacity smaller than one block: the memory would hold nothing.
    CapacityTooSmall {
        /// The minfs target.
        target: String,
        /// The minfs file.
        file: String,
        /// The capacity asked for.
        capacity: u64,
        /// The block size (the memory's capacity is a multiple of it).
        block_size: u64,
    },
    /// [`MinfsNvm::open`] found no Cannyls storage in the file (a file created but never
    /// given a storage, e.g. after a failed `StorageBuilder::create`).
    NoStorage {
        /// The minfs target.
        target: String,
        /// The minfs file.
        file: String,
        /// Why the start of the file is not a storage header.
        reason: String,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Minfs(e) => fmt::Display::fmt(e, f),
            Error::InvalidBlockSize {
                target,
                file,
                block_size,
                sector_size,
            } => write!(
                f,
                "{target}: file {file:?}: block size {block_size} is not usable: it must be a \
                 multiple of the device's {sector_size}-byte logical sector size (and of 512, \
                 at most 65024)"
            ),
            Error::NoDefaultBlockSize {
                target,
                file,
                logical,
                physical,
            } => write!(
                f,
                "{target}: file {file:?}: no default block size for this device: {} (the larger \
                 of {DEFAULT_BLOCK_SIZE} and its {physical}-byte physical sector) must be a \
                 multiple of its {logical}-byte logical sector size and at most 65024; choose \
                 one with with_block_size",
                DEFAULT_BLOCK_SIZE.max(*physical)
            ),
            Error::UnalignedView {
                target,
                file,
                view_start,
                block_size,
            } => write!(
                f,
                "{target}: file {file:?}: this view starts at byte {view_start}, which is not a \
                 multiple of block size {block_size} (choose the block size before splitting)"
            ),
            Error::JournalUnrepairable {
                target,
                file,
                head,
                at,
                found,
            } => write!(
                f,
                "{target}: file {file:?}: the Cannyls journal cannot be repaired with certainty: \
                 walking from the head at ring position {head}, found {found} at ring position \
                 {at}; nothing shows where the journal ended, so the storage is not opened"
            ),
            Error::JournalUnreadable { target, file, hole } => write!(
                f,
                "{target}: file {file:?}: the Cannyls journal cannot be read: {hole}; the \
                 storage is not opened (`minfs-cannyls fsck --salvage {target} {file}` is the last \
                 resort: docs/RELIABILITY.md)"
            ),
            Error::CapacityTooSmall {
                target,
                file,
                capacity,
                block_size,
            } => write!(
                f,
                "{target}: file {file:?}: a capacity of {capacity} bytes is less than one \
                 {block_size}-byte block: the memory would hold nothing (its capacity is a \
                 multiple of the block size, rounded down)"
            ),
            Error::NoStorage {
                target,
                file,
                reason,
            } => write!(
                f,
                "{target}: file {file:?} holds no Cannyls storage ({reason}; created but never \
                 initialised?): remove it (minfs rm {target} {file}) or create the storage in \
                 it (MinfsNvm::from_filesystem, then nvm.create_storage())"
            ),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Minfs(e) => Some(e),
            _ => None,
        }
    }
}

impl From<minfs::Error> for Error {
    fn from(e: minfs::Error) -> Error {
        Error::Minfs(e)
    }
}

impl Error {
    /// The Cannyls error kind this error maps to.
    pub fn cannyls_kind(&self) -> ErrorKind {
        match self {
            Error::Minfs(e) => minfs_kind(e),
            Error::InvalidBlockSize { .. }
            | Error::NoDefaultBlockSize { .. }
            | Error::UnalignedView { .. }
            | Error::CapacityTooSmall { .. }
            | Error::NoStorage { .. } => ErrorKind::InvalidInput,
            Error::JournalUnrepairable { .. } | Error::JournalUnreadable { .. } => {
                ErrorKind::StorageCorrupted
            }
        }
    }
}

impl From<Error> for cannyls::Error {
    fn from(e: Error) -> cannyls::Error {
        cannyls::Error::from(e.cannyls_kind().cause(e))
    }
}

impl From<Error> for io::Error {
    fn from(e: Error) -> io::Error {
        io::Error::from(cannyls::Error::from(e))
    }
}

/// The result type of this crate's constructors.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Which Cannyls error kind a minfs error is: `InvalidInput` for a bad request, `Other` for
/// everything else (device errors, a poisoned handle, ...).
fn minfs_kind(e: &minfs::Error) -> ErrorKind {
    match e {
        _ if e.is_invalid_input() => ErrorKind::InvalidInput,
        minfs::Error::Io { source, .. } if source.kind() == io::ErrorKind::InvalidInput => {
            ErrorKind::InvalidInput
        }
        _ => ErrorKind::Other,
    }
}

fn from_minfs(e: minfs::Error) -> cannyls::Error {
    cannyls::Error::from(minfs_kind(&e).cause(e))
}

fn invalid_input(message: String) -> cannyls::Error {
    cannyls::Error::from(ErrorKind::InvalidInput.cause(message))
}

/// A [`NonVolatileMemory`] over one minfs file (or, after [`NonVolatileMemory::split`], over a
/// range of it). See the [crate docs](crate) for its semantics.
///
/// Capacity: the file's size when the handle was made (up to where the storage's copy begins,
/// when it has one), rounded down to the block size.
pub struct MinfsNvm {
    file: FileHandle,
    block_size: BlockSize,
    /// The view's start within the file (a multiple of the block size).
    view_start: u64,
    /// The view's end within the file (a multiple of the block size).
    view_end: u64,
    /// The cursor, relative to `view_start`; always a multiple of the block size and at most
    /// the capacity.
    position: u64,
    /// Shared by every view of this memory: the journal's place and the held commit unit.
    shared: Arc<Mutex<Shared>>,
    /// The journal repair made when this memory was opened, if any.
    recovery: Option<Arc<RecoveryReport>>,
    /// What opening it did with unreadable sectors and the copy.
    opened: Option<Arc<copy::OpenReport>>,
}

/// What the views of one memory share (see "Write order" in the crate docs).
#[derive(Debug, Default)]
struct Shared {
    /// Whether the storage header was looked for (once, at open or at the first split).
    layout_read: bool,
    /// File ranges of the journal header block and of the ring, once known.
    journal: Option<JournalPlace>,
    /// The held commit unit of the ring: file offset and bytes.
    held: Option<(u64, AlignedBuf)>,
    /// A held journal header write: file offset and bytes.
    header: Option<(u64, AlignedBuf)>,
    /// The ring head of the journal header on the media.
    durable_head: u64,
    /// The file, while this memory was made by `create` and nothing was written to it yet.
    unused: Option<Unused>,
    /// What to do about a copy of the header and journal ([`copy`]).
    copy_opts: CopyOptions,
    /// The copy, while it is kept.
    copy: Option<copy::Session>,
    /// A storage was created through this memory (a write of its header and journal): its
    /// copy is made once the layout is known.
    created: bool,
    /// Until the first journal write after open: ring ranges (file offsets) past the journal's
    /// end, which reads leave alone (zeros) — Cannyls reads 1 MiB at a time from the head
    /// when it opens a storage and stops at the `EndOfRecords`.
    clip: Option<Vec<(u64, u64)>>,
    /// The file, for the copy's last catch-up when the memory is dropped.
    file: Option<FileHandle>,
    /// Where a memory over the whole file ends, when not at the file's end: the storage's end,
    /// in a file that holds a copy after it.
    limit: Option<u64>,
}

impl Drop for Shared {
    fn drop(&mut self) {
        // Taken, so that the handle is gone before `unused` removes an unused file.
        let file = self.file.take();
        let (Some(c), Some(file)) = (self.copy.as_mut(), file.as_ref()) else {
            return;
        };
        if self.held.is_some() || self.header.is_some() {
            // Writes never committed: the copy stays as it is (not clean); the next open
            // levels it.
            return;
        }
        if let Err(e) = c.close(file, self.durable_head) {
            log::warn!(
                "{}: file {:?}: the copy of the Cannyls journal could not be brought level when \
                 the memory was dropped (the next open rebuilds it): {e}",
                file.target(),
                file.name()
            );
        }
    }
}

/// A file made by [`MinfsNvm::create`] or [`MinfsNvm::create_in`] that nothing has been
/// written to: removed again when the last view of its memory is dropped, so that a storage
/// create that fails (e.g. `StorageBuilder::new().create(nvm)`, whose 512-byte storage block
/// does not suit the memory's 4096) leaves no file without a storage behind.
#[derive(Debug)]
struct Unused {
    fs: Filesystem,
    file: String,
    /// Set by the first write.
    keep: bool,
}

impl Drop for Unused {
    fn drop(&mut self) {
        if self.keep {
            return;
        }
        match self.fs.remove(&self.file) {
            Ok(()) => log::warn!(
                "{}: removed file {:?}: created for a Cannyls storage, but nothing was written to \
                 it (a storage create that failed? StorageBuilder::new() asks for block size \
                 512; nvm.create_storage() uses the memory's)",
                self.fs.target(),
                self.file
            ),
            Err(e) => log::warn!(
                "{}: file {:?} was created for a Cannyls storage and never written, but could \
                 not be removed: {e}",
                self.fs.target(),
                self.file
            ),
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct JournalPlace {
    header: (u64, u64),
    ring: (u64, u64),
}

impl JournalPlace {
    fn of(layout: &recovery::Layout) -> JournalPlace {
        let start = layout.journal_start;
        JournalPlace {
            header: (start, layout.ring_start()),
            ring: (layout.ring_start(), start + layout.journal_size),
        }
    }
}

fn lock(shared: &Mutex<Shared>) -> std::sync::MutexGuard<'_, Shared> {
    shared.lock().unwrap_or_else(PoisonError::into_inner)
}

impl MinfsNvm {
    /// Creates the file `file` of `capacity` bytes (preallocated, durable on return) in the
    /// minfs filesystem on `target` (which must already exist: see [`minfs::mkfs::mkfs`]) and
    /// opens it. The filesystem stays open (and locked) while this memory or a view of it lives.
    ///
    /// The memory's capacity is `capacity` **rounded down to a multiple of the block size**
    /// (4096 by default: `create(.., 10240)` gives a memory of 8192 bytes, and says so in a
    /// `log` warning; [`NonVolatileMemory::capacity`] returns it). A capacity smaller than one
    /// block is refused ([`Error::CapacityTooSmall`], naming both sizes) and no file is made.
    ///
    /// A storage created in it ([`MinfsNvm::create_storage`]) gets a copy of its header and
    /// journal region ([`copy`]) after the capacity: the file grows by that much (and more
    /// for a storage smaller than [`copy::MIN_DISTANCE`]); [`MinfsNvm::without_copy`] makes
    /// none.
    ///
    /// To create a Cannyls storage in it use [`MinfsNvm::create_storage`] (or
    /// [`MinfsNvm::storage_builder`]). If the memory (and every view of it) is dropped before
    /// anything is written to it — a storage create that failed — the file is removed again.
    pub fn create(target: &Path, file: &str, capacity: u64) -> Result<MinfsNvm> {
        let fs = Filesystem::open(target, OpenMode::ReadWrite)?;
        MinfsNvm::create_in(&fs, file, capacity)
    }

    /// Opens the Cannyls storage's memory in the existing file `file` of the minfs filesystem
    /// on `target` (recovering its journal as [`MinfsNvm::from_handle`] does). A file that
    /// holds no storage is refused with [`Error::NoStorage`].
    ///
    /// Fails with [`minfs::Error::Locked`] when the target is already open read-write, also in
    /// this process: for several files of one filesystem use [`MinfsNvm::from_filesystem`].
    pub fn open(target: &Path, file: &str) -> Result<MinfsNvm> {
        let fs = Filesystem::open(target, OpenMode::ReadWrite)?;
        MinfsNvm::from_handle_as(fs.open_file(file)?, Recover::Required)
    }

    /// Creates the file `file` of `capacity` bytes in an open filesystem and opens it, with
    /// the default block size (see the [crate docs](crate)): what was in its blocks before
    /// does not count.
    ///
    /// As with [`MinfsNvm::create`], the file is removed again if nothing is written to it.
    pub fn create_in(fs: &Filesystem, file: &str, capacity: u64) -> Result<MinfsNvm> {
        let dev = fs.device();
        let bs = u64::from(DEFAULT_BLOCK_SIZE.max(dev.physical_sector_size()));
        if capacity < bs {
            return Err(Error::CapacityTooSmall {
                target: fs.target().to_string(),
                file: file.to_string(),
                capacity,
                block_size: bs,
            });
        }
        if capacity % bs != 0 {
            log::warn!(
                "{}: file {file:?}: a capacity of {capacity} bytes is not a multiple of the \
                 {bs}-byte block size: the memory holds {} bytes (the file keeps {capacity})",
                fs.target(),
                capacity / bs * bs
            );
        }
        fs.create(file, capacity)?;
        let nvm = MinfsNvm::default_sized(fs.open_file(file)?, Recover::No)?;
        lock(&nvm.shared).unused = Some(Unused {
            fs: fs.clone(),
            file: file.to_string(),
            keep: false,
        });
        Ok(nvm)
    }

    /// Opens the existing file `file` of an open filesystem. Any number of files of one
    /// filesystem can be open at once, each holding its own storage. A file with no storage in
    /// it opens with the default block size (to create one with [`MinfsNvm::create_storage`]).
    pub fn from_filesystem(fs: &Filesystem, file: &str) -> Result<MinfsNvm> {
        MinfsNvm::from_handle(fs.open_file(file)?)
    }

    /// A memory over an open minfs file. Its block size: the one recorded in the Cannyls
    /// header at the start of the file, when there is one (refused with
    /// [`Error::InvalidBlockSize`] if it is not a multiple of the device's logical sector
    /// size); else the default ([`DEFAULT_BLOCK_SIZE`], or the physical sector size when
    /// larger).
    ///
    /// If the file holds a Cannyls storage whose journal ends in a torn, unacknowledged write
    /// (which Cannyls would refuse with `StorageCorrupted`), the journal is cut there first and
    /// the repair is reported by [`MinfsNvm::recovery`] and a `log` warning; see [`recovery`].
    /// Fails with [`Error::JournalUnrepairable`] when the journal cannot be read from its head.
    pub fn from_handle(file: FileHandle) -> Result<MinfsNvm> {
        MinfsNvm::from_handle_as(file, Recover::Yes)
    }

    fn from_handle_as(file: FileHandle, recover: Recover) -> Result<MinfsNvm> {
        match recorded_block_size(&file)? {
            Some(size) => {
                let block_size = block_size_for(&file, u64::from(size))?;
                MinfsNvm::with(file, block_size, recover)
            }
            None => MinfsNvm::default_sized(file, recover),
        }
    }

    /// A memory over an open minfs file with the default block size, whatever block size the
    /// file's storage header records (a storage in it is still recovered as by
    /// [`MinfsNvm::from_handle`]).
    pub fn with_default_block_size(file: FileHandle) -> Result<MinfsNvm> {
        MinfsNvm::default_sized(file, Recover::Yes)
    }

    fn default_sized(file: FileHandle, recover: Recover) -> Result<MinfsNvm> {
        let physical = file.physical_sector_size();
        let block_size = block_size_for(&file, u64::from(DEFAULT_BLOCK_SIZE.max(physical)))
            .map_err(|_| Error::NoDefaultBlockSize {
                target: file.target().to_string(),
                file: file.name().to_string(),
                logical: file.sector_size(),
                physical,
            })?;
        MinfsNvm::with(file, block_size, recover)
    }

    /// The memory, after recovering the storage in the file when `recover` says so (a file
    /// just created holds stale blocks, not a storage).
    fn with(file: FileHandle, block_size: BlockSize, recover: Recover) -> Result<MinfsNvm> {
        MinfsNvm::with_copy(
            file,
            block_size,
            recover,
            CopyOptions::default(),
            CopyAt::Keep,
        )
    }

    /// [`MinfsNvm::with`], with `opts` for the copy, and `at` saying what to do with it.
    fn with_copy(
        file: FileHandle,
        block_size: BlockSize,
        recover: Recover,
        opts: CopyOptions,
        at: CopyAt,
    ) -> Result<MinfsNvm> {
        let mut view_end = block_size.floor_align(file.size());
        let mut shared = Shared::default();
        shared.copy_opts = opts;
        let mut report = None;
        let mut opened = copy::OpenReport::default();
        if recover == Recover::No {
            return Ok(MinfsNvm::assemble(
                file, block_size, view_end, shared, None, None,
            ));
        }
        // The copy's trailer, if any: it also bounds what Cannyls may use of the file.
        let trailer = match copy::find(&file) {
            Ok(t) => t,
            Err(e) if recovery::is_unreadable(&e) => {
                opened.failed_reads += 1;
                opened.trailer_unreadable = true;
                log::warn!(
                    "{}: file {:?}: the copy's trailer: {e}",
                    file.target(),
                    file.name()
                );
                None
            }
            Err(e) => return Err(e.into()),
        };
        if let Some(t) = &trailer {
            view_end = view_end.min(block_size.floor_align(t.image));
        }
        let limit = trailer.as_ref().and_then(|t| t.clean.map(|(_, end)| end));
        let mut fallback = trailer.clone().map(|t| copy::OpenFallback::new(&file, t));
        let (inspection, info) = recovery::walk_with(
            &file,
            0,
            view_end,
            fallback.as_mut().map(|f| f as &mut dyn recovery::Fallback),
            limit,
            &mut |_, _| {},
        )?;
        opened.failed_reads += info.failed_reads;
        if let Some(f) = &fallback {
            opened.copy_failed_reads += f.failed_reads;
            // What the walk read: its path and the record where it stopped.
            let mut read = info.path();
            read.push((info.stop, info.stop + recovery::RECORD_HEAD));
            let mut rewrites: Vec<&copy::Rewrite> = f.rewrites.iter().collect();
            let ring = f.ring_rewrites(&read);
            rewrites.extend(ring.iter());
            for (at, buf) in &rewrites {
                file.write_at(buf, *at)?;
                opened.rewritten.push((*at, buf.len() as u64));
            }
            if !rewrites.is_empty() {
                file.flush()?;
                log::warn!(
                    "{}: file {:?}: {} unreadable range(s) of the Cannyls header and journal \
                     served from the copy and rewritten in place: {:?}",
                    file.target(),
                    file.name(),
                    opened.rewritten.len(),
                    opened.rewritten
                );
            }
        }
        drop(fallback);
        let (layout, end) = match inspection {
            Inspection::NoStorage(reason) if recover == Recover::Required => {
                return Err(Error::NoStorage {
                    target: file.target().to_string(),
                    file: file.name().to_string(),
                    reason,
                })
            }
            Inspection::NoStorage(_) => {
                // No storage: a file from before that may get one (its old trailer, if any,
                // does not count).
                view_end = block_size.floor_align(file.size());
                return Ok(MinfsNvm::assemble(
                    file, block_size, view_end, shared, None, None,
                ));
            }
            Inspection::Clean {
                layout, head, end, ..
            } => {
                shared.durable_head = head;
                (layout, end)
            }
            Inspection::TornTail(cut) => {
                shared.durable_head = cut.head;
                let cleared = recovery::repair(&file, 0, &cut)?;
                let (layout, end) = (cut.layout, cut.at);
                let r = RecoveryReport {
                    target: file.target().to_string(),
                    file: file.name().to_string(),
                    file_offset: cut.layout.ring_start() + cut.at,
                    cut,
                    cleared,
                };
                log::warn!("{r}");
                report = Some(Arc::new(r));
                (layout, end)
            }
            Inspection::Hole(hole) => {
                return Err(Error::JournalUnreadable {
                    target: file.target().to_string(),
                    file: file.name().to_string(),
                    hole: Box::new(hole),
                })
            }
            Inspection::Unrepairable {
                head, at, found, ..
            } => {
                return Err(Error::JournalUnrepairable {
                    target: file.target().to_string(),
                    file: file.name().to_string(),
                    head,
                    at,
                    found,
                })
            }
        };
        shared.layout_read = true;
        shared.journal = Some(JournalPlace::of(&layout));
        shared.clip = Some(free_ring(&layout, &info, end));
        // The copy: resumed when it was left level, else (re)built.
        let mut uuid = [0u8; 16];
        {
            let sector = recovery::sector_align(&file);
            let mut h = AlignedBuf::zeroed(sector, sector);
            file.read_at(&mut h, 0)?;
            uuid.copy_from_slice(&h[12..28]);
        }
        let ours = trailer.as_ref().filter(|t| t.uuid == uuid);
        let head = shared.durable_head;
        // Sectors written back from the copy leave the two as level as they were.
        let clean = report.is_none()
            && at == CopyAt::Keep
            && ours
                .is_some_and(|t| t.state == copy::CopyState::Valid && t.clean == Some((head, end)));
        let info = recovery::WalkInfo { stop: end, ..info };
        let session = if clean {
            opened.copy = copy::CopyAtOpen::Level;
            Some(copy::resume(
                &file,
                &layout,
                ours.expect("checked"),
                head,
                end,
                opts.policy,
            )?)
        } else if ours.is_some() || opened.trailer_unreadable || at == CopyAt::Add {
            match copy::build(&file, &layout, &info, end, &opts, ours) {
                Ok(s) => {
                    opened.copy = copy::CopyAtOpen::Rebuilt;
                    Some(s)
                }
                Err(e)
                    if recovery::is_unreadable(&e) || matches!(e, minfs::Error::NoSpace { .. }) =>
                {
                    // Its trailer says "building" (written first): it vouches for nothing.
                    log::warn!(
                        "{}: file {:?}: the copy of the Cannyls header and journal could not \
                         be rebuilt: {e}",
                        file.target(),
                        file.name()
                    );
                    opened.copy = copy::CopyAtOpen::Failed(e.to_string());
                    None
                }
                Err(e) => return Err(e.into()),
            }
        } else {
            None
        };
        // A file with a copy holds the storage, then the copy: the memory is the storage
        // (a storage created in it anew gets the same size).
        if trailer.is_some() || session.is_some() {
            view_end = view_end.min(block_size.floor_align(layout.storage_end()));
            shared.limit = Some(view_end);
        }
        shared.copy = session;
        Ok(MinfsNvm::assemble(
            file,
            block_size,
            view_end,
            shared,
            report,
            Some(Arc::new(opened)),
        ))
    }

    fn assemble(
        file: FileHandle,
        block_size: BlockSize,
        view_end: u64,
        mut shared: Shared,
        recovery: Option<Arc<RecoveryReport>>,
        opened: Option<Arc<copy::OpenReport>>,
    ) -> MinfsNvm {
        shared.file = Some(file.clone());
        MinfsNvm {
            file,
            block_size,
            view_start: 0,
            view_end,
            position: 0,
            shared: Arc::new(Mutex::new(shared)),
            recovery,
            opened,
        }
    }

    /// What opening this memory did with unreadable sectors and the copy (`None` for a file
    /// just created or one that holds no storage).
    pub fn opened(&self) -> Option<&copy::OpenReport> {
        self.opened.as_deref()
    }

    /// This memory, making no copy of a storage created through it ([`copy`]); a storage
    /// that has one still keeps it.
    pub fn without_copy(self) -> MinfsNvm {
        lock(&self.shared).copy_opts.create = false;
        self
    }

    /// This memory with `opts` for the copy of a storage created through it.
    pub fn with_copy_options(self, opts: CopyOptions) -> MinfsNvm {
        let mut shared = lock(&self.shared);
        shared.copy_opts = opts;
        if let Some(c) = shared.copy.as_mut() {
            c.set_policy(opts.policy);
        }
        drop(shared);
        self
    }

    /// Whether the storage's header and journal have a copy kept now.
    pub fn has_copy(&self) -> bool {
        lock(&self.shared)
            .copy
            .as_ref()
            .is_some_and(|c| !c.is_lost())
    }

    /// What the copy did so far (`None` without a copy).
    pub fn copy_stats(&self) -> Option<CopyStats> {
        lock(&self.shared).copy.as_ref().map(|c| c.stats.clone())
    }

    /// Opens the storage in `file` of `fs` and gives it a copy of its header and journal
    /// (`minfs-cannyls add-copy`), placed with `opts` when it has none, else rebuilt where it
    /// is.
    pub fn add_copy(fs: &Filesystem, file: &str, opts: CopyOptions) -> Result<MinfsNvm> {
        MinfsNvm::open_copy(fs, file, opts, CopyAt::Add)
    }

    /// Opens the storage in `file` of `fs`, rebuilding its copy from the primary if it has one
    /// (`minfs-cannyls fsck -y` when the copies disagree, `scrub --repair`).
    pub fn rebuild_copy(fs: &Filesystem, file: &str) -> Result<MinfsNvm> {
        MinfsNvm::open_copy(fs, file, CopyOptions::default(), CopyAt::Rebuild)
    }

    fn open_copy(fs: &Filesystem, file: &str, opts: CopyOptions, at: CopyAt) -> Result<MinfsNvm> {
        let handle = fs.open_file(file)?;
        let block_size = match recorded_block_size(&handle)? {
            Some(size) => block_size_for(&handle, u64::from(size))?,
            None => {
                return Err(Error::NoStorage {
                    target: handle.target().to_string(),
                    file: file.to_string(),
                    reason: "no Cannyls storage header".into(),
                })
            }
        };
        MinfsNvm::with_copy(handle, block_size, Recover::Required, opts, at)
    }

    /// The journal repair made when this memory was opened (`None` when the journal was
    /// clean, or the file holds no storage yet): where the journal was cut and what was found.
    pub fn recovery(&self) -> Option<&RecoveryReport> {
        self.recovery.as_deref()
    }

    /// The same memory with block size `block_size`: the capacity is rounded down to it and the
    /// cursor moves to 0. Refused with [`Error::InvalidBlockSize`] unless `block_size` is a
    /// multiple of the device's logical sector size ([`MinfsNvm::sector_size`]).
    ///
    /// 4096 makes every Cannyls write 4 KiB-aligned (on a 512e disk, no read-modify-write of
    /// physical sectors), at the cost of padding each lump to 4 KiB.
    pub fn with_block_size(self, block_size: BlockSize) -> Result<MinfsNvm> {
        let size = u64::from(block_size.as_u16());
        let block_size = block_size_for(&self.file, size)?;
        if !block_size.is_aligned(self.view_start) {
            return Err(Error::UnalignedView {
                target: self.file.target().to_string(),
                file: self.file.name().to_string(),
                view_start: self.view_start,
                block_size: size,
            });
        }
        // A memory over the whole file covers as much of it as the new block size allows (a
        // smaller block size gives back the tail the larger one rounded off); a view made by
        // `split` keeps its end, rounded down.
        let file_end = self.memory_end();
        let whole_file =
            self.view_start == 0 && self.view_end == self.block_size.floor_align(file_end);
        let end = if whole_file { file_end } else { self.view_end };
        let view_end = self.view_start + block_size.floor_align(end - self.view_start);
        Ok(MinfsNvm {
            block_size,
            view_end,
            position: 0,
            ..self
        })
    }

    /// A `StorageBuilder` whose block size is this memory's, for `create` (a storage's block
    /// size must be a multiple of its memory's; `StorageBuilder::new()` uses 512). `open` takes
    /// the block size from the storage header, so any builder works there.
    pub fn storage_builder(&self) -> StorageBuilder {
        let mut builder = StorageBuilder::new();
        builder.block_size(self.block_size);
        builder
    }

    /// Creates a Cannyls storage in this memory with [`MinfsNvm::storage_builder`]'s settings
    /// (the storage's block size is the memory's), and opens it.
    pub fn create_storage(self) -> cannyls::Result<Storage<MinfsNvm>> {
        self.storage_builder().create(self)
    }

    /// The minfs file.
    pub fn file_handle(&self) -> &FileHandle {
        &self.file
    }

    /// The device's logical sector size: block sizes must be multiples of it.
    pub fn sector_size(&self) -> u32 {
        self.file.sector_size()
    }

    /// The end of what a memory over the whole file may use: the file's size, or where its
    /// copy begins.
    fn memory_end(&self) -> u64 {
        let limit = lock(&self.shared).limit;
        limit.map_or(self.file.size(), |l| l.min(self.file.size()))
    }

    /// Reads the storage header once (Cannyls splits the memory only after writing it), to know
    /// which views are the journal's; and makes the copy of a storage just created through
    /// this memory.
    fn learn_layout(&self) -> minfs::Result<()> {
        let mut shared = lock(&self.shared);
        if !shared.layout_read && self.view_start == 0 {
            shared.layout_read = true;
            if let Ok(layout) = recovery::layout(&self.file, 0, self.capacity())? {
                shared.journal = Some(JournalPlace::of(&layout));
                if shared.created && !shared.copy_opts.create {
                    // No copy for this storage: a trailer of one made in this file before
                    // must not pass for its copy.
                    if let Ok(Some(t)) = copy::find(&self.file) {
                        copy::forget(&self.file, &t)?;
                    }
                }
                if shared.created && shared.copy_opts.create {
                    // Cannyls wrote the header, the journal header (head 0) and an EndOfRecords
                    // at ring position 0, and synced them.
                    let old = copy::find(&self.file).ok().flatten();
                    let info = recovery::WalkInfo::default();
                    let opts = shared.copy_opts;
                    match copy::build(&self.file, &layout, &info, 0, &opts, old.as_ref()) {
                        Ok(session) => shared.copy = Some(session),
                        Err(e @ minfs::Error::NoSpace { .. }) => log::warn!(
                            "{}: file {:?}: the new Cannyls storage gets no copy of its header \
                             and journal: {e}",
                            self.file.target(),
                            self.file.name()
                        ),
                        Err(e) => return Err(e),
                    }
                }
            }
        }
        Ok(())
    }

    /// Where this view starts within the file (0 unless made by `split`).
    pub fn view_start(&self) -> u64 {
        self.view_start
    }

    fn seek_impl(&mut self, position: u64) -> cannyls::Result<()> {
        if !self.block_size.is_aligned(position) {
            return Err(track!(invalid_input(format!(
                "seek to {position}: not a multiple of the block size {}",
                self.block_size.as_u16()
            ))));
        }
        if position > self.capacity() {
            return Err(track!(invalid_input(format!(
                "seek to {position}: past the capacity of {} bytes",
                self.capacity()
            ))));
        }
        self.position = position;
        Ok(())
    }

    fn check_len(&self, what: &str, len: usize) -> cannyls::Result<()> {
        if !self.block_size.is_aligned(len as u64) {
            return Err(track!(invalid_input(format!(
                "{what} of {len} bytes at position {}: the length is not a multiple of the \
                 block size {}",
                self.position,
                self.block_size.as_u16()
            ))));
        }
        Ok(())
    }

    fn read_impl(&mut self, buf: &mut [u8]) -> cannyls::Result<usize> {
        self.check_len("read", buf.len())?;
        let available = self.capacity().saturating_sub(self.position);
        let len = (buf.len() as u64).min(available) as usize;
        if len == 0 {
            return Ok(0);
        }
        let offset = self.view_start + self.position;
        self.read_at(&mut buf[..len], offset)
            .map_err(|e| track!(from_minfs(e)))?;
        let shared = lock(&self.shared);
        // Held writes are newer than the media.
        for (at, held) in shared.held.iter().chain(&shared.header) {
            overlay(&mut buf[..len], offset, held, *at);
        }
        drop(shared);
        self.position += len as u64;
        Ok(len)
    }

    /// Reads file bytes `[offset, offset + buf.len())`: ring space past the journal's end is
    /// left alone while the storage opens (zeros: see `Shared::clip`), and a read that fails
    /// with an unreadable sector is served from the copy where it vouches for the bytes, which
    /// are then written back in place.
    fn read_at(&self, buf: &mut [u8], offset: u64) -> minfs::Result<()> {
        let shared = lock(&self.shared);
        let free: Vec<(u64, u64)> = shared
            .clip
            .iter()
            .flatten()
            .filter(|(a, b)| *a < offset + buf.len() as u64 && offset < *b)
            .copied()
            .collect();
        drop(shared);
        if !free.is_empty() {
            // Read the pieces outside the free ranges; zeros in them.
            let end = offset + buf.len() as u64;
            buf.fill(0);
            let mut at = offset;
            let mut ranges = free;
            ranges.sort_unstable();
            for (a, b) in ranges.into_iter().chain(std::iter::once((end, end))) {
                let a = a.max(offset).min(end);
                if a > at {
                    let (s, e) = ((at - offset) as usize, (a - offset) as usize);
                    self.read_direct(&mut buf[s..e], at)?;
                }
                at = at.max(b.min(end));
            }
            return Ok(());
        }
        self.read_direct(buf, offset)
    }

    fn read_direct(&self, buf: &mut [u8], offset: u64) -> minfs::Result<()> {
        match self.file.read_at(buf, offset) {
            Err(e) if recovery::is_unreadable(&e) => {
                let shared = lock(&self.shared);
                let served = match shared.copy.as_ref() {
                    Some(c) => {
                        c.serve(&self.file, offset, buf.len() as u64, shared.durable_head)?
                    }
                    None => None,
                };
                drop(shared);
                let Some(bytes) = served else {
                    return Err(e);
                };
                buf.copy_from_slice(&bytes);
                log::warn!(
                    "{}: file {:?}: {} bytes at {offset} unreadable ({e}); served from the copy \
                     and rewritten in place",
                    self.file.target(),
                    self.file.name(),
                    buf.len()
                );
                self.file.write_at(&bytes, offset)
            }
            other => other,
        }
    }

    fn write_impl(&mut self, buf: &[u8]) -> cannyls::Result<usize> {
        self.check_len("write", buf.len())?;
        let available = self.capacity().saturating_sub(self.position);
        if buf.len() as u64 > available {
            return Err(track!(invalid_input(format!(
                "write of {} bytes at position {}: past the capacity of {} bytes",
                buf.len(),
                self.position,
                self.capacity()
            ))));
        }
        if buf.is_empty() {
            return Ok(0);
        }
        let offset = self.view_start + self.position;
        self.ordered_write(buf, offset)
            .map_err(|e| track!(from_minfs(e)))?;
        self.position += buf.len() as u64;
        Ok(buf.len())
    }

    /// The range of this view within the file.
    fn range(&self) -> (u64, u64) {
        (self.view_start, self.view_end)
    }

    /// Writes `buf` at file offset `offset` in the order of "Write order" (crate docs): the
    /// first unit of a ring write that opens a journal epoch, and any journal header write, are
    /// held until the next sync of the ring.
    fn ordered_write(&self, buf: &[u8], offset: u64) -> minfs::Result<()> {
        let mut shared = lock(&self.shared);
        if let Some(unused) = &mut shared.unused {
            // Written to: the file is in use, keep it.
            unused.keep = true;
        }
        if offset == 0 && self.view_start == 0 {
            let header_only = shared
                .journal
                .is_some_and(|p| buf.len() as u64 <= p.header.0);
            if header_only {
                // Cannyls rewriting the storage header region (a 1.0 header upgraded to 1.1 at
                // open): the copy's too.
                let file = self.file.clone();
                if let Some(c) = shared.copy.as_mut() {
                    c.mark_dirty(&file)?;
                    c.mirror(&file, 0, buf)?;
                }
            } else {
                // A storage created here: its layout is learnt again, and its copy made, at
                // the split that follows.
                shared.created = true;
                shared.layout_read = false;
                shared.journal = None;
                shared.copy = None;
                shared.clip = None;
            }
            return self.file.write_at(buf, offset);
        }
        match shared.journal {
            Some(p) if p.ring == self.range() => {
                shared.clip = None;
                // Ring bytes the durable journal header still needs (between its head and the
                // head of a held header) must not be overwritten before that header is durable:
                // write up to them, commit, then the rest.
                let end = offset + buf.len() as u64;
                if let Some(x) = shared.released(&p).and_then(|r| first_in(offset, end, &r)) {
                    let x = self.block_size.floor_align(x).max(offset);
                    let n = (x - offset) as usize;
                    note_ring(&self.file, &mut shared, &p, &buf[..n], offset)?;
                    ring_write(&self.file, &mut shared, self.block_size, &buf[..n], offset)?;
                    commit(&self.file, &mut shared)?;
                    note_ring(&self.file, &mut shared, &p, &buf[n..], x)?;
                    return ring_write(&self.file, &mut shared, self.block_size, &buf[n..], x);
                }
                note_ring(&self.file, &mut shared, &p, buf, offset)?;
                ring_write(&self.file, &mut shared, self.block_size, buf, offset)
            }
            Some(p) if p.header == self.range() => {
                let mut held = AlignedBuf::zeroed(buf.len(), recovery::sector_align(&self.file));
                held.copy_from_slice(buf);
                shared.header = Some((offset, held));
                Ok(())
            }
            _ => self.file.write_at(buf, offset),
        }
    }
}

/// Tells the copy what the primary's ring holds now (file offset `offset`).
fn note_ring(
    file: &FileHandle,
    shared: &mut Shared,
    p: &JournalPlace,
    buf: &[u8],
    offset: u64,
) -> minfs::Result<()> {
    if let Some(c) = shared.copy.as_mut() {
        c.mark_dirty(file)?;
        c.note_ring_write(offset - p.ring.0, buf);
    }
    Ok(())
}

/// The ring ranges (file offsets) past the end of a journal the walk `info` read to its
/// `EndOfRecords` at `end`: free space, whose bytes Cannyls does not look at.
fn free_ring(layout: &recovery::Layout, info: &recovery::WalkInfo, end: u64) -> Vec<(u64, u64)> {
    let bs = u64::from(layout.block_size);
    let cap = layout.ring_size() / bs * bs;
    let live_end = (end + recovery::RECORD_HEAD).div_ceil(bs) * bs;
    let head = info.head / bs * bs;
    let ring = layout.ring_start();
    let mut free = Vec::new();
    match info.wrap {
        Some(w) => {
            let first_end = (w + recovery::RECORD_HEAD).div_ceil(bs) * bs;
            free.push((first_end, cap));
            free.push((live_end, head));
        }
        None if live_end > head || (live_end == head && end >= info.head) => {
            free.push((live_end, cap));
            free.push((0, head));
        }
        None => {}
    }
    free.into_iter()
        .filter(|(a, b)| a < b)
        .map(|(a, b)| (ring + a, ring + b))
        .collect()
}

/// A write to the ring: the first unit of an epoch's first write is held (see "Write order").
fn ring_write(
    file: &FileHandle,
    shared: &mut Shared,
    block_size: BlockSize,
    buf: &[u8],
    offset: u64,
) -> minfs::Result<()> {
    if buf.is_empty() {
        return Ok(());
    }
    let unit = u64::from(block_size.as_u16());
    let end = offset + buf.len() as u64;
    let (at, held) = shared.held.get_or_insert_with(|| {
        let mut held = AlignedBuf::zeroed(unit as usize, recovery::sector_align(file));
        held.copy_from_slice(&buf[..unit as usize]);
        (offset, held)
    });
    let (at, held_end) = (*at, *at + unit);
    overlay(held, at, buf, offset);
    // The parts outside the held unit go to the device now.
    if offset < at {
        let n = (at.min(end) - offset) as usize;
        file.write_at(&buf[..n], offset)?;
    }
    if end > held_end {
        let from = held_end.max(offset);
        file.write_at(&buf[(from - offset) as usize..], from)?;
    }
    Ok(())
}

/// The first offset of `[start, end)` inside one of `ranges`.
fn first_in(start: u64, end: u64, ranges: &[(u64, u64)]) -> Option<u64> {
    ranges
        .iter()
        .filter(|r| r.0 < end && start < r.1)
        .map(|r| r.0.max(start))
        .min()
}

impl Shared {
    /// File ranges of the ring between the durable journal header's head and a held header's
    /// head (space Cannyls has released, which a walk from the durable head still reads).
    fn released(&self, p: &JournalPlace) -> Option<Vec<(u64, u64)>> {
        let (_, held) = self.header.as_ref()?;
        let new = u64::from_be_bytes(held[..8].try_into().expect("8 bytes"));
        let (old, base, cap) = (self.durable_head, p.ring.0, p.ring.1 - p.ring.0);
        Some(if old <= new {
            vec![(base + old, base + new)]
        } else {
            vec![(base + old, base + cap), (base, base + new)]
        })
    }
}

/// Makes everything written durable, then the held ring unit, then a held journal header, each
/// durable before the next.
///
/// The copy ([`copy`]): when the head moves, the copy is first brought level with the
/// primary's committed journal and its journal header written in the batch of the primary's
/// (else it is given up until the next open); after the last flush, a catch-up when one is
/// due (written now, flushed by the next commit).
fn commit(file: &FileHandle, shared: &mut Shared) -> minfs::Result<()> {
    if let Some((at, held)) = shared.held.take() {
        file.flush()?;
        file.write_at(&held, at)?;
    }
    if let Some((at, header)) = shared.header.take() {
        file.flush()?;
        let head = u64::from_be_bytes(header[..8].try_into().expect("8 bytes"));
        if let Some(c) = shared.copy.as_mut().filter(|c| !c.is_lost()) {
            if c.level(file)? {
                c.write_head(file, &header, head)?;
            } else {
                c.give_up(
                    file,
                    "the head moved in the middle of a journal write, before the copy could \
                     follow the records to their end",
                )?;
            }
        }
        file.write_at(&header, at)?;
        shared.durable_head = head;
    }
    file.flush()?;
    if let Some(c) = shared.copy.as_mut() {
        c.unflushed = false;
        if c.due() {
            c.catch_up(file)?;
        }
    }
    Ok(())
}

/// Copies into `dst` (at file offset `dst_at`) the overlapping part of `src` (at `src_at`).
fn overlay(dst: &mut [u8], dst_at: u64, src: &[u8], src_at: u64) {
    let start = dst_at.max(src_at);
    let end = (dst_at + dst.len() as u64).min(src_at + src.len() as u64);
    if start < end {
        let (d, s, n) = (
            (start - dst_at) as usize,
            (start - src_at) as usize,
            (end - start) as usize,
        );
        dst[d..d + n].copy_from_slice(&src[s..s + n]);
    }
}

impl fmt::Debug for MinfsNvm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Not the FileHandle's Debug: it prints the whole filesystem state.
        f.debug_struct("MinfsNvm")
            .field("target", &self.file.target())
            .field("file", &self.file.name())
            .field("block_size", &self.block_size.as_u16())
            .field("view_start", &self.view_start)
            .field("view_end", &self.view_end)
            .field("position", &self.position)
            .finish()
    }
}

/// The block size recorded in the Cannyls storage header at the start of `file`, if it starts
/// with one (Cannyls' magic number and a header it parses).
fn recorded_block_size(file: &FileHandle) -> Result<Option<u16>> {
    let sector = file.sector_size() as usize;
    if (file.size() as usize) < sector || sector == 0 {
        return Ok(None);
    }
    let mut buf = minfs::AlignedBuf::zeroed(sector, sector);
    match file.read_at(&mut buf, 0) {
        Ok(()) => {}
        // Unreadable: the copy's, when the storage has one, written back at once (so that the
        // open that follows does not fail on it again: each failed read costs the drive's
        // error recovery time).
        Err(e) if recovery::is_unreadable(&e) => match copy::find(file).ok().flatten() {
            Some(t) if t.state == copy::CopyState::Valid => {
                let bs = usize::from(t.block_size);
                let mut region = minfs::AlignedBuf::zeroed(bs, sector);
                file.read_at(&mut region, t.image)?;
                if copy::header_uuid(&region) != t.uuid {
                    return Err(e.into());
                }
                buf.copy_from_slice(&region[..sector]);
                if file
                    .write_at(&region, 0)
                    .and_then(|()| file.flush())
                    .is_ok()
                {
                    log::warn!(
                        "{}: file {:?}: the storage header was unreadable ({e}); rewritten from \
                         the copy",
                        file.target(),
                        file.name()
                    );
                }
            }
            _ => return Err(e.into()),
        },
        Err(e) => return Err(e.into()),
    }
    Ok(StorageHeader::read_from(&buf[..])
        .ok()
        .map(|h| h.block_size.as_u16()))
}

/// `size` as a block size for `file`, or why not.
fn block_size_for(file: &FileHandle, size: u64) -> Result<BlockSize> {
    let sector = file.sector_size();
    let refused = || Error::InvalidBlockSize {
        target: file.target().to_string(),
        file: file.name().to_string(),
        block_size: size,
        sector_size: sector,
    };
    if sector == 0 || size % u64::from(sector) != 0 {
        return Err(refused());
    }
    let size16 = u16::try_from(size).map_err(|_| refused())?;
    BlockSize::new(size16).map_err(|_| refused())
}

impl NonVolatileMemory for MinfsNvm {
    /// Flushes the device: every write completed before is durable when this returns `Ok`.
    /// The journal header's view does nothing here: its write is held until the ring's next
    /// sync, which writes it after the ring (see "Write order" in the crate docs).
    fn sync(&mut self) -> cannyls::Result<()> {
        let mut shared = lock(&self.shared);
        if shared.journal.is_some_and(|p| p.header == self.range()) {
            return Ok(());
        }
        commit(&self.file, &mut shared).map_err(|e| track!(from_minfs(e)))
    }

    fn position(&self) -> u64 {
        self.position
    }

    fn capacity(&self) -> u64 {
        self.view_end - self.view_start
    }

    fn block_size(&self) -> BlockSize {
        self.block_size
    }

    /// Two views of the same file: `[0, position)` and `[position, capacity)`, each with its
    /// cursor at its start.
    fn split(self, position: u64) -> cannyls::Result<(MinfsNvm, MinfsNvm)> {
        if !self.block_size.is_aligned(position) || position > self.capacity() {
            return Err(track!(invalid_input(format!(
                "split at {position}: must be a multiple of the block size {} and at most the \
                 capacity of {} bytes",
                self.block_size.as_u16(),
                self.capacity()
            ))));
        }
        self.learn_layout().map_err(|e| track!(from_minfs(e)))?;
        let middle = self.view_start + position;
        let left = MinfsNvm {
            file: self.file.clone(),
            block_size: self.block_size,
            view_start: self.view_start,
            view_end: middle,
            position: 0,
            shared: self.shared.clone(),
            recovery: self.recovery.clone(),
            opened: self.opened.clone(),
        };
        let right = MinfsNvm {
            view_start: middle,
            position: 0,
            ..self
        };
        Ok((left, right))
    }

    /// Like the provided method, without its arithmetic overflow on huge offsets, and refusing
    /// any target past the capacity.
    fn convert_to_offset(&self, pos: SeekFrom) -> cannyls::Result<u64> {
        let (base, delta) = match pos {
            SeekFrom::Start(offset) => (offset, 0),
            SeekFrom::End(delta) => (self.capacity(), delta),
            SeekFrom::Current(delta) => (self.position, delta),
        };
        let target = base.checked_add_signed(delta).ok_or_else(|| {
            track!(invalid_input(format!(
                "seek {pos:?}: before the start or beyond any offset"
            )))
        })?;
        if target > self.capacity() {
            return Err(track!(invalid_input(format!(
                "seek {pos:?}: offset {target} is past the capacity of {} bytes",
                self.capacity()
            ))));
        }
        Ok(target)
    }
}

impl Seek for MinfsNvm {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        let position = self.convert_to_offset(pos)?;
        self.seek_impl(position)?;
        Ok(position)
    }
}

impl Read for MinfsNvm {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        Ok(self.read_impl(buf)?)
    }
}

impl Write for MinfsNvm {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        Ok(self.write_impl(buf)?)
    }

    /// Nothing is buffered, so nothing to do; [`NonVolatileMemory::sync`] makes writes durable.
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_is_send() {
        fn is_send<T: Send + 'static>() {}
        is_send::<MinfsNvm>();
    }

    #[test]
    fn errors_convert_with_their_kind() {
        let e = Error::InvalidBlockSize {
            target: "t".into(),
            file: "f".into(),
            block_size: 512,
            sector_size: 4096,
        };
        let msg = e.to_string();
        assert!(msg.contains("block size 512"), "{msg}");
        assert_eq!(*cannyls::Error::from(e).kind(), ErrorKind::InvalidInput);

        let e = Error::Minfs(minfs::Error::Locked {
            target: "t".into(),
            holder: minfs::LockHolder::Unknown,
        });
        let io = io::Error::from(e);
        assert_eq!(io.kind(), io::ErrorKind::Other);
        assert_eq!(*cannyls::Error::from(io).kind(), ErrorKind::Other);

        let e = Error::Minfs(minfs::Error::Unaligned {
            target: "t".into(),
            what: "offset",
            value: 1,
            align: 512,
        });
        let io = io::Error::from(e);
        assert_eq!(io.kind(), io::ErrorKind::InvalidInput);
        assert_eq!(*cannyls::Error::from(io).kind(), ErrorKind::InvalidInput);
    }
}
