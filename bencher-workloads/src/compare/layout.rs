//! Reading a comparison directory (written by `scripts/compare.sh`):
//!
//! ```text
//! DIR/compare.json                                    workloads, targets, runs, scale, …
//! DIR/SETUP.md                                        how the runs were made
//! DIR/runs/<workload>/<target>/run-<k>.json           a RunReport (k = 1..runs)
//! DIR/runs/<workload>/<target>/run-<k>.oplog          its op-log
//! DIR/runs/<workload>/<target>/run-<k>.error          instead of the JSON when the run failed
//! DIR/runs/<workload>/<target>/run-<k>.model-<profile>.json
//!                                                     modelled HDD times: a RunReport plus "model"
//! DIR/runs/<workload>/<target>/run-<k>.emulator.json  the emulated drive's own statistics of the
//!                                                     run (hddsim's DriveStats, top level or as
//!                                                     "drive")
//! ```
//!
//! Other files (`run-<k>.trace`, …) are ignored. Workloads and targets come in the order of
//! `compare.json`, then any others found under `runs/`, sorted.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::{self, BufRead, BufReader};
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::states::DriveCounts;
use super::CompareError;
use crate::run::report::RunReport;

/// The largest run number accepted in a file name (`run-<k>.json`).
pub const MAX_RUNS: usize = 1000;

/// The profile of the emulated drive in compare.json's `device` (`… over hddsim emulate
/// --profile PROFILE: …`, as `minfs-bench compare` writes it); `None` for another device.
pub fn emulated_profile(device: &str) -> Option<&str> {
    const AT: &str = "hddsim emulate --profile ";
    let rest = &device[device.find(AT)? + AT.len()..];
    let end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || "-_+=,.".contains(c)))
        .unwrap_or(rest.len());
    (end > 0).then(|| &rest[..end])
}

/// `compare.json`. Every key is optional; unknown keys are ignored.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Meta {
    /// The workloads, in the order to show them.
    pub workloads: Option<Vec<String>>,
    /// The targets, in the order to show them.
    pub targets: Option<Vec<String>>,
    /// Runs per workload and target.
    pub runs: Option<u64>,
    /// `--scale`.
    pub scale: Option<f64>,
    /// `--seed` (null: each workload's own).
    pub seed: Option<u64>,
    /// `--block-size`.
    pub block_size: Option<u64>,
    /// The device the runs used, as the script describes it.
    pub device: Option<String>,
    /// Its logical sector size.
    pub sector_size: Option<u64>,
    /// `runs` (each round runs every target once, so run k of two targets pair) or `targets`.
    pub order: Option<String>,
    /// The drive-model profiles that are rule sets of one drive, the shipped one first (the
    /// report's modelled verdict gives the first with the range across them all). Without
    /// it, every profile but a `-4kn` one, `st1000dm003` first where present.
    pub variants: Option<Vec<String>>,
    /// How the rounds were ended: `budget` (each comparison stopped once decided, the verdict
    /// a confidence sequence: [`super::sequential`]) or `fixed` (`--runs`; the fixed-count
    /// signed-rank interval). Absent in directories written before 2026-11-27: `fixed`.
    pub stopping: Option<String>,
    /// `--budget` in seconds (budget runs).
    pub budget_s: Option<f64>,
    /// The most rounds a budget run would take.
    pub max_rounds: Option<u64>,
    /// Each workload's scale.
    pub scales: Option<BTreeMap<String, f64>>,
    /// The options that make the run's device and settings again (runs since 2026-11-28).
    pub args: Option<Vec<String>>,
    /// Per workload and target, the mean time of one of its runs in seconds, preparation and
    /// replays included, as the runner measured it (budget runs since 2026-11-28's night).
    pub seconds_per_run: Option<BTreeMap<String, BTreeMap<String, f64>>>,
    /// The full-scale run this comparison is held against ([`super::reference`]; since
    /// 2026-11-29, on the emulated drive).
    pub reference: Option<super::reference::Reference>,
    /// Every run ended with a timed journal sync (`minfs-bench run --final-sync`, since
    /// 2026-11-29); absent before.
    pub final_sync: Option<bool>,
}

impl Meta {
    /// Whether the runs stopped each comparison once decided (`"stopping": "budget"`).
    pub fn sequential(&self) -> bool {
        self.stopping.as_deref() == Some("budget")
    }
}

/// The `"model"` object of a modelled report (other keys are ignored).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ModelInfo {
    /// The profile's id (`st1000dm003`).
    pub profile: Option<String>,
    /// Its name for people.
    pub profile_name: Option<String>,
    /// The time the drive would take to transfer the run's bytes sequentially.
    pub sequential_limit_ns: Option<u64>,
    /// What the trace held and what the modelled drive did with it (`hddsim`'s
    /// `ModelSummary`); absent in reports from before these were read.
    #[serde(flatten)]
    pub work: DriveWork,
}

/// The requests of a modelled run and where the modelled drive's time went: the fields of
/// `hddsim::ModelSummary` the report breaks a total down by. Every field is optional, so a
/// report written without one still loads.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct DriveWork {
    /// Read requests.
    pub reads: Option<u64>,
    /// Bytes they read.
    pub read_bytes: Option<u64>,
    /// Write requests.
    pub writes: Option<u64>,
    /// Bytes they wrote.
    pub write_bytes: Option<u64>,
    /// Empty flush requests.
    pub flushes: Option<u64>,
    /// Writes with a preflush.
    pub preflush_writes: Option<u64>,
    /// Writes with FUA.
    pub fua_writes: Option<u64>,
    /// Requests issued while no operation ran (making the storage, background work).
    pub requests_outside_ops: Option<u64>,
    /// Seek time of the media reads (ns).
    pub read_seek_ns: Option<f64>,
    /// Seek time of the destage runs (ns).
    pub destage_seek_ns: Option<f64>,
    /// Rotational wait of the media reads (ns).
    pub read_rotation_ns: Option<f64>,
    /// Rotational wait of the destage runs (ns).
    pub destage_rotation_ns: Option<f64>,
    /// 512e read-modify-writes.
    pub rmw_penalties: Option<u64>,
    /// Their time (ns).
    pub rmw_ns: Option<f64>,
    /// Time flushes waited for the destage (ns).
    pub flush_wait_ns: Option<f64>,
    /// Time media reads waited behind the destage (ns).
    pub read_destage_wait_ns: Option<f64>,
    /// Time the media worked (ns).
    pub media_busy_ns: Option<f64>,
    /// Writes re-opening a 4 KiB sector, counted from the trace (no model).
    pub reopen_writes: Option<u64>,
    /// Those with a read between the previous write and them.
    pub reopen_writes_after_read: Option<u64>,
    /// Writes that cover a 4096-byte physical sector only in part (do not start or do not
    /// end on a 4096-byte boundary), counted from the trace (no model); absent in reports
    /// from before they were counted.
    pub partial_sector_writes: Option<u64>,
    /// Those issued while a put ran (the put's data).
    pub partial_sector_writes_in_puts: Option<u64>,
    /// Those issued while a sync ran (Cannyls' journal).
    pub partial_sector_writes_in_syncs: Option<u64>,
    /// Physical sectors the drive held whole, all clean, that a write covered in part.
    pub reopened_clean: Option<u64>,
    /// The same with some of it dirty.
    pub reopened_dirty: Option<u64>,
    /// Writes that waited for the dirty data they overlap (`write-first`).
    pub write_first_waits: Option<u64>,
    /// Their wait (ns).
    pub write_first_wait_ns: Option<f64>,
    /// Write pieces that waited for room in their segment.
    pub segment_full_waits: Option<u64>,
    /// Their wait (ns).
    pub segment_full_wait_ns: Option<f64>,
    /// Read-modify-writes forced by a flush.
    pub rmw_for_flush: Option<u64>,
    /// Read-modify-writes forced by cache or segment pressure.
    pub rmw_for_pressure: Option<u64>,
    /// Read-modify-writes forced by a write waiting for dirty data (`write-first`).
    pub rmw_for_write_first: Option<u64>,
    /// Read-modify-writes of sectors a write re-opened and cleared.
    pub rmw_of_reopened_clean: Option<u64>,
    /// Where the reads came from and the waits for cache room (the run's drive state).
    #[serde(flatten)]
    pub drive: DriveCounts,
}

/// A modelled run: the run's report with modelled times, and the model's figures.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Modelled {
    /// The report, times modelled.
    #[serde(flatten)]
    pub report: RunReport,
    /// The model's own figures.
    pub model: ModelInfo,
}

/// One run of a workload on a target.
#[derive(Debug, Clone, PartialEq)]
pub enum Run {
    /// `run-<k>.json`.
    Ok(Box<RunReport>),
    /// `run-<k>.error` (and no JSON): the first line of the text.
    Failed(String),
    /// Neither file.
    Missing,
}

/// The runs of one workload on one target.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Cell {
    /// Run k at index k − 1; as many as the comparison has runs.
    pub runs: Vec<Run>,
    /// Per profile id, modelled run k at index k − 1.
    pub models: BTreeMap<String, Vec<Option<Modelled>>>,
    /// The operation times (end − start, ns) of the op-logs of the runs that succeeded,
    /// pooled and sorted.
    pub latencies: Vec<u64>,
    /// How many op-logs those came from.
    pub oplogs: usize,
    /// Run k's emulated drive statistics (`run-<k>.emulator.json`) at index k − 1.
    pub emulator: Vec<Option<DriveCounts>>,
}

impl Cell {
    /// The reports of the runs that succeeded.
    pub fn ok(&self) -> Vec<&RunReport> {
        self.runs
            .iter()
            .filter_map(|r| match r {
                Run::Ok(r) => Some(&**r),
                _ => None,
            })
            .collect()
    }

    /// The modelled runs of `profile`.
    pub fn modelled(&self, profile: &str) -> Vec<&Modelled> {
        self.models
            .get(profile)
            .map(|v| v.iter().flatten().collect())
            .unwrap_or_default()
    }
}

/// A modelling profile found in the directory.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    /// Its id, from the file names (`run-1.model-<id>.json`).
    pub id: String,
    /// Its `profile_name` (the first found), else the id.
    pub name: String,
}

/// A comparison directory, read.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// `compare.json`.
    pub meta: Meta,
    /// Whether `SETUP.md` exists.
    pub has_setup: bool,
    /// The workloads, in order.
    pub workloads: Vec<String>,
    /// The targets, in order.
    pub targets: Vec<String>,
    /// Runs per workload and target: `compare.json`'s `runs`, or more if files say so.
    pub runs: usize,
    /// `cells[w][t]`.
    pub cells: Vec<Vec<Cell>>,
    /// The modelling profiles, sorted by id.
    pub profiles: Vec<Profile>,
}

impl Comparison {
    /// The index of the baseline target: `minfs`, else the first.
    pub fn baseline(&self) -> Option<usize> {
        if self.targets.is_empty() {
            return None;
        }
        Some(self.targets.iter().position(|t| t == "minfs").unwrap_or(0))
    }
}

/// What a file in a target's directory is.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum RunFile {
    Json(usize),
    Error(usize),
    OpLog(usize),
    Model(usize, String),
    Emulator(usize),
}

/// Parses `run-<k>.json`, `run-<k>.error`, `run-<k>.oplog`, `run-<k>.model-<p>.json`;
/// `Ok(None)` for anything else, an error for a run number out of range.
fn classify(name: &str) -> Result<Option<RunFile>, String> {
    let Some(rest) = name.strip_prefix("run-") else {
        return Ok(None);
    };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return Ok(None);
    }
    let (num, suffix) = rest.split_at(digits);
    let file = match suffix {
        ".json" => RunFile::Json as fn(usize) -> RunFile,
        ".error" => RunFile::Error,
        ".oplog" | ".oplog.gz" => RunFile::OpLog,
        ".emulator.json" => RunFile::Emulator,
        _ => match suffix
            .strip_prefix(".model-")
            .and_then(|s| s.strip_suffix(".json"))
        {
            Some(p) if !p.is_empty() => {
                let k = run_number(num)?;
                return Ok(Some(RunFile::Model(k, p.to_string())));
            }
            _ => return Ok(None),
        },
    };
    Ok(Some(file(run_number(num)?)))
}

fn run_number(num: &str) -> Result<usize, String> {
    match num.parse::<usize>() {
        Ok(k) if (1..=MAX_RUNS).contains(&k) => Ok(k),
        _ => Err(format!(
            "run number {num} is out of range (runs are numbered 1 to {MAX_RUNS})"
        )),
    }
}

fn io_err(path: &Path, source: io::Error) -> CompareError {
    CompareError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn read(path: &Path) -> Result<Vec<u8>, CompareError> {
    fs::read(path).map_err(|e| io_err(path, e))
}

fn parse_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<T, CompareError> {
    let bytes = read(path)?;
    serde_json::from_slice(&bytes).map_err(|source| CompareError::Json {
        path: path.to_path_buf(),
        source,
    })
}

/// The names of the subdirectories of `dir`, sorted; none if it does not exist.
fn subdirs(dir: &Path) -> Result<Vec<String>, CompareError> {
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io_err(dir, e)),
    };
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| io_err(dir, e))?;
        let path = entry.path();
        if !path.is_dir() {
            continue;
        }
        let name = entry
            .file_name()
            .into_string()
            .map_err(|_| CompareError::Layout {
                path: path.clone(),
                message: "the name is not UTF-8".to_string(),
            })?;
        names.push(name);
    }
    names.sort();
    Ok(names)
}

/// `listed` (duplicates dropped), then the names in `found` not listed, sorted.
fn ordered(listed: Option<&Vec<String>>, found: &BTreeSet<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for name in listed.into_iter().flatten() {
        if !out.contains(name) {
            out.push(name.clone());
        }
    }
    for name in found {
        if !out.contains(name) {
            out.push(name.clone());
        }
    }
    out
}

/// The operation times (end_ns − start_ns) of an op-log (gzip-compressed when its name ends
/// in `.gz`).
pub fn read_oplog(path: &Path) -> Result<Vec<u64>, CompareError> {
    let file = fs::File::open(path).map_err(|e| io_err(path, e))?;
    let file: Box<dyn io::Read> = if path.extension().is_some_and(|e| e == "gz") {
        Box::new(flate2::read::GzDecoder::new(file))
    } else {
        Box::new(file)
    };
    let mut times = Vec::new();
    let bad = |line: usize, message: String| CompareError::OpLog {
        path: path.to_path_buf(),
        line,
        message,
    };
    for (i, line) in BufReader::new(file).lines().enumerate() {
        let line = line.map_err(|e| io_err(path, e))?;
        let n = i + 1;
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split('\t').collect();
        if fields.len() != 6 {
            return Err(bad(
                n,
                format!(
                    "{} tab-separated fields, expected 6 (seq kind id bytes start_ns end_ns)",
                    fields.len()
                ),
            ));
        }
        let num = |s: &str, what: &str| {
            s.parse::<u64>()
                .map_err(|_| bad(n, format!("{what} `{s}` is not a number")))
        };
        let start = num(fields[4], "start_ns")?;
        let end = num(fields[5], "end_ns")?;
        if end < start {
            return Err(bad(n, format!("end_ns {end} is before start_ns {start}")));
        }
        times.push(end - start);
    }
    Ok(times)
}

/// What a run whose `run-<k>.json` is empty counts as: a failed run. Runs are no longer
/// written so (`minfs-bench run --json` renames a whole file into place), but a comparison
/// interrupted before that left one.
pub const EMPTY_JSON: &str =
    "its run-K.json is empty: the run was interrupted or failed before its report was written";

fn is_empty(path: &Path) -> Result<bool, CompareError> {
    Ok(fs::metadata(path).map_err(|e| io_err(path, e))?.len() == 0)
}

/// The first line of an `.error` file, at most 300 characters.
fn error_reason(path: &Path) -> Result<String, CompareError> {
    let bytes = read(path)?;
    let text = String::from_utf8_lossy(&bytes);
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("(the file is empty)");
    let mut reason: String = line.chars().take(300).collect();
    if line.chars().count() > 300 {
        reason.push('…');
    }
    Ok(reason)
}

/// The drive statistics of `run-<k>.emulator.json`: its `drive` object (as in the emulator's
/// `stats.json`), else its top level.
fn emulator_counts(path: &Path) -> Result<DriveCounts, CompareError> {
    let v: serde_json::Value = parse_json(path)?;
    let drive = v.get("drive").filter(|d| d.is_object()).unwrap_or(&v);
    DriveCounts::deserialize(drive).map_err(|source| CompareError::Json {
        path: path.to_path_buf(),
        source,
    })
}

/// Reads the comparison in `dir`. `compare.json` must exist; JSON files that do not parse,
/// op-logs that do not, and unreadable files are errors naming the file.
pub fn load(dir: &Path) -> Result<Comparison, CompareError> {
    let meta_path = dir.join("compare.json");
    if !meta_path.is_file() {
        return Err(CompareError::NotAComparison { path: meta_path });
    }
    let meta: Meta = parse_json(&meta_path)?;
    let runs_dir = dir.join("runs");

    let found_workloads: BTreeSet<String> = subdirs(&runs_dir)?.into_iter().collect();
    let workloads = ordered(meta.workloads.as_ref(), &found_workloads);
    let mut found_targets = BTreeSet::new();
    // Per (workload, target) directory: its run files, sorted.
    let mut files: BTreeMap<(String, String), Vec<(RunFile, PathBuf)>> = BTreeMap::new();
    let mut max_run = 0;
    for w in &found_workloads {
        for t in subdirs(&runs_dir.join(w))? {
            let tdir = runs_dir.join(w).join(&t);
            let mut list = Vec::new();
            for entry in fs::read_dir(&tdir).map_err(|e| io_err(&tdir, e))? {
                let entry = entry.map_err(|e| io_err(&tdir, e))?;
                let Ok(name) = entry.file_name().into_string() else {
                    continue;
                };
                let kind = classify(&name).map_err(|message| CompareError::Layout {
                    path: entry.path(),
                    message,
                })?;
                if let Some(kind) = kind {
                    let k = match &kind {
                        RunFile::Json(k)
                        | RunFile::Error(k)
                        | RunFile::OpLog(k)
                        | RunFile::Emulator(k)
                        | RunFile::Model(k, _) => *k,
                    };
                    max_run = max_run.max(k);
                    list.push((kind, entry.path()));
                }
            }
            list.sort();
            found_targets.insert(t.clone());
            files.insert((w.clone(), t), list);
        }
    }
    let targets = ordered(meta.targets.as_ref(), &found_targets);
    let listed_runs = meta
        .runs
        .map_or(0, |r| usize::try_from(r).unwrap_or(usize::MAX))
        .min(MAX_RUNS);
    let runs = listed_runs.max(max_run);

    let mut profile_names: BTreeMap<String, Option<String>> = BTreeMap::new();
    let mut cells = Vec::with_capacity(workloads.len());
    for w in &workloads {
        let mut row = Vec::with_capacity(targets.len());
        for t in &targets {
            let mut cell = Cell {
                runs: vec![Run::Missing; runs],
                emulator: vec![None; runs],
                ..Cell::default()
            };
            let list = files
                .get(&(w.clone(), t.clone()))
                .map(Vec::as_slice)
                .unwrap_or_default();
            let mut oplogs = Vec::new();
            // Sorted: Json(k) before Error(k), so a run with both counts as succeeded.
            for (kind, path) in list {
                match kind {
                    RunFile::Json(k) if is_empty(path)? => {
                        cell.runs[k - 1] = Run::Failed(EMPTY_JSON.to_string());
                    }
                    RunFile::Json(k) => {
                        let report: RunReport = parse_json(path)?;
                        cell.runs[k - 1] = Run::Ok(Box::new(report));
                    }
                    RunFile::Error(k) => {
                        let empty = Run::Failed(EMPTY_JSON.to_string());
                        if cell.runs[k - 1] == Run::Missing || cell.runs[k - 1] == empty {
                            cell.runs[k - 1] = Run::Failed(error_reason(path)?);
                        }
                    }
                    // An empty modelled report (a replay that was killed) is no model.
                    RunFile::Model(_, _) if is_empty(path)? => {}
                    RunFile::OpLog(k) => oplogs.push((*k, path)),
                    // An empty one (a run cut short) is no statistics.
                    RunFile::Emulator(_) if is_empty(path)? => {}
                    RunFile::Emulator(k) => cell.emulator[k - 1] = Some(emulator_counts(path)?),
                    RunFile::Model(k, profile) => {
                        let modelled: Modelled = parse_json(path)?;
                        let name = profile_names.entry(profile.clone()).or_default();
                        if name.is_none() {
                            name.clone_from(&modelled.model.profile_name);
                        }
                        cell.models
                            .entry(profile.clone())
                            .or_insert_with(|| vec![None; runs])[k - 1] = Some(modelled);
                    }
                }
            }
            for (k, path) in oplogs {
                if matches!(cell.runs[k - 1], Run::Ok(_)) {
                    cell.latencies.extend(read_oplog(path)?);
                    cell.oplogs += 1;
                }
            }
            cell.latencies.sort_unstable();
            row.push(cell);
        }
        cells.push(row);
    }
    let profiles = profile_names
        .into_iter()
        .map(|(id, name)| Profile {
            name: name.unwrap_or_else(|| id.clone()),
            id,
        })
        .collect();
    Ok(Comparison {
        meta,
        has_setup: dir.join("SETUP.md").is_file(),
        workloads,
        targets,
        runs,
        cells,
        profiles,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_emulated_profile_is_read_from_the_device_as_compare_writes_it() {
        let whole = "emulated-st1000dm003-whole (loop device, direct I/O, over hddsim emulate \
                     --profile st1000dm003-write-first: the whole 1000204886016-byte drive)";
        assert_eq!(emulated_profile(whole), Some("st1000dm003-write-first"));
        assert_eq!(emulated_profile("loop-512 (loop device, direct I/O)"), None);
        assert_eq!(emulated_profile("over hddsim emulate --profile : x"), None);
    }

    #[test]
    fn file_names() {
        assert_eq!(classify("run-1.json"), Ok(Some(RunFile::Json(1))));
        assert_eq!(classify("run-12.error"), Ok(Some(RunFile::Error(12))));
        assert_eq!(classify("run-3.oplog"), Ok(Some(RunFile::OpLog(3))));
        assert_eq!(
            classify("run-4.emulator.json"),
            Ok(Some(RunFile::Emulator(4)))
        );
        assert_eq!(
            classify("run-2.model-st1000dm003.json"),
            Ok(Some(RunFile::Model(2, "st1000dm003".into())))
        );
        for other in [
            "run-1.trace",
            "run-.json",
            "run-1.model-.json",
            "notes.txt",
            "run-1.json~",
        ] {
            assert_eq!(classify(other), Ok(None), "{other}");
        }
        assert!(classify("run-0.json").unwrap_err().contains("out of range"));
        assert!(classify("run-99999999999999999999.json").is_err());
    }

    #[test]
    fn order_listed_then_found_sorted() {
        let found: BTreeSet<String> = ["zfs", "xfs", "minfs", "btrfs"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let listed: Vec<String> = ["minfs", "ext4", "xfs", "minfs"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(
            ordered(Some(&listed), &found),
            ["minfs", "ext4", "xfs", "btrfs", "zfs"]
        );
        assert_eq!(ordered(None, &found), ["btrfs", "minfs", "xfs", "zfs"]);
    }

    #[test]
    fn oplog_times_and_errors() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("run-1.oplog");
        fs::write(
            &p,
            format!(
                "{}0\tnew\t1\t4096\t100\t350\n1\tsync\t-\t0\t400\t400\n",
                crate::run::oplog::HEADER
            ),
        )
        .unwrap();
        assert_eq!(read_oplog(&p).unwrap(), [250, 0]);
        fs::write(&p, "0\tnew\t1\t4096\t100\n").unwrap();
        let e = read_oplog(&p).unwrap_err().to_string();
        assert!(
            e.contains("run-1.oplog:1") && e.contains("5 tab-separated"),
            "{e}"
        );
        fs::write(&p, "# x\n0\tnew\t1\t4096\t500\t100\n").unwrap();
        let e = read_oplog(&p).unwrap_err().to_string();
        assert!(e.contains(":2:") && e.contains("before start_ns"), "{e}");
    }

    #[test]
    fn gzipped_oplog_reads_the_same() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("run-1.oplog.gz");
        let text = format!(
            "{}0\tnew\t1\t4096\t100\t350\n1\tget\t1\t4096\t400\t410\n",
            crate::run::oplog::HEADER
        );
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(text.as_bytes()).unwrap();
        fs::write(&p, gz.finish().unwrap()).unwrap();
        assert_eq!(classify("run-1.oplog.gz"), Ok(Some(RunFile::OpLog(1))));
        assert_eq!(read_oplog(&p).unwrap(), [250, 10]);
    }

    /// Regression: an interrupted comparison left a 0-byte run-K.json and `minfs-bench
    /// report` refused the directory ("EOF while parsing a value"). It is a failed run now.
    #[test]
    fn an_empty_run_json_is_a_failed_run() {
        let dir = tempfile::tempdir().unwrap();
        let t = dir.path().join("runs/w/minfs");
        fs::create_dir_all(&t).unwrap();
        fs::write(dir.path().join("compare.json"), r#"{"runs": 1}"#).unwrap();
        fs::write(t.join("run-1.json"), "").unwrap();
        fs::write(t.join("run-1.model-st1000dm003.json"), "").unwrap();
        let cmp = load(dir.path()).unwrap();
        assert_eq!(cmp.cells[0][0].runs, [Run::Failed(EMPTY_JSON.to_string())]);
        assert!(cmp.cells[0][0].models.is_empty());
        // With the run's .error too, its reason is shown.
        fs::write(t.join("run-1.error"), "minfs-bench exited with 1\n").unwrap();
        let cmp = load(dir.path()).unwrap();
        assert_eq!(
            cmp.cells[0][0].runs,
            [Run::Failed("minfs-bench exited with 1".to_string())]
        );
    }

    #[test]
    fn emulator_statistics_load_flat_or_as_the_drive_object() {
        let dir = tempfile::tempdir().unwrap();
        let t = dir.path().join("runs/w/xfs");
        fs::create_dir_all(&t).unwrap();
        fs::write(dir.path().join("compare.json"), r#"{"runs": 3}"#).unwrap();
        fs::write(
            t.join("run-1.emulator.json"),
            r#"{"cache_read_hits": 300, "media_reads": 110, "other": 1}"#,
        )
        .unwrap();
        fs::write(
            t.join("run-2.emulator.json"),
            r#"{"version": "0.1.0", "drive": {"cache_read_hits": 170, "media_reads": 243}}"#,
        )
        .unwrap();
        fs::write(t.join("run-3.emulator.json"), "").unwrap();
        let cmp = load(dir.path()).unwrap();
        let e = &cmp.cells[0][0].emulator;
        assert_eq!(e[0].unwrap().cache_read_hits, Some(300));
        assert_eq!(e[1].unwrap().media_reads, Some(243));
        assert_eq!(e[2], None);
        // A bad one names the file.
        fs::write(t.join("run-3.emulator.json"), r#"{"media_reads": "x"}"#).unwrap();
        let err = load(dir.path()).unwrap_err().to_string();
        assert!(err.contains("run-3.emulator.json"), "{err}");
    }

    #[test]
    fn meta_keys_are_optional() {
        let m: Meta = serde_json::from_str("{}").unwrap();
        assert_eq!(m, Meta::default());
        let m: Meta =
            serde_json::from_str(r#"{"runs": 3, "seed": null, "scale": 1, "extra": [1]}"#).unwrap();
        assert_eq!((m.runs, m.seed, m.scale), (Some(3), None, Some(1.0)));
    }
}
