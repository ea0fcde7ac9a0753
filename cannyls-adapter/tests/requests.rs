//! `MinfsNvm` as a `NonVolatileMemory`: positions, views, and refusals of misaligned or
//! out-of-range requests (InvalidInput, nothing read or written, no panic).

mod common;

use std::io::{self, Read, Seek, SeekFrom, Write};

use cannyls::block::BlockSize;
use cannyls::lump::LumpId;
use cannyls::nvm::NonVolatileMemory;
use cannyls::storage::StorageBuilder;
use cannyls::ErrorKind;
use cannyls_adapter::{Error, MinfsNvm};
use common::*;
use minfs::{AlignedBuf, Filesystem, OpenMode};

/// The device sector of images here (the host's O_DIRECT alignment); tests assume 512.
const SECTOR: usize = 512;

fn filled(len: usize, byte: u8) -> AlignedBuf {
    let mut b = AlignedBuf::zeroed(len, 4096);
    b.fill(byte);
    b
}

fn assert_invalid<T: std::fmt::Debug>(r: io::Result<T>) {
    match r {
        Err(e) => {
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{e:?}");
            // The io::Error wraps the Cannyls error itself (with its trace), which Cannyls
            // takes back out when it converts the io::Error.
            let inner = e.get_ref().and_then(|i| i.downcast_ref::<cannyls::Error>());
            assert_eq!(inner.map(|c| *c.kind()), Some(ErrorKind::InvalidInput));
            assert_eq!(*cannyls::Error::from(e).kind(), ErrorKind::InvalidInput);
        }
        Ok(v) => panic!("expected InvalidInput, got Ok({v:?})"),
    }
}

/// An image with one 64 KiB file; the memory over it.
fn setup() -> (Image, MinfsNvm) {
    let img = image(8 * MIB);
    let nvm = MinfsNvm::create(&img.path, "f", 64 << 10).unwrap();
    if nvm.sector_size() as usize != SECTOR {
        eprintln!("note: image sector size is {}", nvm.sector_size());
    }
    (img, nvm)
}

#[test]
fn positions_reads_and_writes() {
    let (_img, mut nvm) = setup();
    let bs = nvm.block_size().as_u16() as usize;
    let cap = nvm.capacity();
    assert_eq!(cap, 64 << 10);
    assert_eq!(nvm.position(), 0);
    let mut buf = AlignedBuf::zeroed(2 * bs, 4096);
    // A fresh file reads as zeroes (preallocated image).
    nvm.read_exact(&mut buf).unwrap();
    assert!(buf.iter().all(|&b| b == 0));
    assert_eq!(nvm.position(), 2 * bs as u64);
    nvm.write_all(&filled(bs, 0xAB)).unwrap();
    assert_eq!(nvm.position(), 3 * bs as u64);
    assert_eq!(
        nvm.seek(SeekFrom::Current(-(bs as i64))).unwrap(),
        2 * bs as u64
    );
    nvm.read_exact(&mut buf[..bs]).unwrap();
    assert!(buf[..bs].iter().all(|&b| b == 0xAB));
    // Durable through the minfs file itself.
    nvm.sync().unwrap();
    let mut raw = AlignedBuf::zeroed(bs, 4096);
    nvm.file_handle().read_at(&mut raw, 2 * bs as u64).unwrap();
    assert!(raw.iter().all(|&b| b == 0xAB));
    // Write::flush is a no-op (nothing is buffered).
    nvm.flush().unwrap();
    // Empty requests do nothing.
    assert_eq!(nvm.read(&mut []).unwrap(), 0);
    assert_eq!(nvm.write(&[]).unwrap(), 0);
    // At the capacity: a read returns 0 (end of file), like FileNvm.
    assert_eq!(nvm.seek(SeekFrom::End(0)).unwrap(), cap);
    assert_eq!(nvm.read(&mut buf).unwrap(), 0);
    // A read crossing the capacity is cut short there.
    nvm.seek(SeekFrom::End(-(bs as i64))).unwrap();
    assert_eq!(nvm.read(&mut buf).unwrap(), bs);
    assert_eq!(nvm.position(), cap);
}

#[test]
fn misaligned_requests_are_invalid_input() {
    let (_img, mut nvm) = setup();
    let bs = nvm.block_size().as_u16() as usize;
    let mut buf = AlignedBuf::zeroed(4 * bs, 4096);
    nvm.seek(SeekFrom::Start(bs as u64)).unwrap();
    // Length not a multiple of the block size.
    assert_invalid(nvm.read(&mut buf[..100]));
    assert_invalid(nvm.write(&filled(2 * bs, 1)[..bs + 1]));
    assert_invalid(nvm.read(&mut buf[..bs + 1]));
    // Buffer address not aligned to the sector.
    assert_invalid(nvm.read(&mut buf[1..1 + bs]));
    assert_invalid(nvm.write(&filled(2 * bs, 2)[1..1 + bs]));
    // Seek to a position inside a block.
    assert_invalid(nvm.seek(SeekFrom::Start(100)));
    assert_invalid(nvm.seek(SeekFrom::Current(1)));
    assert_invalid(nvm.seek(SeekFrom::End(-1)));
    // Nothing moved and nothing was written.
    assert_eq!(nvm.position(), bs as u64);
    nvm.read_exact(&mut buf[..bs]).unwrap();
    assert!(buf[..bs].iter().all(|&b| b == 0));
    // read_exact/write_all keep the kind.
    nvm.seek(SeekFrom::Start(0)).unwrap();
    assert_invalid(nvm.read_exact(&mut buf[..10]));
    assert_invalid(nvm.write_all(&[7u8; 10]));
}

#[test]
fn out_of_range_requests_are_invalid_input() {
    let (_img, mut nvm) = setup();
    let bs = nvm.block_size().as_u16() as i64;
    let cap = nvm.capacity();
    // Seeks past the capacity, before the start, or overflowing: refused, no panic.
    assert_invalid(nvm.seek(SeekFrom::Start(cap + bs as u64)));
    assert_invalid(nvm.seek(SeekFrom::Start(u64::MAX)));
    assert_invalid(nvm.seek(SeekFrom::End(bs)));
    assert_invalid(nvm.seek(SeekFrom::End(i64::MAX)));
    assert_invalid(nvm.seek(SeekFrom::End(i64::MIN)));
    assert_invalid(nvm.seek(SeekFrom::Current(-bs)));
    assert_invalid(nvm.seek(SeekFrom::Current(i64::MAX)));
    assert_invalid(nvm.seek(SeekFrom::Current(i64::MIN)));
    assert_eq!(nvm.position(), 0);
    // The cursor stays in range, so these come through NonVolatileMemory's helper too.
    assert!(nvm.convert_to_offset(SeekFrom::End(bs)).is_err());
    // A write that does not fit is refused whole: nothing is written.
    nvm.seek(SeekFrom::End(-bs)).unwrap();
    assert_invalid(nvm.write(&filled(2 * bs as usize, 9)));
    assert_invalid(nvm.write_all(&filled(2 * bs as usize, 9)));
    assert_eq!(nvm.position(), cap - bs as u64);
    let mut buf = AlignedBuf::zeroed(bs as usize, 4096);
    nvm.read_exact(&mut buf).unwrap();
    assert!(buf.iter().all(|&b| b == 0), "a refused write left data");
    // At the capacity a non-empty write is refused; read_exact fails with UnexpectedEof.
    assert_invalid(nvm.write(&filled(bs as usize, 9)));
    assert_eq!(
        nvm.read_exact(&mut buf).unwrap_err().kind(),
        io::ErrorKind::UnexpectedEof
    );
}

#[test]
fn split_gives_two_views_of_one_file() {
    let (_img, nvm) = setup();
    let bs = nvm.block_size().as_u16() as u64;
    let cap = nvm.capacity();
    let file = nvm.file_handle().clone();
    let (mut left, mut right) = nvm.split(4 * bs).unwrap();
    assert_eq!((left.capacity(), right.capacity()), (4 * bs, cap - 4 * bs));
    assert_eq!((left.position(), right.position()), (0, 0));
    assert_eq!((left.view_start(), right.view_start()), (0, 4 * bs));
    left.seek(SeekFrom::Start(3 * bs)).unwrap();
    left.write_all(&filled(bs as usize, 0x11)).unwrap();
    right.write_all(&filled(bs as usize, 0x22)).unwrap();
    // Left cannot reach into right.
    assert_eq!(
        left.read(&mut AlignedBuf::zeroed(bs as usize, 4096))
            .unwrap(),
        0
    );
    assert_invalid(left.write(&filled(bs as usize, 0x33)));
    let mut raw = AlignedBuf::zeroed(2 * bs as usize, 4096);
    file.read_at(&mut raw, 3 * bs).unwrap();
    assert!(raw[..bs as usize].iter().all(|&b| b == 0x11));
    assert!(raw[bs as usize..].iter().all(|&b| b == 0x22));
    // Views split further, relative to their own start.
    let (rl, mut rr) = right.split(bs).unwrap();
    assert_eq!(rl.capacity(), bs);
    assert_eq!(rr.view_start(), 5 * bs);
    rr.sync().unwrap();
    assert_eq!(rr.seek(SeekFrom::End(0)).unwrap(), cap - 5 * bs);
    // Splits at the ends are fine; misaligned or past the end are InvalidInput.
    let (a, b) = left.split(0).unwrap();
    assert_eq!((a.capacity(), b.capacity()), (0, 4 * bs));
    let (c, d) = b.split(4 * bs).unwrap();
    assert_eq!((c.capacity(), d.capacity()), (4 * bs, 0));
    for pos in [1, bs + 1, cap + bs, u64::MAX] {
        let nvm = MinfsNvm::from_handle(file.clone()).unwrap();
        let e = nvm.split(pos).unwrap_err();
        assert_eq!(*e.kind(), ErrorKind::InvalidInput, "split at {pos}");
    }
    let _ = rl;
}

#[test]
fn block_size_choice() {
    let img = image(16 * MIB);
    let fs = Filesystem::open(&img.path, OpenMode::ReadWrite).unwrap();
    // A file whose size is not a multiple of 4096: the capacity rounds down to the default
    // block size (4096, or the physical sector when larger).
    let nvm = MinfsNvm::create_in(&fs, "odd", 10 * 1024 + 512).unwrap();
    let sector = nvm.sector_size() as u64;
    let default = 4096u64.max(u64::from(fs.device().physical_sector_size()));
    assert_eq!(nvm.block_size().as_u16() as u64, default);
    assert_eq!(nvm.capacity(), (10 * 1024 + 512) / default * default);
    let nvm = nvm.with_block_size(BlockSize::new(512).unwrap()).unwrap();
    assert_eq!(nvm.block_size().as_u16(), 512);
    assert_eq!(nvm.capacity(), 10 * 1024 + 512);
    // A view that does not start on the new block size cannot take it.
    let nvm = MinfsNvm::from_filesystem(&fs, "odd")
        .unwrap()
        .with_block_size(BlockSize::new(sector as u16).unwrap())
        .unwrap();
    let (_, right) = nvm.split(sector).unwrap();
    match right.with_block_size(BlockSize::new(4096).unwrap()) {
        Err(e @ Error::UnalignedView { .. }) => {
            assert_eq!(e.cannyls_kind(), ErrorKind::InvalidInput);
        }
        other => panic!("expected UnalignedView, got {other:?}"),
    }
    // A storage's block size must be a multiple of its memory's: StorageBuilder::new() (512)
    // refuses the default 4096-byte memory; storage_builder() matches it.
    // The refused create leaves no file behind.
    let nvm = MinfsNvm::create_in(&fs, "s", 4 * MIB).unwrap();
    let e = StorageBuilder::new().create(nvm).unwrap_err();
    assert_eq!(*e.kind(), ErrorKind::InvalidInput);
    assert!(matches!(
        fs.stat("s"),
        Err(minfs::Error::FileNotFound { .. })
    ));
    let nvm = MinfsNvm::create_in(&fs, "s", 4 * MIB).unwrap();
    assert_eq!(nvm.block_size().as_u16() as u64, default, "no storage yet");
    let storage = nvm.storage_builder().create(nvm).unwrap();
    assert_eq!(storage.header().block_size.as_u16() as u64, default);
    // A larger storage block size on 512-byte memory is fine too.
    let nvm = MinfsNvm::create_in(&fs, "t", 4 * MIB)
        .unwrap()
        .with_block_size(BlockSize::new(512).unwrap())
        .unwrap();
    let storage = StorageBuilder::new()
        .block_size(BlockSize::new(4096).unwrap())
        .create(nvm)
        .unwrap();
    assert_eq!(storage.header().block_size.as_u16(), 4096);
}

#[test]
fn constructor_errors() {
    let img = image(8 * MIB);
    // No such file.
    let e = MinfsNvm::open(&img.path, "missing").unwrap_err();
    assert!(matches!(e, Error::Minfs(minfs::Error::FileNotFound { .. })));
    assert!(e.to_string().contains("missing"), "{e}");
    // Create an existing file.
    drop(
        MinfsNvm::create(&img.path, "f", 1 << 20)
            .unwrap()
            .create_storage()
            .unwrap(),
    );
    let e = MinfsNvm::create(&img.path, "f", 1 << 20).unwrap_err();
    assert!(matches!(e, Error::Minfs(minfs::Error::FileExists { .. })));
    // No space.
    let e = MinfsNvm::create(&img.path, "huge", 1 << 40).unwrap_err();
    assert!(matches!(e, Error::Minfs(minfs::Error::NoSpace { .. })));
    // Not a minfs target.
    let plain = img.dir.path().join("plain");
    std::fs::write(&plain, vec![0u8; 4 << 20]).unwrap();
    let e = MinfsNvm::open(&plain, "f").unwrap_err();
    assert!(matches!(e, Error::Minfs(minfs::Error::NotMinfs { .. })));
    // Locked while open (also within this process); Other for Cannyls.
    let nvm = MinfsNvm::open(&img.path, "f").unwrap();
    let e = MinfsNvm::open(&img.path, "f").unwrap_err();
    assert!(matches!(e, Error::Minfs(minfs::Error::Locked { .. })));
    assert_eq!(*cannyls::Error::from(e).kind(), ErrorKind::Other);
    drop(nvm);
    MinfsNvm::open(&img.path, "f").unwrap();
    assert_fsck_clean(&img.path);
}

/// `StorageBuilder::new().create(MinfsNvm::create(..)?)`, what a `FileNvm` user writes, is
/// refused (Cannyls' 512-byte storage block does not suit the memory's 4096) and leaves no
/// minfs file behind: the same create then works with `create_storage`, and the file is kept
/// once written.
#[test]
fn failed_storage_create_leaves_no_orphan_file() {
    let img = image(8 * MIB);
    let nvm = MinfsNvm::create(&img.path, "lusf", 4 * MIB).unwrap();
    let e = StorageBuilder::new().create(nvm).unwrap_err();
    assert_eq!(*e.kind(), ErrorKind::InvalidInput);
    let fs = Filesystem::open(&img.path, OpenMode::ReadOnly).unwrap();
    assert!(fs.list().is_empty(), "left behind: {:?}", fs.list());
    drop(fs);
    // A memory dropped unused (and its views) removes its file too.
    let nvm = MinfsNvm::create(&img.path, "lusf", 4 * MIB).unwrap();
    let (left, right) = nvm.split(0).unwrap();
    drop(left);
    drop(right);
    let fs = Filesystem::open(&img.path, OpenMode::ReadOnly).unwrap();
    assert!(fs.list().is_empty(), "left behind: {:?}", fs.list());
    drop(fs);

    let nvm = MinfsNvm::create(&img.path, "lusf", 4 * MIB).unwrap();
    let mut storage = nvm.create_storage().unwrap();
    let data = storage.allocate_lump_data_with_bytes(b"kept").unwrap();
    storage.put(&LumpId::new(1), &data).unwrap();
    storage.journal_sync().unwrap();
    drop(storage);
    let mut storage = StorageBuilder::new()
        .open(MinfsNvm::open(&img.path, "lusf").unwrap())
        .unwrap();
    assert_eq!(
        storage.get(&LumpId::new(1)).unwrap().unwrap().as_bytes(),
        b"kept"
    );
    drop(storage);
    assert_fsck_clean(&img.path);
}

/// `MinfsNvm::open` of a file with no Cannyls storage in it says so and what to do, instead of
/// Cannyls' assertion on the magic number; `from_filesystem` still opens it to create one.
#[test]
fn file_without_storage_is_named_as_such() {
    let img = image(8 * MIB);
    let fs = Filesystem::open(&img.path, OpenMode::ReadWrite).unwrap();
    fs.create("empty", 4 * MIB).unwrap();
    drop(fs);
    let e = MinfsNvm::open(&img.path, "empty").unwrap_err();
    assert!(matches!(e, Error::NoStorage { .. }), "{e:?}");
    let msg = e.to_string();
    for want in [
        "file \"empty\" holds no Cannyls storage",
        "minfs rm",
        "create_storage",
    ] {
        assert!(msg.contains(want), "{msg:?} lacks {want:?}");
    }
    assert_eq!(*cannyls::Error::from(e).kind(), ErrorKind::InvalidInput);
    let fs = Filesystem::open(&img.path, OpenMode::ReadWrite).unwrap();
    let storage = MinfsNvm::from_filesystem(&fs, "empty")
        .unwrap()
        .create_storage()
        .unwrap();
    drop(storage);
    drop(fs);
    MinfsNvm::open(&img.path, "empty").unwrap();
}

/// A capacity smaller than one block is refused, naming both sizes, and makes no file; one
/// that is not a multiple of the block size is rounded down, as the docs say (`FileNvm`, at
/// Cannyls' 512-byte blocks, gives what was asked).
#[test]
fn capacity_smaller_than_a_block_is_refused_and_others_round_down() {
    let img = image(8 * MIB);
    let fs = Filesystem::open(&img.path, OpenMode::ReadWrite).unwrap();
    for small in [0u64, 1, 1024, 4095] {
        let e = MinfsNvm::create_in(&fs, "tiny", small).unwrap_err();
        match &e {
            Error::CapacityTooSmall {
                capacity,
                block_size,
                ..
            } => assert_eq!((*capacity, *block_size), (small, 4096)),
            other => panic!("create({small}): expected CapacityTooSmall, got {other:?}"),
        }
        let msg = e.to_string();
        assert!(
            msg.contains(&format!("{small} bytes")) && msg.contains("4096-byte block"),
            "{msg}"
        );
        assert_eq!(*cannyls::Error::from(e).kind(), ErrorKind::InvalidInput);
        assert!(fs.stat("tiny").is_err(), "no file made for {small}");
    }
    let nvm = MinfsNvm::create_in(&fs, "odd", 10240).unwrap();
    assert_eq!(nvm.capacity(), 8192, "rounded down to the 4096-byte block");
    assert_eq!(
        fs.stat("odd").unwrap().size,
        10240,
        "the file keeps what was asked"
    );
    drop(nvm);
    // The docs say so where the rounding happens.
    let src = include_str!("../src/lib.rs");
    assert!(src.contains("`create(.., 10240)` gives a memory of 8192"));
}
