//! [`FileHandle`]: positional I/O on one minfs file, straight between the caller's buffer and
//! the device.

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::format::Extent;
use crate::fs::{Inner, Node};

/// An open minfs file. Cheap to clone (clones share the file); `Send + Sync`.
///
/// I/O is positional and unbuffered: offsets, lengths and buffer addresses are multiples of
/// the device's logical sector size ([`FileHandle::sector_size`]); each physically contiguous
/// piece of a request is one `pread`/`pwrite` on the O_DIRECT descriptor, from the caller's
/// buffer, with no copy. The addressable range is the file's size rounded up to a sector.
/// After a failed write or flush, every handle of the filesystem refuses further I/O.
#[derive(Clone)]
pub struct FileHandle {
    inner: Arc<Inner>,
    node: Arc<Node>,
}

impl std::fmt::Debug for FileHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileHandle")
            .field("target", &self.inner.target)
            .field("name", &self.node.name)
            .field("size", &self.size())
            .finish()
    }
}

impl FileHandle {
    pub(crate) fn new(inner: Arc<Inner>, node: Arc<Node>) -> FileHandle {
        FileHandle { inner, node }
    }

    /// The file's name.
    pub fn name(&self) -> &str {
        &self.node.name
    }

    /// The file's size in bytes (grows when the file is grown through any handle).
    pub fn size(&self) -> u64 {
        self.node
            .meta
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .size
    }

    /// The file's extents.
    pub fn extents(&self) -> Vec<Extent> {
        self.node
            .meta
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .extents
            .clone()
    }

    /// The I/O granularity: the device's logical sector size.
    pub fn sector_size(&self) -> u32 {
        self.inner.dev.logical_sector_size()
    }

    /// The device's physical sector size.
    pub fn physical_sector_size(&self) -> u32 {
        self.inner.dev.physical_sector_size()
    }

    /// The filesystem the file is in (e.g. to grow the file: [`crate::Filesystem::grow`]).
    pub fn filesystem(&self) -> crate::Filesystem {
        crate::Filesystem {
            inner: self.inner.clone(),
        }
    }

    /// The target's name.
    pub fn target(&self) -> &str {
        &self.inner.target
    }

    /// Reads exactly `buf.len()` bytes at `offset`.
    pub fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        self.inner.check_usable()?;
        let (ptr, len) = (buf.as_ptr(), buf.len());
        let name = &self.node.name;
        let mut at = 0usize;
        self.for_each_piece(ptr, len, offset, |dev_off, n| {
            self.inner.read(
                &mut buf[at..at + n],
                dev_off,
                &format_args!("reading {name:?}"),
            )?;
            at += n;
            Ok(())
        })
    }

    /// Writes all of `buf` at `offset`. Durable after [`FileHandle::flush`].
    pub fn write_at(&self, buf: &[u8], offset: u64) -> Result<()> {
        self.inner.check_usable()?;
        if self.inner.dev.is_read_only() {
            return Err(Error::ReadOnly {
                target: self.inner.target.clone(),
            });
        }
        let name = &self.node.name;
        let mut at = 0usize;
        self.for_each_piece(buf.as_ptr(), buf.len(), offset, |dev_off, n| {
            self.inner
                .write(&buf[at..at + n], dev_off, &format_args!("writing {name:?}"))?;
            at += n;
            Ok(())
        })
    }

    /// Makes every completed write durable (a device flush; no metadata is written).
    pub fn flush(&self) -> Result<()> {
        self.inner.flush()
    }

    /// Checks a request, then calls `io(device offset, length)` for each physically
    /// contiguous piece in order. The extent map is read-locked meanwhile (a concurrent grow
    /// waits; extents never move, so this is only for a consistent view), and nothing is
    /// allocated on this path.
    fn for_each_piece(
        &self,
        ptr: *const u8,
        len: usize,
        offset: u64,
        mut io: impl FnMut(u64, usize) -> Result<()>,
    ) -> Result<()> {
        let lss = u64::from(self.sector_size());
        let unaligned = |what, value: u64| Error::Unaligned {
            target: self.inner.target.clone(),
            what,
            value,
            align: lss,
        };
        if offset % lss != 0 {
            return Err(unaligned("offset", offset));
        }
        if len as u64 % lss != 0 {
            return Err(unaligned("length", len as u64));
        }
        if ptr as usize as u64 % lss != 0 {
            return Err(unaligned("buffer address", ptr as usize as u64));
        }
        let meta = self.node.meta.read().unwrap_or_else(|e| e.into_inner());
        let limit = meta.size.div_ceil(lss) * lss;
        if offset.checked_add(len as u64).is_none_or(|end| end > limit) {
            return Err(Error::OutOfRange {
                target: self.inner.target.clone(),
                name: self.node.name.clone(),
                offset,
                len: len as u64,
                limit,
            });
        }
        let mut pos = offset;
        let end = offset + len as u64;
        let mut ext_file_start = 0u64;
        for e in &meta.extents {
            if pos >= end {
                break;
            }
            let ext_file_end = ext_file_start + e.byte_len();
            if pos < ext_file_end {
                let take = ext_file_end.min(end) - pos;
                io(e.byte_offset() + (pos - ext_file_start), take as usize)?;
                pos += take;
            }
            ext_file_start = ext_file_end;
        }
        debug_assert_eq!(pos, end, "extents cover the size");
        Ok(())
    }
}
