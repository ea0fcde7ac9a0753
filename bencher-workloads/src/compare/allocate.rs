//! Which still-undecided comparisons a budget run gives its next round (`minfs-bench compare
//! --budget`): the budget left goes first to the comparisons nearest a verdict.
//!
//! # Why
//! Without it every undecided comparison runs every round until the budget is spent. On the
//! emulated drive the default's budget then went, round after round, to comparisons whose
//! rounds vary so much that no budget of minutes decides them (rand-oldest-1m, 2–8 % per
//! round), while ones a few more cheap rounds would settle (ext4 on seq-256k, 4.7 % but about
//! 5 s a round) ran out of budget: docs/COMPARISON.md, "Where the budget goes".
//!
//! # The rule
//! From round [`ALLOCATE_FROM`] + 1 on, each open comparison's distance to a verdict is
//! projected from its rounds so far ([`super::sequential::rounds_needed`]: the rounds its
//! confidence sequence would need at its mean and spread, less those done, at least 1) and
//! priced at its cost per round (its run and its workload's baseline run, as measured so far).
//! The comparisons are taken cheapest-to-finish first while all they would need — each
//! workload's baseline once per round any of its comparisons still runs — fits the budget
//! left; the first is always taken. The round runs those; the others wait, open, and are
//! priced again after the next round, so a comparison that turns out nearer than projected
//! comes back.
//!
//! # Why the verdicts stay valid
//! Which comparisons run a round is decided from the rounds before it only. A confidence
//! sequence holds at every round at once whatever decides when its next round is taken
//! (a predictable sampling rule: the rounds a comparison does get are still independent draws
//! of its ratio), and a comparison left waiting at the end is reported undecided, never
//! judged. `tests/verdict_stats.rs` simulates the runner with this rule on the default's
//! measured noise and run times.

use std::collections::BTreeSet;
use std::time::Duration;

/// The rounds every comparison gets before the allocation prices it: its spread is then
/// estimated from at least 3 degrees of freedom (the confidence sequence cannot bound anything
/// before 3 rounds at the default's level anyway).
pub const ALLOCATE_FROM: usize = 4;

/// One open comparison as the allocation sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Open {
    /// Its workload (an index; the baseline's run is shared by the workload's comparisons).
    pub workload: usize,
    /// The rounds it has.
    pub rounds: usize,
    /// The rounds its sequence would need at its mean and spread so far (`None`: beyond
    /// [`super::sequential::ROUNDS_NEEDED_CAP`], or not yet known).
    pub needed: Option<usize>,
    /// Its run's estimated time.
    pub cost: Duration,
}

impl Open {
    /// The rounds it still needs, at least 1.
    fn remaining(&self) -> u32 {
        let r = self
            .needed
            .map_or(super::sequential::ROUNDS_NEEDED_CAP, |k| {
                k.saturating_sub(self.rounds)
            });
        r.clamp(1, super::sequential::ROUNDS_NEEDED_CAP) as u32
    }
}

/// Which of `open` the next round runs (a flag per comparison, in `open`'s order), given the
/// `baseline` run's estimated time per workload and the budget `left`. A comparison with fewer
/// than [`ALLOCATE_FROM`] rounds always runs (and is not counted against the budget left); of
/// the others, the nearest to a verdict always runs.
pub fn allocate(open: &[Open], baseline: impl Fn(usize) -> Duration, left: Duration) -> Vec<bool> {
    let mut take = vec![false; open.len()];
    // (cost to finish, index), cheapest first; the unpriced first of all.
    let mut order: Vec<(bool, f64, usize)> = open
        .iter()
        .enumerate()
        .map(|(i, o)| {
            let per_round = (o.cost + baseline(o.workload)).as_secs_f64();
            (
                o.rounds >= ALLOCATE_FROM,
                f64::from(o.remaining()) * per_round,
                i,
            )
        })
        .collect();
    order.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)).then(a.2.cmp(&b.2)));
    // What the taken ones would need: per workload the most rounds any of them needs (its
    // baseline runs that often), and each one's own runs.
    let mut rounds_of: Vec<(usize, u32)> = Vec::new();
    let mut own = 0.0f64;
    let total = |rounds_of: &[(usize, u32)], own: f64| {
        own + rounds_of
            .iter()
            .map(|&(w, r)| f64::from(r) * baseline(w).as_secs_f64())
            .sum::<f64>()
    };
    let mut any = false;
    for (priced, _, i) in order {
        let o = &open[i];
        if !priced {
            // Not yet priced: it runs, outside the sum (it has no projection to add).
            take[i] = true;
            continue;
        }
        let r = o.remaining();
        let mut with = rounds_of.clone();
        match with.iter_mut().find(|(w, _)| *w == o.workload) {
            Some(e) => e.1 = e.1.max(r),
            None => with.push((o.workload, r)),
        }
        let own_with = own + f64::from(r) * o.cost.as_secs_f64();
        if !any || total(&with, own_with) <= left.as_secs_f64() {
            take[i] = true;
            any = true;
            rounds_of = with;
            own = own_with;
        }
    }
    take
}

/// The part of a round that fits in `left`: per workload in the round's order, its baseline
/// and as many of its undecided targets (in their order) as fit with it; a workload is taken
/// only with its baseline and at least one target, and one that does not fit is passed over
/// for the cheaper ones after it. `cost(workload, target)` is a run's estimated time; `None`
/// (nothing measured yet) counts as fitting. The whole round when it fits.
pub fn fit_round<'a>(
    round: &[(usize, Vec<&'a str>)],
    baseline: &str,
    cost: impl Fn(usize, &str) -> Option<Duration>,
    left: Duration,
) -> Vec<(usize, Vec<&'a str>)> {
    let mut spent = Duration::ZERO;
    let mut out = Vec::new();
    for (wi, ts) in round {
        let of = |t: &str| cost(*wi, t).unwrap_or_default();
        let mut group = spent.saturating_add(of(baseline));
        if group > left {
            continue;
        }
        let mut taken: BTreeSet<&str> = BTreeSet::new();
        for t in ts.iter().filter(|t| **t != baseline) {
            let with = group.saturating_add(of(t));
            if with <= left {
                group = with;
                taken.insert(t);
            }
        }
        if taken.is_empty() {
            continue;
        }
        spent = group;
        out.push((
            *wi,
            ts.iter()
                .copied()
                .filter(|t| *t == baseline || taken.contains(t))
                .collect(),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fit_round_takes_what_fits_the_budget_left_each_workload_with_its_baseline() {
        let round = vec![
            (0, vec!["minfs", "ext4", "xfs"]),
            (1, vec!["xfs", "minfs", "ext4"]),
            (2, vec!["minfs", "ext4"]),
        ];
        // Workload 0 costs 10 s a run, 1 costs 30 s, 2 costs 5 s.
        let cost = |wi: usize, _t: &str| Some(Duration::from_secs([10, 30, 5][wi]));
        let fit = |s| fit_round(&round, "minfs", cost, Duration::from_secs(s));
        // Everything: 30 + 90 + 10 s.
        assert_eq!(fit(130), round);
        // 100 s: workload 0 whole (30 s), workload 1 with one target (60 s), 2 whole (10 s).
        assert_eq!(
            fit(100),
            vec![
                (0, vec!["minfs", "ext4", "xfs"]),
                (1, vec!["xfs", "minfs"]),
                (2, vec!["minfs", "ext4"])
            ]
        );
        // 45 s: workload 1 does not fit even with one target; 2 is taken after it.
        assert_eq!(
            fit(45),
            vec![
                (0, vec!["minfs", "ext4", "xfs"]),
                (2, vec!["minfs", "ext4"])
            ]
        );
        // A baseline alone is no comparison: 15 s fits only workload 2.
        assert_eq!(fit(15), vec![(2, vec!["minfs", "ext4"])]);
        assert!(fit(9).is_empty());
        // Nothing measured yet: everything counts as fitting.
        assert_eq!(
            fit_round(&round, "minfs", |_, _| None, Duration::ZERO),
            round
        );
    }

    fn open(workload: usize, rounds: usize, needed: Option<usize>, cost_s: u64) -> Open {
        Open {
            workload,
            rounds,
            needed,
            cost: Duration::from_secs(cost_s),
        }
    }

    #[test]
    fn the_nearest_comparisons_get_the_budget() {
        let base = |w: usize| Duration::from_secs([3, 7][w]);
        let comparisons = [
            // Workload 0, cheap: 10 more rounds of (3 + 3) s = 60 s.
            open(0, 8, Some(18), 3),
            // Workload 1, dear and far: 40 more rounds of (7 + 7) s.
            open(1, 8, Some(48), 7),
            // Workload 1, near: 2 more rounds of (7 + 7) s = 28 s.
            open(1, 8, Some(10), 7),
        ];
        // 100 s: the near one (28 s), then the cheap one (60 s: 88 s); the far one does not fit.
        assert_eq!(
            allocate(&comparisons, base, Duration::from_secs(100)),
            [true, false, true]
        );
        // Plenty of time: all of them.
        assert_eq!(
            allocate(&comparisons, base, Duration::from_secs(1000)),
            [true, true, true]
        );
        // Too little for any: the nearest alone still runs (the budget's own fit decides
        // whether a run fits at all).
        assert_eq!(
            allocate(&comparisons, base, Duration::from_secs(10)),
            [false, false, true]
        );
    }

    #[test]
    fn a_shared_baseline_is_paid_once_per_round() {
        let base = |_| Duration::from_secs(10);
        // Two comparisons of one workload, 3 more rounds each: baseline 30 s + 2 × 3 s = 36 s
        // (not 2 × (30 + 3) = 66 s).
        let c = [open(0, 5, Some(8), 1), open(0, 5, Some(8), 1)];
        assert_eq!(allocate(&c, base, Duration::from_secs(36)), [true, true]);
        assert_eq!(allocate(&c, base, Duration::from_secs(35)), [true, false]);
    }

    #[test]
    fn unpriced_comparisons_always_run_and_hopeless_ones_wait() {
        let base = |_| Duration::from_secs(1);
        let c = [
            open(0, 2, None, 50),
            open(1, 6, None, 1),
            open(1, 6, Some(7), 1),
        ];
        assert_eq!(
            allocate(&c, base, Duration::from_secs(60)),
            [true, false, true]
        );
    }
}
