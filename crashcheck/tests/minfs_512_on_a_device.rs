//! Regression: crash states of the `minfs-512` target were opened as image files; on the
//! scratch XFS that holds them (4 KiB sectors) an image file's O_DIRECT alignment is 4096
//! bytes, so a storage of block size 512 never opened ("block size 512 is not usable"): every
//! state counted as "storage does not open". They are now attached to a loop device with
//! 512-byte sectors, as the drive was. The test keeps its image on such an XFS. Needs root and loop
//! devices: skipped with a printed reason otherwise (a failure with MINFS_REQUIRE_LOOP=1).

use std::path::Path;
use std::process::Command;

use bencher_workloads::run::content;
use cannyls::block::BlockSize;
use cannyls::lump::LumpId;
use cannyls_adapter::MinfsNvm;
use crashcheck::expect::{parse_oplog, Bound, Expectations};
use crashcheck::recover::{check_state, Target, Tools, FILE};
use testutil::{require_loop, run, LoopDevice, Mount};

#[test]
fn minfs_512_state_opens_on_a_512_byte_sector_device() {
    require_loop!();
    let bins = testutil::bin_dir_with(
        env!("CARGO_BIN_EXE_crashcheck"),
        &[("minfs", "minfs"), ("cannyls-adapter", "minfs-cannyls")],
    );
    let dir = tempfile::Builder::new()
        .prefix("crashcheck-minfs512-")
        .tempdir_in(testutil::scratch_dir())
        .unwrap();
    // An XFS with 4 KiB sectors, as `mkfs.xfs` makes on a 4Kn or 512e-reporting device.
    let xfs_img = dir.path().join("xfs.img");
    std::fs::File::create(&xfs_img)
        .unwrap()
        .set_len(512 << 20)
        .unwrap();
    run(Command::new("mkfs.xfs")
        .args(["-q", "-f", "-s", "size=4096"])
        .arg(&xfs_img))
    .unwrap();
    let xfs_dev = LoopDevice::over(&xfs_img, 4096).unwrap();
    let xfs = Mount::new(xfs_dev.path()).unwrap();
    let image = xfs.path().join("state.img");
    std::fs::File::create(&image)
        .unwrap()
        .set_len(64 << 20)
        .unwrap();
    let data = content::bytes(1, 0, 10_000);
    {
        let dev = LoopDevice::over(&image, 512).unwrap();
        run(Command::new(bins.join("minfs"))
            .args(["mkfs", "-f"])
            .arg(dev.path()))
        .unwrap();
        let nvm = MinfsNvm::create(dev.path(), FILE, 16 << 20)
            .unwrap()
            .with_block_size(BlockSize::new(512).unwrap())
            .unwrap();
        let mut storage = nvm
            .storage_builder()
            .journal_region_ratio(0.1)
            .create(nvm)
            .unwrap();
        let lump = storage.allocate_lump_data_with_bytes(&data).unwrap();
        storage.put(&LumpId::new(1), &lump).unwrap();
        storage.journal_sync().unwrap();
    }
    // Put lump 1, then a sync whose flush (flush 0) was accepted before it returned.
    let ops = parse_oplog("0\tnew\t1\t10000\t0\t10\n1\tsync\t-\t0\t10\t100\n").unwrap();
    let exp = Expectations::build(&ops, &[50], Bound::SyncReturn).unwrap();
    let mnt = xfs.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let tools = Tools {
        minfs: bins.join("minfs"),
        minfs_cannyls: bins.join("minfs-cannyls"),
    };
    let o = check_state(Target::Minfs512, &image, &mnt, &tools, &exp, 0);
    assert!(!o.bad(), "{o:?}");
    assert!(!o.before_storage && !o.repaired, "{o:?}");
    // The check can fail: a lump 2 the op-log says was acknowledged is reported lost.
    let ops =
        parse_oplog("0\tnew\t1\t10000\t0\t10\n1\tnew\t2\t10000\t10\t20\n2\tsync\t-\t0\t20\t100\n")
            .unwrap();
    let exp = Expectations::build(&ops, &[50], Bound::SyncReturn).unwrap();
    let o = check_state(Target::Minfs512, &image, &mnt, &tools, &exp, 0);
    assert_eq!(o.lost, 1, "{o:?}");
    assert!(Path::new(&image).exists());
    std::fs::remove_file(&image).unwrap();
    drop(xfs);
    drop(xfs_dev);
}
