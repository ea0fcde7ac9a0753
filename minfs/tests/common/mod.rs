//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::Path;

use assert_cmd::Command;
use predicates::prelude::*;

/// The `minfs` binary under test.
pub fn minfs() -> Command {
    Command::cargo_bin("minfs").unwrap()
}

/// `minfs cat TARGET NAME`'s output.
pub fn cat(target: &Path, name: &str) -> Vec<u8> {
    minfs()
        .arg("cat")
        .arg(target)
        .arg(name)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone()
}

/// Runs `minfs ARGS TARGET` and parses its stdout as JSON.
pub fn json(args: &[&str], target: &Path) -> serde_json::Value {
    let out = minfs()
        .args(args)
        .arg(target)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    serde_json::from_slice(&out).unwrap()
}

/// Flips a byte in one slot and checks that it is survived: open uses the other slot,
/// `fsck -n` exits 4, `fsck -y` exits 1, then `fsck -n` exits 0. First the inactive slot, then
/// the active one: both hold the last commit, so the generation and the files stay as they
/// are either way. Shared with the loop-device tests.
pub fn corrupt_slots_and_check(target: &Path) {
    let flip = |slot_offset: u64, at: u64| {
        use std::os::unix::fs::FileExt;
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(target)
            .unwrap();
        let mut b = [0u8; 1];
        f.read_exact_at(&mut b, slot_offset + at).unwrap();
        b[0] ^= 0xff;
        f.write_all_at(&b, slot_offset + at).unwrap();
        f.sync_all().unwrap();
    };
    let fsck_cycle = |want: &str| {
        minfs()
            .args(["fsck", "-n"])
            .arg(target)
            .assert()
            .code(4)
            .stdout(predicate::str::contains(want));
        minfs().args(["fsck", "-y"]).arg(target).assert().code(1);
        minfs().args(["fsck", "-n"]).arg(target).assert().code(0);
    };
    let v = json(&["info", "--json"], target);
    let (active, inactive) = if v["active_slot"] == "A" {
        (0u64, 65536u64)
    } else {
        (65536, 0)
    };
    let files = v["files"].clone();
    let generation = v["generation"].as_u64().unwrap();

    // 1. Damage the inactive slot's superblock: nothing visible changes.
    flip(inactive, 20);
    let v = json(&["info", "--json"], target);
    assert_eq!(
        (v["generation"].as_u64().unwrap(), &v["files"]),
        (generation, &files)
    );
    fsck_cycle("invalid");

    // 2. Damage the active slot's file table: open uses the other slot, same commit.
    let v = json(&["info", "--json"], target);
    assert_eq!(v["generation"].as_u64().unwrap(), generation);
    let active_now = if v["active_slot"] == "A" { 0u64 } else { 65536 };
    let _ = active;
    flip(active_now, 4096 + 40);
    let v = json(&["info", "--json"], target);
    assert_eq!(v["generation"].as_u64().unwrap(), generation);
    assert_eq!(v["files"], files);
    fsck_cycle("checksum mismatch");
    assert_eq!(json(&["info", "--json"], target)["files"], files);
}

/// A commit that must survive in the other slot: `mkfs`, one `create` (a Cannyls deployment commits
/// once), then 64 random bytes over the start of one slot — slot A, then, on a fresh filesystem,
/// slot B. The file must survive either: `ls` shows it, `fsck -n` reports the hit slot (exit 4),
/// `fsck -y` repairs it (exit 1), `fsck -n` is then clean and the file still there. `mkfs` is
/// `mkfs -f MKFS_ARGS TARGET` (e.g. `-s 256M` for an image).
pub fn one_commit_survives_either_slot_hit(target: &Path, mkfs_args: &[&str]) {
    use std::os::unix::fs::FileExt;
    for (slot, offset) in [("slot A", 0u64), ("slot B", 65536)] {
        minfs()
            .args(["mkfs", "-f"])
            .args(mkfs_args)
            .arg(target)
            .assert()
            .success();
        minfs()
            .arg("create")
            .arg(target)
            .args(["lusf", "--size", "64M"])
            .assert()
            .success();
        let mut rng = testutil::XorShift(0x1717_0000 + offset + 1);
        let garbage: Vec<u8> = (0..64).map(|_| rng.next() as u8).collect();
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(target)
            .unwrap();
        f.write_all_at(&garbage, offset).unwrap();
        f.sync_all().unwrap();
        drop(f);
        let listed = |when: &str| {
            let v = json(&["info", "--json"], target);
            assert_eq!(v["files"].as_array().map(Vec::len), Some(1), "{when}: {v}");
            assert_eq!(v["files"][0]["name"], "lusf", "{when}");
            assert_eq!(v["files"][0]["size"], 64u64 << 20, "{when}");
        };
        listed(&format!("{slot} hit"));
        minfs()
            .arg("ls")
            .arg(target)
            .assert()
            .success()
            .stdout(predicate::str::contains("lusf"));
        minfs()
            .args(["fsck", "-n"])
            .arg(target)
            .assert()
            .code(4)
            .stdout(predicate::str::contains(format!("{slot} is invalid")));
        minfs().args(["fsck", "-y"]).arg(target).assert().code(1);
        minfs().args(["fsck", "-n"]).arg(target).assert().code(0);
        listed(&format!("{slot} hit, after fsck -y"));
    }
}
