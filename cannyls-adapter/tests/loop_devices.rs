//! The same scenarios on minfs made on loop devices with 512- and 4096-byte logical sectors
//! (root only; skipped with a printed reason otherwise, failed with `MINFS_REQUIRE_LOOP=1`).

mod common;

use std::io::{Read, Seek, SeekFrom};

use cannyls::block::BlockSize;
use cannyls::nvm::NonVolatileMemory;
use cannyls::storage::StorageBuilder;
use cannyls_adapter::{Error, MinfsNvm};
use common::*;
use minfs::{AlignedBuf, FormatOptions};
use testutil::LoopDevice;

const DEVICE_SIZE: u64 = 384 * MIB;

fn loop_with_minfs(sector: u32) -> LoopDevice {
    let dev = LoopDevice::new(DEVICE_SIZE, sector).expect("loop device");
    let out = minfs::mkfs::mkfs(dev.path(), &FormatOptions::default(), false).expect("mkfs");
    assert_eq!(out.logical_sector_size, sector);
    dev
}

fn run_all(dev: &LoopDevice, sector: u32) {
    let target = dev.path();
    // Default block size: 4096 (loop devices report a physical sector no larger).
    let bs = storage_scenario(target, "default", None, true);
    assert_eq!(bs.as_u16(), 4096);
    // The logical sector size chosen explicitly (Cannyls' own 512 on a 512-byte device).
    let bs = storage_scenario(
        target,
        "bs-sector",
        Some(BlockSize::new(sector as u16).unwrap()),
        true,
    );
    assert_eq!(u32::from(bs.as_u16()), sector);
    device_scenario(target, "device", None, true);
    two_storages_scenario(target, None);
    assert_fsck_clean(target);
}

#[test]
fn loop_512_byte_sectors() {
    testutil::require_loop!();
    let dev = loop_with_minfs(512);
    run_all(&dev, 512);
}

#[test]
fn loop_4096_byte_sectors() {
    testutil::require_loop!();
    let dev = loop_with_minfs(4096);
    run_all(&dev, 4096);
}

#[test]
fn loop_4096_refuses_smaller_block_sizes_and_requests() {
    testutil::require_loop!();
    let dev = LoopDevice::new(64 * MIB, 4096).expect("loop device");
    minfs::mkfs::mkfs(dev.path(), &FormatOptions::default(), false).expect("mkfs");
    let fs = minfs::Filesystem::open(dev.path(), minfs::OpenMode::ReadWrite).unwrap();
    let nvm = MinfsNvm::create_in(&fs, "f", 1 << 20).unwrap();
    assert_eq!(nvm.block_size().as_u16(), 4096);
    assert_eq!(nvm.sector_size(), 4096);
    for size in [512u16, 1024, 2048, 6144] {
        let nvm = MinfsNvm::from_filesystem(&fs, "f").unwrap();
        match nvm.with_block_size(BlockSize::new(size).unwrap()) {
            Err(
                e @ Error::InvalidBlockSize {
                    block_size,
                    sector_size: 4096,
                    ..
                },
            ) => {
                assert_eq!(block_size, u64::from(size));
                assert!(e.to_string().contains("4096-byte logical sector"), "{e}");
                assert_eq!(
                    *cannyls::Error::from(e).kind(),
                    cannyls::ErrorKind::InvalidInput
                );
            }
            other => panic!("block size {size}: expected InvalidBlockSize, got {other:?}"),
        }
    }
    let mut nvm = nvm.with_block_size(BlockSize::new(8192).unwrap()).unwrap();
    assert_eq!(nvm.capacity(), 1 << 20);
    // 512-byte requests are below the block size: InvalidInput, no I/O.
    let mut buf = AlignedBuf::zeroed(8192, 4096);
    let e = nvm.read(&mut buf[..512]).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
    assert_eq!(
        nvm.seek(SeekFrom::Start(4096)).unwrap_err().kind(),
        std::io::ErrorKind::InvalidInput
    );
    assert_eq!(nvm.read(&mut buf).unwrap(), 8192);
    // A storage with the default 512-byte block size cannot sit on 8192-byte memory.
    let e = StorageBuilder::new().create(nvm).unwrap_err();
    assert_eq!(*e.kind(), cannyls::ErrorKind::InvalidInput);
}
