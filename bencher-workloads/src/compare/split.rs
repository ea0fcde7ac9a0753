//! "Block size or file system": how much of a file system's gap to minfs is Cannyls' block
//! size and how much the file system.
//!
//! minfs runs Cannyls at block size 4096; on ext4 or XFS Cannyls keeps its own default, 512.
//! Where a report has a file system both ways — `ext4` (at 512) and `ext4@4096` — each
//! against `minfs`, the gap splits per round k (t_k: total elapsed of round k):
//!
//! ```text
//! fs_k / minfs_k  =  fs@4096_k / minfs_k  ×  fs_k / fs@4096_k
//!     total           the file system        the block size
//! ```
//!
//! Each of the three is estimated from the same rounds (those in which all three ran) like
//! every ratio of the report: the Hodges–Lehmann estimate of the per-round log-ratios, with the
//! signed-rank interval ([`stats::paired_interval`]), here at 95 % each — they describe the
//! split of a gap, they are not verdicts. The per-round ratios multiply exactly; the three
//! estimates, each taken on its own, multiply to about the total.

use std::fmt::Write as _;

use super::format::{self, md};
use super::layout::Comparison;
use super::render::{model_variants, round_totals};
use super::stats::{self, Interval};
use super::Source;

/// The block size minfs runs Cannyls at, and the `@` suffix of a target at that size.
pub const SPLIT_BLOCK_SIZE: u32 = 4096;

/// One file system's gap to minfs on one workload, split.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Split {
    /// The workload's index.
    pub workload: usize,
    /// The index of the target at its default block size (`ext4`).
    pub target: usize,
    /// The index of the same at 4096 (`ext4@4096`).
    pub at_4096: usize,
    /// `ext4` against minfs: the whole gap.
    pub total: Interval,
    /// `ext4@4096` against minfs: the file system's part.
    pub file_system: Interval,
    /// `ext4` against `ext4@4096`: the block size's part.
    pub block_size: Interval,
}

/// Whether every report of target `t` in `source` that names its block size names 4096.
fn runs_at_4096(cmp: &Comparison, t: usize, source: Source<'_>) -> bool {
    cmp.cells.iter().all(|row| {
        source
            .reports(&row[t])
            .iter()
            .all(|r| r.info.block_size == 0 || r.info.block_size == SPLIT_BLOCK_SIZE)
    })
}

/// The pairs (`fs`, `fs@4096`) of the report's targets, when the baseline is `minfs` and
/// both minfs and `fs@4096` ran at 4096 (as far as their reports say).
pub fn pairs(cmp: &Comparison, source: Source<'_>) -> Vec<(usize, usize)> {
    let Some(b) = cmp.baseline().filter(|&b| cmp.targets[b] == "minfs") else {
        return Vec::new();
    };
    if !runs_at_4096(cmp, b, source) {
        return Vec::new();
    }
    let suffix = format!("@{SPLIT_BLOCK_SIZE}");
    cmp.targets
        .iter()
        .enumerate()
        .filter(|&(t, name)| t != b && !name.contains('@'))
        .filter_map(|(t, name)| {
            let at = cmp
                .targets
                .iter()
                .position(|n| *n == format!("{name}{suffix}"))?;
            runs_at_4096(cmp, at, source).then_some((t, at))
        })
        .collect()
}

/// The ratio of the one round in which both `a` and `b` ran (no interval: from 0 to
/// infinity), `None` unless there is exactly one.
fn one_round(a: &[Option<f64>], b: &[Option<f64>]) -> Option<Interval> {
    let both: Vec<f64> = a
        .iter()
        .zip(b)
        .filter_map(|(a, b)| Some(a.as_ref()? / b.as_ref()?))
        .collect();
    match both[..] {
        [r] if r.is_finite() && r > 0.0 => Some(Interval {
            ratio: r,
            low: 0.0,
            high: f64::INFINITY,
            rounds: 1,
        }),
        _ => None,
    }
}

/// Per workload and pair of [`pairs`], the split over the rounds in which the target, its
/// `@4096` twin and minfs all ran (a single round gives its ratios, without intervals).
pub fn splits(cmp: &Comparison, source: Source<'_>) -> Vec<Split> {
    let Some(b) = cmp.baseline() else {
        return Vec::new();
    };
    let confidence = stats::confidence(1);
    let mut out = Vec::new();
    for (w, row) in cmp.cells.iter().enumerate() {
        let base = round_totals(&row[b], source);
        for (t, at) in pairs(cmp, source) {
            let fs = round_totals(&row[t], source);
            let fs4 = round_totals(&row[at], source);
            // Only the rounds in which all three ran.
            let all = |k: usize| {
                [&fs, &fs4, &base]
                    .iter()
                    .all(|v| v.get(k).copied().flatten().is_some_and(|x| x > 0.0))
            };
            let n = base.len().min(fs.len()).min(fs4.len());
            let keep = |v: &[Option<f64>]| -> Vec<Option<f64>> {
                (0..n).map(|k| v[k].filter(|_| all(k))).collect()
            };
            let (fs, fs4, base) = (keep(&fs), keep(&fs4), keep(&base));
            let ratio = |a: &[Option<f64>], b: &[Option<f64>]| {
                stats::paired_interval(a, b, confidence).or_else(|| one_round(a, b))
            };
            let (Some(total), Some(file_system), Some(block_size)) =
                (ratio(&fs, &base), ratio(&fs4, &base), ratio(&fs, &fs4))
            else {
                continue;
            };
            out.push(Split {
                workload: w,
                target: t,
                at_4096: at,
                total,
                file_system,
                block_size,
            });
        }
    }
    out
}

/// `2.91× [2.80–3.02]`; without a finite interval (too few rounds for 95 %) the estimate
/// alone.
fn estimate(i: &Interval) -> String {
    if i.high.is_finite() {
        format!(
            "{}× [{}–{}]",
            format::ratio(Some(i.ratio)),
            format::ratio(Some(i.low)),
            format::ratio(Some(i.high))
        )
    } else {
        format!("{}×", format::ratio(Some(i.ratio)))
    }
}

/// The table of `source`'s splits (empty without any).
fn table(cmp: &Comparison, source: Source<'_>) -> String {
    let rows = splits(cmp, source);
    if rows.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "| Workload | fs | total | at 4096 (the file system) | block size part | rounds |\n\
         | --- | --- | ---: | ---: | ---: | ---: |\n",
    );
    for s in &rows {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} |",
            md(&cmp.workloads[s.workload]),
            md(&cmp.targets[s.target]),
            estimate(&s.total),
            estimate(&s.file_system),
            estimate(&s.block_size),
            s.total.rounds
        );
    }
    out.push('\n');
    out
}

/// The Summary's `### Block size or file system` part: the measured split and, where the
/// runs were modelled, the shipped profile's; empty where no target has its `@4096` twin.
pub fn section(cmp: &Comparison) -> String {
    let measured = table(cmp, Source::Measured);
    let modelled = model_variants(cmp)
        .map(|(shipped, _)| (shipped, table(cmp, Source::Modelled(&shipped.id))));
    let modelled_empty = modelled.as_ref().is_none_or(|(_, t)| t.is_empty());
    if measured.is_empty() && modelled_empty {
        return String::new();
    }
    let mut out = String::from(
        "### Block size or file system\n\n\
         minfs runs Cannyls at block size 4096, a file system target at Cannyls' default \
         (512), and `fs@4096` is the same file system with Cannyls at 4096. So per workload \
         **total** = fs against minfs (the whole gap), **at 4096** = fs@4096 against minfs \
         (the file system's own part, both at 4096; for `raw`, the bare device against minfs \
         at the same block size), **block size part** = fs against fs@4096 \
         (what Cannyls' block size costs on that file system); in each round the two parts \
         multiply to the total. Each is the Hodges–Lehmann estimate over the rounds in which \
         all three ran (the same rounds for the three), with its 95 % signed-rank interval \
         taken on its own (a description of the gap, not a verdict; no interval with fewer \
         than 6 rounds, the round's own ratios with one).\n\n",
    );
    if !measured.is_empty() {
        let _ = write!(out, "Measured:\n\n{measured}");
    }
    if let Some((shipped, t)) = modelled.filter(|(_, t)| !t.is_empty()) {
        let _ = write!(
            out,
            "Modelled on the drive ({}, `{}`):\n\n{t}",
            md(&shipped.name),
            md(&shipped.id)
        );
    }
    out
}
