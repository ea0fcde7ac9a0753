//! `minfs-cannyls fsck` on real images: e2fsck exit codes, check and repair.

use assert_cmd::Command;
use predicates::prelude::*;
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

/// `fsck` reports the copy (level, agreeing), finds one that disagrees with the journal where
/// it vouches for it (exit 4), rebuilds it with `-y` (exit 1); a storage without a copy is
/// said to have none, and `add-copy` gives it one.
#[test]
fn fsck_checks_the_copy_and_add_copy_gives_one() {
    let (img, _tail) = storage_with_one_lump(4096);
    let target = img.path.to_str().unwrap();
    fsck(&[target, FILE])
        .code(0)
        .stdout(contains("level with the journal"))
        .stdout(contains(
            "it agrees with the journal wherever it vouches for it",
        ));
    // A byte of the copy's journal header region (the ring head) flipped: the copies
    // disagree.
    let (image, block) = {
        let fs = minfs::Filesystem::open(&img.path, minfs::OpenMode::ReadOnly).unwrap();
        let f = fs.open_file(FILE).unwrap();
        let t = cannyls_adapter::copy::find(&f).unwrap().unwrap();
        (t.image, u64::from(t.block_size))
    };
    // The copy's ring block 0 holds the lump's record: flip its last checksum byte.
    poke(&img.path, image + 2 * block + 3, &[0x55]);
    fsck(&["-n", target, FILE]).code(4).stdout(contains(
        "DAMAGED: its journal cannot be walked from its head",
    ));
    fsck(&["-y", target, FILE])
        .code(1)
        .stdout(contains("rebuilt the copy"));
    fsck(&[target, FILE])
        .code(0)
        .stdout(contains("level with the journal"));
    // A byte of the storage header region (padding Cannyls does not read) changed in the
    // primary: the copy disagrees there.
    poke(&img.path, 100, &[0x77]);
    fsck(&["-n", target, FILE])
        .code(4)
        .stdout(contains("DISAGREES with the journal at [(100, 1)]"));
    fsck(&["-y", target, FILE]).code(1);
    fsck(&[target, FILE]).code(0);

    // Without a copy: said, and given one.
    let img2 = common::image(96 << 20);
    let nvm = cannyls_adapter::MinfsNvm::create(&img2.path, FILE, 8 << 20)
        .unwrap()
        .without_copy();
    drop(nvm.create_storage().unwrap());
    let t2 = img2.path.to_str().unwrap();
    fsck(&[t2, FILE])
        .code(0)
        .stdout(contains("no copy of the Cannyls header and journal"))
        .stdout(contains("add-copy"));
    Command::cargo_bin("minfs-cannyls")
        .unwrap()
        .args(["add-copy", t2, FILE])
        .assert()
        .code(0)
        .stdout(contains("level with the journal"))
        .stdout(
            contains(format!("{} bytes from them on the device", 64u64 << 20))
                .or(contains("bytes from them on the device")),
        );
    fsck(&[t2, FILE])
        .code(0)
        .stdout(contains("it agrees with the journal"));
    // --drop-at-risk needs --salvage.
    fsck(&["--drop-at-risk", t2, FILE]).code(16);
}
