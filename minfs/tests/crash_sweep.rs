//! Reliability suite 1: crash images of minfs.
//!
//! The reference workload (`crash_common::reference_workload`: mkfs, creates, grows,
//! removes, data writes, flushes, reopens; about 300 device operations) runs once on a
//! [`FaultDevice`] that logs every operation, on a 512e device (512-byte logical, 4 KiB physical
//! sectors) and on a 4Kn one. Then, for a crash after **every** device operation (crash point k
//! = the first k operations done), the media state is rebuilt from the log and every variant of
//! the unflushed writes — each lost, kept, or torn at a logical-sector boundary (a prefix or a
//! suffix of its sectors) — is checked, or a sample of them where there are more than
//! [`VARIANTS_PER_POINT`] (always all lost, all kept, and the cuts at physical-sector
//! boundaries). A single pending 64 KiB slot write has 256 variants on the 512e device: all are
//! checked.
//!
//! After that, random crash images: random workloads (from seeds, alternately 512e and 4Kn),
//! each crashed at random points with random fates (random sector subsets too);
//! `MINFS_CRASH_SEEDS=N` sets how many (default [`DEFAULT_SEEDS`]). Every second one is crashed
//! again while being recovered (the open that rewrites the interrupted slot).
//!
//! Then bad-sector images (`crash_common::bad_sectors`): after every commit of the
//! reference workload (both geometries), each logical sector of each slot in turn flipped or
//! made unreadable; the last commit must open (read-only, writing nothing), `fsck -n` report
//! the slot, `fsck -y` heal it, and `fsck -n` then be clean.
//!
//! Each crash image must: open (`Filesystem::open_device`); pass `fsck` (before open at most the
//! inactive slot invalid, after open clean); list exactly the files of the state after the
//! last step that returned before the crash, or of the step in flight (size and extents: an
//! interrupted create/grow/remove is atomic); have no two extents sharing a block; hold in
//! every written sector the bytes of the last write that a flush or commit which returned
//! before the crash promised durable, or of a later write (durability is judged by the API's
//! promise, not by what reached the device, so a flush that does not flush is caught); and take
//! a new commit. Every check runs under `catch_unwind`. The last line printed is the
//! counts (`crash points: N, crash images: N, torn variants: N, ..., reopen failures: 0, fsck
//! errors: 0, lost files: 0, lost data: 0, overlaps: 0, panics: 0, bad-sector images: N ...,
//! lost commits: 0, ...`), also left in
//! `$CARGO_TARGET_TMPDIR/reliability-crash_sweep.txt` for `scripts/test.sh` to show in CI's log.
//!
//! `crash_sweep_on_512e_media` does the sweep and a quarter as many random crash images again on
//! 512e media without power-loss protection for read-modify-write (a write covering part of a
//! 4 KiB physical sector may ruin all of it: `MediaState::with_rmw_physical`): minfs's own
//! writes never cover part of a physical sector, so the same checks pass. Random crash points
//! seldom fall right after a data write that covers part of a physical sector, so it also
//! crashes there on purpose in a few fixed random workloads, ruining those sectors: the check
//! that the model bit (data sectors ruined, not compared) holds at every `MINFS_CRASH_SEEDS`,
//! 0 included. Its counts line is `reliability-crash_sweep_512e.txt`.

mod crash_common;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Instant;

use crash_common::*;
use minfs::device::fault::{Fate, FaultDevice, MediaState, OpKind};
use minfs::format::SLOT_SIZE;
use minfs::Filesystem;

/// Variants checked per crash point of the sweep (all of them when there are fewer).
const VARIANTS_PER_POINT: usize = 256;
/// Random crash images when `MINFS_CRASH_SEEDS` is unset.
const DEFAULT_SEEDS: u64 = 8000;
/// Random crash images per random workload.
const SEEDS_PER_WORKLOAD: u64 = 250;
/// Crash images a CI run must check in all.
const MIN_IMAGES: u64 = 10_000;

fn threads() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get().min(4))
}

/// Whether crash point `k` (the first `k` operations done) lies between a commit's two slot
/// writes: the first slot written and flushed, the copy into the other slot not yet begun.
fn between_slot_writes(trace: &[minfs::device::fault::TraceEntry], k: usize) -> bool {
    let slot_write = |i: usize| {
        let e = &trace[i];
        (e.kind == OpKind::Write && e.len == SLOT_SIZE && e.offset % SLOT_SIZE == 0)
            .then_some(e.offset)
            .filter(|&o| o < 2 * SLOT_SIZE)
    };
    k >= 2
        && k < trace.len()
        && trace[k - 1].kind == OpKind::Flush
        && matches!((slot_write(k - 2), slot_write(k)), (Some(a), Some(b)) if a != b)
}

/// Checks one image under `catch_unwind`, adding to `tally` and `failures`. On 512e media
/// ([`MediaState::with_rmw_physical`]) the data in physical sectors ruined by the fates, or
/// by an earlier crash (`ruined_before`), is not compared, only counted.
#[allow(clippy::too_many_arguments)]
fn check_one(
    log: &RunLog,
    media: &MediaState,
    fates: &[Fate],
    ruined_before: &[u64],
    k: u64,
    what: &str,
    tally: &mut Tally,
    failures: &mut Vec<String>,
) {
    let allowed = log.allowed_states(k);
    if fates.iter().any(|f| f.is_torn()) {
        tally.torn += 1;
    }
    let mut ruined: Vec<u64> = media.ruined_sectors(fates).iter().map(|r| r.0).collect();
    ruined.extend_from_slice(ruined_before);
    if !ruined.is_empty() {
        tally.ruined_images += 1;
    }
    let mut why = Vec::new();
    match catch_unwind(AssertUnwindSafe(|| {
        let dev = Arc::new(media.crash_device(fates, log.geometry.physical));
        log.check_image_ruined(dev, k, &allowed, &ruined, &mut why)
    })) {
        Ok(v) => {
            tally.add(&v);
            if !v.ok() {
                failures.push(format!("{what}, crash point {k}, fates {fates:?}: {why:?}"));
            }
        }
        Err(p) => {
            tally.images += 1;
            tally.panics += 1;
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            failures.push(format!(
                "{what}, crash point {k}, fates {fates:?}: panic: {msg}"
            ));
        }
    }
}

/// A fresh media for `geometry`: on 512e media without power-loss protection (`rmw`), writes
/// covering part of a physical sector may ruin it.
fn media_for(geometry: Geometry, rmw: bool) -> MediaState {
    let media = MediaState::new(vec![0; geometry.len as usize], geometry.logical);
    if rmw {
        media.with_rmw_physical(geometry.physical)
    } else {
        media
    }
}

/// The sweep: every crash point of `log`, `VARIANTS_PER_POINT` variants at most; crash points
/// are shared out among threads.
fn sweep(log: &RunLog, rmw: bool) -> (Tally, Vec<String>) {
    let n = threads();
    let parts: Vec<(Tally, Vec<String>)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..n)
            .map(|t| {
                s.spawn(move || {
                    let g = log.geometry;
                    let mut media = media_for(g, rmw);
                    let mut tally = Tally::default();
                    let mut failures = Vec::new();
                    for k in 0..=log.ops() {
                        if k > 0 {
                            media.apply(&log.trace[k as usize - 1]);
                        }
                        if k as usize % n != t {
                            continue;
                        }
                        for fates in media.variants(VARIANTS_PER_POINT, g.physical, k) {
                            check_one(
                                log,
                                &media,
                                &fates,
                                &[],
                                k,
                                "sweep",
                                &mut tally,
                                &mut failures,
                            );
                        }
                    }
                    (tally, failures)
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    let mut tally = Tally::default();
    let mut failures = Vec::new();
    for (t, f) in parts {
        tally.merge(&t);
        failures.extend(f);
    }
    (tally, failures)
}

/// A second power cut, while the crash image of `media` with `fates` is being opened (open
/// rewrites an invalid inactive slot): the recovery runs on a [`FaultDevice`], is crashed after
/// a random number of its operations with random fates, and the result must satisfy the same
/// checks as the first crash image. Nothing happens when the recovery writes nothing.
#[allow(clippy::too_many_arguments)]
fn recovery_crash(
    log: &RunLog,
    media: &MediaState,
    fates: &[Fate],
    k: u64,
    seed: u64,
    what: &str,
    tally: &mut Tally,
    failures: &mut Vec<String>,
) {
    let g = log.geometry;
    // Open writes only when a slot is invalid (or foreign): skip the copy otherwise.
    match minfs::fsck::check_device(&media.crash_device(fates, g.physical), "crash") {
        Ok(r) if !r.is_clean() && r.active.is_some() => {}
        _ => return,
    }
    let image = media.image(fates);
    let dev = Arc::new(FaultDevice::from_bytes(
        image.clone(),
        g.logical,
        g.physical,
    ));
    dev.record_trace();
    if Filesystem::open_device(dev.clone(), "recovery").is_err() {
        return; // judged by the first check
    }
    let trace = dev.take_trace();
    if !trace.iter().any(|e| e.kind == OpKind::Write) {
        return;
    }
    let mut rng = testutil::XorShift(seed ^ 0x5DEE_CE66_D1CE_4E5B);
    let j = 1 + rng.next() % trace.len() as u64;
    let mut second = MediaState::new(image, g.logical);
    for e in &trace[..j as usize] {
        second.apply(e);
    }
    let fates2 = second.random_variant(rng.next());
    let what = format!("{what}, then a crash after {j} operations of the recovery");
    tally.recovery_crashes += 1;
    // The first crash's ruined sectors hold garbage in `image`.
    let ruined: Vec<u64> = media.ruined_sectors(fates).iter().map(|r| r.0).collect();
    check_one(log, &second, &fates2, &ruined, k, &what, tally, failures);
}

/// Random crash images `first..first + count`: seed `i` belongs to random workload
/// `i / SEEDS_PER_WORKLOAD` and picks its crash point and fates from `i`. Workloads alternate
/// between 512e and 4Kn devices, or with `rmw` are all on 512e media without power-loss
/// protection.
fn random_crashes(count: u64, rmw: bool) -> (Tally, u64, Vec<String>) {
    let workloads = count.div_ceil(SEEDS_PER_WORKLOAD);
    let n = threads() as u64;
    let parts: Vec<(Tally, Vec<String>)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..n)
            .map(|t| {
                s.spawn(move || {
                    let mut tally = Tally::default();
                    let mut failures = Vec::new();
                    for w in (0..workloads).filter(|w| w % n == t) {
                        let geometry = if w % 2 == 0 || rmw {
                            REFERENCE
                        } else {
                            Geometry {
                                len: 3 << 20,
                                logical: 4096,
                                physical: 4096,
                            }
                        };
                        let steps = random_workload(1000 + w, 70, geometry);
                        let mut runner = Runner::new(geometry);
                        let run = catch_unwind(AssertUnwindSafe(|| runner.run_all(&steps)));
                        if run.is_err() {
                            tally.panics += 1;
                            failures.push(format!("random workload {w}: the live run failed"));
                            continue;
                        }
                        let log = runner.finish();
                        // (crash point, seed) for each seed of this workload, by crash point.
                        let seeds =
                            (w * SEEDS_PER_WORKLOAD)..((w + 1) * SEEDS_PER_WORKLOAD).min(count);
                        let mut points: Vec<(u64, u64)> = seeds
                            .map(|seed| {
                                let mut rng =
                                    testutil::XorShift(seed.wrapping_mul(0x2545_F491) | 1);
                                (rng.next() % (log.ops() + 1), rng.next())
                            })
                            .collect();
                        points.sort_unstable();
                        let mut media = media_for(geometry, rmw);
                        let mut at = 0u64;
                        for (k, seed) in points {
                            if at < k {
                                while at < k {
                                    media.apply(&log.trace[at as usize]);
                                    at += 1;
                                }
                            }
                            let fates = media.random_variant(seed);
                            let what = format!("random workload {w} (variant seed {seed})");
                            check_one(
                                &log,
                                &media,
                                &fates,
                                &[],
                                k,
                                &what,
                                &mut tally,
                                &mut failures,
                            );
                            if seed % 2 == 0 {
                                recovery_crash(
                                    &log,
                                    &media,
                                    &fates,
                                    k,
                                    seed,
                                    &what,
                                    &mut tally,
                                    &mut failures,
                                );
                            }
                        }
                    }
                    (tally, failures)
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    let mut tally = Tally::default();
    let mut failures = Vec::new();
    for (t, f) in parts {
        tally.merge(&t);
        failures.extend(f);
    }
    (tally, workloads, failures)
}

#[test]
fn crash_sweep() {
    let started = Instant::now();
    let seeds_env = std::env::var_os("MINFS_CRASH_SEEDS").is_some();
    let seeds = testutil::env_num("MINFS_CRASH_SEEDS", DEFAULT_SEEDS).unwrap();

    // The sweep, on a 512e and on a 4Kn device.
    let mut sweep_tally = Tally::default();
    let mut failures = Vec::new();
    let mut points = 0;
    let mut details = Vec::new();
    let mut bad_tally = bad_sectors::BadSectorTally::default();
    // Crash points between a commit's two slot writes.
    let mut between = 0;
    for geometry in [REFERENCE, REFERENCE_4KN] {
        let t0 = Instant::now();
        let mut runner = Runner::new(geometry);
        runner.run_all(&reference_workload());
        let log = runner.finish();
        assert!(
            (260..=340).contains(&log.ops()),
            "the reference workload should be about 300 device operations (2 slot writes and 3 flushes per commit), it is {}",
            log.ops()
        );
        let (tally, f) = sweep(&log, false);
        between += (0..=log.ops() as usize)
            .filter(|&k| between_slot_writes(&log.trace, k))
            .count();
        let (bad, bad_f) = bad_sectors::sweep(&log, threads());
        bad_tally.merge(&bad);
        failures.extend(bad_f);
        if !f.is_empty() {
            // What each step did on the device, to read the failures against.
            for r in &log.records {
                eprintln!(
                    "step {} {:?}: operations {}..{}, ok: {}",
                    r.index, r.step, r.start, r.end, r.ok
                );
            }
            for (i, e) in log.trace.iter().enumerate() {
                eprintln!(
                    "operation {i}: {} of {} bytes at {}",
                    e.kind, e.len, e.offset
                );
            }
        }
        details.push(format!(
            "{}/{}: {} crash points, {} images in {:.1?}",
            geometry.logical,
            geometry.physical,
            log.ops() + 1,
            tally.images,
            t0.elapsed()
        ));
        points += log.ops() + 1;
        sweep_tally.merge(&tally);
        failures.extend(f);
    }
    let sweep_time = started.elapsed();
    let (random_tally, workloads, random_failures) = random_crashes(seeds, false);
    failures.extend(random_failures);

    let mut all = sweep_tally;
    all.merge(&random_tally);
    for f in failures.iter().take(20) {
        eprintln!("FAILED: {f}");
    }
    println!(
        "sweep (up to {VARIANTS_PER_POINT} variants per crash point): {}; random: {} images \
         over {workloads} workloads in {:.1?}",
        details.join(", "),
        random_tally.images,
        started.elapsed() - sweep_time
    );
    report(
        "crash_sweep",
        &format!(
            "crash points: {} ({} between a commit's two slot writes), crash images: {}, torn variants: {}, random crash images: {}, \
             crashes during recovery: {}, data sectors checked: {}, reopen failures: {}, \
             fsck errors: {}, lost files: {}, lost data: {}, overlaps: {}, panics: {}, \
             bad-sector images: {} (after {} commits; each slot sector flipped or unreadable), \
             lost commits: {}, bad-sector open failures: {}, unreported: {}, unhealed: {}, \
             read-only writes: {}, bad-sector panics: {}",
            points,
            between,
            all.images,
            all.torn,
            random_tally.images - random_tally.recovery_crashes,
            all.recovery_crashes,
            all.sectors,
            all.reopen_failures,
            all.fsck_errors,
            all.lost_files,
            all.lost_data,
            all.overlaps,
            all.panics,
            bad_tally.images,
            bad_tally.commits,
            bad_tally.lost_commits,
            bad_tally.open_failures,
            bad_tally.unreported,
            bad_tally.unhealed,
            bad_tally.read_only_writes,
            bad_tally.panics
        ),
    );
    assert_eq!(
        bad_tally.failures(),
        0,
        "bad-sector failures: {:?}",
        failures.first()
    );
    assert!(bad_tally.images > 0);
    assert!(between > 0, "no crash point between two slot writes");
    assert_eq!(
        all.failures(),
        0,
        "{} failures, first: {:?}",
        failures.len(),
        failures.first()
    );
    assert_eq!(random_tally.images - random_tally.recovery_crashes, seeds);
    if !seeds_env {
        assert!(
            all.images >= MIN_IMAGES,
            "a CI run must check at least {MIN_IMAGES} crash images, this one checked {}",
            all.images
        );
    }
}

/// Writes of `log` that cover part of a physical sector (what a 512e drive read-modify-writes),
/// and those of them in minfs's metadata area (before the data area).
fn partial_writes(log: &RunLog) -> (u64, u64) {
    let p = u64::from(log.geometry.physical);
    let partial: Vec<&minfs::device::fault::TraceEntry> = log
        .trace
        .iter()
        .filter(|e| e.kind == OpKind::Write && (e.offset % p != 0 || e.len % p != 0))
        .collect();
    let metadata = partial
        .iter()
        .filter(|e| e.offset < minfs::format::DATA_START)
        .count();
    (partial.len() as u64, metadata as u64)
}

/// Random workloads (the first ones, `1000 + w`) whose crash images on 512e media are also
/// aimed ([`aimed_ruins`]), whatever `MINFS_CRASH_SEEDS` is.
const AIMED_WORKLOADS: u64 = 8;

/// Aimed crash images on 512e media without power-loss protection: in each of the first
/// [`AIMED_WORKLOADS`] random workloads, a crash right after every data write that covers part
/// of a physical sector, while it is still pending, with every pending write that covers part
/// of one ruining its partly covered physical sectors (alternately unreadable and garbage)
/// and the other pending writes kept. Random crash points and fates seldom land there — at
/// `MINFS_CRASH_SEEDS=4000` no ruined sector held data to compare — so these make the
/// read-modify-write model bite at every count. Returns the tally, the workloads' partial
/// writes and the failures.
fn aimed_ruins() -> (Tally, u64, Vec<String>) {
    use minfs::device::fault::Ruin;
    let mut tally = Tally::default();
    let mut failures = Vec::new();
    let mut partial = 0;
    for w in 0..AIMED_WORKLOADS {
        let mut runner = Runner::new(REFERENCE);
        runner.run_all(&random_workload(1000 + w, 70, REFERENCE));
        let log = runner.finish();
        partial += partial_writes(&log).0;
        let mut media = media_for(REFERENCE, true);
        for k in 1..=log.ops() {
            media.apply(&log.trace[k as usize - 1]);
            let Some(last) = media.pending().len().checked_sub(1) else {
                continue;
            };
            if log.trace[k as usize - 1].kind != OpKind::Write
                || media.partial_physical_of(last).is_empty()
            {
                continue;
            }
            let ruin = Ruin {
                unreadable: k % 2 == 0,
                rest_kept: false,
            };
            let fates: Vec<Fate> = (0..media.pending().len())
                .map(|i| {
                    if media.partial_physical_of(i).is_empty() {
                        Fate::Kept
                    } else {
                        Fate::Ruined(ruin)
                    }
                })
                .collect();
            let what = format!("aimed ruin, random workload {w}");
            check_one(
                &log,
                &media,
                &fates,
                &[],
                k,
                &what,
                &mut tally,
                &mut failures,
            );
        }
    }
    (tally, partial, failures)
}

/// The sweep and random crashes on 512e media without power-loss protection
/// ([`MediaState::with_rmw_physical`]): a write covering part of a 4 KiB physical sector may
/// ruin all of it (unreadable or garbage), flushed neighbours too. minfs writes its metadata
/// in whole 64 KiB slots at 64 KiB-aligned offsets and allocates data in 4 KiB-aligned extents,
/// so its own writes never cover part of a physical sector: every metadata check must pass as
/// on any media. Only data writes a caller makes of part of a physical sector (the random
/// workloads write whole 512-byte sectors anywhere) can be ruined; the data sectors in a ruined
/// physical sector are counted, not compared. Counts line: `crash_sweep_512e`.
#[test]
fn crash_sweep_on_512e_media() {
    let started = Instant::now();
    let seeds = testutil::env_num("MINFS_CRASH_SEEDS", DEFAULT_SEEDS).unwrap() / 4;
    let mut runner = Runner::new(REFERENCE);
    runner.run_all(&reference_workload());
    let log = runner.finish();
    let (reference_partial, reference_metadata) = partial_writes(&log);
    let (mut all, mut failures) = sweep(&log, true);
    let points = log.ops() + 1;
    let (random, workloads, random_failures) = random_crashes(seeds, true);
    failures.extend(random_failures);
    all.merge(&random);
    let (aimed, aimed_partial, aimed_failures) = aimed_ruins();
    failures.extend(aimed_failures);
    all.merge(&aimed);
    // The random workloads' own partial writes, metadata ones among them (of the aimed ones
    // too when there are fewer random ones).
    let (mut random_partial, mut random_metadata) = (0, 0);
    for w in 0..workloads.max(AIMED_WORKLOADS) {
        let mut runner = Runner::new(REFERENCE);
        runner.run_all(&random_workload(1000 + w, 70, REFERENCE));
        let (p, m) = partial_writes(&runner.finish());
        random_partial += p;
        random_metadata += m;
    }
    for f in failures.iter().take(20) {
        eprintln!("FAILED: {f}");
    }
    println!(
        "512e: reference sweep {points} crash points; {} random images over {workloads} \
         workloads; {:.1?}",
        random.images,
        started.elapsed()
    );
    report(
        "crash_sweep_512e",
        &format!(
            "crash points: {points}, crash images: {}, random crash images: {}, aimed crash \
             images (right after a partial-sector write, ruined): {}, 512e \
             read-modify-write: yes, partial-sector writes (reference workload): {reference_partial}, \
             partial-sector writes (random workloads, data): {random_partial}, partial-sector \
             metadata writes: {}, images with a ruined physical sector: {}, data sectors \
             ruined (not compared): {}, data sectors checked: {}, reopen failures: {}, fsck \
             errors: {}, lost files: {}, lost data: {}, overlaps: {}, panics: {}",
            all.images,
            random.images - random.recovery_crashes,
            aimed.images,
            reference_metadata + random_metadata,
            all.ruined_images,
            all.ruined_sectors,
            all.sectors,
            all.reopen_failures,
            all.fsck_errors,
            all.lost_files,
            all.lost_data,
            all.overlaps,
            all.panics
        ),
    );
    assert_eq!(
        all.failures(),
        0,
        "{} failures, first: {:?}",
        failures.len(),
        failures.first()
    );
    assert_eq!(
        reference_partial, 0,
        "the reference workload writes whole physical sectors"
    );
    assert_eq!(
        reference_metadata + random_metadata,
        0,
        "metadata is never written in part"
    );
    // The model bites: the random workloads' partial data writes ruin sectors, and data in
    // them goes unchecked — by the aimed images alone, so at every MINFS_CRASH_SEEDS.
    assert!(aimed_partial > 0 && aimed.ruined_images > 0 && aimed.ruined_sectors > 0);
    assert!(random_partial > 0 && all.ruined_images > 0 && all.ruined_sectors > 0);
}

/// The checker is not blind: an image from before a create that returned is a lost file, and
/// an image in which a flushed data write is undone is lost data.
#[test]
fn the_checker_catches_lost_commits_and_lost_data() {
    let mut runner = Runner::new(REFERENCE);
    runner.run_all(&reference_workload());
    let log = runner.finish();
    let g = log.geometry;
    let media_at = |k: u64| {
        let mut m = MediaState::new(vec![0; g.len as usize], g.logical);
        for e in &log.trace[..k as usize] {
            m.apply(e);
        }
        m
    };
    // The create of "f": crash after it returned, with the image from before it started.
    let rec = log
        .records
        .iter()
        .find(|r| r.step == Step::Create("f".into(), 300_000))
        .unwrap();
    let old = media_at(rec.start).durable().to_vec();
    let mut why = Vec::new();
    let v = log.check_bytes(old, rec.end, &log.allowed_states(rec.end), &mut why);
    assert!(v.lost_files && !v.reopen_failure, "{v:?} {why:?}");
    // The same image is right for a crash before the create.
    let old = media_at(rec.start).durable().to_vec();
    let mut why = Vec::new();
    let v = log.check_bytes(old, rec.start, &log.allowed_states(rec.start), &mut why);
    assert!(v.ok(), "{why:?}");

    // The first flushed write of "a": zero its sectors in the image at the end.
    let w = log.writes.iter().find(|w| w.file.0 == "a").unwrap();
    let mut img = media_at(log.ops()).durable().to_vec();
    let (dev_off, len, _, _) = w.pieces[0];
    img[dev_off as usize..(dev_off + len) as usize].fill(0);
    let mut why = Vec::new();
    let v = log.check_bytes(img, log.ops(), &log.allowed_states(log.ops()), &mut why);
    assert!(v.lost_data && !v.lost_files, "{v:?} {why:?}");

    // Both slots torn: no valid slot is a reopen failure.
    let mut img = media_at(log.ops()).durable().to_vec();
    img[100] ^= 1;
    img[65536 + 100] ^= 1;
    let mut why = Vec::new();
    let v = log.check_bytes(img, log.ops(), &log.allowed_states(log.ops()), &mut why);
    assert!(v.reopen_failure, "{v:?} {why:?}");
}
