//! `minfs-bench check` end to end, and the shipped workloads.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use bencher_workloads::dsl::{parse, Command as Cmd, Section};
use predicates::prelude::*;
use serde_json::Value;

const REFERENCE: [&str; 6] = [
    "seq-256k.wl",
    "seq-4m.wl",
    "rand-mixed-1m.wl",
    "rand-oldest-1m.wl",
    "durable-256k.wl",
    "group-commit-256k.wl",
];

fn workloads_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads")
}

fn shipped() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(workloads_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "wl"))
        .collect();
    files.sort();
    files
}

fn bench() -> Command {
    Command::cargo_bin("minfs-bench").unwrap()
}

/// `check --json ARGS…` → the one JSON object it prints.
fn check_json(args: &[&str]) -> Value {
    let out = bench()
        .arg("check")
        .arg("--json")
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().count(), 1, "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    assert!(v.is_object());
    v
}

fn u(v: &Value, path: &str) -> u64 {
    v.pointer(path)
        .and_then(Value::as_u64)
        .unwrap_or_else(|| panic!("{path} in {v}"))
}

#[test]
fn the_six_reference_workloads_are_shipped_as_specified() {
    let specified = [
        ("seq-256k.wl", "Command { 100000.times { New(256K); }; }"),
        ("seq-4m.wl", "Command { 5000.times { New(4M); }; }"),
        (
            "rand-mixed-1m.wl",
            "Command { 5000.times { New(1M); }; } Unordered[40000] { <50%> New(1M); <50%> Get; }",
        ),
        (
            "rand-oldest-1m.wl",
            "Command { 5000.times { New(1M); }; 10000.times { New(1M); Get(1, 5); }; }",
        ),
        (
            "durable-256k.wl",
            "Command { 20000.times { New(256K); Sync; }; }",
        ),
        (
            "group-commit-256k.wl",
            "Command { 625.times { 32.times { New(256K); }; Sync; }; }",
        ),
    ];
    for (name, body) in specified {
        let text = std::fs::read_to_string(workloads_dir().join(name)).unwrap();
        assert!(text.starts_with("# "), "{name} has no comment header");
        assert_eq!(
            parse(name, &text).unwrap(),
            parse("spec", body).unwrap(),
            "{name}"
        );
    }
}

#[test]
fn every_shipped_workload_checks_at_a_small_scale() {
    let files = shipped();
    assert!(files.len() >= 10, "{files:?}");
    for name in REFERENCE {
        assert!(files.iter().any(|f| f.ends_with(name)), "{name} missing");
    }
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        assert!(
            text.starts_with("# "),
            "{} has no comment header",
            file.display()
        );
        let v = check_json(&["--scale", "0.01", file.to_str().unwrap()]);
        for key in ["put", "embed", "get", "delete", "delete_range", "sync"] {
            u(&v, &format!("/operations/{key}"));
        }
        for key in ["put_bytes", "peak_live_bytes", "final_live_lumps", "seed"] {
            u(&v, &format!("/{key}"));
        }
        assert!(
            u(&v, "/operations/put") + u(&v, "/operations/embed") > 0,
            "{v}"
        );
    }
}

#[test]
fn full_size_workloads_fit_a_1tb_disk() {
    for file in shipped() {
        let v = check_json(&[file.to_str().unwrap()]);
        let peak = u(&v, "/peak_live_bytes");
        let written = u(&v, "/put_bytes") + u(&v, "/embed_bytes");
        assert!(peak <= 100 << 30, "{}: peak {peak}", file.display());
        assert!(written <= 200 << 30, "{}: writes {written}", file.display());
        assert_eq!(u(&v, "/skipped"), 0, "{}", file.display());
    }
}

/// Every command and construct of the language appears in some shipped workload.
#[test]
fn shipped_workloads_use_the_whole_language() {
    fn walk(commands: &[Cmd], seen: &mut BTreeSet<&'static str>) {
        for c in commands {
            let name = match c {
                Cmd::New(_) => "New",
                Cmd::OverWrite(_) => "OverWrite",
                Cmd::Embed(_) => "Embed",
                Cmd::Get => "Get",
                Cmd::GetAt(..) => "Get(l,r)",
                Cmd::Delete => "Delete",
                Cmd::DeleteAt(..) => "Delete(l,r)",
                Cmd::DeleteRange(..) => "DeleteRange",
                Cmd::Sync => "Sync",
                Cmd::Times { body, .. } => {
                    walk(body, seen);
                    "times"
                }
            };
            seen.insert(name);
        }
    }
    let mut seen = BTreeSet::new();
    for file in shipped() {
        let w = parse("f", &std::fs::read_to_string(&file).unwrap()).unwrap();
        if w.seed.is_some() {
            seen.insert("Seed");
        }
        for s in &w.sections {
            match s {
                Section::Command(c) => {
                    seen.insert("Command");
                    walk(c, &mut seen);
                }
                Section::Ordered { items, .. } | Section::Unordered { items, .. } => {
                    seen.insert(if matches!(s, Section::Ordered { .. }) {
                        "Ordered"
                    } else {
                        "Unordered"
                    });
                    for item in items {
                        if item.braced {
                            seen.insert("<p%> { … }");
                        }
                        walk(&item.body, &mut seen);
                    }
                }
            }
        }
    }
    let all: BTreeSet<&str> = [
        "New",
        "OverWrite",
        "Embed",
        "Get",
        "Get(l,r)",
        "Delete",
        "Delete(l,r)",
        "DeleteRange",
        "Sync",
        "times",
        "Seed",
        "Command",
        "Ordered",
        "Unordered",
        "<p%> { … }",
    ]
    .into_iter()
    .collect();
    assert_eq!(seen, all);
}

#[test]
fn json_values_for_a_known_workload() {
    let seq = workloads_dir().join("seq-256k.wl");
    let v = check_json(&["--scale", "0.01", seq.to_str().unwrap()]);
    assert_eq!(u(&v, "/operations/put"), 1000);
    assert_eq!(u(&v, "/operations/get"), 0);
    assert_eq!(u(&v, "/put_bytes"), 1000 * 262_144);
    assert_eq!(u(&v, "/peak_live_bytes"), 1000 * 262_144);
    assert_eq!(u(&v, "/final_live_lumps"), 1000);
    assert_eq!(u(&v, "/seed"), 0);
    assert_eq!(v["scale"], 0.01);
    assert_eq!(v["sync_every"], Value::Null);
    // 1000 lumps of 513 sectors, × 1.5, plus journal and header.
    assert_eq!(u(&v, "/block_size"), 512);
    assert!(u(&v, "/capacity") >= 1000 * 513 * 512 * 3 / 2);

    // --seed overrides; --sync-every inserts syncs.
    let durable = workloads_dir().join("durable-256k.wl");
    let v = check_json(&[
        "--scale",
        "0.01",
        "--seed",
        "99",
        "--sync-every",
        "10",
        durable.to_str().unwrap(),
    ]);
    assert_eq!(u(&v, "/seed"), 99);
    assert_eq!(u(&v, "/sync_every"), 10);
    // 200 × (New, Sync) + a Sync after every 10 puts.
    assert_eq!(u(&v, "/operations/put"), 200);
    assert_eq!(u(&v, "/operations/sync"), 220);
}

#[test]
fn human_summary() {
    bench()
        .args(["check", "--scale", "0.1"])
        .arg(workloads_dir().join("churn-256k.wl"))
        .assert()
        .success()
        .stdout(predicate::str::contains("operations      "))
        .stdout(predicate::str::contains("seed            11"))
        .stdout(predicate::str::contains("delete        "));
}

#[test]
fn a_parse_error_exits_2_with_position_and_caret() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.wl");
    std::fs::write(&file, "# bad\nCommand {\n  New(64M);\n}\n").unwrap();
    let shown = file.display().to_string();
    bench()
        .arg("check")
        .arg(&file)
        .assert()
        .code(2)
        .stdout("")
        .stderr(format!(
            "{shown}:3:7: `New` size 64M (67108864 bytes) is over the limit of 33553918 bytes \
             (0xFFFF × 512 − 2, the largest Cannyls lump)\n  New(64M);\n      ^\n"
        ));
}

#[test]
fn other_failures_and_usage_errors() {
    // Unreadable file: 1.
    bench()
        .args(["check", "/nonexistent/x.wl"])
        .assert()
        .code(1)
        .stderr(predicate::str::starts_with(
            "minfs-bench: error: cannot read /nonexistent/x.wl:",
        ));
    // Not a workload file: a directory, or endless input.
    bench().args(["check", "/"]).assert().code(1);
    bench()
        .args(["check", "/dev/zero"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("larger than 16 MiB"));
    let seq = workloads_dir().join("seq-256k.wl");
    // Too large after scaling: refused, 2.
    bench()
        .args(["check", "--scale", "1e12"])
        .arg(&seq)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("more than the limit of 100000000"));
    bench()
        .args(["check", "--max-ops", "99999"])
        .arg(&seq)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("expands to 100000 operations"));
    // Usage errors: 2.
    for args in [
        vec!["check", "--scale", "0"],
        vec!["check", "--scale", "-1"],
        vec!["check", "--scale", "NaN"],
        vec!["check", "--scale", "inf"],
        vec!["check", "--sync-every", "0"],
        vec!["check", "--seed", "-3"],
    ] {
        bench().args(&args).arg(&seq).assert().code(2);
    }
    bench().assert().code(2);
    bench().arg("check").assert().code(2);
    bench().arg("frobnicate").assert().code(2);
    bench()
        .arg("--help")
        .assert()
        .success()
        .stdout(predicate::str::contains("check"));
    bench()
        .args(["check", "--help"])
        .assert()
        .success()
        .stdout(predicate::str::contains("--sync-every"));
}

#[test]
fn check_capacity_is_the_capacity_run_uses() {
    let seq = workloads_dir().join("seq-256k.wl");
    for bs in ["512", "4096"] {
        let v = check_json(&[
            "--scale",
            "0.001",
            "--block-size",
            bs,
            seq.to_str().unwrap(),
        ]);
        let out = Command::cargo_bin("minfs-bench")
            .unwrap()
            .args([
                "run",
                "--scale",
                "0.001",
                "--backend",
                "memory",
                "--json",
                "-",
            ])
            .args(["--block-size", bs, "--workload"])
            .arg(&seq)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let run: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["capacity"], run["capacity"], "block size {bs}");
    }
}

/// Without --block-size, check shows the capacity at 512 (file:, raw:, memory runs) and at
/// 4096 (minfs: runs), each what `check --block-size` gives.
#[test]
fn check_shows_the_capacity_at_both_default_block_sizes() {
    let seq = workloads_dir().join("seq-256k.wl");
    let seq = seq.to_str().unwrap();
    let v = check_json(&["--scale", "0.001", seq]);
    let capacities = v["capacities"].as_array().unwrap();
    assert_eq!(capacities.len(), 2, "{v}");
    for (c, bs) in capacities.iter().zip(["512", "4096"]) {
        assert_eq!(c["block_size"].to_string(), bs);
        let one = check_json(&["--scale", "0.001", "--block-size", bs, seq]);
        assert_eq!(c["capacity"], one["capacity"], "block size {bs}");
    }
    assert_ne!(capacities[0]["capacity"], capacities[1]["capacity"]);
    let cap4096 = capacities[1]["capacity"].as_u64().unwrap();
    bench()
        .args(["check", "--scale", "0.001", seq])
        .assert()
        .success()
        .stdout(
            predicate::str::contains(format!("{cap4096} (")).and(predicate::str::contains(
                "MiB) at block size 4096: run's default for minfs:",
            )),
        );
}

/// `run --backend minfs:IMAGE` on an image holding another filesystem names it, instead of
/// suggesting a `minfs mkfs` that would refuse it.
#[test]
fn minfs_backend_on_another_filesystem_names_what_it_holds() {
    if !testutil::require_program(
        "minfs_backend_on_another_filesystem_names_what_it_holds",
        "mkfs.ext4",
        "e2fsprogs",
    ) {
        return;
    }
    let dir = tempfile::Builder::new()
        .prefix("minfs-bench-ext4-")
        .tempdir_in(testutil::scratch_dir())
        .unwrap();
    let img = dir.path().join("ext4.img");
    std::fs::File::create(&img)
        .unwrap()
        .set_len(16 << 20)
        .unwrap();
    testutil::mkfs_ext4(&img).unwrap();
    let seq = workloads_dir().join("seq-256k.wl");
    bench()
        .args(["run", "--scale", "0.001", "--no-progress", "--backend"])
        .arg(format!("minfs:{}", img.display()))
        .arg("--workload")
        .arg(&seq)
        .assert()
        .code(1)
        .stderr(
            predicate::str::contains("not a minfs filesystem")
                .and(predicate::str::contains(
                    "it holds an ext2/ext3/ext4 filesystem",
                ))
                .and(predicate::str::contains("minfs mkfs").not()),
        );
}
