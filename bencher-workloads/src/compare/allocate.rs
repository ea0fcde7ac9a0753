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

#[cfg(test)]
mod tests {
    use super::*;

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
