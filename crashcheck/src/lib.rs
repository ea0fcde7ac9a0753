//! Power cuts of the whole stack: crash states of a recorded run, each target recovered as its
//! user would, every Cannyls lump checked (`crashcheck check`; `scripts/powercut.sh` runs the
//! matrix).
//!
//! A run is recorded on the emulated drive (`hddsim emulate --write-log`): the image as
//! prepared before the run (mkfs done), the write log of everything the drive accepted during
//! it, and the op-log of `minfs-bench run`. [`states`] builds crash states from them,
//! [`recover`] recovers each target and checks the storage, [`expect`] says what each lump
//! must hold. [`check`] ties them together and counts; [`summary`] renders the counts.

pub mod expect;
pub mod recover;
pub mod states;

use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::path::{Path, PathBuf};

use serde::Serialize;

use expect::{Bound, Expectations};
use recover::{Target, Tools};
use states::Rng;

/// What `check` needs.
#[derive(Debug, Clone)]
pub struct CheckArgs {
    /// The target.
    pub target: Target,
    /// The image before the run.
    pub initial: PathBuf,
    /// The run's write log.
    pub write_log: PathBuf,
    /// The run's op-log.
    pub op_log: PathBuf,
    /// Where states are built (on a filesystem with reflinks).
    pub workdir: PathBuf,
    /// Crash points to sample (all flushes when at least their number).
    pub points: usize,
    /// Random subsets per crash point.
    pub subsets: usize,
    /// Seed.
    pub seed: u64,
    /// The acknowledgement bound.
    pub bound: Bound,
    /// Whether the media is 512e (ruined physical sectors).
    pub rmw_512e: bool,
    /// The binaries.
    pub tools: Tools,
}

/// Counts per variant.
#[derive(Debug, Clone, Default, Serialize)]
pub struct VariantCounts {
    /// States.
    pub states: u64,
    /// States with something counted against the target.
    pub bad_states: u64,
    /// Acknowledged lumps lost in them.
    pub lost: u64,
    /// Storages that did not open.
    pub storage_failed: u64,
    /// Filesystems that did not open.
    pub fs_failed: u64,
    /// Acknowledged lumps reading wrong bytes.
    pub wrong_bytes: u64,
    /// Acknowledged deletes undone.
    pub resurrected: u64,
}

/// Counts of a run.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Counts {
    /// Crash states checked.
    pub states: u64,
    /// States whose recovery needed a repair.
    pub repairs: u64,
    /// Filesystems that did not open (or stayed damaged).
    pub fs_failed: u64,
    /// Storages that did not open (where a sync had been acknowledged).
    pub storage_failed: u64,
    /// States before any acknowledged sync (storage not required).
    pub before_storage: u64,
    /// Acknowledged lumps lost (summed over states).
    pub lost: u64,
    /// Acknowledged lumps reading wrong bytes.
    pub wrong_bytes: u64,
    /// Acknowledged deletes undone.
    pub resurrected: u64,
    /// Lumps never put.
    pub phantom: u64,
    /// Cannyls issue #28 reads (apart).
    pub issue28: u64,
    /// In-flight puts reading wrong bytes (apart).
    pub inflight_wrong: u64,
    /// minfs: states whose copy of the header and journal vouched for bytes the journal does
    /// not hold, or was not level after open and close.
    pub copy_disagrees: u64,
    /// States with anything counted against the target.
    pub bad_states: u64,
}

/// The report of one run (`--json`).
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The target.
    pub target: Target,
    /// A label for the workload (the op-log's file stem unless given).
    pub workload: String,
    /// Writes in the log.
    pub writes: u64,
    /// Flushes in the log.
    pub flushes: u64,
    /// Syncs in the op-log.
    pub syncs: usize,
    /// Crash points checked.
    pub points: usize,
    /// The acknowledgement bound used.
    pub bound: String,
    /// Seed.
    pub seed: u64,
    /// The counts.
    pub counts: Counts,
    /// By variant.
    pub by_variant: BTreeMap<String, VariantCounts>,
    /// Up to 20 notes of bad states.
    pub examples: Vec<String>,
}

/// Builds the crash states of a run and checks each.
pub fn check(
    a: &CheckArgs,
    workload: &str,
    progress: &mut dyn FnMut(&str),
) -> Result<Report, String> {
    let (_before, flush_ns, writes) = states::scan(&a.write_log)?;
    let text =
        std::fs::read_to_string(&a.op_log).map_err(|e| format!("{}: {e}", a.op_log.display()))?;
    let ops = expect::parse_oplog(&text).map_err(|e| format!("{}: {e}", a.op_log.display()))?;
    let exp = Expectations::build(&ops, &flush_ns, a.bound)?;
    let points = states::sample_points(flush_ns.len(), a.points);
    let dir = tempfile::Builder::new()
        .prefix("crashcheck-")
        .tempdir_in(&a.workdir)
        .map_err(|e| format!("{}: {e}", a.workdir.display()))?;
    let base = dir.path().join("base.img");
    let state = dir.path().join("state.img");
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).map_err(|e| e.to_string())?;
    states::reflink(&a.initial, &base)?;
    let mut rng = Rng(a.seed ^ 0x9E37_79B9_7F4A_7C15);
    let mut counts = Counts::default();
    let mut by_variant: BTreeMap<String, VariantCounts> = BTreeMap::new();
    let mut examples = Vec::new();
    states::walk(&a.write_log, &base, &points, |point, inflight| {
        for plan in states::plans(inflight, a.subsets, a.rmw_512e, &mut rng) {
            states::reflink(&base, &state)?;
            {
                let f = OpenOptions::new()
                    .write(true)
                    .open(&state)
                    .map_err(|e| format!("{}: {e}", state.display()))?;
                states::apply(&f, inflight, &plan, &mut rng).map_err(|e| e.to_string())?;
                f.sync_all().map_err(|e| e.to_string())?;
            }
            let o = recover::check_state(a.target, &state, &mnt, &a.tools, &exp, point);
            std::fs::remove_file(&state).map_err(|e| e.to_string())?;
            let c = &mut counts;
            c.states += 1;
            c.repairs += u64::from(o.repaired);
            c.fs_failed += u64::from(o.fs_failed);
            c.storage_failed += u64::from(o.storage_failed);
            c.before_storage += u64::from(o.before_storage);
            c.lost += o.lost;
            c.wrong_bytes += o.wrong_bytes;
            c.resurrected += o.resurrected;
            c.phantom += o.phantom;
            c.issue28 += o.issue28;
            c.inflight_wrong += o.inflight_wrong;
            c.copy_disagrees += u64::from(o.copy_disagrees);
            c.bad_states += u64::from(o.bad());
            let v = by_variant
                .entry(plan.variant.name().to_string())
                .or_default();
            v.states += 1;
            v.bad_states += u64::from(o.bad());
            v.lost += o.lost;
            v.storage_failed += u64::from(o.storage_failed);
            v.fs_failed += u64::from(o.fs_failed);
            v.wrong_bytes += o.wrong_bytes;
            v.resurrected += o.resurrected;
            if o.bad() && examples.len() < 20 {
                examples.push(format!(
                    "point {point} ({} in flight), {}: {}",
                    inflight.len(),
                    plan.variant.name(),
                    o.notes
                        .iter()
                        .map(|n| n.lines().next().unwrap_or(""))
                        .collect::<Vec<_>>()
                        .join("; ")
                ));
            }
        }
        progress(&format!(
            "point {point}/{}: {} states so far, {} bad",
            flush_ns.len(),
            counts.states,
            counts.bad_states
        ));
        Ok(())
    })?;
    Ok(Report {
        target: a.target,
        workload: workload.to_string(),
        writes,
        flushes: flush_ns.len() as u64,
        syncs: ops.iter().filter(|o| o.kind == "sync").count(),
        points: points.len(),
        bound: match a.bound {
            Bound::SyncReturn => "sync-return".into(),
            Bound::BeforeOpStart => "before-op-start (deliberately wrong)".into(),
        },
        seed: a.seed,
        counts,
        by_variant,
        examples,
    })
}

/// The summary table of the reports under `dir` (`*.json` files, any depth), as Markdown.
pub fn summary(dir: &Path) -> Result<String, String> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).map_err(|e| format!("{}: {e}", d.display()))? {
            let p = e.map_err(|e| e.to_string())?.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "json")
                && p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("check-"))
            {
                files.push(p);
            }
        }
    }
    files.sort();
    let mut rows = Vec::new();
    let mut variant_rows = Vec::new();
    for f in &files {
        let v: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(f).map_err(|e| format!("{}: {e}", f.display()))?,
        )
        .map_err(|e| format!("{}: {e}", f.display()))?;
        let c = &v["counts"];
        let n = |k: &str| c[k].as_u64().unwrap_or(0);
        let ruined = v["by_variant"]["ruined-512e"]["lost"].as_u64().unwrap_or(0);
        rows.push(format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} ({} in ruined-512e states) | {} | {} | {} | {} | {} | {} |",
            v["workload"].as_str().unwrap_or("?"),
            v["target"].as_str().unwrap_or("?"),
            v["flushes"],
            v["points"],
            n("states"),
            n("repairs"),
            n("fs_failed"),
            n("storage_failed"),
            n("before_storage"),
            n("lost"),
            ruined,
            n("wrong_bytes"),
            n("resurrected"),
            n("phantom"),
            n("issue28"),
            n("inflight_wrong"),
            n("copy_disagrees"),
        ));
        if let Some(by) = v["by_variant"].as_object() {
            for (variant, c) in by {
                let m = |k: &str| c[k].as_u64().unwrap_or(0);
                variant_rows.push(format!(
                    "| {} | {} | {variant} | {} | {} | {} | {} | {} | {} | {} |",
                    v["workload"].as_str().unwrap_or("?"),
                    v["target"].as_str().unwrap_or("?"),
                    m("states"),
                    m("bad_states"),
                    m("fs_failed"),
                    m("storage_failed"),
                    m("lost"),
                    m("wrong_bytes"),
                    m("resurrected"),
                ));
            }
        }
    }
    let head = "| workload | target | flushes | crash points | crash states | repairs needed \
                | FS does not open | storage does not open | before any sync | acknowledged lumps \
                lost | wrong bytes (acknowledged) | resurrected | phantom | Cannyls #28 (apart) \
                | in-flight puts with wrong bytes (apart) | copy of the journal disagrees |\n\
                | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: \
                | ---: | ---: | ---: | ---: |";
    let variants = "By kind of crash state (none: no in-flight write; subset: a random subset; \
                    torn: a subset and one torn write; ruined-512e: a subset and a 4 KiB \
                    physical sector ruined by a cut read-modify-write):\n\n\
                    | workload | target | state | states | bad states | FS does not open \
                    | storage does not open | acknowledged lumps lost | wrong bytes | resurrected |\n\
                    | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |";
    Ok(format!(
        "{head}\n{}\n\n{variants}\n{}\n",
        rows.join("\n"),
        variant_rows.join("\n")
    ))
}
