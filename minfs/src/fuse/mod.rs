//! The files of a minfs target as ordinary files: a FUSE server (`minfs mount`).
//!
//! Built on the `fuser` crate without libfuse: as root the mount is a `mount(2)` of
//! `/dev/fuse`; otherwise `fusermount3` (Debian package `fuse3`) mounts it. The mount shows
//! as type `fuse.minfs` with the target's canonical path as its source. The server holds the
//! target open read-write for its whole life (`flock`, and `O_EXCL` on a block device; a
//! read-only mount holds an exclusive lock too), so `mkfs`, `fsck -y` and a second mount are
//! refused while it runs, exactly as for any other writer.
//!
//! What the mount does:
//!
//! | operation | behaviour |
//! | --- | --- |
//! | `ls`, `stat` | one directory (the mount's root) with the minfs files; size is the file's size, blocks its allocation; mode 0644, owner the mounting user; times start at the last commit before mounting and are kept in memory only |
//! | read, write | any offset, length and alignment. Whole logical sectors go straight to the device; a partial first or last sector is read-modify-written. Every request is served on one thread, in order |
//! | `O_DIRECT` opens | answered with `FOPEN_DIRECT_IO`: the page cache is bypassed and each of the application's requests reaches minfs as made. Other opens go through the page cache (write-through: a `write` returns once minfs has written it to the device; nothing is cached dirty) |
//! | write past the end | grows the file in memory ([`Filesystem::extend_unsynced`]): blocks are allocated ahead, XFS-style (as many again as the file holds, 64 KiB to 8 GiB), and the size reaches the file table at `fsync`/`fdatasync`, the file's last close (release) and unmount — one commit each, none per write. A crash before then leaves the last synced size (docs/FORMAT.md, "Sizes grown by writing") |
//! | `truncate`, `ftruncate`, `O_TRUNC` | sets the size: grows, or shrinks freeing the blocks past the new size ([`Filesystem::set_size`]) |
//! | `fallocate` | mode 0 grows the file to cover the range; `FALLOC_FL_KEEP_SIZE` is accepted inside the file and refused past its end (`EOPNOTSUPP`: minfs allocates exactly a file's size); other modes `EOPNOTSUPP` |
//! | new bytes | a file's first 4 KiB block is zeroed when the file gets it (create, truncate, `fallocate`, the first write), so a new file never begins with an earlier file's bytes (a Cannyls header); bytes past it added by growing are not zeroed: they hold what the device held (docs/FORMAT.md, "Stale bytes in a new file") |
//! | create, `mknod` | an empty regular file; other node types `EPERM` |
//! | `rm` (unlink) | removes the file; `EBUSY` while it is open. The kernel sends a close's release asynchronously, so an `rm` right after the last `close` may see `EBUSY` for a moment |
//! | `fsync`, `fdatasync` | a commit when writes grew the file since its size was last committed (a commit flushes the device first), else a device flush (`fdatasync` of the image, FLUSH CACHE on a disk) |
//! | `close` | a device flush when anything was written since the last one; the file's last close commits a grown size and gives back its unused preallocation |
//! | buffers | a request's data passes through fuser's receive buffer and the server's O_DIRECT buffer; in the `minfs` binary both are 2 MiB-aligned mappings advised for transparent huge pages ([`crate::HugeAlloc`]), so the kernel pins each as one folio per request and the device gets the data in one segment (where THP is `never`, ordinary pages) |
//! | request size | up to 8 MiB per request (`max_pages` 2048), so a Cannyls lump of up to 4 MiB is read with its trailer in one request; as root `minfs mount` raises `fs.fuse.max_pages_limit` to 2048 when it is lower, and says so (`--keep-max-pages-limit` leaves it alone) ([`max_pages`]) |
//! | `flock`, POSIX locks | kept by the kernel (local to this machine), so Cannyls' `FileNvm` lock works |
//! | rename, `mkdir`, `link`, `symlink`, chmod/chown to another mode or owner | `EPERM` (no `EXDEV`, so `mv` does not turn into a copy); `rmdir` `ENOTDIR`; xattrs `EOPNOTSUPP` |
//! | errors | one mapping, [`errno`]. After a failed write, flush or commit the filesystem is poisoned: every operation but the root's `getattr` answers `EIO` until it is unmounted and mounted again |
//! | unmount | the server commits grown sizes (one commit), gives back preallocation, flushes the device, releases the target and exits |
//! | file services | a program built on minfs can have a mount serve chosen files itself ([`service`]): `minfs-cannyls mount` serves each Cannyls storage file through a `MinfsNvm`, which keeps a copy of the storage's header and journal; `truncate` and `fallocate` of a served file answer `EBUSY` |

pub mod daemon;
mod errno;
pub mod max_pages;
pub mod mounts;
pub mod options;
mod server;
pub mod service;

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use fuser::MountOption;
use nix::fcntl::{Flock, FlockArg};

pub use errno::errno;
pub use max_pages::MAX_REQUEST_BYTES;
pub use server::{MinfsFuse, RequestStats};

use crate::{Error, Filesystem, OpenMode};

/// The type of a minfs mount in `/proc/self/mountinfo`.
pub const FSTYPE: &str = crate::mountinfo::MINFS_FSTYPE;

/// An error of mounting or unmounting; the message names the path and what is wrong.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct FuseError(pub String);

impl From<Error> for FuseError {
    fn from(e: Error) -> FuseError {
        FuseError(e.to_string())
    }
}

/// How to mount.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MountConfig {
    /// Open the target read-only and mount read-only.
    pub read_only: bool,
    /// Let other users reach the mount (`allow_other`; as a user it needs `user_allow_other`
    /// in /etc/fuse.conf).
    pub allow_other: bool,
    /// Mount with `noexec` (MS_NOEXEC).
    pub noexec: bool,
    /// Mount with `noatime` (MS_NOATIME).
    pub noatime: bool,
    /// Mount with `sync` (MS_SYNCHRONOUS).
    pub sync: bool,
    /// Mount with `dirsync` (MS_DIRSYNC).
    pub dirsync: bool,
    /// Write the request counts ([`RequestStats`]) as JSON to this file at unmount.
    pub stats: Option<PathBuf>,
}

/// A mounted minfs, ready to serve. Dropping it without [`Server::run`] unmounts it.
#[derive(Debug)]
pub struct Server {
    session: fuser::Session<MinfsFuse>,
    fs: Filesystem,
    target: PathBuf,
    mountpoint: PathBuf,
    read_only: bool,
    /// A read-only mount's exclusive hold of the target.
    hold: Option<Flock<File>>,
    /// This server's record as the mount's server, for `minfs umount`.
    record: Option<mounts::ServerRecord>,
}

impl Server {
    /// Opens the filesystem on `target` and mounts it on `mountpoint` (an existing
    /// directory). Returns once the mount exists; requests are served by [`Server::run`].
    pub fn mount(target: &Path, mountpoint: &Path, cfg: &MountConfig) -> Result<Server, FuseError> {
        Server::mount_with(target, mountpoint, cfg, None)
    }

    /// [`Server::mount`], serving the files `services` takes through their own
    /// [`service::FileService`]s (a read-only mount serves every file plainly).
    pub fn mount_with(
        target: &Path,
        mountpoint: &Path,
        cfg: &MountConfig,
        services: Option<Box<dyn service::Services>>,
    ) -> Result<Server, FuseError> {
        let target = target
            .canonicalize()
            .map_err(|e| FuseError(format!("{}: cannot open: {e}", target.display())))?;
        let mp = mounts::absolute(mountpoint)
            .map_err(|e| FuseError(format!("{}: {e}", mountpoint.display())))?;
        let shown = mp.display();
        match std::fs::metadata(&mp) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => return Err(FuseError(format!("{shown}: not a directory"))),
            Err(e) => return Err(FuseError(format!("{shown}: mount point: {e}"))),
        }
        if let Some(m) = mounts::mount_at(&mp)
            .map_err(|e| FuseError(format!("reading /proc/self/mountinfo: {e}")))?
        {
            if m.fstype == FSTYPE {
                return Err(FuseError(format!(
                    "{shown}: already a minfs mount (of {}); unmount it first",
                    m.source
                )));
            }
        }
        if !Path::new("/dev/fuse").exists() {
            return Err(FuseError(
                "/dev/fuse is missing: load the fuse module (modprobe fuse) or, in a \
                 container, pass the device in"
                    .into(),
            ));
        }
        let hold = if cfg.read_only {
            Some(hold_exclusively(&target)?)
        } else {
            None
        };
        let mode = if cfg.read_only {
            OpenMode::ReadOnly
        } else {
            OpenMode::ReadWrite
        };
        let fs = Filesystem::open(&target, mode)?;
        let mut server = Server::mount_filesystem_with(fs, &mp, cfg, services)?;
        server.hold = hold;
        Ok(server)
    }

    /// Mounts an open filesystem (on any [`crate::BlockDevice`]) on `mountpoint`; the mount's
    /// source is `fs.target()`. Read-only when `cfg` says so or the device is. The caller
    /// keeps others off the target.
    pub fn mount_filesystem(
        fs: Filesystem,
        mountpoint: &Path,
        cfg: &MountConfig,
    ) -> Result<Server, FuseError> {
        Server::mount_filesystem_with(fs, mountpoint, cfg, None)
    }

    /// [`Server::mount_filesystem`] with `services` ([`Server::mount_with`]).
    pub fn mount_filesystem_with(
        fs: Filesystem,
        mountpoint: &Path,
        cfg: &MountConfig,
        services: Option<Box<dyn service::Services>>,
    ) -> Result<Server, FuseError> {
        let mp = mounts::absolute(mountpoint)
            .map_err(|e| FuseError(format!("{}: {e}", mountpoint.display())))?;
        let shown = mp.display();
        let read_only = cfg.read_only || fs.device().is_read_only();
        let target = PathBuf::from(fs.target());
        let mut options = vec![
            MountOption::FSName(fs.target().to_string()),
            MountOption::CUSTOM("subtype=minfs".into()),
            MountOption::DefaultPermissions,
            MountOption::NoDev,
            MountOption::NoSuid,
            if read_only {
                MountOption::RO
            } else {
                MountOption::RW
            },
        ];
        for (on, option) in [
            (cfg.allow_other, MountOption::AllowOther),
            (cfg.noexec, MountOption::NoExec),
            (cfg.noatime, MountOption::NoAtime),
            (cfg.sync, MountOption::Sync),
            (cfg.dirsync, MountOption::DirSync),
        ] {
            if on {
                options.push(option);
            }
        }
        let server = MinfsFuse::new(fs.clone(), read_only)
            .with_stats(cfg.stats.clone())
            .with_services(services);
        let session = fuser::Session::new(server, &mp, &options).map_err(|e| {
            let hint = if e.raw_os_error() == Some(libc::EACCES) {
                " (/dev/fuse is not open to this user, or the mount point is not theirs)"
            } else if e.kind() == std::io::ErrorKind::NotFound && !nix::unistd::geteuid().is_root()
            {
                " (mounting as a user needs fusermount3: Debian package fuse3)"
            } else {
                ""
            };
            FuseError(format!(
                "{shown}: cannot mount {}: {e}{hint}",
                target.display()
            ))
        })?;
        let record = mounts::ServerRecord::create(&mp, FSTYPE);
        Ok(Server {
            session,
            fs,
            target,
            mountpoint: mp,
            read_only,
            hold: None,
            record,
        })
    }

    /// The target's canonical path (the mount's source).
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// The mount point, absolute.
    pub fn mountpoint(&self) -> &Path {
        &self.mountpoint
    }

    /// Serves requests until the filesystem is unmounted, then flushes the device and
    /// releases the target. An error names what failed (the session, or the last flush).
    pub fn run(self) -> Result<(), FuseError> {
        let Server {
            mut session,
            fs,
            target,
            mountpoint,
            read_only,
            hold: _hold,
            record: _record,
        } = self;
        let served = session.run();
        // Ends the session (its destroy commits grown sizes and gives back preallocation,
        // unless poisoned): the open files' handles go with it.
        drop(session);
        let flushed = if read_only {
            Ok(())
        } else {
            fs.sync_all_sizes().and_then(|_| fs.flush())
        };
        drop(fs);
        served.map_err(|e| {
            FuseError(format!(
                "{}: serving {} failed: {e}",
                mountpoint.display(),
                target.display()
            ))
        })?;
        flushed.map_err(|e| FuseError(format!("final flush: {e}")))
    }
}

/// An exclusive hold of `target` for a read-only mount, with the same means as a writer's
/// open: `O_EXCL` on a block device, `flock(LOCK_EX | LOCK_NB)`.
fn hold_exclusively(target: &Path) -> Result<Flock<File>, Error> {
    let shown = target.display().to_string();
    let meta = std::fs::metadata(target).map_err(|e| Error::io(&shown, "cannot open", e))?;
    let mut oo = OpenOptions::new();
    oo.read(true);
    if meta.file_type().is_block_device() {
        oo.custom_flags(libc::O_EXCL);
    }
    let file =
        crate::device::open_exclusive(&oo, target, &meta).map_err(|e| match e.raw_os_error() {
            Some(libc::EBUSY) => Error::Busy {
                target: shown.clone(),
                detail: "mounted, or opened exclusively by another process".into(),
            },
            _ => Error::io(&shown, "cannot open", e),
        })?;
    Flock::lock(file, FlockArg::LockExclusiveNonblock).map_err(|(_, errno)| match errno {
        nix::errno::Errno::EWOULDBLOCK => Error::Locked {
            target: shown.clone(),
            holder: crate::device::lock_holder(target),
        },
        e => Error::io(&shown, "flock", e.into()),
    })
}
