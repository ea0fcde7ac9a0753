//! `mkfs` on a path: creating and preallocating an image, or formatting a block device.

use std::fs::OpenOptions;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::Arc;

use nix::fcntl::{fallocate, FallocateFlags};

use crate::device::{BlockDevice, FileDevice, OpenMode, TargetKind};
use crate::error::{Error, Result};
use crate::format::superblock::Superblock;
use crate::format::{BLOCK_SIZE, MIN_SIZE};
use crate::fs::{Filesystem, FormatOptions};
use crate::signature::{self, Signature};
use crate::sys::AlignedBuf;

/// What [`mkfs`] did (or, with `dry_run`, would do).
#[derive(Debug)]
pub struct MkfsOutcome {
    pub kind: TargetKind,
    /// A new image file was created.
    pub created_image: bool,
    /// The signature that `force` overwrote.
    pub replaced: Option<Signature>,
    /// Signatures libblkid found outside what minfs writes (the backup GPT, MD 0.90/1.0
    /// superblocks at the end, ...), zeroed after formatting (with `force`).
    pub wiped: Vec<signature::Foreign>,
    /// Whether libblkid (through `wipefs`) was asked at all: false when it is not installed.
    pub blkid_checked: bool,
    /// The superblock written (or planned).
    pub superblock: Superblock,
    pub logical_sector_size: u32,
    pub physical_sector_size: u32,
}

/// Makes a minfs filesystem on `path`.
///
/// - A path that does not exist becomes an image of `opts.size` bytes, preallocated with
///   `fallocate` (refused if the host filesystem cannot); it is removed again if mkfs fails.
/// - An existing image keeps its size (a different `opts.size` is refused) and is fallocated
///   so no hole is left — unless the host filesystem has less free space than the holes need:
///   then mkfs is refused before anything is allocated (a failed fallocate may leave part of
///   the space allocated), naming both sizes.
/// - A block device is opened with `O_EXCL`: a mounted or busy device is always refused.
/// - A target holding a known signature (minfs's own probe, then libblkid's through `wipefs
///   --no-act`) is refused unless `opts.force`; so is one holding non-zero bytes that neither
///   names ([`crate::content::scan`]).
/// - With `opts.force`, after formatting, every signature libblkid still finds (all of them lie
///   beyond what minfs wrote: the backup GPT in the last sector, MD 0.90/1.0 superblocks, ...)
///   is zeroed, and listed in [`MkfsOutcome::wiped`].
/// - With `dry_run` nothing is created or written.
pub fn mkfs(path: &Path, opts: &FormatOptions, dry_run: bool) -> Result<MkfsOutcome> {
    let target = path.display().to_string();
    if let Some(s) = opts.size {
        if s % BLOCK_SIZE != 0 {
            return Err(Error::BadSize {
                target,
                reason: crate::format::size_reason(s),
            });
        }
        if s < MIN_SIZE {
            return Err(Error::TooSmall {
                target,
                size: s,
                min: MIN_SIZE,
            });
        }
        if s > i64::MAX as u64 {
            return Err(Error::BadSize {
                target,
                reason: format!("{s} bytes is larger than any file can be"),
            });
        }
    }
    let mut created_image = false;
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let Some(size) = opts.size else {
                return Err(Error::NotATarget {
                    target,
                    reason: "does not exist (give --size to create an image file)".into(),
                });
            };
            if dry_run {
                let sb = Filesystem::plan(size, 512, 4096, &target, opts)?;
                return Ok(MkfsOutcome {
                    kind: TargetKind::Image,
                    created_image: false,
                    replaced: None,
                    wiped: Vec::new(),
                    blkid_checked: false,
                    logical_sector_size: sb.logical_sector_size,
                    physical_sector_size: sb.physical_sector_size,
                    superblock: sb,
                });
            }
            let file = OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(path)
                .map_err(|e| Error::io(&target, "cannot create the image", e))?;
            created_image = true;
            if let Err(e) = fallocate(file.as_raw_fd(), FallocateFlags::empty(), 0, size as i64) {
                drop(file);
                let _ = std::fs::remove_file(path);
                return Err(Error::Fallocate {
                    target,
                    size,
                    source: e.into(),
                });
            }
        }
        Err(e) => return Err(Error::io(&target, "cannot open", e)),
        Ok(_) => {}
    }
    let result = format_existing(path, &target, opts, dry_run, created_image);
    if result.is_err() && created_image {
        let _ = std::fs::remove_file(path);
    }
    result
}

fn format_existing(
    path: &Path,
    target: &str,
    opts: &FormatOptions,
    dry_run: bool,
    created_image: bool,
) -> Result<MkfsOutcome> {
    let dev = FileDevice::open(path, OpenMode::ReadWrite)?;
    let kind = dev.kind();
    if kind == TargetKind::Image {
        if let Some(s) = opts.size {
            if s != dev.len() {
                return Err(Error::BadSize {
                    target: target.to_string(),
                    reason: format!(
                        "the image exists with {} bytes and an existing image keeps its size (omit --size)",
                        dev.len()
                    ),
                });
            }
        }
    }
    let replaced = signature::probe(&dev)
        .map_err(|e| Error::io(target, "probing for existing signatures", e))?;
    if let (Some(sig), false) = (&replaced, opts.force) {
        return Err(Error::ExistingSignature {
            target: target.to_string(),
            kind: sig.kind.to_string(),
            offset: sig.offset,
        });
    }
    let blkid = |when: &str| {
        signature::blkid_signatures(path).map_err(|reason| Error::NotATarget {
            target: target.to_string(),
            reason: format!("{when}: {reason}"),
        })
    };
    let mut blkid_checked = false;
    if !opts.force {
        if let Some(found) = blkid("probing with libblkid (wipefs --no-act)")? {
            blkid_checked = true;
            if let Some(f) = found.first() {
                return Err(Error::ExistingSignature {
                    target: target.to_string(),
                    kind: format!("a {} signature (libblkid's name)", f.kind),
                    offset: f.offset,
                });
            }
        }
        if let Err(found) = crate::content::scan(&dev)
            .map_err(|e| Error::io(target, "reading samples of the target", e))?
        {
            return Err(Error::UnknownData {
                target: target.to_string(),
                size: dev.len(),
                offset: found.offset,
                bytes_read: found.bytes_read,
            });
        }
    }
    let (lss, pss) = (dev.logical_sector_size(), dev.physical_sector_size());
    // Every refusal (too small, bad label, ...) comes before the image is touched.
    let planned = Filesystem::plan(dev.len(), lss, pss, target, opts)?;
    let mut wiped = Vec::new();
    let superblock = if dry_run {
        planned
    } else {
        if kind == TargetKind::Image && !created_image {
            preallocate_existing(&dev, target)?;
        }
        let opts = FormatOptions {
            force: true,
            ..opts.clone()
        };
        let dev = Arc::new(dev);
        let sb = Filesystem::format(dev.clone(), target, &opts)?.superblock();
        if let Some(w) = wipe_foreign(&dev, target, &blkid)? {
            blkid_checked = true;
            wiped = w;
        }
        sb
    };
    Ok(MkfsOutcome {
        kind,
        created_image,
        replaced,
        wiped,
        blkid_checked,
        superblock,
        logical_sector_size: lss,
        physical_sector_size: pss,
    })
}

/// Zeroes the magic of every signature libblkid finds on the freshly formatted target, until
/// it finds none (a GPT's backup header is reported only once the primary is gone; minfs
/// overwrote the primary). `Ok(None)` when `wipefs` is not installed.
fn wipe_foreign(
    dev: &FileDevice,
    target: &str,
    blkid: &dyn Fn(&str) -> Result<Option<Vec<signature::Foreign>>>,
) -> Result<Option<Vec<signature::Foreign>>> {
    let mut wiped: Vec<signature::Foreign> = Vec::new();
    let lss = u64::from(dev.logical_sector_size());
    for _round in 0..16 {
        let Some(found) = blkid("listing signatures after formatting (wipefs --no-act)")? else {
            return Ok(None);
        };
        if found.is_empty() {
            return Ok(Some(wiped));
        }
        for f in found {
            let fail = |reason: String| Error::Wipe {
                target: target.to_string(),
                kind: f.kind.clone(),
                offset: f.offset,
                reason,
            };
            let end = f
                .offset
                .checked_add(f.len.max(1))
                .filter(|&e| e <= dev.len());
            let Some(end) = end else {
                return Err(fail(format!("{} bytes lie past the target's end", f.len)));
            };
            if f.offset < crate::format::DATA_START {
                // minfs just wrote these bytes: libblkid reading its own structures into them
                // would be a bug to report, not bytes to zero.
                return Err(fail("it lies inside minfs's metadata area".into()));
            }
            if wiped.contains(&f) {
                return Err(fail("still found after zeroing it".into()));
            }
            let start = f.offset / lss * lss;
            let stop = end.div_ceil(lss) * lss;
            let mut buf = AlignedBuf::zeroed((stop - start) as usize, 4096);
            dev.read_at(&mut buf, start)
                .map_err(|e| fail(format!("reading it: {e}")))?;
            let (a, b) = ((f.offset - start) as usize, (end - start) as usize);
            buf[a..b].fill(0);
            dev.write_at(&buf, start)
                .map_err(|e| fail(format!("writing zeros: {e}")))?;
            dev.flush().map_err(|e| fail(format!("flushing: {e}")))?;
            wiped.push(f);
        }
    }
    Err(Error::NotATarget {
        target: target.to_string(),
        reason: format!(
            "libblkid still finds signatures after 16 rounds of wiping ({} wiped)",
            wiped.len()
        ),
    })
}

/// Fallocates the holes of an existing image, after checking that the host filesystem has room
/// for them: a sparse image far larger than the host (a 15 TiB image on a 50 GB disk) is
/// refused before any space is taken, instead of fallocate filling the host until ENOSPC.
fn preallocate_existing(dev: &FileDevice, target: &str) -> Result<()> {
    let len = dev.len().min(i64::MAX as u64);
    let meta = dev
        .file()
        .metadata()
        .map_err(|e| Error::io(target, "stat", e))?;
    let allocated = std::os::unix::fs::MetadataExt::blocks(&meta).saturating_mul(512);
    if len == 0 {
        return Ok(());
    }
    // An upper bound: st_blocks also counts the host's own metadata blocks.
    let missing = len.saturating_sub(allocated);
    let vfs = nix::sys::statvfs::fstatvfs(dev.file())
        .map_err(|e| Error::io(target, "statvfs of the host filesystem", e.into()))?;
    let available = vfs.blocks_available().saturating_mul(vfs.fragment_size());
    if missing > available {
        return Err(Error::Fallocate {
            target: target.to_string(),
            size: len,
            source: std::io::Error::other(format!(
                "the image is sparse ({allocated} of {len} bytes allocated) and its holes need up to {missing} more bytes, but the host filesystem has {available} bytes free; nothing was allocated (use a block device or a smaller image)"
            )),
        });
    }
    fallocate(
        dev.file().as_raw_fd(),
        FallocateFlags::empty(),
        0,
        len as i64,
    )
    .map_err(|e| Error::Fallocate {
        target: target.to_string(),
        size: len,
        source: e.into(),
    })?;
    Ok(())
}
