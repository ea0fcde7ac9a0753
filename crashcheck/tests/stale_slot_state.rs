//! Regression: a crash state cut between a minfs commit's two slot writes (one slot a commit
//! older: `StaleSlot`) was counted as "FS does not open", though the read-write open that
//! follows repairs it — with the copy of the Cannyls journal, creating a storage grows its
//! file (one more commit in the recorded run), which the full power-cut run sampled. It now
//! counts as a repair; the filesystem must still be clean after the open. Needs root and loop
//! devices: skipped with a printed reason otherwise (a failure with MINFS_REQUIRE_LOOP=1).

use std::io::{Read, Seek, SeekFrom, Write};

use bencher_workloads::run::content;
use cannyls::lump::LumpId;
use cannyls_adapter::MinfsNvm;
use crashcheck::expect::{parse_oplog, Bound, Expectations};
use crashcheck::recover::{check_state, Target, Tools, FILE};
use testutil::{require_loop, run, LoopDevice};

#[test]
fn a_state_cut_between_slot_writes_is_a_repair_not_a_failure() {
    require_loop!();
    let bins = testutil::bin_dir_with(
        env!("CARGO_BIN_EXE_crashcheck"),
        &[("minfs", "minfs"), ("cannyls-adapter", "minfs-cannyls")],
    );
    let dir = tempfile::Builder::new()
        .prefix("crashcheck-stale-slot-")
        .tempdir_in(testutil::scratch_dir())
        .unwrap();
    let image = dir.path().join("state.img");
    std::fs::File::create(&image)
        .unwrap()
        .set_len(96 << 20)
        .unwrap();
    let data = content::bytes(1, 0, 10_000);
    let slot_a_before = {
        let dev = LoopDevice::over(&image, 512).unwrap();
        run(std::process::Command::new(bins.join("minfs"))
            .args(["mkfs", "-f"])
            .arg(dev.path()))
        .unwrap();
        let mut storage = MinfsNvm::create(dev.path(), FILE, 16 << 20)
            .unwrap()
            .create_storage()
            .unwrap();
        let lump = storage.allocate_lump_data_with_bytes(&data).unwrap();
        storage.put(&LumpId::new(1), &lump).unwrap();
        storage.journal_sync().unwrap();
        drop(storage);
        drop(dev);
        let mut a = vec![0u8; 65536];
        let mut f = std::fs::File::open(&image).unwrap();
        f.read_exact(&mut a).unwrap();
        // One more commit (a file created), then slot A as it was before it: the state of a
        // crash between that commit's two slot writes.
        let dev = LoopDevice::over(&image, 512).unwrap();
        minfs::Filesystem::open(dev.path(), minfs::OpenMode::ReadWrite)
            .unwrap()
            .create("other", 1 << 20)
            .unwrap();
        a
    };
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(&image)
        .unwrap();
    f.seek(SeekFrom::Start(0)).unwrap();
    f.write_all(&slot_a_before).unwrap();
    f.sync_all().unwrap();
    drop(f);
    let ops = parse_oplog("0\tnew\t1\t10000\t0\t10\n1\tsync\t-\t0\t10\t100\n").unwrap();
    let exp = Expectations::build(&ops, &[50], Bound::SyncReturn).unwrap();
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let tools = Tools {
        minfs: bins.join("minfs"),
        minfs_cannyls: bins.join("minfs-cannyls"),
    };
    let o = check_state(Target::Minfs, &image, &mnt, &tools, &exp, 0);
    assert!(!o.bad(), "{o:?}");
    assert!(o.repaired, "the stale slot is a repair: {o:?}");
}
