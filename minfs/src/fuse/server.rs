//! [`MinfsFuse`]: the FUSE request handlers over one open [`Filesystem`].
//!
//! One directory (the root, inode 1) holding the minfs files. Inode numbers are handed out on
//! first sight of a name and stay fixed while the file exists. Every request is served on the
//! session's one thread, in order, so a read-modify-write never races another write.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fuser::consts::FOPEN_DIRECT_IO;
use fuser::{
    FileAttr, FileType, KernelConfig, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory,
    ReplyEmpty, ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite, Request, TimeOrNow, FUSE_ROOT_ID,
};
use libc::c_int;

use super::errno::{errno, poisons};
use super::service::{FileService, Services};
use crate::format::{BLOCK_SIZE, MAX_FILES, MAX_NAME_LEN};
use crate::{AlignedBuf, Error, FileHandle, FileStat, Filesystem};

/// How long the kernel may cache attributes and names. Only this server changes the files
/// (the target is held exclusively), and it answers every change with fresh attributes.
const TTL: Duration = Duration::from_secs(1);
const ROOT: u64 = FUSE_ROOT_ID;
/// Size of the I/O buffer kept between requests (it grows to the largest request served; a
/// request is at most [`super::MAX_REQUEST_BYTES`]). 2 MiB, so that the `minfs` binary's
/// allocator ([`crate::HugeAlloc`]) backs it with a huge page: a request's data then reaches
/// the device in one segment, and the kernel pins it as one folio.
const BUF_SIZE: usize = crate::sys::HUGE_ALLOC_MIN;

#[derive(Debug)]
struct Node {
    name: String,
    atime: SystemTime,
    mtime: SystemTime,
    ctime: SystemTime,
}

#[derive(Debug)]
struct Open {
    file: FileHandle,
}

/// Counts of the requests served, written by `minfs mount --stats FILE` at unmount.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct RequestStats {
    /// `max_pages` the server asked for in its reply to the kernel's INIT.
    pub max_pages_asked: u32,
    pub read_requests: u64,
    /// Bytes asked for by the largest read request.
    pub largest_read: u64,
    pub write_requests: u64,
    pub largest_write: u64,
    /// Commits made to record sizes grown by writing (at fsync, last close, unmount).
    pub size_commits: u64,
}

type Reply<T> = std::result::Result<T, c_int>;

/// What a `setattr` asks to change.
struct AttrChange {
    mode: Option<u32>,
    uid: Option<u32>,
    gid: Option<u32>,
    size: Option<u64>,
    atime: Option<TimeOrNow>,
    mtime: Option<TimeOrNow>,
}

/// The FUSE server's state: the filesystem, the inode numbers and open files handed to the
/// kernel, a reusable aligned buffer, and whether the filesystem is poisoned.
#[derive(Debug)]
pub struct MinfsFuse {
    fs: Filesystem,
    read_only: bool,
    uid: u32,
    gid: u32,
    /// The time of the last commit before mounting: every file's times start there.
    base_time: SystemTime,
    nodes: HashMap<u64, Node>,
    by_name: HashMap<String, u64>,
    next_ino: u64,
    opens: HashMap<u64, Open>,
    next_fh: u64,
    buf: AlignedBuf,
    sector: u64,
    /// Written to since the last device flush.
    dirty: bool,
    /// A write, flush or commit failed: everything is refused with EIO from then on.
    poisoned: bool,
    stats: RequestStats,
    /// Where `stats` is written at unmount.
    stats_path: Option<std::path::PathBuf>,
    /// The files served by a [`FileService`], and what decides which.
    served: ServedFiles,
}

/// The [`Services`] of a mount, if any, and the files they serve now (by name).
#[derive(Default)]
struct ServedFiles {
    services: Option<Box<dyn Services>>,
    files: HashMap<String, ServedFile>,
}

struct ServedFile {
    service: Box<dyn FileService>,
    /// A write or sync failed: every request of the file answers EIO until its last close.
    poisoned: bool,
}

impl std::fmt::Debug for ServedFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServedFiles")
            .field(
                "services",
                &self.services.as_ref().map(|s| s.name().to_string()),
            )
            .field("files", &self.files.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// The errno of a service's error.
fn io_errno(e: &std::io::Error) -> c_int {
    e.raw_os_error().unwrap_or(libc::EIO)
}

/// The whole units (logical sectors of the device, or a file service's blocks) covering the
/// bytes `[offset, end)`: they start at `a0` and take `n` bytes.
#[derive(Clone, Copy)]
struct Span {
    offset: u64,
    end: u64,
    unit: u64,
    a0: u64,
    n: usize,
}

impl Span {
    fn new(offset: u64, end: u64, unit: u64) -> Span {
        let a0 = offset / unit * unit;
        Span {
            offset,
            end,
            unit,
            a0,
            n: (end.div_ceil(unit) * unit - a0) as usize,
        }
    }

    /// Where the requested bytes lie in a buffer holding the units.
    fn range(&self) -> std::ops::Range<usize> {
        (self.offset - self.a0) as usize..(self.end - self.a0) as usize
    }

    /// Puts `data` (the bytes of `[offset, end)`) into `buf` (the units), reading a partially
    /// covered first or last unit with `read` first (a read-modify-write); `buf` is then the
    /// units to write at `a0`.
    fn merge<E>(
        &self,
        buf: &mut [u8],
        data: &[u8],
        mut read: impl FnMut(&mut [u8], u64) -> Result<(), E>,
    ) -> Result<(), E> {
        let (n, u) = (self.n, self.unit as usize);
        let head = self.a0 < self.offset;
        if head {
            read(&mut buf[..u], self.a0)?;
        }
        let a1 = self.a0 + n as u64;
        if a1 > self.end && !(head && n == u) {
            read(&mut buf[n - u..], a1 - self.unit)?;
        }
        buf[self.range()].copy_from_slice(data);
        Ok(())
    }
}

impl MinfsFuse {
    /// A server for `fs`; `read_only` refuses every change with `EROFS`.
    pub fn new(fs: Filesystem, read_only: bool) -> MinfsFuse {
        let updated = fs.superblock().updated;
        let sector = u64::from(fs.device().logical_sector_size());
        MinfsFuse {
            fs,
            read_only,
            uid: nix::unistd::getuid().as_raw(),
            gid: nix::unistd::getgid().as_raw(),
            base_time: UNIX_EPOCH + Duration::from_secs(updated),
            nodes: HashMap::new(),
            by_name: HashMap::new(),
            next_ino: ROOT + 1,
            opens: HashMap::new(),
            next_fh: 1,
            buf: AlignedBuf::zeroed(BUF_SIZE, 4096),
            sector,
            dirty: false,
            poisoned: false,
            stats: RequestStats::default(),
            stats_path: None,
            served: ServedFiles::default(),
        }
    }

    /// Serves the files `services` takes through their [`FileService`]s
    /// ([`super::service`]).
    pub fn with_services(mut self, services: Option<Box<dyn Services>>) -> MinfsFuse {
        self.served.services = services;
        self
    }

    /// At a file's open: asks the services whether to serve it, when no handle of it is open.
    fn serve_on_open(&mut self, file: &FileHandle) {
        let name = file.name();
        if self.read_only
            || self.served.files.contains_key(name)
            || self.opens.values().any(|o| o.file.name() == name)
        {
            return;
        }
        let Some(services) = self.served.services.as_mut() else {
            return;
        };
        let asked = services.open(&self.fs, file);
        self.adopt(name, asked, "served");
    }

    /// What the services answered for file `name`: a service from now on, none, or (an
    /// error) the file served plainly — what it holds is for its reader to judge — with a
    /// warning saying so (`plainly`: "served", "written").
    fn adopt(
        &mut self,
        name: &str,
        asked: std::io::Result<Option<Box<dyn FileService>>>,
        plainly: &str,
    ) {
        match asked {
            Ok(Some(service)) => {
                self.served.files.insert(
                    name.to_string(),
                    ServedFile {
                        service,
                        poisoned: false,
                    },
                );
            }
            Ok(None) => {}
            Err(e) => log::warn!(
                "{}: file {name:?}: {} cannot serve it ({e}); {plainly} plainly",
                self.fs.target(),
                self.served.services.as_ref().map_or("", |s| s.name())
            ),
        }
    }

    /// A write at offset 0 of a file no service serves: when it is empty, asks the services
    /// whether to serve it from this write on.
    fn serve_on_first_write(&mut self, file: &FileHandle, data: &[u8]) {
        if self.read_only || file.size() != 0 {
            return;
        }
        let Some(services) = self.served.services.as_mut() else {
            return;
        };
        let asked = services.first_write(&self.fs, file, data);
        self.adopt(file.name(), asked, "written");
    }

    /// A served file's read: the blocks covering `[offset, offset + size)` (within the
    /// service's bytes) into the buffer; returns the range of the buffer holding the request.
    fn served_read(&mut self, name: &str, offset: u64, size: u32) -> Reply<(usize, usize)> {
        let f = self.served.files.get_mut(name).ok_or(libc::EBADF)?;
        if f.poisoned {
            return Err(libc::EIO);
        }
        let end = f.service.end().min(offset.saturating_add(u64::from(size)));
        if offset >= end {
            return Ok((0, 0));
        }
        let span = Span::new(offset, end, f.service.block());
        self.ensure_buf(span.n);
        let f = self.served.files.get_mut(name).ok_or(libc::EBADF)?;
        f.service
            .read_at(&mut self.buf[..span.n], span.a0)
            .map_err(|e| io_errno(&e))?;
        let r = span.range();
        Ok((r.start, r.end))
    }

    /// A served file's write, whole blocks (a partial first or last block read and merged
    /// first); a write past the service's bytes is refused.
    fn served_write(&mut self, name: &str, offset: u64, data: &[u8]) -> Reply<()> {
        let f = self.served.files.get_mut(name).ok_or(libc::EBADF)?;
        if f.poisoned {
            return Err(libc::EIO);
        }
        let end = offset + data.len() as u64;
        if end > f.service.end() {
            return Err(libc::EPERM);
        }
        let span = Span::new(offset, end, f.service.block());
        self.ensure_buf(span.n);
        let f = self.served.files.get_mut(name).ok_or(libc::EBADF)?;
        let buf = &mut self.buf[..span.n];
        let r = span
            .merge(buf, data, |b, at| f.service.read_at(b, at))
            .and_then(|()| f.service.write_at(buf, span.a0));
        r.map_err(|e| {
            f.poisoned = true;
            io_errno(&e)
        })
    }

    /// Writes the request counts as JSON to `path` at unmount.
    pub fn with_stats(mut self, path: Option<std::path::PathBuf>) -> MinfsFuse {
        self.stats_path = path;
        self
    }

    /// Commits the size of `name` when writes grew it (one commit, which flushes the device
    /// first); else flushes the device (`fsync`), or (`!always`, a close) only when anything
    /// was written since the last flush.
    fn sync_file(&mut self, name: &str, always: bool) -> Reply<()> {
        self.check()?;
        if self.read_only {
            return Ok(());
        }
        match self.fs.sync_size(name) {
            Ok(true) => {
                self.stats.size_commits += 1;
                self.dirty = false;
                Ok(())
            }
            Ok(false) if always || self.dirty => self.device_flush(),
            Ok(false) => Ok(()),
            Err(e) => Err(self.failed_change(&e)),
        }
    }

    /// Every grown size committed (one commit at most), preallocation given back, the device
    /// flushed: what unmounting does.
    fn settle(&mut self) -> Reply<()> {
        self.check()?;
        if self.read_only {
            return Ok(());
        }
        match self.fs.sync_all_sizes() {
            Ok(true) => {
                self.stats.size_commits += 1;
                self.dirty = false;
            }
            Ok(false) => {}
            Err(e) => return Err(self.failed_change(&e)),
        }
        self.fs
            .trim_all_preallocation()
            .map_err(|e| self.failed_change(&e))?;
        if self.dirty {
            self.device_flush()?;
        }
        Ok(())
    }

    fn check(&self) -> Reply<()> {
        if self.poisoned {
            Err(libc::EIO)
        } else {
            Ok(())
        }
    }

    fn check_writable(&self) -> Reply<()> {
        self.check()?;
        if self.read_only {
            Err(libc::EROFS)
        } else {
            Ok(())
        }
    }

    /// The errno of a failed change; an I/O failure poisons the server.
    fn failed_change(&mut self, e: &Error) -> c_int {
        if poisons(e) {
            self.poisoned = true;
        }
        errno(e)
    }

    fn ino_for(&mut self, name: &str) -> u64 {
        if let Some(&ino) = self.by_name.get(name) {
            return ino;
        }
        let ino = self.next_ino;
        self.next_ino += 1;
        let t = self.base_time;
        self.nodes.insert(
            ino,
            Node {
                name: name.to_string(),
                atime: t,
                mtime: t,
                ctime: t,
            },
        );
        self.by_name.insert(name.to_string(), ino);
        ino
    }

    fn forget_name(&mut self, name: &str) {
        if let Some(ino) = self.by_name.remove(name) {
            self.nodes.remove(&ino);
        }
    }

    fn name_of(&self, ino: u64) -> Reply<String> {
        self.nodes
            .get(&ino)
            .map(|n| n.name.clone())
            .ok_or(libc::ENOENT)
    }

    fn touch(&mut self, ino: u64) {
        if let Some(n) = self.nodes.get_mut(&ino) {
            let now = SystemTime::now();
            n.mtime = now;
            n.ctime = now;
        }
    }

    fn file_attr(&self, ino: u64, st: &FileStat) -> FileAttr {
        let node = self.nodes.get(&ino);
        let t = self.base_time;
        FileAttr {
            ino,
            size: st.size,
            blocks: st.allocated / 512,
            atime: node.map_or(t, |n| n.atime),
            mtime: node.map_or(t, |n| n.mtime),
            ctime: node.map_or(t, |n| n.ctime),
            crtime: t,
            kind: FileType::RegularFile,
            perm: 0o644,
            nlink: 1,
            uid: self.uid,
            gid: self.gid,
            rdev: 0,
            blksize: BLOCK_SIZE as u32,
            flags: 0,
        }
    }

    fn root_attr(&self) -> FileAttr {
        let t = self.base_time;
        FileAttr {
            ino: ROOT,
            size: 0,
            blocks: 0,
            atime: t,
            mtime: t,
            ctime: t,
            crtime: t,
            kind: FileType::Directory,
            perm: 0o755,
            nlink: 2,
            uid: self.uid,
            gid: self.gid,
            rdev: 0,
            blksize: BLOCK_SIZE as u32,
            flags: 0,
        }
    }

    /// The attributes of the file `ino`, freshly from the filesystem.
    fn attr_of(&self, ino: u64) -> Reply<FileAttr> {
        let name = self.name_of(ino)?;
        let st = self.fs.stat(&name).map_err(|e| errno(&e))?;
        Ok(self.file_attr(ino, &st))
    }

    /// A name in the root directory, as minfs takes it.
    fn child_name(parent: u64, name: &OsStr) -> Reply<&str> {
        if parent != ROOT {
            return Err(libc::ENOTDIR);
        }
        let name = name.to_str().ok_or(libc::EINVAL)?;
        if name.len() > MAX_NAME_LEN {
            return Err(libc::ENAMETOOLONG);
        }
        Ok(name)
    }

    fn new_fh(&mut self, file: FileHandle) -> u64 {
        let fh = self.next_fh;
        self.next_fh += 1;
        self.opens.insert(fh, Open { file });
        fh
    }

    fn open_file(&self, fh: u64) -> Reply<FileHandle> {
        self.opens
            .get(&fh)
            .map(|o| o.file.clone())
            .ok_or(libc::EBADF)
    }

    /// Creates an empty file and returns its inode and attributes.
    fn create_file(&mut self, parent: u64, name: &OsStr, mode: u32) -> Reply<(u64, FileAttr)> {
        self.check_writable()?;
        let name = Self::child_name(parent, name)?;
        let kind = mode & libc::S_IFMT;
        if kind != 0 && kind != libc::S_IFREG {
            // Only regular files: no device nodes, fifos or sockets.
            return Err(libc::EPERM);
        }
        let st = self
            .fs
            .create(name, 0)
            .map_err(|e| self.failed_change(&e))?;
        let ino = self.ino_for(name);
        self.touch(ino);
        Ok((ino, self.file_attr(ino, &st)))
    }

    fn ensure_buf(&mut self, n: usize) {
        if self.buf.len() < n {
            self.buf = AlignedBuf::zeroed(n.next_power_of_two(), 4096);
        }
    }

    /// Reads up to `size` bytes at `offset` (fewer at the end of the file) into the buffer,
    /// reading the covering logical sectors; returns the range of the buffer holding them.
    fn read_bytes(
        &mut self,
        file: &FileHandle,
        offset: u64,
        size: u32,
    ) -> Result<(usize, usize), Error> {
        let file_size = file.size();
        if offset >= file_size || size == 0 {
            return Ok((0, 0));
        }
        let end = file_size.min(offset + u64::from(size));
        let span = Span::new(offset, end, self.sector);
        self.ensure_buf(span.n);
        file.read_at(&mut self.buf[..span.n], span.a0)?;
        let r = span.range();
        Ok((r.start, r.end))
    }

    /// Writes `data` at `offset`, growing the file first when it ends past the file's size.
    /// Whole logical sectors go to the device; a partial first or last sector is read and
    /// merged first (read-modify-write).
    fn write_bytes(&mut self, file: &FileHandle, offset: u64, data: &[u8]) -> Result<(), Error> {
        let end = offset + data.len() as u64;
        if end > file.size() {
            // In memory, allocating ahead: the size is committed at fsync, last close or
            // unmount, not per write.
            self.fs.extend_unsynced(file.name(), end)?;
        }
        let span = Span::new(offset, end, self.sector);
        self.ensure_buf(span.n);
        let buf = &mut self.buf[..span.n];
        span.merge(buf, data, |b, at| file.read_at(b, at))?;
        self.dirty = true;
        file.write_at(buf, span.a0)
    }

    fn device_flush(&mut self) -> Reply<()> {
        self.check()?;
        if self.read_only {
            return Ok(());
        }
        self.fs.flush().map_err(|e| self.failed_change(&e))?;
        self.dirty = false;
        Ok(())
    }

    fn setattr_inner(&mut self, ino: u64, c: AttrChange) -> Reply<FileAttr> {
        let AttrChange {
            mode,
            uid,
            gid,
            size,
            atime,
            mtime,
        } = c;
        if ino == ROOT {
            return if size.is_some() {
                Err(libc::EISDIR)
            } else if mode.is_some_and(|m| m & 0o7777 != 0o755)
                || uid.is_some_and(|u| u != self.uid)
                || gid.is_some_and(|g| g != self.gid)
            {
                Err(libc::EPERM)
            } else {
                Ok(self.root_attr())
            };
        }
        self.check()?;
        let name = self.name_of(ino)?;
        // minfs keeps no owner or mode: only the ones it reports are accepted.
        if mode.is_some_and(|m| m & 0o7777 != 0o644)
            || uid.is_some_and(|u| u != self.uid)
            || gid.is_some_and(|g| g != self.gid)
        {
            return Err(libc::EPERM);
        }
        if let Some(size) = size {
            self.check_writable()?;
            if self.served.files.contains_key(&name) {
                // Its service owns the file's size while it is open.
                return Err(libc::EBUSY);
            }
            self.fs
                .set_size(&name, size)
                .map_err(|e| self.failed_change(&e))?;
            self.touch(ino);
        }
        let resolve = |t: TimeOrNow| match t {
            TimeOrNow::SpecificTime(t) => t,
            TimeOrNow::Now => SystemTime::now(),
        };
        if let Some(n) = self.nodes.get_mut(&ino) {
            if let Some(t) = atime {
                n.atime = resolve(t);
            }
            if let Some(t) = mtime {
                n.mtime = resolve(t);
            }
        }
        self.attr_of(ino)
    }

    fn fallocate_inner(&mut self, ino: u64, offset: i64, length: i64, mode: i32) -> Reply<()> {
        self.check_writable()?;
        let name = self.name_of(ino)?;
        let (Ok(offset), Ok(length)) = (u64::try_from(offset), u64::try_from(length)) else {
            return Err(libc::EINVAL);
        };
        if length == 0 {
            return Err(libc::EINVAL);
        }
        let end = offset.checked_add(length).ok_or(libc::EFBIG)?;
        if self.served.files.contains_key(&name) {
            return Err(libc::EBUSY);
        }
        let size = self.fs.stat(&name).map_err(|e| errno(&e))?.size;
        match mode {
            // Allocate and extend: minfs allocates exactly the blocks of a file's size.
            0 => {
                if end > size {
                    self.fs
                        .grow(&name, end)
                        .map_err(|e| self.failed_change(&e))?;
                    self.touch(ino);
                }
                Ok(())
            }
            // Inside the file everything is allocated already; past its size minfs cannot
            // hold blocks without the size.
            libc::FALLOC_FL_KEEP_SIZE if end <= size => Ok(()),
            _ => Err(libc::EOPNOTSUPP),
        }
    }
}

impl fuser::Filesystem for MinfsFuse {
    fn init(&mut self, _req: &Request<'_>, config: &mut KernelConfig) -> Result<(), c_int> {
        // fuser asks for max_pages = max(max_write, max_readahead) / page size: a request of up
        // to MAX_REQUEST_BYTES (the kernel caps it at fs.fuse.max_pages_limit).
        let asked = match config.set_max_write(super::MAX_REQUEST_BYTES) {
            Ok(_) => super::MAX_REQUEST_BYTES,
            Err(max) => {
                let _ = config.set_max_write(max);
                max
            }
        };
        self.stats.max_pages_asked = asked.div_ceil(4096);
        Ok(())
    }

    fn destroy(&mut self) {
        // Files still open at unmount (a lazy unmount): their services close first.
        for (name, f) in std::mem::take(&mut self.served.files) {
            if f.poisoned {
                continue;
            }
            if let Err(e) = f.service.close() {
                log::warn!(
                    "{}: file {name:?}: closing its service: {e}",
                    self.fs.target()
                );
                self.poisoned = true;
            }
        }
        if !self.poisoned {
            let _ = self.settle();
        }
        if let Some(p) = &self.stats_path {
            if let Ok(json) = serde_json::to_string_pretty(&self.stats) {
                let _ = std::fs::write(p, json + "\n");
            }
        }
    }

    fn lookup(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEntry) {
        let r = (|| {
            self.check()?;
            let name = Self::child_name(parent, name)?;
            let st = self.fs.stat(name).map_err(|e| errno(&e))?;
            let ino = self.ino_for(name);
            Ok(self.file_attr(ino, &st))
        })();
        match r {
            Ok(attr) => reply.entry(&TTL, &attr, 0),
            Err(e) => reply.error(e),
        }
    }

    fn getattr(&mut self, _req: &Request<'_>, ino: u64, _fh: Option<u64>, reply: ReplyAttr) {
        if ino == ROOT {
            // Even when poisoned, so the mount point can be looked at and unmounted.
            return reply.attr(&TTL, &self.root_attr());
        }
        match self.check().and_then(|()| self.attr_of(ino)) {
            Ok(attr) => reply.attr(&TTL, &attr),
            Err(e) => reply.error(e),
        }
    }

    fn setattr(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<u64>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<u32>,
        reply: ReplyAttr,
    ) {
        let change = AttrChange {
            mode,
            uid,
            gid,
            size,
            atime,
            mtime,
        };
        match self.setattr_inner(ino, change) {
            Ok(attr) => reply.attr(&TTL, &attr),
            Err(e) => reply.error(e),
        }
    }

    fn mknod(
        &mut self,
        _req: &Request<'_>,
        parent: u64,
        name: &OsStr,
        mode: u32,
        _umask: u32,
        _rdev: u32,
        reply: ReplyEntry,
    ) {
        match self.create_file(parent, name, mode) {
            Ok((_, attr)) => reply.entry(&TTL, &attr, 0),
            Err(e) => reply.error(e),
        }
    }

    fn mkdir(
        &mut self,
        _req: &Request<'_>,
        _parent: u64,
        _name: &OsStr,
        _mode: u32,
        _umask: u32,
        reply: ReplyEntry,
    ) {
        // One flat directory.
        reply.error(libc::EPERM);
    }

    fn unlink(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEmpty) {
        let r = (|| {
            self.check_writable()?;
            let name = Self::child_name(parent, name)?;
            // Refused with EBUSY while the file is open (the library keeps it).
            self.fs.remove(name).map_err(|e| self.failed_change(&e))?;
            self.forget_name(name);
            Ok(())
        })();
        match r {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn rmdir(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEmpty) {
        let e = match Self::child_name(parent, name) {
            Ok(name) => match self.fs.stat(name) {
                Ok(_) => libc::ENOTDIR,
                Err(e) => errno(&e),
            },
            Err(e) => e,
        };
        reply.error(e);
    }

    fn symlink(
        &mut self,
        _req: &Request<'_>,
        _parent: u64,
        _link_name: &OsStr,
        _target: &Path,
        reply: ReplyEntry,
    ) {
        reply.error(libc::EPERM);
    }

    fn rename(
        &mut self,
        _req: &Request<'_>,
        _parent: u64,
        _name: &OsStr,
        _newparent: u64,
        _newname: &OsStr,
        _flags: u32,
        reply: ReplyEmpty,
    ) {
        // minfs has no rename; EPERM rather than EXDEV, so `mv` does not fall back to a copy.
        reply.error(libc::EPERM);
    }

    fn link(
        &mut self,
        _req: &Request<'_>,
        _ino: u64,
        _newparent: u64,
        _newname: &OsStr,
        reply: ReplyEntry,
    ) {
        reply.error(libc::EPERM);
    }

    fn open(&mut self, _req: &Request<'_>, ino: u64, flags: i32, reply: ReplyOpen) {
        let r = (|| {
            if ino == ROOT {
                return Err(libc::EISDIR);
            }
            self.check()?;
            if self.read_only && flags & libc::O_ACCMODE != libc::O_RDONLY {
                return Err(libc::EROFS);
            }
            let name = self.name_of(ino)?;
            let file = self.fs.open_file(&name).map_err(|e| errno(&e))?;
            self.serve_on_open(&file);
            Ok(self.new_fh(file))
        })();
        match r {
            Ok(fh) => reply.opened(fh, open_flags(flags)),
            Err(e) => reply.error(e),
        }
    }

    fn create(
        &mut self,
        _req: &Request<'_>,
        parent: u64,
        name: &OsStr,
        mode: u32,
        _umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        let r = (|| {
            let (ino, attr) = self.create_file(parent, name, mode)?;
            let name = self.name_of(ino)?;
            let file = self.fs.open_file(&name).map_err(|e| errno(&e))?;
            Ok((attr, self.new_fh(file)))
        })();
        match r {
            Ok((attr, fh)) => reply.created(&TTL, &attr, 0, fh, open_flags(flags)),
            Err(e) => reply.error(e),
        }
    }

    fn read(
        &mut self,
        _req: &Request<'_>,
        _ino: u64,
        fh: u64,
        offset: i64,
        size: u32,
        _flags: i32,
        _lock_owner: Option<u64>,
        reply: ReplyData,
    ) {
        let r = (|| {
            self.check()?;
            let file = self.open_file(fh)?;
            let offset = u64::try_from(offset).map_err(|_| libc::EINVAL)?;
            if let Some(f) = self.served.files.get(file.name()) {
                if offset < f.service.end() {
                    return self.served_read(file.name(), offset, size);
                }
            }
            self.read_bytes(&file, offset, size).map_err(|e| errno(&e))
        })();
        match r {
            Ok((from, to)) => {
                self.stats.read_requests += 1;
                self.stats.largest_read = self.stats.largest_read.max(u64::from(size));
                reply.data(&self.buf[from..to])
            }
            Err(e) => reply.error(e),
        }
    }

    fn write(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        fh: u64,
        offset: i64,
        data: &[u8],
        _write_flags: u32,
        _flags: i32,
        _lock_owner: Option<u64>,
        reply: ReplyWrite,
    ) {
        let r = (|| {
            self.check_writable()?;
            let file = self.open_file(fh)?;
            let offset = u64::try_from(offset).map_err(|_| libc::EINVAL)?;
            let len = u32::try_from(data.len()).map_err(|_| libc::EINVAL)?;
            offset.checked_add(data.len() as u64).ok_or(libc::EFBIG)?;
            self.stats.write_requests += 1;
            self.stats.largest_write = self.stats.largest_write.max(u64::from(len));
            if len > 0 {
                let mut served = self.served.files.contains_key(file.name());
                if !served && offset == 0 {
                    self.serve_on_first_write(&file, data);
                    served = self.served.files.contains_key(file.name());
                }
                if served {
                    self.served_write(file.name(), offset, data)?;
                } else {
                    self.write_bytes(&file, offset, data)
                        .map_err(|e| self.failed_change(&e))?;
                }
                self.touch(ino);
            }
            Ok(len)
        })();
        match r {
            Ok(n) => reply.written(n),
            Err(e) => reply.error(e),
        }
    }

    fn flush(&mut self, _req: &Request<'_>, _ino: u64, _fh: u64, _lock: u64, reply: ReplyEmpty) {
        // close(2): a device flush when anything was written since the last one, so a closed
        // file is durable (and close reports a failed flush).
        let r = if self.dirty {
            self.device_flush()
        } else {
            self.check()
        };
        match r {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn release(
        &mut self,
        _req: &Request<'_>,
        _ino: u64,
        fh: u64,
        _flags: i32,
        _lock_owner: Option<u64>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        // The last close of a file: its grown size is committed and its preallocation given
        // back. (The kernel does not report a release's error to anyone; a failed commit
        // poisons the filesystem like any other.)
        let r = match self.opens.remove(&fh) {
            Some(o)
                if !self.read_only
                    && !self.opens.values().any(|x| x.file.name() == o.file.name()) =>
            {
                let name = o.file.name().to_string();
                drop(o);
                let closed = match self.served.files.remove(&name) {
                    Some(f) if f.poisoned => Err(libc::EIO),
                    Some(f) => f.service.close().map_err(|e| {
                        self.poisoned = true;
                        io_errno(&e)
                    }),
                    None => Ok(()),
                };
                closed
                    .and_then(|()| self.sync_file(&name, false))
                    .and_then(|()| {
                        self.fs
                            .trim_preallocation(&name)
                            .map(drop)
                            .map_err(|e| self.failed_change(&e))
                    })
            }
            _ => Ok(()),
        };
        match r {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn fsync(&mut self, _req: &Request<'_>, _ino: u64, fh: u64, _ds: bool, reply: ReplyEmpty) {
        // fsync and fdatasync alike: a grown size is metadata fdatasync must make durable too.
        let r = match self.open_file(fh) {
            Ok(file) => match self.served.files.get_mut(file.name()) {
                Some(f) if f.poisoned => Err(libc::EIO),
                Some(f) => f.service.sync().map_err(|e| {
                    f.poisoned = true;
                    io_errno(&e)
                }),
                None => self.sync_file(file.name(), true),
            },
            Err(e) => Err(e),
        };
        match r {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn opendir(&mut self, _req: &Request<'_>, ino: u64, _flags: i32, reply: ReplyOpen) {
        if ino != ROOT {
            return reply.error(libc::ENOTDIR);
        }
        match self.check() {
            Ok(()) => reply.opened(0, 0),
            Err(e) => reply.error(e),
        }
    }

    fn readdir(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        _fh: u64,
        offset: i64,
        mut reply: ReplyDirectory,
    ) {
        if ino != ROOT {
            return reply.error(libc::ENOTDIR);
        }
        if let Err(e) = self.check() {
            return reply.error(e);
        }
        let mut entries = vec![
            (ROOT, FileType::Directory, ".".to_string()),
            (ROOT, FileType::Directory, "..".to_string()),
        ];
        for f in self.fs.list() {
            let ino = self.ino_for(&f.name);
            entries.push((ino, FileType::RegularFile, f.name));
        }
        let skip = usize::try_from(offset).unwrap_or(0);
        for (i, (ino, kind, name)) in entries.into_iter().enumerate().skip(skip) {
            if reply.add(ino, i as i64 + 1, kind, name) {
                break;
            }
        }
        reply.ok();
    }

    fn statfs(&mut self, _req: &Request<'_>, _ino: u64, reply: ReplyStatfs) {
        if let Err(e) = self.check() {
            return reply.error(e);
        }
        let info = self.fs.info();
        let files = MAX_FILES as u64;
        reply.statfs(
            info.block_count,
            info.free_blocks,
            info.free_blocks,
            files,
            files - info.files.len() as u64,
            BLOCK_SIZE as u32,
            MAX_NAME_LEN as u32,
            BLOCK_SIZE as u32,
        );
    }

    fn fallocate(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        _fh: u64,
        offset: i64,
        length: i64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        match self.fallocate_inner(ino, offset, length, mode) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }
}

/// FOPEN flags for an open with `flags`: O_DIRECT opens bypass the page cache, so each
/// request of the application reaches minfs as it was made.
fn open_flags(flags: i32) -> u32 {
    if flags & libc::O_DIRECT != 0 {
        FOPEN_DIRECT_IO
    } else {
        0
    }
}
