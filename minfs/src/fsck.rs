//! Checking and repairing a minfs target.
//!
//! Checks: both slots can be read and decode (magic, checksums, version, geometry, every extent
//! inside the data area, no two extents sharing a block, allocation matching each size), both
//! slots belong to the same filesystem (UUID) and hold the same committed state (a completed
//! commit is written to both: a slot with an older generation is left by a commit interrupted
//! between its two slot writes; equal generations with different contents cannot come from
//! minfs's own writes), and the recorded free-block count agrees with the extents (block count
//! less the blocks they hold). The overlap and free-count checks sort the extents: O(E log E),
//! whatever the device size. Repair copies the newest valid slot into the other one (what a
//! read-write open does), then commits once if anything else is still wrong.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use crate::device::{BlockDevice, FileDevice, OpenMode};
use crate::error::{Corruption, Result, SlotId};
use crate::fs::{choose_active, read_slots, same_state, Filesystem};

/// One thing fsck found wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Problem {
    /// A slot does not decode.
    SlotInvalid {
        slot: SlotId,
        corruption: Corruption,
    },
    /// Neither slot is valid; nothing to repair from.
    NoValidSlot,
    /// The slots carry different UUIDs.
    UuidMismatch {
        slot: SlotId,
        uuid: String,
        active_uuid: String,
    },
    /// The slot holds an older commit than the other (a commit interrupted between its two
    /// slot writes, or a slot written by a minfs that committed to the inactive slot only).
    StaleSlot {
        slot: SlotId,
        generation: u64,
        newest: u64,
    },
    /// Both slots carry the same generation with different contents (never written by minfs;
    /// open uses slot A).
    ConflictingSlots { generation: u64 },
    /// The superblock's free-block count disagrees with the extents: `counted` is the block
    /// count less the blocks the files' extents hold.
    FreeCountMismatch {
        slot: SlotId,
        recorded: u64,
        counted: u64,
    },
}

impl Problem {
    /// Whether `fsck -y` can fix it.
    pub fn repairable(&self) -> bool {
        !matches!(self, Problem::NoValidSlot)
    }

    /// Whether preen mode (`fsck -p`/`-a`, what the boot-time check passes) repairs it
    /// without a question: the damage minfs's own writes can leave — one slot torn by an
    /// interrupted commit (a checksum mismatch) or unreadable (a failed sector), or holding an
    /// older commit than the other — while the other slot holds the last commit, which is
    /// what any read-write open repairs too; and a free-block count that disagrees with the
    /// extents it is derived from. Everything else needs a person and `fsck -y`: slots of two
    /// different filesystems, two states under one generation, a slot from a newer minfs,
    /// a slot whose checksum is right but whose contents are not (a bug, or a target that
    /// shrank), a slot overwritten by something else (no magic), no valid slot at all.
    pub fn preen_safe(&self) -> bool {
        match self {
            Problem::SlotInvalid { corruption, .. } => matches!(
                corruption,
                Corruption::BadChecksum { .. } | Corruption::Unreadable { .. }
            ),
            Problem::StaleSlot { .. } | Problem::FreeCountMismatch { .. } => true,
            Problem::NoValidSlot
            | Problem::UuidMismatch { .. }
            | Problem::ConflictingSlots { .. } => false,
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::SlotInvalid { slot, corruption } => {
                write!(f, "{slot} is invalid: {corruption}")
            }
            Problem::NoValidSlot => f.write_str("no valid metadata slot; cannot repair"),
            Problem::UuidMismatch {
                slot,
                uuid,
                active_uuid,
            } => write!(
                f,
                "{slot} belongs to filesystem {uuid}, the active slot to {active_uuid}"
            ),
            Problem::StaleSlot {
                slot,
                generation,
                newest,
            } => write!(
                f,
                "{slot} holds generation {generation}, older than the other slot's {newest}: the last commit is in one slot only"
            ),
            Problem::ConflictingSlots { generation } => write!(
                f,
                "both slots carry generation {generation} but hold different contents (open uses slot A)"
            ),
            Problem::FreeCountMismatch {
                slot,
                recorded,
                counted,
            } => write!(
                f,
                "{slot}: superblock records {recorded} free blocks, the extents leave {counted}"
            ),
        }
    }
}

/// The outcome of a check.
#[derive(Debug, Clone)]
pub struct Report {
    pub problems: Vec<Problem>,
    /// The slot open would use.
    pub active: Option<SlotId>,
    /// Per slot: its generation when valid.
    pub generations: [Option<u64>; 2],
    pub files: usize,
    pub block_count: u64,
    pub free_blocks: u64,
}

impl Report {
    pub fn is_clean(&self) -> bool {
        self.problems.is_empty()
    }

    /// Whether preen mode may repair every problem found ([`Problem::preen_safe`]).
    pub fn preen_safe(&self) -> bool {
        self.problems.iter().all(Problem::preen_safe)
    }
}

/// The outcome of [`preen`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Preened {
    /// Nothing was wrong; nothing was written.
    Clean(Report),
    /// Everything wrong was safe to repair unattended, and was repaired.
    Repaired { before: Report, after: Report },
    /// Something wrong needs a person (`fsck -y`); nothing was written.
    Refused(Report),
}

/// Checks the filesystem on `dev` without writing.
pub fn check_device(dev: &dyn BlockDevice, target: &str) -> Result<Report> {
    let slots = read_slots(dev, target)?;
    let active = choose_active(&slots);
    let mut problems = Vec::new();
    for id in SlotId::BOTH {
        if let Err(c) = &slots[id.index()] {
            problems.push(Problem::SlotInvalid {
                slot: id,
                corruption: c.clone(),
            });
        }
    }
    let generations = [
        slots[0].as_ref().ok().map(|s| s.sb.generation),
        slots[1].as_ref().ok().map(|s| s.sb.generation),
    ];
    let Some(active) = active else {
        problems.push(Problem::NoValidSlot);
        return Ok(Report {
            problems,
            active: None,
            generations,
            files: 0,
            block_count: 0,
            free_blocks: 0,
        });
    };
    let act = slots[active.index()]
        .as_ref()
        .expect("active slot is valid");
    let uuid = |u: [u8; 16]| uuid::Uuid::from_bytes(u).hyphenated().to_string();
    for s in slots.iter().flatten() {
        let counted = s.alloc.free_blocks();
        if s.sb.free_blocks != counted {
            problems.push(Problem::FreeCountMismatch {
                slot: s.sb.slot,
                recorded: s.sb.free_blocks,
                counted,
            });
        }
    }
    if let Ok(other) = &slots[active.other().index()] {
        if other.sb.uuid != act.sb.uuid {
            problems.push(Problem::UuidMismatch {
                slot: active.other(),
                uuid: uuid(other.sb.uuid),
                active_uuid: uuid(act.sb.uuid),
            });
        } else if other.sb.generation < act.sb.generation {
            problems.push(Problem::StaleSlot {
                slot: active.other(),
                generation: other.sb.generation,
                newest: act.sb.generation,
            });
        } else if !same_state(act, other) {
            problems.push(Problem::ConflictingSlots {
                generation: act.sb.generation,
            });
        }
    }
    Ok(Report {
        problems,
        active: Some(active),
        generations,
        files: act.files.len(),
        block_count: act.sb.block_count,
        free_blocks: act.alloc.free_blocks(),
    })
}

/// Checks `path` read-only.
pub fn check(path: &Path) -> Result<Report> {
    let dev = FileDevice::open(path, OpenMode::ReadOnly)?;
    check_device(&dev, &path.display().to_string())
}

/// Checks and repairs: when anything is wrong and a valid slot exists, the newest valid slot
/// is copied into the other one (a read-write open does that); if a problem remains (a wrong
/// free-block count), one commit rewrites both slots. Returns the reports before and after.
pub fn repair_device(dev: Arc<dyn BlockDevice>, target: &str) -> Result<(Report, Report)> {
    let before = check_device(dev.as_ref(), target)?;
    if before.is_clean() || before.active.is_none() {
        return Ok((before.clone(), before));
    }
    let fs = Filesystem::open_device(dev.clone(), target)?;
    let mut after = check_device(dev.as_ref(), target)?;
    if !after.is_clean() {
        fs.rewrite_metadata(1)?;
        after = check_device(dev.as_ref(), target)?;
    }
    drop(fs);
    Ok((before, after))
}

/// Preen mode (`fsck -p`/`-a`): checks `path` read-only; when something is wrong and all of
/// it is [`Problem::preen_safe`], opens it read-write (exclusively), checks again on that
/// handle and repairs as [`repair_device`]. Anything not safe to repair unattended is
/// refused before anything is written. A clean target is never opened for writing, so a
/// clean, mounted target passes.
pub fn preen(path: &Path) -> Result<Preened> {
    let first = check(path)?;
    if first.is_clean() {
        return Ok(Preened::Clean(first));
    }
    if !first.preen_safe() {
        return Ok(Preened::Refused(first));
    }
    let target = path.display().to_string();
    let dev: Arc<dyn BlockDevice> = Arc::new(FileDevice::open(path, OpenMode::ReadWrite)?);
    let now = check_device(dev.as_ref(), &target)?;
    if now.is_clean() {
        return Ok(Preened::Clean(now));
    }
    if !now.preen_safe() {
        return Ok(Preened::Refused(now));
    }
    let (before, after) = repair_device(dev, &target)?;
    Ok(Preened::Repaired { before, after })
}

/// [`repair_device`] on `path`, opened read-write (exclusively).
pub fn repair(path: &Path) -> Result<(Report, Report)> {
    let dev = FileDevice::open(path, OpenMode::ReadWrite)?;
    repair_device(Arc::new(dev), &path.display().to_string())
}
