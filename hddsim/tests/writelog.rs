//! `hddsim emulate --write-log` for real: ext4 made, filled and unmounted through a loop
//! device over the emulated drive; the initial image plus every logged write must be the final
//! image, byte for byte, and the log must hold the filesystem's flushes. Needs root and
//! /dev/fuse: skipped with a printed reason otherwise (a failure with MINFS_REQUIRE_LOOP=1).

use std::fs::File;
use std::path::Path;
use std::process::Command;

use hddsim::emulate::writelog::{replay_onto, Entry, Reader};
use testutil::{print_skip, require_loop, run, LoopDevice, Mount};

#[test]
fn initial_image_plus_logged_writes_is_the_final_image() {
    require_loop!();
    if !Path::new("/dev/fuse").exists() {
        if std::env::var_os("MINFS_REQUIRE_LOOP").is_some_and(|v| v == "1") {
            panic!("MINFS_REQUIRE_LOOP=1 but /dev/fuse is missing");
        }
        print_skip(module_path!(), "/dev/fuse is missing");
        return;
    }
    let dir = tempfile::Builder::new()
        .prefix("hddsim-writelog-")
        .tempdir_in(testutil::scratch_dir())
        .unwrap();
    let backing = dir.path().join("backing.img");
    let initial = dir.path().join("initial.img");
    let log = dir.path().join("write.log");
    let mp = dir.path().join("mnt");
    std::fs::create_dir(&mp).unwrap();
    // Not all zero: a few sectors of the initial image hold data the run overwrites.
    File::create(&backing).unwrap().set_len(64 << 20).unwrap();
    std::fs::write(dir.path().join("seed"), vec![0xA5u8; 1 << 20]).unwrap();
    run(Command::new("dd")
        .arg(format!("if={}", dir.path().join("seed").display()))
        .arg(format!("of={}", backing.display()))
        .args(["bs=1M", "conv=notrunc", "status=none"]))
    .unwrap();
    std::fs::copy(&backing, &initial).unwrap();
    run(Command::new(env!("CARGO_BIN_EXE_hddsim"))
        .args([
            "emulate",
            "--profile",
            "st1000dm003",
            "--clock",
            "virtual",
            "--backing",
        ])
        .arg(&backing)
        .arg("--write-log")
        .arg(&log)
        .arg(&mp))
    .unwrap();
    {
        let dev = LoopDevice::over(&mp.join("disk"), 512).unwrap();
        testutil::mkfs_ext4(dev.path()).unwrap();
        let m = Mount::new(dev.path()).unwrap();
        for k in 0..20u8 {
            std::fs::write(
                m.path().join(format!("f{k}")),
                vec![k; 100_000 + usize::from(k) * 4096],
            )
            .unwrap();
        }
        run(Command::new("sync").arg("-f").arg(m.path())).unwrap();
        std::fs::remove_file(m.path().join("f3")).unwrap();
    }
    testutil::retry_args(
        env!("CARGO_BIN_EXE_hddsim"),
        &["umount".as_ref(), mp.as_os_str()],
    );

    let mut r = Reader::new(File::open(&log).unwrap()).unwrap();
    assert_eq!(r.device_size(), 64 << 20);
    let (mut writes, mut flushes) = (0, 0);
    while let Some(e) = r.next_entry().unwrap() {
        match e {
            Entry::Write { .. } => writes += 1,
            Entry::Flush { .. } => flushes += 1,
        }
    }
    assert!(
        writes > 20 && flushes >= 1,
        "{writes} writes, {flushes} flushes"
    );
    let final_image = std::fs::read(&backing).unwrap();
    assert_ne!(
        std::fs::read(&initial).unwrap(),
        final_image,
        "the run changed nothing?"
    );
    assert_eq!(replay_onto(&log, &initial).unwrap(), (writes, flushes));
    assert!(
        std::fs::read(&initial).unwrap() == final_image,
        "initial image + logged writes differs from the final image"
    );
}
