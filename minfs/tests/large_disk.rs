//! Large devices and the limits of the format.
//!
//! - Library level, anywhere: mkfs, open, create, grow, set_size, remove and fsck of a 1 PiB
//!   filesystem (and of the largest one, 8 EiB − 4 KiB) on a sparse in-memory device that
//!   stores only the pages written; the refusals of the limits in `docs/FORMAT.md` ("Limits").
//! - As root: the CLI on a 15 TiB loop device over a sparse image (skipped with a printed
//!   reason elsewhere; `MINFS_REQUIRE_LOOP=1` makes the skip a failure).

mod common;

use std::sync::Arc;

use common::{cat, json, minfs};
use minfs::format::{file_table, BLOCK_SIZE, DATA_START, MAX_FILES, MAX_SIZE};
use minfs::{
    fsck, AlignedBuf, BlockDevice, Error, Filesystem, FormatOptions, MemDevice, SparseMemDevice,
};
use testutil::{require_loop, LoopDevice};

const TIB: u64 = 1 << 40;
const PIB: u64 = 1 << 50;

fn sparse(len: u64) -> Arc<SparseMemDevice> {
    Arc::new(SparseMemDevice::new(len, 512, 4096))
}

fn extents(fs: &Filesystem, name: &str) -> Vec<(u64, u64)> {
    fs.stat(name)
        .unwrap()
        .extents
        .iter()
        .map(|e| (e.offset, e.length))
        .collect()
}

/// Writes `stamp` into the last sector of `name` and reads it back through the device.
fn stamp_last_sector(fs: &Filesystem, dev: &dyn BlockDevice, name: &str, stamp: u8) -> u64 {
    let f = fs.open_file(name).unwrap();
    let at = f.size() - 512;
    let mut buf = AlignedBuf::zeroed(512, 512);
    buf.fill(stamp);
    f.write_at(&buf, at).unwrap();
    f.flush().unwrap();
    let last = *f.extents().last().unwrap();
    let dev_off = last.byte_offset() + last.byte_len() - 512;
    let mut back = AlignedBuf::zeroed(512, 512);
    dev.read_at(&mut back, dev_off).unwrap();
    assert!(
        back.iter().all(|&b| b == stamp),
        "{name}: stamp not at {dev_off}"
    );
    dev_off
}

#[test]
fn mkfs_open_create_grow_remove_fsck_on_a_1_pib_device() {
    let dev = sparse(PIB);
    let opts = FormatOptions::default();
    let fs = Filesystem::format(dev.clone(), "pib", &opts).unwrap();
    let blocks = (PIB - DATA_START) / BLOCK_SIZE;
    assert_eq!(fs.superblock().total_bytes, PIB);
    assert_eq!(fs.superblock().block_count, blocks);
    drop(fs);

    let fs = Filesystem::open_device(dev.clone(), "pib").unwrap();
    assert_eq!(fs.free_bytes(), blocks * BLOCK_SIZE);
    fs.create("a", 100 * TIB).unwrap();
    fs.create("b", 1 << 30).unwrap();
    assert_eq!(extents(&fs, "a"), vec![(DATA_START, 100 * TIB)]);
    assert_eq!(extents(&fs, "b"), vec![(DATA_START + 100 * TIB, 1 << 30)]);
    // "b" follows "a": "a" grows into a second extent after "b".
    fs.grow("a", 300 * TIB).unwrap();
    let after_b = DATA_START + 100 * TIB + (1 << 30);
    assert_eq!(
        extents(&fs, "a"),
        vec![(DATA_START, 100 * TIB), (after_b, 200 * TIB)]
    );
    // The rest of the device, to its last block, in one extent.
    let rest = fs.free_bytes();
    fs.create("end", rest).unwrap();
    assert_eq!(extents(&fs, "end"), vec![(after_b + 200 * TIB, rest)]);
    assert_eq!(fs.free_bytes(), 0);
    assert_eq!(stamp_last_sector(&fs, dev.as_ref(), "end", 0xe5), PIB - 512);
    stamp_last_sector(&fs, dev.as_ref(), "a", 0xa1);
    // Shrinking "a" and removing "b" give the space back; "b"'s blocks go to the next file.
    fs.set_size("a", 100 * TIB).unwrap();
    fs.remove("b").unwrap();
    assert_eq!(fs.free_bytes(), 200 * TIB + (1 << 30));
    fs.create("c", 2 << 30).unwrap();
    assert_eq!(extents(&fs, "c"), vec![(DATA_START + 100 * TIB, 2 << 30)]);
    let report = fsck::check_device(dev.as_ref(), "pib").unwrap();
    assert!(report.is_clean(), "{:?}", report.problems);
    assert_eq!(report.block_count, blocks);
    assert_eq!(report.free_blocks * BLOCK_SIZE, fs.free_bytes());

    let before = fs.list();
    drop(fs);
    let fs = Filesystem::open_device(dev.clone(), "pib").unwrap();
    assert_eq!(fs.list(), before);
    // What a 1 PiB filesystem keeps: the reserved area mkfs zeroes, the sectors written, and
    // the first block of each of the four files created (zeroed when a file gets it).
    assert!(
        dev.stored_bytes() <= DATA_START + 8 * 4096,
        "{} bytes stored",
        dev.stored_bytes()
    );
}

#[test]
fn the_largest_filesystem_works_and_a_larger_one_is_refused_naming_the_size() {
    let dev = sparse(MAX_SIZE + BLOCK_SIZE);
    let err = Filesystem::format(dev.clone(), "huge", &FormatOptions::default()).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, Error::BadSize { .. }), "{err}");
    assert!(
        msg.contains(&(MAX_SIZE + BLOCK_SIZE).to_string()) && msg.contains(&MAX_SIZE.to_string()),
        "{msg}"
    );
    assert_eq!(dev.stored_bytes(), 0, "a refused mkfs wrote");
    let opts = FormatOptions {
        size: Some(MAX_SIZE),
        ..Default::default()
    };
    let fs = Filesystem::format(dev.clone(), "huge", &opts).unwrap();
    fs.create("half", MAX_SIZE / 2).unwrap();
    let rest = fs.free_bytes();
    fs.create("rest", rest).unwrap();
    assert_eq!(
        stamp_last_sector(&fs, dev.as_ref(), "rest", 7),
        MAX_SIZE - 512
    );
    drop(fs);
    let fs = Filesystem::open_device(dev.clone(), "huge").unwrap();
    assert_eq!(fs.free_bytes(), 0);
    assert!(fsck::check_device(dev.as_ref(), "huge").unwrap().is_clean());
}

#[test]
fn more_than_256_files_are_refused_naming_the_limit() {
    let dev = Arc::new(MemDevice::new(4 << 20, 512, 4096));
    let fs = Filesystem::format(dev.clone(), "mem", &FormatOptions::default()).unwrap();
    for i in 0..MAX_FILES {
        fs.create(&format!("f{i}"), 0).unwrap();
    }
    let err = fs.create("one-more", 0).unwrap_err();
    assert!(matches!(err, Error::TooManyFiles { max: 256, .. }), "{err}");
    assert!(err.to_string().contains("at most 256"), "{err}");
    drop(fs);
    let fs = Filesystem::open_device(dev, "mem").unwrap();
    assert_eq!(fs.list().len(), MAX_FILES);
}

/// Two files grown a block at a time in turns get one extent per grow (neither can extend in
/// place), until the file table is full: the grow that does not fit is refused naming the
/// counts and the limit, and changes nothing.
#[test]
fn more_extents_than_the_file_table_holds_are_refused_naming_them() {
    let blocks = file_table::MAX_EXTENTS as u64 + 64;
    let dev = Arc::new(MemDevice::new(DATA_START + blocks * BLOCK_SIZE, 512, 4096));
    let fs = Filesystem::format(dev.clone(), "mem", &FormatOptions::default()).unwrap();
    fs.create("x", BLOCK_SIZE).unwrap();
    fs.create("y", BLOCK_SIZE).unwrap();
    let mut total = 2;
    let err = loop {
        let name = if total % 2 == 0 { "x" } else { "y" };
        let size = fs.stat(name).unwrap().size;
        match fs.grow(name, size + BLOCK_SIZE) {
            Ok(_) => total += 1,
            Err(e) => break e,
        }
    };
    // Two records of one-byte names: 26 bytes, the rest for extents.
    let fit = (file_table::PAYLOAD_CAPACITY - 26) / file_table::EXTENT_SIZE;
    assert_eq!(total, fit);
    let counted: usize = fs.list().iter().map(|f| f.extents.len()).sum();
    assert_eq!(counted, fit);
    match &err {
        Error::FileTableFull {
            files: 2,
            extents,
            max_extents,
            ..
        } => {
            assert_eq!(*extents, fit + 1);
            assert_eq!(*max_extents, file_table::MAX_EXTENTS);
        }
        e => panic!("{e}"),
    }
    let msg = err.to_string();
    assert!(
        msg.contains(&format!("{} extents", fit + 1))
            && msg.contains(&format!("at most {} extents", file_table::MAX_EXTENTS)),
        "{msg}"
    );
    let before = fs.list();
    drop(fs);
    let fs = Filesystem::open_device(dev.clone(), "mem").unwrap();
    assert_eq!(fs.list(), before, "the refused grow changed the files");
    assert!(fsck::check_device(dev.as_ref(), "mem").unwrap().is_clean());
}

/// As root: the CLI on a 15 TiB loop device over a sparse image (the largest file ext4 holds
/// is 16 TiB): mkfs, create, info, ls, write, cat, grow, fsck -n, rm, with a file at the end of
/// the device.
#[test]
fn cli_on_a_15_tib_loop_device() {
    require_loop!();
    let size = 15 * TIB;
    let dev = LoopDevice::new(size, 512).unwrap();
    let d = dev.path();
    minfs().arg("mkfs").arg(d).assert().success();
    let info = json(&["info", "--json"], d);
    assert_eq!(info["total_bytes"], size);
    assert_eq!(info["free_bytes"], size - DATA_START);
    minfs()
        .arg("create")
        .arg(d)
        .args(["big", "-s", "10T"])
        .assert()
        .success();
    // "mid" takes all but the last 8 MiB, "tail" those: its extent ends at the device's end.
    let tail_size: u64 = 8 << 20;
    let free = json(&["info", "--json"], d)["free_bytes"].as_u64().unwrap();
    for (name, bytes) in [("mid", free - tail_size), ("tail", tail_size)] {
        minfs()
            .arg("create")
            .arg(d)
            .args([name, "-s"])
            .arg(bytes.to_string())
            .assert()
            .success();
    }
    let data: Vec<u8> = (0..(1 << 20) + 4096)
        .map(|i: u32| (i % 251) as u8)
        .collect();
    let at = tail_size - (2 << 20);
    minfs()
        .arg("write")
        .arg(d)
        .arg("tail")
        .args(["--offset"])
        .arg(at.to_string())
        .write_stdin(data.clone())
        .assert()
        .success();
    let ls = json(&["ls", "--json"], d);
    let tail = ls
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "tail")
        .unwrap();
    let ext = &tail["extents"][0];
    assert_eq!(
        ext["offset"].as_u64().unwrap() + ext["length"].as_u64().unwrap(),
        size
    );
    let out = cat(d, "tail");
    assert_eq!(out.len() as u64, tail_size);
    assert_eq!(&out[at as usize..at as usize + data.len()], &data[..]);
    minfs().args(["rm"]).arg(d).arg("mid").assert().success();
    minfs()
        .arg("grow")
        .arg(d)
        .args(["big", "-s", "14T"])
        .assert()
        .success();
    minfs().args(["fsck", "-n"]).arg(d).assert().code(0);
    minfs().args(["rm"]).arg(d).arg("big").assert().success();
    minfs().args(["rm"]).arg(d).arg("tail").assert().success();
    let info = json(&["info", "--json"], d);
    assert_eq!(info["free_bytes"], size - DATA_START);
    assert_eq!(info["files"].as_array().unwrap().len(), 0);
    minfs().args(["fsck", "-n"]).arg(d).assert().code(0);
}

/// Regression (issue 12): mkfs of an existing sparse image fallocated its whole length; on a
/// host with less free space than the holes (a 15 TiB sparse image on a 50 GB disk) fallocate
/// filled the host filesystem and then failed with ENOSPC, leaving the space taken. Now mkfs
/// checks the host's free space first and refuses, naming the sizes, with nothing allocated.
/// As root, on a 64 MiB ext4 filesystem holding a 1 GiB sparse image.
#[test]
fn mkfs_refuses_a_sparse_image_larger_than_the_free_host_space_without_allocating() {
    require_loop!();
    use std::os::unix::fs::MetadataExt;
    let dev = LoopDevice::new(64 << 20, 512).unwrap();
    testutil::mkfs_ext4(dev.path()).unwrap();
    let mnt = testutil::Mount::new(dev.path()).unwrap();
    let img = mnt.path().join("sparse.img");
    std::fs::File::create(&img)
        .unwrap()
        .set_len(1 << 30)
        .unwrap();
    let out = minfs().arg("mkfs").arg(&img).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("cannot preallocate 1073741824 bytes")
            && err.contains("holes need up to 1073741824 more bytes")
            && err.contains("nothing was allocated"),
        "{err}"
    );
    let meta = std::fs::metadata(&img).unwrap();
    assert_eq!(meta.len(), 1 << 30);
    assert_eq!(meta.blocks(), 0, "mkfs allocated blocks of the image");
    // An image that fits is still preallocated whole.
    let small = mnt.path().join("small.img");
    std::fs::File::create(&small)
        .unwrap()
        .set_len(8 << 20)
        .unwrap();
    minfs().arg("mkfs").arg(&small).assert().success();
    assert!(std::fs::metadata(&small).unwrap().blocks() * 512 >= 8 << 20);
    drop(mnt);
}
