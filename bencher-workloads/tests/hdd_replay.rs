//! `minfs-bench hdd-replay`, the caller of `hddsim`: a golden replay of a real run (regenerate
//! with `HDD_BLESS=1`), identical results for identical input, and the command line.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use bencher_workloads::hdd::profile::{self, Profile};
use bencher_workloads::hdd::{self, replay, trace};
use bencher_workloads::run::report::RunReport;
use serde_json::Value;

/// This crate's test data (the run report and the golden replays).
fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("data")
        .join(name)
}

/// The trace and op-log of the golden run, kept with the model (`hddsim/tests/data`).
fn hddsim_data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../hddsim/tests/data")
        .join(name)
}

fn drive512() -> Profile {
    profile::load("st1000dm003").unwrap()
}

fn drive4k() -> Profile {
    profile::load("st1000dm003-4kn").unwrap()
}

fn drive512_merge() -> Profile {
    profile::load("st1000dm003-merge").unwrap()
}

/// The model's second revision (whose golden file predates the third).
fn drive512_write_first() -> Profile {
    profile::load("st1000dm003-write-first").unwrap()
}

fn golden_inputs() -> (trace::Trace, Vec<replay::OpRecord>, RunReport) {
    let t = trace::parse(
        &std::fs::read_to_string(hddsim_data("hdd-mixed.trace")).unwrap(),
        None,
    )
    .unwrap();
    let ops =
        replay::parse_oplog(&std::fs::read_to_string(hddsim_data("hdd-mixed.oplog")).unwrap())
            .unwrap();
    let run: RunReport =
        serde_json::from_str(&std::fs::read_to_string(data("hdd-mixed.run.json")).unwrap())
            .unwrap();
    (t, ops, run)
}

fn model_json(p: &Profile, t: &trace::Trace, ops: &[replay::OpRecord], run: &RunReport) -> String {
    let out = hdd::model_run(&hdd::Inputs {
        profile: p,
        trace: t,
        ops,
        run: Some(run),
        trace_label: "hdd-mixed.trace",
        oplog_label: "hdd-mixed.oplog",
    })
    .unwrap();
    serde_json::to_string_pretty(&out.report).unwrap() + "\n"
}

/// The standard error of a command that must exit 1, as text.
fn stderr_of_failure(cmd: &mut Command) -> String {
    String::from_utf8(cmd.assert().code(1).get_output().stderr.clone()).unwrap()
}

#[test]
fn identical_traces_give_identical_results() {
    let (t, ops, run) = golden_inputs();
    for p in [drive512(), drive4k()] {
        let a = model_json(&p, &t, &ops, &run);
        let b = model_json(&p, &t.clone(), &ops.clone(), &run);
        assert_eq!(a, b);
    }
}

#[test]
fn golden_replay_of_a_real_run() {
    // tests/data/hdd-mixed.*: `minfs-bench run --workload workloads/rand-mixed-1m.wl --scale
    // 0.002 --sync-every 10 --backend raw:/dev/loop0` traced with tracefs (Linux 6.18).
    let (t, ops, run) = golden_inputs();
    for p in [
        drive512(),
        drive512_write_first(),
        drive512_merge(),
        drive4k(),
    ] {
        let got = model_json(&p, &t, &ops, &run);
        let path = data(&format!("hdd-mixed.{}.json", p.stem));
        if std::env::var_os("HDD_BLESS").is_some() {
            std::fs::write(&path, &got).unwrap();
        }
        let want = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (HDD_BLESS=1 writes it)", path.display()));
        assert_eq!(
            got,
            want,
            "{} differs (HDD_BLESS=1 regenerates it)",
            path.display()
        );
        let v: Value = serde_json::from_str(&got).unwrap();
        // The shape of a run report, the run's fields, the model object.
        assert_eq!(v["workload"], "workloads/rand-mixed-1m.wl");
        assert_eq!(v["ops"], 95);
        assert_eq!(v["kinds"].as_array().unwrap().len(), 3);
        let m = &v["model"];
        assert_eq!(m["profile"], p.stem.as_str());
        assert_eq!(m["requests"], 198);
        assert_eq!(m["unmatched_requests"], 0);
        assert_eq!(m["flushes"], 7);
        assert_eq!(m["modelled_total_elapsed_ns"], v["total_elapsed_ns"]);
        assert_eq!(m["measured_total_elapsed_ns"], run.total_elapsed_ns);
        let rmw = m["rmw_penalties"].as_u64().unwrap();
        if p.logical_sector_bytes == 512 {
            assert!(rmw > 0, "1 MiB puts are 2049 sectors: misaligned");
        } else {
            assert_eq!(rmw, 0);
            assert!(m["misaligned_requests"].as_u64().unwrap() > 0);
        }
        // The physical limit is a lower bound for the modelled device time.
        assert!(m["sequential_limit_ns"].as_u64().unwrap() > 0);
    }
}

fn bin() -> Command {
    Command::cargo_bin("minfs-bench").unwrap()
}

#[test]
fn cli() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("m.json");
    let oplog_out = dir.path().join("m.oplog");
    let out = bin()
        .args(["hdd-replay", "--profile", "st1000dm003"])
        .arg(hddsim_data("hdd-mixed.trace"))
        .arg(hddsim_data("hdd-mixed.oplog"))
        .arg("--run")
        .arg(data("hdd-mixed.run.json"))
        .arg("--json")
        .arg(&json)
        .arg("--oplog-out")
        .arg(&oplog_out)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains("kind = Put(1048576), count = 50"), "{text}");
    assert!(
        text.contains("model     st1000dm003 (Seagate Barracuda"),
        "{text}"
    );
    assert!(
        text.contains("total elapsed by commands: measured"),
        "{text}"
    );
    // The file is the golden report.
    let file = std::fs::read_to_string(&json).unwrap();
    assert_eq!(
        file,
        std::fs::read_to_string(data("hdd-mixed.st1000dm003.json")).unwrap()
    );
    // The modelled op-log: same operations, modelled latencies.
    let ops = replay::parse_oplog(&std::fs::read_to_string(&oplog_out).unwrap()).unwrap();
    let v: Value = serde_json::from_str(&file).unwrap();
    assert_eq!(ops.len(), 95);
    let sum: u64 = ops.iter().map(|o| o.end_ns - o.start_ns).sum();
    assert_eq!(sum, v["total_elapsed_ns"].as_u64().unwrap());
    // JSON to stdout, a profile given as a path, no --run.
    let out = bin()
        .args(["hdd-replay", "--json", "-", "--profile"])
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("../hddsim/profiles/st1000dm003-4kn.toml"))
        .arg(hddsim_data("hdd-mixed.trace"))
        .arg(hddsim_data("hdd-mixed.oplog"))
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let v: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["model"]["profile"], "st1000dm003-4kn");
    assert_eq!(
        v["workload"],
        hddsim_data("hdd-mixed.oplog").display().to_string()
    );
    assert_eq!(v["ops"], 95);

    // Errors: exit 1 with the file and line, or what is available.
    let bad_trace = dir.path().join("bad.trace");
    let text = std::fs::read_to_string(hddsim_data("hdd-mixed.trace")).unwrap();
    std::fs::write(
        &bad_trace,
        text.replacen(
            "block_rq_complete: 7,0 RS () 0 + 256",
            "block_rq_complete: 7,0 RS () 0 + ",
            1,
        ),
    )
    .unwrap();
    let line = text
        .lines()
        .position(|l| l.contains("block_rq_complete: 7,0 RS () 0 + 256"))
        .unwrap()
        + 1;
    let err = stderr_of_failure(
        bin()
            .args(["hdd-replay", "--profile", "st1000dm003"])
            .arg(&bad_trace)
            .arg(hddsim_data("hdd-mixed.oplog")),
    );
    assert!(
        err.contains(&format!("bad.trace: line {line}: block_rq_complete:")),
        "{err}"
    );
    let err = stderr_of_failure(
        bin()
            .args(["hdd-replay", "--profile", "nosuch"])
            .arg(hddsim_data("hdd-mixed.trace"))
            .arg(hddsim_data("hdd-mixed.oplog")),
    );
    assert!(
        err.contains("no profile `nosuch`") && err.contains("st1000dm003-4kn"),
        "{err}"
    );
    // A per-run override: the first revision's five rules on the shipped profile model what
    // the st1000dm003-merge profile models, under the override's name.
    let out = bin()
        .args([
            "hdd-replay",
            "--json",
            "-",
            "--profile",
            "st1000dm003+write_hit_clean=keep,write_hit_dirty=merge,destage_unit=track,\
             rmw_grouping=each,rmw_revolutions=1",
        ])
        .arg(hddsim_data("hdd-mixed.trace"))
        .arg(hddsim_data("hdd-mixed.oplog"))
        .arg("--run")
        .arg(data("hdd-mixed.run.json"))
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let mut v: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(
        v["model"]["profile"],
        "st1000dm003+write_hit_clean=keep,write_hit_dirty=merge,destage_unit=track,\
             rmw_grouping=each,rmw_revolutions=1"
    );
    let mut merge: Value = serde_json::from_str(
        &std::fs::read_to_string(data("hdd-mixed.st1000dm003-merge.json")).unwrap(),
    )
    .unwrap();
    for m in [&mut v, &mut merge] {
        m["model"]["profile"] = Value::Null;
        m["model"]["profile_name"] = Value::Null;
        m["workload"] = Value::Null;
    }
    assert_eq!(v, merge);
    let err = stderr_of_failure(
        bin()
            .args([
                "hdd-replay",
                "--profile",
                "st1000dm003+write_hit_dirty=later",
            ])
            .arg(hddsim_data("hdd-mixed.trace"))
            .arg(hddsim_data("hdd-mixed.oplog")),
    );
    assert!(
        err.contains(
            "write_hit_dirty = \"later\": must be \"write-first\", \"merge\", \
             \"overwrite-unless-writing\" or \"wait-if-writing\""
        ),
        "{err}"
    );
    // LBAs past the drive's end are refused.
    let far = dir.path().join("far.trace");
    let issue = text
        .lines()
        .find(|l| l.contains("block_rq_issue: 7,0 WS") && l.contains("+ 1056"))
        .unwrap();
    let (head, tail) = issue.split_once("() ").unwrap();
    let (_, rest) = tail.split_once(' ').unwrap();
    let far_issue = format!("{head}() 1953525000 {rest}");
    let complete = text
        .lines()
        .find(|l| l.contains("block_rq_complete: 7,0 WS () 1558 + 1056"))
        .unwrap();
    let far_complete = complete.replace("() 1558 ", "() 1953525000 ");
    std::fs::write(
        &far,
        text.replace(issue, &far_issue)
            .replace(complete, &far_complete),
    )
    .unwrap();
    let err = stderr_of_failure(
        bin()
            .args(["hdd-replay", "--profile", "st1000dm003"])
            .arg(&far)
            .arg(hddsim_data("hdd-mixed.oplog")),
    );
    assert!(err.contains("ends past the 1953525168 sectors"), "{err}");
    // An op-log of another run.
    let err = bin()
        .args(["hdd-replay", "--profile", "st1000dm003"])
        .arg(hddsim_data("hdd-mixed.trace"))
        .arg(hddsim_data("hdd-mixed.oplog"))
        .arg("--run")
        .arg(data("hdd-mixed.st1000dm003.json"))
        .assert()
        .success();
    drop(err);
    let wrong = dir.path().join("wrong.oplog");
    std::fs::write(&wrong, "0\tnew\t1\t10\t5\t6\n").unwrap();
    let err = stderr_of_failure(
        bin()
            .args(["hdd-replay", "--profile", "st1000dm003"])
            .arg(hddsim_data("hdd-mixed.trace"))
            .arg(&wrong),
    );
    assert!(err.contains("do not overlap in time"));
    bin().args(["hdd-replay", "--profile"]).assert().code(2);
}
