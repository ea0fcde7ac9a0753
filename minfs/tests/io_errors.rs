//! Reliability suite 3: I/O errors.
//!
//! The reference workload (`crash_common::reference_workload`, on a 512e and on a 4Kn device)
//! is run once cleanly to count its device operations; then, for **every** operation index — the n-th read, the n-th write, the
//! n-th flush — it is run again on a [`FaultDevice`] that fails that operation once, and again
//! with the operation failing from then on. Each run must show:
//! - the error reaches the caller: the step whose operation failed returns `Error::Io` carrying
//!   the device's error (not a panic, not a wrong answer, not `Poisoned`);
//! - after a failed **write or flush**, every later call on the filesystem and on every handle
//!   (create, grow, remove, flush, rewrite, handle read/write/flush) returns `Poisoned` and does
//!   no I/O at all: nothing is retried behind the caller's back;
//! - after a failed **read** (which changes nothing on the media, so minfs does not poison),
//!   retrying the step succeeds when the error was once and fails with `Io` again when it is
//!   for good;
//! - the image opens clean: the durable image (a power cut right after the error, every
//!   unflushed write lost), the volatile one (every unflushed write kept) and two random crash
//!   variants each open, pass fsck, hold the files of the last completed step or of the failed
//!   one's intended result, and keep every flushed write's data; after a one-off error the live
//!   device also reopens (an application restart without a power cut).
//!
//! The last line printed is the counts, e.g. `fault runs: 402, errors to caller: 402, ...`.
//! `scripts/reliability.sh` runs this with `--nocapture` so it shows in CI's log.

mod crash_common;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Instant;

use crash_common::*;
use minfs::device::fault::{Fault, FaultMode, OpCounts, OpKind};
use minfs::format::SLOT_SIZE;
use minfs::{AlignedBuf, Corruption, Error, Filesystem};

#[derive(Debug, Default)]
struct Counts {
    runs: u64,
    errors_to_caller: u64,
    poison_checks: u64,
    read_retries: u64,
    /// Read errors in one slot during an open, absorbed by the other slot.
    slot_reads_absorbed: u64,
    images: u64,
    reopen_failures: u64,
    wrong_states: u64,
    silent_retries: u64,
    panics: u64,
}

impl Counts {
    fn merge(&mut self, o: &Counts) {
        self.runs += o.runs;
        self.errors_to_caller += o.errors_to_caller;
        self.poison_checks += o.poison_checks;
        self.read_retries += o.read_retries;
        self.slot_reads_absorbed += o.slot_reads_absorbed;
        self.images += o.images;
        self.reopen_failures += o.reopen_failures;
        self.wrong_states += o.wrong_states;
        self.silent_retries += o.silent_retries;
        self.panics += o.panics;
    }
}

/// Which step of the clean run did operation `nth` of `kind`.
fn step_of(log: &RunLog, kind: OpKind, nth: u64) -> usize {
    let op = log
        .trace
        .iter()
        .enumerate()
        .filter(|(_, e)| e.kind == kind)
        .nth(nth as usize)
        .map(|(i, _)| i as u64)
        .expect("operation in the clean run");
    log.records
        .iter()
        .position(|r| r.start <= op && op < r.end)
        .expect("every operation belongs to a step")
}

fn is_injected(e: &Error) -> bool {
    matches!(e, Error::Io { source, .. } if source.to_string().contains("injected"))
}

/// Every call on a poisoned filesystem returns `Poisoned` without I/O.
fn assert_poisoned(runner: &Runner, counts: &mut Counts) {
    let Some(fs) = &runner.fs else { return };
    let before = runner.dev.counts().total();
    let mut results: Vec<(&str, minfs::Result<()>)> = vec![
        ("create", fs.create("poisoned-new", 4096).map(drop)),
        ("flush", fs.flush()),
        ("rewrite_metadata", fs.rewrite_metadata(1)),
    ];
    if let Some(f) = fs.list().into_iter().find(|f| f.size >= 4096) {
        results.push(("grow", fs.grow(&f.name, f.size + 4096).map(drop)));
        let h = fs.open_file(&f.name).expect("open_file does no I/O");
        let mut buf = AlignedBuf::zeroed(4096, 4096);
        results.push(("handle read", h.read_at(&mut buf, 0)));
        results.push(("handle write", h.write_at(&buf, 0)));
        results.push(("handle flush", h.flush()));
        drop(h);
        results.push(("remove", fs.remove(&f.name)));
    }
    for (what, r) in results {
        assert!(
            matches!(r, Err(Error::Poisoned { .. })),
            "{what} on a poisoned filesystem gave {r:?}"
        );
        counts.poison_checks += 1;
    }
    let after = runner.dev.counts().total();
    if after != before {
        counts.silent_retries += 1;
        panic!(
            "a poisoned filesystem did {} device operations",
            after - before
        );
    }
}

/// Whether `fault` hits a read of a metadata slot (by an open): such a read
/// error makes the slot invalid, like a bad checksum, instead of failing the open.
fn is_slot_read(clean: &RunLog, fault: Fault) -> bool {
    fault.kind == OpKind::Read
        && clean
            .trace
            .iter()
            .filter(|e| e.kind == OpKind::Read)
            .nth(fault.nth as usize)
            .is_some_and(|e| e.len == SLOT_SIZE && (e.offset == 0 || e.offset == SLOT_SIZE))
}

/// A read error in one slot during an open. Once: the open uses the other slot and
/// heals the unreadable one: the workload runs to the end with nothing reaching the caller, and
/// the live device is clean with the clean run's files. For good: the open of a read error in
/// slot A (every read fails from then on) fails naming both slots unreadable; one in slot B
/// (slot A read fine) opens and the error reaches the next step that reads. Returns the
/// deviation to check further, if any.
fn slot_read_fault(
    runner: &mut Runner,
    steps: &[Step],
    clean: &RunLog,
    fault: Fault,
    counts: &mut Counts,
) -> Option<Deviation> {
    let mut deviation = None;
    for (i, step) in steps.iter().enumerate() {
        if let Err(d) = runner.step(i, step) {
            deviation = Some(d);
            break;
        }
    }
    match (fault.mode, deviation) {
        (FaultMode::Once, None) => {
            assert_eq!(runner.dev.counts().injected, 1, "{fault:?}");
            let fs = runner.fs.as_ref().expect("a filesystem at the end");
            let last = clean.records.last().and_then(|r| r.after.as_ref());
            assert_eq!(Some(&fs.list()), last.map(|s| &s.files), "{fault:?}");
            let report = minfs::fsck::check_device(runner.dev.as_ref(), "fault").unwrap();
            assert!(report.is_clean(), "{fault:?}: {:?}", report.problems);
            counts.slot_reads_absorbed += 1;
            None
        }
        (FaultMode::Forever, Some(d)) => {
            match d.result.as_ref().expect_err("a deviation is an error") {
                Error::NoValidSlot { a, b, .. } => {
                    assert!(
                        matches!(**a, Corruption::Unreadable { .. })
                            && matches!(**b, Corruption::Unreadable { .. }),
                        "{fault:?}: {a} / {b}"
                    );
                    assert_eq!(d.step, step_of(clean, fault.kind, fault.nth), "{fault:?}");
                }
                e => assert!(is_injected(e), "{fault:?}: step {} gave {e}", d.step),
            }
            counts.errors_to_caller += 1;
            Some(d)
        }
        (mode, d) => panic!("{fault:?}: {mode:?} gave {:?}", d.map(|d| d.result)),
    }
}

/// One run with `fault`; panics on anything wrong (the caller counts panics).
fn one_fault(steps: &[Step], clean: &RunLog, fault: Fault, counts: &mut Counts) {
    let mut runner = Runner::new(clean.geometry);
    runner.dev.inject(fault);
    if is_slot_read(clean, fault) {
        if let Some(d) = slot_read_fault(&mut runner, steps, clean, fault, counts) {
            check_images(runner, clean, fault, &d, counts);
        }
        return;
    }
    let mut deviation = None;
    for (i, step) in steps.iter().enumerate() {
        if let Err(d) = runner.step(i, step) {
            deviation = Some(d);
            break;
        }
    }
    let d = deviation.unwrap_or_else(|| panic!("{fault:?}: the workload ran to the end"));
    assert_eq!(
        runner.dev.counts().injected,
        1,
        "{fault:?}: one error injected"
    );
    let err = d.result.as_ref().expect_err("a deviation is an error");
    assert!(is_injected(err), "{fault:?}: step {} gave {err}", d.step);
    assert_eq!(
        d.step,
        step_of(clean, fault.kind, fault.nth),
        "{fault:?}: the error surfaced in another step than the one that did the operation"
    );
    counts.errors_to_caller += 1;

    match fault.kind {
        OpKind::Write | OpKind::Flush => assert_poisoned(&runner, counts),
        OpKind::Read => {
            // Reads do not poison; retrying the step is the caller's choice.
            let r = runner.step(d.step, &steps[d.step]);
            match fault.mode {
                FaultMode::Once => assert!(r.is_ok(), "{fault:?}: retry gave {r:?}"),
                FaultMode::Forever => match r {
                    Err(Deviation {
                        result: Err(ref e), ..
                    }) if is_injected(e) => {}
                    other => panic!("{fault:?}: retry gave {other:?}"),
                },
            }
            counts.read_retries += 1;
        }
    }
    check_images(runner, clean, fault, &d, counts);
}

/// The images left by a run that deviated at `d` open in an allowed state (see the module docs).
fn check_images(runner: Runner, clean: &RunLog, fault: Fault, d: &Deviation, counts: &mut Counts) {
    // The states the images may hold: before the failed step, or what it would have done.
    let before = d
        .step
        .checked_sub(1)
        .and_then(|i| clean.records[i].after.clone());
    let intended = clean.records[d.step].after.clone();
    let mut runner = runner;
    runner.fs = None;
    let dev = runner.dev.clone();
    let media = dev.media();
    let live = dev.volatile_image();
    let log = runner.finish();
    let allowed = [before.as_ref(), intended.as_ref()];
    let k = log.ops();
    let mut images = vec![
        ("durable", media.durable().to_vec()),
        ("volatile", media.volatile()),
    ];
    for seed in 0..2 {
        images.push(("random variant", media.image(&media.random_variant(seed))));
    }
    assert_eq!(images[1].1, live);
    for (what, image) in images {
        let mut why = Vec::new();
        let v = log.check_bytes(image, k, &allowed, &mut why);
        counts.images += 1;
        counts.reopen_failures += u64::from(v.reopen_failure || v.fsck_error);
        counts.wrong_states += u64::from(v.lost_files || v.lost_data || v.overlap);
        assert!(v.ok(), "{fault:?}: {what} image: {why:?}");
    }
    // A one-off error: the live device reopens (no power cut) in an allowed state.
    if fault.mode == FaultMode::Once
        && log
            .records
            .iter()
            .any(|r| r.step == Step::Format && r.as_expected)
    {
        let fs = Filesystem::open_device(dev.clone(), "fault")
            .unwrap_or_else(|e| panic!("{fault:?}: reopening the live device: {e}"));
        let files = fs.list();
        assert!(
            allowed.iter().flatten().any(|s| s.files == files),
            "{fault:?}: live reopen lists {files:?}"
        );
        drop(fs);
        let report = minfs::fsck::check_device(dev.as_ref(), "fault").unwrap();
        assert!(report.is_clean(), "{fault:?}: {:?}", report.problems);
        counts.images += 1;
    }
}

/// What [`all_faults`] found: the counts, the failures, and the clean run's operation counts.
type Outcome = (Counts, Vec<String>, OpCounts);

/// Every fault on the reference workload on `geometry`.
fn all_faults(geometry: Geometry) -> Outcome {
    let steps = reference_workload();
    let mut clean = Runner::new(geometry);
    clean.run_all(&steps);
    let ops = clean.dev.counts();
    let clean = clean.finish();
    let mut counts = Counts::default();
    let mut failures = Vec::new();
    for kind in OpKind::ALL {
        for nth in 0..ops.of(kind) {
            for mode in [FaultMode::Once, FaultMode::Forever] {
                let fault = Fault { kind, nth, mode };
                counts.runs += 1;
                let r = catch_unwind(AssertUnwindSafe(|| {
                    one_fault(&steps, &clean, fault, &mut counts)
                }));
                if let Err(p) = r {
                    counts.panics += 1;
                    let msg = p
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_default();
                    failures.push(format!(
                        "{}/{} {fault:?}: {msg}",
                        geometry.logical, geometry.physical
                    ));
                }
            }
        }
    }
    assert_eq!(counts.runs, 2 * ops.total());
    (counts, failures, ops)
}

#[test]
fn io_errors() {
    let started = Instant::now();
    // A 512e and a 4Kn device, side by side.
    let results: Vec<(Geometry, Outcome)> = std::thread::scope(|s| {
        let workers: Vec<_> = [REFERENCE, REFERENCE_4KN]
            .into_iter()
            .map(|g| (g, s.spawn(move || all_faults(g))))
            .collect();
        workers
            .into_iter()
            .map(|(g, w)| (g, w.join().expect("worker")))
            .collect()
    });
    let mut counts = Counts::default();
    let mut failures = Vec::new();
    for (g, (c, f, ops)) in results {
        println!(
            "{}/{}: reference workload of {} reads, {} writes, {} flushes: {} fault runs",
            g.logical, g.physical, ops.reads, ops.writes, ops.flushes, c.runs
        );
        counts.merge(&c);
        failures.extend(f);
    }
    for f in failures.iter().take(20) {
        eprintln!("FAILED: {f}");
    }
    println!("all in {:.1?}", started.elapsed());
    report(
        "io_errors",
        &format!(
            "fault runs: {}, errors to caller: {}, poisoned calls: {}, read retries: {}, \
             slot read errors absorbed: {}, images opened: {}, reopen failures: {}, \
             wrong states: {}, silent retries: {}, panics: {}",
            counts.runs,
            counts.errors_to_caller,
            counts.poison_checks,
            counts.read_retries,
            counts.slot_reads_absorbed,
            counts.images,
            counts.reopen_failures,
            counts.wrong_states,
            counts.silent_retries,
            counts.panics
        ),
    );
    assert!(
        failures.is_empty(),
        "{} failures; first: {}",
        failures.len(),
        failures[0]
    );
    assert_eq!(
        counts.errors_to_caller + counts.slot_reads_absorbed,
        counts.runs
    );
    assert!(counts.slot_reads_absorbed > 0);
}
