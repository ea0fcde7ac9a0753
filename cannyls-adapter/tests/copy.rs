//! The copy of the header and journal region (`cannyls_adapter::copy`): one unreadable 4 KiB
//! at a time, everywhere in the storage header, the journal (whose ring has wrapped) and the
//! copy, on the fault-injecting device — the storage opens with every lump byte-identical to
//! the operation log, and the bad sector of the primary is rewritten in place. Storages made
//! without a copy still open and can be given one; a bad sector in free ring space does not
//! fail an open; the copy's placement keeps its distance.

use std::collections::BTreeMap;
use std::sync::Arc;

use cannyls::lump::{LumpData, LumpId};
use cannyls::storage::{Storage, StorageBuilder};
use cannyls_adapter::copy::{self, CopyAtOpen, CopyOptions, CopyPolicy};
use cannyls_adapter::recovery::{self, Inspection};
use cannyls_adapter::{Error, MinfsNvm};
use minfs::device::FaultDevice;
use minfs::{BlockDevice, Filesystem, FormatOptions};

const FILE: &str = "lusf";
const LOGICAL: u32 = 512;
const PHYSICAL: u32 = 4096;
const CAPACITY: u64 = 8 << 20;
/// A small journal (about 64 KiB) whose ring wraps.
const JOURNAL_RATIO: f64 = 0.008;
/// The copy 16 MiB away (more than the 8 MiB of a latent-error cluster's step), on a device
/// small enough to copy for every case.
const DISTANCE: u64 = 16 << 20;
const DEVICE: u64 = 40 << 20;

mod common;

/// Deterministic bytes of version `v` of lump `id`.
fn content(id: u128, v: u32, len: usize) -> Vec<u8> {
    common::pattern(id as u64 ^ (u64::from(v) << 40), len)
}

/// What the storage must hold: id → bytes.
type Expected = BTreeMap<u128, Vec<u8>>;
/// Every version each lump had: id → bytes put, in order.
type History = BTreeMap<u128, Vec<Vec<u8>>>;

fn filesystem(dev: &Arc<FaultDevice>) -> Filesystem {
    Filesystem::format(
        dev.clone() as Arc<dyn BlockDevice>,
        "fault",
        &FormatOptions::default(),
    )
    .unwrap()
}

fn options(policy: CopyPolicy) -> CopyOptions {
    CopyOptions {
        min_distance: DISTANCE,
        policy,
        ..CopyOptions::default()
    }
}

/// A policy that catches up at every `n`-th sync.
fn every(n: u32) -> CopyPolicy {
    CopyPolicy {
        max_age: std::time::Duration::from_secs(3600),
        max_syncs: n,
    }
}

fn new_storage(fs: &Filesystem, opts: CopyOptions) -> Storage<MinfsNvm> {
    let nvm = MinfsNvm::create_in(fs, FILE, CAPACITY)
        .unwrap()
        .with_copy_options(opts);
    let mut b = nvm.storage_builder();
    b.journal_region_ratio(JOURNAL_RATIO);
    b.journal_gc_queue_size(16);
    b.create(nvm).unwrap()
}

/// Rounds of puts (embedded and in the data region), overwrites, deletes and syncs, enough for
/// the small ring to wrap and its head to move; returns what the storage holds.
fn workload(storage: &mut Storage<MinfsNvm>, rounds: usize) -> Expected {
    workload_history(storage, rounds).0
}

fn workload_history(storage: &mut Storage<MinfsNvm>, rounds: usize) -> (Expected, History) {
    let mut want = Expected::new();
    let mut history = History::new();
    let mut version = 0u32;
    let sizes = [0usize, 1, 300, 511, 4096, 9000, 30_000];
    for r in 0..rounds {
        for j in 0..4u128 {
            let id = (r as u128 * 7 + j * 3) % 40 + 1;
            version += 1;
            let len = sizes[(r + j as usize) % sizes.len()];
            let bytes = content(id, version, len);
            let data = if j % 2 == 0 && len <= 1000 {
                LumpData::new_embedded(bytes.clone()).unwrap()
            } else {
                storage.allocate_lump_data_with_bytes(&bytes).unwrap()
            };
            storage.put(&LumpId::new(id), &data).unwrap();
            history.entry(id).or_default().push(bytes.clone());
            want.insert(id, bytes);
        }
        if r % 3 == 2 {
            let id = (r as u128 * 5) % 40 + 1;
            storage.delete(&LumpId::new(id)).unwrap();
            want.remove(&id);
        }
        storage.journal_sync().unwrap();
    }
    (want, history)
}

/// Every lump listed is expected, and reads its expected bytes; every expected lump is listed.
/// Returns the lumps compared.
fn compare(storage: &mut Storage<MinfsNvm>, want: &Expected, what: &str) -> usize {
    let listed: Vec<u128> = storage.list().into_iter().map(|l| l.as_u128()).collect();
    let expected: Vec<u128> = want.keys().copied().collect();
    assert_eq!(listed, expected, "{what}: the lumps listed");
    for (id, bytes) in want {
        let got = storage
            .get(&LumpId::new(*id))
            .unwrap_or_else(|e| panic!("{what}: lump {id}: {e}"))
            .unwrap_or_else(|| panic!("{what}: lump {id} missing"));
        assert!(
            got.as_bytes() == &bytes[..],
            "{what}: lump {id}: wrong bytes"
        );
    }
    want.len()
}

/// Device byte ranges of the file bytes `[offset, offset + len)`.
fn device_ranges(fs: &Filesystem, offset: u64, len: u64) -> Vec<(u64, u64)> {
    let f = fs.open_file(FILE).unwrap();
    cannyls_adapter::lumps::device_ranges(&f.extents(), offset, len)
}

/// The made storage: its device image (dropped cleanly), what it holds, and where its
/// primary header and journal, and its copy (image and trailer), lie on the device.
struct Made {
    image: Vec<u8>,
    want: Expected,
    history: History,
    primary: Vec<(u64, u64)>,
    copy: Vec<(u64, u64)>,
    layout: recovery::Layout,
    trailer: copy::Trailer,
}

fn make(policy: CopyPolicy, rounds: usize) -> Made {
    let dev = Arc::new(FaultDevice::new(DEVICE, LOGICAL, PHYSICAL));
    let fs = filesystem(&dev);
    let mut storage = new_storage(&fs, options(policy));
    let (want, history) = workload_history(&mut storage, rounds);
    drop(storage);
    let file = fs.open_file(FILE).unwrap();
    let trailer = copy::find(&file).unwrap().expect("a copy");
    let layout = match recovery::inspect(&file, 0, trailer.image).unwrap() {
        Inspection::Clean {
            layout, head, end, ..
        } => {
            assert!(end < head, "the ring has wrapped (head {head}, end {end})");
            assert_eq!(trailer.clean, Some((head, end)), "dropped level");
            layout
        }
        other => panic!("{other:?}"),
    };
    let len = layout.journal_start + layout.journal_size;
    assert_eq!(trailer.len, len);
    assert!(copy::device_distance(&file, 0, trailer.image, len) >= DISTANCE);
    drop(file);
    Made {
        image: dev.volatile_image(),
        want,
        history,
        primary: device_ranges(&fs, 0, len),
        copy: device_ranges(&fs, trailer.image, len + u64::from(layout.block_size)),
        layout,
        trailer,
    }
}

/// Opens the storage of a device with `bad` (device bytes) unreadable.
fn open_with_bad(
    image: &[u8],
    bad: (u64, u64),
) -> (Arc<FaultDevice>, Filesystem, Result<MinfsNvm, Error>) {
    let dev = Arc::new(FaultDevice::from_bytes(image.to_vec(), LOGICAL, PHYSICAL));
    dev.make_unreadable(bad.0, bad.1);
    dev.record_trace();
    let fs = Filesystem::open_device(dev.clone() as Arc<dyn BlockDevice>, "fault").unwrap();
    let nvm = MinfsNvm::from_filesystem(&fs, FILE);
    (dev, fs, nvm)
}

fn blocks_of(ranges: &[(u64, u64)]) -> Vec<u64> {
    ranges
        .iter()
        .flat_map(|&(a, n)| (a..a + n).step_by(4096))
        .collect()
}

/// Every 4 KiB of the primary header and journal, and of the copy and its trailer, unreadable
/// in turn: the storage opens with every lump as the operation log says; a bad block of the
/// primary that the open needed is rewritten from the copy (readable again), and one of the
/// copy is rewritten by the rebuild or left for a scrub (free ring space of the copy).
#[test]
fn every_4k_of_header_journal_and_copy_unreadable_in_turn() {
    let m = make(every(3), 250);
    let (mut tried, mut opened, mut compared, mut lost, mut rewritten) = (0, 0, 0, 0, 0);
    for (what, blocks) in [
        ("primary", blocks_of(&m.primary)),
        ("copy", blocks_of(&m.copy)),
    ] {
        for &b in &blocks {
            tried += 1;
            let (dev, _fs, nvm) = open_with_bad(&m.image, (b, 4096));
            let nvm = nvm.unwrap_or_else(|e| panic!("{what} block at {b}: {e}"));
            // Reads of the bad block before a write made it readable: the failed ones.
            let failed = {
                let trace = dev.take_trace();
                let touches = |e: &minfs::device::fault::TraceEntry| {
                    e.offset < b + 4096 && b < e.offset + e.len
                };
                let first_write = trace
                    .iter()
                    .position(|e| e.kind == minfs::device::fault::OpKind::Write && touches(e))
                    .unwrap_or(trace.len());
                trace[..first_write]
                    .iter()
                    .filter(|e| e.kind == minfs::device::fault::OpKind::Read && touches(e))
                    .count()
            };
            // No narrowing by reading again: one failed read per bad block at most (each costs
            // the drive's error recovery time, 2 minutes on a desktop drive).
            assert!(failed <= 1, "{what} block at {b}: {failed} failed reads");
            let report = nvm.opened().cloned().expect("an open report");
            let mut storage = StorageBuilder::new()
                .open(nvm)
                .unwrap_or_else(|e| panic!("{what} block at {b}: Cannyls: {e}"));
            opened += 1;
            compared += compare(&mut storage, &m.want, &format!("{what} block at {b}"));
            drop(storage);
            // A bad block the open read was rewritten (from the copy, or by its rebuild): it
            // reads again.
            let readable = dev
                .unreadable_sectors()
                .iter()
                .all(|s| *s < b || *s >= b + 4096);
            if failed > 0 {
                assert!(readable, "{what} block at {b}: read, failed, not rewritten");
                rewritten += 1;
            }
            assert!(
                report.rewritten.is_empty() || readable,
                "{what} block at {b}: still unreadable after the rewrite"
            );
            assert!(report.failed_reads <= 1, "{what} block at {b}: {report:?}");
            let _ = &mut lost;
        }
    }
    testutil::report_counts(
        env!("CARGO_TARGET_TMPDIR"),
        "copy_sweep",
        &format!(
            "every 4 KiB of header, journal (ring wrapped, {} bytes) and copy ({} bytes away) \
             unreadable in turn: sectors tried: {tried}, opened: {opened}, lumps compared: \
             {compared}, lost: {lost}, read by the open and rewritten: {rewritten}",
            m.layout.journal_size, m.trailer.image
        ),
    );
    assert_eq!(opened, tried);
    assert!(
        rewritten > 0,
        "some bad blocks were needed and served from the copy"
    );
}

/// Without a copy (a storage made before it, or with `without_copy`) the same storage opens
/// as before, a bad block of its journal keeps it from opening, and `add_copy` gives it one
/// after which the same bad block is survived.
#[test]
fn a_storage_without_a_copy_opens_and_can_be_given_one() {
    let dev = Arc::new(FaultDevice::new(DEVICE, LOGICAL, PHYSICAL));
    let fs = filesystem(&dev);
    let nvm = MinfsNvm::create_in(&fs, FILE, CAPACITY)
        .unwrap()
        .without_copy();
    let mut b = nvm.storage_builder();
    b.journal_region_ratio(JOURNAL_RATIO);
    let mut storage = b.create(nvm).unwrap();
    let want = workload(&mut storage, 12);
    drop(storage);
    let f = fs.open_file(FILE).unwrap();
    assert_eq!(f.size(), CAPACITY, "no copy: the file is as created");
    assert!(copy::find(&f).unwrap().is_none());
    drop(f);
    let nvm = MinfsNvm::from_filesystem(&fs, FILE).unwrap();
    assert!(!nvm.has_copy());
    let mut storage = StorageBuilder::new().open(nvm).unwrap();
    compare(&mut storage, &want, "no copy");
    drop(storage);
    // The ring's first block unreadable: no copy, no open.
    let ring0 = device_ranges(&fs, 8192, 4096)[0].0;
    let image = dev.volatile_image();
    let (_d, _f, nvm) = open_with_bad(&image, (ring0, 4096));
    assert!(
        matches!(nvm, Err(Error::JournalUnreadable { .. })),
        "{:?}",
        nvm.err()
    );
    // Given a copy, the same block is survived.
    let nvm = MinfsNvm::add_copy(&fs, FILE, options(every(1))).unwrap();
    assert!(nvm.has_copy());
    assert_eq!(nvm.opened().unwrap().copy, CopyAtOpen::Rebuilt);
    drop(StorageBuilder::new().open(nvm).unwrap());
    let image = dev.volatile_image();
    let (_d, _f, nvm) = open_with_bad(&image, (ring0, 4096));
    let mut storage = StorageBuilder::new().open(nvm.unwrap()).unwrap();
    compare(&mut storage, &want, "given a copy");
}

/// A bad block in free ring space past the EndOfRecords (which Cannyls' 1 MiB reads at open
/// cover) does not fail the open, with or without a copy, and costs at most one failed read.
#[test]
fn a_bad_block_past_the_end_of_records_does_not_fail_the_open() {
    for with_copy in [false, true] {
        let dev = Arc::new(FaultDevice::new(DEVICE, LOGICAL, PHYSICAL));
        let fs = filesystem(&dev);
        let mut nvm = MinfsNvm::create_in(&fs, FILE, CAPACITY).unwrap();
        if !with_copy {
            nvm = nvm.without_copy();
        }
        nvm = nvm.with_copy_options(CopyOptions {
            create: with_copy,
            ..options(every(1))
        });
        let mut b = nvm.storage_builder();
        b.journal_region_ratio(0.05);
        let mut storage = b.create(nvm).unwrap();
        let want = workload(&mut storage, 3);
        drop(storage);
        let file = fs.open_file(FILE).unwrap();
        let (end, layout) = match recovery::inspect(&file, 0, CAPACITY).unwrap() {
            Inspection::Clean { end, layout, .. } => (end, layout),
            other => panic!("{other:?}"),
        };
        drop(file);
        // Three blocks after the EndOfRecords' block, well within 1 MiB.
        let at = layout.ring_start() + (end / 4096 + 3) * 4096;
        assert!(at + 4096 <= layout.journal_start + layout.journal_size);
        let bad = device_ranges(&fs, at, 4096)[0];
        let (dev2, _fs2, nvm) = open_with_bad(&dev.volatile_image(), bad);
        let nvm = nvm.unwrap_or_else(|e| panic!("copy {with_copy}: {e}"));
        assert!(nvm.opened().unwrap().failed_reads <= 1);
        let mut storage = StorageBuilder::new().open(nvm).unwrap();
        compare(&mut storage, &want, "free ring space unreadable");
        drop(storage);
        // Never needed, so never rewritten: a scrub still finds it.
        assert!(!dev2.unreadable_sectors().is_empty());
    }
}

/// The copy goes `min_distance` after the journal when the filesystem has room, else right
/// after the storage (and the file grows by what it takes).
#[test]
fn the_copy_keeps_its_distance() {
    let dev = Arc::new(FaultDevice::new(DEVICE, LOGICAL, PHYSICAL));
    let fs = filesystem(&dev);
    drop(new_storage(&fs, options(CopyPolicy::default())));
    let f = fs.open_file(FILE).unwrap();
    let t = copy::find(&f).unwrap().unwrap();
    assert!(t.image >= t.len + DISTANCE, "{t:?}");
    assert_eq!(f.size(), t.file_size());
    drop(f);
    // No room for 64 MiB on this device: right after the storage.
    let dev = Arc::new(FaultDevice::new(DEVICE, LOGICAL, PHYSICAL));
    let fs = filesystem(&dev);
    drop(new_storage(&fs, CopyOptions::default()));
    let f = fs.open_file(FILE).unwrap();
    let t = copy::find(&f).unwrap().unwrap();
    assert_eq!(t.image, CAPACITY);
}

/// Both copies of one ring block unreadable, for every block of the journal's path (a ring
/// that wrapped): the storage does not open; `fsck --salvage` (`salvage::salvage`) makes one
/// that does, which returns no wrong bytes — with `drop_at_risk`, every lump it lists reads its
/// latest bytes; without, a lump that reads older bytes is among those it names at risk — and
/// loses nothing whose fate records outside the lost range decide: every such lump is there
/// with its latest bytes (or gone, if deleted), unless salvage names it dropped for
/// overlapping blocks (or at risk, when dropping those).
#[test]
fn both_copies_unreadable_salvage_returns_no_wrong_bytes() {
    use cannyls_adapter::salvage::{self, Options};
    let m = make(every(3), 250);
    let dev = Arc::new(FaultDevice::from_bytes(m.image.clone(), LOGICAL, PHYSICAL));
    let fs = Filesystem::open_device(dev.clone() as Arc<dyn BlockDevice>, "fault").unwrap();
    let file = fs.open_file(FILE).unwrap();
    let (found, records) = recovery::records(&file, 0, m.trailer.image).unwrap();
    let intact = cannyls_adapter::lumps::LumpMap::read(&file, 0, m.trailer.image)
        .unwrap()
        .unwrap();
    assert!(matches!(found, Inspection::Clean { .. }), "{found:?}");
    let ring = m.layout.ring_start();
    let bs = 4096u64;
    // The blocks the journal's path covers, in path order.
    let mut blocks: Vec<u64> = Vec::new();
    for r in &records {
        for b in (r.pos / bs..(r.pos + r.len).div_ceil(bs)).map(|i| i * bs) {
            if !blocks.contains(&b) {
                blocks.push(b);
            }
        }
    }
    drop(file);
    drop(fs);
    let (mut tried, mut salvaged, mut resumed, mut compared) = (0, 0, 0, 0);
    let (mut lost_ids, mut at_risk_stale) = (0, 0);
    for drop_at_risk in [true, false] {
        for &b in &blocks {
            tried += 1;
            let img_dev = Arc::new(FaultDevice::from_bytes(m.image.clone(), LOGICAL, PHYSICAL));
            let fs =
                Filesystem::open_device(img_dev.clone() as Arc<dyn BlockDevice>, "fault").unwrap();
            let f = fs.open_file(FILE).unwrap();
            let primary = cannyls_adapter::lumps::device_ranges(&f.extents(), ring + b, bs)[0].0;
            let copy_at =
                cannyls_adapter::lumps::device_ranges(&f.extents(), m.trailer.image + ring + b, bs)
                    [0]
                .0;
            img_dev.make_unreadable(primary, bs);
            img_dev.make_unreadable(copy_at, bs);
            assert!(
                matches!(
                    MinfsNvm::from_filesystem(&fs, FILE),
                    Err(Error::JournalUnreadable { .. })
                ),
                "block {b}: opened with both copies unreadable"
            );
            let report = salvage::salvage(
                &f,
                Options {
                    write: true,
                    drop_at_risk,
                },
            )
            .unwrap()
            .unwrap_or_else(|e| panic!("block {b}: {e}"));
            drop(f);
            salvaged += 1;
            resumed += usize::from(report.resumed);
            // Records outside the lost range decide these lumps' fate: those before the
            // record the hole cuts into, and (resumed) those after the wrap.
            let cut = records
                .iter()
                .position(|r| r.pos == report.lost.0)
                .expect("the record where the walk stopped");
            let wrap = records
                .windows(2)
                .position(|w| w[1].pos < w[0].pos)
                .map_or(records.len(), |i| i + 1);
            assert!(
                !report.resumed || cut < wrap,
                "resumed only before the wrap"
            );
            let mut decided: BTreeMap<u128, bool> = BTreeMap::new();
            for (i, r) in records.iter().enumerate() {
                decided.insert(r.id, i < cut || (report.resumed && i >= wrap));
            }
            let nvm = MinfsNvm::from_filesystem(&fs, FILE)
                .unwrap_or_else(|e| panic!("block {b}: salvaged storage: {e}"));
            let mut storage = StorageBuilder::new().open(nvm).unwrap();
            let listed: Vec<u128> = storage.list().into_iter().map(|l| l.as_u128()).collect();
            for id in &listed {
                compared += 1;
                let got = storage.get(&LumpId::new(*id)).unwrap().unwrap();
                let got = got.as_bytes();
                let latest = m.want.get(id).is_some_and(|w| w == got);
                if latest {
                    continue;
                }
                let any = m
                    .history
                    .get(id)
                    .is_some_and(|h| h.iter().any(|v| v == got));
                if drop_at_risk || !report.at_risk.contains(id) {
                    panic!(
                        "block {b} (drop at risk {drop_at_risk}): lump {id} reads {} bytes, not \
                         its latest (an older version: {any}); report:\n{report}",
                        got.len()
                    );
                }
                at_risk_stale += 1;
                if !any {
                    // Another lump's bytes: excused only when that lump's record is in the hole
                    // (a delete and a put into its blocks, both lost); one whose record lies
                    // after the hole (readable) must have had it dropped.
                    let f = fs.open_file(FILE).unwrap();
                    let now = cannyls_adapter::lumps::LumpMap::read(&f, 0, f.size())
                        .unwrap()
                        .unwrap();
                    let (a0, a1) = now.lumps[id].range();
                    for (other, p) in &intact.lumps {
                        let (b0, b1) = p.range();
                        if other == id || b1 <= a0 || a1 <= b0 {
                            continue;
                        }
                        let last = records.iter().rev().find(|r| r.id == *other).unwrap();
                        let hidden = last.pos + last.len > b && last.pos < b + bs;
                        assert!(
                            hidden,
                            "block {b}: lump {id} kept on the blocks of lump {other}, whose \
                             record at ring position {} lies outside the hole; report:\n{report}",
                            last.pos
                        );
                    }
                }
            }
            // Nothing lost outside the lost range.
            for (id, outside) in &decided {
                if !outside {
                    if !listed.contains(id) {
                        lost_ids += 1;
                    }
                    continue;
                }
                let excused = report.dropped_overlap.contains(id)
                    || (drop_at_risk && report.at_risk.contains(id));
                let want_present = m.want.contains_key(id);
                if want_present != listed.contains(id) && !excused {
                    panic!(
                        "block {b}: lump {id}, decided by records outside the lost range, is \
                         {} (want {}); report:\n{report}",
                        if listed.contains(id) { "there" } else { "gone" },
                        if want_present { "there" } else { "gone" }
                    );
                }
            }
            drop(storage);
            // No two lumps kept share a block (one of them would read the other's bytes).
            let f = fs.open_file(FILE).unwrap();
            let map = cannyls_adapter::lumps::LumpMap::read(&f, 0, f.size())
                .unwrap()
                .unwrap();
            let mut spans: Vec<(u64, u64, u128)> = map
                .lumps
                .iter()
                .filter_map(|(id, p)| match p {
                    cannyls_adapter::lumps::Place::Data { start, len } => {
                        Some((*start, start + len, *id))
                    }
                    _ => None,
                })
                .collect();
            spans.sort_unstable();
            for w in spans.windows(2) {
                assert!(
                    w[0].1 <= w[1].0,
                    "block {b}: lumps {} and {} kept on shared blocks; report:\n{report}",
                    w[0].2,
                    w[1].2
                );
            }
        }
    }
    testutil::report_counts(
        env!("CARGO_TARGET_TMPDIR"),
        "salvage_sweep",
        &format!(
            "both copies of a journal block unreadable, salvaged: holes tried: {tried}, \
             salvaged: {salvaged}, resumed after the hole: {resumed}, lumps compared: \
             {compared}, wrong bytes: 0, other bytes named at risk (kept): {at_risk_stale}, \
             lumps lost with the records in the lost range: {lost_ids}"
        ),
    );
    assert!(
        resumed > 0,
        "some holes lie before the wrap and the walk resumes at 0"
    );
}

/// `scrub --repair` (`copy::repair`): unreadable blocks of the storage header, the journal's
/// path, free ring space, the copy's path, free copy space and the copy's trailer, found by a
/// scrub, are each rewritten (from the other copy, by the rebuild, or zeroed where no walk
/// reads) and read again; the lumps are intact and the copy is level and agrees.
#[test]
fn scrub_repair_rewrites_every_unreadable_header_journal_and_copy_block() {
    let m = make(every(3), 250);
    // Two runs: the copy's trailer locates the copy, so it is not made unreadable with the
    // primary's storage header or journal (an open then has no copy to serve them: it rebuilds
    // the copy, and a scrub repair after it rewrites them).
    for with_trailer in [false, true] {
        scrub_repair(&m, with_trailer);
    }
}

fn scrub_repair(m: &Made, trailer_bad: bool) {
    use minfs::scrub::{self, Options, Owner};
    let dev = Arc::new(FaultDevice::from_bytes(m.image.clone(), LOGICAL, PHYSICAL));
    let fs = Filesystem::open_device(dev.clone() as Arc<dyn BlockDevice>, "fault").unwrap();
    let file = fs.open_file(FILE).unwrap();
    let c = copy::check(&file).unwrap();
    let ring = m.layout.ring_start();
    let bs = 4096u64;
    let path_block = c.primary_path[0].0 / bs * bs;
    // Another block of the path for the copy's (not both copies of one block).
    let other_block = (c.primary_path.last().unwrap().1 - 1) / bs * bs;
    assert_ne!(path_block, other_block);
    let end = c.primary.1.unwrap();
    let free_block = ((end + 5).div_ceil(bs) + 1) * bs;
    assert!(
        c.primary_path
            .iter()
            .all(|&(a, b)| b <= free_block || free_block + bs <= a),
        "a free ring block"
    );
    let image = m.trailer.image;
    // (file offset, what)
    let mut bad = vec![
        (ring + free_block, "free ring space"),
        (image + ring + other_block, "copy path"),
        (image + ring + free_block, "free copy space"),
    ];
    if trailer_bad {
        bad.push((m.trailer.at(), "copy trailer"));
    } else {
        bad.push((0, "storage header"));
        bad.push((ring + path_block, "journal path"));
    }
    let ex = file.extents();
    for (at, _) in &bad {
        let d = cannyls_adapter::lumps::device_ranges(&ex, *at, bs)[0].0;
        dev.make_unreadable(d, bs);
    }
    drop(file);
    let report = scrub::scrub_device(
        dev.as_ref(),
        "fault",
        &Options {
            file: Some(FILE.into()),
            ..Options::default()
        },
        &std::sync::atomic::AtomicBool::new(false),
        &mut |_| {},
    )
    .unwrap();
    let ranges: Vec<(u64, u64)> = report
        .bad
        .iter()
        .map(|b| match &b.owner {
            Owner::File { file_offset, .. } => (*file_offset, b.length),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(ranges.len(), bad.len(), "{ranges:?}");
    let repaired = copy::repair(&fs, FILE, &ranges).unwrap();
    for r in &repaired {
        println!("{r}");
        assert!(r.readable, "{r}");
    }
    assert!(dev.unreadable_sectors().is_empty());
    let file = fs.open_file(FILE).unwrap();
    let c = copy::check(&file).unwrap();
    assert!(c.level() && c.agree(), "{c:?}");
    drop(file);
    let mut storage = StorageBuilder::new()
        .open(MinfsNvm::from_filesystem(&fs, FILE).unwrap())
        .unwrap();
    compare(&mut storage, &m.want, "after scrub --repair");
}

/// While a storage is open, a journal block that becomes unreadable (after the open read it)
/// is served from the copy when Cannyls reads it again — an embedded lump's bytes — and
/// rewritten in place.
#[test]
fn a_journal_block_unreadable_after_the_open_is_served_from_the_copy() {
    let m = make(every(3), 250);
    let dev = Arc::new(FaultDevice::from_bytes(m.image.clone(), LOGICAL, PHYSICAL));
    let fs = Filesystem::open_device(dev.clone() as Arc<dyn BlockDevice>, "fault").unwrap();
    let file = fs.open_file(FILE).unwrap();
    let map = cannyls_adapter::lumps::LumpMap::read(&file, 0, m.trailer.image)
        .unwrap()
        .unwrap();
    let c = copy::check(&file).unwrap();
    let (head, end) = (c.primary.0.unwrap(), c.primary.1.unwrap());
    let ring = m.layout.ring_start();
    let bs = 4096u64;
    // An embedded lump whose bytes lie in a ring block after the head's and before the end's.
    let (id, block) = map
        .lumps
        .iter()
        .find_map(|(id, p)| match p {
            cannyls_adapter::lumps::Place::Journal { start, len } if *len > 0 => {
                let b = (start - ring) / bs * bs;
                let (hb, eb) = (head / bs * bs, end / bs * bs);
                let inside = if hb <= eb {
                    b > hb && b < eb
                } else {
                    b > hb || b < eb
                };
                (inside && (start + len - ring - 1) / bs * bs == b).then_some((*id, b))
            }
            _ => None,
        })
        .expect("an embedded lump inside the journal");
    let at = cannyls_adapter::lumps::device_ranges(&file.extents(), ring + block, bs)[0].0;
    drop(file);
    let mut storage = StorageBuilder::new()
        .open(MinfsNvm::from_filesystem(&fs, FILE).unwrap())
        .unwrap();
    dev.make_unreadable(at, bs);
    let got = storage.get(&LumpId::new(id)).unwrap().unwrap();
    assert_eq!(got.as_bytes(), &m.want[&id][..], "lump {id} from the copy");
    assert!(
        dev.unreadable_sectors().is_empty(),
        "the block was rewritten from the copy"
    );
    drop(storage);
}

/// A storage made anew, without a copy, in a file whose earlier storage had one: the old
/// trailer is removed; and a trailer of another storage (put back by hand) is never taken for
/// this one's copy — a bad journal block is then unreadable, not served from the old copy.
#[test]
fn another_storages_copy_is_never_served() {
    let dev = Arc::new(FaultDevice::new(DEVICE, LOGICAL, PHYSICAL));
    let fs = filesystem(&dev);
    let mut first = new_storage(&fs, options(every(1)));
    workload(&mut first, 20);
    drop(first);
    let f = fs.open_file(FILE).unwrap();
    let old = copy::find(&f).unwrap().expect("the first storage's copy");
    let ex = f.extents();
    let trailer_dev = cannyls_adapter::lumps::device_ranges(&ex, old.at(), 4096)[0].0;
    let ring0 = cannyls_adapter::lumps::device_ranges(&ex, 8192, 4096)[0].0;
    drop(f);
    let old_trailer = dev.volatile_image()[trailer_dev as usize..][..4096].to_vec();
    // Made anew without a copy: the first storage's trailer goes.
    let nvm = MinfsNvm::from_filesystem(&fs, FILE).unwrap().without_copy();
    let mut b = nvm.storage_builder();
    b.journal_region_ratio(JOURNAL_RATIO);
    let mut second = b.create(nvm).unwrap();
    let want = workload(&mut second, 5);
    drop(second);
    let f = fs.open_file(FILE).unwrap();
    assert!(copy::find(&f).unwrap().is_none(), "the old trailer is gone");
    drop(f);
    // The old trailer put back, and the new storage's first ring block unreadable.
    let mut image = dev.volatile_image();
    image[trailer_dev as usize..][..4096].copy_from_slice(&old_trailer);
    let (_d, fs2, nvm) = open_with_bad(&image, (ring0, 4096));
    assert!(
        matches!(nvm, Err(Error::JournalUnreadable { .. })),
        "{:?}",
        nvm.err()
    );
    // Readable, it opens as it is.
    let dev3 = Arc::new(FaultDevice::from_bytes(image, LOGICAL, PHYSICAL));
    let fs3 = Filesystem::open_device(dev3 as Arc<dyn BlockDevice>, "fault").unwrap();
    let mut storage = StorageBuilder::new()
        .open(MinfsNvm::from_filesystem(&fs3, FILE).unwrap())
        .unwrap();
    compare(&mut storage, &want, "the second storage");
    drop(fs2);
}
