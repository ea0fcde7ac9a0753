//! `minfs-cannyls mount`: a minfs mount on which every Cannyls storage file is served through
//! a [`MinfsNvm`], so that a storage reached by path — FrugalOS's file devices, Cannyls'
//! `FileNvm` — keeps the second copy of its header and journal ([`crate::copy`]) as one made
//! through the library does.
//!
//! How the mount's requests reach the memory ([`minfs::fuse::service`]):
//! - **open**: a file that holds a Cannyls storage (or the trailer of a copy, when its header
//!   cannot be read) is opened as [`MinfsNvm::from_handle`] opens it — a torn journal tail cut,
//!   unreadable header and journal sectors served from the copy and rewritten in place — and
//!   split into the four views Cannyls splits a memory into (storage header, journal header,
//!   ring, data). Every read, write and `fsync` of the storage's bytes then goes through the
//!   view that holds them, in the write order of the crate docs ("Write order"): `fsync` is
//!   the ring's sync (the one that commits). Bytes past the storage (its copy) are read
//!   plainly and refused to writes.
//! - **a new storage**: the first write to an empty file at offset 0 that begins with a
//!   Cannyls storage header (what `Storage::create` writes first: the header and the journal's
//!   first block, then an `fsync`) grows the file to the storage's size and goes through a
//!   memory made for it; the `fsync` that follows makes the copy, as
//!   [`MinfsNvm::create_storage`] does.
//! - **the last close** commits what a view still holds and drops the memory, which brings
//!   the copy level and marks it clean.
//!
//! A file that holds no storage, or one the memory cannot open (its journal unreadable on both
//! copies: `minfs-cannyls fsck --salvage`), is served plainly, with a warning.

use std::io::{self, Read, Seek, SeekFrom, Write};

use cannyls::block::BlockSize;
use cannyls::nvm::NonVolatileMemory;
use minfs::fuse::service::{FileService, Services};
use minfs::{FileHandle, Filesystem};

use crate::recovery::{self, Layout};
use crate::{MinfsNvm, Recover};

/// The services of `minfs-cannyls mount`: a [`StorageService`] for each Cannyls storage file.
#[derive(Debug, Default)]
pub struct CannylsServices;

impl Services for CannylsServices {
    fn name(&self) -> &str {
        "the Cannyls storage service"
    }

    fn open(
        &mut self,
        _fs: &Filesystem,
        file: &FileHandle,
    ) -> io::Result<Option<Box<dyn FileService>>> {
        if file.size() == 0 {
            return Ok(None);
        }
        // The open logs what it did: sectors served from the copy and rewritten, a torn tail
        // cut.
        let nvm = MinfsNvm::from_handle(file.clone()).map_err(io::Error::from)?;
        if nvm.opened().is_none() {
            // No storage in it.
            return Ok(None);
        }
        Ok(Some(Box::new(StorageService::split(nvm)?)))
    }

    fn first_write(
        &mut self,
        fs: &Filesystem,
        file: &FileHandle,
        data: &[u8],
    ) -> io::Result<Option<Box<dyn FileService>>> {
        let Ok(layout) = Layout::decode(data, u64::MAX) else {
            return Ok(None);
        };
        let Ok(block_size) = BlockSize::new(layout.block_size) else {
            return Ok(None);
        };
        if u64::from(layout.block_size) % u64::from(file.sector_size()) != 0 {
            return Ok(None);
        }
        let end = layout.storage_end();
        fs.grow(file.name(), end)
            .map_err(|e| io::Error::other(e.to_string()))?;
        let nvm = MinfsNvm::with(file.clone(), block_size, Recover::No).map_err(io::Error::from)?;
        Ok(Some(Box::new(StorageService {
            end,
            layout,
            views: Some(Views::Root(nvm)),
        })))
    }
}

/// One Cannyls storage file, served through its memory.
pub struct StorageService {
    /// Where the bytes served end: the storage's end, or the file's when it is shorter.
    end: u64,
    layout: Layout,
    /// `None` once a split failed: the service refuses everything.
    views: Option<Views>,
}

enum Views {
    /// A storage being created: the memory over the whole storage, until the first `fsync`.
    Root(MinfsNvm),
    /// The views Cannyls uses, by where they start in the file.
    Split(Box<[(u64, MinfsNvm); 4]>),
}

impl StorageService {
    /// The memory `nvm` (of a storage) split as Cannyls splits it.
    fn split(nvm: MinfsNvm) -> io::Result<StorageService> {
        let cap = nvm.capacity();
        let layout = recovery::layout(nvm.file_handle(), 0, cap)
            .map_err(|e| io::Error::other(e.to_string()))?
            .map_err(io::Error::other)?;
        Ok(StorageService {
            end: layout.storage_end().min(cap),
            views: Some(Views::Split(Box::new(split_views(nvm, &layout)?))),
            layout,
        })
    }

    /// The view holding file offset `offset`, and where it starts.
    fn view(&mut self, offset: u64) -> io::Result<(&mut MinfsNvm, u64, u64)> {
        let end = self.end;
        match &mut self.views {
            Some(Views::Root(nvm)) => Ok((nvm, 0, end)),
            Some(Views::Split(views)) => {
                let i = views.iter().rposition(|(at, _)| *at <= offset).unwrap_or(0);
                let view_end = views.get(i + 1).map_or(end, |(at, _)| *at);
                let (at, nvm) = &mut views[i];
                Ok((nvm, *at, view_end))
            }
            None => Err(broken()),
        }
    }

    /// `f` on each piece of `[offset, offset + len)` within one view: (view, offset in it,
    /// range of the request).
    fn each<F>(&mut self, offset: u64, len: usize, mut f: F) -> io::Result<()>
    where
        F: FnMut(&mut MinfsNvm, u64, std::ops::Range<usize>) -> io::Result<()>,
    {
        let mut done = 0usize;
        while done < len {
            let at = offset + done as u64;
            let (nvm, start, view_end) = self.view(at)?;
            let n = ((view_end - at) as usize).min(len - done);
            f(nvm, at - start, done..done + n)?;
            done += n;
        }
        Ok(())
    }
}

fn broken() -> io::Error {
    io::Error::other("the storage's memory could not be split into Cannyls' views")
}

fn split_views(nvm: MinfsNvm, l: &Layout) -> io::Result<[(u64, MinfsNvm); 4]> {
    let e = |e: cannyls::Error| io::Error::other(e.to_string());
    let (header, rest) = nvm.split(l.journal_start).map_err(e)?;
    let (journal, data) = rest.split(l.journal_size).map_err(e)?;
    let (journal_header, ring) = journal.split(l.ring_start() - l.journal_start).map_err(e)?;
    Ok([
        (0, header),
        (l.journal_start, journal_header),
        (l.ring_start(), ring),
        (l.journal_start + l.journal_size, data),
    ])
}

impl FileService for StorageService {
    fn end(&self) -> u64 {
        self.end
    }

    fn block(&self) -> u64 {
        u64::from(self.layout.block_size)
    }

    fn read_at(&mut self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.each(offset, buf.len(), |nvm, at, r| {
            nvm.seek(SeekFrom::Start(at))?;
            nvm.read_exact(&mut buf[r])
        })
    }

    fn write_at(&mut self, data: &[u8], offset: u64) -> io::Result<()> {
        self.each(offset, data.len(), |nvm, at, r| {
            nvm.seek(SeekFrom::Start(at))?;
            nvm.write_all(&data[r])
        })
    }

    fn sync(&mut self) -> io::Result<()> {
        let e = |e: cannyls::Error| io::Error::other(e.to_string());
        match self.views.take() {
            Some(Views::Root(mut nvm)) => {
                // A storage just created: its header and journal are durable now; the split
                // learns its layout and makes its copy.
                nvm.sync().map_err(e)?;
                self.views = Some(Views::Split(Box::new(split_views(nvm, &self.layout)?)));
                Ok(())
            }
            Some(Views::Split(mut v)) => {
                // The ring's view: its sync commits (the journal header's does nothing).
                let r = v[2].1.sync().map_err(e);
                self.views = Some(Views::Split(v));
                r
            }
            None => Err(broken()),
        }
    }

    fn close(mut self: Box<Self>) -> io::Result<()> {
        // Whatever a view holds is committed; dropping the views brings the copy level.
        self.sync()
    }
}
