//! `minfs-bench run`: every shipped workload verified on memory, minfs, FileNvm files and (as
//! root) a bare loop device; the text, JSON and op-log outputs; the failures (a full
//! storage, bad backend specs, existing files, a corrupted lump).

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use bencher_workloads::run::oplog::monotonic_ns;
use bencher_workloads::run::{content, execute, ExecOptions, Hooks, RunError};
use bencher_workloads::Op;
use cannyls::nvm::MemoryNvm;
use cannyls::storage::StorageBuilder;
use cannyls_adapter::MinfsNvm;
use minfs::FormatOptions;
use serde_json::Value;

const MIB: u64 = 1 << 20;

fn workloads_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads")
}

/// Every shipped workload with a scale that keeps its run well under a second in a debug
/// build while still running each of its sections.
fn shipped() -> Vec<(PathBuf, &'static str)> {
    let mut v: Vec<(PathBuf, &'static str)> = fs::read_dir(workloads_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "wl"))
        .map(|p| {
            let scale = match p.file_stem().unwrap().to_str().unwrap() {
                "group-commit-256k" => "0.05",
                "small-embedded" => "0.02",
                "delete-range-sweep" => "0.01",
                "durable-256k" | "churn-256k" => "0.005",
                "churn-sync-256k" => "0.02",
                _ => "0.002",
            };
            (p, scale)
        })
        .collect();
    v.sort();
    assert_eq!(v.len(), 11, "{v:?}");
    v
}

fn name(p: &Path) -> String {
    p.file_stem().unwrap().to_string_lossy().into_owned()
}

fn bench() -> Command {
    let mut c = Command::cargo_bin("minfs-bench").unwrap();
    c.env_remove("RUST_BACKTRACE");
    c
}

fn scratch() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("minfs-bench-")
        .tempdir_in(testutil::scratch_dir())
        .unwrap()
}

fn minfs_image(dir: &Path, size: u64) -> PathBuf {
    let img = dir.join("minfs.img");
    minfs::mkfs::mkfs(
        &img,
        &FormatOptions {
            size: Some(size),
            ..Default::default()
        },
        false,
    )
    .unwrap();
    img
}

fn write_workload(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    fs::write(&p, text).unwrap();
    p
}

/// Runs `run` with `args` plus `--json` into `dir`; asserts success; returns the report and
/// the text printed.
fn run_ok(dir: &Path, args: &[&str]) -> (Value, String) {
    let json = dir.join("report.json");
    let out = bench()
        .arg("run")
        .args(args)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "run {args:?} failed ({:?}):\n{stdout}\n{stderr}",
        out.status.code()
    );
    let v: Value = serde_json::from_slice(&fs::read(&json).unwrap()).unwrap();
    (v, stdout)
}

/// Runs `run` with `args`, expecting exit code `code`; returns stderr.
fn run_fails(args: &[&str], code: i32) -> String {
    let out = bench().arg("run").args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(
        out.status.code(),
        Some(code),
        "run {args:?}: stdout {}\nstderr {stderr}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    stderr
}

fn check_total(workload: &Path, scale: &str) -> u64 {
    let out = bench()
        .args(["check", "--json", "--scale", scale])
        .arg(workload)
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["total_operations"].as_u64().unwrap()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn every_shipped_workload_verifies_on_memory() {
    let dir = scratch();
    for (w, scale) in shipped() {
        let (v, text) = run_ok(
            dir.path(),
            &[
                "--workload",
                s(&w),
                "--scale",
                scale,
                "--backend",
                "memory",
                "--verify",
            ],
        );
        assert_eq!(v["ops"], check_total(&w, scale), "{}", name(&w));
        assert_eq!(v["verify"], true);
        assert_eq!(v["overall"]["count"], v["ops"]);
        assert!(text.contains("[Overall "), "{text}");
        // Cannyls' default journal share, except where embedded lumps live in the journal.
        let ratio = v["journal_ratio"].as_f64().unwrap();
        if name(&w) == "small-embedded" {
            assert!(ratio > 0.01, "{ratio}");
        } else {
            assert_eq!(ratio, 0.01, "{}", name(&w));
        }
    }
}

#[test]
fn every_shipped_workload_verifies_on_minfs() {
    let dir = scratch();
    let img = minfs_image(dir.path(), 768 * MIB);
    for (w, scale) in shipped() {
        // One minfs file per workload, each created with its planned capacity.
        let spec = format!("minfs:{}:{}", img.display(), name(&w));
        let (v, _) = run_ok(
            dir.path(),
            &[
                "--workload",
                s(&w),
                "--scale",
                scale,
                "--backend",
                &spec,
                "--verify",
            ],
        );
        assert_eq!(v["ops"], check_total(&w, scale), "{}", name(&w));
        assert_eq!(v["backend"], spec);
    }
    let fs = minfs::Filesystem::open(&img, minfs::OpenMode::ReadOnly).unwrap();
    assert_eq!(fs.list().len(), shipped().len());
    drop(fs);
    assert!(minfs::fsck::check(&img).unwrap().is_clean());
}

#[test]
fn file_and_file_prealloc_backends() {
    let dir = scratch();
    let w = workloads_dir().join("rand-oldest-1m.wl");
    let path = dir.path().join("sub/plain.lusf");
    fs::create_dir(dir.path().join("sub")).unwrap();
    let (v, _) = run_ok(
        dir.path(),
        &[
            "--workload",
            s(&w),
            "--scale",
            "0.002",
            "--backend",
            &format!("file:{}", path.display()),
            "--verify",
        ],
    );
    assert_eq!(v["ops"], 50);
    // FileNvm grew the file as Cannyls wrote into it.
    let capacity = v["capacity"].as_u64().unwrap();
    let len = fs::metadata(&path).unwrap().len();
    assert!(len > 0 && len <= capacity, "{len} of {capacity}");

    let pre = dir.path().join("pre.lusf");
    let (v, _) = run_ok(
        dir.path(),
        &[
            "--workload",
            s(&w),
            "--scale",
            "0.002",
            "--backend",
            &format!("file-prealloc:{}", pre.display()),
            "--verify",
        ],
    );
    let capacity = v["capacity"].as_u64().unwrap();
    let meta = fs::metadata(&pre).unwrap();
    // Every block of the capacity was allocated up front, though the size only grew with
    // the writes.
    assert!(meta.blocks() * 512 >= capacity, "{} blocks", meta.blocks());
    assert!(meta.len() <= capacity);

    // A second run reuses the storage file at its size (and says so).
    let out = bench()
        .args(["run", "--workload", s(&w), "--scale", "0.002", "--verify"])
        .arg("--backend")
        .arg(format!("file:{}", path.display()))
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("reusing the Cannyls storage file"));
}

#[test]
fn block_size_4096_on_every_kind_of_memory() {
    let dir = scratch();
    let img = minfs_image(dir.path(), 128 * MIB);
    let w = workloads_dir().join("churn-256k.wl");
    for spec in [
        "memory".to_string(),
        format!("minfs:{}", img.display()),
        format!("file:{}", dir.path().join("bs.lusf").display()),
    ] {
        let (v, _) = run_ok(
            dir.path(),
            &[
                "--workload",
                s(&w),
                "--scale",
                "0.002",
                "--backend",
                &spec,
                "--block-size",
                "4096",
                "--verify",
            ],
        );
        assert_eq!(v["block_size"], 4096, "{spec}");
        assert_eq!(v["journal_region_bytes"].as_u64().unwrap() % 4096, 0);
        assert_eq!(v["data_region_bytes"].as_u64().unwrap() % 4096, 0);
    }
}

/// Without `--block-size`, `minfs:` runs at MinfsNvm's default 4096 and the FileNvm and memory
/// backends at 512; a minfs storage file left at 512 is formatted anew at the default.
#[test]
fn minfs_backends_default_to_4096_the_others_to_512() {
    let dir = scratch();
    let img = minfs_image(dir.path(), 128 * MIB);
    let w = workloads_dir().join("churn-256k.wl");
    let minfs = format!("minfs:{}", img.display());
    let mut peaks = Vec::new();
    for (spec, block_size, want) in [
        (minfs.clone(), Some("512"), 512),
        (minfs, None, 4096),
        ("memory".to_string(), None, 512),
        (
            format!("file:{}", dir.path().join("d.lusf").display()),
            None,
            512,
        ),
    ] {
        let mut args = vec!["--workload", s(&w), "--scale", "0.002", "--backend", &spec];
        if let Some(b) = block_size {
            args.extend(["--block-size", b]);
        }
        let (v, _) = run_ok(dir.path(), &args);
        assert_eq!(v["block_size"], want, "{spec} {block_size:?}");
        assert_eq!(v["data_region_bytes"].as_u64().unwrap() % want, 0);
        peaks.push(v["data_usage_peak_bytes"].as_u64().unwrap());
    }
    // The same lumps take more room at 4096 (each rounds up to 4 KiB) than at 512, and every
    // run at 512 uses the same.
    assert!(peaks[1] > peaks[0], "{peaks:?}");
    assert!(peaks[0] % 512 == 0 && peaks[1] % 4096 == 0, "{peaks:?}");
    assert_eq!((peaks[2], peaks[3]), (peaks[0], peaks[0]), "{peaks:?}");
}

const EVERY_KIND: &str = "Seed: 1;
Command {
  20.times { New(4K); };
  5.times { Embed(100); };
  Get; Get(0, 10); OverWrite(8K); Delete; DeleteRange(0, 20); Sync;
}
";

#[test]
fn json_report_has_the_documented_fields() {
    let dir = scratch();
    let w = write_workload(dir.path(), "every.wl", EVERY_KIND);
    let (v, text) = run_ok(
        dir.path(),
        &[
            "--workload",
            s(&w),
            "--backend",
            "memory",
            "--verify",
            "--sync-every",
            "10",
        ],
    );
    for field in [
        "workload",
        "backend",
        "capacity",
        "block_size",
        "journal_ratio",
        "journal_region_bytes",
        "data_region_bytes",
        "seed",
        "scale",
        "sync_every",
        "verify",
        "ops",
        "put_bytes",
        "embed_bytes",
        "get_bytes",
        "total_elapsed_ns",
        "wall_ns",
        "bw_bytes_per_sec",
        "wall_bw_bytes_per_sec",
        "kinds",
        "overall",
    ] {
        assert!(v.get(field).is_some(), "no {field} in {v}");
    }
    assert_eq!(v["workload"], s(&w));
    assert_eq!(v["backend"], "memory");
    assert_eq!(
        (v["seed"].as_u64(), v["scale"].as_f64()),
        (Some(1), Some(1.0))
    );
    assert_eq!(v["sync_every"], 10);
    assert_eq!(v["block_size"], 512);
    // A tiny workload: the journal's fixed needs are more than 1% of its capacity.
    let ratio = v["journal_ratio"].as_f64().unwrap();
    assert!(ratio > 0.01 && ratio < 1.0, "{ratio}");
    // 20 + 5 puts, 2 gets, 1 overwrite, 1 delete, 1 delete_range, 1 sync + 2 inserted.
    assert_eq!(v["ops"], 33);
    assert_eq!(v["put_bytes"], 20 * 4096 + 8192);
    assert_eq!(v["embed_bytes"], 500);

    let kinds = v["kinds"].as_array().unwrap();
    let names: Vec<&str> = kinds.iter().map(|k| k["kind"].as_str().unwrap()).collect();
    assert_eq!(names[..3], ["Put(4096)", "Put(8192)", "Embed(100)"]);
    assert!(names[3].starts_with("Get("), "{names:?}");
    assert_eq!(names[names.len() - 3..], ["Delete", "DeleteRange", "Sync"]);
    let counts: BTreeMap<&str, u64> = kinds
        .iter()
        .map(|k| (k["kind"].as_str().unwrap(), k["count"].as_u64().unwrap()))
        .collect();
    assert_eq!(counts["Put(4096)"], 20);
    assert_eq!(counts["Embed(100)"], 5);
    assert_eq!(counts["Sync"], 3);
    assert_eq!(counts.values().sum::<u64>(), 33);

    let mut total = 0;
    for k in kinds.iter().chain([&v["overall"]]) {
        let p = &k["percentiles_ns"];
        let ps: Vec<u64> = ["50.0", "90.0", "95.0", "99.0", "99.9"]
            .iter()
            .map(|q| p[q].as_u64().unwrap_or_else(|| panic!("no {q} in {k}")))
            .collect();
        let (min, max) = (k["min_ns"].as_u64().unwrap(), k["max_ns"].as_u64().unwrap());
        assert!(
            min <= ps[0] && ps.windows(2).all(|w| w[0] <= w[1]) && ps[4] <= max,
            "{k}"
        );
        let mean = k["mean_ns"].as_f64().unwrap();
        assert!(min as f64 <= mean && mean <= max as f64, "{k}");
        let count = k["count"].as_u64().unwrap();
        let sum = k["total_ns"].as_u64().unwrap();
        assert!((mean - sum as f64 / count as f64).abs() < 1.0);
        if k["kind"] != "overall" {
            total += sum;
        }
    }
    assert_eq!(v["overall"]["kind"], "overall");
    assert_eq!(v["overall"]["count"], 33);
    assert_eq!(v["total_elapsed_ns"], total);
    let wall = v["wall_ns"].as_u64().unwrap();
    assert!(wall >= total);
    let moved = (20 * 4096 + 8192 + 500 + v["get_bytes"].as_u64().unwrap()) as f64;
    let bw = v["bw_bytes_per_sec"].as_f64().unwrap();
    assert!((bw - moved * 1e9 / total as f64).abs() <= bw * 1e-9);
    let wall_bw = v["wall_bw_bytes_per_sec"].as_f64().unwrap();
    assert!((wall_bw - moved * 1e9 / wall as f64).abs() <= wall_bw * 1e-9);

    // The text has the same figures in cannyls_bencher's form.
    assert!(
        text.contains("kind = Put(4096), count = 20, 50% = "),
        "{text}"
    );
    for needle in [
        "kind = Embed(100), count = 5, ",
        "kind = Sync, count = 3, ",
        ", 99.9% = ",
        ", max = ",
        ", mean = ",
        "[Overall 33] 50% = ",
        "Total elapsed by commands = ",
        "Wall time = ",
        "MB/s = ",
        "over the wall time",
    ] {
        assert!(text.contains(needle), "{needle:?} not in\n{text}");
    }

    // --json - prints the report on stdout instead of the text.
    let out = bench()
        .args([
            "run",
            "--workload",
            s(&w),
            "--backend",
            "memory",
            "--json",
            "-",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["ops"], 31);
}

#[test]
fn op_log_has_one_line_per_operation_on_the_monotonic_clock() {
    let dir = scratch();
    let w = write_workload(dir.path(), "every.wl", EVERY_KIND);
    let log = dir.path().join("ops.tsv");
    let before = monotonic_ns();
    let (v, _) = run_ok(
        dir.path(),
        &[
            "--workload",
            s(&w),
            "--backend",
            "memory",
            "--op-log",
            s(&log),
        ],
    );
    let after = monotonic_ns();
    let text = fs::read_to_string(&log).unwrap();
    let mut lines = text.lines();
    assert!(lines.next().unwrap().starts_with("# minfs-bench op-log"));
    assert_eq!(
        lines.next().unwrap(),
        "# seq\tkind\tid\tbytes\tstart_ns\tend_ns"
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split('\t').collect()).collect();
    assert_eq!(rows.len() as u64, v["ops"].as_u64().unwrap());
    let mut prev_end = before;
    let mut kinds = BTreeMap::new();
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(r.len(), 6, "{r:?}");
        assert_eq!(r[0], i.to_string());
        *kinds.entry(r[1]).or_insert(0) += 1;
        let (start, end): (u64, u64) = (r[4].parse().unwrap(), r[5].parse().unwrap());
        assert!(prev_end <= start && start <= end, "row {i}: {r:?}");
        prev_end = end;
        match r[1] {
            "new" => assert_eq!(r[3], "4096"),
            "embed" => assert_eq!(r[3], "100"),
            "sync" => assert_eq!((r[2], r[3]), ("-", "0")),
            "delete_range" => assert!(r[2].contains(".."), "{r:?}"),
            _ => {}
        }
    }
    // The same clock as the test's CLOCK_MONOTONIC readings around the run.
    assert!(prev_end <= after);
    assert_eq!(kinds["new"], 20);
    assert_eq!(kinds["embed"], 5);
    assert_eq!(kinds["overwrite"], 1);
    assert_eq!(kinds["get"], 2);
    assert_eq!(kinds["delete"], 1);
    assert_eq!(kinds["delete_range"], 1);
    assert_eq!(kinds["sync"], 1);
}

#[test]
fn a_full_storage_fails_cleanly() {
    let dir = scratch();
    let w = workloads_dir().join("seq-256k.wl");
    let json = dir.path().join("full.json");
    let err = run_fails(
        &[
            "--workload",
            s(&w),
            "--scale",
            "0.002",
            "--backend",
            "memory",
            "--capacity",
            "4M",
            "--json",
            s(&json),
        ],
        1,
    );
    assert!(err.contains("StorageFull"), "{err}");
    assert!(err.contains("give a larger --capacity"), "{err}");
    assert!(err.contains("operation #"), "{err}");
    // No report of a failed run is left behind.
    assert!(!json.exists());

    let img = minfs_image(dir.path(), 64 * MIB);
    let spec = format!("minfs:{}", img.display());
    let err = run_fails(
        &[
            "--workload",
            s(&w),
            "--scale",
            "0.002",
            "--backend",
            &spec,
            "--capacity",
            "4M",
        ],
        1,
    );
    assert!(err.contains("StorageFull"), "{err}");
    // More than the minfs filesystem holds: minfs says so.
    let err = run_fails(
        &[
            "--workload",
            s(&w),
            "--scale",
            "0.01",
            "--backend",
            &format!("{spec}:big"),
        ],
        1,
    );
    assert!(err.contains("no space"), "{err}");
}

#[test]
fn backend_spec_errors() {
    let dir = scratch();
    let w = workloads_dir().join("seq-4m.wl");
    let wl = s(&w);
    // Malformed specs and options: usage errors (2).
    for (spec, needle) in [
        ("nfs:/x", "unknown backend `nfs`"),
        ("file:", "needs a PATH"),
        ("file-prealloc:", "needs a PATH"),
        ("raw:", "needs a BLOCKDEV"),
        ("minfs:", "needs a TARGET"),
        ("minfs::f", "needs a TARGET"),
        ("memory:x", "takes no argument"),
        ("/var/tmp/x", "not a backend"),
    ] {
        let err = run_fails(
            &["--workload", wl, "--scale", "0.002", "--backend", spec],
            2,
        );
        assert!(err.contains(needle), "{spec}: {err}");
    }
    let err = run_fails(
        &[
            "--workload",
            wl,
            "--backend",
            "memory",
            "--block-size",
            "1024",
        ],
        2,
    );
    assert!(err.contains("512 or 4096"), "{err}");
    let err = run_fails(
        &[
            "--workload",
            wl,
            "--backend",
            "memory",
            "--capacity",
            "lots",
        ],
        2,
    );
    assert!(err.contains("not a size"), "{err}");
    run_fails(&["--backend", "memory"], 2);

    // Backends that cannot be made ready: runtime errors (1), naming the backend.
    let junk = dir.path().join("junk");
    fs::write(&junk, vec![7u8; 1 << 20]).unwrap();
    let missing = dir.path().join("missing.img");
    for (spec, needle) in [
        (
            format!("minfs:{}", junk.display()),
            "not a minfs filesystem",
        ),
        (format!("minfs:{}", missing.display()), "cannot open"),
        (format!("raw:{}", junk.display()), "not a block device"),
        (format!("file:{}", dir.path().display()), "is a directory"),
        (
            format!("file:{}", junk.display()),
            "does not hold a Cannyls storage",
        ),
        (
            format!("file-prealloc:{}", junk.display()),
            "does not hold a Cannyls storage",
        ),
    ] {
        let err = run_fails(
            &["--workload", wl, "--scale", "0.002", "--backend", &spec],
            1,
        );
        assert!(err.contains(&spec) && err.contains(needle), "{spec}: {err}");
    }
    // Nothing was overwritten or created.
    assert_eq!(fs::read(&junk).unwrap(), vec![7u8; 1 << 20]);
    assert!(!missing.exists());
}

#[test]
fn a_workload_that_does_not_parse_exits_2() {
    let dir = scratch();
    let w = write_workload(dir.path(), "bad.wl", "Command {\n  New(64M);\n}\n");
    let err = run_fails(&["--workload", s(&w), "--backend", "memory"], 2);
    assert!(err.contains("bad.wl:2:7: "), "{err}");
    let err = run_fails(
        &[
            "--workload",
            s(&dir.path().join("none.wl")),
            "--backend",
            "memory",
        ],
        1,
    );
    assert!(err.contains("cannot read"), "{err}");
}

#[test]
fn existing_minfs_files_are_reused_only_at_their_size() {
    let dir = scratch();
    let img = minfs_image(dir.path(), 256 * MIB);
    let spec = format!("minfs:{}", img.display());
    let small = workloads_dir().join("seq-4m.wl");
    let (v, _) = run_ok(
        dir.path(),
        &[
            "--workload",
            s(&small),
            "--scale",
            "0.002",
            "--backend",
            &spec,
        ],
    );
    let capacity = v["capacity"].as_u64().unwrap();
    // The same workload again: the file is reused (and its storage formatted anew).
    let (v, _) = run_ok(
        dir.path(),
        &[
            "--workload",
            s(&small),
            "--scale",
            "0.002",
            "--backend",
            &spec,
            "--verify",
        ],
    );
    assert_eq!(v["capacity"], capacity);
    // A workload that needs more, or another explicit capacity: refused, the file kept.
    let err = run_fails(
        &[
            "--workload",
            s(&small),
            "--scale",
            "0.004",
            "--backend",
            &spec,
        ],
        1,
    );
    assert!(
        err.contains("less than the") && err.contains("--capacity"),
        "{err}"
    );
    let err = run_fails(
        &[
            "--workload",
            s(&small),
            "--scale",
            "0.002",
            "--backend",
            &spec,
            "--capacity",
            "200M",
        ],
        1,
    );
    assert!(
        err.contains("not the 209715200 bytes --capacity asks for"),
        "{err}"
    );
    // Its own size, explicitly: accepted, and it runs out of space cleanly.
    run_fails(
        &[
            "--workload",
            s(&small),
            "--scale",
            "0.004",
            "--backend",
            &spec,
            "--capacity",
            &capacity.to_string(),
        ],
        1,
    );
}

/// The lumps of the corruption tests: 16 of 64 KiB.
fn puts(n: u64, size: u32) -> Vec<Op> {
    let mut ops: Vec<Op> = (1..=n)
        .map(|id| Op::Put {
            id,
            size,
            embedded: false,
            overwrite: false,
        })
        .collect();
    ops.push(Op::Sync);
    ops
}

fn gets(n: u64, size: u32) -> Vec<Op> {
    (1..=n).map(|id| Op::Get { id, size }).collect()
}

/// A byte flipped in one stored lump makes `--verify` fail on that lump, by id.
///
/// Each `minfs-bench run` formats a fresh storage and its generator only reads lumps it put
/// itself, so two CLI runs cannot hand lumps over. The test uses the library instead, with
/// the runner the CLI uses ([`execute`]) on both sides: put 16 lumps through it on a minfs
/// file and sync; close; flip one byte inside lump 7's data on the image (found by searching
/// the image for the first 64 bytes of [`content`] of lump 7); reopen the storage and run 16
/// gets through it with verification.
#[test]
fn verify_names_the_lump_whose_byte_was_flipped() {
    const SIZE: u32 = 64 << 10;
    let dir = scratch();
    let img = minfs_image(dir.path(), 64 * MIB);
    {
        let nvm = MinfsNvm::create(&img, "lusf", 16 * MIB).unwrap();
        let mut storage = nvm.storage_builder().create(nvm).unwrap();
        let outcome = execute(
            &mut storage,
            &puts(16, SIZE),
            ExecOptions {
                verify: true,
                ..Default::default()
            },
            &mut Hooks::default(),
        )
        .unwrap();
        assert_eq!(outcome.ops, 17);
    }

    // Find lump 7 on the image and flip a byte in its middle.
    let image = fs::read(&img).unwrap();
    let needle = content::bytes(7, 0, 64);
    let found: Vec<usize> = image
        .windows(needle.len())
        .enumerate()
        .filter(|(_, w)| *w == &needle[..])
        .map(|(i, _)| i)
        .collect();
    assert_eq!(found.len(), 1, "lump 7 found at {found:?}");
    let at = found[0] as u64 + 1000;
    let file = fs::OpenOptions::new().write(true).open(&img).unwrap();
    file.write_at(&[image[at as usize] ^ 0x10], at).unwrap();
    file.sync_all().unwrap();
    drop(file);

    let nvm = MinfsNvm::open(&img, "lusf").unwrap();
    let mut storage = StorageBuilder::new().open(nvm).unwrap();
    // Without verification the gets pass (the lumps are there, with their lengths).
    execute(
        &mut storage,
        &gets(16, SIZE),
        ExecOptions::default(),
        &mut Hooks::default(),
    )
    .unwrap();
    let err = execute(
        &mut storage,
        &gets(16, SIZE),
        ExecOptions {
            verify: true,
            ..Default::default()
        },
        &mut Hooks::default(),
    )
    .unwrap_err();
    assert_eq!(err.lump_id(), Some(7), "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains("operation #6 (Get of lump 7 (65536 bytes))")
            && msg.contains("lump 7: content differs at byte 1000 of 65536"),
        "{msg}"
    );
}

/// A lump that vanished, or reads back wrong before a delete, also fails the run by id.
#[test]
fn verify_catches_lost_lumps_and_wrong_deletes() {
    let mut storage = StorageBuilder::new()
        .create(MemoryNvm::new(vec![0; 8 << 20]))
        .unwrap();
    let mut hooks = Hooks::default();
    let verify = ExecOptions {
        verify: true,
        ..Default::default()
    };
    execute(&mut storage, &puts(4, 1000), verify, &mut hooks).unwrap();
    // Lump 3 goes behind the runner's back: a get fails with or without verification.
    storage.delete(&cannyls::lump::LumpId::new(3)).unwrap();
    for opts in [verify, ExecOptions::default()] {
        let err = execute(&mut storage, &gets(4, 1000), opts, &mut hooks).unwrap_err();
        assert_eq!(err.lump_id(), Some(3));
        assert!(err.to_string().contains("returned nothing"), "{err}");
    }
    // A wrong length is caught too.
    let err = execute(
        &mut storage,
        &[Op::Get { id: 1, size: 999 }],
        ExecOptions::default(),
        &mut hooks,
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("read 1000 bytes, expected 999 bytes"),
        "{err}"
    );
    // Lump 2 rewritten with other bytes: its delete reads it back first and refuses.
    let data = storage
        .allocate_lump_data_with_bytes(&content::bytes(2, 5, 1000))
        .unwrap();
    storage.put(&cannyls::lump::LumpId::new(2), &data).unwrap();
    let err = execute(&mut storage, &[Op::Delete { id: 2 }], verify, &mut hooks).unwrap_err();
    assert_eq!(err.lump_id(), Some(2));
    assert!(
        err.to_string().contains("read back before the delete"),
        "{err}"
    );
    // A Cannyls error is reported as one, not as a verification failure.
    let err = execute(
        &mut storage,
        &[Op::Put {
            id: 9,
            size: 16 << 20,
            embedded: false,
            overwrite: false,
        }],
        verify,
        &mut hooks,
    )
    .unwrap_err();
    assert!(err.is_storage_full(), "{err}");
    assert!(matches!(err, RunError::Cannyls { seq: 0, .. }));
}

/// Embedded lumps live in the journal: a steady churn of them (live set ~500 lumps, 20,000
/// embeds and 20,000 deletes) goes round the planned journal about twice, so Cannyls' journal
/// GC relocates live records many times over; the plan must leave it room. A journal of 5%
/// does not: that fails cleanly.
#[test]
fn embedded_churn_fits_its_planned_journal() {
    let dir = scratch();
    let w = write_workload(
        dir.path(),
        "churn.wl",
        "Seed: 3;\nCommand { 500.times { Embed(512); }; }\n\
         Unordered[40000] { <50%> Embed(512); <50%> Delete(0, 10); }\n",
    );
    let (v, _) = run_ok(
        dir.path(),
        &["--workload", s(&w), "--backend", "memory", "--verify"],
    );
    assert_eq!(v["ops"], 40_500);
    let journal = v["journal_region_bytes"].as_u64().unwrap();
    let appended = 20_000 * (23 + 512) + 20_000 * 21;
    assert!(
        appended > journal * 3 / 2,
        "{appended} bytes into {journal}"
    );
    let err = run_fails(
        &[
            "--workload",
            s(&w),
            "--backend",
            "memory",
            "--journal-ratio",
            "0.05",
        ],
        1,
    );
    assert!(
        err.contains("StorageFull") && err.contains("--journal-ratio"),
        "{err}"
    );
}

#[test]
fn raw_backend_on_a_loop_device() {
    testutil::require_loop!();
    let dir = scratch();
    let w = workloads_dir().join("rand-oldest-1m.wl");
    let dev = testutil::LoopDevice::new(128 * MIB, 512).unwrap();
    let spec = format!("raw:{}", dev.path().display());
    let args = [
        "--workload",
        s(&w),
        "--scale",
        "0.002",
        "--backend",
        &spec,
        "--verify",
    ];
    let (v, _) = run_ok(dir.path(), &args);
    assert_eq!(v["ops"], 50);
    // A device holding a filesystem is refused unless --force.
    minfs::mkfs::mkfs(
        dev.path(),
        &FormatOptions {
            force: true,
            ..Default::default()
        },
        false,
    )
    .unwrap();
    let err = run_fails(&args, 1);
    assert!(
        err.contains("holds a minfs filesystem") && err.contains("--force"),
        "{err}"
    );
    let mut forced = args.to_vec();
    forced.push("--force");
    run_ok(dir.path(), &forced);
    // More than the device holds.
    let err = run_fails(
        &[
            "--workload",
            s(&w),
            "--scale",
            "0.01",
            "--backend",
            &spec,
            "--force",
        ],
        1,
    );
    assert!(err.contains("more than the device's"), "{err}");
    // 4096-byte sectors: FileNvm cannot do its 512-byte I/O there.
    let dev4k = testutil::LoopDevice::new(64 * MIB, 4096).unwrap();
    let err = run_fails(
        &[
            "--workload",
            s(&w),
            "--scale",
            "0.002",
            "--backend",
            &format!("raw:{}", dev4k.path().display()),
        ],
        1,
    );
    assert!(err.contains("4096-byte logical sectors"), "{err}");
}

/// Regression: `file:DIR/x` with a missing DIR used to create DIR (Cannyls' `FileNvm::create`
/// makes missing directories) and benchmark whatever filesystem held it.
#[test]
fn file_backend_in_a_missing_directory_is_refused() {
    let dir = scratch();
    let w = workloads_dir().join("seq-256k.wl");
    for kind in ["file", "file-prealloc"] {
        let path = dir.path().join("typo/x.lusf");
        let out = Command::cargo_bin("minfs-bench")
            .unwrap()
            .args(["run", "--scale", "0.001", "--workload", s(&w), "--backend"])
            .arg(format!("{kind}:{}", path.display()))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{kind}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("typo") && err.contains("does not exist"),
            "{err}"
        );
        assert!(
            !dir.path().join("typo").exists(),
            "{kind} created the directory"
        );
    }
}
