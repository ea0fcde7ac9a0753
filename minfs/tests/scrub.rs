//! `minfs scrub`: in-process on the fault-injecting device (random latent sector errors are
//! found, each once, named with their file; none outside what is read; a rewrite clears them),
//! and through the CLI on an image (output, JSON, exit codes, `--from`, SIGINT, beside a
//! writer that holds the target's lock).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use assert_cmd::cargo::CommandCargoExt;
use minfs::device::FaultDevice;
use minfs::scrub::{self, Options, Owner};
use minfs::{AlignedBuf, BlockDevice, Filesystem, FormatOptions, OpenMode};

fn scrub_dev(dev: &FaultDevice, opts: &Options) -> scrub::Report {
    scrub::scrub_device(dev, "fault", opts, &AtomicBool::new(false), &mut |_| {}).unwrap()
}

/// Random latent sector errors anywhere on a device holding files with several extents: a
/// scrub names every one that lies in a slot or an extent, with the right file and offset,
/// once; reports none elsewhere; `--all` finds the rest as free or reserved space; rewriting
/// the files' bad ranges clears them and the next scrub is clean.
#[test]
fn every_injected_bad_sector_in_an_extent_is_found_once_with_its_file() {
    for seed in 1..=6u64 {
        let dev = Arc::new(FaultDevice::new(48 << 20, 512, 4096));
        let fs = Filesystem::format(
            dev.clone() as Arc<dyn BlockDevice>,
            "fault",
            &FormatOptions::default(),
        )
        .unwrap();
        // Interleaved grows: every file gets several extents.
        for (i, name) in ["a", "b", "c"].iter().enumerate() {
            fs.create(name, (i as u64 + 1) << 20).unwrap();
        }
        for round in 2..5u64 {
            for name in ["a", "b", "c"] {
                let size = fs.stat(name).unwrap().size;
                fs.grow(name, size + (round << 19)).unwrap();
            }
        }
        let files = fs.list();
        assert!(files.iter().all(|f| f.extents.len() >= 3), "{files:?}");
        // Where each logical sector belongs: (file, offset in the file) for extents.
        let owner = |at: u64| -> Option<(String, u64)> {
            for f in &files {
                let mut file_off = 0;
                for e in &f.extents {
                    if (e.offset..e.offset + e.length).contains(&at) {
                        return Some((f.name.clone(), file_off + at - e.offset));
                    }
                    file_off += e.length;
                }
            }
            None
        };
        let mut rng = testutil::XorShift(seed);
        let sectors = dev.len() / 512;
        let mut injected = std::collections::BTreeSet::new();
        for _ in 0..40 {
            let s = rng.next() % sectors;
            // Clusters of 1–8 sectors, as latent errors come.
            let n = 1 + rng.next() % 8;
            for k in s..(s + n).min(sectors) {
                injected.insert(k * 512);
            }
        }
        for &at in &injected {
            dev.make_unreadable(at, 512);
        }
        let in_slots = |at: u64| at < 2 * minfs::format::SLOT_SIZE;
        let writes = dev.counts().writes;
        let r = scrub_dev(
            &dev,
            &Options {
                chunk: 1 << 20,
                ..Options::default()
            },
        );
        assert_eq!(dev.counts().writes, writes, "seed {seed}: scrub wrote");
        let mut found = Vec::new();
        for b in &r.bad {
            for at in (b.device_offset..b.device_end()).step_by(512) {
                found.push(at);
                match &b.owner {
                    Owner::File {
                        name, file_offset, ..
                    } => {
                        let want = owner(at).unwrap_or_else(|| panic!("{at} is in no file"));
                        assert_eq!(
                            (name.clone(), file_offset + at - b.device_offset),
                            want,
                            "seed {seed}"
                        );
                    }
                    Owner::Metadata { .. } => assert!(in_slots(at), "seed {seed}: {at}"),
                    other => panic!("seed {seed}: {other:?} without --all"),
                }
            }
        }
        let want: Vec<u64> = injected
            .iter()
            .copied()
            .filter(|&at| owner(at).is_some() || in_slots(at))
            .collect();
        assert!(!want.is_empty(), "seed {seed}: no sector in an extent");
        assert_eq!(
            found, want,
            "seed {seed}: found exactly those, in order, once"
        );
        // --all: every injected sector, each once.
        let all = scrub_dev(
            &dev,
            &Options {
                all: true,
                ..Options::default()
            },
        );
        let every: Vec<u64> = all
            .bad
            .iter()
            .flat_map(|b| (b.device_offset..b.device_end()).step_by(512))
            .collect();
        let inside = dev.len() / 4096 * 4096;
        let injected_inside: Vec<u64> = injected.iter().copied().filter(|&a| a < inside).collect();
        assert_eq!(every, injected_inside, "seed {seed}: --all");
        for b in &all.bad {
            if owner(b.device_offset).is_none() && !in_slots(b.device_offset) {
                assert!(
                    matches!(b.owner, Owner::Free | Owner::Reserved),
                    "seed {seed}: {b}"
                );
            }
        }
        // The owner rewrites its bad ranges (here: zeros): the next scrub is clean.
        for b in &r.bad {
            if let Owner::File {
                name, file_offset, ..
            } = &b.owner
            {
                let f = fs.open_file(name).unwrap();
                let buf = AlignedBuf::zeroed(b.length as usize, 4096);
                f.write_at(&buf, *file_offset).unwrap();
            }
        }
        fs.rewrite_metadata(1).unwrap();
        let again = scrub_dev(&dev, &Options::default());
        assert!(again.bad.is_empty(), "seed {seed}: {:?}", again.bad);
        assert!(again.metadata.is_clean());
    }
}

// ---- The CLI on an image ----

fn minfs() -> Command {
    Command::cargo_bin("minfs").unwrap()
}

/// A 64 MiB image with files `a` (8 MiB) and `b` (4 MiB) holding data.
fn image(dir: &Path) -> PathBuf {
    let img = dir.join("scrub.img");
    minfs::mkfs::mkfs(
        &img,
        &FormatOptions {
            size: Some(64 << 20),
            ..Default::default()
        },
        false,
    )
    .unwrap();
    let fs = Filesystem::open(&img, OpenMode::ReadWrite).unwrap();
    for (name, size) in [("a", 8u64 << 20), ("b", 4 << 20)] {
        fs.create(name, size).unwrap();
        let f = fs.open_file(name).unwrap();
        let mut buf = AlignedBuf::zeroed(size as usize, 4096);
        buf.fill(name.as_bytes()[0]);
        f.write_at(&buf, 0).unwrap();
        f.flush().unwrap();
    }
    img
}

fn json_of(out: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", testutil::output_text(out)))
}

#[test]
fn cli_scrub_of_a_clean_image() {
    let dir = tempfile::Builder::new().tempdir_in("/var/tmp").unwrap();
    let img = image(dir.path());
    let out = minfs().arg("scrub").arg(&img).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        testutil::output_text(&out)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("metadata clean (2 files)"), "{text}");
    assert!(text.contains("0 unreadable sectors"), "{text}");
    let out = minfs()
        .args(["scrub", "--json", "--no-progress"])
        .arg(&img)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let j = json_of(&out);
    // Two 64 KiB slots and 12 MiB of extents.
    let expect = 2 * 65536 + (12u64 << 20);
    assert_eq!(j["bytes_total"], expect);
    assert_eq!(j["bytes_read"], expect);
    assert_eq!(j["complete"], true);
    assert_eq!(j["bad_sectors"], 0);
    assert_eq!(j["bad_ranges"].as_array().unwrap().len(), 0);
    assert_eq!(j["metadata"]["clean"], true);
    // --all reads the whole filesystem.
    let j = json_of(
        &minfs()
            .args(["scrub", "--json", "--all"])
            .arg(&img)
            .output()
            .unwrap(),
    );
    assert_eq!(j["bytes_total"], 64u64 << 20);
    // --from skips what is before it.
    let a = Filesystem::open(&img, OpenMode::ReadOnly)
        .unwrap()
        .stat("a")
        .unwrap();
    let from = a.extents[0].offset + (1 << 20);
    let j = json_of(
        &minfs()
            .args(["scrub", "--json", "--from"])
            .arg(from.to_string())
            .arg(&img)
            .output()
            .unwrap(),
    );
    assert_eq!(j["from"], from);
    let rest = (12u64 << 20) - (1 << 20);
    assert_eq!(j["bytes_total"], rest, "{j}");
}

#[test]
fn cli_scrub_bad_input_is_a_usage_or_operational_error() {
    let dir = tempfile::Builder::new().tempdir_in("/var/tmp").unwrap();
    let img = image(dir.path());
    for (args, code, says) in [
        (vec!["--rate", "-3"], 16, "positive number of MB/s"),
        (vec!["--rate", "fast"], 16, "positive number of MB/s"),
        (vec!["--chunk", "1000"], 16, "multiple of 4096"),
        (vec!["--from", "100"], 8, "--from"),
        (vec!["--from", "1T"], 8, "past the end"),
    ] {
        let out = minfs().arg("scrub").args(&args).arg(&img).output().unwrap();
        let text = testutil::output_text(&out);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {text}");
        assert!(text.contains(says), "{args:?}: {text}");
    }
    let out = minfs()
        .args(["scrub", "/nonexistent/x.img"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(8));
    assert!(testutil::output_text(&out).contains("/nonexistent/x.img"));
    let out = minfs().args(["scrub", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    for bit in [
        "1 metadata problems",
        "2 unreadable sectors",
        "4 interrupted",
    ] {
        assert!(help.contains(bit), "{help}");
    }
}

/// The scrub opens the target without its lock: it runs while a writer holds it (and writes
/// to it), and changes nothing the writer wrote.
#[test]
fn cli_scrub_runs_beside_a_writer_holding_the_lock() {
    let dir = tempfile::Builder::new().tempdir_in("/var/tmp").unwrap();
    let img = image(dir.path());
    let fs = Filesystem::open(&img, OpenMode::ReadWrite).unwrap();
    // The lock is held: a second read-write opener is refused.
    let out = minfs().args(["fsck", "-y"]).arg(&img).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(8),
        "{}",
        testutil::output_text(&out)
    );
    let f = fs.open_file("a").unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (f, stop) = (f.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut buf = AlignedBuf::zeroed(1 << 20, 4096);
            let mut round = 0u8;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                round = round.wrapping_add(1);
                buf.fill(round);
                for i in 0..8u64 {
                    f.write_at(&buf, i << 20).unwrap();
                }
                f.flush().unwrap();
            }
            round
        })
    };
    for _ in 0..3 {
        let out = minfs()
            .args(["scrub", "--json", "--chunk", "256K"])
            .arg(&img)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            testutil::output_text(&out)
        );
        assert_eq!(json_of(&out)["bad_sectors"], 0);
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let round = writer.join().unwrap();
    let mut buf = AlignedBuf::zeroed(8 << 20, 4096);
    f.read_at(&mut buf, 0).unwrap();
    assert!(
        buf.iter().all(|&b| b == round),
        "the writer's last round is intact"
    );
}

/// SIGINT stops the scrub after its current read: exit 4, the offset reached printed; a scrub
/// from there reads the rest, and the two together read what one whole scrub reads.
#[test]
fn cli_scrub_interrupted_by_sigint_says_where_to_resume() {
    let dir = tempfile::Builder::new().tempdir_in("/var/tmp").unwrap();
    let img = image(dir.path());
    // 2 MB/s over 12 MiB: about 6 s; interrupted after 1 s.
    let child = minfs()
        .args(["scrub", "--json", "--rate", "2", "--chunk", "64K"])
        .arg(&img)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1000));
    let t = Instant::now();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(t.elapsed() < Duration::from_secs(3), "stopped promptly");
    assert_eq!(
        out.status.code(),
        Some(4),
        "{}",
        testutil::output_text(&out)
    );
    let first = json_of(&out);
    assert_eq!(first["complete"], false);
    let reached = first["reached"].as_u64().unwrap();
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(&format!("--from {reached}")),
        "{}",
        testutil::output_text(&out)
    );
    let rest = json_of(
        &minfs()
            .args(["scrub", "--json", "--from"])
            .arg(reached.to_string())
            .arg(&img)
            .output()
            .unwrap(),
    );
    assert_eq!(rest["complete"], true);
    let whole = 2 * 65536 + (12u64 << 20);
    let done = first["bytes_read"].as_u64().unwrap() + rest["bytes_read"].as_u64().unwrap();
    assert_eq!(done, whole);
    // The throttle held: about 2 MB/s while it ran.
    let rate = first["rate_mb_per_s"].as_f64().unwrap();
    assert!(rate < 2.6, "{rate} MB/s");
}
