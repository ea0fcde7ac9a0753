//! The one narrow interface between minfs and storage.
//!
//! # Contract of [`BlockDevice`]
//! - `read_at` / `write_at` transfer the **whole** buffer or fail; there are no short
//!   transfers. Offsets and lengths are multiples of [`BlockDevice::logical_sector_size`] and
//!   buffers start at an address aligned to it (what O_DIRECT needs); an implementation
//!   rejects anything else with [`std::io::ErrorKind::InvalidInput`] and does no I/O.
//! - `offset + len` must not exceed [`BlockDevice::len`]; otherwise `InvalidInput`.
//! - A completed `write_at` is visible to later reads, but it is **durable only after a later
//!   `flush` returns `Ok`**. Until then a power cut may lose it, keep it, or (for a write of
//!   several logical sectors) keep any subset of its sectors. A single logical sector is written
//!   atomically.
//! - After a failed `write_at` the content of the range is unspecified; after a failed `flush`
//!   nothing written since the last successful flush is known to be durable. Callers do not
//!   retry (minfs poisons the handle instead).
//! - Implementations are `Send + Sync`; concurrent calls on disjoint ranges are allowed.
//! - A read that touches a sector the media cannot return (a latent sector error, a drive's
//!   "unrecovered read error") fails with `EIO`: a real device's error carries
//!   `raw_os_error() == Some(EIO)`, the test devices' ([`fault`]) an
//!   [`fault::UnreadableSector`] naming the sector; [`is_media_error`] tells either apart from
//!   other failures. Such a read changes nothing; a later write that covers the sector whole
//!   makes it readable again (the drive rewrites or reallocates it).

use std::fmt::Debug;
use std::io;

pub mod fault;
mod file;
mod holder;
mod memory;
mod sparse;

pub use fault::FaultDevice;
// The FUSE server opens its target as `FileDevice::open` does.
#[cfg(feature = "fuse")]
pub(crate) use file::open_exclusive;
pub use file::{FileDevice, OpenMode, TargetKind, EXCLUSIVE_OPEN_WAIT};
pub use holder::{lock_holder, LockHolder};
pub use memory::MemDevice;
pub use sparse::SparseMemDevice;

/// A byte-addressed store with sector-granular, O_DIRECT-style I/O. See the module docs for the
/// contract.
pub trait BlockDevice: Send + Sync + Debug {
    /// Reads exactly `buf.len()` bytes at `offset`.
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;
    /// Writes all of `buf` at `offset`.
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()>;
    /// Makes every completed write durable (a device cache flush).
    fn flush(&self) -> io::Result<()>;
    /// Size in bytes.
    fn len(&self) -> u64;
    /// True when the device has no bytes.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The I/O granularity: offsets, lengths and buffer addresses are multiples of it.
    fn logical_sector_size(&self) -> u32;
    /// The size of the unit the media writes atomically (4096 on a 512e disk).
    fn physical_sector_size(&self) -> u32;
    /// Whether writes are refused.
    fn is_read_only(&self) -> bool;
}

/// Whether `e` is a read's media error (`EIO`, see the module docs): a sector the device
/// cannot read, as opposed to a refused request or a device that went away.
pub fn is_media_error(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::EIO)
        || e.get_ref()
            .is_some_and(|inner| inner.is::<fault::UnreadableSector>())
}

/// Checks a request against the contract; shared by the implementations.
pub(crate) fn check_request(
    dev: &dyn BlockDevice,
    ptr: *const u8,
    len: usize,
    offset: u64,
) -> io::Result<()> {
    let lss = u64::from(dev.logical_sector_size());
    let len64 = len as u64;
    if offset % lss != 0 || len64 % lss != 0 || (ptr as usize as u64) % lss != 0 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "request of {len} bytes at offset {offset} (buffer address {ptr:p}) is not aligned to the {lss}-byte logical sector"
            ),
        ));
    }
    match offset.checked_add(len64) {
        Some(end) if end <= dev.len() => Ok(()),
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "request of {len} bytes at offset {offset} goes past the end of the device ({} bytes)",
                dev.len()
            ),
        )),
    }
}
