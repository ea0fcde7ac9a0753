//! Bad-sector images: after every commit of a workload, each logical sector of each
//! metadata slot in turn is corrupted (its bytes flipped) or made unreadable (a latent sector
//! error, [`CrashDevice::make_unreadable`]). Every such image must:
//! - be reported by `fsck -n` (a problem naming the hit slot), which writes nothing;
//! - open read-only in the last committed state (the files the workload listed after the
//!   commit), writing nothing;
//! - be healed by `fsck -y` (clean afterwards, the unreadable sector rewritten);
//! - then pass `fsck -n` clean and open read-write in the same state.

use std::io;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use minfs::device::fault::{CrashDevice, MediaState};
use minfs::format::SLOT_SIZE;
use minfs::fsck::{self, Problem};
use minfs::{AlignedBuf, BlockDevice, FileStat, Filesystem, SlotId};

use super::{RunLog, Step};

/// How a sector is damaged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Damage {
    /// Every byte XORed with 0xA5 (the checksums see it).
    Flipped,
    /// Reads touching it fail with EIO until it is written.
    Unreadable,
}

/// Counts over the bad-sector images.
#[derive(Debug, Default, Clone, Copy)]
pub struct BadSectorTally {
    pub images: u64,
    /// Commits of the workload the images were made after.
    pub commits: u64,
    /// Opens (read-only, or read-write after fsck -y) that showed another state.
    pub lost_commits: u64,
    pub open_failures: u64,
    /// `fsck -n` found nothing, or not the hit slot.
    pub unreported: u64,
    /// `fsck -y` did not leave the target clean (or left the sector unreadable).
    pub unhealed: u64,
    /// Writes or flushes by `fsck -n` or a read-only open.
    pub read_only_writes: u64,
    pub panics: u64,
}

impl BadSectorTally {
    pub fn merge(&mut self, o: &BadSectorTally) {
        self.images += o.images;
        self.commits += o.commits;
        self.lost_commits += o.lost_commits;
        self.open_failures += o.open_failures;
        self.unreported += o.unreported;
        self.unhealed += o.unhealed;
        self.read_only_writes += o.read_only_writes;
        self.panics += o.panics;
    }

    pub fn failures(&self) -> u64 {
        self.lost_commits
            + self.open_failures
            + self.unreported
            + self.unhealed
            + self.read_only_writes
            + self.panics
    }
}

/// A read-only view of a device that counts (and refuses) writes and flushes.
#[derive(Debug)]
struct ReadOnlyView {
    inner: Arc<CrashDevice>,
    writes: AtomicU64,
}

impl BlockDevice for ReadOnlyView {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.inner.read_at(buf, offset)
    }
    fn write_at(&self, _buf: &[u8], _offset: u64) -> io::Result<()> {
        self.writes.fetch_add(1, Ordering::Relaxed);
        Err(io::Error::from(io::ErrorKind::PermissionDenied))
    }
    fn flush(&self) -> io::Result<()> {
        self.writes.fetch_add(1, Ordering::Relaxed);
        Err(io::Error::from(io::ErrorKind::PermissionDenied))
    }
    fn len(&self) -> u64 {
        self.inner.len()
    }
    fn logical_sector_size(&self) -> u32 {
        self.inner.logical_sector_size()
    }
    fn physical_sector_size(&self) -> u32 {
        self.inner.physical_sector_size()
    }
    fn is_read_only(&self) -> bool {
        true
    }
}

/// The committed states of `log`: the media right after each commit (mkfs, create, grow,
/// remove) that returned, and the files listed after it.
pub fn committed_states(log: &RunLog) -> Vec<(MediaState, Vec<FileStat>)> {
    let g = log.geometry;
    let mut media = MediaState::new(vec![0; g.len as usize], g.logical);
    let mut at = 0u64;
    let mut out = Vec::new();
    for r in &log.records {
        let commit = matches!(
            r.step,
            Step::Format | Step::Create(..) | Step::Grow(..) | Step::Remove(_)
        );
        if !(commit && r.ok && r.as_expected && r.end > r.start) {
            continue;
        }
        while at < r.end {
            media.apply(&log.trace[at as usize]);
            at += 1;
        }
        assert!(media.pending().is_empty(), "a commit ends with a flush");
        let files = r
            .after
            .as_ref()
            .expect("a filesystem after a commit")
            .files
            .clone();
        out.push((media.clone(), files));
    }
    out
}

/// Checks one image: `state` with the sector at `offset` of slot `slot` damaged.
fn check_one(
    state: &(MediaState, Vec<FileStat>),
    physical: u32,
    slot: SlotId,
    offset: u64,
    damage: Damage,
    t: &mut BadSectorTally,
    why: &mut Vec<String>,
) {
    let (media, want) = state;
    let dev = Arc::new(media.crash_device(&[], physical));
    let lss = u64::from(dev.logical_sector_size());
    match damage {
        Damage::Flipped => {
            let mut buf = AlignedBuf::zeroed(lss as usize, 4096);
            dev.read_at(&mut buf, offset).unwrap();
            buf.iter_mut().for_each(|b| *b ^= 0xA5);
            dev.write_at(&buf, offset).unwrap();
        }
        Damage::Unreadable => dev.make_unreadable(offset, lss),
    }
    t.images += 1;
    let ro = ReadOnlyView {
        inner: dev.clone(),
        writes: AtomicU64::new(0),
    };
    // fsck -n reports the hit slot.
    match fsck::check_device(&ro, "bad-sector") {
        Ok(r)
            if r.problems
                .iter()
                .any(|p| matches!(p, Problem::SlotInvalid { slot: s, .. } if *s == slot)) => {}
        Ok(r) => {
            t.unreported += 1;
            why.push(format!("fsck -n: {:?}", r.problems));
        }
        Err(e) => {
            t.unreported += 1;
            why.push(format!("fsck -n: {e}"));
        }
    }
    // A read-only open shows the last commit.
    let ro = Arc::new(ro);
    match Filesystem::open_device(ro.clone(), "bad-sector") {
        Ok(fs) if fs.list() == *want => {}
        Ok(fs) => {
            t.lost_commits += 1;
            why.push(format!("read-only open: {} files", fs.list().len()));
        }
        Err(e) => {
            t.open_failures += 1;
            why.push(format!("read-only open: {e}"));
        }
    }
    if ro.writes.load(Ordering::Relaxed) > 0 {
        t.read_only_writes += 1;
        why.push("fsck -n or a read-only open wrote".into());
    }
    // fsck -y heals it; fsck -n is clean; a read-write open shows the last commit.
    match fsck::repair_device(dev.clone(), "bad-sector") {
        Ok((before, after)) if !before.is_clean() && after.is_clean() => {}
        Ok((_, after)) => {
            t.unhealed += 1;
            why.push(format!("fsck -y left {:?}", after.problems));
        }
        Err(e) => {
            t.unhealed += 1;
            why.push(format!("fsck -y: {e}"));
        }
    }
    match fsck::check_device(dev.as_ref(), "bad-sector") {
        Ok(r) if r.is_clean() && dev.unreadable_sectors().is_empty() => {}
        Ok(r) => {
            t.unhealed += 1;
            why.push(format!(
                "fsck -n after -y: {:?}, unreadable {:?}",
                r.problems,
                dev.unreadable_sectors()
            ));
        }
        Err(e) => {
            t.unhealed += 1;
            why.push(format!("fsck -n after -y: {e}"));
        }
    }
    match Filesystem::open_device(dev.clone(), "bad-sector") {
        Ok(fs) if fs.list() == *want => {}
        Ok(fs) => {
            t.lost_commits += 1;
            why.push(format!("open after fsck -y: {} files", fs.list().len()));
        }
        Err(e) => {
            t.open_failures += 1;
            why.push(format!("open after fsck -y: {e}"));
        }
    }
}

/// Every commit of `log` × both slots × every logical sector × both kinds of damage, shared
/// out among `threads` threads. Returns the tally and the failures.
pub fn sweep(log: &RunLog, threads: usize) -> (BadSectorTally, Vec<String>) {
    let states = committed_states(log);
    let g = log.geometry;
    let sectors = SLOT_SIZE / u64::from(g.logical);
    let mut cases = Vec::new();
    for c in 0..states.len() {
        for slot in SlotId::BOTH {
            for i in 0..sectors {
                for damage in [Damage::Flipped, Damage::Unreadable] {
                    cases.push((c, slot, slot.offset() + i * u64::from(g.logical), damage));
                }
            }
        }
    }
    let parts: Vec<(BadSectorTally, Vec<String>)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let (states, cases) = (&states, &cases);
                s.spawn(move || {
                    let mut tally = BadSectorTally::default();
                    let mut failures = Vec::new();
                    for &(c, slot, offset, damage) in cases.iter().skip(t).step_by(threads) {
                        let mut why = Vec::new();
                        let before = tally.failures();
                        let r = catch_unwind(AssertUnwindSafe(|| {
                            let mut t = BadSectorTally::default();
                            check_one(&states[c], g.physical, slot, offset, damage, &mut t, &mut why);
                            t
                        }));
                        match r {
                            Ok(t) => tally.merge(&t),
                            Err(_) => {
                                tally.images += 1;
                                tally.panics += 1;
                            }
                        }
                        if tally.failures() > before {
                            failures.push(format!(
                                "{}/{}: commit {c}, {slot} sector at byte {offset} {damage:?}: {why:?}",
                                g.logical, g.physical
                            ));
                        }
                    }
                    (tally, failures)
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    let mut tally = BadSectorTally::default();
    let mut failures = Vec::new();
    for (t, f) in parts {
        tally.merge(&t);
        failures.extend(f);
    }
    tally.commits = states.len() as u64;
    (tally, failures)
}
