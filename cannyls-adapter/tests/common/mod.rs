//! Scenarios shared by the image-file and loop-device tests: real Cannyls storages and devices
//! over real minfs filesystems.
#![allow(dead_code)]

use std::ops::Range;
use std::path::{Path, PathBuf};

use cannyls::block::BlockSize;
use cannyls::deadline::Deadline;
use cannyls::device::{Device, DeviceBuilder, DeviceHandle};
use cannyls::lump::{LumpData, LumpId};
use cannyls::nvm::NonVolatileMemory;
use cannyls::storage::{Storage, StorageBuilder};
use cannyls_adapter::MinfsNvm;
use fibers_global::execute;
use minfs::{AlignedBuf, Filesystem, FormatOptions, OpenMode};

pub const MIB: u64 = 1 << 20;

/// A fresh minfs image of `size` bytes in a temporary directory under the scratch directory
/// (`/var/tmp` unless `MINFS_TEST_DIR`); the directory goes when the guard is dropped.
pub struct Image {
    pub dir: tempfile::TempDir,
    pub path: PathBuf,
}

pub fn image(size: u64) -> Image {
    let dir = tempfile::Builder::new()
        .prefix("cannyls-adapter-")
        .tempdir_in(testutil::scratch_dir())
        .expect("tempdir");
    let path = dir.path().join("minfs.img");
    minfs::mkfs::mkfs(
        &path,
        &FormatOptions {
            size: Some(size),
            ..Default::default()
        },
        false,
    )
    .expect("mkfs");
    Image { dir, path }
}

/// Deterministic bytes, different per `seed`.
pub fn pattern(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03;
    let mut out = vec![0u8; len];
    for chunk in out.chunks_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let bytes = x.to_le_bytes();
        chunk.copy_from_slice(&bytes[..chunk.len()]);
    }
    out
}

/// How a lump is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// In the journal (`LumpData::new_embedded`).
    Embedded,
    /// In the data region, from a buffer aligned by the storage (`allocate_lump_data_with_bytes`).
    Aligned,
    /// In the data region, from a plain `Vec` (`LumpData::new`, Cannyls copies it).
    Unaligned,
}

/// The lumps every scenario puts: `(id, kind, size)`.
pub fn lump_set(big: bool) -> Vec<(u128, Kind, usize)> {
    let mut v = vec![
        (1, Kind::Embedded, 1000),
        (2, Kind::Embedded, 0),
        (3, Kind::Aligned, 0),
        (4, Kind::Aligned, 1),
        (5, Kind::Aligned, 511),
        (6, Kind::Aligned, 512),
        (7, Kind::Unaligned, 513),
        (8, Kind::Aligned, 4094),
        (9, Kind::Aligned, 256 << 10),
        (10, Kind::Unaligned, 256 << 10),
        (11, Kind::Aligned, 1 << 20),
    ];
    if big {
        v.push((12, Kind::Aligned, 30 << 20));
    }
    v
}

/// The capacity a storage needs for `lump_set(big)` plus the scenario's extra lumps.
pub fn capacity_for(big: bool) -> u64 {
    if big {
        48 * MIB
    } else {
        8 * MIB
    }
}

fn lump_data(
    kind: Kind,
    bytes: &[u8],
    aligned: impl FnOnce(&[u8]) -> cannyls::Result<LumpData>,
) -> LumpData {
    match kind {
        Kind::Embedded => LumpData::new_embedded(bytes.to_vec()).expect("embedded lump"),
        Kind::Aligned => aligned(bytes).expect("aligned lump"),
        Kind::Unaligned => LumpData::new(bytes.to_vec()).expect("lump"),
    }
}

/// Seed of a lump's content: differs per storage (`salt`) and per version.
fn seed(salt: u64, id: u128, version: u64) -> u64 {
    salt.wrapping_mul(1_000_003) ^ (id as u64).wrapping_mul(7919) ^ version.wrapping_mul(104_729)
}

/// What the storage must hold: id -> (seed, len).
pub type Expected = std::collections::BTreeMap<u128, (u64, usize)>;

fn check_bytes(id: u128, got: &[u8], (seed, len): (u64, usize)) {
    assert_eq!(got.len(), len, "lump {id}: length");
    assert!(
        got == pattern(seed, len).as_slice(),
        "lump {id}: content differs"
    );
}

/// Checks every expected lump and that nothing else is listed.
pub fn verify_storage(storage: &mut Storage<MinfsNvm>, expected: &Expected) {
    let ids: Vec<u128> = storage.list().iter().map(|id| id.as_u128()).collect();
    assert_eq!(
        ids,
        expected.keys().copied().collect::<Vec<_>>(),
        "listed lumps"
    );
    for (&id, &want) in expected {
        let got = storage
            .get(&LumpId::new(id))
            .expect("get")
            .unwrap_or_else(|| panic!("lump {id} missing"));
        check_bytes(id, got.as_bytes(), want);
        let head = storage.head(&LumpId::new(id)).expect("head");
        assert!(
            head.approximate_data_size as usize >= want.1,
            "lump {id}: head"
        );
    }
}

/// Puts, overwrites, deletes (one and a range) and lists on `storage`; returns what it holds.
pub fn exercise_storage(storage: &mut Storage<MinfsNvm>, salt: u64, big: bool) -> Expected {
    let mut expected = Expected::new();
    for (id, kind, len) in lump_set(big) {
        let s = seed(salt, id, 0);
        let bytes = pattern(s, len);
        let data = lump_data(kind, &bytes, |b| storage.allocate_lump_data_with_bytes(b));
        assert!(
            storage.put(&LumpId::new(id), &data).expect("put"),
            "new lump {id}"
        );
        expected.insert(id, (s, len));
        // Read back at once.
        let got = storage
            .get(&LumpId::new(id))
            .expect("get")
            .expect("just put");
        check_bytes(id, got.as_bytes(), (s, len));
    }
    // Overwrite: a data lump with a smaller one, an embedded one with a data lump.
    for (id, len) in [(9u128, 4096usize), (1, 3000)] {
        let s = seed(salt, id, 1);
        let data = storage
            .allocate_lump_data_with_bytes(&pattern(s, len))
            .expect("allocate");
        assert!(!storage.put(&LumpId::new(id), &data).expect("overwrite"));
        expected.insert(id, (s, len));
    }
    // Delete one, twice.
    assert!(storage.delete(&LumpId::new(5)).expect("delete"));
    assert!(!storage.delete(&LumpId::new(5)).expect("delete again"));
    expected.remove(&5);
    assert!(storage.get(&LumpId::new(5)).expect("get").is_none());
    // Delete a range holding embedded and data lumps (100..110, of which 100..105 go).
    for id in 100u128..110 {
        let s = seed(salt, id, 0);
        let len = (id as usize - 100) * 700;
        let kind = if id % 2 == 0 {
            Kind::Embedded
        } else {
            Kind::Aligned
        };
        let bytes = pattern(s, len);
        let data = lump_data(kind, &bytes, |b| storage.allocate_lump_data_with_bytes(b));
        storage.put(&LumpId::new(id), &data).expect("put");
        expected.insert(id, (s, len));
    }
    let deleted = storage
        .delete_range(LumpId::new(100)..LumpId::new(105))
        .expect("delete_range");
    assert_eq!(
        deleted.iter().map(|id| id.as_u128()).collect::<Vec<_>>(),
        (100..105).collect::<Vec<_>>()
    );
    for id in 100..105 {
        expected.remove(&id);
    }
    assert_eq!(
        storage
            .list_range(LumpId::new(100)..LumpId::new(200))
            .iter()
            .map(|id| id.as_u128())
            .collect::<Vec<_>>(),
        (105..110).collect::<Vec<_>>()
    );
    verify_storage(storage, &expected);
    expected
}

/// The whole single-storage scenario on `target`: create a storage in minfs file `file`
/// (block size `block_size`, default 4096 or the physical sector size), exercise it, `journal_sync`, drop, reopen
/// and verify every lump. Returns the storage's block size.
pub fn storage_scenario(
    target: &Path,
    file: &str,
    block_size: Option<BlockSize>,
    big: bool,
) -> BlockSize {
    let mut nvm = MinfsNvm::create(target, file, capacity_for(big)).expect("create nvm");
    let default = cannyls_adapter::DEFAULT_BLOCK_SIZE.max(nvm.file_handle().physical_sector_size());
    if let Some(bs) = block_size {
        nvm = nvm.with_block_size(bs).expect("block size");
    }
    let bs = nvm.block_size();
    assert_eq!(
        u32::from(bs.as_u16()),
        block_size.map_or(default, |b| u32::from(b.as_u16()))
    );
    assert_eq!(nvm.capacity(), capacity_for(big));
    let mut storage = nvm.storage_builder().create(nvm).expect("create storage");
    assert_eq!(storage.header().block_size, bs);
    let expected = exercise_storage(&mut storage, 1, big);
    storage.journal_sync().expect("journal_sync");
    drop(storage);

    let nvm = MinfsNvm::open(target, file).expect("open nvm");
    let nvm = match block_size {
        Some(b) => nvm.with_block_size(b).expect("block size"),
        None => nvm,
    };
    let mut storage = StorageBuilder::new().open(nvm).expect("open storage");
    assert_eq!(storage.header().block_size, bs);
    verify_storage(&mut storage, &expected);
    // After a reopen the storage still takes writes (and the journal replays them again).
    let s = seed(1, 500, 0);
    let data = storage
        .allocate_lump_data_with_bytes(&pattern(s, 70_000))
        .expect("allocate");
    storage.put(&LumpId::new(500), &data).expect("put");
    storage.journal_sync().expect("journal_sync");
    drop(storage);
    let mut expected = expected;
    expected.insert(500, (s, 70_000));
    let mut storage = StorageBuilder::new()
        .open(MinfsNvm::open(target, file).expect("open nvm"))
        .expect("open storage");
    verify_storage(&mut storage, &expected);
    bs
}

fn wait_stopped(device: Device) {
    device.stop(Deadline::Immediate);
    execute(device).expect("device stopped cleanly");
}

fn device_verify(d: &DeviceHandle, expected: &Expected) {
    let ids: Vec<u128> = execute(d.request().list())
        .expect("list")
        .iter()
        .map(|id| id.as_u128())
        .collect();
    assert_eq!(ids, expected.keys().copied().collect::<Vec<_>>());
    for (&id, &want) in expected {
        let got = execute(d.request().get(LumpId::new(id)))
            .expect("get")
            .unwrap_or_else(|| panic!("lump {id} missing"));
        check_bytes(id, got.as_bytes(), want);
    }
}

/// The scenario through Cannyls' asynchronous `Device` (as FrugalOS drives it): the storage is
/// made on the device thread, requests go through futures; stop, reopen, verify.
pub fn device_scenario(target: &Path, file: &str, block_size: Option<BlockSize>, big: bool) {
    let t = target.to_path_buf();
    let f = file.to_string();
    let device = DeviceBuilder::new().spawn(move || {
        let mut nvm = MinfsNvm::create(&t, &f, capacity_for(big))?;
        if let Some(bs) = block_size {
            nvm = nvm.with_block_size(bs)?;
        }
        nvm.storage_builder().create(nvm)
    });
    let d = device.handle();
    execute(d.request().wait_for_running().list()).expect("device running");
    let salt = 2;
    let mut expected = Expected::new();
    for (id, kind, len) in lump_set(big) {
        let s = seed(salt, id, 0);
        let bytes = pattern(s, len);
        let data = lump_data(kind, &bytes, |b| d.allocate_lump_data_with_bytes(b));
        assert!(execute(d.request().put(LumpId::new(id), data)).expect("put"));
        expected.insert(id, (s, len));
    }
    assert!(execute(d.request().delete(LumpId::new(4))).expect("delete"));
    expected.remove(&4);
    let range: Range<LumpId> = LumpId::new(6)..LumpId::new(8);
    let deleted = execute(d.request().delete_range(range)).expect("delete_range");
    assert_eq!(deleted, vec![LumpId::new(6), LumpId::new(7)]);
    expected.remove(&6);
    expected.remove(&7);
    // The last request forces a journal sync: everything before it is durable.
    let s = seed(salt, 300, 0);
    let data = d
        .allocate_lump_data_with_bytes(&pattern(s, 12_345))
        .expect("allocate");
    assert!(execute(d.request().journal_sync().put(LumpId::new(300), data)).expect("put"));
    expected.insert(300, (s, 12_345));
    device_verify(&d, &expected);
    wait_stopped(device);

    let t = target.to_path_buf();
    let f = file.to_string();
    let device = DeviceBuilder::new().spawn(move || {
        let nvm = MinfsNvm::open(&t, &f)?;
        let nvm = match block_size {
            Some(bs) => nvm.with_block_size(bs)?,
            None => nvm,
        };
        StorageBuilder::new().open(nvm)
    });
    let d = device.handle();
    execute(d.request().wait_for_running().list()).expect("device running");
    device_verify(&d, &expected);
    wait_stopped(device);
}

/// Two storages in two minfs files of one filesystem, opened once, used side by side from two
/// threads; then both reopened from a fresh open of the filesystem.
pub fn two_storages_scenario(target: &Path, block_size: Option<BlockSize>) {
    let fs = Filesystem::open(target, OpenMode::ReadWrite).expect("open fs");
    // The target is locked: a second read-write open, even in this process, is refused (by
    // flock on an image, by O_EXCL first on a block device).
    match MinfsNvm::open(target, "left") {
        Err(cannyls_adapter::Error::Minfs(
            minfs::Error::Locked { .. } | minfs::Error::Busy { .. },
        )) => {}
        other => panic!("expected Locked or Busy, got {other:?}"),
    }
    let make = |name: &str| {
        let nvm = MinfsNvm::create_in(&fs, name, capacity_for(false)).expect("create nvm");
        let nvm = match block_size {
            Some(bs) => nvm.with_block_size(bs).expect("block size"),
            None => nvm,
        };
        nvm.storage_builder().create(nvm).expect("create storage")
    };
    let storages = vec![(make("left"), 10u64), (make("right"), 20u64)];
    let expected: Vec<Expected> = std::thread::scope(|s| {
        let workers: Vec<_> = storages
            .into_iter()
            .map(|(mut storage, salt)| {
                s.spawn(move || {
                    let e = exercise_storage(&mut storage, salt, false);
                    storage.journal_sync().expect("journal_sync");
                    e
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("worker"))
            .collect()
    });
    // Same ids, different content per storage.
    assert_eq!(
        expected[0].keys().collect::<Vec<_>>(),
        expected[1].keys().collect::<Vec<_>>()
    );
    assert_ne!(expected[0], expected[1]);
    drop(fs);

    let fs = Filesystem::open(target, OpenMode::ReadWrite).expect("reopen fs");
    for (name, want) in ["left", "right"].into_iter().zip(&expected) {
        let nvm = MinfsNvm::from_filesystem(&fs, name).expect("open nvm");
        let nvm = match block_size {
            Some(bs) => nvm.with_block_size(bs).expect("block size"),
            None => nvm,
        };
        let mut storage = StorageBuilder::new().open(nvm).expect("open storage");
        verify_storage(&mut storage, want);
    }
}

/// fsck finds nothing wrong.
pub fn assert_fsck_clean(target: &Path) {
    let report = minfs::fsck::check(target).expect("fsck");
    assert!(report.is_clean(), "fsck: {:?}", report.problems);
}

/// The minfs file the recovery tests use.
pub const FILE: &str = "lusf";

/// Writes `bytes` at `offset` of `file` on `image` (read-modify-write of whole sectors).
pub fn poke(image: &std::path::Path, offset: u64, bytes: &[u8]) {
    let fs = Filesystem::open(image, OpenMode::ReadWrite).unwrap();
    let f = fs.open_file(FILE).unwrap();
    let sector = u64::from(f.sector_size());
    let start = offset / sector * sector;
    let len = (offset + bytes.len() as u64).div_ceil(sector) * sector - start;
    let mut buf = AlignedBuf::zeroed(len as usize, sector as usize);
    f.read_at(&mut buf, start).unwrap();
    let at = (offset - start) as usize;
    buf[at..at + bytes.len()].copy_from_slice(bytes);
    f.write_at(&buf, start).unwrap();
    f.flush().unwrap();
}

/// A storage at `block_size` holding lump 1 (synced); returns the image and the ring tail.
pub fn storage_with_one_lump(block_size: u16) -> (Image, u64) {
    let img = image(16 << 20);
    let nvm = MinfsNvm::create(&img.path, FILE, 8 << 20)
        .unwrap()
        .with_block_size(BlockSize::new(block_size).unwrap())
        .unwrap();
    let mut storage = nvm.storage_builder().create(nvm).unwrap();
    let data = LumpData::new_embedded(b"acknowledged".to_vec()).unwrap();
    storage.put(&LumpId::new(1), &data).unwrap();
    storage.journal_sync().unwrap();
    let tail = storage.journal_snapshot().unwrap().tail;
    drop(storage);
    (img, tail)
}

/// An unacknowledged append torn by a crash: a record whose checksum does not match.
pub const TORN_PUT: [u8; 8] = [0xde, 0xad, 0xbe, 0xef, 3, 0, 0, 7];
