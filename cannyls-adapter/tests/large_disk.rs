//! A Cannyls storage on minfs on a 15 TiB loop device over a sparse image (root only; skipped
//! with a printed reason otherwise, failed with `MINFS_REQUIRE_LOOP=1`): put, get, reopen, with
//! the storage's file near the end of the device, past 14 TiB.

mod common;

use cannyls::block::BlockSize;
use common::*;
use minfs::{Filesystem, FormatOptions, OpenMode};
use testutil::LoopDevice;

const TIB: u64 = 1 << 40;

#[test]
fn cannyls_on_a_15_tib_loop_device() {
    testutil::require_loop!();
    let dev = LoopDevice::new(15 * TIB, 512).expect("loop device");
    let target = dev.path();
    minfs::mkfs::mkfs(target, &FormatOptions::default(), false).expect("mkfs");
    {
        let fs = Filesystem::open(target, OpenMode::ReadWrite).unwrap();
        fs.create("filler", 14 * TIB).unwrap();
    }
    let bs = storage_scenario(target, "lusf", Some(BlockSize::new(4096).unwrap()), false);
    assert_eq!(bs.as_u16(), 4096);
    let fs = Filesystem::open(target, OpenMode::ReadOnly).unwrap();
    let lusf = fs.stat("lusf").unwrap();
    assert!(
        lusf.extents[0].offset > 14 * TIB,
        "the storage is not past 14 TiB: {lusf:?}"
    );
    drop(fs);
    assert_fsck_clean(target);
}
