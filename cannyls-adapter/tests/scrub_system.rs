//! Scrubs with the real programs: `minfs scrub` in a loop beside `minfs-bench run --verify`
//! changes none of the run's results; and end to end on the emulated drive (`hddsim emulate
//! --bad-sectors`, a loop device over it, minfs, Cannyls): `minfs-cannyls scrub` names the
//! lump over the bad sector. The second needs root, loop devices and /dev/fuse (skipped with
//! the reason otherwise).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use cannyls::lump::LumpId;
use cannyls_adapter::MinfsNvm;
use minfs::FormatOptions;
use testutil::{print_skip, require_loop, LoopDevice};

/// The directory with this build's minfs-cannyls, minfs, minfs-bench and hddsim.
fn bins() -> PathBuf {
    testutil::bin_dir_with(
        env!("CARGO_BIN_EXE_minfs-cannyls"),
        &[
            ("minfs", "minfs"),
            ("bencher-workloads", "minfs-bench"),
            ("hddsim", "hddsim"),
        ],
    )
}

fn workload(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../bencher-workloads/workloads")
        .join(name)
}

fn mkfs(img: &Path, size: u64) {
    minfs::mkfs::mkfs(
        img,
        &FormatOptions {
            size: Some(size),
            ..Default::default()
        },
        false,
    )
    .unwrap();
}

/// `minfs-bench run --verify` of a workload on a fresh image: its JSON report.
fn bench_run(bin: &Path, img: &Path) -> serde_json::Value {
    let out = Command::new(bin.join("minfs-bench"))
        .args([
            "run",
            "--scale",
            "0.02",
            "--verify",
            "--no-progress",
            "--json",
            "-",
        ])
        .arg("--workload")
        .arg(workload("churn-256k.wl"))
        .arg("--backend")
        .arg(format!("minfs:{}", img.display()))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", testutil::output_text(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn a_scrub_beside_minfs_bench_verify_changes_none_of_its_results() {
    let bin = bins();
    let dir = tempfile::Builder::new().tempdir_in("/var/tmp").unwrap();
    let alone = dir.path().join("alone.img");
    let beside = dir.path().join("beside.img");
    mkfs(&alone, 256 << 20);
    mkfs(&beside, 256 << 20);
    let quiet = bench_run(&bin, &alone);
    // The same run with `minfs scrub` reading the target over and over meanwhile.
    let stop = Arc::new(AtomicBool::new(false));
    let scrubber = {
        let (bin, img, stop) = (bin.clone(), beside.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut runs = 0u32;
            while !stop.load(Ordering::Relaxed) || runs == 0 {
                let out = Command::new(bin.join("minfs"))
                    .args(["scrub", "--json", "--no-progress", "--chunk", "1M"])
                    .arg(&img)
                    .stdin(Stdio::null())
                    .output()
                    .unwrap();
                let code = out.status.code();
                // 0, or 1 while a commit was caught between its slot writes every try.
                assert!(
                    matches!(code, Some(0) | Some(1)),
                    "{}",
                    testutil::output_text(&out)
                );
                let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
                assert_eq!(j["bad_sectors"], 0);
                runs += 1;
            }
            runs
        })
    };
    let busy = bench_run(&bin, &beside);
    stop.store(true, Ordering::Relaxed);
    let runs = scrubber.join().unwrap();
    assert!(runs >= 1);
    for key in [
        "ops",
        "put_bytes",
        "embed_bytes",
        "get_bytes",
        "data_usage_peak_bytes",
    ] {
        assert_eq!(quiet[key], busy[key], "{key}");
    }
    let counts = |v: &serde_json::Value| -> Vec<(String, u64)> {
        v["kinds"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| (k["kind"].to_string(), k["count"].as_u64().unwrap_or(0)))
            .collect()
    };
    assert_eq!(counts(&quiet), counts(&busy));
    // Both filesystems check clean afterwards.
    for img in [&alone, &beside] {
        assert!(minfs::fsck::check(img).unwrap().is_clean());
    }
}

/// An emulator mounted at `mp`; dropping it unmounts (`hddsim umount` waits for the server).
struct Emulator {
    bin: PathBuf,
    mp: PathBuf,
}

impl Emulator {
    fn start(bin: &Path, backing: &Path, mp: &Path, extra: &[&str]) -> Emulator {
        std::fs::create_dir_all(mp).unwrap();
        let out = Command::new(bin.join("hddsim"))
            .args(["emulate", "--backing"])
            .arg(backing)
            .args(extra)
            .arg(mp)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", testutil::output_text(&out));
        Emulator {
            bin: bin.to_path_buf(),
            mp: mp.to_path_buf(),
        }
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        testutil::retry_args(
            self.bin.join("hddsim").to_str().unwrap(),
            &["umount".as_ref(), self.mp.as_os_str()],
        );
    }
}

/// A byte pattern unique to lump `n`.
fn bytes_of(n: u64, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| ((n.wrapping_mul(0x9E37_79B9) >> ((i % 8) * 8)) as u8) ^ (i / 8) as u8)
        .collect()
}

#[test]
fn minfs_cannyls_scrub_on_the_emulated_drive_names_the_lump() {
    require_loop!();
    if !Path::new("/dev/fuse").exists() {
        if std::env::var_os("MINFS_REQUIRE_LOOP").is_some_and(|v| v == "1") {
            panic!("MINFS_REQUIRE_LOOP=1 but /dev/fuse is missing");
        }
        print_skip(module_path!(), "/dev/fuse is missing");
        return;
    }
    let bin = bins();
    let dir = tempfile::Builder::new()
        .prefix("scrub-emulated-")
        .tempdir_in(testutil::scratch_dir())
        .unwrap();
    let backing = dir.path().join("backing.img");
    std::fs::File::create(&backing)
        .unwrap()
        .set_len(128 << 20)
        .unwrap();
    let mp = dir.path().join("mnt");
    // Cannyls on minfs on a loop device over the emulated drive: 30 lumps.
    {
        let _emu = Emulator::start(
            &bin,
            &backing,
            &mp,
            &["--profile", "st1000dm003", "--clock", "virtual"],
        );
        let dev = LoopDevice::over(&mp.join("disk"), 512).unwrap();
        let out = Command::new(bin.join("minfs"))
            .arg("mkfs")
            .arg(dev.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", testutil::output_text(&out));
        let mut storage = MinfsNvm::create(dev.path(), "cannyls.lusf", 64 << 20)
            .unwrap()
            .create_storage()
            .unwrap();
        for n in 1..=30u64 {
            let data = storage
                .allocate_lump_data_with_bytes(&bytes_of(n, 100_000))
                .unwrap();
            storage.put(&LumpId::new(u128::from(n)), &data).unwrap();
        }
        storage.journal_sync().unwrap();
    }
    // Where lump 17's bytes landed on the drive (by content, on the backing image).
    let img = std::fs::read(&backing).unwrap();
    let needle = bytes_of(17, 100_000);
    let at = img
        .windows(4096)
        .position(|w| w == &needle[..4096])
        .expect("lump 17 on the drive") as u64;
    let lba = (at + 50_000) / 512;
    drop(img);
    {
        let _emu = Emulator::start(
            &bin,
            &backing,
            &mp,
            &[
                "--profile",
                "st1000dm003+read_error_recovery_ms=50",
                "--bad-sectors",
                &lba.to_string(),
            ],
        );
        let dev = LoopDevice::over(&mp.join("disk"), 512).unwrap();
        let out = Command::new(bin.join("minfs-cannyls"))
            .args(["scrub", "--json"])
            .arg(dev.path())
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(2),
            "{}",
            testutil::output_text(&out)
        );
        let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(j["index"]["lumps"], 30, "{j}");
        assert_eq!(
            j["lumps_hit"],
            serde_json::json!([LumpId::new(17).to_string()]),
            "{j}"
        );
        let ranges = j["bad_ranges"].as_array().unwrap();
        assert_eq!(ranges.len(), 1, "{j}");
        assert_eq!(ranges[0]["device_offset"], lba * 512);
        assert_eq!(ranges[0]["length"], 512);
        assert_eq!(ranges[0]["regions"], serde_json::json!(["data"]));
    }
}
