//! `minfs-bench compare` itself: its cleanup after SIGINT and SIGTERM (root and loop devices),
//! the default path end to end (the emulated drive and a time budget, at a tiny scale), the
//! fallback to a loop device without hddsim, and `run --json` never leaving a partial report.

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use testutil::{output_text as text, require_loop};

/// The runs of this file are serialized (each checks what it left behind).
static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE.lock().unwrap_or_else(|e| e.into_inner())
}

fn bench() -> &'static str {
    env!("CARGO_BIN_EXE_minfs-bench")
}

/// This build's binaries, minfs and hddsim included.
fn bin_dir() -> PathBuf {
    testutil::bin_dir_with(bench(), &[("minfs", "minfs"), ("hddsim", "hddsim")])
}

/// Lines of `losetup -j IMAGE`-like and `findmnt` output that belong to the compare process
/// `pid` or its work directory.
fn leftovers(work: &Path, pid: u32) -> Vec<String> {
    let mut found = Vec::new();
    let needle = work.to_string_lossy().into_owned();
    let mnt = format!("minfs-compare-mnt.{pid}.");
    let tracefs = format!("minfs-compare-tracefs.{pid}.");
    for cmd in [vec!["losetup", "-a"], vec!["findmnt", "-rn"]] {
        let out = Command::new(cmd[0]).args(&cmd[1..]).output().unwrap();
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            if line.contains(&needle) || line.contains(&mnt) || line.contains(&tracefs) {
                found.push(line.to_string());
            }
        }
    }
    let mounts = fs::read_dir("/tmp").unwrap();
    for e in mounts.flatten() {
        let n = e.file_name().to_string_lossy().into_owned();
        if n.starts_with(&mnt) || n.starts_with(&tracefs) {
            found.push(format!("directory /tmp/{n}"));
        }
    }
    if let Ok(dir) = fs::read_dir("/sys/kernel/tracing/instances") {
        for e in dir.flatten() {
            if e.file_name().to_string_lossy() == format!("minfs-compare-{pid}") {
                found.push("its tracefs instance".into());
            }
        }
    }
    // Its mounts are in a mount namespace of its own, which findmnt here does not show: a
    // server it left (the emulator, `minfs mount`) would still be running with the work
    // directory or its mount point on its command line.
    for p in fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmd) = fs::read(p.path().join("cmdline")) else {
            continue;
        };
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        if cmd.contains(&needle) || cmd.contains(&mnt) {
            found.push(format!(
                "process {}: {cmd}",
                p.file_name().to_string_lossy()
            ));
        }
    }
    found
}

/// Whether /dev/fuse is missing (the emulated drive needs it): then the skip is printed, or,
/// under MINFS_REQUIRE_LOOP=1, the test fails.
fn fuse_missing() -> bool {
    if Path::new("/dev/fuse").exists() {
        return false;
    }
    if std::env::var_os("MINFS_REQUIRE_LOOP").is_some_and(|v| v == "1") {
        panic!("MINFS_REQUIRE_LOOP=1 but /dev/fuse is missing");
    }
    testutil::print_skip(module_path!(), "/dev/fuse is missing");
    true
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap()
}

/// Starts `minfs-bench compare` on a loop device in its own process group, waits until the
/// first run of round 2 has finished (its progress line on stderr: round 1 is whole), sends
/// `signal` (to the group, as Ctrl-C does, with `group`), and checks what it left.
fn interrupt_after_a_round(signal: &str, group: bool) {
    use std::os::unix::process::CommandExt;
    let scratch = tempfile::tempdir_in(testutil::scratch_dir()).unwrap();
    let work = scratch.path().join("work");
    let out_dir = scratch.path().join("out");
    let mut child = Command::new(bench())
        .arg("compare")
        .arg("--bin-dir")
        .arg(bin_dir())
        .args([
            "--device",
            "loop",
            "--scale",
            "0.002",
            "--workloads",
            "seq-256k",
        ])
        .args(["--targets", "minfs,ext4", "--runs", "5", "--no-trace"])
        .arg("--work")
        .arg(&work)
        .arg("--out")
        .arg(&out_dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut log = String::new();
    let started = Instant::now();
    loop {
        let mut line = String::new();
        let n = err.read_line(&mut line).unwrap();
        log.push_str(&line);
        assert!(n > 0, "compare ended before round 2 began: {log}");
        if line.starts_with("minfs-bench compare: [round 2 of 5] ") {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "no round 2 within 300 s: {log}"
        );
    }
    let whom = if group {
        format!("-{pid}")
    } else {
        pid.to_string()
    };
    let sent = Command::new("kill")
        .args([&format!("-{signal}"), "--", &whom])
        .status()
        .unwrap();
    assert!(sent.success());
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
    log.push_str(&rest);
    let status = child.wait().unwrap();

    assert_eq!(status.code(), Some(130), "{log}");
    assert!(
        log.contains("minfs-bench compare: interrupted; cleaned up"),
        "{log}"
    );
    let left = leftovers(&work, pid);
    assert!(left.is_empty(), "left behind: {left:?}\n{log}");
    let images: Vec<_> = fs::read_dir(&work).unwrap().flatten().collect();
    assert!(images.is_empty(), "image not removed: {images:?}");
    // No partial or empty file; round 2, cut short, dropped whole.
    for f in testutil::files_under(&out_dir) {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        assert!(!name.ends_with(".partial"), "left: {}", f.display());
        assert!(
            !name.starts_with("run-2."),
            "round 2 was cut short: {}",
            f.display()
        );
        if name.ends_with(".json") {
            assert!(
                fs::metadata(&f).unwrap().len() > 0,
                "empty: {}",
                f.display()
            );
        }
    }
    for t in ["minfs", "ext4"] {
        assert!(
            out_dir
                .join(format!("runs/seq-256k/{t}/run-1.json"))
                .is_file(),
            "{t}: round 1 lost"
        );
    }
    // The report of the rounds done, titled with their count.
    assert_eq!(json(&out_dir.join("compare.json"))["runs"], 1);
    let report = fs::read_to_string(out_dir.join("report.md")).unwrap();
    assert!(report.contains(", 1 run"), "{report}");
}

#[test]
fn compare_cleans_up_and_reports_after_sigint() {
    require_loop!();
    let _one = one_at_a_time();
    interrupt_after_a_round("INT", true);
}

#[test]
fn compare_cleans_up_and_reports_after_sigterm() {
    require_loop!();
    let _one = one_at_a_time();
    interrupt_after_a_round("TERM", false);
}

/// The default path as CI runs it: the emulated drive, a time budget, a tiny scale.
#[test]
fn compare_by_default_runs_on_the_emulated_drive_within_a_budget() {
    require_loop!();
    let _one = one_at_a_time();
    if fuse_missing() {
        return;
    }
    let scratch = tempfile::tempdir_in(testutil::scratch_dir()).unwrap();
    let work = scratch.path().join("work");
    let out_dir = scratch.path().join("out");
    let child = Command::new(bench())
        .arg("compare")
        .arg("--bin-dir")
        .arg(bin_dir())
        .args([
            "--scale",
            "0.002",
            "--budget",
            "20s",
            "--workloads",
            "seq-256k",
        ])
        .args(["--targets", "minfs,ext4", "--no-trace"])
        .arg("--work")
        .arg(&work)
        .arg("--out")
        .arg(&out_dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    let meta = json(&out_dir.join("compare.json"));
    assert_eq!(meta["stopping"], "budget", "{meta}");
    assert_eq!(meta["budget_s"], 20, "{meta}");
    let rounds = meta["runs"].as_u64().unwrap();
    assert!(rounds >= 1, "{meta}");
    assert!(
        meta["device"].as_str().unwrap().contains("hddsim emulate"),
        "{meta}"
    );
    // Each cell's time per run (what "To decide the rest" is sized by): preparation included,
    // so never less than the run's own elapsed time.
    for t in ["minfs", "ext4"] {
        let secs = meta["seconds_per_run"]["seq-256k"][t]
            .as_f64()
            .unwrap_or_else(|| panic!("no seconds_per_run for {t}: {meta}"));
        let run = json(&out_dir.join(format!("runs/seq-256k/{t}/run-1.json")));
        let own = run["total_elapsed_ns"].as_f64().unwrap() / 1e9;
        assert!(secs > own, "{t}: {secs} s per run, the run alone {own} s");
    }
    // Progress: the round, what is undecided, and a time left within the budget.
    let first = err
        .lines()
        .find(|l| l.starts_with("minfs-bench compare: [round 1] seq-256k "))
        .unwrap_or_else(|| panic!("no progress line: {err}"));
    assert!(first.contains("undecided 1 of 1"), "{first}");
    for l in err.lines().filter(|l| l.contains("left)")) {
        let left = l.rsplit("about ").next().unwrap();
        assert!(
            left.ends_with("s left)") && !left.contains('h') && !left.contains('m'),
            "more than 20 s left of a 20 s budget: {l}"
        );
    }
    // "How the runs were made" gives the count as a maximum: comparisons stop once decided.
    let report = fs::read_to_string(out_dir.join("report.md")).unwrap();
    let facts = report
        .lines()
        .find(|l| l.contains("per workload and target (each comparison stopped once decided"))
        .unwrap_or_default();
    assert!(
        facts.contains(&format!("up to {rounds} round"))
            && facts.contains("stopped once decided, within a 20"),
        "{facts}"
    );
    let setup = fs::read_to_string(out_dir.join("SETUP.md")).unwrap();
    assert!(
        setup.contains("| stopping | a time budget of 20s"),
        "{setup}"
    );
    // By default the whole drive: no span row.
    assert!(
        setup.contains("the profile's whole capacity")
            && !setup.contains("| span of the emulated drive |"),
        "{setup}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    // The report's first screen, printed at the end.
    assert!(
        stdout.contains("The emulated drive (`hddsim emulate --profile st1000dm003`)")
            && stdout.contains("comparisons decided"),
        "{stdout}"
    );
    let left = leftovers(&work, pid);
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// Without hddsim (or /dev/fuse) the default device is a loop device, and that is said first.
#[test]
fn without_hddsim_the_default_falls_back_to_a_loop_device_and_says_so_first() {
    let scratch = tempfile::tempdir().unwrap();
    let bins = scratch.path().join("bin");
    fs::create_dir(&bins).unwrap();
    std::os::unix::fs::symlink(bench(), bins.join("minfs-bench")).unwrap();
    // An --out that is refused: nothing is made.
    let out_dir = scratch.path().join("out");
    fs::create_dir(&out_dir).unwrap();
    fs::write(out_dir.join("x"), "").unwrap();
    let out = Command::new(bench())
        .arg("compare")
        .arg("--bin-dir")
        .arg(&bins)
        .arg("--out")
        .arg(&out_dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    let first = err.lines().next().unwrap_or_default();
    assert!(
        first.contains("using a loop device") && first.contains("no hddsim binary"),
        "{err}"
    );
    assert!(err.contains("not empty"), "{err}");
}

/// Regression: a run killed while it ran left a 0-byte run-K.json (the file was created
/// before the run), which `minfs-bench report` then refused. The report is written to a
/// temporary name and renamed when whole.
#[test]
fn a_killed_run_leaves_no_json() {
    let scratch = tempfile::tempdir().unwrap();
    let json_path = scratch.path().join("run-1.json");
    // 300,000 small puts in memory: some seconds of work.
    let workload = scratch.path().join("many.wl");
    fs::write(
        &workload,
        "Command {\n  300000.times {\n    New(1K);\n  };\n}\n",
    )
    .unwrap();
    let mut child = Command::new(bench())
        .args(["run", "--backend", "memory", "--no-progress"])
        .arg("--workload")
        .arg(&workload)
        .arg("--json")
        .arg(&json_path)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let partial = scratch.path().join(".run-1.json.partial");
    let started = Instant::now();
    while !partial.exists() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no {partial:?}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        child.try_wait().unwrap().is_none(),
        "the run ended before it was killed; give it more work"
    );
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(!json_path.exists(), "a killed run left {json_path:?}");
}

/// Regression: without --work, the emulated drive's backing image was made in
/// /var/tmp/minfs-compare while its emulator's directory went to /dev/shm/minfs-compare (the
/// image path was taken before the work directory was chosen), so the host's disk stood between
/// the emulator and its data. The image and the emulator's mount must lie in the one directory
/// chosen (SETUP.md's `hddsim emulate --backing IMAGE MNT`).
#[test]
fn the_emulated_drives_image_lies_in_the_work_dir_it_chose() {
    require_loop!();
    let _one = one_at_a_time();
    if fuse_missing() {
        return;
    }
    let scratch = tempfile::tempdir_in(testutil::scratch_dir()).unwrap();
    let out_dir = scratch.path().join("out");
    let out = Command::new(bench())
        .arg("compare")
        .arg("--bin-dir")
        .arg(bin_dir())
        .args(["--scale", "0.002", "--runs", "1", "--workloads", "seq-256k"])
        .args(["--targets", "minfs", "--no-trace"])
        .arg("--out")
        .arg(&out_dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let setup = fs::read_to_string(out_dir.join("SETUP.md")).unwrap();
    let words: Vec<&str> = setup
        .split(|c: char| c.is_whitespace() || c == '`')
        .collect();
    let at = words
        .iter()
        .position(|w| *w == "--backing")
        .unwrap_or_else(|| panic!("no --backing in SETUP.md: {setup}"));
    let image = Path::new(words[at + 1]);
    let mnt = Path::new(
        words[at + 2..]
            .iter()
            .find(|w| w.starts_with('/'))
            .unwrap_or_else(|| panic!("no mount point after --backing: {setup}")),
    );
    assert_eq!(image.parent(), mnt.parent(), "{setup}");
    let shm = devguard::shm_is_tmpfs();
    let room = Command::new("df")
        .args(["-B1", "--output=avail", "/dev/shm"])
        .output()
        .ok()
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .nth(1)?
                .trim()
                .parse::<u64>()
                .ok()
        })
        .is_some_and(|a| a > 2 << 30);
    if shm && room {
        // /dev/shm with room (a test machine's): the default puts it there.
        assert!(image.starts_with("/dev/shm/minfs-compare"), "{setup}");
    }
}
