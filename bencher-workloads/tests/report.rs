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

/// Gives every run of `dir` the emulated drive's own statistics (`run-K.emulator.json`: all
/// reads from the media), so that the report judges it by the mean's sequence on matching
/// states, as a run of the emulated drive with per-run statistics.
fn own_states(dir: &Path) {
    for w in fs::read_dir(dir.join("runs")).unwrap().flatten() {
        for t in fs::read_dir(w.path()).unwrap().flatten() {
            for f in fs::read_dir(t.path()).unwrap().flatten() {
                let name = f.file_name().to_string_lossy().into_owned();
                let Some(k) = name
                    .strip_prefix("run-")
                    .and_then(|n| n.strip_suffix(".json"))
                    .filter(|k| k.bytes().all(|b| b.is_ascii_digit()))
                else {
                    continue;
                };
                fs::write(
                    t.path().join(format!("run-{k}.emulator.json")),
                    r#"{"drive": {"cache_read_hits": 0, "media_reads": 400}}"#,
                )
                .unwrap();
            }
        }
    }
}

/// The fixture (totals in s, bandwidth in MB/s, op-log latencies in µs):
///
/// | workload | target | run 1 | run 2 | median | estimate (the rounds' ratios) |
/// | seq-256k | minfs | 10 s, 200 MB/s, wall 11 s | 12 s, 300 MB/s, wall 13 s | 11 s | 1 |
/// | seq-256k | ext4 | 16 s | 20 s | 18 s | √(16/10 × 20/12) = 1.633 → 1.63 |
/// | seq-256k | xfs | 30 s | failed | 30 s | 30/10 = 3.00 (round 1 only) |
/// | rand-mixed-1m | minfs | 4 s | 6 s | 5 s | 1 |
/// | rand-mixed-1m | ext4 | 5 s | 5 s | 5 s | √(5/4 × 5/6) = 1.021 → 1.02 |
/// | rand-mixed-1m | xfs | 2 s | 3 s | 2.5 s | 2/4 = 3/6 = 0.50 |
///
/// (With two rounds the Hodges–Lehmann estimate is the mean of the two log-ratios.)
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

    // Header: the first screen, then the facts of compare.json, SETUP.md, the baseline.
    assert!(
        md.starts_with(
            "# minfs-bench comparison\n\n/dev/loop3 (loop over /var/tmp/x.img) · date not \
             recorded · commit not recorded\n\n**0 of 4 comparisons decided** · wall time not \
             recorded · 1 failed run (below)\n"
        ),
        "{md}"
    );
    assert!(md.contains(
        "Scale 0.1, 2 runs per workload and target, block size 512 bytes, each workload's own \
         seed, device /dev/loop3 (loop over /var/tmp/x.img) (512-byte sectors)."
    ));
    assert!(md.contains("[SETUP.md](SETUP.md)"));
    assert!(md.contains("so minfs = 1 and above 1 means slower than minfs"));
    assert!(!md.contains("is the baseline"));
    assert!(!md.contains(&dir.display().to_string()), "no absolute path");

    // The first screen's table: workloads in compare.json's order, the targets but the
    // baseline as columns, each cell the estimate and its mark (two rounds bound no interval
    // at 98.3 %: undecided).
    assert_eq!(line_with(&md, "| Workload |"), "| Workload | ext4 | xfs |");
    assert_eq!(
        line_with(&md, "| seq-256k |"),
        "| seq-256k | 1.63 ? | 3.00 ? |"
    );
    assert_eq!(
        line_with(&md, "| rand-mixed-1m |"),
        "| rand-mixed-1m | 1.02 ? | 0.50 ? |"
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
    // The ratio column is the comparison's estimate, as everywhere.
    assert!(seq.contains("| ext4 | 18.0 s (16.0 s–20.0 s) | 1.63 | 120.0 | 19.0 s | 2/2 |\n"));
    assert!(seq.contains(
        "| xfs | 30.0 s (30.0 s–30.0 s) | 3.00 | 80.0 | 31.0 s | 1/2: run 2 failed (see \
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
    // ext4: √(42/22 × 42/20) = 2.00; xfs: round 1 only, 63/22 = 2.86.
    assert_eq!(
        line_with(m, "| seq-256k |"),
        "| seq-256k | 2.00 ? | 2.86 ? |"
    );
    assert_eq!(
        line_with(m, "| rand-mixed-1m |"),
        "| rand-mixed-1m | — | — |"
    );
    let mseq = &m[m.find("## seq-256k (modelled)").unwrap()..];
    assert!(mseq.contains("| minfs | 21.0 s (20.0 s–22.0 s) | 1 | 50.0 | 10.0 s | 2.10 | 2/2 |"));
    assert!(mseq.contains("| ext4 | 42.0 s (42.0 s–42.0 s) | 2.00 | 50.0 | 10.0 s | 4.20 | 2/2 |"));
    assert!(mseq.contains("| xfs | 63.0 s (63.0 s–63.0 s) | 2.86 | 50.0 | 10.0 s | 6.30 | 1/2 |"));
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
    // The modelled verdict: two rounds cannot reach 95 % (2⁻² > 2.5 %).
    let summary = &md[md
        .find("## Modelled on the drive")
        .expect("modelled summary")..];
    assert!(
        summary.contains(
            "- **seq-256k**: undecided: ext4 2.00× (2 rounds; at least 6 are needed to bound \
             its interval at this level), xfs 2.86× (1 round; at least 6 are needed to bound \
             its interval at this level)."
        ),
        "{summary}"
    );
    // The method is said once, in "Method and assumptions".
    assert_eq!(md.matches("N× is a target's total elapsed").count(), 1);
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
    assert_eq!(
        line_with(&md, "| seq-256k |"),
        "| seq-256k | 1.63 ? | 3.00 ? |"
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
        "| Workload | ext4 | xfs | raw | btrfs |"
    );
    // btrfs: its one round, 22/10.
    assert_eq!(
        line_with(&md, "| seq-256k |"),
        "| seq-256k | 1.63 ? | 3.00 ? | — | 2.20 ? |"
    );
    assert!(md.contains("| raw | — | — | — | — | 0/2: run 1: —; run 2: — |"));
    // The verdict: raw, never run, is named apart; xfs and btrfs ran once, ext4 twice: too
    // few for three comparisons at 95 % together (each at 98.3 %: 7 rounds at least).
    assert_eq!(
        verdict_of(&md, "seq-256k"),
        "- **seq-256k**: undecided: ext4 1.63× (2 rounds; at least 7 are needed to bound its \
         interval at this level), xfs 3.00× (1 round; at least 7 are needed to bound its \
         interval at this level), btrfs 2.20× (1 round; at least 7 are needed to bound its \
         interval at this level); no round of raw paired with one of minfs."
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
    // Workloads not in compare.json: sorted. xfs/ext4: round 1 only on seq-256k, 30/16 =
    // 1.88; √(2/5 × 3/5) = 0.49.
    assert_eq!(line_with(&md, "| Workload |"), "| Workload | xfs |");
    assert!(md.find("| rand-mixed-1m |").unwrap() < md.find("| seq-256k |").unwrap());
    assert_eq!(line_with(&md, "| seq-256k |"), "| seq-256k | 1.88 ? |");
    assert_eq!(
        line_with(&md, "| rand-mixed-1m |"),
        "| rand-mixed-1m | 0.49 ? |"
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
            "# minfs-bench comparison\n\nThe device the runs used · date not recorded · commit \
             not recorded\n"
        ),
        "{md}"
    );
    assert!(
        md.contains("\n2 runs per workload and target, each workload's own seed.\n"),
        "{md}"
    );
    assert_eq!(line_with(&md, "| Workload |"), "| Workload | ext4 | xfs |");
    assert_eq!(
        line_with(&md, "| seq-256k |"),
        "| seq-256k | 1.63 ? | 3.00 ? |"
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
    let verdict = &md[md.find("## Verdicts").expect("a verdict")..];
    let verdict = &verdict[..verdict[4..].find("\n##").map_or(verdict.len(), |i| i + 4)];
    line_with(verdict, &format!("- **{w}**: "))
}

#[test]
fn the_report_opens_with_its_first_screen_then_verdicts_method_and_tables_each_once() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    fixture(dir);
    let md = render(dir);
    // The first screen: the table, its legend in one line and the plot, before any section.
    let table = md.find("| Workload |").expect("the table");
    let legend = md.find("Total elapsed / minfs's").expect("the legend");
    let plot = md.find("![measured ratios](plots/ratios.png)").unwrap();
    let verdicts = md.find("## Verdicts").expect("the verdicts");
    let method = md.find("## Method and assumptions").expect("the method");
    let tables = md.find("**Total elapsed**").unwrap();
    assert!(table < legend && legend < plot && plot < verdicts, "{md}");
    assert!(verdicts < method && method < tables, "{md}");
    assert!(
        !md[..verdicts].contains("\n## "),
        "no section before the verdicts: {md}"
    );
    let legend_line = line_with(&md, "Total elapsed / minfs's");
    for mark in [
        "▲ slower by more than 5 %",
        "▼ faster by more than 5 %",
        "= within ±5 %",
        "? undecided",
    ] {
        assert!(legend_line.contains(mark), "{legend_line}");
    }
    // rand-mixed-1m: two rounds are too few for three comparisons at 95 % together.
    assert_eq!(
        verdict_of(&md, "rand-mixed-1m"),
        "- **rand-mixed-1m**: undecided: ext4 1.02× (2 rounds; at least 7 are needed to bound \
         its interval at this level), xfs 0.50× (2 rounds; at least 7 are needed to bound its \
         interval at this level)."
    );
    // The method, once, with its level and the number of comparisons, and what is measured.
    assert_eq!(md.matches("## Method and assumptions").count(), 1);
    assert!(md.contains("each at 98.33 %, so that all 3 comparisons hold together at 95 %"));
    assert!(md.contains("Method and sources: `bencher-workloads/src/compare/stats.rs`"));
    // No traces: no modelled verdict; no drive statistics: the states are said unknown.
    assert!(!md.contains("## Modelled on the drive"));
    assert!(md.contains("## Drive states\n\nNot known:"), "{md}");
    // "No difference found" is gone: one word for a comparison without a verdict.
    assert!(!md.contains("no difference"), "{md}");
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
    // The intervals rounded outward (ext4's exact 1.1938–1.2156).
    assert_eq!(
        verdict_of(&md, "w"),
        "- **w**: slower than minfs by more than 5 %: ext4 1.20× [1.19–1.22] (10 rounds); \
         faster than minfs by more than 5 %: raw 0.80× [0.79–0.81] (10 rounds); within ±5 % \
         of minfs: xfs 1.00× [0.99–1.01] (10 rounds); undecided: zfs 1.05× [0.78–1.38] (10 \
         rounds), btrfs 3.00× (1 round; at least 8 are needed to bound its interval at this \
         level)."
    );
    assert_eq!(
        line_with(&md, "| w |"),
        "| w | 1.20 ▲ [1.19–1.22] | 1.00 = [0.99–1.01] | 0.80 ▼ [0.79–0.81] | 1.05 ? \
         [0.78–1.38] | 3.00 ? |"
    );
    assert!(md.contains("**3 of 5 comparisons decided**"), "{md}");
    // A loop device over an image: the measured verdict says what it does not measure; no
    // traces: nothing modelled.
    assert!(md.contains("It does not measure a spinning drive"));
    let first_screen = &md[..md.find("\n## ").unwrap()];
    assert!(
        first_screen.contains("Not a spinning drive: what the targets cost in software"),
        "{first_screen}"
    );
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
        "- **w**: undecided: xfs 3.00× (1 round; at least 6 are needed to bound its interval \
         at this level); no round of ext4, raw paired with one of minfs."
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
        "- **w**: undecided: ext4 3.00× (1 round; at least 6 are needed to bound its interval \
         at this level), xfs 0.50× (1 round; at least 6 are needed to bound its interval at \
         this level)."
    );
    assert_eq!(line_with(&md, "| w |"), "| w | 3.00 ? | 0.50 ? |");
    assert!(md.starts_with(
        "# minfs-bench comparison\n\nThe emulated drive (`hddsim emulate --profile \
         st1000dm003`) · "
    ));
    assert!(md.contains("Measured on the emulated drive (`hddsim emulate --profile st1000dm003`)"));
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
        verdict_of(&md, "w").contains("faster than minfs by more than 5 %: raw 0.80×"),
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
        .find("## Modelled on the drive")
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

/// "Block size or file system" splits ext4's gap to minfs into the file system's part
/// (ext4@4096 against minfs) and the block size's (ext4 against ext4@4096), measured and
/// modelled; the total and the file system's part are those comparisons' own estimates, marks
/// and intervals (the figures of the table at the top: one estimate per comparison), the
/// block size's part its own over the rounds both ran. ext4@4096 stopped after round 6 of 10;
/// in rounds 7–10 ext4 equals minfs, so ext4's own estimate over its 10 rounds is 1.73× (as
/// at the top), not the 3.00× of rounds 1–6. xfs has no twin at 4096: no row. Measured,
/// rounds 1–6: ext4@4096 = minfs × 1.5 × (1.01, 0.99, 1.02, 0.98, 1, 1), ext4 = ext4@4096 × 2
/// × (0.99, 1.01, 1, 1.02, 0.98, 1): the block size part 2.00× [1.96–2.04] (6 rounds at 95 %:
/// from the smallest to the largest log-ratio). The three comparisons hold together at 95 %
/// (each at 98.3 %, 7 rounds at least): ext4@4096's 6 rounds bound no interval. Modelled:
/// 1.20 and 2.50 exactly in every round.
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
    let part = &md[md
        .find("## Block size or file system\n")
        .expect("a block size or file system part")
        ..md.find("## How the runs were made").unwrap()];
    let measured = &part[part.find("Measured:").unwrap()..part.find("Modelled on").unwrap()];
    assert!(
        measured.contains(
            "| Workload | fs | total | at 4096 (the file system) | block size part | rounds |"
        ),
        "{measured}"
    );
    assert_eq!(
        line_with(measured, "| durable-256k |"),
        "| durable-256k | ext4 | 1.73 ? [1.00–3.03] | 1.50 ? | 2.00× [1.96–2.04] | 10 / 6 / 6 |"
    );
    // The total is the figure of the table at the top.
    assert_eq!(
        line_with(&md, "| durable-256k | 1.73 ? [1.00–3.03] |"),
        "| durable-256k | 1.73 ? [1.00–3.03] | 1.50 ? | 3.00 ▲ [3.00–3.01] |"
    );
    // The text says what the figures are, and claims no signed-rank interval it does not
    // show.
    assert!(part.contains("those comparisons' own estimates, marks and intervals"));
    assert!(!part.contains("no interval with fewer than 6 rounds"));
    assert!(!part.contains("| xfs |"), "{part}");
    let modelled = &part[part.find("Modelled on the drive (").unwrap()..];
    assert_eq!(
        line_with(modelled, "| durable-256k |"),
        "| durable-256k | ext4 | 3.00 ? | 1.20 ? | 2.50× [2.50–2.50] | 6 / 6 / 6 |"
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
    // The table at the top: ext4's estimate from its 3 rounds (30 s against 10.0, 10.1 and
    // 10.2 s), too few to bound.
    assert_eq!(
        line_with(&md, "| seq-256k |"),
        "| seq-256k | 2.97 ? | 1.16 ▲ [1.13–1.19] |"
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
        "| seq-4m | xfs | 3.00 ? | 1.20 ? | 2.50× | 1 / 1 / 1 |"
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
    own_states(dir);
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
    assert!(v.contains("undecided within the budget: b"), "{v}");
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
    own_states(dir);
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
    own_states(dir);
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
    own_states(dir);
    fs::write(dir.join("compare.json"), meta(900)).unwrap();
    let md = render(dir);
    assert!(!md.contains("To decide the rest"), "{md}");
}

/// A budget comparison of a read workload on the emulated drive whose runs carry the
/// drive's own statistics: in rounds 3 and 7 of 10 xfs's gets came from the drive's cache
/// (300 hits against 110 media reads) and its run was 14 % faster; minfs's always from the
/// media. The verdict is on the 8 rounds whose states match — within ±5 % — and says what it
/// set aside; the drive states table gives each target's share with its interval. Judged on
/// all 10 rounds the estimate would be 0.97, not 1.00.
#[test]
fn a_budget_comparison_is_judged_on_the_rounds_whose_drive_states_match() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let w = "rand-oldest-1m";
    let base: Vec<u64> = (0..10).map(|k| 6000 + 10 * k).collect();
    let media = [
        1.002, 0.998, 1.0, 1.001, 0.999, 1.0, 1.002, 0.998, 1.001, 0.999,
    ];
    let cached = |k: usize| k == 2 || k == 6;
    let xfs: Vec<u64> = (0..10)
        .map(|k| {
            let r = if cached(k) { 0.86 } else { media[k] };
            (base[k] as f64 * r).round() as u64
        })
        .collect();
    totals_fixture(
        dir,
        "emulated-st1000dm003 (loop device, direct I/O, over hddsim emulate --profile st1000dm003)",
        w,
        &[("minfs", &base), ("xfs", &xfs)],
    );
    fs::write(
        dir.join("compare.json"),
        json!({"workloads": [w], "targets": ["minfs", "xfs"], "runs": 10,
               "device": "emulated-st1000dm003 (loop device, direct I/O, over hddsim emulate --profile st1000dm003)",
               "stopping": "budget", "budget_s": 900})
        .to_string(),
    )
    .unwrap();
    for (t, totals) in [("minfs", &base), ("xfs", &xfs)] {
        for (k, total) in totals.iter().enumerate() {
            let d = run_dir(dir, w, t);
            // A read workload: its reports count gets.
            let mut rep = report(w, t, total * MS, total * MS, 1e8, MS);
            rep.kinds.push(kind("Get(1048576)", 400, [MS; 5], 2 * MS));
            fs::write(
                d.join(format!("run-{}.json", k + 1)),
                serde_json::to_string(&rep).unwrap(),
            )
            .unwrap();
            let hits = if t == "xfs" && cached(k) { 300 } else { 170 };
            fs::write(
                d.join(format!("run-{}.emulator.json", k + 1)),
                json!({"drive": {"cache_read_hits": hits, "media_reads": 410 - hits}}).to_string(),
            )
            .unwrap();
        }
    }
    let md = render(dir);
    let v = verdict_of(&md, w);
    assert!(
        v.starts_with("- **rand-oldest-1m**: within ±5 % of minfs: xfs 1.00× ["),
        "{v}"
    );
    assert!(
        v.contains(
            "(8 of 10 rounds, both runs reading mostly from the media; 2 set aside, in which xfs \
             read mostly from the drive's cache: 0.86×)"
        ),
        "{v}"
    );
    let row = line_with(&md, "| rand-oldest-1m | 1.00 = [");
    assert!(row.starts_with("| rand-oldest-1m | 1.00 = ["), "{row}");
    // The states: from the emulator; the shares with their anytime-valid intervals.
    let states = &md[md.find("## Drive states").unwrap()..md.find("## Method").unwrap()];
    assert!(
        states.contains("from the emulated drive's own statistics of each run"),
        "{states}"
    );
    let (lo, hi) = bencher_workloads::compare::states::frequency_interval(2, 10, 0.05);
    assert_eq!(
        line_with(states, "| rand-oldest-1m |"),
        format!(
            "| rand-oldest-1m | 0 of 10 (0–{:.0} %) | 2 of 10 ({:.0}–{:.0} %) |",
            (bencher_workloads::compare::states::frequency_interval(0, 10, 0.05).1 * 100.0).ceil(),
            (lo * 100.0).floor(),
            (hi * 100.0).ceil()
        )
    );
    // The method is the mean's sequence on matching states.
    assert!(
        md.contains("a t-mixture e-value of the mean log-ratio"),
        "{md}"
    );
}

/// A budget run on the emulated drive recorded before the emulator's per-run statistics:
/// the states shown are the replays' and said to be, and the verdict is the median's
/// sequence, which assumes no states — 6 clearly slower rounds are not decided (one
/// comparison, at 95 %, needs 7).
#[test]
fn without_the_runs_own_states_the_median_judges_and_the_replays_states_are_named() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let device = "emulated-st1000dm003 (loop device, direct I/O, over hddsim emulate --profile \
                  st1000dm003)";
    fs::write(
        dir.join("compare.json"),
        json!({"workloads": ["w"], "targets": ["minfs", "a"], "runs": 6, "device": device,
               "stopping": "budget", "budget_s": 900})
        .to_string(),
    )
    .unwrap();
    for (t, totals) in [("minfs", &[1000u64; 6][..]), ("a", CLEAR_SLOWER)] {
        for (i, total) in totals.iter().enumerate() {
            let k = i + 1;
            let mut rep = report("w", t, total * MS, total * MS, 1e8, MS);
            rep.kinds.push(kind("Get(1048576)", 400, [MS; 5], 2 * MS));
            let d = run_dir(dir, "w", t);
            fs::write(
                d.join(format!("run-{k}.json")),
                serde_json::to_string(&rep).unwrap(),
            )
            .unwrap();
            // The replay: most reads from the cache in a's run 2.
            let hits = if t == "a" && k == 2 { 300 } else { 170 };
            let mut v = serde_json::to_value(&rep).unwrap();
            v["model"] = json!({"profile": "st1000dm003", "profile_name": "ST1000DM003",
                                "cache_read_hits": hits, "media_reads": 410 - hits});
            fs::write(
                d.join(format!("run-{k}.model-st1000dm003.json")),
                v.to_string(),
            )
            .unwrap();
        }
    }
    let md = render(dir);
    assert!(md.contains("**0 of 1 comparisons decided**"), "{md}");
    let v = verdict_of(&md, "w");
    // Every round judged: the replay's state of run 2 decides nothing.
    assert!(
        v.contains("undecided within the budget: a 1.50× (6 rounds"),
        "{v}"
    );
    assert!(
        md.contains("the anytime-valid confidence sequence of the median log-ratio"),
        "{md}"
    );
    assert!(md.contains("at least 7 rounds to bound one"), "{md}");
    let states = &md[md.find("## Drive states").unwrap()..md.find("## Method").unwrap()];
    assert!(
        states.contains("so the states below are the replays'"),
        "{states}"
    );
    assert!(
        states.contains("they do not enter the verdicts"),
        "{states}"
    );
    assert!(
        line_with(states, "| w |").contains("| 1 of 6 ("),
        "{states}"
    );
    // The replays' own verdict is the mean's on matching states: round 2 set aside.
    let modelled = &md[md.find("## Modelled on the drive").unwrap()..];
    assert!(
        line_with(modelled, "- **w**: ").contains("5 of 6 rounds"),
        "{modelled}"
    );
}

/// A budget run's tables count each target's runs: rounds a comparison stopped before are
/// no failures ("3", not "3/8: run 4: —; …").
#[test]
fn a_budget_runs_tables_count_runs_without_the_rounds_never_needed() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let base: Vec<u64> = vec![1000; 8];
    totals_fixture(
        dir,
        "emulated",
        "w",
        &[("minfs", &base), ("a", &CLEAR_SLOWER[..4]), ("b", &base)],
    );
    fs::write(
        dir.join("compare.json"),
        json!({"workloads": ["w"], "targets": ["minfs", "a", "b"], "runs": 8,
               "device": "emulated", "stopping": "budget", "budget_s": 900})
        .to_string(),
    )
    .unwrap();
    own_states(dir);
    let md = render(dir);
    let table = &md[md.find("## w\n").unwrap()..];
    assert!(line_with(table, "| a |").ends_with("| 4 |"), "{table}");
    assert!(line_with(table, "| minfs |").ends_with("| 8 |"), "{table}");
    assert!(!md.contains("run 5: —"), "{md}");
    assert!(!md.contains("/8"), "{md}");
}

/// Bug: "What needs no model: each target's Cannyls block size (…), and" ended there when
/// the traces counted no partial-sector writes (the table it led into was empty).
#[test]
fn what_needs_no_model_is_a_whole_sentence_without_the_trace_counts() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    rounds_fixture(
        dir,
        "w",
        &[
            ("minfs", 4096, vec![Some(1000); 2]),
            ("ext4", 512, vec![Some(1100); 2]),
        ],
    );
    for k in 1..=2 {
        add_model(dir, "w", "minfs", k, 1000, 4096, &json!({}));
        add_model(dir, "w", "ext4", k, 1100, 512, &json!({}));
    }
    let md = render(dir);
    assert!(
        md.contains(
            "What needs no model: each target's Cannyls block size (minfs 4096, ext4 512).\n"
        ),
        "{md}"
    );
    assert!(!md.lines().any(|l| l.trim_end().ends_with(", and")), "{md}");
}

/// The committed comparisons, rendered as `minfs-bench report` renders them (in memory:
/// nothing under results/ is written): every interval printed in the table at the top gives
/// the verdict its mark says (rounded outward, with the digits that takes: no "slower 1.05×
/// [1.00–1.05]"), and each comparison's estimate is the same figure in the table at the top,
/// the table of its workload and the block-size split. Directories written by earlier
/// versions of the runner render too.
#[test]
fn committed_reports_print_intervals_that_agree_with_their_marks_and_one_estimate_each() {
    use bencher_workloads::compare::{self, stats, summary::SetupFacts, Judged};
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../results");
    for name in [
        "2026-11-28-vm-emulated-default-13",
        "2026-11-28-vm-emulated-rest-3",
        "2026-11-27-vm-loop-budget",
        "2026-11-26-vm-loop-default",
    ] {
        let dir = Path::new(root).join(name);
        let cmp = compare::load(&dir).unwrap_or_else(|e| panic!("{name}: {e}"));
        let judged = Judged::of(&cmp);
        let setup = fs::read_to_string(dir.join("SETUP.md")).unwrap_or_default();
        let md = compare::render::markdown(&cmp, &judged, &SetupFacts::parse(&setup));
        let head = line_with(&md, "| Workload |");
        let names: Vec<&str> = head.trim_matches('|').split(" | ").map(str::trim).collect();
        let top = &md[md.find(head).unwrap()..md.find("## Verdicts").unwrap()];
        let mut cells = 0;
        for row in top.lines().skip(2).take_while(|l| l.starts_with('|')) {
            let parts: Vec<&str> = row.trim_matches('|').split(" | ").map(str::trim).collect();
            let w = parts[0];
            for (t, cell) in names[1..].iter().zip(&parts[1..]) {
                if *cell == "—" {
                    continue;
                }
                cells += 1;
                let mut words = cell.splitn(3, ' ');
                let estimate: f64 = words.next().unwrap().parse().unwrap();
                let mark = words.next().unwrap();
                if let Some(iv) = words.next() {
                    let iv = iv.trim_start_matches('[').trim_end_matches(']');
                    let (lo, hi) = iv.split_once('–').unwrap();
                    let (lo, hi): (f64, f64) = (lo.parse().unwrap(), hi.parse().unwrap());
                    let want = stats::region(lo, hi).mark(stats::side(lo, hi));
                    assert_eq!(mark, want, "{name} {w} {t}: {cell}");
                    assert!(lo <= estimate && estimate <= hi, "{name} {w} {t}: {cell}");
                } else {
                    assert!(mark.starts_with('?'), "{name} {w} {t}: {cell}");
                }
                // The same estimate in the workload's own table.
                let table = &md[md.find(&format!("\n## {w}\n")).unwrap()..];
                let ratio: f64 = line_with(table, &format!("| {t} |"))
                    .split(" | ")
                    .nth(2)
                    .unwrap()
                    .parse()
                    .unwrap();
                assert!(
                    (ratio - estimate).abs() <= 0.005 + 1e-9,
                    "{name} {w} {t}: {ratio} against {cell}"
                );
                // And in the block-size split, word for word.
                if let Some(split) = md.find("## Block size or file system") {
                    let split = &md[split
                        ..md[split..]
                            .find("Modelled on")
                            .map_or(md.len(), |i| split + i)];
                    if let Some(r) = split
                        .lines()
                        .find(|l| l.starts_with(&format!("| {w} | {t} |")))
                    {
                        assert_eq!(r.split(" | ").nth(2).unwrap(), *cell, "{name} {w} {t}");
                    }
                }
            }
        }
        assert!(cells >= 2, "{name}: {cells} cells");
    }
}

/// A comparison held against a full-scale reference (`compare.json`'s `reference`): beside a
/// verdict more than 3 % from the reference's ratio, that ratio; under the table, how many
/// are within 3 % and, for the others, the share of reads the drive's cache served here and
/// there (from the runs' `run-K.emulator.json`).
#[test]
fn a_verdict_far_from_the_full_scale_reference_says_so_and_what_the_cache_did() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    totals_fixture(
        dir,
        "emulated (hddsim emulate --profile st1000dm003)",
        "w",
        &[
            ("minfs", &[1000, 1010, 990, 1005, 995, 1000]),
            ("ext4", CLEAR_SLOWER),
            ("xfs", &[1010, 1020, 1000, 1015, 1005, 1010]),
        ],
    );
    let mut meta: Value =
        serde_json::from_str(&fs::read_to_string(dir.join("compare.json")).unwrap()).unwrap();
    meta["reference"] = json!({
        "dir": "results/full",
        "ratios": {"w": {"ext4": 1.51, "xfs": 1.20}},
        "cache_share": {"w": {"minfs": 0.0, "ext4": 0.05, "xfs": 0.1}}
    });
    fs::write(dir.join("compare.json"), meta.to_string()).unwrap();
    for (t, hits) in [("minfs", 2), ("ext4", 5), ("xfs", 60)] {
        for k in 1..=6 {
            fs::write(
                run_dir(dir, "w", t).join(format!("run-{k}.emulator.json")),
                json!({"drive": {"cache_read_hits": hits, "media_reads": 100 - hits}}).to_string(),
            )
            .unwrap();
        }
    }
    let md = render(dir);
    let row = line_with(&md, "| w |");
    // ext4 (1.50 against 1.51) is within 3 %: nothing beside it; xfs (1.01 against 1.20) is not.
    assert!(!row.contains("1.51"), "{row}");
    assert!(row.contains("(full scale 1.20)"), "{row}");
    assert!(
        md.contains("1 of the 2 comparisons both have are within 3 % of it"),
        "{md}"
    );
    assert!(
        md.contains(
            "- xfs on w: 1.01 here, 1.20 at full scale; the drive's cache served 60 % of its \
             reads here (minfs 2 %), 10 % at full scale (minfs 0 %)."
        ),
        "{md}"
    );
    // With the drive's activities counted on both sides, the one whose excess over minfs
    // differs most is named: xfs's flushes waited 30 % of its time more than minfs's at full
    // scale, 5 % here (its seeks differ by less).
    for (t, flush_ms, seek_ms) in [("minfs", 50, 100), ("xfs", 100, 120)] {
        for k in 1..=6 {
            fs::write(
                run_dir(dir, "w", t).join(format!("run-{k}.emulator.json")),
                json!({"drive": {
                    "cache_read_hits": 5, "media_reads": 95,
                    "flush_wait_ns": flush_ms * MS, "read_seek_ns": seek_ms * MS,
                    "destage_seek_ns": 0
                }})
                .to_string(),
            )
            .unwrap();
        }
    }
    meta["reference"]["activity"] = json!({"w": {
        "minfs": {"flush_waits": 0.05, "seeks": 0.10},
        "xfs": {"flush_waits": 0.35, "seeks": 0.11}
    }});
    fs::write(dir.join("compare.json"), meta.to_string()).unwrap();
    let md = render(dir);
    assert!(
        md.contains(
            "- xfs on w: 1.01 here, 1.20 at full scale; most of the difference is in flushes \
             waiting for the cache to drain: their share of xfs's time less their share of \
             minfs's, +5 % here, +30 % at full scale;"
        ),
        "{md}"
    );
    // Without a reference, nothing of it.
    meta.as_object_mut().unwrap().remove("reference");
    fs::write(dir.join("compare.json"), meta.to_string()).unwrap();
    let md = render(dir);
    assert!(!md.contains("full scale"), "{md}");
}
