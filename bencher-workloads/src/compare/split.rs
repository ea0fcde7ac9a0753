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
//! The total and the file system's part are the report's own comparisons (`fs` and `fs@4096`
//! against minfs): their estimates and intervals are the verdicts' ([`super::verdict`]), the
//! same figures as everywhere in the report. The block size's part is `fs` against `fs@4096`
//! over the rounds in which both ran, estimated the way the report's method estimates (a
//! budget run: its confidence sequence's — the mean's or the median's; a fixed-count run:
//! Hodges–Lehmann) with an interval at 95 % — a description of the gap, not a verdict. Each of the three comes
//! from its own rounds, so the estimates multiply only about to the total.

use std::fmt::Write as _;

use super::format::{self, md};
use super::layout::Comparison;
use super::render::{model_variants, round_totals};
use super::sequential;
use super::stats::{self, Interval};
use super::verdict::{Judged, Sequence, Verdicts};
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
    /// The block size's part: `ext4` against `ext4@4096` (its estimate, and its interval when
    /// bounded), and the rounds it comes from.
    pub block_size: (f64, Option<Interval>, usize),
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

/// Per workload and pair of [`pairs`], the block size's part over the rounds in which the
/// target and its `@4096` twin both ran; the total and the file system's part are the
/// comparisons' own (in `verdicts`).
pub fn splits(cmp: &Comparison, source: Source<'_>, verdicts: &Verdicts) -> Vec<Split> {
    if cmp.baseline().is_none() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (w, row) in cmp.cells.iter().enumerate() {
        for (t, at) in pairs(cmp, source) {
            if verdicts.cells[w][t].is_none() || verdicts.cells[w][at].is_none() {
                continue;
            }
            let d = sequential::paired_log_ratios(
                &round_totals(&row[t], source),
                &round_totals(&row[at], source),
            );
            if d.is_empty() {
                continue;
            }
            let alpha = 1.0 - stats::confidence(1);
            let interval = if cmp.meta.sequential() {
                let mut s = Sequence::new(alpha, verdicts.method);
                for x in &d {
                    s.push(*x, None, None);
                }
                s.interval()
            } else {
                let x: Vec<Option<f64>> = d.iter().map(|x| Some(x.exp())).collect();
                let one = vec![Some(1.0); d.len()];
                stats::paired_interval(&x, &one, 1.0 - alpha)
            };
            let estimate = interval.map_or_else(
                || (d.iter().sum::<f64>() / d.len() as f64).exp(),
                |i| i.ratio,
            );
            out.push(Split {
                workload: w,
                target: t,
                at_4096: at,
                block_size: (
                    estimate,
                    interval.filter(|i| i.high.is_finite() && i.low > 0.0),
                    d.len(),
                ),
            });
        }
    }
    out
}

/// `2.91× [2.80–3.02]` (rounded outward); without a bounded interval the estimate alone.
fn estimate(ratio: f64, i: Option<&Interval>) -> String {
    match i {
        Some(i) => {
            let [e, lo, hi] = format::outward(ratio, i.low, i.high, |_, _| true);
            format!("{e}× [{lo}–{hi}]")
        }
        None => format!("{}×", format::ratio(Some(ratio))),
    }
}

/// The table of `source`'s splits (empty without any).
fn table(cmp: &Comparison, source: Source<'_>, verdicts: &Verdicts) -> String {
    let rows = splits(cmp, source, verdicts);
    if rows.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "| Workload | fs | total | at 4096 (the file system) | block size part | rounds |\n\
         | --- | --- | ---: | ---: | ---: | ---: |\n",
    );
    for s in &rows {
        let (Some(total), Some(fs)) = (
            verdicts.cells[s.workload][s.target].as_ref(),
            verdicts.cells[s.workload][s.at_4096].as_ref(),
        ) else {
            continue;
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} / {} / {} |",
            md(&cmp.workloads[s.workload]),
            md(&cmp.targets[s.target]),
            super::summary::cell_text(total),
            super::summary::cell_text(fs),
            estimate(s.block_size.0, s.block_size.1.as_ref()),
            total.judged.len(),
            fs.judged.len(),
            s.block_size.2
        );
    }
    out.push('\n');
    out
}

/// The `## Block size or file system` section: the measured split and, where the runs were
/// modelled, the shipped profile's; empty where no target has its `@4096` twin.
pub fn section(cmp: &Comparison, judged: &Judged) -> String {
    let measured = table(cmp, Source::Measured, &judged.measured);
    let modelled = model_variants(cmp).and_then(|(shipped, _)| {
        let v = judged.modelled.get(&shipped.id)?;
        Some((shipped, table(cmp, Source::Modelled(&shipped.id), v)))
    });
    let modelled_empty = modelled.as_ref().is_none_or(|(_, t)| t.is_empty());
    if measured.is_empty() && modelled_empty {
        return String::new();
    }
    let mut out = String::from(
        "## Block size or file system\n\n\
         minfs runs Cannyls at block size 4096, a file system target at Cannyls' default \
         (512), and `fs@4096` is the same file system with Cannyls at 4096. So per workload \
         **total** = fs against minfs (the whole gap), **at 4096** = fs@4096 against minfs \
         (the file system's own part, both at 4096; for `raw`, the bare device against minfs \
         at the same block size), **block size part** = fs against fs@4096 \
         (what Cannyls' block size costs on that file system); in each round the two parts \
         multiply to the total. The total and the file system's part are those comparisons' \
         own estimates, marks and intervals (as in the table at the top); the block size part \
         is estimated the same way over the rounds in which fs and fs@4096 both ran, with an \
         interval at 95 % (a description of the gap, not a verdict). **rounds**: the rounds \
         each of the three comes from, so the three estimates multiply only about.\n\n",
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
