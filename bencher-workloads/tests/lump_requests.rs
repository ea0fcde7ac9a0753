//! `minfs-bench run` puts and gets each 1 MiB lump as one request of the device, in-process,
//! for MinfsNvm (`minfs:`) and Cannyls' own FileNvm (`raw:`) alike: its allocator
//! (`minfs::HugeAlloc::for_lumps`) puts Cannyls' lump buffers on huge pages, as `minfs mount`
//! has its request buffers. On 4 KiB pages a 1 MiB buffer is 256 segments, more than a loop
//! device takes in one request (128), and each lump went as two or three requests.
//!
//! As root on a loop device (skipped with a reason otherwise; MINFS_REQUIRE_LOOP=1 fails
//! instead), where transparent huge pages are not `never`.

use std::fs;
use std::path::Path;

use assert_cmd::Command;
use minfs::FormatOptions;
use serde_json::Value;

const MIB: u64 = 1 << 20;
/// Lumps put, then gets of live lumps.
const N: u64 = 48;

/// Runs `workload` on `backend` and returns (puts, gets, device reads, device writes).
fn run(dev: &testutil::LoopDevice, dir: &Path, workload: &Path, backend: &str) -> [u64; 4] {
    let json = dir.join("report.json");
    let before = dev.completed_requests().unwrap();
    let out = Command::cargo_bin("minfs-bench")
        .unwrap()
        // Without the journal copy (docs/RELIABILITY.md): its build and catch-ups are writes
        // of their own (16 here), not the lumps' this test counts.
        .args([
            "run",
            "--no-progress",
            "--force",
            "--verify",
            "--no-journal-copy",
        ])
        .arg("--workload")
        .arg(workload)
        .args(["--backend", backend, "--json"])
        .arg(&json)
        .output()
        .unwrap();
    let after = dev.completed_requests().unwrap();
    assert!(out.status.success(), "{}", testutil::output_text(&out));
    let v: Value = serde_json::from_slice(&fs::read(&json).unwrap()).unwrap();
    let count = |kind: &str| -> u64 {
        v["kinds"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|k| k["kind"].as_str().unwrap().starts_with(kind))
            .map(|k| k["count"].as_u64().unwrap())
            .sum()
    };
    [
        count("Put"),
        count("Get"),
        after.0 - before.0,
        after.1 - before.1,
    ]
}

#[test]
fn in_process_lumps_of_1m_are_one_device_request_each() {
    testutil::require_loop!();
    if testutil::thp_mode().is_none_or(|mode| mode == "never") {
        testutil::print_skip(
            module_path!(),
            "transparent huge pages are off or missing in this kernel",
        );
        return;
    }
    let dir = tempfile::Builder::new()
        .prefix("minfs-bench-requests-")
        .tempdir_in(testutil::scratch_dir())
        .unwrap();
    let workload = dir.path().join("lumps.wl");
    fs::write(
        &workload,
        format!("Command {{ {N}.times {{ New(1M); }}; {N}.times {{ Get; }}; }}\n"),
    )
    .unwrap();
    let dev = testutil::LoopDevice::new(256 * MIB, 512).unwrap();
    let minfs = format!("minfs:{}", dev.path().display());
    let raw = format!("raw:{}", dev.path().display());
    for backend in [&minfs, &raw] {
        if backend == &minfs {
            let force = FormatOptions {
                force: true,
                ..Default::default()
            };
            minfs::mkfs::mkfs(dev.path(), &force, false).unwrap();
        }
        let [puts, gets, reads, writes] = run(&dev, dir.path(), &workload, backend);
        assert_eq!([puts, gets], [N, N], "{backend}");
        println!("{backend}: {puts} puts, {gets} gets: {writes} device writes, {reads} reads");
        // Besides the lumps: the storage's creation (header, journal), the journal's writes,
        // a few reads of headers and signatures. With lump buffers on 4 KiB pages each lump
        // was two or three requests: at least 2N.
        let most = N + N / 4 + 8;
        assert!(
            writes <= most && reads <= most,
            "{backend}: {N} puts and {N} gets of 1 MiB lumps made {writes} device writes and \
             {reads} reads, more than {most}: are the lump buffers not on huge pages (is \
             minfs-bench's allocator minfs::HugeAlloc::for_lumps, could the kernel find free \
             huge pages)?"
        );
        assert!(
            writes >= N && reads >= N,
            "{backend}: {writes} writes, {reads} reads"
        );
    }
}
