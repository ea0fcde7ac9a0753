//! The block size of a `MinfsNvm` (issue 13): 4096 by default (the physical sector size when
//! larger), the one recorded in a Cannyls header when the file holds a storage, refusals naming
//! the values. In memory, over `FaultDevice`s of several geometries.

use std::sync::Arc;

use cannyls::block::BlockSize;
use cannyls::lump::{LumpData, LumpId};
use cannyls::nvm::NonVolatileMemory;
use cannyls::storage::StorageBuilder;
use cannyls_adapter::{Error, MinfsNvm, DEFAULT_BLOCK_SIZE};
use minfs::device::fault::FaultDevice;
use minfs::{AlignedBuf, Filesystem, FormatOptions};

const MIB: u64 = 1 << 20;

fn filesystem(logical: u32, physical: u32) -> Filesystem {
    let dev = Arc::new(FaultDevice::new(16 * MIB, logical, physical));
    Filesystem::format(dev, "mem", &FormatOptions::default()).expect("format")
}

fn bs(n: u16) -> BlockSize {
    BlockSize::new(n).unwrap()
}

#[test]
fn the_default_is_4096_or_the_larger_physical_sector() {
    assert_eq!(DEFAULT_BLOCK_SIZE, 4096);
    for (logical, physical, want) in [
        (512, 512, 4096),
        (512, 4096, 4096),
        (4096, 4096, 4096),
        (512, 8192, 8192),
        (4096, 16384, 16384),
    ] {
        let fs = filesystem(logical, physical);
        let nvm = MinfsNvm::create_in(&fs, "s", 4 * MIB + 512).unwrap();
        assert_eq!(nvm.block_size().as_u16(), want, "{logical}/{physical}");
        assert_eq!(nvm.capacity(), 4 * MIB, "rounded down to the block size");
        // A storage made with it records it, and reopens with it.
        let storage = nvm.storage_builder().create(nvm).unwrap();
        assert_eq!(storage.header().block_size.as_u16(), want);
        drop(storage);
        let nvm = MinfsNvm::from_filesystem(&fs, "s").unwrap();
        assert_eq!(nvm.block_size().as_u16(), want);
        StorageBuilder::new().open(nvm).unwrap();
    }
}

#[test]
fn a_device_without_a_usable_default_is_refused_naming_the_values() {
    // A 64 KiB physical sector: larger than Cannyls' largest block size (65024).
    let fs = filesystem(512, 65536);
    let e = MinfsNvm::create_in(&fs, "s", 4 * MIB).unwrap_err();
    match &e {
        Error::NoDefaultBlockSize {
            logical, physical, ..
        } => assert_eq!((*logical, *physical), (512, 65536)),
        other => panic!("expected NoDefaultBlockSize, got {other:?}"),
    }
    let msg = e.to_string();
    for part in ["65536", "512-byte logical", "with_block_size", "\"s\""] {
        assert!(msg.contains(part), "{msg}");
    }
    assert_eq!(e.cannyls_kind(), cannyls::ErrorKind::InvalidInput);
    // with_block_size still works there: from the default-less file, choose one.
    let file = fs.open_file("s").unwrap();
    assert!(MinfsNvm::with_default_block_size(file).is_err());
}

/// A storage made at 512 (the old default, or `with_block_size(512)`) opens through
/// `MinfsNvm::from_filesystem` with its recorded 512, lumps intact; a fresh file of the same
/// blocks made by `create_in` begins with zeros and gets the default.
#[test]
fn storages_made_at_512_still_open() {
    let fs = filesystem(512, 4096);
    let nvm = MinfsNvm::create_in(&fs, "old", 4 * MIB)
        .unwrap()
        .with_block_size(bs(512))
        .unwrap();
    let mut storage = nvm.storage_builder().create(nvm).unwrap();
    assert_eq!(storage.header().block_size.as_u16(), 512);
    let data = LumpData::new(b"made at 512".to_vec()).unwrap();
    storage.put(&LumpId::new(7), &data).unwrap();
    storage.journal_sync().unwrap();
    drop(storage);

    let nvm = MinfsNvm::from_filesystem(&fs, "old").unwrap();
    assert_eq!(nvm.block_size().as_u16(), 512, "the recorded block size");
    let mut storage = StorageBuilder::new().open(nvm).unwrap();
    assert_eq!(
        storage.get(&LumpId::new(7)).unwrap().unwrap().as_bytes(),
        b"made at 512"
    );
    drop(storage);

    // The same blocks, freed and taken by a new file: minfs zeroed its first block, so the
    // old header is gone and the new file gets the default.
    let old_start = fs.stat("old").unwrap().extents[0].offset;
    fs.remove("old").unwrap();
    let nvm = MinfsNvm::create_in(&fs, "new", 4 * MIB).unwrap();
    assert_eq!(fs.stat("new").unwrap().extents[0].offset, old_start);
    let mut head = AlignedBuf::zeroed(512, 512);
    nvm.file_handle().read_at(&mut head, 0).unwrap();
    assert_eq!(
        &head[..4],
        [0; 4],
        "the new file begins with the old header"
    );
    assert_eq!(nvm.block_size().as_u16(), 4096);
}

/// A file whose recorded block size is not a multiple of the device's logical sector (a
/// 512-block storage copied onto a 4Kn disk) is refused, naming both.
#[test]
fn a_recorded_block_size_the_device_cannot_do_is_refused() {
    let fs = filesystem(512, 512);
    let nvm = MinfsNvm::create_in(&fs, "s", 4 * MIB)
        .unwrap()
        .with_block_size(bs(512))
        .unwrap();
    let file = nvm.file_handle().clone();
    drop(nvm.storage_builder().create(nvm).unwrap());
    let mut header = AlignedBuf::zeroed(4096, 4096);
    file.read_at(&mut header, 0).unwrap();

    let fs4k = filesystem(4096, 4096);
    fs4k.create("s", 4 * MIB).unwrap();
    fs4k.open_file("s").unwrap().write_at(&header, 0).unwrap();
    let e = MinfsNvm::from_filesystem(&fs4k, "s").unwrap_err();
    match &e {
        Error::InvalidBlockSize {
            block_size,
            sector_size,
            ..
        } => assert_eq!((*block_size, *sector_size), (512, 4096)),
        other => panic!("expected InvalidBlockSize, got {other:?}"),
    }
    assert!(e.to_string().contains("block size 512"), "{e}");
}
