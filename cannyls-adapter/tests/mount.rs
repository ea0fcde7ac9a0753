//! `minfs-cannyls mount` (`cannyls_adapter::mount`): a Cannyls storage reached by path through
//! the mount — Cannyls' own `FileNvm`, as FrugalOS's file devices use it — gets a copy of its
//! header and journal, and opens with every lump intact when a block of its header or journal
//! is unreadable, the block rewritten in place; on a plain `minfs mount` the same storage does
//! not open. The server runs in this process over the fault-injecting device.
//!
//! Needs root and /dev/fuse; elsewhere each test is skipped with the reason printed (or fails
//! under MINFS_REQUIRE_LOOP=1).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cannyls::lump::{LumpData, LumpId};
use cannyls::nvm::FileNvm;
use cannyls::storage::{Storage, StorageBuilder};
use cannyls_adapter::copy;
use cannyls_adapter::mount::CannylsServices;
use cannyls_adapter::recovery::{self, Inspection};
use minfs::device::FaultDevice;
use minfs::fuse::{mounts, MountConfig, Server};
use minfs::{BlockDevice, Filesystem, FormatOptions};

mod common;

const FILE: &str = "dev.lusf";
const LOGICAL: u32 = 512;
const PHYSICAL: u32 = 4096;
const CAPACITY: u64 = 8 << 20;
/// Room for the storage, the copy's 64 MiB distance and the copy.
const DEVICE: u64 = 96 << 20;

macro_rules! require_fuse {
    () => {
        testutil::require_loop!();
        if !Path::new("/dev/fuse").exists() {
            let reason = "/dev/fuse is missing (no FUSE in this kernel, or a container without \
                          the device)";
            if std::env::var_os("MINFS_REQUIRE_LOOP").is_some_and(|v| v == "1") {
                panic!("MINFS_REQUIRE_LOOP=1 but {reason}");
            }
            testutil::print_skip(module_path!(), reason);
            return;
        }
    };
}

/// A scratch directory (removed when dropped) with an empty mount point `mp` in it.
fn scratch(prefix: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in(testutil::scratch_dir())
        .unwrap();
    let mp = dir.path().join("mp");
    std::fs::create_dir(&mp).unwrap();
    (dir, mp)
}

/// Lazily detaches the mount on `0` if it is still mounted when dropped (a test that failed
/// half-way).
struct Unmounted(PathBuf);

impl Drop for Unmounted {
    fn drop(&mut self) {
        testutil::lazy_umount(&self.0);
    }
}

/// A mount served on a thread of this process: [`Mounted::unmount`] unmounts it and joins its
/// server; dropped without that, it is detached lazily.
struct Mounted {
    mp: PathBuf,
    serving: Option<std::thread::JoinHandle<Result<(), minfs::fuse::FuseError>>>,
    _unmounted: Unmounted,
}

impl Mounted {
    fn new(dev: &Arc<FaultDevice>, mp: &Path, services: bool) -> Mounted {
        let fs = Filesystem::open_device(dev.clone() as Arc<dyn BlockDevice>, "fault").unwrap();
        let services =
            services.then(|| Box::new(CannylsServices) as Box<dyn minfs::fuse::service::Services>);
        let server =
            Server::mount_filesystem_with(fs, mp, &MountConfig::default(), services).unwrap();
        Mounted {
            mp: mp.to_path_buf(),
            serving: Some(std::thread::spawn(move || server.run())),
            _unmounted: Unmounted(mp.to_path_buf()),
        }
    }

    fn path(&self) -> PathBuf {
        self.mp.join(FILE)
    }

    fn unmount(mut self) {
        mounts::unmount(&self.mp, false).unwrap();
        let served = self.serving.take().unwrap().join().unwrap();
        served.unwrap();
    }
}

type Expected = BTreeMap<u128, Vec<u8>>;

/// Puts (embedded and in the data region), overwrites and deletes, a journal sync each round.
fn workload(storage: &mut Storage<FileNvm>, rounds: usize) -> Expected {
    let mut want = Expected::new();
    let sizes = [0usize, 1, 300, 4096, 9000, 30_000];
    for r in 0..rounds {
        for j in 0..4u128 {
            let id = (r as u128 * 7 + j * 3) % 30 + 1;
            let len = sizes[(r + j as usize) % sizes.len()];
            let bytes = common::pattern((id as u64) << 20 ^ r as u64, len);
            let data = if j % 2 == 0 && len <= 1000 {
                LumpData::new_embedded(bytes.clone()).unwrap()
            } else {
                storage.allocate_lump_data_with_bytes(&bytes).unwrap()
            };
            storage.put(&LumpId::new(id), &data).unwrap();
            want.insert(id, bytes);
        }
        if r % 3 == 2 {
            let id = (r as u128 * 5) % 30 + 1;
            storage.delete(&LumpId::new(id)).unwrap();
            want.remove(&id);
        }
        storage.journal_sync().unwrap();
    }
    want
}

fn compare(storage: &mut Storage<FileNvm>, want: &Expected, what: &str) -> usize {
    let listed: Vec<u128> = storage.list().into_iter().map(|l| l.as_u128()).collect();
    assert_eq!(listed, want.keys().copied().collect::<Vec<_>>(), "{what}");
    for (id, bytes) in want {
        let got = storage.get(&LumpId::new(*id)).unwrap().unwrap();
        assert!(
            got.as_bytes() == &bytes[..],
            "{what}: lump {id}: wrong bytes"
        );
    }
    want.len()
}

/// Opens the storage by path as FrugalOS does (`FileNvm::create_if_absent`, then `open`).
fn open(path: &Path) -> cannyls::Result<Storage<FileNvm>> {
    let (nvm, created) = FileNvm::create_if_absent(path, CAPACITY)?;
    assert!(!created, "the storage file exists");
    StorageBuilder::new().open(nvm)
}

#[test]
fn a_storage_made_through_the_mount_opens_past_each_bad_header_and_journal_block() {
    require_fuse!();
    let (_dir, mp) = scratch("minfs-cannyls-mount-");
    let dev = Arc::new(FaultDevice::new(DEVICE, LOGICAL, PHYSICAL));
    drop(
        Filesystem::format(
            dev.clone() as Arc<dyn BlockDevice>,
            "fault",
            &FormatOptions::default(),
        )
        .unwrap(),
    );

    // Made through the mount with Cannyls' FileNvm (block size 512), as FrugalOS makes a file
    // device, used, closed.
    let m = Mounted::new(&dev, &mp, true);
    let (nvm, created) = FileNvm::create_if_absent(m.path(), CAPACITY).unwrap();
    assert!(created);
    let mut storage = StorageBuilder::new()
        .journal_region_ratio(0.01)
        .create(nvm)
        .unwrap();
    let want = workload(&mut storage, 12);
    drop(storage);
    // A file holding no storage on the same mount is served plainly, unaligned writes too.
    std::fs::write(mp.join("plain"), b"not a storage").unwrap();
    assert_eq!(std::fs::read(mp.join("plain")).unwrap(), b"not a storage");
    m.unmount();

    // The copy is there, level with the primary and agreeing with it.
    let fs = Filesystem::open_device(dev.clone() as Arc<dyn BlockDevice>, "fault").unwrap();
    let file = fs.open_file(FILE).unwrap();
    let check = copy::check(&file).unwrap();
    assert!(check.valid() && check.agree() && check.level(), "{check:?}");
    let trailer = copy::find(&file).unwrap().expect("a copy");
    let (layout, head, end) = match recovery::inspect(&file, 0, trailer.image).unwrap() {
        Inspection::Clean {
            layout, head, end, ..
        } => (layout, head, end),
        other => panic!("{other:?}"),
    };
    let bs = u64::from(layout.block_size);
    let eor = layout.ring_start() + end / bs * bs;
    let blocks = [
        ("the storage header", 0),
        ("the journal header", layout.journal_start),
        (
            "the ring's head block",
            layout.ring_start() + head / bs * bs,
        ),
        ("the block of the EndOfRecords", eor),
    ];
    let places: Vec<(&str, u64)> = blocks
        .iter()
        .map(|&(what, at)| {
            let r = cannyls_adapter::lumps::device_ranges(&file.extents(), at, bs);
            (what, r[0].0)
        })
        .collect();
    drop((file, fs));
    let image = dev.volatile_image();

    let mut compared = 0;
    for (what, device_at) in &places {
        // On a plain minfs mount the storage does not open.
        let d = Arc::new(FaultDevice::from_bytes(image.clone(), LOGICAL, PHYSICAL));
        d.make_unreadable(*device_at, bs);
        let m = Mounted::new(&d, &mp, false);
        assert!(
            open(&m.path()).is_err(),
            "{what} unreadable: opened without the copy"
        );
        m.unmount();
        // Through minfs-cannyls mount it does, every lump intact, the block rewritten.
        let m = Mounted::new(&d, &mp, true);
        let mut storage =
            open(&m.path()).unwrap_or_else(|e| panic!("{what} unreadable: not opened: {e}"));
        compared += compare(&mut storage, &want, what);
        drop(storage);
        m.unmount();
        assert!(
            d.unreadable_sectors().is_empty(),
            "{what}: not rewritten in place"
        );
    }
    eprintln!(
        "minfs-cannyls mount: {} blocks made unreadable in turn (storage header, journal \
         header, ring head, EndOfRecords), each opened through the mount with {compared} lumps \
         compared in all; none opened on a plain minfs mount",
        places.len()
    );
}

/// The command: `minfs-cannyls mount --log FILE` in the background over an image; a storage
/// made through it with `FileNvm` has a copy, level and agreeing, once unmounted; the server
/// is gone after the unmount.
#[test]
fn minfs_cannyls_mount_serves_in_the_background_and_the_storage_gets_its_copy() {
    require_fuse!();
    let (dir, mp) = scratch("minfs-cannyls-mount-cli-");
    let img = dir.path().join("disk.img");
    let log = dir.path().join("mount.log");
    std::fs::File::create(&img)
        .unwrap()
        .set_len(DEVICE)
        .unwrap();
    minfs::mkfs::mkfs(&img, &FormatOptions::default(), false).unwrap();
    let out = assert_cmd::Command::cargo_bin("minfs-cannyls")
        .unwrap()
        .arg("mount")
        .arg("--log")
        .arg(&log)
        .arg(&img)
        .arg(&mp)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", testutil::output_text(&out));
    let guard = Unmounted(mp.clone());
    let (nvm, created) = FileNvm::create_if_absent(mp.join(FILE), CAPACITY).unwrap();
    assert!(created);
    let mut storage = StorageBuilder::new().create(nvm).unwrap();
    let want = workload(&mut storage, 6);
    drop(storage);
    let mut storage = open(&mp.join(FILE)).unwrap();
    compare(&mut storage, &want, "reopened through the mount");
    drop(storage);
    let (_, pids) = mounts::unmount(&mp, false).unwrap();
    assert!(
        mounts::wait_exited(&pids, std::time::Duration::from_secs(30)),
        "the server {pids:?} did not exit"
    );
    drop(guard);
    assert!(log.exists(), "--log {} not created", log.display());
    let fs = Filesystem::open(&img, minfs::OpenMode::ReadOnly).unwrap();
    let file = fs.open_file(FILE).unwrap();
    let check = copy::check(&file).unwrap();
    assert!(check.valid() && check.agree() && check.level(), "{check:?}");
}
