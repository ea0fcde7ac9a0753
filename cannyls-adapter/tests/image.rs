//! Real Cannyls storages on minfs files in an image file (`/var/tmp` unless `MINFS_TEST_DIR`).

mod common;

use cannyls::block::BlockSize;
use common::*;

#[test]
fn storage_roundtrips_lumps_of_every_size_and_survives_reopen() {
    let img = image(256 * MIB);
    let bs = storage_scenario(&img.path, "lusf", None, true);
    // Images report the host filesystem's O_DIRECT alignment (512 on ext4 over a 512-byte disk).
    assert!(bs.as_u16() >= 512);
    assert_fsck_clean(&img.path);
}

#[test]
fn storage_with_block_size_4096() {
    let img = image(256 * MIB);
    let bs = storage_scenario(
        &img.path,
        "lusf4k",
        Some(BlockSize::new(4096).unwrap()),
        true,
    );
    assert_eq!(bs.as_u16(), 4096);
    assert_fsck_clean(&img.path);
}

#[test]
fn device_roundtrips_lumps_and_survives_restart() {
    let img = image(256 * MIB);
    device_scenario(&img.path, "device", None, true);
    assert_fsck_clean(&img.path);
}

#[test]
fn two_storages_in_one_filesystem_side_by_side() {
    let img = image(64 * MIB);
    two_storages_scenario(&img.path, None);
    // And with 4 KiB blocks, in two more files of the same filesystem.
    let fs = minfs::Filesystem::open(&img.path, minfs::OpenMode::ReadWrite).unwrap();
    fs.remove("left").unwrap();
    fs.remove("right").unwrap();
    drop(fs);
    two_storages_scenario(&img.path, Some(BlockSize::new(4096).unwrap()));
    assert_fsck_clean(&img.path);
}
