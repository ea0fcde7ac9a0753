//! An application that runs Cannyls in-process on [`MinfsNvm`] gets one device request per
//! 1 MiB lump by doing what docs/BUFFERS.md says: `minfs::HugeAlloc::for_lumps()` as its
//! global allocator (this test binary's). Cannyls allocates each lump's buffer per put and get
//! and MinfsNvm does its O_DIRECT I/O straight from it; on a huge page the buffer is physically
//! contiguous and the loop device takes it as one request (on 4 KiB pages, two or three). The
//! allocator's cache serves those buffers again and again instead of mapping fresh memory.
//!
//! As root on a loop device (skipped with a reason otherwise; MINFS_REQUIRE_LOOP=1 fails
//! instead), where transparent huge pages are not `never`.

use cannyls::lump::LumpId;
use cannyls_adapter::MinfsNvm;
use minfs::FormatOptions;

#[global_allocator]
static ALLOC: minfs::HugeAlloc = minfs::HugeAlloc::for_lumps();

const MIB: u64 = 1 << 20;
const N: u64 = 32;

#[test]
fn an_application_with_huge_alloc_puts_and_gets_a_1m_lump_in_one_request() {
    testutil::require_loop!();
    if testutil::thp_mode().is_none_or(|mode| mode == "never") {
        testutil::print_skip(
            module_path!(),
            "transparent huge pages are off or missing in this kernel",
        );
        return;
    }
    let dev = testutil::LoopDevice::new(128 * MIB, 512).unwrap();
    minfs::mkfs::mkfs(dev.path(), &FormatOptions::default(), false).unwrap();
    let mut storage = MinfsNvm::create(dev.path(), "lusf", 96 * MIB)
        .unwrap()
        .create_storage()
        .unwrap();
    storage.journal_sync().unwrap();

    let stats0 = ALLOC.stats();
    let (r0, w0) = dev.completed_requests().unwrap();
    for i in 0..N {
        let mut data = storage.allocate_lump_data(MIB as usize).unwrap();
        data.as_bytes_mut().fill(i as u8);
        storage.put(&LumpId::new(u128::from(i)), &data).unwrap();
    }
    storage.journal_sync().unwrap();
    let (r1, w1) = dev.completed_requests().unwrap();
    for i in 0..N {
        let data = storage.get(&LumpId::new(u128::from(i))).unwrap().unwrap();
        assert!(data.as_bytes().iter().all(|&b| b == i as u8), "lump {i}");
    }
    let (r2, w2) = dev.completed_requests().unwrap();
    let stats = ALLOC.stats();
    drop(storage);

    let (writes, reads) = (w1 - w0, r2 - r1);
    println!(
        "{N} puts: {writes} device writes; {N} gets: {reads} device reads ({} during the \
         puts, {} writes during the gets); allocator: {:?} then {stats:?}",
        r1 - r0,
        w2 - w1,
        stats0
    );
    // The puts' writes: one per lump, and the journal's at the sync.
    assert!(
        (N..=N + 8).contains(&writes),
        "{N} puts of 1 MiB lumps made {writes} device writes (with buffers on 4 KiB pages: 2N \
         to 3N): could the kernel not find free huge pages?"
    );
    assert!(
        (N..=N + 8).contains(&reads),
        "{N} gets of 1 MiB lumps made {reads} device reads (with buffers on 4 KiB pages: 2N \
         to 3N): could the kernel not find free huge pages?"
    );
    // 2N lump buffers; all but a few from the cache.
    let fresh = stats.mapped - stats0.mapped;
    assert!(
        (stats.reused - stats0.reused) as u64 >= 2 * N - 4 && fresh <= 4,
        "lump buffers not reused: {stats0:?} then {stats:?}"
    );
}
