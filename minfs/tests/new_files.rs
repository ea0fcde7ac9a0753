//! New files and files grown by writing, in the library: a new file never begins with an
//! earlier file's bytes (a Cannyls storage header), sizes grown by
//! [`Filesystem::extend_unsynced`] reach the file table only when synced, and what a crash
//! leaves of them (docs/FORMAT.md, "Sizes grown by writing" and "Stale bytes in a new file").

use std::collections::BTreeMap;
use std::sync::Arc;

use minfs::device::fault::{FaultDevice, MediaState};
use minfs::format::BLOCK_SIZE;
use minfs::{AlignedBuf, Filesystem, FormatOptions, MemDevice};

const LEN: u64 = 8 << 20;

fn format(dev: Arc<dyn minfs::BlockDevice>) -> Filesystem {
    let opts = FormatOptions {
        uuid: Some([7; 16]),
        time: Some(1_700_000_000),
        ..FormatOptions::default()
    };
    Filesystem::format(dev, "test", &opts).unwrap()
}

fn mem_fs() -> Filesystem {
    format(Arc::new(MemDevice::new(LEN, 512, 4096)))
}

/// The start of a real Cannyls storage (FileNvm on a temporary file; its `lusf` header), as
/// 4 KiB.
fn cannyls_header() -> Vec<u8> {
    use cannyls::nvm::FileNvm;
    use cannyls::storage::StorageBuilder;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.lusf");
    {
        let (nvm, _) = FileNvm::create_if_absent(&path, 1 << 20).unwrap();
        let _storage = StorageBuilder::new().create(nvm).unwrap();
    }
    let mut bytes = std::fs::read(&path).unwrap();
    assert_eq!(&bytes[..4], b"lusf", "FileNvm wrote no lusf header");
    bytes.resize(BLOCK_SIZE as usize, 0);
    bytes
}

fn read(fs: &Filesystem, name: &str, offset: u64, len: usize) -> Vec<u8> {
    let mut buf = AlignedBuf::zeroed(len, 4096);
    fs.open_file(name)
        .unwrap()
        .read_at(&mut buf, offset)
        .unwrap();
    buf.to_vec()
}

fn write(fs: &Filesystem, name: &str, offset: u64, data: &[u8]) {
    let mut buf = AlignedBuf::zeroed(data.len(), 4096);
    buf.copy_from_slice(data);
    fs.open_file(name).unwrap().write_at(&buf, offset).unwrap();
}

/// Regression: a file made after `rm` of a file holding a Cannyls storage began with the old
/// storage's header (grown bytes were not zeroed), so `FileNvm`/`MinfsNvm` would have opened
/// the removed storage as the new one. Every way a file gets its first block is tried.
#[test]
fn a_new_file_never_begins_with_a_removed_files_cannyls_header() {
    let header = cannyls_header();
    type Make = fn(&Filesystem, &str);
    let ways: [(&str, Make); 4] = [
        ("create", |fs, n| {
            fs.create(n, 1 << 20).unwrap();
        }),
        ("grow from empty", |fs, n| {
            fs.create(n, 0).unwrap();
            fs.grow(n, 1 << 20).unwrap();
        }),
        ("set_size from empty (truncate)", |fs, n| {
            fs.create(n, 0).unwrap();
            fs.set_size(n, 1 << 20).unwrap();
        }),
        (
            "extend_unsynced from empty (a write past the end on the mount)",
            |fs, n| {
                fs.create(n, 0).unwrap();
                fs.extend_unsynced(n, 1 << 20).unwrap();
            },
        ),
    ];
    for (how, make) in ways {
        let fs = mem_fs();
        fs.create("store.lusf", 1 << 20).unwrap();
        write(&fs, "store.lusf", 0, &header);
        let old = fs.stat("store.lusf").unwrap().extents[0].offset;
        fs.remove("store.lusf").unwrap();
        make(&fs, "new.lusf");
        let st = fs.stat("new.lusf").unwrap();
        assert_eq!(
            st.extents[0].offset, old,
            "{how}: the new file does not reuse the removed file's blocks; the test proves nothing"
        );
        let first = read(&fs, "new.lusf", 0, BLOCK_SIZE as usize);
        assert!(
            first.iter().all(|&b| b == 0),
            "{how}: the new file begins with {:?}",
            String::from_utf8_lossy(&first[..8])
        );
    }
}

/// 300 appends with a sync every 100: three commits, not one per append; preallocation is
/// held while appending and given back by `trim_preallocation`.
#[test]
fn appends_commit_only_when_synced() {
    let fs = mem_fs();
    fs.create("log", 0).unwrap();
    let g0 = fs.superblock().generation;
    let chunk = 4608u64; // nine 512-byte sectors: appends do not end on a block boundary
    let h = fs.open_file("log").unwrap();
    for i in 0..300u64 {
        fs.extend_unsynced("log", (i + 1) * chunk).unwrap();
        let mut buf = AlignedBuf::zeroed(chunk as usize, 4096);
        buf.fill(i as u8);
        h.write_at(&buf, i * chunk).unwrap();
        if (i + 1) % 100 == 0 {
            assert!(fs.sync_size("log").unwrap());
        }
    }
    assert!(!fs.sync_size("log").unwrap(), "nothing left to sync");
    assert_eq!(
        fs.superblock().generation - g0,
        3,
        "commits for 300 appends"
    );
    let st = fs.stat("log").unwrap();
    assert_eq!(st.size, 300 * chunk);
    assert!(
        st.allocated > 300 * chunk + BLOCK_SIZE,
        "no preallocation held"
    );
    let freed = fs.trim_preallocation("log").unwrap();
    assert!(freed > 0);
    let st = fs.stat("log").unwrap();
    assert_eq!(
        st.allocated,
        (300 * chunk).div_ceil(BLOCK_SIZE) * BLOCK_SIZE
    );
    assert_eq!(st.extents.len(), 1, "appends were not contiguous: {st:?}");
    // Reopened: the synced size, the data, no leaked blocks.
    let dev = fs.device().clone();
    let free = fs.free_bytes();
    drop((h, fs));
    let fs = Filesystem::open_device(dev.clone(), "test").unwrap();
    assert_eq!(fs.stat("log").unwrap().size, 300 * chunk);
    assert_eq!(fs.free_bytes(), free);
    let last = read(&fs, "log", 299 * chunk, chunk as usize);
    assert!(last.iter().all(|&b| b == 299u64 as u8));
    assert!(minfs::fsck::check_device(dev.as_ref(), "test")
        .unwrap()
        .is_clean());
}

/// A commit for another file records a grown file at its synced size, and the free-block
/// count of the file table excludes blocks preallocated in memory (fsck checks it).
#[test]
fn another_files_commit_records_the_synced_size_only() {
    let fs = mem_fs();
    fs.create("a", 4096).unwrap();
    fs.extend_unsynced("a", 100_000).unwrap();
    fs.create("b", 8192).unwrap();
    let dev = fs.device().clone();
    let r = minfs::fsck::check_device(dev.as_ref(), "test").unwrap();
    assert!(r.is_clean(), "{:?}", r.problems);
    let mut image = AlignedBuf::zeroed(LEN as usize, 4096);
    dev.read_at(&mut image, 0).unwrap();
    let copy = MemDevice::from_bytes(image.to_vec(), 512, 4096);
    let on_disk = Filesystem::open_device(Arc::new(copy), "copy").unwrap();
    assert_eq!(on_disk.stat("a").unwrap().size, 4096);
    assert_eq!(on_disk.stat("a").unwrap().allocated, 4096);
    assert_eq!(fs.stat("a").unwrap().size, 100_000);
}

/// A crash at every device operation of a run of appends (a file grown by writing, synced now
/// and then, while another file is created and written): the grown file has one of its synced
/// sizes — at least the last whose sync had returned — and holds exactly its own bytes up to
/// it (never the removed file's, never the other file's); fsck is clean after open.
#[test]
fn a_crash_leaves_the_last_synced_size_and_never_another_files_bytes() {
    let dev = Arc::new(FaultDevice::new(LEN, 512, 4096));
    let fs = format(dev.clone());
    // Stale bytes on the device: a removed file's.
    fs.create("old", 256 << 10).unwrap();
    write(&fs, "old", 0, &vec![0xEE; 256 << 10]);
    fs.remove("old").unwrap();
    fs.flush().unwrap();
    let mut media = MediaState::new(dev.durable_image(), 512);
    let base = dev.counts().total();
    dev.record_trace();
    let ops = || dev.counts().total() - base;

    let chunk = 4608u64;
    let byte = |i: u64| (i % 200) as u8 + 1;
    fs.create("a", 0).unwrap();
    let a_created = ops();
    // (operations done when the sync returned, the size it committed)
    let mut synced: Vec<(u64, u64)> = vec![(a_created, 0)];
    let mut b_created = None;
    let h = fs.open_file("a").unwrap();
    for i in 0..40u64 {
        fs.extend_unsynced("a", (i + 1) * chunk).unwrap();
        let mut buf = AlignedBuf::zeroed(chunk as usize, 4096);
        buf.fill(byte(i));
        h.write_at(&buf, i * chunk).unwrap();
        if i == 12 {
            fs.create("b", 3 * BLOCK_SIZE).unwrap();
            write(&fs, "b", 0, &vec![0xBB; 3 * BLOCK_SIZE as usize]);
            fs.flush().unwrap();
            b_created = Some(ops());
        }
        if i % 9 == 8 {
            assert!(fs.sync_size("a").unwrap());
            synced.push((ops(), (i + 1) * chunk));
        }
    }
    fs.sync_size("a").unwrap();
    synced.push((ops(), 40 * chunk));
    fs.trim_preallocation("a").unwrap();
    let trace = dev.take_trace();
    assert_eq!(trace.len() as u64, ops(), "trace and counts disagree");
    let sizes: BTreeMap<u64, u64> = synced.iter().map(|&(k, s)| (s, k)).collect();

    let mut checked = 0;
    for k in 0..=trace.len() as u64 {
        if k > 0 {
            media.apply(&trace[k as usize - 1]);
        }
        for fates in media.variants(6, 4096, k) {
            let image = media.image(&fates);
            let cdev = Arc::new(MemDevice::from_bytes(image, 512, 4096));
            let fs = Filesystem::open_device(cdev.clone(), "crash")
                .unwrap_or_else(|e| panic!("crash after {k} operations: open: {e}"));
            let r = minfs::fsck::check_device(cdev.as_ref(), "crash").unwrap();
            assert!(r.is_clean(), "crash after {k}: fsck {:?}", r.problems);
            let Ok(a) = fs.stat("a") else {
                assert!(k <= a_created, "crash after {k}: file a lost");
                continue;
            };
            let must = synced
                .iter()
                .filter(|&&(done, _)| done <= k)
                .map(|&(_, s)| s)
                .max()
                .unwrap_or(0);
            assert!(
                sizes.contains_key(&a.size) && a.size >= must,
                "crash after {k}: size {} (synced sizes {sizes:?}, at least {must})",
                a.size
            );
            if a.size > 0 {
                let got = read(&fs, "a", 0, a.size as usize);
                for (i, c) in got.chunks(chunk as usize).enumerate() {
                    assert!(
                        c.iter().all(|&x| x == byte(i as u64)),
                        "crash after {k}: append {i} of a holds other bytes"
                    );
                }
            }
            match fs.stat("b") {
                Ok(_) => {
                    let got = read(&fs, "b", 0, 3 * BLOCK_SIZE as usize);
                    if b_created.is_some_and(|c| c <= k) {
                        assert!(got.iter().all(|&x| x == 0xBB), "crash after {k}: b's bytes");
                    }
                }
                Err(_) => assert!(b_created.is_none_or(|c| k < c), "crash after {k}: b lost"),
            }
            checked += 1;
        }
    }
    assert!(checked > trace.len(), "only {checked} crash images checked");
}

/// Space held as another file's preallocation is given back before a create, grow or append
/// reports no space, as XFS trims speculative preallocation before ENOSPC.
#[test]
fn preallocation_is_given_back_before_no_space() {
    let fs = mem_fs();
    let total = fs.free_bytes();
    // "a" grows by appends of 64 KiB to a third of the space, holding blocks ahead.
    fs.create("a", 0).unwrap();
    let third = total / 3 / 65536 * 65536;
    for end in (1..=third / 65536).map(|i| i * 65536) {
        fs.extend_unsynced("a", end).unwrap();
    }
    let held = fs.stat("a").unwrap().allocated;
    assert!(held > third + 64 * 1024, "a holds {held} for {third}");
    // "b" takes all the rest beside a's size: more than is free beside a's preallocation.
    let want = total - third;
    assert!(want > fs.free_bytes());
    fs.create("b", want).unwrap();
    let a = fs.stat("a").unwrap();
    assert_eq!((a.size, a.allocated), (third, third));
    assert_eq!(fs.free_bytes(), 0);
    // A grow of "c" into the blocks "a" holds ahead likewise.
    fs.remove("b").unwrap();
    fs.create("c", 0).unwrap();
    fs.extend_unsynced("a", third + BLOCK_SIZE).unwrap();
    assert!(fs.stat("a").unwrap().allocated > third + 64 * 1024);
    fs.grow("c", total - third - BLOCK_SIZE).unwrap();
    assert_eq!(fs.free_bytes(), 0);
    // And an append of "d" (a write past its end on the mount).
    fs.remove("c").unwrap();
    fs.create("d", 0).unwrap();
    fs.extend_unsynced("a", third + 2 * BLOCK_SIZE).unwrap();
    assert!(fs.stat("a").unwrap().allocated > third + 64 * 1024);
    fs.extend_unsynced("d", total - third - 2 * BLOCK_SIZE)
        .unwrap();
    assert_eq!(fs.free_bytes(), 0);
    fs.sync_all_sizes().unwrap();
    let r = minfs::fsck::check_device(fs.device().as_ref(), "test").unwrap();
    assert!(r.is_clean(), "{:?}", r.problems);
}
