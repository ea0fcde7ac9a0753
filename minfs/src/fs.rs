//! [`Filesystem`]: opening, formatting and changing a minfs target.
//!
//! # Commit protocol (no journal)
//! Every change of the file table is one *commit*: flush the device (so data and extent writes
//! made before are durable first), write the complete new metadata into the **inactive** slot
//! with generation + 1, flush (the change is now durable), then write the same state — same
//! generation, the other slot's own index, offset and checksums — into the other slot, and
//! flush again: a completed commit lives in both slots, so one bad sector in either cannot lose
//! it. Open reads both slots and uses the valid one with the highest generation, so a crash at
//! any point leaves either the old or the new state; a read-write open copies that state into
//! the other slot when it is older, invalid, unreadable or foreign.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::alloc::Allocator;
use crate::device::{BlockDevice, FileDevice, OpenMode};
use crate::error::{Corruption, Error, Result, SlotId};
use crate::file::FileHandle;
use crate::format::slot::{self, Slot};
use crate::format::superblock::Superblock;
use crate::format::{
    blocks_for, file_table, name_problem, Extent, FileEntry, BLOCK_SIZE, DATA_START,
    FORMAT_VERSION, LABEL_SIZE, MAX_FILES, MAX_SIZE, MIN_SIZE, SLOT_OFFSETS, SLOT_SIZE,
};
use crate::signature;
use crate::sys::AlignedBuf;

/// An open minfs filesystem. Cheap to clone; `Send + Sync`.
#[derive(Clone, Debug)]
pub struct Filesystem {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) dev: Arc<dyn BlockDevice>,
    pub(crate) target: String,
    /// Time stamp for commits instead of the clock (golden-image tests).
    fixed_time: Option<u64>,
    /// Commits write the inactive slot only, the older protocol (the commit benchmark's
    /// baseline; never set otherwise).
    single_slot_commits: AtomicBool,
    poisoned: AtomicBool,
    state: Mutex<State>,
    /// The slot open did not use because it was invalid, and why (`None`: both were valid, or
    /// this filesystem was just made).
    invalid_at_open: Option<(SlotId, Corruption)>,
}

impl std::fmt::Debug for Inner {
    /// Concise: the target, device and poison flag, not the file table or free-space map.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Filesystem")
            .field("target", &self.target)
            .field("device", &self.dev)
            .field("poisoned", &self.poisoned.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

#[derive(Debug)]
struct State {
    sb: Superblock,
    files: BTreeMap<String, Arc<Node>>,
    alloc: Allocator,
}

/// A file as open handles see it; its extents change only under the write lock.
#[derive(Debug)]
pub(crate) struct Node {
    pub(crate) name: String,
    pub(crate) meta: RwLock<Meta>,
}

/// A file's state in memory. `size` is what handles see; `synced` is the size in the last
/// commit. The two differ only after [`Filesystem::extend_unsynced`] (writes past the end on
/// `minfs mount`). `extents` cover at least ⌈`size` / 4096⌉ blocks; blocks past that are
/// preallocated, in memory only. What the file table records (every commit, whichever file it
/// is for) is the synced view, [`Meta::on_disk`]: `synced` and the first ⌈`synced` / 4096⌉
/// blocks of `extents` (blocks are only ever appended to `extents` between commits, so they
/// are a prefix of them).
#[derive(Debug, Clone)]
pub(crate) struct Meta {
    pub(crate) size: u64,
    pub(crate) synced: u64,
    pub(crate) extents: Vec<Extent>,
}

impl Meta {
    fn synced_to(size: u64, extents: Vec<Extent>) -> Meta {
        Meta {
            size,
            synced: size,
            extents,
        }
    }

    fn allocated_blocks(&self) -> u64 {
        self.extents.iter().map(|e| e.len).sum()
    }

    /// The file as the file table records it: the synced size and the blocks holding it.
    fn on_disk(&self, name: &str) -> FileEntry {
        FileEntry {
            name: name.to_string(),
            size: self.synced,
            extents: prefix(&self.extents, blocks_for(self.synced)),
        }
    }
}

/// The first `blocks` blocks of `extents`.
fn prefix(extents: &[Extent], mut blocks: u64) -> Vec<Extent> {
    let mut out = Vec::new();
    for e in extents {
        if blocks == 0 {
            break;
        }
        let len = e.len.min(blocks);
        out.push(Extent {
            start: e.start,
            len,
        });
        blocks -= len;
    }
    out
}

/// Preallocation for a file grown by writing past its end ([`Filesystem::extend_unsynced`]),
/// as XFS's speculative end-of-file preallocation does: as many blocks again as the file holds,
/// at least 64 KiB and at most 8 GiB, fewer when less is free.
const MIN_AHEAD_BLOCKS: u64 = (64 << 10) / BLOCK_SIZE;
const MAX_AHEAD_BLOCKS: u64 = (8 << 30) / BLOCK_SIZE;

/// What `stat` and `list` report about a file.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FileStat {
    pub name: String,
    /// Size in bytes.
    pub size: u64,
    /// Bytes allocated (a multiple of 4096).
    pub allocated: u64,
    pub extents: Vec<ExtentInfo>,
}

/// An extent in bytes, as `info` and `ls` print it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct ExtentInfo {
    /// Byte offset on the target.
    pub offset: u64,
    /// Length in bytes.
    pub length: u64,
}

/// What `info` reports.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Info {
    pub target: String,
    pub uuid: String,
    pub label: String,
    pub format_version: u32,
    pub generation: u64,
    pub active_slot: SlotId,
    pub block_size: u64,
    /// The device's current sector sizes.
    pub logical_sector_size: u32,
    pub physical_sector_size: u32,
    pub total_bytes: u64,
    pub data_start: u64,
    pub block_count: u64,
    pub free_blocks: u64,
    pub free_bytes: u64,
    pub max_files: usize,
    /// Byte offsets of slot A and slot B.
    pub superblock_offsets: [u64; 2],
    pub created: u64,
    pub updated: u64,
    pub files: Vec<FileStat>,
}

/// Options for [`Filesystem::format`] and [`crate::mkfs::mkfs`].
#[derive(Debug, Clone, Default)]
pub struct FormatOptions {
    /// Up to 32 bytes of UTF-8.
    pub label: String,
    /// Filesystem size in bytes (a multiple of 4096); default: the whole target.
    pub size: Option<u64>,
    /// Overwrite a target that holds a known signature (never a mounted or busy one).
    pub force: bool,
    /// Fixed UUID (tests, golden images); default random.
    pub uuid: Option<[u8; 16]>,
    /// Fixed creation time in Unix seconds (tests, golden images); default now.
    pub time: Option<u64>,
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// What decoding a slot gave: the slot, or why it is not valid (an unreadable slot is
/// [`Corruption::Unreadable`]).
pub(crate) type SlotResult = std::result::Result<Slot, Corruption>;

/// Reads both slots. A read error (e.g. a latent sector error) makes that slot invalid, like a
/// bad checksum: it is never fatal while the other slot is good. `NotMinfs` when the target is
/// too small for both slots, or when both are readable and neither has the magic.
pub(crate) fn read_slots(dev: &dyn BlockDevice, target: &str) -> Result<[SlotResult; 2]> {
    if dev.len() < SLOT_OFFSETS[1] + SLOT_SIZE {
        return Err(Error::NotMinfs {
            target: target.to_string(),
        });
    }
    let mut buf = AlignedBuf::zeroed(SLOT_SIZE as usize, 4096);
    // Whether the slot may hold minfs: it has the magic, or it could not be read.
    let mut maybe_minfs = [false; 2];
    let [a, b] = SlotId::BOTH.map(|id| match dev.read_at(&mut buf, id.offset()) {
        Err(e) => {
            maybe_minfs[id.index()] = true;
            Err(Corruption::Unreadable {
                offset: id.offset(),
                len: SLOT_SIZE,
                error: e.to_string(),
            })
        }
        Ok(()) => {
            maybe_minfs[id.index()] = Superblock::has_magic(&buf);
            slot::decode(&buf, id, dev.len())
        }
    });
    if !maybe_minfs[0] && !maybe_minfs[1] {
        return Err(Error::NotMinfs {
            target: target.to_string(),
        });
    }
    Ok([a, b])
}

/// The slot open uses: the valid one with the highest generation (A on a tie: after a
/// completed commit both slots hold the same state).
pub(crate) fn choose_active(slots: &[SlotResult; 2]) -> Option<SlotId> {
    match (&slots[0], &slots[1]) {
        (Ok(a), Ok(b)) => Some(if b.sb.generation > a.sb.generation {
            SlotId::B
        } else {
            SlotId::A
        }),
        (Ok(_), Err(_)) => Some(SlotId::A),
        (Err(_), Ok(_)) => Some(SlotId::B),
        (Err(_), Err(_)) => None,
    }
}

/// Whether two valid slots hold the same committed state: everything but the slot's own
/// index (and with it its offset and checksums) equal.
pub(crate) fn same_state(a: &Slot, b: &Slot) -> bool {
    a.files == b.files
        && Superblock {
            slot: a.sb.slot,
            ..b.sb.clone()
        } == a.sb
}

impl Filesystem {
    /// Opens the minfs filesystem on `path` (image file or block device).
    pub fn open(path: &Path, mode: OpenMode) -> Result<Filesystem> {
        let dev = FileDevice::open(path, mode)?;
        Filesystem::open_device(Arc::new(dev), path.display().to_string())
    }

    /// Opens the filesystem on `dev`, in the state of the valid slot with the highest
    /// generation. When the device is writable and the other slot does not hold that same
    /// state (a commit interrupted between its two slot writes, a torn write, an unreadable
    /// sector, damage, another filesystem's slot) that state is copied into it, with the same
    /// generation (one write and one flush). A read-only open never writes.
    pub fn open_device(dev: Arc<dyn BlockDevice>, target: impl Into<String>) -> Result<Filesystem> {
        let target = target.into();
        check_device_geometry(dev.as_ref(), &target)?;
        let mut slots = read_slots(dev.as_ref(), &target)?;
        let Some(active) = choose_active(&slots) else {
            let [a, b] = slots;
            return Err(Error::NoValidSlot {
                target,
                a: Box::new(a.unwrap_err()),
                b: Box::new(b.unwrap_err()),
            });
        };
        let invalid_at_open = slots[active.other().index()]
            .as_ref()
            .err()
            .map(|c| (active.other(), c.clone()));
        let other_ok = match (&slots[active.index()], &slots[active.other().index()]) {
            (Ok(act), Ok(oth)) => same_state(act, oth),
            _ => false,
        };
        let chosen = std::mem::replace(
            &mut slots[active.index()],
            Err(Corruption::UnsupportedVersion {
                found: 0,
                supported: 0,
            }),
        )
        .expect("active slot is valid");
        let files = chosen
            .files
            .into_iter()
            .map(|f| {
                (
                    f.name.clone(),
                    Arc::new(Node {
                        name: f.name,
                        meta: RwLock::new(Meta::synced_to(f.size, f.extents)),
                    }),
                )
            })
            .collect();
        let fs = Filesystem {
            inner: Arc::new(Inner {
                dev,
                target,
                fixed_time: None,
                single_slot_commits: AtomicBool::new(false),
                poisoned: AtomicBool::new(false),
                state: Mutex::new(State {
                    sb: chosen.sb,
                    files,
                    alloc: chosen.alloc,
                }),
                invalid_at_open,
            }),
        };
        if !other_ok && !fs.inner.dev.is_read_only() {
            fs.heal_other_slot()?;
        }
        Ok(fs)
    }

    /// When open found one slot invalid and read the other (its mirror): the invalid slot and
    /// why. A read-write open has rewritten it since; a read-only one (`info`, `ls`) has not,
    /// and says so.
    pub fn invalid_slot_at_open(&self) -> Option<(SlotId, &Corruption)> {
        self.inner.invalid_at_open.as_ref().map(|(id, c)| (*id, c))
    }

    /// Copies the current state, generation included, into the slot open did not choose: one
    /// write and one flush. The copy decodes to the same state (only the slot's own index,
    /// offset and checksums differ), so equal generations always mean equal contents.
    fn heal_other_slot(&self) -> Result<()> {
        let st = self.inner.lock();
        let id = st.sb.slot.other();
        let buf = self.encode(&st.sb, &entries(&st), id)?;
        self.inner.write(
            &buf,
            id.offset(),
            &format_args!("healing {id} from {}", st.sb.slot),
        )?;
        self.inner.flush()
    }

    /// The superblock `format` would write on a device of `dev_len` bytes with these sector
    /// sizes (nothing is written).
    pub fn plan(
        dev_len: u64,
        logical_sector_size: u32,
        physical_sector_size: u32,
        target: &str,
        opts: &FormatOptions,
    ) -> Result<Superblock> {
        check_sector_sizes(logical_sector_size, physical_sector_size, target)?;
        check_label(&opts.label, target)?;
        let total = match opts.size {
            Some(s) if s % BLOCK_SIZE != 0 => {
                return Err(Error::BadSize {
                    target: target.to_string(),
                    reason: crate::format::size_reason(s),
                })
            }
            Some(s) if s > dev_len => {
                return Err(Error::BadSize {
                    target: target.to_string(),
                    reason: format!("{s} bytes is larger than the target ({dev_len} bytes)"),
                })
            }
            Some(s) => s,
            None => dev_len / BLOCK_SIZE * BLOCK_SIZE,
        };
        if total > MAX_SIZE {
            return Err(Error::BadSize {
                target: target.to_string(),
                reason: format!(
                    "{total} bytes is larger than the largest minfs filesystem ({MAX_SIZE} bytes); give a smaller --size"
                ),
            });
        }
        if total < MIN_SIZE {
            return Err(Error::TooSmall {
                target: target.to_string(),
                size: total,
                min: MIN_SIZE,
            });
        }
        let block_count = (total - DATA_START) / BLOCK_SIZE;
        let t = opts.time.unwrap_or_else(now);
        Ok(Superblock {
            slot: SlotId::A,
            generation: 1,
            uuid: opts
                .uuid
                .unwrap_or_else(|| *uuid::Uuid::new_v4().as_bytes()),
            label: opts.label.clone(),
            logical_sector_size,
            physical_sector_size,
            total_bytes: total,
            data_start: DATA_START,
            block_count,
            free_blocks: block_count,
            file_count: 0,
            file_table_len: 0,
            file_table_crc: 0,
            created: t,
            updated: t,
        })
    }

    /// Formats `dev`: zeroes the reserved area (both slots included), then makes one commit:
    /// generation 1, the empty file table, in slot B and then slot A, flushing before and after
    /// each. Refuses a device holding a known signature unless `opts.force`.
    pub fn format(
        dev: Arc<dyn BlockDevice>,
        target: impl Into<String>,
        opts: &FormatOptions,
    ) -> Result<Filesystem> {
        let target = target.into();
        let sb = Filesystem::plan(
            dev.len(),
            dev.logical_sector_size(),
            dev.physical_sector_size(),
            &target,
            opts,
        )?;
        if !opts.force {
            if let Some(sig) = signature::probe(dev.as_ref())
                .map_err(|e| Error::io(&target, "probing for existing signatures", e))?
            {
                return Err(Error::ExistingSignature {
                    target,
                    kind: sig.kind.to_string(),
                    offset: sig.offset,
                });
            }
        }
        let zero = AlignedBuf::zeroed(DATA_START as usize, 4096);
        dev.write_at(&zero, 0)
            .map_err(|e| Error::io(&target, "zeroing the reserved area", e))?;
        let alloc = Allocator::new(sb.first_data_block(), sb.block_count);
        let fs = Filesystem {
            inner: Arc::new(Inner {
                dev,
                target,
                fixed_time: opts.time,
                single_slot_commits: AtomicBool::new(false),
                poisoned: AtomicBool::new(false),
                state: Mutex::new(State {
                    sb: Superblock {
                        generation: 0,
                        ..sb
                    },
                    files: BTreeMap::new(),
                    alloc,
                }),
                invalid_at_open: None,
            }),
        };
        fs.rewrite_metadata(1)?;
        Ok(fs)
    }

    /// The active superblock.
    pub fn superblock(&self) -> Superblock {
        self.inner.lock().sb.clone()
    }

    /// The target's name as given when opening.
    pub fn target(&self) -> &str {
        &self.inner.target
    }

    /// The device under the filesystem.
    pub fn device(&self) -> &Arc<dyn BlockDevice> {
        &self.inner.dev
    }

    /// Filesystem-wide facts and every file.
    pub fn info(&self) -> Info {
        let st = self.inner.lock();
        let sb = &st.sb;
        Info {
            target: self.inner.target.clone(),
            uuid: uuid::Uuid::from_bytes(sb.uuid).hyphenated().to_string(),
            label: sb.label.clone(),
            format_version: FORMAT_VERSION,
            generation: sb.generation,
            active_slot: sb.slot,
            block_size: BLOCK_SIZE,
            logical_sector_size: self.inner.dev.logical_sector_size(),
            physical_sector_size: self.inner.dev.physical_sector_size(),
            total_bytes: sb.total_bytes,
            data_start: sb.data_start,
            block_count: sb.block_count,
            free_blocks: st.alloc.free_blocks(),
            free_bytes: st.alloc.free_blocks() * BLOCK_SIZE,
            max_files: MAX_FILES,
            superblock_offsets: SLOT_OFFSETS,
            created: sb.created,
            updated: sb.updated,
            files: st.files.values().map(|n| stat_of(n)).collect(),
        }
    }

    /// Every file, by name.
    pub fn list(&self) -> Vec<FileStat> {
        self.inner
            .lock()
            .files
            .values()
            .map(|n| stat_of(n))
            .collect()
    }

    /// One file.
    pub fn stat(&self, name: &str) -> Result<FileStat> {
        let st = self.inner.lock();
        st.files
            .get(name)
            .map(|n| stat_of(n))
            .ok_or_else(|| self.not_found(name))
    }

    /// Free bytes.
    pub fn free_bytes(&self) -> u64 {
        self.inner.lock().alloc.free_blocks() * BLOCK_SIZE
    }

    /// Creates a file of `size` bytes, preallocated: one contiguous extent when a free run is
    /// large enough, else the fewest extents (largest free runs first). Durable on return.
    pub fn create(&self, name: &str, size: u64) -> Result<FileStat> {
        self.check_name(name)?;
        let mut st = self.inner.lock();
        if st.files.contains_key(name) {
            return Err(Error::FileExists {
                target: self.inner.target.clone(),
                name: name.into(),
            });
        }
        if st.files.len() >= MAX_FILES {
            return Err(Error::TooManyFiles {
                target: self.inner.target.clone(),
                max: MAX_FILES,
            });
        }
        let need = blocks_for(size);
        let mut chosen = st.alloc.choose(need);
        if chosen.is_none() && trim_others(&mut st, None) > 0 {
            chosen = st.alloc.choose(need);
        }
        let extents = chosen.ok_or_else(|| Error::NoSpace {
            target: self.inner.target.clone(),
            name: name.into(),
            needed_blocks: need,
            free_blocks: st.alloc.free_blocks(),
        })?;
        if size > 0 {
            self.zero_first_block(&extents, name)?;
        }
        let mut alloc = st.alloc.clone();
        extents.iter().for_each(|e| alloc.set(*e, true));
        let mut entries = entries(&st);
        entries.push(FileEntry {
            name: name.into(),
            size,
            extents: extents.clone(),
        });
        self.commit(&mut st, entries, alloc)?;
        let node = Arc::new(Node {
            name: name.into(),
            meta: RwLock::new(Meta::synced_to(size, extents)),
        });
        let stat = stat_of(&node);
        st.files.insert(name.into(), node);
        Ok(stat)
    }

    /// Grows a file to `new_size` bytes (never shrinks). Extends its last extent in place when
    /// the blocks after it are free. Durable on return; open handles see the new size.
    pub fn grow(&self, name: &str, new_size: u64) -> Result<FileStat> {
        let mut st = self.inner.lock();
        let node = st
            .files
            .get(name)
            .cloned()
            .ok_or_else(|| self.not_found(name))?;
        let meta = node.meta.read().unwrap_or_else(|e| e.into_inner()).clone();
        if new_size < meta.size {
            return Err(Error::Shrink {
                target: self.inner.target.clone(),
                name: name.into(),
                size: meta.size,
                new_size,
            });
        }
        // Blocks preallocated past the size (`extend_unsynced`) count as held already.
        let held = meta.allocated_blocks();
        let need = blocks_for(new_size).saturating_sub(held);
        let mut extents = meta.extents.clone();
        let in_place = extents.last().map(|l| Extent {
            start: l.end(),
            len: need,
        });
        let added = match in_place {
            _ if need == 0 => Vec::new(),
            Some(e) if st.alloc.is_free(e) => vec![e],
            _ => {
                let mut chosen = st.alloc.choose(need);
                if chosen.is_none() && trim_others(&mut st, Some(name)) > 0 {
                    chosen = st.alloc.choose(need);
                }
                chosen.ok_or_else(|| Error::NoSpace {
                    target: self.inner.target.clone(),
                    name: name.into(),
                    needed_blocks: need,
                    free_blocks: st.alloc.free_blocks(),
                })?
            }
        };
        if held == 0 && !added.is_empty() {
            self.zero_first_block(&added, name)?;
        }
        let mut alloc = st.alloc.clone();
        for e in added {
            alloc.set(e, true);
            append_extent(&mut extents, e);
        }
        let mut all = entries(&st);
        let new = Meta::synced_to(new_size, extents);
        if let Some(f) = all.iter_mut().find(|f| f.name == name) {
            *f = new.on_disk(name);
        }
        self.commit(&mut st, all, alloc)?;
        *node.meta.write().unwrap_or_else(|e| e.into_inner()) = new;
        Ok(stat_of(&node))
    }

    /// Sets a file's size (`truncate`): a larger size grows it as [`Filesystem::grow`] does; a
    /// smaller one cuts its extents to ⌈`new_size` / 4096⌉ blocks and frees the rest, which a
    /// later create or grow may reuse. Durable on return (one commit). Open handles see the new
    /// size: I/O past it is refused from then on.
    pub fn set_size(&self, name: &str, new_size: u64) -> Result<FileStat> {
        let mut st = self.inner.lock();
        let node = st
            .files
            .get(name)
            .cloned()
            .ok_or_else(|| self.not_found(name))?;
        let meta = node.meta.read().unwrap_or_else(|e| e.into_inner()).clone();
        if new_size >= meta.size {
            drop(st);
            return self.grow(name, new_size);
        }
        let mut keep = blocks_for(new_size);
        let mut extents = Vec::new();
        let mut alloc = st.alloc.clone();
        for e in &meta.extents {
            let take = keep.min(e.len);
            if take > 0 {
                extents.push(Extent {
                    start: e.start,
                    len: take,
                });
            }
            if take < e.len {
                alloc.set(
                    Extent {
                        start: e.start + take,
                        len: e.len - take,
                    },
                    false,
                );
            }
            keep -= take;
        }
        let mut all = entries(&st);
        if let Some(f) = all.iter_mut().find(|f| f.name == name) {
            f.size = new_size;
            f.extents = extents.clone();
        }
        self.commit(&mut st, all, alloc)?;
        // Taken after the commit, as in `grow`: I/O in flight finishes first, and the freed
        // blocks cannot be handed out before `st` is released.
        *node.meta.write().unwrap_or_else(|e| e.into_inner()) = Meta::synced_to(new_size, extents);
        Ok(stat_of(&node))
    }

    /// Makes a file `end` bytes long when it is shorter, **in memory only**: no commit. Handles
    /// see the new size at once; the file table gets it at the next [`Filesystem::sync_size`]
    /// (or any other change of this file's size). When the file needs more blocks it takes
    /// them ahead, as XFS's speculative end-of-file preallocation does: as many again as it
    /// holds (64 KiB to 8 GiB, fewer when less is free), in place after its last extent where
    /// that is free. When fewer blocks are free than the write needs, the other files'
    /// preallocation is given back first (so does `create` and `grow`). A file's first block is
    /// zeroed when it is taken. `minfs mount` serves a
    /// write past the end with this, so a client appending pays no commit per write.
    ///
    /// Until the size is synced, a crash leaves the file at its last synced size: the blocks
    /// taken here are free in the file table (never recorded as this or another file's), and
    /// the bytes written into them are lost with the size.
    pub fn extend_unsynced(&self, name: &str, end: u64) -> Result<()> {
        let mut st = self.inner.lock();
        self.inner.check_usable()?;
        if self.inner.dev.is_read_only() {
            return Err(Error::ReadOnly {
                target: self.inner.target.clone(),
            });
        }
        let node = st
            .files
            .get(name)
            .cloned()
            .ok_or_else(|| self.not_found(name))?;
        let meta = node.meta.read().unwrap_or_else(|e| e.into_inner()).clone();
        if end <= meta.size {
            return Ok(());
        }
        let held = meta.allocated_blocks();
        let need = blocks_for(end).saturating_sub(held);
        let mut extents = meta.extents;
        if need > 0 {
            if st.alloc.free_blocks() < need {
                trim_others(&mut st, Some(name));
            }
            let free = st.alloc.free_blocks();
            if free < need {
                return Err(Error::NoSpace {
                    target: self.inner.target.clone(),
                    name: name.into(),
                    needed_blocks: need,
                    free_blocks: free,
                });
            }
            let want = (need + held.clamp(MIN_AHEAD_BLOCKS, MAX_AHEAD_BLOCKS)).min(free);
            let room = extents.last().map_or(0, |l| st.alloc.free_run_at(l.end()));
            let added = match extents.last() {
                Some(l) if room >= need => vec![Extent {
                    start: l.end(),
                    len: room.min(want),
                }],
                // Elsewhere: all of `want` in one run, else only what is needed.
                _ => match st.alloc.choose(want) {
                    Some(one) if one.len() == 1 => one,
                    _ => st.alloc.choose(need).expect("enough blocks are free"),
                },
            };
            if held == 0 {
                self.zero_first_block(&added, name)?;
            }
            for e in added {
                st.alloc.set(e, true);
                append_extent(&mut extents, e);
            }
        }
        let mut m = node.meta.write().unwrap_or_else(|e| e.into_inner());
        m.size = end;
        m.extents = extents;
        Ok(())
    }

    /// Commits a file's size when it differs from the file table's (after
    /// [`Filesystem::extend_unsynced`]): one commit, which flushes the device first, so the
    /// bytes written up to the size are durable with it. Returns whether it committed.
    pub fn sync_size(&self, name: &str) -> Result<bool> {
        let mut st = self.inner.lock();
        let node = st
            .files
            .get(name)
            .cloned()
            .ok_or_else(|| self.not_found(name))?;
        let meta = node.meta.read().unwrap_or_else(|e| e.into_inner()).clone();
        if meta.size == meta.synced {
            return Ok(false);
        }
        let mut all = entries(&st);
        let synced = Meta {
            synced: meta.size,
            ..meta
        };
        if let Some(f) = all.iter_mut().find(|f| f.name == name) {
            *f = synced.on_disk(name);
        }
        let alloc = st.alloc.clone();
        self.commit(&mut st, all, alloc)?;
        node.meta.write().unwrap_or_else(|e| e.into_inner()).synced = synced.synced;
        Ok(true)
    }

    /// Commits every file's size that differs from the file table's, in one commit (none when
    /// all are synced). Returns whether it committed.
    pub fn sync_all_sizes(&self) -> Result<bool> {
        let mut st = self.inner.lock();
        let nodes: Vec<Arc<Node>> = st.files.values().cloned().collect();
        let metas: Vec<Meta> = nodes
            .iter()
            .map(|n| n.meta.read().unwrap_or_else(|e| e.into_inner()).clone())
            .collect();
        if metas.iter().all(|m| m.size == m.synced) {
            return Ok(false);
        }
        let all = nodes
            .iter()
            .zip(&metas)
            .map(|(n, m)| {
                Meta {
                    synced: m.size,
                    ..m.clone()
                }
                .on_disk(&n.name)
            })
            .collect();
        let alloc = st.alloc.clone();
        self.commit(&mut st, all, alloc)?;
        for (n, m) in nodes.iter().zip(&metas) {
            n.meta.write().unwrap_or_else(|e| e.into_inner()).synced = m.size;
        }
        Ok(true)
    }

    /// Gives back a file's preallocated blocks (those past ⌈size / 4096⌉, taken by
    /// [`Filesystem::extend_unsynced`]). In memory only: the file table never held them.
    /// Returns the number of blocks freed.
    pub fn trim_preallocation(&self, name: &str) -> Result<u64> {
        let mut st = self.inner.lock();
        let node = st
            .files
            .get(name)
            .cloned()
            .ok_or_else(|| self.not_found(name))?;
        let mut m = node.meta.write().unwrap_or_else(|e| e.into_inner());
        Ok(trim(&mut st.alloc, &mut m))
    }

    /// [`Filesystem::trim_preallocation`] of every file; returns the blocks freed.
    pub fn trim_all_preallocation(&self) -> Result<u64> {
        let names: Vec<String> = self.inner.lock().files.keys().cloned().collect();
        let mut freed = 0;
        for n in names {
            freed += self.trim_preallocation(&n)?;
        }
        Ok(freed)
    }

    /// Writes zeros over the first block of `extents` (a file's first block, before the commit
    /// or the write that gives it to the file), so that a new file never begins with what an
    /// earlier file left there — such as a Cannyls storage header, which `FileNvm` and
    /// `MinfsNvm` would open as an existing storage.
    fn zero_first_block(&self, extents: &[Extent], name: &str) -> Result<()> {
        let Some(first) = extents.first() else {
            return Ok(());
        };
        if self.inner.dev.is_read_only() {
            return Err(Error::ReadOnly {
                target: self.inner.target.clone(),
            });
        }
        let zero = AlignedBuf::zeroed(BLOCK_SIZE as usize, 4096);
        self.inner.write(
            &zero,
            first.byte_offset(),
            &format_args!("zeroing the first block of {name:?}"),
        )
    }

    /// Removes a file and frees its blocks. Refused while a handle to it is open.
    pub fn remove(&self, name: &str) -> Result<()> {
        let mut st = self.inner.lock();
        let node = st.files.get(name).ok_or_else(|| self.not_found(name))?;
        if Arc::strong_count(node) > 1 {
            return Err(Error::FileBusy {
                target: self.inner.target.clone(),
                name: name.into(),
            });
        }
        let mut alloc = st.alloc.clone();
        for e in &node.meta.read().unwrap_or_else(|e| e.into_inner()).extents {
            alloc.set(*e, false);
        }
        let all = entries(&st)
            .into_iter()
            .filter(|f| f.name != name)
            .collect();
        self.commit(&mut st, all, alloc)?;
        st.files.remove(name);
        Ok(())
    }

    /// A handle for positional I/O on a file.
    pub fn open_file(&self, name: &str) -> Result<FileHandle> {
        let st = self.inner.lock();
        let node = st
            .files
            .get(name)
            .cloned()
            .ok_or_else(|| self.not_found(name))?;
        Ok(FileHandle::new(self.inner.clone(), node))
    }

    /// Flushes the device.
    pub fn flush(&self) -> Result<()> {
        self.inner.flush()
    }

    /// Rewrites the current metadata `times` times, each a full commit (both slots, generation
    /// + 1), recomputing the free-block count. `fsck -y` uses it after open has healed the slots.
    pub fn rewrite_metadata(&self, times: usize) -> Result<()> {
        let mut st = self.inner.lock();
        for _ in 0..times {
            let entries = entries(&st);
            let alloc = st.alloc.clone();
            self.commit(&mut st, entries, alloc)?;
        }
        Ok(())
    }

    /// Changes the label and/or the UUID (`None`: kept) in one commit, as every other change:
    /// a crash leaves either the old or the new label and UUID, never a mix of the two. A label
    /// longer than 32 bytes or holding NUL, and the nil UUID, are refused before anything is
    /// written.
    pub fn set_label_and_uuid(&self, label: Option<&str>, uuid: Option<[u8; 16]>) -> Result<()> {
        let target = &self.inner.target;
        if let Some(l) = label {
            check_label(l, target)?;
        }
        if uuid == Some([0; 16]) {
            return Err(Error::InvalidArgument {
                target: target.clone(),
                reason: "the nil UUID (all zeros) names no filesystem".into(),
            });
        }
        let mut st = self.inner.lock();
        let old = (st.sb.label.clone(), st.sb.uuid);
        if let Some(l) = label {
            st.sb.label = l.to_string();
        }
        if let Some(u) = uuid {
            st.sb.uuid = u;
        }
        let entries = entries(&st);
        let alloc = st.alloc.clone();
        let result = self.commit(&mut st, entries, alloc);
        if result.is_err() {
            // Poisoned now; what is on disk is the old or the new state, as after a crash.
            (st.sb.label, st.sb.uuid) = old;
        }
        result
    }

    /// Makes commits write the inactive slot only (the older protocol: one slot
    /// write and two flushes per commit). Only for the commit benchmark's baseline: a commit
    /// then lives in one slot until the next read-write open copies it.
    #[doc(hidden)]
    pub fn set_single_slot_commits_for_bench(&self, on: bool) {
        self.inner.single_slot_commits.store(on, Ordering::Relaxed);
    }

    /// Encodes slot `id` holding `sb` and `files`.
    fn encode(&self, sb: &Superblock, files: &[FileEntry], id: SlotId) -> Result<AlignedBuf> {
        slot::encode(sb, files, id).map_err(|needed| Error::FileTableFull {
            target: self.inner.target.clone(),
            files: files.len(),
            extents: files.iter().map(|f| f.extents.len()).sum(),
            needed,
            capacity: file_table::PAYLOAD_CAPACITY,
            max_extents: file_table::MAX_EXTENTS,
        })
    }

    /// One commit: flush; write the inactive slot with generation + 1; flush (the change is
    /// durable from here on); write the same state into the other slot; flush. Both slots then
    /// hold it, and the active slot stays the one open chose. If the last write or flush fails
    /// the error is returned (and the filesystem poisoned) although the change is durable.
    fn commit(
        &self,
        st: &mut MutexGuard<'_, State>,
        mut files: Vec<FileEntry>,
        alloc: Allocator,
    ) -> Result<()> {
        let inner = &self.inner;
        if inner.dev.is_read_only() {
            return Err(Error::ReadOnly {
                target: inner.target.clone(),
            });
        }
        files.sort_by(|a, b| a.name.cmp(&b.name));
        let active = st.sb.slot;
        let first = active.other();
        // From the files as recorded: blocks preallocated in memory are free on disk.
        let used: u64 = files.iter().map(FileEntry::allocated_blocks).sum();
        let sb = Superblock {
            generation: st.sb.generation + 1,
            free_blocks: st.sb.block_count - used,
            updated: inner.fixed_time.unwrap_or_else(now),
            file_count: files.len() as u32,
            ..st.sb.clone()
        };
        let buf = self.encode(&sb, &files, first)?;
        inner.flush()?;
        inner.write(&buf, first.offset(), &format_args!("writing {first}"))?;
        inner.flush()?;
        let slot = if inner.single_slot_commits.load(Ordering::Relaxed) {
            first
        } else {
            let buf = self.encode(&sb, &files, active)?;
            inner.write(
                &buf,
                active.offset(),
                &format_args!(
                    "writing {active}, the copy of generation {} (durable in {first})",
                    sb.generation
                ),
            )?;
            inner.flush()?;
            active
        };
        st.sb = Superblock { slot, ..sb };
        st.alloc = alloc;
        Ok(())
    }

    fn check_name(&self, name: &str) -> Result<()> {
        match name_problem(name) {
            Some(reason) => Err(Error::InvalidName {
                target: self.inner.target.clone(),
                name: name.into(),
                reason,
            }),
            None => Ok(()),
        }
    }

    fn not_found(&self, name: &str) -> Error {
        Error::FileNotFound {
            target: self.inner.target.clone(),
            name: name.into(),
        }
    }
}

fn check_device_geometry(dev: &dyn BlockDevice, target: &str) -> Result<()> {
    check_sector_sizes(
        dev.logical_sector_size(),
        dev.physical_sector_size(),
        target,
    )
}

/// A label fits the superblock's 32-byte field and holds no NUL (its padding).
fn check_label(label: &str, target: &str) -> Result<()> {
    if label.len() > LABEL_SIZE || label.contains('\0') {
        return Err(Error::InvalidArgument {
            target: target.to_string(),
            reason: format!(
                "label {label:?} is {} bytes: longer than {LABEL_SIZE} bytes, or contains NUL",
                label.len()
            ),
        });
    }
    Ok(())
}

fn check_sector_sizes(l: u32, p: u32, target: &str) -> Result<()> {
    if !l.is_power_of_two() || !(512..=4096).contains(&l) || !p.is_power_of_two() || p < l {
        return Err(Error::NotATarget {
            target: target.to_string(),
            reason: format!(
                "unsupported sector sizes: logical {l}, physical {p} (minfs needs a logical sector of 512 to 4096 bytes)"
            ),
        });
    }
    Ok(())
}

/// The file table as the next commit records it: every file's synced view ([`Meta::on_disk`]).
fn entries(st: &State) -> Vec<FileEntry> {
    st.files
        .values()
        .map(|n| {
            n.meta
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .on_disk(&n.name)
        })
        .collect()
}

/// Frees `m`'s blocks past ⌈size / 4096⌉ (its preallocation) in `alloc`; returns how many.
fn trim(alloc: &mut Allocator, m: &mut Meta) -> u64 {
    let keep = blocks_for(m.size);
    let mut freed = 0;
    let mut at = 0u64;
    for e in &m.extents {
        let skip = keep.saturating_sub(at).min(e.len);
        if skip < e.len {
            alloc.set(
                Extent {
                    start: e.start + skip,
                    len: e.len - skip,
                },
                false,
            );
            freed += e.len - skip;
        }
        at += e.len;
    }
    m.extents = prefix(&m.extents, keep);
    freed
}

/// Gives back the preallocation of every file but `except`, in memory: what an allocation
/// that would otherwise fail for want of space does first (as XFS trims speculative
/// preallocation before it reports ENOSPC). Returns the blocks freed.
fn trim_others(st: &mut State, except: Option<&str>) -> u64 {
    let mut freed = 0;
    for (name, node) in &st.files {
        if Some(name.as_str()) != except {
            let mut m = node.meta.write().unwrap_or_else(|e| e.into_inner());
            freed += trim(&mut st.alloc, &mut m);
        }
    }
    freed
}

/// Appends `e` to `extents`, merging it into the last extent when it follows on.
fn append_extent(extents: &mut Vec<Extent>, e: Extent) {
    match extents.last_mut() {
        Some(l) if l.end() == e.start => l.len += e.len,
        _ => extents.push(e),
    }
}

fn stat_of(n: &Node) -> FileStat {
    let m = n.meta.read().unwrap_or_else(|e| e.into_inner());
    FileStat {
        name: n.name.clone(),
        size: m.size,
        allocated: m.extents.iter().map(|e| e.byte_len()).sum(),
        extents: m
            .extents
            .iter()
            .map(|e| ExtentInfo {
                offset: e.byte_offset(),
                length: e.byte_len(),
            })
            .collect(),
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn check_usable(&self) -> Result<()> {
        if self.poisoned.load(Ordering::Acquire) {
            return Err(Error::Poisoned {
                target: self.target.clone(),
            });
        }
        Ok(())
    }

    /// A device write; a failure poisons every handle of this filesystem.
    pub(crate) fn write(
        &self,
        buf: &[u8],
        offset: u64,
        what: &dyn std::fmt::Display,
    ) -> Result<()> {
        self.check_usable()?;
        self.dev.write_at(buf, offset).map_err(|e| {
            self.poisoned.store(true, Ordering::Release);
            Error::io(
                &self.target,
                format!("{what} ({} bytes at byte {offset})", buf.len()),
                e,
            )
        })
    }

    /// A device read (a failure does not poison).
    pub(crate) fn read(
        &self,
        buf: &mut [u8],
        offset: u64,
        what: &dyn std::fmt::Display,
    ) -> Result<()> {
        self.check_usable()?;
        self.dev.read_at(buf, offset).map_err(|e| {
            Error::io(
                &self.target,
                format!("{what} ({} bytes at byte {offset})", buf.len()),
                e,
            )
        })
    }

    /// A device flush; a failure poisons (fsync errors are not retried).
    pub(crate) fn flush(&self) -> Result<()> {
        self.check_usable()?;
        self.dev.flush().map_err(|e| {
            self.poisoned.store(true, Ordering::Release);
            Error::io(&self.target, "flush", e)
        })
    }
}
