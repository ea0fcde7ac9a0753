//! File handles: zero-copy mapping onto the device, alignment and range checks, poisoning
//! after a failed write or flush, locking, and sharing between threads.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use minfs::{
    AlignedBuf, BlockDevice, Error, FileHandle, Filesystem, FormatOptions, MemDevice, OpenMode,
    SlotId,
};

/// Records every request, and can be told to fail writes or flushes.
#[derive(Debug)]
struct Spy {
    inner: MemDevice,
    calls: Mutex<Vec<(&'static str, usize, usize, u64)>>,
    fail_writes: AtomicBool,
    fail_flush: AtomicBool,
}

impl Spy {
    fn new(len: u64, lss: u32) -> Arc<Spy> {
        Arc::new(Spy {
            inner: MemDevice::new(len, lss, 4096),
            calls: Mutex::new(Vec::new()),
            fail_writes: AtomicBool::new(false),
            fail_flush: AtomicBool::new(false),
        })
    }
    fn take(&self) -> Vec<(&'static str, usize, usize, u64)> {
        std::mem::take(&mut self.calls.lock().unwrap())
    }
}

impl BlockDevice for Spy {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.calls
            .lock()
            .unwrap()
            .push(("read", buf.as_ptr() as usize, buf.len(), offset));
        self.inner.read_at(buf, offset)
    }
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.calls
            .lock()
            .unwrap()
            .push(("write", buf.as_ptr() as usize, buf.len(), offset));
        if self.fail_writes.load(Ordering::SeqCst) {
            return Err(io::Error::other("injected write error"));
        }
        self.inner.write_at(buf, offset)
    }
    fn flush(&self) -> io::Result<()> {
        self.calls.lock().unwrap().push(("flush", 0, 0, 0));
        if self.fail_flush.load(Ordering::SeqCst) {
            return Err(io::Error::other("injected flush error"));
        }
        Ok(())
    }
    fn len(&self) -> u64 {
        self.inner.len()
    }
    fn logical_sector_size(&self) -> u32 {
        self.inner.logical_sector_size()
    }
    fn physical_sector_size(&self) -> u32 {
        self.inner.physical_sector_size()
    }
    fn is_read_only(&self) -> bool {
        false
    }
}

fn fs_on(dev: Arc<Spy>) -> Filesystem {
    Filesystem::format(dev, "spy", &FormatOptions::default()).unwrap()
}

#[test]
fn handles_are_send_and_sync() {
    fn check<T: Send + Sync + Clone>() {}
    check::<FileHandle>();
    check::<Filesystem>();
}

/// A request spanning two extents is exactly two device calls, each straight from the
/// caller's buffer (same addresses: no copy), at the extents' device offsets.
#[test]
fn io_is_one_call_per_contiguous_piece_from_the_callers_buffer() {
    let dev = Spy::new(8 << 20, 512);
    let fs = fs_on(dev.clone());
    fs.create("a", 4096).unwrap();
    fs.create("b", 4096).unwrap(); // blocks a's growth in place
    fs.grow("a", 3 * 4096).unwrap(); // a = [256] + [258, 259]
    let f = fs.open_file("a").unwrap();
    let ext = f.extents();
    assert_eq!(ext.len(), 2, "{ext:?}");
    let mut buf = AlignedBuf::zeroed(3 * 4096, 4096);
    buf.iter_mut()
        .enumerate()
        .for_each(|(i, b)| *b = (i % 253) as u8);
    dev.take();
    f.write_at(&buf, 0).unwrap();
    let base = buf.as_ptr() as usize;
    assert_eq!(
        dev.take(),
        vec![
            ("write", base, 4096, ext[0].start * 4096),
            ("write", base + 4096, 8192, ext[1].start * 4096),
        ]
    );
    let mut back = AlignedBuf::zeroed(2 * 4096, 4096);
    f.read_at(&mut back, 2048).unwrap();
    assert_eq!(&back[..], &buf[2048..2048 + 8192]);
    let calls = dev.take();
    assert_eq!(calls.len(), 2);
    assert_eq!(
        calls[0],
        (
            "read",
            back.as_ptr() as usize,
            2048,
            ext[0].start * 4096 + 2048
        )
    );
    // flush is a device flush only: no metadata write.
    f.flush().unwrap();
    assert_eq!(dev.take(), vec![("flush", 0, 0, 0)]);
}

#[test]
fn misaligned_and_out_of_range_requests_are_refused_without_io() {
    let dev = Spy::new(8 << 20, 512);
    let fs = fs_on(dev.clone());
    fs.create("a", 10_000).unwrap();
    let f = fs.open_file("a").unwrap();
    let buf = AlignedBuf::zeroed(8192, 4096);
    dev.take();
    let e = f.write_at(&buf[..512], 100).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Unaligned {
                what: "offset",
                value: 100,
                align: 512,
                ..
            }
        ),
        "{e}"
    );
    let e = f.write_at(&buf[..100], 0).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Unaligned {
                what: "length",
                value: 100,
                ..
            }
        ),
        "{e}"
    );
    let e = f.write_at(&buf[1..513], 0).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Unaligned {
                what: "buffer address",
                ..
            }
        ),
        "{e}"
    );
    // Size 10000 → addressable up to 10240 (rounded up to the sector).
    f.write_at(&buf[..512], 9728).unwrap();
    let e = f.write_at(&buf[..1024], 9728).unwrap_err();
    assert!(
        matches!(
            e,
            Error::OutOfRange {
                offset: 9728,
                len: 1024,
                limit: 10240,
                ..
            }
        ),
        "{e}"
    );
    let e = f.write_at(&buf[..512], u64::MAX - 511).unwrap_err();
    assert!(matches!(e, Error::OutOfRange { .. }), "{e}");
    assert_eq!(
        dev.take().len(),
        1,
        "only the valid request reached the device"
    );
}

#[test]
fn a_failed_write_poisons_every_handle() {
    let dev = Spy::new(8 << 20, 512);
    let fs = fs_on(dev.clone());
    fs.create("a", 8192).unwrap();
    let f = fs.open_file("a").unwrap();
    let g = f.clone();
    let buf = AlignedBuf::zeroed(4096, 4096);
    dev.fail_writes.store(true, Ordering::SeqCst);
    assert!(matches!(f.write_at(&buf, 0), Err(Error::Io { .. })));
    dev.fail_writes.store(false, Ordering::SeqCst);
    dev.take();
    assert!(matches!(f.write_at(&buf, 0), Err(Error::Poisoned { .. })));
    assert!(matches!(g.flush(), Err(Error::Poisoned { .. })));
    let mut rbuf = AlignedBuf::zeroed(4096, 4096);
    assert!(matches!(
        g.read_at(&mut rbuf, 0),
        Err(Error::Poisoned { .. })
    ));
    assert!(matches!(fs.create("b", 1), Err(Error::Poisoned { .. })));
    assert!(dev.take().is_empty(), "a poisoned filesystem did I/O");
}

#[test]
fn a_failed_flush_poisons_and_is_not_retried() {
    let dev = Spy::new(8 << 20, 512);
    let fs = fs_on(dev.clone());
    fs.create("a", 8192).unwrap();
    let f = fs.open_file("a").unwrap();
    dev.fail_flush.store(true, Ordering::SeqCst);
    assert!(matches!(f.flush(), Err(Error::Io { .. })));
    dev.fail_flush.store(false, Ordering::SeqCst);
    dev.take();
    assert!(matches!(f.flush(), Err(Error::Poisoned { .. })));
    assert!(dev.take().is_empty());
}

#[test]
fn a_failed_metadata_commit_poisons_and_keeps_the_old_state_on_disk() {
    let dev = Spy::new(8 << 20, 512);
    let fs = fs_on(dev.clone());
    fs.create("a", 8192).unwrap();
    dev.fail_writes.store(true, Ordering::SeqCst);
    assert!(matches!(fs.create("b", 4096), Err(Error::Io { .. })));
    assert!(matches!(fs.create("c", 4096), Err(Error::Poisoned { .. })));
    dev.fail_writes.store(false, Ordering::SeqCst);
    drop(fs);
    let fs = Filesystem::open_device(dev, "spy").unwrap();
    let names: Vec<String> = fs.list().into_iter().map(|f| f.name).collect();
    assert_eq!(names, ["a"]);
}

#[test]
fn remove_is_refused_while_a_handle_is_open() {
    let fs = fs_on(Spy::new(8 << 20, 512));
    fs.create("a", 8192).unwrap();
    let f = fs.open_file("a").unwrap();
    assert!(matches!(fs.remove("a"), Err(Error::FileBusy { .. })));
    drop(f);
    fs.remove("a").unwrap();
}

#[test]
fn growth_is_seen_by_open_handles() {
    let fs = fs_on(Spy::new(8 << 20, 512));
    fs.create("a", 4096).unwrap();
    let f = fs.open_file("a").unwrap();
    let buf = AlignedBuf::zeroed(4096, 4096);
    assert!(f.write_at(&buf, 4096).is_err());
    fs.grow("a", 8192).unwrap();
    assert_eq!(f.size(), 8192);
    f.write_at(&buf, 4096).unwrap();
}

#[test]
fn threads_write_disjoint_ranges_through_clones() {
    let fs = fs_on(Spy::new(16 << 20, 512));
    fs.create("a", 8 << 20).unwrap();
    let f = fs.open_file("a").unwrap();
    std::thread::scope(|s| {
        for t in 0..4u8 {
            let f = f.clone();
            s.spawn(move || {
                let mut buf = AlignedBuf::zeroed(1 << 20, 4096);
                buf.fill(t + 1);
                for i in 0..2u64 {
                    f.write_at(&buf, (u64::from(t) * 2 + i) << 20).unwrap();
                }
            });
        }
    });
    let mut buf = AlignedBuf::zeroed(8 << 20, 4096);
    f.read_at(&mut buf, 0).unwrap();
    for (i, chunk) in buf.chunks(1 << 20).enumerate() {
        assert!(chunk.iter().all(|&b| b == (i / 2) as u8 + 1), "MiB {i}");
    }
}

/// A fresh 8 MiB minfs image in a temporary directory (gone with the guard).
fn lock_test_image() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::Builder::new()
        .prefix("minfs-lock-")
        .tempdir_in(testutil::scratch_dir())
        .unwrap();
    let img = dir.path().join("disk.img");
    let opts = FormatOptions {
        size: Some(8 << 20),
        ..Default::default()
    };
    minfs::mkfs::mkfs(&img, &opts, false).unwrap();
    (dir, img)
}

#[test]
fn only_one_read_write_opener_of_an_image() {
    let (_dir, img) = lock_test_image();
    let fs = Filesystem::open(&img, OpenMode::ReadWrite).unwrap();
    let err = Filesystem::open(&img, OpenMode::ReadWrite).unwrap_err();
    assert!(matches!(err, Error::Locked { .. }), "{err}");
    assert!(err.to_string().contains("disk.img"));
    // mkfs is refused too, even with force.
    let err = minfs::mkfs::mkfs(
        &img,
        &FormatOptions {
            force: true,
            ..Default::default()
        },
        false,
    )
    .unwrap_err();
    assert!(matches!(err, Error::Locked { .. }), "{err}");
    // Readers are not locked out.
    let ro = Filesystem::open(&img, OpenMode::ReadOnly).unwrap();
    assert_eq!(ro.info().uuid, fs.info().uuid);
    assert!(matches!(ro.create("x", 1), Err(Error::ReadOnly { .. })));
    drop(fs);
    Filesystem::open(&img, OpenMode::ReadWrite).unwrap();
}

/// Opening read-write rewrites an invalid inactive slot (an interrupted commit) from the
/// active one; opening read-only never writes.
#[test]
fn read_write_open_heals_an_invalid_inactive_slot() {
    let dev = Arc::new(MemDevice::new(8 << 20, 512, 4096));
    let fs = Filesystem::format(dev.clone(), "mem", &FormatOptions::default()).unwrap();
    fs.create("a", 4096).unwrap();
    let active = fs.info().active_slot;
    drop(fs);
    let inactive_off = active.other().offset();
    let mut bytes = dev.snapshot();
    bytes[inactive_off as usize + 100] ^= 1;
    let dev = Arc::new(MemDevice::from_bytes(bytes, 512, 4096));
    let report = minfs::fsck::check_device(dev.as_ref(), "mem").unwrap();
    assert_eq!(report.problems.len(), 1, "{:?}", report.problems);
    let fs = Filesystem::open_device(dev.clone(), "mem").unwrap();
    assert_eq!(fs.list().len(), 1);
    drop(fs);
    assert!(minfs::fsck::check_device(dev.as_ref(), "mem")
        .unwrap()
        .is_clean());
}

/// An unreadable sector in either slot is a bad slot, not a fatal open error; both
/// unreadable is `NoValidSlot` naming both slots' read errors.
#[test]
fn unreadable_slots_open_through_the_other_one_and_both_are_named() {
    use minfs::device::fault::FaultDevice;
    let dev = Arc::new(FaultDevice::new(8 << 20, 512, 4096));
    let fs = Filesystem::format(dev.clone(), "mem", &FormatOptions::default()).unwrap();
    fs.create("a", 4096).unwrap();
    drop(fs);
    for slot in SlotId::BOTH {
        dev.make_unreadable(slot.offset() + 4096 + 512, 512);
        let fs = Filesystem::open_device(dev.clone(), "mem").unwrap();
        assert_eq!(fs.list().len(), 1, "{slot} unreadable");
        drop(fs);
        // The read-write open rewrote the slot: readable and clean again.
        assert!(dev.unreadable_sectors().is_empty(), "{slot} not healed");
        assert!(minfs::fsck::check_device(dev.as_ref(), "mem")
            .unwrap()
            .is_clean());
    }
    dev.make_unreadable(SlotId::A.offset(), 512);
    dev.make_unreadable(SlotId::B.offset() + 65024, 512);
    let err = Filesystem::open_device(dev.clone(), "mem").unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, Error::NoValidSlot { .. }), "{msg}");
    for want in [
        "slot A: unreadable: reading 65536 bytes at byte 0 failed",
        "sector at byte 0 is unreadable",
        "slot B: unreadable: reading 65536 bytes at byte 65536 failed",
        "sector at byte 130560 is unreadable",
    ] {
        assert!(msg.contains(want), "{msg:?} lacks {want:?}");
    }
}

/// Equal generations with different contents are never written by minfs; fsck
/// reports them (and `-y` keeps slot A's, the one open uses).
#[test]
fn equal_generations_with_different_contents_are_reported() {
    use minfs::format::{slot, SLOT_SIZE};
    let dev = Arc::new(MemDevice::new(8 << 20, 512, 4096));
    let fs = Filesystem::format(dev.clone(), "mem", &FormatOptions::default()).unwrap();
    fs.create("a", 4096).unwrap();
    drop(fs);
    let mut bytes = dev.snapshot();
    let len = bytes.len() as u64;
    let b = slot::decode(
        &bytes[SLOT_SIZE as usize..2 * SLOT_SIZE as usize],
        SlotId::B,
        len,
    )
    .unwrap();
    assert!(minfs::fsck::check_device(dev.as_ref(), "mem")
        .unwrap()
        .is_clean());
    // Slot B: the same generation, but without the file.
    let sb = minfs::format::superblock::Superblock {
        free_blocks: b.sb.block_count,
        ..b.sb.clone()
    };
    let forged = slot::encode(&sb, &[], SlotId::B).unwrap();
    bytes[SLOT_SIZE as usize..2 * SLOT_SIZE as usize].copy_from_slice(&forged);
    let dev = Arc::new(MemDevice::from_bytes(bytes, 512, 4096));
    let r = minfs::fsck::check_device(dev.as_ref(), "mem").unwrap();
    assert_eq!(
        r.problems,
        vec![minfs::fsck::Problem::ConflictingSlots {
            generation: b.sb.generation
        }]
    );
    let (_, after) = minfs::fsck::repair_device(dev.clone(), "mem").unwrap();
    assert!(after.is_clean(), "{:?}", after.problems);
    let fs = Filesystem::open_device(dev, "mem").unwrap();
    assert_eq!(fs.list().len(), 1);
}

/// A target whose slots are one commit apart (what a minfs that committed to one slot wrote,
/// or a crash between a commit's two slot writes) opens in the newer slot; fsck -n reports
/// the stale one; a read-write open copies the newer state over it, same generation.
#[test]
fn a_stale_slot_is_reported_and_healed_by_a_read_write_open() {
    let dev = Arc::new(MemDevice::new(8 << 20, 512, 4096));
    let fs = Filesystem::format(dev.clone(), "mem", &FormatOptions::default()).unwrap();
    fs.set_single_slot_commits_for_bench(true);
    fs.create("a", 4096).unwrap();
    let generation = fs.info().generation;
    drop(fs);
    let r = minfs::fsck::check_device(dev.as_ref(), "mem").unwrap();
    assert_eq!(
        r.problems,
        vec![minfs::fsck::Problem::StaleSlot {
            slot: SlotId::A,
            generation: generation - 1,
            newest: generation
        }]
    );
    let fs = Filesystem::open_device(dev.clone(), "mem").unwrap();
    assert_eq!(fs.list().len(), 1);
    assert_eq!(fs.info().generation, generation);
    drop(fs);
    let r = minfs::fsck::check_device(dev.as_ref(), "mem").unwrap();
    assert!(r.is_clean(), "{:?}", r.problems);
    assert_eq!(r.generations, [Some(generation), Some(generation)]);
}

/// "locked by …" names who holds the lock: this process (a second read-write open), or another
/// process by pid and command name. (A minfs mount is named in tests/mount.rs.)
#[test]
fn the_lock_holder_is_named() {
    let (_dir, img) = lock_test_image();
    let fs = Filesystem::open(&img, OpenMode::ReadWrite).unwrap();
    let err = Filesystem::open(&img, OpenMode::ReadWrite).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Locked {
                holder: minfs::LockHolder::ThisProcess,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("locked by this process;"), "{err}");
    drop(fs);

    if testutil::which("flock").is_none() {
        testutil::print_skip(
            "the_lock_holder_is_named (another process)",
            "flock(1) is not installed (util-linux)",
        );
        return;
    }
    // flock(1) takes the same kind of lock as minfs and holds it while its command runs.
    let mut holder = std::process::Command::new("flock")
        .arg("-x")
        .arg(&img)
        .args(["sleep", "60"])
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    let err = loop {
        match Filesystem::open(&img, OpenMode::ReadWrite) {
            Err(e) => break e,
            Ok(fs) if start.elapsed() < std::time::Duration::from_secs(10) => {
                drop(fs);
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Ok(_) => panic!("flock(1) did not take the lock within 10 s"),
        }
    };
    holder.kill().unwrap();
    holder.wait().unwrap();
    let want = format!("locked by process {} (flock);", holder.id());
    assert!(err.to_string().contains(&want), "{err}\nwanted {want:?}");
}
