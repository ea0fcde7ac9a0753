//! The `hddsim` command: replay, demerit and validate, their output and their errors.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use serde_json::Value;

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("data")
        .join(name)
}

fn hddsim() -> Command {
    Command::cargo_bin("hddsim").unwrap()
}

fn stdout(cmd: &mut Command) -> String {
    String::from_utf8(cmd.assert().success().get_output().stdout.clone()).unwrap()
}

/// The standard error of a command that must exit 1, as text.
fn stderr_of_failure(cmd: &mut Command) -> String {
    String::from_utf8(cmd.assert().code(1).get_output().stderr.clone()).unwrap()
}

#[test]
fn replay_then_demerit_against_the_measured_run() {
    let dir = tempfile::tempdir().unwrap();
    let modelled = dir.path().join("m.oplog");
    let json = dir.path().join("m.json");
    let text = stdout(
        hddsim()
            .args(["replay", "--profile", "st1000dm003", "--oplog-out"])
            .arg(&modelled)
            .arg("--json")
            .arg(&json)
            .arg(data("hdd-mixed.trace"))
            .arg(data("hdd-mixed.oplog")),
    );
    assert!(text.starts_with("model     st1000dm003"), "{text}");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let ops = v["ops"].as_array().unwrap();
    assert_eq!(ops.len(), 95);
    let sum: u64 = ops.iter().map(|o| o["modelled_ns"].as_u64().unwrap()).sum();
    assert_eq!(
        sum,
        v["model"]["modelled_total_elapsed_ns"].as_u64().unwrap()
    );
    assert!(
        text.contains("write hits: 0 writes re-open a 4 KiB sector"),
        "{text}"
    );

    // The first revision's rules as an override: the same model as st1000dm003-merge, under
    // the override's name.
    let merge = |spec: &str| -> Value {
        let out = stdout(
            hddsim()
                .args(["replay", "--json", "-", "--profile", spec])
                .arg(data("hdd-mixed.trace"))
                .arg(data("hdd-mixed.oplog")),
        );
        serde_json::from_str(&out).unwrap()
    };
    let spec = "st1000dm003+write_hit_clean=keep,write_hit_dirty=merge,destage_unit=track,rmw_grouping=each,rmw_revolutions=1";
    let over = merge(spec);
    let shipped = merge("st1000dm003-merge");
    assert_eq!(over["model"]["profile"], spec);
    assert_eq!(over["ops"], shipped["ops"]);
    assert_eq!(
        over["model"]["modelled_total_elapsed_ns"],
        shipped["model"]["modelled_total_elapsed_ns"]
    );
    assert_ne!(
        over["model"]["modelled_total_elapsed_ns"], v["model"]["modelled_total_elapsed_ns"],
        "the rules make a difference on this trace"
    );

    // The demerit of a run against itself is 0; against the measured run it is the RMS
    // distance between the modelled and measured latencies, per kind.
    let same = stdout(hddsim().arg("demerit").arg(&modelled).arg(&modelled));
    assert!(same.contains("overall") && same.contains(" 0ns "), "{same}");
    let out = stdout(
        hddsim()
            .args(["demerit", "--json", "-"])
            .arg(&modelled)
            .arg(data("hdd-mixed.oplog")),
    );
    let figs: Value = serde_json::from_str(&out).unwrap();
    let kinds: Vec<&str> = figs
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["Get(1048576)", "Put(1048576)", "Sync", "overall"]);
    for f in figs.as_array().unwrap() {
        assert_eq!(f["exact"], true);
        let d = f["demerit_ns"].as_f64().unwrap();
        // At least the difference of the means (RMS ≥ |mean difference|).
        let gap =
            (f["model_mean_ns"].as_f64().unwrap() - f["reference_mean_ns"].as_f64().unwrap()).abs();
        assert!(d > 0.0 && d + 1.0 >= gap, "{f}");
    }
    // A run report is read too (percentiles interpolated).
    let report = dir.path().join("r.json");
    std::fs::write(
        &report,
        r#"{"kinds":[{"kind":"Get(1048576)","count":1,"min_ns":1000000,"max_ns":9000000,
        "percentiles_ns":{"50.0":5000000}}]}"#,
    )
    .unwrap();
    let out = stdout(hddsim().arg("demerit").arg(&modelled).arg(&report));
    assert!(out.contains("interpolated"), "{out}");
}

#[test]
fn validate_prints_the_model_next_to_the_references() {
    let out = stdout(hddsim().args(["validate", "--profile", "st1000dm003", "--json", "-"]));
    let v: Value = serde_json::from_str(&out).unwrap();
    let checks = &v["checks"];
    let find = |prefix: &str| {
        checks
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["figure"].as_str().unwrap().starts_with(prefix))
            .unwrap_or_else(|| panic!("no `{prefix}` in {out}"))
            .clone()
    };
    // The seek curves reproduce the manual's figures they were solved from.
    for prefix in [
        "average seek, read",
        "average seek, write",
        "track-to-track seek",
    ] {
        let c = find(prefix);
        let (m, r) = (c["model"].as_f64().unwrap(), c["manual"].as_f64().unwrap());
        assert!((m / r - 1.0).abs() < 0.02, "{c}");
    }
    // The outer-edge stream runs at the data sheet's rate.
    let c = find("sequential read at the outer edge");
    assert!(
        (c["model"].as_f64().unwrap() / 210.0 - 1.0).abs() < 0.02,
        "{c}"
    );
    // The rule streams: exact appends cost the same under every variant; the padded puts
    // are slower under the second revision's rules (column 7) than under the first's (8).
    let rs = &v["rule_streams"];
    assert_eq!(rs["variants"].as_array().unwrap().len(), 9);
    let row = |prefix: &str| -> Vec<f64> {
        rs["streams"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["stream"].as_str().unwrap().starts_with(prefix))
            .unwrap()["mb_per_s"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect()
    };
    let exact = row("513-sector puts appended exactly");
    assert!(exact.iter().all(|&x| x == exact[0]), "{exact:?}");
    let padded = row("513-sector puts padded");
    assert!(padded[6] < padded[7] / 2.0, "{padded:?}");
    // The published patterns carry their source next to the model's ratios.
    let patterns = rs["patterns"].as_array().unwrap();
    let osnews = patterns
        .iter()
        .find(|p| {
            p["pattern"]
                .as_str()
                .unwrap()
                .starts_with("1000 random 4 KiB")
        })
        .unwrap();
    assert!(osnews["published"]["source"]
        .as_str()
        .unwrap()
        .contains("OSNews"));
    assert_eq!(osnews["ratio"].as_array().unwrap().len(), 9);
    let text = stdout(hddsim().args(["validate", "--profile", "st1000dm003"]));
    assert!(
        text.contains("sister") && text.contains("flush after 64 scattered"),
        "{text}"
    );
    assert!(
        text.contains("rule streams")
            && text.contains("[7] second revision: clear-segment, write-first, unit track")
            && text.contains("published patterns"),
        "{text}"
    );
}

#[test]
fn errors_name_the_input_and_exit_1_usage_2() {
    let err = stderr_of_failure(hddsim().args(["validate", "--profile", "nosuch"]));
    assert!(err.contains("nosuch"));
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.oplog");
    std::fs::write(&bad, "0\tfly\t1\t10\t5\t6\n").unwrap();
    let err = stderr_of_failure(
        hddsim()
            .arg("demerit")
            .arg(&bad)
            .arg(data("hdd-mixed.oplog")),
    );
    assert!(err.contains("bad.oplog: line 1: kind `fly`"), "{err}");
    hddsim().args(["replay", "--profile"]).assert().code(2);
    hddsim().arg("frobnicate").assert().code(2);
}
