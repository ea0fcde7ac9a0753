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
/// `fsck -n` exits 4, `fsck -y` exits 1, then `fsck -n` exits 0. First the inactive slot (the
/// files stay as they are), then — once fsck -y has made both slots equal — the active one
/// (open falls back one generation, with the same files). Shared with the loop-device tests.
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

    // 2. Damage the active slot's file table: open uses the other slot, same files.
    let v = json(&["info", "--json"], target);
    let generation = v["generation"].as_u64().unwrap();
    let active_now = if v["active_slot"] == "A" { 0u64 } else { 65536 };
    let _ = active;
    flip(active_now, 4096 + 40);
    let v = json(&["info", "--json"], target);
    assert_eq!(v["generation"].as_u64().unwrap(), generation - 1);
    assert_eq!(v["files"], files);
    fsck_cycle("checksum mismatch");
    assert_eq!(json(&["info", "--json"], target)["files"], files);
}
