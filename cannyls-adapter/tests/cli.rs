//! `minfs-cannyls fsck` on real images: e2fsck exit codes, check and repair.

use assert_cmd::Command;
use predicates::str::contains;

mod common;

use common::{poke, storage_with_one_lump, FILE, TORN_PUT};

fn fsck(args: &[&str]) -> assert_cmd::assert::Assert {
    Command::cargo_bin("minfs-cannyls")
        .unwrap()
        .arg("fsck")
        .args(args)
        .assert()
}

#[test]
fn fsck_checks_repairs_and_exits_like_e2fsck() {
    let (img, tail) = storage_with_one_lump(4096);
    let target = img.path.to_str().unwrap();
    fsck(&[target, FILE])
        .code(0)
        .stdout(contains("journal clean: 1 records"));

    poke(&img.path, 2 * 4096 + tail, &TORN_PUT);
    // -n (and the default) change nothing: torn, uncorrected.
    for args in [&["-n", target, FILE][..], &[target, FILE]] {
        fsck(args)
            .code(4)
            .stdout(contains("found a record (tag 3) whose checksum 0xdeadbeef"))
            .stdout(contains(format!(
                "at ring position {tail}; left uncorrected"
            )));
    }
    fsck(&["-y", target, FILE]).code(1).stdout(contains(format!(
        "at ring position {tail} (file offset {})",
        2 * 4096 + tail
    )));
    fsck(&[target, FILE]).code(0).stdout(contains("clean"));
    common::assert_fsck_clean(&img.path);
}

#[test]
fn fsck_exit_codes_for_what_it_cannot_fix_or_do() {
    let (img, _) = storage_with_one_lump(512);
    let target = img.path.to_str().unwrap();
    // Garbage at the head: not repairable with certainty.
    poke(&img.path, 2 * 512, &TORN_PUT);
    fsck(&["-y", target, FILE])
        .code(4)
        .stdout(contains("cannot be repaired with certainty"));
    // No such file; a file that holds no storage; no such target.
    fsck(&[target, "nothing"])
        .code(8)
        .stderr(contains("nothing"));
    let fs = minfs::Filesystem::open(&img.path, minfs::OpenMode::ReadWrite).unwrap();
    fs.create("empty", 1 << 20).unwrap();
    drop(fs);
    fsck(&[target, "empty"])
        .code(8)
        .stderr(contains("magic \"lusf\" missing"));
    fsck(&["/nonexistent/minfs.img"]).code(8);
    // Usage errors.
    fsck(&[]).code(16);
    fsck(&["-n", "-y", target]).code(16);
}
