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
}

impl Reference {
    /// The reference's ratio of workload `w` and target `t`.
    pub fn ratio(&self, w: &str, t: &str) -> Option<f64> {
        self.ratios.get(w)?.get(t).copied()
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
    let mut x: Vec<f64> = v.iter().flatten().copied().collect();
    if x.is_empty() {
        return None;
    }
    x.sort_by(f64::total_cmp);
    let n = x.len();
    Some(if n % 2 == 1 {
        x[n / 2]
    } else {
        (x[n / 2 - 1] + x[n / 2]) / 2.0
    })
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
