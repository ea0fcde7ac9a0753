//! `scripts/compare.sh` (the wrapper that runs `minfs-bench compare`) end to end (root and
//! loop devices; skipped with a printed reason elsewhere): a tiny-scale comparison of every
//! target and reference workload on a loop device, the emulated drive, the refusal of a
//! device that holds a filesystem or is mounted, and the cleanup after Ctrl-C and SIGTERM.
//!
//! The script is given this build's binaries with `--bin-dir` (it would otherwise build
//! release binaries itself).

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use testutil::{mkfs_ext4, require_loop, LoopDevice, Mount};

/// The script's runs are serialized: each checks that it left no loop device, mount or tracefs
/// instance behind, and a run tears down a tracefs mount it made — both would see the other
/// test's run (cargo runs a binary's tests on parallel threads).
static SCRIPT: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    SCRIPT.lock().unwrap_or_else(|e| e.into_inner())
}

use testutil::output_text as text;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The directory holding `minfs-bench` and `minfs` of this build; builds `minfs` (the CLI
/// of the minfs crate, not a target of this package) when a package-only test run has not.
fn bin_dir() -> PathBuf {
    testutil::bin_dir_with(env!("CARGO_BIN_EXE_minfs-bench"), &[("minfs", "minfs")])
}

/// Runs `cmd` to its end; its output and process id (compare.sh's `$$`, which names the
/// mount point, tracefs mount and tracefs instance it makes).
fn output_and_pid(cmd: &mut Command) -> (Output, u32) {
    let child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("bash runs");
    let pid = child.id();
    (child.wait_with_output().expect("bash runs"), pid)
}

fn compare(args: &[&str]) -> (Output, u32) {
    output_and_pid(
        Command::new("bash")
            .arg(repo().join("scripts/compare.sh"))
            .arg("--bin-dir")
            .arg(bin_dir())
            .args(args),
    )
}

/// What the compare.sh run of process `pid` left: lines of `losetup -a` and `findmnt` that
/// mention `needle` (its work directory) or its own mount points
/// (`/tmp/minfs-compare-{mnt,tracefs}.PID.*`), and its tracefs instance
/// (`minfs-compare-PID`). Only its own: another comparison may be running on the machine.
fn leftovers(needle: &str, pid: u32) -> Vec<String> {
    let mut found = Vec::new();
    let mnt = format!("minfs-compare-mnt.{pid}.");
    let tracefs = format!("minfs-compare-tracefs.{pid}.");
    for cmd in [vec!["losetup", "-a"], vec!["findmnt", "-rn"]] {
        let out = Command::new(cmd[0]).args(&cmd[1..]).output().unwrap();
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            if line.contains(needle) || line.contains(&mnt) || line.contains(&tracefs) {
                found.push(line.to_string());
            }
        }
    }
    if let Ok(dir) = fs::read_dir("/sys/kernel/tracing/instances") {
        for e in dir.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name == format!("minfs-compare-{pid}") {
                found.push(format!("tracefs instance {name}"));
            }
        }
    }
    found
}

/// `--targets all`: every target compare.sh knows (its default is five of them).
const TARGETS: [&str; 10] = [
    "minfs",
    "minfs-512",
    "minfs-fuse",
    "minfs-fuse-grow",
    "ext4",
    "ext4-prealloc",
    "ext4-defaults",
    "xfs",
    "xfs-prealloc",
    "raw",
];
/// The targets a run with `--targets all` makes here: without /dev/fuse compare.sh leaves the
/// minfs-fuse targets out (with a note).
fn expected_targets() -> Vec<&'static str> {
    let fuse = Path::new("/dev/fuse").exists();
    TARGETS
        .into_iter()
        .filter(|t| fuse || !t.starts_with("minfs-fuse"))
        .collect()
}

const WORKLOADS: [&str; 6] = [
    "seq-256k",
    "seq-4m",
    "rand-mixed-1m",
    "rand-oldest-1m",
    "durable-256k",
    "group-commit-256k",
];

#[test]
fn compare_script_runs_every_target_and_workload_and_cleans_up() {
    require_loop!();
    let _serial = one_at_a_time();
    let scratch = tempfile::tempdir_in(testutil::scratch_dir()).unwrap();
    let work = scratch.path().join("work");
    let out_dir = scratch.path().join("out");
    let (out, pid) = compare(&[
        "--device",
        "loop",
        "--targets",
        "all",
        "--scale",
        "0.001",
        "--runs",
        "1",
        "--work",
        work.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out));

    // Progress: elapsed and an estimate of the time left on each run's line but the last.
    let err = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("minfs-bench compare: [round 1 of 1] "))
        .collect();
    let total = lines.len();
    let targets = expected_targets();
    assert_eq!(total, targets.len() * WORKLOADS.len(), "{err}");
    assert!(
        lines[0].contains("] seq-256k ") && err.contains("; about "),
        "{err}"
    );
    let last = lines[total - 1];
    assert!(
        last.contains("(elapsed ") && !last.contains("left"),
        "{last}"
    );
    // The report's first screen at the end of the output: the device and its caveat, one
    // table row per workload, then where the details are.
    let stdout = String::from_utf8_lossy(&out.stdout);
    let summary = &stdout[stdout.find("The loop device · ").expect("a first screen")..];
    for w in WORKLOADS {
        assert!(summary.contains(&format!("\n| {w} | ")), "{summary}");
    }
    assert!(
        summary.contains("Not a spinning drive: what the targets cost in software"),
        "{summary}"
    );
    assert!(summary.contains("Details, tables and plots: "), "{summary}");

    let left = leftovers(work.to_str().unwrap(), pid);
    assert!(left.is_empty(), "left behind: {left:?}");
    let images: Vec<_> = fs::read_dir(&work).unwrap().flatten().collect();
    assert!(images.is_empty(), "image not removed: {images:?}");

    let report = fs::read_to_string(out_dir.join("report.md")).unwrap();
    let setup = fs::read_to_string(out_dir.join("SETUP.md")).unwrap();
    for t in &targets {
        assert!(report.contains(t), "report.md lacks target {t}");
        assert!(
            setup.contains(&format!("### {t}")),
            "SETUP.md lacks target {t}"
        );
    }
    for w in WORKLOADS {
        assert!(report.contains(w), "report.md lacks workload {w}");
        for t in &targets {
            let base = out_dir.join("runs").join(w).join(t);
            let json = fs::read_to_string(base.join("run-1.json"))
                .unwrap_or_else(|e| panic!("{w}/{t}: no run-1.json: {e}"));
            let v: serde_json::Value = serde_json::from_str(&json).unwrap();
            assert!(v["ops"].as_u64().unwrap() > 0, "{w}/{t}: no operations");
            let oplog = fs::read_to_string(base.join("run-1.oplog")).unwrap();
            let lines = oplog.lines().filter(|l| !l.starts_with('#')).count() as u64;
            assert_eq!(lines, v["ops"].as_u64().unwrap(), "{w}/{t}: op-log lines");
        }
    }
    for needle in [
        "mkfs.ext4 -F -q -O ^has_journal",
        "mkfs.xfs -f -q -K",
        "minfs mkfs",
    ] {
        assert!(setup.contains(needle), "SETUP.md lacks `{needle}`");
    }
    assert!(setup.contains("queue/rotational"));
    let segments = setup
        .lines()
        .find(|l| l.starts_with("| queue/max_segments"))
        .unwrap_or_else(|| panic!("SETUP.md lacks the queue's segment limits: {setup}"));
    assert!(
        segments
            .split('|')
            .nth(2)
            .is_some_and(|v| v.trim().starts_with(|c: char| c.is_ascii_digit())),
        "no max_segments value: {segments}"
    );
    assert!(
        setup.contains("| transparent huge pages |"),
        "SETUP.md lacks the THP setting: {setup}"
    );
    assert!(out_dir.join("plots/ratios.svg").exists());

    // Re-rendering changes nothing.
    let before = fs::read(out_dir.join("report.md")).unwrap();
    let again = Command::new(env!("CARGO_BIN_EXE_minfs-bench"))
        .arg("report")
        .arg(&out_dir)
        .output()
        .unwrap();
    assert!(again.status.success(), "{}", text(&again));
    assert_eq!(before, fs::read(out_dir.join("report.md")).unwrap());
}

/// `bin_dir()`, with the `hddsim` binary built there too.
fn bin_dir_with_hddsim() -> PathBuf {
    let dir = bin_dir();
    if !dir.join("hddsim").exists() {
        let status = Command::new(env!("CARGO"))
            .args(["build", "-q", "-p", "hddsim", "--bin", "hddsim"])
            .env("CARGO_TARGET_DIR", dir.parent().unwrap())
            .current_dir(repo())
            .status()
            .expect("cargo runs");
        assert!(status.success(), "building the hddsim binary failed");
    }
    dir
}

#[test]
fn compare_script_on_an_emulated_drive_cleans_up_and_checks_itself() {
    require_loop!();
    let _serial = one_at_a_time();
    if !Path::new("/dev/fuse").exists() {
        if std::env::var_os("MINFS_REQUIRE_LOOP").is_some_and(|v| v == "1") {
            panic!("MINFS_REQUIRE_LOOP=1 but /dev/fuse is missing");
        }
        testutil::print_skip(module_path!(), "/dev/fuse is missing");
        return;
    }
    let scratch = tempfile::tempdir_in(testutil::scratch_dir()).unwrap();
    let work = scratch.path().join("work");
    let out_dir = scratch.path().join("out");
    // Each block device's scheduler now (a loop device made later gets none).
    let schedulers_before: Vec<(String, String)> = fs::read_dir("/sys/class/block")
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let s = fs::read_to_string(e.path().join("queue/scheduler")).ok()?;
            Some((e.file_name().to_string_lossy().into_owned(), s))
        })
        .collect();
    // --drive-queue needs the mq-deadline scheduler (built into most kernels).
    let drive_queue = schedulers_before
        .iter()
        .any(|(_, s)| s.contains("mq-deadline"));
    if !drive_queue {
        testutil::print_skip(
            module_path!(),
            "no block device offers the mq-deadline scheduler: --drive-queue not checked",
        );
    }
    let (out, pid) = output_and_pid(
        Command::new("bash")
            .arg(repo().join("scripts/compare.sh"))
            .arg("--bin-dir")
            .arg(bin_dir_with_hddsim())
            .args(["--device", "emulated", "--workloads", "seq-256k"])
            .args(drive_queue.then_some("--drive-queue"))
            .args(["--runs", "1"])
            .args(["--targets", "raw,ext4-defaults", "--scale", "0.001"])
            .arg("--work")
            .arg(&work)
            .arg("--out")
            .arg(&out_dir),
    );
    assert!(out.status.success(), "{}", text(&out));
    let left = leftovers(work.to_str().unwrap(), pid);
    assert!(left.is_empty(), "left behind: {left:?}");
    let rest: Vec<_> = fs::read_dir(&work).unwrap().flatten().collect();
    assert!(
        rest.is_empty(),
        "image or mount point not removed: {rest:?}"
    );

    let setup = fs::read_to_string(out_dir.join("SETUP.md")).unwrap();
    assert!(
        setup.contains("hddsim emulate --profile st1000dm003") && setup.contains("hddsim 0."),
        "SETUP.md does not name the emulator: {setup}"
    );
    // --drive-queue: the loop device's queue as Linux sets a SATA HDD's.
    let sched = setup
        .lines()
        .find(|l| l.starts_with("| queue/scheduler |"))
        .unwrap();
    if drive_queue {
        assert!(setup.contains("| queue/rotational | 1 |"), "{setup}");
        assert!(sched.contains("[mq-deadline]"), "{sched}");
    } else {
        assert!(sched.contains("[none]"), "{sched}");
    }
    // Bug: the scheduler outlived the run (a loop device keeps it after losetup -d), and the
    // next comparison on that device ran with mq-deadline without asking. It is put back.
    let loop_dev = setup
        .lines()
        .find_map(|l| l.strip_prefix("| device | `/dev/"))
        .and_then(|l| l.split('`').next())
        .unwrap_or_else(|| panic!("no loop device in SETUP.md: {setup}"));
    let after = fs::read_to_string(format!("/sys/class/block/{loop_dev}/queue/scheduler")).unwrap();
    let before = schedulers_before
        .iter()
        .find(|(d, _)| d == loop_dev)
        .map_or("[none]", |(_, s)| s.as_str());
    let chosen = |s: &str| {
        s.split_whitespace()
            .find(|w| w.starts_with('['))
            .map(str::to_string)
    };
    assert_eq!(
        chosen(&after),
        chosen(before),
        "{loop_dev} left with {after}"
    );
    // The filesystem made once, on its template, and written onto the drive's image before
    // each run; then mounted, the drive flushed and its model reset.
    let defaults = setup.split("### ext4-defaults").nth(1).unwrap();
    let mkfs = defaults
        .lines()
        .find(|l| l.starts_with("mkfs.ext4"))
        .unwrap();
    assert_eq!(
        mkfs,
        "mkfs.ext4 -F -q -O ^has_journal TEMPLATE-ext4-defaults"
    );
    for needle in [
        "copy the non-zero blocks of TEMPLATE-ext4-defaults to IMAGE",
        "mount DEV MNT",
        "cat /proc/fs/ext4/DEV/mb_groups",
        "sync EMULATOR/disk && echo reset > EMULATOR/control",
    ] {
        assert!(
            defaults.contains(needle),
            "ext4-defaults lacks `{needle}`: {defaults}"
        );
    }
    // Every run ends with its data on the media, timed.
    assert!(
        defaults.contains("--scale 0.001 --final-sync"),
        "the runs end with no final sync: {defaults}"
    );
    // What the drive did in each run alone.
    let run_stats: serde_json::Value = serde_json::from_str(
        &fs::read_to_string(out_dir.join("runs/seq-256k/raw/run-1.emulator.json")).unwrap(),
    )
    .unwrap();
    assert!(
        run_stats["requests"]["writes"].as_u64().unwrap() > 0
            && run_stats["drive"]["destaged_sectors"].is_u64(),
        "{run_stats}"
    );
    let stats: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(out_dir.join("emulator-stats.json")).unwrap())
            .unwrap();
    assert!(stats["requests"]["writes"].as_u64().unwrap() > 0, "{stats}");
    let compare: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(out_dir.join("compare.json")).unwrap()).unwrap();
    // The options that make this device again (the report's command for what a budget left
    // undecided): the default, the whole drive (the device SETUP.md names), the queue.
    assert!(
        setup.contains("the profile's whole capacity, 1000204886016 bytes")
            && !setup.contains("| span of the emulated drive |"),
        "the default emulated drive is not the whole drive: {setup}"
    );
    let mut want = vec![serde_json::json!("--whole-drive")];
    if drive_queue {
        want.push(serde_json::json!("--drive-queue"));
    }
    if compare["trace"] != true {
        want.push(serde_json::json!("--no-trace"));
    }
    assert_eq!(compare["args"], serde_json::Value::Array(want), "{compare}");
    assert_eq!(compare["final_sync"], true, "{compare}");
    if compare["trace"] == true {
        let check = fs::read_to_string(out_dir.join("emulation-check.md")).unwrap();
        assert!(
            check.contains("| seq-256k | raw | 1 |")
                && check.contains("| seq-256k | ext4-defaults | 1 |"),
            "{check}"
        );
        // The summary line: two runs, their spread, and how many are off by over 2%.
        assert!(
            check.contains("\n2 runs: replayed / measured min ")
                && check.contains(" outside 0.98–1.02"),
            "{check}"
        );
        // Every run modelled under both write-hit rule sets and the 4Kn variant.
        for p in ["st1000dm003", "st1000dm003-merge", "st1000dm003-4kn"] {
            let model = out_dir.join(format!("runs/seq-256k/raw/run-1.model-{p}.json"));
            assert!(model.is_file(), "{} missing", model.display());
        }
    }
}

fn head(dev: &Path) -> Vec<u8> {
    let mut buf = vec![0; 1 << 20];
    fs::File::open(dev).unwrap().read_exact(&mut buf).unwrap();
    buf
}

#[test]
fn compare_script_refuses_a_device_with_a_filesystem_or_mounted() {
    require_loop!();
    let _serial = one_at_a_time();
    let scratch = tempfile::tempdir_in(testutil::scratch_dir()).unwrap();
    let out_dir = scratch.path().join("out");
    let lo = LoopDevice::new(512 << 20, 512).unwrap();
    mkfs_ext4(lo.path()).unwrap();
    let before = head(lo.path());
    let dev = lo.path().to_str().unwrap();
    let args = [
        "--device",
        dev,
        "--scale",
        "0.001",
        "--workloads",
        "seq-256k",
        "--out",
        out_dir.to_str().unwrap(),
    ];

    let (out, _) = compare(&args);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(dev) && err.contains("ext4"), "{}", text(&out));
    assert!(err.contains("--destroy-data"), "{}", text(&out));
    assert_eq!(before, head(lo.path()), "the refused device changed");
    assert!(!out_dir.exists(), "a refused run wrote results");

    // Mounted: refused even with --destroy-data.
    let m = Mount::new(lo.path()).unwrap();
    let mut destroy = args.to_vec();
    destroy.push("--destroy-data");
    let (out, _) = compare(&destroy);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("mounted") && err.contains(m.path().to_str().unwrap()),
        "{}",
        text(&out)
    );
    drop(m);
    // (Mounting and unmounting ext4 writes its superblock, so the bytes are not compared here.)
    assert!(!out_dir.exists(), "a refused run wrote results");
}

/// Starts compare.sh in its own process group (as a shell starts a foreground job), waits
/// until its first run has begun, sends `signal` — to the whole group with `group`, as Ctrl-C
/// does, else to the script alone, as `kill PID` does — and returns its exit status, stderr
/// and work directory's scratch (kept alive).
fn interrupt_compare(
    signal: &str,
    group: bool,
) -> (std::process::ExitStatus, String, tempfile::TempDir, u32) {
    use std::os::unix::process::CommandExt;
    use std::time::{Duration, Instant};
    let scratch = tempfile::tempdir_in(testutil::scratch_dir()).unwrap();
    let work = scratch.path().join("work");
    let out_dir = scratch.path().join("out");
    let log = scratch.path().join("stderr");
    // `env --default-signal=INT`: a test run started in the background of a non-interactive
    // shell inherits SIGINT ignored, and bash cannot trap a signal ignored on entry (nor can
    // its children receive it), so the Ctrl-C case would pass or fail with how cargo was
    // started.
    let mut child = Command::new("env")
        .args(["--default-signal=INT", "bash"])
        .arg(repo().join("scripts/compare.sh"))
        .arg("--bin-dir")
        .arg(bin_dir())
        .args(["--device", "loop", "--workloads", "seq-256k"])
        .args(["--targets", "minfs,ext4"])
        .args(["--scale", "0.05", "--runs", "3", "--no-trace"])
        .arg("--work")
        .arg(&work)
        .arg("--out")
        .arg(&out_dir)
        .stdout(std::process::Stdio::null())
        .stderr(fs::File::create(&log).unwrap())
        .process_group(0)
        .spawn()
        .expect("bash runs");
    let started = Instant::now();
    let first_run = out_dir.join("runs/seq-256k");
    loop {
        let begun = fs::read_dir(&first_run).is_ok_and(|targets| {
            targets
                .flatten()
                .any(|t| t.path().join("run-1.oplog").exists())
        });
        if begun {
            break;
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!(
                "compare ended ({status}) before a run began: {}",
                fs::read_to_string(&log).unwrap_or_default()
            );
        }
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "no run began within 300 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // `env` execs bash, which execs minfs-bench: the same process, compare.sh's `$$`.
    let own = child.id();
    let pid = own.to_string();
    let whom = if group { format!("-{pid}") } else { pid };
    let sent = Command::new("kill")
        .args([&format!("-{signal}"), "--", &whom])
        .status()
        .unwrap();
    assert!(sent.success(), "kill -{signal} {whom}");
    let status = child.wait().unwrap();
    (status, fs::read_to_string(&log).unwrap(), scratch, own)
}

/// Asserts what an interrupted compare.sh must leave: exit 130, its message, and no loop
/// device, mount, tracefs instance or image of its own; no partial run file; the report of
/// the rounds done.
fn assert_interrupted_and_clean(
    status: std::process::ExitStatus,
    stderr: &str,
    scratch: &Path,
    pid: u32,
) {
    let work = scratch.join("work");
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(
        stderr.contains("minfs-bench compare: interrupted; cleaned up"),
        "{stderr}"
    );
    let out_dir = scratch.join("out");
    assert!(
        out_dir.join("report.md").is_file(),
        "no report.md: {stderr}"
    );
    assert_no_empty_json(&out_dir);
    let left = leftovers(work.to_str().unwrap(), pid);
    assert!(left.is_empty(), "left behind: {left:?}\n{stderr}");
    let rest: Vec<_> = fs::read_dir(&work).unwrap().flatten().collect();
    assert!(
        rest.is_empty(),
        "image or mount point not removed: {rest:?}"
    );
}

/// No JSON file under `dir` is empty or does not parse, and no temporary one is left.
fn assert_no_empty_json(dir: &Path) {
    for entry in testutil::files_under(dir) {
        let name = entry.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            !name.ends_with(".partial") && !name.ends_with(".tmp"),
            "left: {}",
            entry.display()
        );
        if name.ends_with(".json") {
            let text = fs::read_to_string(&entry).unwrap();
            assert!(
                serde_json::from_str::<serde_json::Value>(&text).is_ok(),
                "{} is empty or partial: {text:?}",
                entry.display()
            );
        }
    }
}

#[test]
fn compare_script_cleans_up_after_ctrl_c() {
    require_loop!();
    let _serial = one_at_a_time();
    let (status, stderr, scratch, pid) = interrupt_compare("INT", true);
    assert_interrupted_and_clean(status, &stderr, scratch.path(), pid);
}

#[test]
fn compare_script_cleans_up_after_sigterm() {
    require_loop!();
    let _serial = one_at_a_time();
    let (status, stderr, scratch, pid) = interrupt_compare("TERM", false);
    assert_interrupted_and_clean(status, &stderr, scratch.path(), pid);
}

/// Skips (returns true) where /dev/fuse is missing (a failure under MINFS_REQUIRE_LOOP=1).
fn no_fuse() -> bool {
    if Path::new("/dev/fuse").exists() {
        return false;
    }
    if std::env::var_os("MINFS_REQUIRE_LOOP").is_some_and(|v| v == "1") {
        panic!("MINFS_REQUIRE_LOOP=1 but /dev/fuse is missing");
    }
    testutil::print_skip(module_path!(), "/dev/fuse is missing");
    true
}

/// compare.sh with this build's binaries (hddsim included).
fn compare_emulated(args: &[&str], work: &Path, out_dir: &Path) -> (Output, u32) {
    output_and_pid(
        Command::new("bash")
            .arg(repo().join("scripts/compare.sh"))
            .arg("--bin-dir")
            .arg(bin_dir_with_hddsim())
            .args(args)
            .arg("--work")
            .arg(work)
            .arg("--out")
            .arg(out_dir),
    )
}

#[test]
fn compare_script_on_the_whole_emulated_drive_runs_target_by_target_and_cleans_up() {
    require_loop!();
    let _serial = one_at_a_time();
    if no_fuse() {
        return;
    }
    let scratch = tempfile::tempdir_in(testutil::scratch_dir()).unwrap();
    let work = scratch.path().join("work");
    let out_dir = scratch.path().join("out");
    let (out, pid) = compare_emulated(
        &[
            "--device",
            "emulated",
            "--whole-drive",
            "--content",
            "zeros",
            "--order",
            "targets",
            "--workloads",
            "seq-256k,seq-4m",
            "--targets",
            "minfs,xfs@4096",
            "--scale",
            "0.001",
            "--runs",
            "1",
        ],
        &work,
        &out_dir,
    );
    assert!(out.status.success(), "{}", text(&out));
    let left = leftovers(work.to_str().unwrap(), pid);
    assert!(left.is_empty(), "left behind: {left:?}");
    let rest: Vec<_> = fs::read_dir(&work).unwrap().flatten().collect();
    assert!(
        rest.is_empty(),
        "image or mount point not removed: {rest:?}"
    );

    // Target by target: both workloads of minfs, then both of xfs@4096.
    let err = String::from_utf8_lossy(&out.stderr);
    let order: Vec<&str> = err
        .lines()
        .filter_map(|l| l.split_once("[run 1 of 1] ").map(|(_, r)| r))
        .map(|r| r.split(':').next().unwrap())
        .collect();
    assert_eq!(
        order,
        [
            "seq-256k minfs",
            "seq-4m minfs",
            "seq-256k xfs@4096",
            "seq-4m xfs@4096"
        ],
        "{err}"
    );
    for (t, bs) in [("minfs", 4096), ("xfs@4096", 4096)] {
        let run: serde_json::Value = serde_json::from_str(
            &fs::read_to_string(out_dir.join(format!("runs/seq-256k/{t}/run-1.json"))).unwrap(),
        )
        .unwrap();
        assert_eq!(run["block_size"], bs, "{t}: {run}");
        assert_eq!(run["content"], "zeros", "{t}: {run}");
    }
    let setup = fs::read_to_string(out_dir.join("SETUP.md")).unwrap();
    let xfs = setup.split("### xfs@4096").nth(1).unwrap();
    for needle in [
        "mkfs.xfs -f -q -K -s size=4096 TEMPLATE-xfs",
        "copy the non-zero blocks of TEMPLATE-xfs to IMAGE",
        "fallocate --punch-hole --offset 0 --length 1000204886016 IMAGE",
        "--block-size 4096 --content zeros",
    ] {
        assert!(
            xfs.contains(needle),
            "SETUP.md's xfs@4096 lacks `{needle}`: {xfs}"
        );
    }
    assert!(setup.contains("--create-sparse") && setup.contains("1000204886016 bytes"));
    let compare: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(out_dir.join("compare.json")).unwrap()).unwrap();
    assert_eq!(compare["order"], "targets");
    assert_eq!(compare["content"], "zeros");
    let mut want = serde_json::json!(["--whole-drive", "--content=zeros"]);
    if compare["trace"] != true {
        want.as_array_mut().unwrap().push("--no-trace".into());
    }
    assert_eq!(compare["args"], want, "{compare}");
    let stats: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(out_dir.join("emulator-stats.json")).unwrap())
            .unwrap();
    assert_eq!(stats["size_bytes"], 1_000_204_886_016u64, "{stats}");
    // Zeros are holes: the runs' lumps took no host space.
    assert!(
        stats["backing"]["host_allocated_bytes"].as_u64().unwrap() < 256 << 20,
        "{stats}"
    );
    let report = fs::read_to_string(out_dir.join("report.md")).unwrap();
    assert!(report.contains("xfs@4096"), "{report}");
}

/// A tmpfs of `size` mounted on a fresh directory under `dir`, unmounted when dropped.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn new(dir: &Path, size: &str) -> Tmpfs {
        let p = dir.join("small");
        fs::create_dir_all(&p).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&p)
            .status()
            .unwrap();
        assert!(ok.success(), "mounting a tmpfs on {}", p.display());
        Tmpfs(p)
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn compare_script_refuses_a_whole_drive_without_host_space_naming_both_sizes() {
    require_loop!();
    let _serial = one_at_a_time();
    if no_fuse() {
        return;
    }
    let scratch = tempfile::tempdir_in(testutil::scratch_dir()).unwrap();
    let small = Tmpfs::new(scratch.path(), "64m");
    let out_dir = scratch.path().join("out");
    let (out, _) = compare_emulated(
        &[
            "--device",
            "emulated",
            "--whole-drive",
            "--workloads",
            "seq-256k",
            "--targets",
            "minfs",
            "--scale",
            "0.001",
        ],
        &small.0,
        &out_dir,
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    let avail = Command::new("df")
        .args(["-B1", "--output=avail"])
        .arg(&small.0)
        .output()
        .unwrap();
    let avail = String::from_utf8_lossy(&avail.stdout)
        .lines()
        .last()
        .unwrap()
        .trim()
        .to_string();
    assert!(
        err.contains("refusing --whole-drive")
            && err.contains(&format!("{avail} bytes free"))
            && err.contains("need about"),
        "{err}"
    );
    assert!(!out_dir.exists(), "a refused run wrote results");
    let rest: Vec<_> = fs::read_dir(&small.0).unwrap().flatten().collect();
    assert!(rest.is_empty(), "left in the work directory: {rest:?}");
}

#[test]
fn compare_script_rejects_bad_whole_drive_target_and_order_options() {
    for (args, want) in [
        (
            vec!["--device", "loop", "--whole-drive"],
            "--whole-drive needs --device emulated",
        ),
        (
            vec!["--device", "loop", "--drive-queue"],
            "--drive-queue needs --device emulated",
        ),
        (vec!["--order", "targets"], "--order targets needs --runs N"),
        (vec!["--runs", "3", "--budget", "5m"], "cannot be used with"),
        (vec!["--budget", "5 minutes"], "--budget '5 minutes'"),
        (vec!["--scale", "0.1,nope=0.2"], "workload 'nope'"),
        (vec!["--targets", "ext4@1024"], "after @ is 512 or 4096"),
        (vec!["--targets", "zfs@4096"], "unknown target 'zfs'"),
        (vec!["--targets", "xfs,xfs"], "listed twice"),
        (vec!["--order", "random"], "--order 'random'"),
        (vec!["--content", "ones"], "--content 'ones'"),
        (
            vec![
                "--device",
                "emulated",
                "--whole-drive",
                "--image-size",
                "8G",
            ],
            "exclude each other",
        ),
    ] {
        let (out, _) = compare(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

/// Regression: a long comparison stopped when mkfs.xfs found the loop device busy for a moment
/// (another process held it open exclusively). `minfs-bench compare` runs mkfs.ext4 and
/// mkfs.xfs (and mount, wipefs, minfs mkfs) through `devguard::retry_busy`, which runs them
/// again until the device is free.
#[test]
fn mkfs_on_a_momentarily_busy_device_is_retried() {
    use std::os::unix::fs::OpenOptionsExt;
    require_loop!();
    for (tool, args) in [("mkfs.xfs", ["-f", "-q"]), ("mkfs.ext4", ["-F", "-q"])] {
        if testutil::which(tool).is_none() {
            testutil::print_skip(module_path!(), &format!("{tool} is not installed"));
            continue;
        }
        let lo = LoopDevice::new(512 << 20, 512).unwrap();
        let mkfs = || {
            let mut cmd = Command::new(tool);
            cmd.args(args).arg(lo.path());
            cmd
        };
        // Held exclusively (O_EXCL on a block device) for 3 s, as a probing process would.
        let held = fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_EXCL)
            .open(lo.path())
            .unwrap();
        let plain = mkfs().output().unwrap();
        assert!(!plain.status.success(), "{tool} ran on a held device");
        let release = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_secs(3));
            drop(held);
        });
        let mut log = Vec::new();
        let retried = testutil::retry_busy(&mut mkfs(), "test", &mut log);
        release.join().unwrap();
        let log = String::from_utf8_lossy(&log);
        assert!(retried.is_ok(), "{tool}: {retried:?}\n{log}");
        assert!(log.contains("device busy, retrying (1)"), "{tool}: {log}");
    }
}

#[test]
fn compare_script_refuses_an_existing_out_before_making_anything() {
    let scratch = tempfile::tempdir_in(testutil::scratch_dir()).unwrap();
    let work = scratch.path().join("work");
    let out_dir = scratch.path().join("out");
    fs::create_dir_all(&out_dir).unwrap();
    fs::write(out_dir.join("compare.json"), "{}").unwrap();
    let (out, _) = compare(&[
        "--work",
        work.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(out_dir.to_str().unwrap()) && err.contains("not empty"),
        "{err}"
    );
    assert!(!err.contains("zero-filling"), "{err}");
    assert!(!work.exists(), "the work directory (and an image) was made");
    // A file is refused too.
    let file = scratch.path().join("file");
    fs::write(&file, "x").unwrap();
    let (out, _) = compare(&["--out", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
}

#[test]
fn compare_script_without_out_writes_where_git_ignores_it() {
    require_loop!();
    let _serial = one_at_a_time();
    let scratch = tempfile::tempdir_in(testutil::scratch_dir()).unwrap();
    let work = scratch.path().join("work");
    let (out, _) = compare(&[
        "--workloads",
        "seq-256k",
        "--targets",
        "raw",
        "--scale",
        "0.001",
        "--runs",
        "1",
        "--no-trace",
        "--work",
        work.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    let dir = err
        .lines()
        .find_map(|l| l.split(", results in ").nth(1))
        .map(PathBuf::from)
        .unwrap_or_else(|| panic!("no results directory named in {err}"));
    let local = repo().join("results/local");
    let inside = dir.starts_with(&local);
    let report = dir.join("report.md").is_file();
    // Whether git (where this is a checkout) ignores it, before it is removed.
    let ignored = Command::new("git")
        .arg("-C")
        .arg(repo())
        .args(["check-ignore", "-q"])
        .arg(&dir)
        .status()
        .map(|s| s.code());
    if inside {
        fs::remove_dir_all(&dir).unwrap();
        // (results/local itself too, when nothing else is in it.)
        let _ = fs::remove_dir(&local);
    }
    assert!(out.status.success(), "{}", text(&out));
    assert!(inside, "{} is not under {}", dir.display(), local.display());
    assert!(report, "no report.md in {}", dir.display());
    if repo().join(".git").exists() {
        assert_eq!(
            ignored.ok(),
            Some(Some(0)),
            "git does not ignore {}",
            dir.display()
        );
    }
}
