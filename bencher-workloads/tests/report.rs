//! `minfs-bench report DIR` end to end on a synthetic comparison directory: 2 workloads ×
//! 3 targets × 2 runs with one failed run, small op-logs, and later modelled reports. The
//! figures asserted are worked out by hand in the comments.

use std::fs;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use bencher_workloads::run::report::{RunInfo, RunReport};
use bencher_workloads::run::stats::{KindReport, Percentiles};
use predicates::prelude::PredicateBooleanExt;
use serde_json::{json, Value};

const S: u64 = 1_000_000_000;
const MS: u64 = 1_000_000;

fn bench() -> Command {
    Command::cargo_bin("minfs-bench").unwrap()
}

fn kind(name: &str, count: u64, p: [u64; 5], max: u64) -> KindReport {
    KindReport {
        kind: name.to_string(),
        count,
        total_ns: p[0] * count,
        mean_ns: p[0] as f64,
        min_ns: p[0] / 2,
        max_ns: max,
        percentiles_ns: Percentiles {
            p50: p[0],
            p90: p[1],
            p95: p[2],
            p99: p[3],
            p99_9: p[4],
        },
        bytes: 0,
    }
}

/// A run report with these totals; one `Put(262144)` kind whose times scale with `p50`.
fn report(workload: &str, backend: &str, total: u64, wall: u64, bw: f64, p50: u64) -> RunReport {
    let put = kind(
        "Put(262144)",
        1000,
        [p50, 2 * p50, 3 * p50, 4 * p50, 5 * p50],
        6 * p50,
    );
    let sync = kind("Sync", 10, [MS; 5], 2 * MS);
    RunReport {
        info: RunInfo {
            workload: format!("workloads/{workload}.wl"),
            backend: backend.to_string(),
            capacity: 1 << 30,
            block_size: 512,
            journal_ratio: 0.01,
            journal_region_bytes: 1 << 20,
            data_region_bytes: 1 << 29,
            seed: 0,
            scale: 0.1,
            sync_every: None,
            verify: false,
            content: Default::default(),
        },
        ops: 1010,
        put_bytes: 262_144_000,
        embed_bytes: 0,
        get_bytes: 0,
        total_elapsed_ns: total,
        wall_ns: wall,
        bw_bytes_per_sec: bw,
        wall_bw_bytes_per_sec: bw / 2.0,
        kinds: vec![put, sync.clone()],
        overall: kind("overall", 1010, [p50, p50, p50, 2 * p50, 2 * p50], 6 * p50),
        data_usage_peak_bytes: None,
    }
}

fn write_oplog(path: &Path, latencies: &[u64]) {
    let mut text = bencher_workloads::run::oplog::HEADER.to_string();
    let mut t = 5_000_000_000u64;
    for (seq, l) in latencies.iter().enumerate() {
        text.push_str(&format!(
            "{seq}\tnew\t{}\t262144\t{t}\t{}\n",
            seq + 1,
            t + l
        ));
        t += l + 100;
    }
    fs::write(path, text).unwrap();
}

fn run_dir(dir: &Path, w: &str, t: &str) -> PathBuf {
    let d = dir.join("runs").join(w).join(t);
    fs::create_dir_all(&d).unwrap();
    d
}

/// The fixture (totals in s, bandwidth in MB/s, op-log latencies in µs):
///
/// | workload | target | run 1 | run 2 | median | ratio |
/// | seq-256k | minfs | 10 s, 200 MB/s, wall 11 s | 12 s, 300 MB/s, wall 13 s | 11 s | 1 |
/// | seq-256k | ext4 | 16 s | 20 s | 18 s | 18/11 = 1.636 → 1.64 |
/// | seq-256k | xfs | 30 s | failed | 30 s | 30/11 = 2.727 → 2.73 (1/2 runs) |
/// | rand-mixed-1m | minfs | 4 s | 6 s | 5 s | 1 |
/// | rand-mixed-1m | ext4 | 5 s | 5 s | 5 s | 1.00 |
/// | rand-mixed-1m | xfs | 2 s | 3 s | 2.5 s | 0.50 |
///
/// p50 of Put(262144), seq-256k, minfs: 8 ms and 10 ms → 9.00 ms; max 6 × that → 54.0 ms.
fn fixture(dir: &Path) {
    fs::write(
        dir.join("compare.json"),
        serde_json::to_string_pretty(&json!({
            "workloads": ["seq-256k", "rand-mixed-1m"],
            "targets": ["minfs", "ext4", "xfs"],
            "runs": 2,
            "scale": 0.1,
            "seed": null,
            "block_size": 512,
            "device": "/dev/loop3 (loop over /var/tmp/x.img)",
            "sector_size": 512
        }))
        .unwrap(),
    )
    .unwrap();
    fs::write(dir.join("SETUP.md"), "# Setup\n").unwrap();
    // (workload, target, run 1 and 2: Some((total s, wall s, MB/s, p50 ms)) or None = failed)
    type Run = Option<(u64, u64, f64, u64)>;
    let runs: [(&str, &str, [Run; 2]); 6] = [
        (
            "seq-256k",
            "minfs",
            [Some((10, 11, 200.0, 8)), Some((12, 13, 300.0, 10))],
        ),
        (
            "seq-256k",
            "ext4",
            [Some((16, 17, 130.0, 14)), Some((20, 21, 110.0, 16))],
        ),
        ("seq-256k", "xfs", [Some((30, 31, 80.0, 20)), None]),
        (
            "rand-mixed-1m",
            "minfs",
            [Some((4, 5, 500.0, 2)), Some((6, 7, 400.0, 3))],
        ),
        (
            "rand-mixed-1m",
            "ext4",
            [Some((5, 6, 450.0, 2)), Some((5, 6, 450.0, 2))],
        ),
        (
            "rand-mixed-1m",
            "xfs",
            [Some((2, 3, 900.0, 1)), Some((3, 4, 800.0, 1))],
        ),
    ];
    for (w, t, rs) in runs {
        let d = run_dir(dir, w, t);
        for (i, r) in rs.iter().enumerate() {
            let k = i + 1;
            match r {
                Some((total, wall, mbps, p50)) => {
                    let rep = report(w, t, total * S, wall * S, mbps * 1e6, p50 * MS);
                    fs::write(
                        d.join(format!("run-{k}.json")),
                        serde_json::to_string_pretty(&rep).unwrap(),
                    )
                    .unwrap();
                }
                None => fs::write(
                    d.join(format!("run-{k}.error")),
                    "minfs-bench: error: Cannyls: StorageFull (use a larger --capacity)\nmore\n",
                )
                .unwrap(),
            }
            // Op-logs: minfs runs 1 and 2 have 3 and 2 operations, the others 3 each; the
            // failed run's partial op-log is not counted.
            let lat: &[u64] = if t == "minfs" && k == 2 {
                &[40_000, 50_000]
            } else {
                &[1_000, 20_000, 300_000]
            };
            write_oplog(&d.join(format!("run-{k}.oplog")), lat);
            // A block trace: ignored.
            fs::write(d.join(format!("run-{k}.trace")), "trace").unwrap();
        }
    }
}

/// Modelled reports for seq-256k: totals minfs 20, 22 (median 21 s, sequential limit 10 s →
/// total/limit 2.10); ext4 42, 42 → 2.00; xfs 63 (run 1 only) → 3.00 (1/2 runs). minfs and
/// ext4 carry the drive's figures (writes = 1000 + total in seconds, media busy = total − 1 s,
/// so the run each row comes from shows); xfs's are left out, as in reports from before they
/// were read.
fn add_modelled(dir: &Path) {
    let w = "seq-256k";
    for (t, totals) in [
        ("minfs", vec![(1, 22), (2, 20)]),
        ("ext4", vec![(1, 42), (2, 42)]),
        ("xfs", vec![(1, 63)]),
    ] {
        for (k, total) in totals {
            let rep = report(w, t, total * S, total * S, 50e6, 30 * MS);
            let mut v = serde_json::to_value(&rep).unwrap();
            v["model"] = json!({
                "profile": "st1000dm003",
                "profile_name": "Seagate ST1000DM003 (512e, modelled)",
                "sequential_limit_ns": 10 * S,
                "requests": 1234
            });
            if t != "xfs" {
                let work = json!({
                    "writes": 1000 + total,
                    "write_bytes": 262_144_000u64,
                    "reads": 3,
                    "read_bytes": 12288,
                    "flushes": 10,
                    "preflush_writes": 2,
                    "fua_writes": 0,
                    "requests_outside_ops": 1234567,
                    "media_busy_ns": (total - 1) * S,
                    "read_seek_ns": 1.0e9,
                    "destage_seek_ns": 2.0e9,
                    "read_rotation_ns": 0.5e9,
                    "destage_rotation_ns": 1.5e9,
                    "rmw_penalties": 7,
                    "rmw_ns": 58.3e6,
                    "flush_wait_ns": 4.0e9,
                    "read_destage_wait_ns": 25_000_000u64
                });
                for (key, value) in work.as_object().unwrap() {
                    v["model"][key] = value.clone();
                }
                let reopen = if t == "ext4" { 900u64 } else { 0 };
                let work = json!({
                    "reopen_writes": reopen,
                    "reopen_writes_after_read": reopen / 3,
                    "reopened_clean": 2,
                    "reopened_dirty": reopen,
                    "write_first_waits": reopen,
                    "write_first_wait_ns": reopen as f64 * 9e6,
                    "segment_full_waits": 0,
                    "segment_full_wait_ns": 0,
                    "rmw_for_flush": reopen + 1,
                    "rmw_for_pressure": 0,
                    "rmw_for_write_first": 0,
                    "rmw_of_reopened_clean": reopen
                });
                for (key, value) in work.as_object().unwrap() {
                    v["model"][key] = value.clone();
                }
            }
            fs::write(
                run_dir(dir, w, t).join(format!("run-{k}.model-st1000dm003.json")),
                serde_json::to_string(&v).unwrap(),
            )
            .unwrap();
        }
    }
}

/// Runs `report DIR`, asserts success and that it printed DIR/report.md; returns report.md.
fn render(dir: &Path) -> String {
    let out = bench().arg("report").arg(dir).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        format!("{}\n", dir.join("report.md").display())
    );
    fs::read_to_string(dir.join("report.md")).unwrap()
}

/// All files under `dir/plots` and report.md, sorted, with their bytes.
fn outputs(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = fs::read_dir(dir.join("plots"))
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                format!("plots/{}", e.file_name().to_string_lossy()),
                fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    v.push(("report.md".into(), fs::read(dir.join("report.md")).unwrap()));
    v.sort();
    v
}

fn line_with<'a>(text: &'a str, start: &str) -> &'a str {
    text.lines()
        .find(|l| l.starts_with(start))
        .unwrap_or_else(|| panic!("no line starting with {start:?} in\n{text}"))
}

#[test]
fn renders_tables_plots_and_modelled_sections_deterministically() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    fixture(dir);
    let md = render(dir);

    // Header: the facts of compare.json, SETUP.md, the baseline.
    assert!(md.starts_with("# minfs-bench comparison\n"), "{md}");
    assert!(md.contains(
        "Scale 0.1, 2 runs per workload and target, block size 512 bytes, each workload's own \
         seed, device /dev/loop3 (loop over /var/tmp/x.img) (512-byte sectors)."
    ));
    assert!(md.contains("[SETUP.md](SETUP.md)"));
    assert!(md.contains("so minfs = 1 and above 1 means slower than minfs"));
    assert!(!md.contains("is the baseline"));
    assert!(!md.contains(&dir.display().to_string()), "no absolute path");

    // Summary: workloads in compare.json's order, targets as columns.
    assert_eq!(
        line_with(&md, "| Workload |"),
        "| Workload | minfs | ext4 | xfs |"
    );
    assert_eq!(
        line_with(&md, "| seq-256k |"),
        "| seq-256k | 1 | 1.64 | 2.73 (1/2 runs) |"
    );
    assert_eq!(
        line_with(&md, "| rand-mixed-1m |"),
        "| rand-mixed-1m | 1 | 1.00 | 0.50 |"
    );
    assert!(md.find("| seq-256k |").unwrap() < md.find("| rand-mixed-1m |").unwrap());
    assert!(md.contains(
        "Ratios by workload, with their intervals: [plots/ratios.svg](plots/ratios.svg) (and \
         [PNG](plots/ratios.png))"
    ));
    assert!(md.contains("![measured ratios](plots/ratios.png)"));

    // Per workload: medians, min–max, ratio, MB/s, wall, runs.
    let seq = &md[md.find("## seq-256k").unwrap()..md.find("## rand-mixed-1m").unwrap()];
    assert!(seq.contains(
        "| Target | total elapsed, median (min–max) | ratio | MB/s | wall, median | runs ok |"
    ));
    assert!(seq.contains("| minfs | 11.0 s (10.0 s–12.0 s) | 1 | 250.0 | 12.0 s | 2/2 |\n"));
    assert!(seq.contains("| ext4 | 18.0 s (16.0 s–20.0 s) | 1.64 | 120.0 | 19.0 s | 2/2 |\n"));
    assert!(seq.contains(
        "| xfs | 30.0 s (30.0 s–30.0 s) | 2.73 | 80.0 | 31.0 s | 1/2: run 2 failed (see \
         [run-2.error](runs/seq-256k/xfs/run-2.error)) |\n"
    ));
    assert!(seq.contains(
        "- xfs run 2: minfs-bench: error: Cannyls: StorageFull (use a larger --capacity) \
         ([run-2.error](runs/seq-256k/xfs/run-2.error))"
    ));
    // Per kind: p50 median of 8 and 10 ms = 9 ms; p90 16/20 → 18; … max 48/60 → 54.
    assert!(seq.contains("| Kind | Target | count | p50 | p90 | p95 | p99 | p99.9 | max |"));
    assert!(seq.contains(
        "| Put(262144) | minfs | 1000 | 9.00 ms | 18.0 ms | 27.0 ms | 36.0 ms | 45.0 ms | 54.0 ms |"
    ));
    assert!(seq.contains(
        "| Put(262144) | xfs | 1000 | 20.0 ms | 40.0 ms | 60.0 ms | 80.0 ms | 100 ms | 120 ms |"
    ));
    assert!(seq.contains(
        "| Sync | ext4 | 10 | 1.00 ms | 1.00 ms | 1.00 ms | 1.00 ms | 1.00 ms | 2.00 ms |"
    ));
    // Kinds in the run report's order, overall last.
    let put = seq.find("| Put(262144) | minfs").unwrap();
    let sync = seq.find("| Sync | minfs").unwrap();
    let overall = seq.find("| overall | minfs").unwrap();
    assert!(put < sync && sync < overall);
    assert!(seq.contains("pooled: 5 op-logs)"), "{seq}");
    assert!(seq.contains("![latency CDF of seq-256k](plots/cdf-seq-256k.svg)"));
    let rand = &md[md.find("## rand-mixed-1m").unwrap()..];
    assert!(rand.contains("| xfs | 2.50 s (2.00 s–3.00 s) | 0.50 | 850.0 | 3.50 s | 2/2 |"));
    assert!(!rand.contains("failed"));
    assert!(!md.contains("Modelled on"));

    // Plots: one per workload, the ratios; SVG with a curve and a legend entry per target.
    let cdf = fs::read_to_string(dir.join("plots/cdf-seq-256k.svg")).unwrap();
    assert!(cdf.starts_with("<svg "), "{}", &cdf[..80]);
    assert!(cdf.trim_end().ends_with("</svg>"));
    for (colour, legend) in [
        ("#1F77B4", "minfs (5 ops)"),
        ("#FF7F0E", "ext4 (6 ops)"),
        // Only run 1's op-log: run 2 failed.
        ("#2CA02C", "xfs (3 ops)"),
    ] {
        assert!(cdf.contains(legend), "{legend}");
        let curve = format!("stroke=\"{colour}\" stroke-width=\"2\" points=\"");
        assert_eq!(cdf.matches(&curve).count(), 2, "curve + legend in {colour}");
    }
    assert!(dir.join("plots/cdf-rand-mixed-1m.svg").is_file());
    let ratios = fs::read_to_string(dir.join("plots/ratios.svg")).unwrap();
    assert!(ratios.starts_with("<svg "));
    // Workloads on the axis, the targets but the baseline in the legend, the line at 1.
    for label in [
        "seq-256k",
        "rand-mixed-1m",
        "ext4",
        "xfs",
        "line at 1: minfs",
    ] {
        assert!(ratios.contains(&format!(">\n{label}\n</text>")), "{label}");
    }
    assert!(
        !ratios.contains(">\nminfs\n</text>"),
        "the baseline is the line, not a dot"
    );
    // A PNG of each SVG.
    for png in ["ratios", "cdf-seq-256k", "cdf-rand-mixed-1m"] {
        let bytes = fs::read(dir.join(format!("plots/{png}.png"))).unwrap();
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "{png}");
    }

    // Rendering again changes nothing.
    let first = outputs(dir);
    assert_eq!(
        first.len(),
        7,
        "{:?}",
        first.iter().map(|f| &f.0).collect::<Vec<_>>()
    );
    render(dir);
    assert_eq!(first, outputs(dir));

    // Modelled reports add a section per profile and a plot.
    add_modelled(dir);
    let md = render(dir);
    let m = &md[md
        .find("# Modelled on Seagate ST1000DM003 (512e, modelled)")
        .expect("modelled section")..];
    assert!(m.contains("(profile `st1000dm003`)"));
    assert_eq!(
        line_with(m, "| seq-256k |"),
        "| seq-256k | 1 | 2.00 | 3.00 (1/2 runs) |"
    );
    assert_eq!(
        line_with(m, "| rand-mixed-1m |"),
        "| rand-mixed-1m | — | — | — |"
    );
    let mseq = &m[m.find("## seq-256k (modelled)").unwrap()..];
    assert!(mseq.contains("| minfs | 21.0 s (20.0 s–22.0 s) | 1 | 50.0 | 10.0 s | 2.10 | 2/2 |"));
    assert!(mseq.contains("| ext4 | 42.0 s (42.0 s–42.0 s) | 2.00 | 50.0 | 10.0 s | 4.20 | 2/2 |"));
    assert!(mseq.contains("| xfs | 63.0 s (63.0 s–63.0 s) | 3.00 | 50.0 | 10.0 s | 6.30 | 1/2 |"));
    assert!(mseq.contains(
        "| Put(262144) | ext4 | 1000 | 30.0 ms | 60.0 ms | 90.0 ms | 120 ms | 150 ms | 180 ms |"
    ));
    // Where the drive's time went: each target's run with the median modelled total (of
    // minfs's 22 and 20 s, the lower middle one: run 2, 20 s; of ext4's equal totals, run 1).
    assert!(mseq.contains(
        "| Target | writes | MB written | reads | MB read | flushes | outside ops | media busy \
         | seek | rotation | read-modify-writes | flush wait | read wait |"
    ));
    assert_eq!(
        line_with(mseq, "| minfs | 1,020 |"),
        "| minfs | 1,020 | 262.1 | 3 | 0.0 | 12 | 1,234,567 | 19.0 s | 3.00 s | 2.00 s | \
         7 (58.3 ms) | 4.00 s | 25.0 ms |"
    );
    assert!(mseq.contains("| ext4 | 1,042 | 262.1 | 3 | 0.0 | 12 | 1,234,567 | 41.0 s |"));
    assert!(mseq.contains("| xfs | — | — | — | — | — | — | — | — | — | — | — | — |"));
    // Writes into data the drive holds: the trace's count next to the model's.
    assert!(mseq.contains(
        "| Target | writes | re-opening writes | after a read | re-opened clean / dirty \
         | write-first waits | segment waits | read-modify-writes: flush / pressure / \
         write-first | of re-opened sectors |"
    ));
    assert_eq!(
        line_with(mseq, "| ext4 | 1,042 | 900 |"),
        "| ext4 | 1,042 | 900 | 300 | 2 / 900 | 900 (8.10 s) | 0 (0 ns) | 901 / 0 / 0 | 900 |"
    );
    assert_eq!(
        line_with(mseq, "| minfs | 1,020 | 0 |"),
        "| minfs | 1,020 | 0 | 0 | 2 / 0 | 0 (0 ns) | 0 (0 ns) | 1 / 0 / 0 | 0 |"
    );
    assert!(mseq.contains("| xfs | — | — | — | — | — | — | — | — |"));
    assert!(
        m.contains("| minfs | — | — | — | — | — | 0/2 |"),
        "rand-mixed-1m unmodelled"
    );
    assert!(
        !m[m.find("## rand-mixed-1m (modelled)").unwrap()..].contains("| Target | writes |"),
        "no drive table without modelled runs"
    );
    assert!(m.contains("[plots/modelled.svg](plots/modelled.svg)"));
    let mm = fs::read_to_string(dir.join("plots/modelled.svg")).unwrap();
    assert!(mm.starts_with("<svg ") && mm.contains("Modelled on Seagate ST1000DM003"));
    // The summary's modelled verdict: two rounds cannot reach 95 % (2⁻² > 2.5 %).
    let summary = &md[md
        .find("### Modelled on the drive")
        .expect("modelled summary")..];
    assert!(
        summary.contains(
            "- **seq-256k**: not judged, with fewer than 6 rounds of it and minfs: ext4 2.00×, \
             xfs 3.00×."
        ),
        "{summary}"
    );
    // What needs no model, in the summary: re-opening writes per put from the traces (ext4's
    // 900 of its 1,000 puts; xfs's runs carry no drive figures); these reports predate the
    // partial-sector count: n/a.
    for (row, want) in [
        ("minfs", "| 512 | 2/2 | 0.00 | n/a | n/a | n/a | n/a |"),
        ("ext4", "| 512 | 2/2 | 0.90 | n/a | n/a | n/a | n/a |"),
        ("xfs", "| 512 | 1/2 | n/a | n/a | n/a | n/a | n/a |"),
    ] {
        let start = format!("| seq-256k | {row} ");
        assert_eq!(line_with(summary, &start), format!("{start}{want}"));
    }
    // The measured part is unchanged.
    let table = &md[md.find("## Summary: ratio of total elapsed").unwrap()..];
    assert_eq!(
        line_with(table, "| seq-256k |"),
        "| seq-256k | 1 | 1.64 | 2.73 (1/2 runs) |"
    );
    let second = outputs(dir);
    assert_eq!(second.len(), 9);
    render(dir);
    assert_eq!(second, outputs(dir));
}

#[test]
fn order_extra_and_missing_targets_and_no_minfs_baseline() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    fixture(dir);
    // Listed but never run: raw. Run but not listed: btrfs (appended after the listed ones).
    let mut meta: Value =
        serde_json::from_str(&fs::read_to_string(dir.join("compare.json")).unwrap()).unwrap();
    meta["targets"] = json!(["minfs", "ext4", "xfs", "raw"]);
    fs::write(dir.join("compare.json"), meta.to_string()).unwrap();
    let rep = report("seq-256k", "btrfs", 22 * S, 23 * S, 1e8, MS);
    fs::write(
        run_dir(dir, "seq-256k", "btrfs").join("run-1.json"),
        serde_json::to_string(&rep).unwrap(),
    )
    .unwrap();
    let md = render(dir);
    assert_eq!(
        line_with(&md, "| Workload |"),
        "| Workload | minfs | ext4 | xfs | raw | btrfs |"
    );
    assert_eq!(
        line_with(&md, "| seq-256k |"),
        "| seq-256k | 1 | 1.64 | 2.73 (1/2 runs) | — | 2.00 (1/2 runs) |"
    );
    assert!(md.contains("| raw | — | — | — | — | 0/2: run 1: —; run 2: — |"));
    // The verdict: raw, never run, is named apart; xfs and btrfs ran once, ext4 twice: too
    // few for three comparisons at 95 % together (each at 98.3 %: 7 rounds at least).
    assert_eq!(
        verdict_of(&md, "seq-256k"),
        "- **seq-256k**: not judged, with fewer than 7 rounds of it and minfs: ext4 1.64×, xfs \
         2.73×, btrfs 2.00×; no successful run of raw."
    );

    // Without minfs, the first target is the baseline and the text says so.
    let meta = json!({"targets": ["ext4", "xfs"]});
    fs::write(dir.join("compare.json"), meta.to_string()).unwrap();
    for w in ["seq-256k", "rand-mixed-1m"] {
        fs::remove_dir_all(dir.join("runs").join(w).join("minfs")).unwrap();
    }
    fs::remove_dir_all(dir.join("runs/seq-256k/btrfs")).unwrap();
    fs::write(dir.join("plots/cdf-gone.svg"), "<svg/>").unwrap();
    fs::write(dir.join("plots/notes.txt"), "mine").unwrap();
    let md = render(dir);
    assert!(md.contains("There is no `minfs` target, so the first target, ext4, is the baseline."));
    assert!(md.contains("so ext4 = 1 and above 1 means slower than ext4"));
    // Workloads not in compare.json: sorted. xfs/ext4 = 30/18 = 1.67 and 2.5/5 = 0.50.
    assert_eq!(line_with(&md, "| Workload |"), "| Workload | ext4 | xfs |");
    assert!(md.find("| rand-mixed-1m |").unwrap() < md.find("| seq-256k |").unwrap());
    assert_eq!(
        line_with(&md, "| seq-256k |"),
        "| seq-256k | 1 | 1.67 (1/2 runs) |"
    );
    assert_eq!(
        line_with(&md, "| rand-mixed-1m |"),
        "| rand-mixed-1m | 1 | 0.50 |"
    );
    // A plot no workload makes any more is removed; other files stay.
    assert!(!dir.join("plots/cdf-gone.svg").exists());
    assert!(dir.join("plots/notes.txt").exists());
    assert!(dir.join("plots/cdf-seq-256k.svg").exists());
}

#[test]
fn bad_inputs_fail_naming_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();

    // Not a comparison directory.
    bench()
        .arg("report")
        .arg(dir)
        .assert()
        .code(1)
        .stderr(predicates::str::contains(format!(
            "{}: no such file",
            dir.join("compare.json").display()
        )));

    fixture(dir);
    // A run report that does not parse.
    let bad = dir.join("runs/rand-mixed-1m/ext4/run-1.json");
    fs::write(&bad, "{\"ops\": 3,").unwrap();
    let out = bench().arg("report").arg(dir).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.starts_with(&format!(
            "minfs-bench: error: {}: not a valid JSON report",
            bad.display()
        )),
        "{stderr}"
    );
    assert!(
        !dir.join("report.md").exists(),
        "nothing written on failure"
    );
    // Valid JSON, but not a run report.
    fs::write(&bad, "{\"ops\": 3}").unwrap();
    bench().arg("report").arg(dir).assert().code(1).stderr(
        predicates::str::contains(bad.display().to_string())
            .and(predicates::str::contains("missing field")),
    );
    fs::remove_file(&bad).unwrap();

    // A malformed compare.json.
    fs::write(dir.join("compare.json"), "{\"runs\": \"three\"}").unwrap();
    bench()
        .arg("report")
        .arg(dir)
        .assert()
        .code(1)
        .stderr(predicates::str::contains("compare.json: not a valid JSON"));
    fs::write(dir.join("compare.json"), "{}").unwrap();

    // A modelled report without its "model" object.
    let model = dir.join("runs/seq-256k/minfs/run-1.model-x.json");
    fs::copy(dir.join("runs/seq-256k/minfs/run-1.json"), &model).unwrap();
    bench().arg("report").arg(dir).assert().code(1).stderr(
        predicates::str::contains("run-1.model-x.json")
            .and(predicates::str::contains("missing field `model`")),
    );
    fs::remove_file(&model).unwrap();

    // A malformed op-log line.
    let log = dir.join("runs/seq-256k/ext4/run-2.oplog");
    fs::write(&log, "# header\n0\tnew\t1\t10\tx\t20\n").unwrap();
    bench()
        .arg("report")
        .arg(dir)
        .assert()
        .code(1)
        .stderr(predicates::str::contains(format!(
            "{}:2: not an op-log line: start_ns `x` is not a number",
            log.display()
        )));
    fs::remove_file(&log).unwrap();

    // With every key of compare.json missing it still renders: 2 runs found on disk,
    // targets sorted, minfs still the baseline.
    let md = render(dir);
    assert!(
        md.starts_with(
            "# minfs-bench comparison\n\n2 runs per workload and target, each workload's own \
             seed.\n"
        ),
        "{md}"
    );
    assert_eq!(
        line_with(&md, "| Workload |"),
        "| Workload | ext4 | minfs | xfs |"
    );
    assert_eq!(
        line_with(&md, "| seq-256k |"),
        "| seq-256k | 1.64 | 1 | 2.73 (1/2 runs) |"
    );

    // Usage errors.
    bench().arg("report").assert().code(2);
    bench().args(["report", "a", "b"]).assert().code(2);
}

/// A comparison of one workload, `w`, with these totals (in ms) per target and run, on
/// `device`: the runs' other figures do not matter to the verdict.
fn totals_fixture(dir: &Path, device: &str, w: &str, targets: &[(&str, &[u64])]) {
    let names: Vec<&str> = targets.iter().map(|t| t.0).collect();
    let runs = targets.iter().map(|t| t.1.len()).max().unwrap_or(0);
    fs::write(
        dir.join("compare.json"),
        json!({"workloads": [w], "targets": names, "runs": runs, "device": device}).to_string(),
    )
    .unwrap();
    for (t, totals) in targets {
        let d = run_dir(dir, w, t);
        for (i, total) in totals.iter().enumerate() {
            let rep = report(w, t, total * MS, total * MS, 1e8, MS);
            fs::write(
                d.join(format!("run-{}.json", i + 1)),
                serde_json::to_string(&rep).unwrap(),
            )
            .unwrap();
        }
    }
}

/// Six rounds' totals (ms) about 1.5 times a baseline of 1000: a budget comparison decided
/// slower (the budget-report tests below).
const CLEAR_SLOWER: &[u64] = &[1500, 1510, 1490, 1505, 1495, 1500];

/// The measured verdict's sentence about workload `w`.
fn verdict_of<'a>(md: &'a str, w: &str) -> &'a str {
    let verdict = &md[md.find("### Measured on ").expect("a verdict")..];
    let verdict = &verdict[..verdict[4..].find("\n##").map_or(verdict.len(), |i| i + 4)];
    line_with(verdict, &format!("- **{w}**: "))
}

#[test]
fn the_report_opens_with_a_summary_of_both_verdicts() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    fixture(dir);
    let md = render(dir);
    // The summary comes before any table, the measured verdict first.
    let summary = md
        .find("## Summary\n\n### Measured on ")
        .expect("a summary");
    assert!(summary < md.find("| Workload |").unwrap(), "{md}");
    assert!(summary < md.find("**Total elapsed**").unwrap(), "{md}");
    // rand-mixed-1m: two rounds are too few for three comparisons at 95 % together.
    assert_eq!(
        verdict_of(&md, "rand-mixed-1m"),
        "- **rand-mixed-1m**: not judged, with fewer than 7 rounds of it and minfs: ext4 \
         1.00×, xfs 0.50×."
    );
    assert!(md.contains("that needs at least 7 rounds"));
    // The method, with its level and the number of comparisons, and what is measured.
    assert!(
        md.contains("each interval at 98.33 %, so that all 3 comparisons hold together at 95 %")
    );
    assert!(md.contains("Method and sources: `bencher-workloads/src/compare/stats.rs`"));
    // No traces: no modelled verdict.
    assert!(!md.contains("### Modelled on the drive"));
    // The summary's marks are explained.
    assert!(md.contains("▲ slower, ▼ faster than minfs (the interval of the ratio lies"));
}

/// Ten rounds of one workload: a target 20 % slower in every round (±1 %) is found slower,
/// one within 1 % of minfs is within ±5 %, one 20 % faster is found faster, one that scatters
/// by ±30 % is not called either way, one run alone is not judged. Four comparisons judged:
/// each interval at 98.75 %, which 8 rounds can reach. (The figures were checked against a
/// separate Hodges–Lehmann / signed-rank computation.)
#[test]
fn paired_rounds_tell_slower_faster_equal_and_undecided() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    totals_fixture(
        dir,
        "loop-512 (loop device, direct I/O, over a 300 MiB zero-filled image)",
        "w",
        &[
            (
                "minfs",
                &[
                    10000, 12000, 11000, 13000, 10000, 12000, 11500, 10500, 12500, 11000,
                ],
            ),
            (
                "ext4",
                &[
                    12120, 14328, 13306, 15444, 12000, 14486, 13745, 12713, 14895, 13240,
                ],
            ),
            (
                "xfs",
                &[
                    10030, 11916, 11099, 12948, 10060, 12000, 11385, 10584, 12438, 11110,
                ],
            ),
            (
                "raw",
                &[8080, 9677, 8800, 10358, 7944, 9552, 9108, 8450, 10090, 8826],
            ),
            (
                "zfs",
                &[
                    13000, 9000, 14000, 10000, 12000, 16000, 9500, 15500, 11000, 13500,
                ],
            ),
            ("btrfs", &[30000]),
        ],
    );
    let md = render(dir);
    assert_eq!(
        verdict_of(&md, "w"),
        "- **w**: slower than minfs: ext4 1.20× [1.19–1.21]; faster than minfs: raw 0.80× \
         [0.79–0.81]; within ±5 % of minfs: xfs 1.00× [0.99–1.01]; no difference from minfs \
         found at this resolution: zfs 1.05× [0.79–1.37]; not judged, with fewer than 8 rounds \
         of it and minfs: btrfs 2.67×."
    );
    assert_eq!(
        line_with(&md, "| w |"),
        "| w | 1 | 1.20 ▲ | 1.00 = | 0.80 ▼ | 1.11 ~ | 2.67 (1/10 runs) |"
    );
    // A loop device over an image: the measured verdict says what it does not measure; no
    // traces: nothing modelled.
    assert!(md.contains("It does not measure a spinning drive"));
    assert!(
        md.contains("a loop device over an image file on this machine's disk. That is not a drive")
    );
    assert!(md.contains("No tables are modelled here"));
}

/// Bug: a target with no successful run was listed by name among the ratios, so in "ext4,
/// xfs@4096 1.00×" the ratio read as ext4's too.
#[test]
fn verdict_names_targets_without_runs_apart_from_the_ratios() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    totals_fixture(
        dir,
        "emulated-st1000dm003 (loop device, direct I/O, over hddsim emulate --profile \
         st1000dm003 backed by a 300 MiB zero-filled image)",
        "w",
        &[
            ("minfs", &[10000]),
            ("ext4", &[]),
            ("xfs", &[30000]),
            ("raw", &[]),
        ],
    );
    let md = render(dir);
    assert_eq!(
        verdict_of(&md, "w"),
        "- **w**: not judged, with fewer than 6 rounds of it and minfs: xfs 3.00×; no \
         successful run of ext4, raw."
    );
}

#[test]
fn one_run_each_is_not_judged_and_the_emulated_device_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    totals_fixture(
        dir,
        "emulated-st1000dm003 (loop device, direct I/O, over hddsim emulate --profile \
         st1000dm003 backed by a 300 MiB zero-filled image)",
        "w",
        &[("minfs", &[10000]), ("ext4", &[30000]), ("xfs", &[5000])],
    );
    let md = render(dir);
    assert_eq!(
        verdict_of(&md, "w"),
        "- **w**: not judged, with fewer than 6 rounds of it and minfs: ext4 3.00×, xfs 0.50×."
    );
    assert_eq!(line_with(&md, "| w |"), "| w | 1 | 3.00 | 0.50 |");
    assert!(
        md.contains("### Measured on the emulated drive (`hddsim emulate --profile st1000dm003`)")
    );
    assert!(md.contains("against the drive model in real time"));
    assert!(md.contains("a loop device over an emulated drive (`hddsim emulate`)"));
    assert!(!md.contains("That is not a drive"));
}

/// Where the measured verdict finds a target faster than minfs, the summary says in one line
/// what each sent to the device (counts from the median modelled run's trace) and their block
/// sizes; a target found slower gets no such line.
#[test]
fn a_target_found_faster_is_explained_by_what_it_sent_to_the_device() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let minfs: [u64; 10] = [
        10000, 12000, 11000, 13000, 10000, 12000, 11500, 10500, 12500, 11000,
    ];
    let raw: Vec<u64> = minfs.iter().map(|m| m * 8 / 10).collect();
    let ext4: Vec<u64> = minfs.iter().map(|m| m * 12 / 10).collect();
    totals_fixture(
        dir,
        "loop-512 (loop device, direct I/O, over a 300 MiB zero-filled image)",
        "w",
        &[("minfs", &minfs), ("raw", &raw), ("ext4", &ext4)],
    );
    // Modelled runs: minfs 2,000 writes of 256 KiB with block size 4096; raw and ext4 1,000
    // and 3,000 at 512; every run of a target sends the same.
    for (t, writes, block) in [
        ("minfs", 2000u64, 4096u32),
        ("raw", 1000, 512),
        ("ext4", 3000, 512),
    ] {
        for k in 1..=10u64 {
            let mut rep = report("w", t, (10 + k) * S, (10 + k) * S, 50e6, MS);
            rep.info.block_size = block;
            let mut v = serde_json::to_value(&rep).unwrap();
            v["model"] = json!({
                "profile": "st1000dm003",
                "profile_name": "Seagate ST1000DM003 (512e, modelled)",
                "sequential_limit_ns": 10 * S,
                "requests": 1234,
                "writes": writes,
                "write_bytes": writes * 262_144,
                "reads": 3,
                "read_bytes": 12288,
                "flushes": 10,
                "preflush_writes": 2,
                "fua_writes": 1
            });
            fs::write(
                run_dir(dir, "w", t).join(format!("run-{k}.model-st1000dm003.json")),
                serde_json::to_string(&v).unwrap(),
            )
            .unwrap();
        }
    }
    let md = render(dir);
    assert!(
        verdict_of(&md, "w").contains("faster than minfs: raw 0.80×"),
        "{md}"
    );
    assert!(
        md.contains("Where a target was faster than minfs, what it sent to the device"),
        "{md}"
    );
    let line = line_with(&md, "- raw on **w**: ");
    assert!(line.contains("1,000 writes of 262"), "{line}");
    assert!(
        line.contains("13 flushes or FUA writes, block size 512"),
        "{line}"
    );
    assert!(
        line.contains("against minfs's 2,000 writes of 524"),
        "{line}"
    );
    assert!(line.ends_with("block size 4096."), "{line}");
    assert!(!md.contains("- ext4 on **w**"), "{md}");
}

/// A comparison of one workload, `w`, on a loop device: per target its Cannyls block size and
/// its total (ms) per round, `None` where the round's files are absent (a target that stopped
/// early); run k of every target is round k.
fn rounds_fixture(dir: &Path, w: &str, targets: &[(&str, u32, Vec<Option<u64>>)]) {
    let names: Vec<&str> = targets.iter().map(|t| t.0).collect();
    let runs = targets.iter().map(|t| t.2.len()).max().unwrap_or(0);
    fs::write(
        dir.join("compare.json"),
        json!({"workloads": [w], "targets": names, "runs": runs,
               "device": "loop-512 (loop device, direct I/O, over a 300 MiB zero-filled image)"})
        .to_string(),
    )
    .unwrap();
    for (t, block, totals) in targets {
        let d = run_dir(dir, w, t);
        for (i, total) in totals.iter().enumerate() {
            let Some(total) = total else { continue };
            let mut rep = report(w, t, total * MS, total * MS, 1e8, MS);
            rep.info.block_size = *block;
            fs::write(
                d.join(format!("run-{}.json", i + 1)),
                serde_json::to_string(&rep).unwrap(),
            )
            .unwrap();
        }
    }
}

/// Writes run `k`'s modelled report (profile `st1000dm003`) of `t` on `w`: total `total_ms`,
/// block size `block`, and the model's keys in `work`.
fn add_model(dir: &Path, w: &str, t: &str, k: usize, total_ms: u64, block: u32, work: &Value) {
    let mut rep = report(w, t, total_ms * MS, total_ms * MS, 50e6, MS);
    rep.info.block_size = block;
    let mut v = serde_json::to_value(&rep).unwrap();
    v["model"] = json!({
        "profile": "st1000dm003",
        "profile_name": "Seagate ST1000DM003 (512e, modelled)",
        "sequential_limit_ns": 10 * S,
        "requests": 1234
    });
    for (key, value) in work.as_object().unwrap() {
        v["model"][key] = value.clone();
    }
    fs::write(
        run_dir(dir, w, t).join(format!("run-{k}.model-st1000dm003.json")),
        serde_json::to_string(&v).unwrap(),
    )
    .unwrap();
}

/// The Summary's "What needs no model" counts every write that covers a 4 KiB physical sector
/// in part — the journal's as well as the re-opening puts' — per put and per sync, and the
/// share issued in syncs and in puts; a run whose report predates the count shows n/a. (Each
/// run of the fixture has 1,000 puts and 10 syncs.)
#[test]
fn what_needs_no_model_counts_partial_sector_writes_per_put_and_per_sync() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let w = "durable-256k";
    rounds_fixture(
        dir,
        w,
        &[
            ("minfs", 4096, vec![Some(1000); 3]),
            ("ext4", 512, vec![Some(3000); 3]),
            ("raw", 512, vec![Some(2000); 3]),
        ],
    );
    for k in 1..=3 {
        // minfs at 4096: nothing partial. ext4 at 512: no re-opening put but 1,990, 2,000
        // and 2,010 partial writes (median 2,000: 2.00 per put, 200 per sync), 1,000 of them
        // in syncs and 990 to 1,010 in puts (50 % each at the median). raw: a report from
        // before the partial count (re-opening writes only).
        let partial = 1980 + 10 * k as u64;
        add_model(
            dir,
            w,
            "minfs",
            k,
            2000,
            4096,
            &json!({"reopen_writes": 0, "partial_sector_writes": 0,
                    "partial_sector_writes_in_puts": 0, "partial_sector_writes_in_syncs": 0}),
        );
        add_model(
            dir,
            w,
            "ext4",
            k,
            6000,
            512,
            &json!({"reopen_writes": 0, "partial_sector_writes": partial,
                    "partial_sector_writes_in_puts": partial - 1000,
                    "partial_sector_writes_in_syncs": 1000}),
        );
        add_model(dir, w, "raw", k, 4000, 512, &json!({"reopen_writes": 7}));
    }
    let md = render(dir);
    let summary = &md[md
        .find("### Modelled on the drive")
        .expect("modelled summary")..];
    assert!(
        summary.contains(
            "| Workload | Target | Block size | Runs | Re-opening writes per put | \
             Partial-sector writes per put | per sync | in syncs (%) | in puts (%) |"
        ),
        "{summary}"
    );
    assert_eq!(
        line_with(summary, "| durable-256k | minfs |"),
        "| durable-256k | minfs | 4096 | 3/3 | 0.00 | 0.00 | 0.00 | — | — |"
    );
    assert_eq!(
        line_with(summary, "| durable-256k | ext4 |"),
        "| durable-256k | ext4 | 512 | 3/3 | 0.00 | 2.00 | 200.00 | 50 | 50 |"
    );
    assert_eq!(
        line_with(summary, "| durable-256k | raw |"),
        "| durable-256k | raw | 512 | 3/3 | 0.01 | n/a | n/a | n/a | n/a |"
    );
}

/// The Summary splits ext4's gap to minfs into the file system's part (ext4@4096 against
/// minfs) and the block size's (ext4 against ext4@4096), over the rounds where all three ran,
/// measured and modelled. ext4@4096 stopped after round 6 of 10; in rounds 7–10 ext4 equals
/// minfs, so counting those rounds would bring the total down to 1.73×. xfs has no twin at
/// 4096: no row. Measured, rounds 1–6: ext4@4096 = minfs × 1.5 × (1.01, 0.99, 1.02, 0.98, 1,
/// 1), ext4 = ext4@4096 × 2 × (0.99, 1.01, 1, 1.02, 0.98, 1): Hodges–Lehmann 3.00 [2.94–3.06],
/// 1.50 [1.47–1.53], 2.00 [1.96–2.04] (6 rounds at 95 %: the interval runs from the smallest to
/// the largest log-ratio; checked with a separate computation). Modelled: 1.20 and 2.50
/// exactly in every round.
#[test]
fn the_summary_tells_the_block_size_part_from_the_file_system_part() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let w = "durable-256k";
    let minfs: [u64; 10] = [
        10000, 12000, 11000, 13000, 10000, 12000, 11500, 10500, 12500, 11000,
    ];
    let e = [1.01, 0.99, 1.02, 0.98, 1.0, 1.0];
    let f = [0.99, 1.01, 1.0, 1.02, 0.98, 1.0];
    let at4096: Vec<Option<u64>> = (0..10)
        .map(|k| (k < 6).then(|| (minfs[k] as f64 * 1.5 * e[k]).round() as u64))
        .collect();
    let ext4: Vec<Option<u64>> = (0..10)
        .map(|k| match at4096[k] {
            Some(a) => Some((a as f64 * 2.0 * f[k]).round() as u64),
            None => Some(minfs[k]),
        })
        .collect();
    rounds_fixture(
        dir,
        w,
        &[
            ("minfs", 4096, minfs.iter().map(|&m| Some(m)).collect()),
            ("ext4", 512, ext4),
            ("ext4@4096", 4096, at4096),
            ("xfs", 512, minfs.iter().map(|&m| Some(m * 3)).collect()),
        ],
    );
    for k in 1..=6 {
        add_model(dir, w, "minfs", k, 1000 * k as u64, 4096, &json!({}));
        add_model(dir, w, "ext4@4096", k, 1200 * k as u64, 4096, &json!({}));
        add_model(dir, w, "ext4", k, 3000 * k as u64, 512, &json!({}));
    }
    let md = render(dir);
    let summary = &md[md.find("## Summary").unwrap()..md.find("## How to read").unwrap()];
    let part = &summary[summary
        .find("### Block size or file system\n")
        .expect("a block size or file system part")..];
    let measured = &part[part.find("Measured:").unwrap()..part.find("Modelled on").unwrap()];
    assert!(
        measured.contains(
            "| Workload | fs | total | at 4096 (the file system) | block size part | rounds |"
        ),
        "{measured}"
    );
    assert_eq!(
        line_with(measured, "| durable-256k |"),
        "| durable-256k | ext4 | 3.00× [2.94–3.06] | 1.50× [1.47–1.53] | 2.00× [1.96–2.04] | 6 |"
    );
    assert!(!part.contains("| xfs |"), "{part}");
    let modelled = &part[part.find("Modelled on the drive (").unwrap()..];
    assert_eq!(
        line_with(modelled, "| durable-256k |"),
        "| durable-256k | ext4 | 3.00× [3.00–3.00] | 1.20× [1.20–1.20] | 2.50× [2.50–2.50] | 6 |"
    );
}

/// A target that stopped early (its comparison decided: its later run-K files are simply
/// absent) still renders, and the tables say how many rounds each target has.
#[test]
fn a_target_with_fewer_rounds_than_minfs_renders_with_its_round_count() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let w = "seq-256k";
    let minfs: Vec<Option<u64>> = (0..8).map(|k| Some(10_000 + 100 * k)).collect();
    let ext4: Vec<Option<u64>> = (0..8).map(|k| (k < 3).then_some(30_000)).collect();
    rounds_fixture(
        dir,
        w,
        &[
            ("minfs", 4096, minfs),
            ("ext4", 512, ext4),
            ("xfs", 512, vec![Some(12_000); 8]),
        ],
    );
    for k in 1..=8 {
        add_model(
            dir,
            w,
            "minfs",
            k,
            1000,
            4096,
            &json!({"partial_sector_writes": 0}),
        );
        if k <= 3 {
            add_model(
                dir,
                w,
                "ext4",
                k,
                3000,
                512,
                &json!({"partial_sector_writes": 500}),
            );
        }
    }
    let md = render(dir);
    // The summary table marks the short target's count of runs.
    let table = &md[md.find("## Summary: ratio of total elapsed").unwrap()..];
    let row = line_with(table, "| seq-256k |");
    assert!(
        row.starts_with("| seq-256k | 1 | 2.90 (3/8 runs) | 1.16"),
        "{row}"
    );
    // The measured table's runs cell names the rounds it lacks.
    assert!(
        md.contains("3/8: run 4: —; run 5: —; run 6: —; run 7: —; run 8: —"),
        "{md}"
    );
    // What needs no model: the runs each row comes from.
    assert_eq!(
        line_with(&md, "| seq-256k | ext4 | 512 |"),
        "| seq-256k | ext4 | 512 | 3/8 | n/a | 0.50 | 50.00 | n/a | n/a |"
    );
    assert_eq!(
        line_with(&md, "| seq-256k | minfs | 4096 |"),
        "| seq-256k | minfs | 4096 | 8/8 | n/a | 0.00 | 0.00 | n/a | n/a |"
    );
}

/// With one round of each (the committed whole-drive runs), the split gives that round's
/// ratios, without intervals.
#[test]
fn one_round_splits_into_that_rounds_ratios() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    rounds_fixture(
        dir,
        "seq-4m",
        &[
            ("minfs", 4096, vec![Some(1000)]),
            ("xfs", 512, vec![Some(3000)]),
            ("xfs@4096", 4096, vec![Some(1200)]),
        ],
    );
    let md = render(dir);
    assert_eq!(
        line_with(&md, "| seq-4m | xfs |"),
        "| seq-4m | xfs | 3.00× | 1.20× | 2.50× | 1 |"
    );
}

#[test]
fn an_undecided_budget_comparison_says_how_much_its_rounds_vary_and_what_would_decide_it() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // a: clearly slower (decided); b: two states about 1, undecided after 6 rounds.
    let base: &[u64] = &[1000, 1000, 1000, 1000, 1000, 1000];
    let a = CLEAR_SLOWER;
    let b: &[u64] = &[1080, 930, 1090, 920, 1010, 990];
    totals_fixture(dir, "emulated", "w", &[("minfs", base), ("a", a), ("b", b)]);
    fs::write(
        dir.join("compare.json"),
        json!({"workloads": ["w"], "targets": ["minfs", "a", "b"], "runs": 6,
               "device": "emulated", "stopping": "budget", "budget_s": 900})
        .to_string(),
    )
    .unwrap();
    let md = render(dir);
    let v = verdict_of(&md, "w");
    // What the sentence says of b is what the projection gives on its rounds.
    use bencher_workloads::compare::sequential;
    let d: Vec<f64> = b.iter().map(|x| (*x as f64 / 1000.0).ln()).collect();
    let (_, sd, needed) = sequential::projection(&d, sequential::alpha(2)).unwrap();
    let needed = needed.expect("within the cap");
    assert!(needed > 6, "{needed}");
    let note = format!(
        "(6 rounds; rounds vary by {:.1} %, about {needed} would decide it)",
        sd * 100.0
    );
    let b_entry = &v[v
        .find("within the budget: b ")
        .unwrap_or_else(|| panic!("{v}"))..];
    assert!(b_entry.contains(&note), "{v}\nwants {note}");
    assert!(
        v.contains("undecided against minfs within the budget: b"),
        "{v}"
    );
    // The decided comparison carries no such note.
    assert_eq!(v.matches("rounds vary by").count(), 1, "{v}");
}

/// "To decide the rest" projects what its comparisons would take (each one's rounds at its
/// ratio and spread so far, at the rest's level; each round's runs at compare.json's
/// `seconds_per_run`) and asks for that budget, and for more rounds than a run takes by
/// default where one needs them; without `seconds_per_run` it gives the runs' own time and
/// leaves the budget alone.
#[test]
fn the_rest_command_asks_for_the_budget_and_rounds_its_comparisons_would_take() {
    use bencher_workloads::compare::{defaults, sequential};
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let base: &[u64] = &[1000; 6];
    let clear = CLEAR_SLOWER;
    // Two states about 1, 13 % apart: undecided, and many rounds from a verdict.
    let noisy: &[u64] = &[1150, 870, 1160, 860, 1120, 900];
    totals_fixture(
        dir,
        "emulated",
        "w",
        &[("minfs", base), ("a", clear), ("b", noisy)],
    );
    let meta_with = |steps: bool, budget: u64| {
        let mut m = json!({"workloads": ["w"], "targets": ["minfs", "a", "b"], "runs": 6,
               "device": "emulated", "stopping": "budget", "budget_s": budget,
               "args": ["--span=1306M"]});
        if steps {
            m["seconds_per_run"] = json!({"w": {"minfs": 10.0, "a": 12.0, "b": 14.0}});
        }
        m.to_string()
    };
    let meta = |steps: bool| meta_with(steps, 900);
    let d: Vec<f64> = noisy.iter().map(|x| (*x as f64 / 1000.0).ln()).collect();
    // The rest plans one comparison (b on w).
    let k = sequential::projection(&d, sequential::alpha(1))
        .unwrap()
        .2
        .unwrap();
    assert!(k > defaults::MAX_ROUNDS as usize, "{k}");
    fs::write(dir.join("compare.json"), meta(true)).unwrap();
    let line = line_with(&render(dir), "**To decide the rest**").to_string();
    // k rounds of b and of minfs, 24 s a round.
    let minutes = (k as f64 * 24.0 / 60.0).ceil();
    assert!(
        line.contains(&format!(
            "`scripts/compare.sh --span=1306M --workloads=w --targets=minfs,b \
             --budget={minutes}m --max-rounds={k}`"
        )),
        "{line}"
    );
    assert!(
        line.contains(&format!(
            "they would need up to about {k} rounds (b on w) and about {minutes} minutes of runs \
             (each with its preparation, as measured here), which the command's `--budget` asks \
             for with `--max-rounds`"
        )),
        "{line}"
    );
    // A run whose own budget holds the rest keeps it, and still asks for the rounds.
    fs::write(dir.join("compare.json"), meta_with(true, 7200)).unwrap();
    let line = line_with(&render(dir), "**To decide the rest**").to_string();
    assert!(
        line.contains(&format!(
            "`scripts/compare.sh --span=1306M --workloads=w --targets=minfs,b --budget=7200s \
             --max-rounds={k}`"
        )) && line.contains("within this run's budget but over the rounds a run takes by default"),
        "{line}"
    );
    // Without the runner's times per run: the runs' own time, the budget as it was.
    fs::write(dir.join("compare.json"), meta(false)).unwrap();
    let line = line_with(&render(dir), "**To decide the rest**").to_string();
    let own = (k as f64 * (1.0 + d.iter().map(|x| x.exp()).sum::<f64>() / 6.0) / 60.0).ceil();
    assert!(
        line.contains("`scripts/compare.sh --span=1306M --workloads=w --targets=minfs,b`"),
        "{line}"
    );
    assert!(
        line.contains(&format!(
            "about {own} minutes of runs, counting the runs' own time only"
        )),
        "{line}"
    );
}

#[test]
fn a_budget_report_gives_the_command_that_runs_the_undecided_comparisons_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let base: &[u64] = &[1000; 6];
    let clear = CLEAR_SLOWER;
    let two_state: &[u64] = &[1080, 930, 1090, 920, 1010, 990];
    // w1: a and c decided, b not; w2: all three decided.
    let w1 = [
        ("minfs", base),
        ("a", clear),
        ("b", two_state),
        ("c", clear),
    ];
    totals_fixture(dir, "emulated", "w1", &w1);
    totals_fixture(
        dir,
        "emulated",
        "w2",
        &[("minfs", base), ("a", clear), ("b", clear), ("c", clear)],
    );
    let meta = |budget: u64| {
        json!({"workloads": ["w1", "w2"], "targets": ["minfs", "a", "b", "c"], "runs": 6,
               "device": "emulated", "stopping": "budget", "budget_s": budget,
               "scales": {"w1": 0.3, "w2": 0.3},
               "args": ["--span=1306M", "--device=/dev/disk/by-id/a b"]})
        .to_string()
    };
    fs::write(dir.join("compare.json"), meta(900)).unwrap();
    let md = render(dir);
    let line = line_with(&md, "**To decide the rest**");
    assert!(
        line.contains(
            "`scripts/compare.sh --span=1306M '--device=/dev/disk/by-id/a b' --workloads=w1 \
             --targets=minfs,b --scale=w1=0.3`"
        ),
        "{line}"
    );
    // One comparison planned instead of six: each interval at 95 % instead of 0.05/6.
    assert!(
        line.contains("planning 1 comparison where this one planned 6")
            && line.contains("at 95.00 % instead of 99.17 %"),
        "{line}"
    );
    // A budget not the default is given with it.
    fs::write(dir.join("compare.json"), meta(1800)).unwrap();
    let line = line_with(&render(dir), "**To decide the rest**").to_string();
    assert!(line.contains(" --budget=1800s`"), "{line}");
    // With everything decided there is nothing to offer.
    totals_fixture(dir, "emulated", "w1", &[("b", clear)]);
    fs::write(dir.join("compare.json"), meta(900)).unwrap();
    let md = render(dir);
    assert!(!md.contains("To decide the rest"), "{md}");
}
