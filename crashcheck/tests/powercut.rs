//! The power-cut check for real, small (CI): `scripts/powercut.sh` records durable-256k at
//! scale 0.005 (100 puts, each synced) on the emulated drive for minfs and ext4 (no journal),
//! builds a few hundred crash states and checks them; then the same runs with a deliberately
//! wrong acknowledgement bound must report losses (the checker can fail). Nothing may stay
//! mounted or attached. Needs root, loop devices and /dev/fuse: skipped with a printed reason
//! otherwise (a failure with MINFS_REQUIRE_LOOP=1). Leaves its counts line in
//! `$CARGO_TARGET_TMPDIR/reliability-powercut.txt` for scripts/test.sh.

use std::path::{Path, PathBuf};
use std::process::Command;

use testutil::{print_skip, require_loop};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn counts(dir: &Path, name: &str) -> serde_json::Value {
    let p = dir.join(name);
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&text).unwrap()
}

fn n(v: &serde_json::Value, k: &str) -> u64 {
    v["counts"][k]
        .as_u64()
        .unwrap_or_else(|| panic!("no count {k} in {v}"))
}

#[test]
fn power_cuts_of_minfs_and_ext4() {
    require_loop!();
    if !Path::new("/dev/fuse").exists() {
        if std::env::var_os("MINFS_REQUIRE_LOOP").is_some_and(|v| v == "1") {
            panic!("MINFS_REQUIRE_LOOP=1 but /dev/fuse is missing");
        }
        print_skip(
            module_path!(),
            "/dev/fuse is missing (the emulated drive needs FUSE)",
        );
        return;
    }
    for tool in ["mkfs.ext4", "e2fsck", "mkfs.xfs"] {
        if Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .map_or(true, |o| !o.status.success())
        {
            if std::env::var_os("MINFS_REQUIRE_LOOP").is_some_and(|v| v == "1") {
                panic!("MINFS_REQUIRE_LOOP=1 but {tool} is missing");
            }
            print_skip(module_path!(), &format!("{tool} is missing"));
            return;
        }
    }
    let bins = testutil::bin_dir_with(
        env!("CARGO_BIN_EXE_crashcheck"),
        &[
            ("minfs", "minfs"),
            ("bencher-workloads", "minfs-bench"),
            ("cannyls-adapter", "minfs-cannyls"),
            ("hddsim", "hddsim"),
        ],
    );
    let tmp = tempfile::Builder::new()
        .prefix("crashcheck-powercut-")
        .tempdir_in(testutil::scratch_dir())
        .unwrap();
    let out = tmp.path().join("out");
    let work = tmp.path().join("work");
    let res = Command::new(repo().join("scripts/powercut.sh"))
        .args([
            "--workloads",
            "durable-256k:0.005",
            "--targets",
            "minfs,ext4",
        ])
        .args(["--points", "50", "--wrong-bound", "--scratch-size", "4G"])
        .arg("--bin-dir")
        .arg(&bins)
        .arg("--work")
        .arg(&work)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let text = testutil::output_text(&res);
    // Nothing of the run is left mounted or attached.
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(
        !mounts.contains(tmp.path().to_str().unwrap()),
        "left mounted:\n{mounts}"
    );
    let loops = Command::new("losetup").arg("-a").output().unwrap();
    let loops = String::from_utf8_lossy(&loops.stdout);
    assert!(
        !loops.contains(tmp.path().to_str().unwrap()),
        "left attached:\n{loops}"
    );
    assert!(
        std::fs::read_dir(&work).map_or(0, |d| d.count()) == 0,
        "images left in {}",
        work.display()
    );
    assert!(res.status.success(), "{text}");

    let minfs = counts(&out, "check-durable-256k-minfs.json");
    let ext4 = counts(&out, "check-durable-256k-ext4.json");
    let states = n(&minfs, "states") + n(&ext4, "states");
    assert!(states >= 200, "only {states} crash states\n{text}");
    assert!(minfs["flushes"].as_u64().unwrap() >= 100, "{minfs}");
    // minfs at block size 4096 loses nothing, whatever the crash; the copy of its header and
    // journal (made by default) vouches only for what the journal holds, and is level again
    // once the storage was opened and closed.
    for k in [
        "fs_failed",
        "storage_failed",
        "lost",
        "wrong_bytes",
        "resurrected",
        "phantom",
        "copy_disagrees",
    ] {
        assert_eq!(n(&minfs, k), 0, "minfs {k}: {minfs}");
    }
    // ext4 without a journal: e2fsck repairs, and no acknowledged lump is lost or undone.
    assert!(n(&ext4, "repairs") > 0, "{ext4}");
    for k in ["lost", "resurrected", "phantom"] {
        assert_eq!(n(&ext4, k), 0, "ext4 {k}: {ext4}");
    }
    // The checker can fail: a bound that acknowledges operations before their writes were
    // issued reports acknowledged lumps lost.
    let wrong = counts(&out, "wrongbound-durable-256k-minfs.json");
    assert!(
        n(&wrong, "lost") > 0,
        "the wrong bound found nothing: {wrong}"
    );
    let line = format!(
        "powercut: crash states: {states}, minfs states: {}, minfs lost: {}, ext4 states: {}, \
         ext4 repairs: {}, ext4 storage not opening: {}, ext4 lost: {}, wrong-bound lost: {} \
         (the checker's self-test: a deliberately wrong acknowledgement bound must lose lumps)",
        n(&minfs, "states"),
        n(&minfs, "lost"),
        n(&ext4, "states"),
        n(&ext4, "repairs"),
        n(&ext4, "storage_failed"),
        n(&ext4, "lost"),
        n(&wrong, "lost")
    );
    println!("{line}");
    let _ = std::fs::write(
        Path::new(env!("CARGO_TARGET_TMPDIR")).join("reliability-powercut.txt"),
        format!("{line}\n"),
    );
}
