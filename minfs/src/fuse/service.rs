//! Files served by something else than their plain bytes: the hook through which a program
//! built on minfs (`minfs-cannyls mount`) serves some files of a mount itself — e.g. a Cannyls
//! storage whose header and journal it keeps twice.
//!
//! The contract, for [`MinfsFuse`](super::MinfsFuse):
//! - [`Services::open`] is asked at a file's first open (no other handle of it open); a
//!   [`FileService`] it returns serves every read, write and `fsync` of the file's bytes
//!   `[0, FileService::end())` until the file's last handle is released, which calls
//!   [`FileService::close`]. Bytes at and past `end` are read plainly and refused to writes
//!   (`EPERM`): they are the service's own.
//! - [`Services::first_write`] is asked at a write at offset 0 to a file of size 0 that no
//!   service serves (a file just created); a service it returns serves that write and all
//!   later ones as above.
//! - Reads and writes reach a service in whole [`FileService::block`]s (the server reads the
//!   blocks a request covers, and merges a partial one before a write); the server stays
//!   single-threaded, so a service is never called twice at once.
//! - A service's failed write or sync poisons it: every later request of the file fails with
//!   `EIO` until its last handle is closed.
//! - Errors are `io::Error`s; their `raw_os_error` becomes the request's errno (else `EIO`).

use std::io;

use crate::{FileHandle, Filesystem};

/// One file's bytes, served while the file is open.
pub trait FileService: Send {
    /// The bytes served are `[0, end)`.
    fn end(&self) -> u64;
    /// The unit of reads and writes: offsets and lengths are multiples of it.
    fn block(&self) -> u64;
    /// Reads `buf.len()` bytes at `offset`.
    fn read_at(&mut self, buf: &mut [u8], offset: u64) -> io::Result<()>;
    /// Writes `data` at `offset`.
    fn write_at(&mut self, data: &[u8], offset: u64) -> io::Result<()>;
    /// Makes every write before it durable (`fsync`).
    fn sync(&mut self) -> io::Result<()>;
    /// The file's last handle was released: whatever the service holds is made durable.
    fn close(self: Box<Self>) -> io::Result<()>;
}

/// Decides which files a mount serves through a [`FileService`].
pub trait Services: Send {
    /// A name for log lines, e.g. "cannyls".
    fn name(&self) -> &str;
    /// `file` is opened and no handle of it was open: `Some` to serve it.
    fn open(
        &mut self,
        fs: &Filesystem,
        file: &FileHandle,
    ) -> io::Result<Option<Box<dyn FileService>>>;
    /// `data` is written at offset 0 of `file`, of size 0 and served by none: `Some` to serve
    /// it from this write on (the write is then given to the service).
    fn first_write(
        &mut self,
        fs: &Filesystem,
        file: &FileHandle,
        data: &[u8],
    ) -> io::Result<Option<Box<dyn FileService>>>;
}
