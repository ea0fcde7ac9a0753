//! The full-scale reference a comparison is held against: the project's own run of the four
//! reference workloads on the whole emulated 1 TB drive at scale 1, one run per target
//! ([`super::defaults::REFERENCE`]). The default comparison is a miniature of it (a smaller
//! scale, so that it decides in minutes); the report gives, beside each verdict, the ratio at
//! full scale where the two differ by more than [`TOLERANCE`], and what the drive did
//! differently (how many of the reads its cache served, here and there).
//!
//! The reference's ratios are computed once, when a comparison starts, and kept in its
//! `compare.json` (`reference`), so that a report rendered later, or elsewhere, says what the
//! comparison was held against.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::layout::{self, Comparison};
use super::render::round_totals;
use super::states::DriveCounts;
use super::{CompareError, Source};

/// How far a miniature's estimate may be from the reference's ratio (relative) before the
/// report says where and why.
pub const TOLERANCE: f64 = 0.03;

/// What the reference says, per workload and target.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Reference {
    /// Its directory, relative to the repository (`results/…`).
    pub dir: String,
    /// Per workload and target: total elapsed against minfs's (the ratio of the medians of
    /// their runs' totals).
    pub ratios: BTreeMap<String, BTreeMap<String, f64>>,
    /// Per workload and target (minfs too): the share of its reads the drive's cache served,
    /// over its runs, from the emulator's per-run statistics, where the runs have them.
    #[serde(default)]
    pub cache_share: BTreeMap<String, BTreeMap<String, f64>>,
    /// Per workload and target (minfs too): what the drive spent its time on, each activity's
    /// time as a share of the runs' total elapsed ([`Activity`]), from the emulator's per-run
    /// statistics where the runs have them.
    #[serde(default)]
    pub activity: BTreeMap<String, BTreeMap<String, BTreeMap<String, f64>>>,
}

/// What the modelled drive spends time on, as its statistics count it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activity {
    /// Seeks of reads and destage runs.
    Seeks,
    /// Rotational waits of reads and destage runs.
    Rotation,
    /// Flushes waiting for the cache to drain.
    FlushWaits,
    /// Writes waiting for room in the cache.
    CacheFullWaits,
    /// Reads waiting behind a destage run.
    ReadsBehindDestage,
    /// 512e read-modify-writes.
    ReadModifyWrites,
}

impl Activity {
    /// Every activity, in the order the report names them.
    pub const ALL: [Activity; 6] = [
        Activity::Seeks,
        Activity::Rotation,
        Activity::FlushWaits,
        Activity::CacheFullWaits,
        Activity::ReadsBehindDestage,
        Activity::ReadModifyWrites,
    ];

    /// Its key in `compare.json`.
    pub fn key(self) -> &'static str {
        match self {
            Activity::Seeks => "seeks",
            Activity::Rotation => "rotation",
            Activity::FlushWaits => "flush_waits",
            Activity::CacheFullWaits => "cache_full_waits",
            Activity::ReadsBehindDestage => "reads_behind_destage",
            Activity::ReadModifyWrites => "read_modify_writes",
        }
    }

    /// What it is, for a sentence: "seeks", "flushes waiting for the cache to drain".
    pub fn words(self) -> &'static str {
        match self {
            Activity::Seeks => "seeks",
            Activity::Rotation => "rotational waits",
            Activity::FlushWaits => "flushes waiting for the cache to drain",
            Activity::CacheFullWaits => "writes waiting for room in the cache",
            Activity::ReadsBehindDestage => "reads waiting behind the cache's writing",
            Activity::ReadModifyWrites => "512e read-modify-writes",
        }
    }

    /// Its time (ns) in `c`, where counted.
    fn ns(self, c: &DriveCounts) -> Option<f64> {
        let sum = |a: Option<f64>, b: Option<f64>| Some(a? + b?);
        match self {
            Activity::Seeks => sum(c.read_seek_ns, c.destage_seek_ns),
            Activity::Rotation => sum(c.read_rotation_ns, c.destage_rotation_ns),
            Activity::FlushWaits => c.flush_wait_ns,
            Activity::CacheFullWaits => c.cache_full_wait_ns,
            Activity::ReadsBehindDestage => c.read_destage_wait_ns,
            Activity::ReadModifyWrites => c.rmw_ns,
        }
    }
}

/// Per activity, its share of the total elapsed of workload `wi` on target `ti`, over the
/// runs that have both a total and emulator statistics.
pub fn activity_shares(cmp: &Comparison, wi: usize, ti: usize) -> BTreeMap<String, f64> {
    let cell = &cmp.cells[wi][ti];
    let totals = round_totals(cell, Source::Measured);
    let mut out = BTreeMap::new();
    for a in Activity::ALL {
        let (mut ns, mut total) = (0.0, 0.0);
        for (k, c) in cell.emulator.iter().enumerate() {
            if let (Some(c), Some(Some(t))) = (c, totals.get(k)) {
                if let Some(x) = a.ns(c) {
                    ns += x;
                    total += t;
                }
            }
        }
        if total > 0.0 {
            out.insert(a.key().to_string(), ns / total);
        }
    }
    out
}

impl Reference {
    /// The reference's ratio of workload `w` and target `t`.
    pub fn ratio(&self, w: &str, t: &str) -> Option<f64> {
        self.ratios.get(w)?.get(t).copied()
    }

    /// The reference's activity shares of workload `w` and target `t`.
    pub fn activity(&self, w: &str, t: &str) -> Option<&BTreeMap<String, f64>> {
        self.activity.get(w)?.get(t)
    }

    /// The reference's cache share of workload `w` and target `t`.
    pub fn cache_share(&self, w: &str, t: &str) -> Option<f64> {
        self.cache_share.get(w)?.get(t).copied()
    }
}

/// The reference of the comparison directory `dir`, named `name` (its path relative to the
/// repository).
pub fn load(dir: &Path, name: &str) -> Result<Reference, CompareError> {
    Ok(of(&layout::load(dir)?, name))
}

/// The reference of `dir` when its runs were measured as this comparison's are (each ended
/// with a timed journal sync, `final_sync`), else `None`: a miniature is only held against
/// a reference measured the same way.
pub fn load_if_alike(dir: &Path, name: &str, final_sync: bool) -> Option<Reference> {
    let cmp = layout::load(dir).ok()?;
    (cmp.meta.final_sync.unwrap_or(false) == final_sync).then(|| of(&cmp, name))
}

/// The reference the runs of `cmp` make.
pub fn of(cmp: &Comparison, name: &str) -> Reference {
    let mut r = Reference {
        dir: name.to_string(),
        ..Reference::default()
    };
    let Some(b) = cmp.baseline() else {
        return r;
    };
    for (wi, w) in cmp.workloads.iter().enumerate() {
        let total = |t: usize| median(&round_totals(&cmp.cells[wi][t], Source::Measured));
        let base = total(b);
        for (ti, t) in cmp.targets.iter().enumerate() {
            let shares = activity_shares(cmp, wi, ti);
            if !shares.is_empty() {
                r.activity
                    .entry(w.clone())
                    .or_default()
                    .insert(t.clone(), shares);
            }
            if let Some(share) = cache_share(cmp, wi, ti) {
                r.cache_share
                    .entry(w.clone())
                    .or_default()
                    .insert(t.clone(), share);
            }
            if ti == b {
                continue;
            }
            if let (Some(x), Some(y)) = (total(ti), base) {
                if y > 0.0 {
                    r.ratios
                        .entry(w.clone())
                        .or_default()
                        .insert(t.clone(), x / y);
                }
            }
        }
    }
    r
}

/// The share of the reads of workload `wi` on target `ti` that the drive's cache served,
/// over the runs with emulator statistics.
pub fn cache_share(cmp: &Comparison, wi: usize, ti: usize) -> Option<f64> {
    let (mut hits, mut media) = (0u64, 0u64);
    for c in cmp.cells[wi][ti].emulator.iter().flatten() {
        hits += c.cache_read_hits?;
        media += c.media_reads?;
    }
    (hits + media > 0).then(|| hits as f64 / (hits + media) as f64)
}

fn median(v: &[Option<f64>]) -> Option<f64> {
    let x: Vec<f64> = v.iter().flatten().copied().collect();
    super::format::median(&x)
}

/// Whether an estimate of `estimate` is more than [`TOLERANCE`] from the reference's `ratio`.
pub fn differs(estimate: f64, ratio: f64) -> bool {
    (estimate / ratio - 1.0).abs() > TOLERANCE
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn differs_is_relative_to_the_reference() {
        assert!(!differs(1.10, 1.13));
        assert!(differs(1.09, 1.13));
        assert!(differs(1.17, 1.13));
        assert!(!differs(0.98, 1.0));
    }
}
