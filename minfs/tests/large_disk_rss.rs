//! Regression: every `minfs` command on a 15 TiB device peaked at about 964 MiB of
//! resident memory, because open built a bitmap of one bit per 4 KiB block — also a read-only
//! open. As root, on a 15 TiB loop device over a sparse image, a read-only `minfs info` must
//! peak below 64 MiB. The peak is the child's `ru_maxrss` (`getrusage(RUSAGE_CHILDREN)`); this
//! file holds only this test, so the only other children it counts are `losetup`'s.

use minfs::FormatOptions;
use nix::sys::resource::{getrusage, UsageWho};
use testutil::{require_loop, LoopDevice};

const LIMIT_KIB: i64 = 64 << 10;

#[test]
fn read_only_info_on_a_15_tib_device_peaks_below_64_mib() {
    require_loop!();
    let dev = LoopDevice::new(15 << 40, 512).unwrap();
    // mkfs in this process, so that the children measured are `losetup` and `minfs info` only.
    minfs::mkfs::mkfs(dev.path(), &FormatOptions::default(), false).unwrap();
    let before = getrusage(UsageWho::RUSAGE_CHILDREN).unwrap().max_rss();
    assert!(
        before < LIMIT_KIB,
        "losetup alone peaked at {before} KiB; cannot measure"
    );
    let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("minfs"))
        .arg("info")
        .arg(dev.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("16492674416640"));
    let peak = getrusage(UsageWho::RUSAGE_CHILDREN).unwrap().max_rss();
    eprintln!("minfs info on 15 TiB: peak RSS {peak} KiB");
    assert!(
        peak < LIMIT_KIB,
        "minfs info on a 15 TiB device peaked at {peak} KiB (limit {LIMIT_KIB} KiB)"
    );
}
