//! The judgement of a report, computed once per source (the measured runs, or one profile's
//! replays) and only rendered after: per workload and target against the baseline, the one
//! estimate, its interval, the verdict, the drive states and, for an undecided comparison, how
//! far it is from a verdict. The summary, the tables, the plots, the block-size split and the
//! runner's stopping rule ([`super::decide`]) all read it.
//!
//! # Like with like
//! A round pairs run k of the target with run k of the baseline. Where both runs' drive states
//! are known ([`super::states`]) and differ, the round is set aside: the comparison is judged on
//! the rounds whose states match (and on every round where no state is known), and the report
//! says how many were set aside and their ratio. The rounds so kept are independent draws of the
//! ratio in matching states (a round's states are seen with its times, so keeping it or not
//! depends on nothing later), and the confidence sequence holds for them whatever stops it.
//!
//! # The method
//! Chosen before the first round, by what the device tells of its runs
//! (docs/COMPARISON.md, "What each verdict assumes"; `tests/verdict_stats.rs` chose it):
//! - [`Method::Mean`] where the runs carry their own drive states (the emulated drive's
//!   per-run statistics, or a replay's for the modelled verdict): the t-mixture confidence
//!   sequence of the mean log-ratio on the rounds whose states match — normal within a state,
//!   and quick (3 rounds bound an interval at the default's level);
//! - [`Method::Median`] where they do not (a real disk, a loop device, emulated runs recorded
//!   before the emulator's per-run statistics): the sign-based sequence of the median, which
//!   assumes no shape and no states and needs 12 rounds at the default's level;
//! - [`Method::SignedRank`] for a fixed count of rounds (`--runs`).
//!
//! # The estimate
//! A budget run's ([`super::sequential`]): the geometric mean of the judged rounds' ratios
//! (moved into the interval where the running intersection left it outside); a fixed-count
//! run's ([`super::stats`]): the Hodges–Lehmann estimate. One figure per comparison, used
//! everywhere.

use super::layout::{Comparison, Run};
use super::render::round_totals;
use super::sequential;
use super::states::{self, Counts, State, StateSource};
use super::stats::{self, Interval, Judgement, Side};
use super::Source;

/// How a report's comparisons are judged (see the module's note).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// The mean log-ratio's t-mixture confidence sequence, on the rounds whose states match.
    Mean,
    /// The median log-ratio's sign-based confidence sequence, on every round.
    Median,
    /// The Wilcoxon signed-rank interval of a fixed count of rounds (Hodges–Lehmann estimate).
    SignedRank,
}

/// One comparison's judgement.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// The estimate of the ratio (target / baseline).
    pub estimate: f64,
    /// Its interval, when bounded.
    pub interval: Option<Interval>,
    /// The region the interval lies in (`Undecided` without one).
    pub judgement: Judgement,
    /// The side of 1 the interval lies on, when it excludes 1.
    pub side: Option<Side>,
    /// The judged rounds' log-ratios, in round order.
    pub judged: Vec<f64>,
    /// The states the judged rounds had, when every one of them had the same known state.
    pub judged_state: Option<State>,
    /// The rounds in which both ran (judged and set aside).
    pub paired: usize,
    /// The rounds set aside (the two runs' states differed): their log-ratios and the target's
    /// state in each.
    pub set_aside: Vec<(f64, State)>,
    /// How many of the target's runs took each state.
    pub target_states: Counts,
}

impl Verdict {
    /// The sample standard deviation of the judged log-ratios (`None` with fewer than 2).
    pub fn spread(&self) -> Option<f64> {
        spread(&self.judged)
    }

    /// The geometric mean ratio of the rounds set aside whose target took `state` (`None`
    /// without such rounds).
    pub fn set_aside_ratio(&self, state: State) -> Option<(usize, f64)> {
        let d: Vec<f64> = self
            .set_aside
            .iter()
            .filter(|(_, s)| *s == state)
            .map(|(d, _)| *d)
            .collect();
        (!d.is_empty()).then(|| (d.len(), (d.iter().sum::<f64>() / d.len() as f64).exp()))
    }
}

/// The sample standard deviation of `d` (`None` with fewer than 2 values).
fn spread(d: &[f64]) -> Option<f64> {
    let n = d.len();
    if n < 2 {
        return None;
    }
    let mean = d.iter().sum::<f64>() / n as f64;
    Some((d.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1) as f64).sqrt())
}

/// How far an undecided comparison is from a verdict, were its ratio and spread in the judged
/// rounds and the share of rounds judged to stay as they are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Projection {
    /// About this many rounds in all (judged and set aside, from the first), of which this
    /// many judged.
    Rounds {
        /// The rounds in all.
        total: usize,
        /// Of those, the judged ones.
        judged: usize,
    },
    /// Fewer than 3 judged rounds: no spread to project from.
    TooFew,
    /// Beyond [`sequential::ROUNDS_NEEDED_CAP`] judged rounds (a ratio at the margin's end).
    Beyond,
}

/// [`Projection`] of a comparison with the judged log-ratios `judged` out of `paired` rounds,
/// at `alpha`, judged by `method`. For [`Method::Median`] a planning figure: the t-mixture's
/// rounds times π/2 (the sign test's efficiency relative to the t test on normal rounds), at
/// least the rounds its first interval needs.
pub fn project(judged: &[f64], paired: usize, alpha: f64, method: Method) -> Projection {
    if judged.len() < 3 {
        return Projection::TooFew;
    }
    let Some((_, _, Some(need))) = sequential::projection(judged, alpha) else {
        return Projection::Beyond;
    };
    let need = match method {
        Method::Median => ((need as f64 * std::f64::consts::FRAC_PI_2).ceil() as usize)
            .max(sequential::sign_min_rounds(alpha)),
        _ => need,
    };
    // The rounds still to judge, at the share of rounds judged so far.
    let more = need.saturating_sub(judged.len()) as f64 * paired as f64 / judged.len() as f64;
    Projection::Rounds {
        total: paired + more.ceil() as usize,
        judged: need,
    }
}

/// Whether a round whose target run took state `target` and baseline run `base` is judged: yes
/// unless both are known and differ (like with like).
pub fn judged_round(target: Option<State>, base: Option<State>) -> bool {
    !matches!((target, base), (Some(x), Some(y)) if x != y)
}

/// A budget run's comparison judged round by round, as the report judges it: by
/// [`Method::Mean`], a round whose two runs took different states ([`judged_round`]) set aside
/// and the others fed to the t-mixture sequence ([`sequential::Running`]); by
/// [`Method::Median`], every round fed to the sign-based one ([`sequential::SignRunning`]).
/// The report's [`verdicts`] (and so the runner's stopping rule) and `tests/verdict_stats.rs`
/// both use it.
#[derive(Debug, Clone)]
pub struct Sequence {
    inner: Inner,
    paired: usize,
}

#[derive(Debug, Clone)]
enum Inner {
    Mean(sequential::Running),
    Median(sequential::SignRunning),
}

impl Sequence {
    /// No rounds yet, at `alpha`, by `method` ([`Method::Mean`] or [`Method::Median`]; a
    /// fixed count's signed-rank interval is not sequential and is taken as the mean's).
    pub fn new(alpha: f64, method: Method) -> Sequence {
        Sequence {
            inner: match method {
                Method::Median => Inner::Median(sequential::SignRunning::new(alpha)),
                _ => Inner::Mean(sequential::Running::new(alpha)),
            },
            paired: 0,
        }
    }

    /// Adds a round: its log-ratio and the two runs' states (ignored by the median's
    /// sequence). Whether it was judged.
    pub fn push(&mut self, d: f64, target: Option<State>, base: Option<State>) -> bool {
        self.paired += 1;
        match &mut self.inner {
            Inner::Mean(r) => {
                let judged = judged_round(target, base);
                if judged {
                    r.push(d);
                }
                judged
            }
            Inner::Median(r) => {
                r.push(d);
                true
            }
        }
    }

    /// The interval of the judged rounds so far (`None` with too few; unbounded while too few
    /// for the level).
    pub fn interval(&self) -> Option<Interval> {
        match &self.inner {
            Inner::Mean(r) => r.interval(),
            Inner::Median(r) => r.interval(),
        }
    }

    /// The verdict so far: the region of the interval, `Undecided` while unbounded.
    pub fn judge(&self) -> Judgement {
        match &self.inner {
            Inner::Mean(r) => r.judge(),
            Inner::Median(r) => r.judge(),
        }
    }

    /// The judged rounds' log-ratios.
    pub fn judged(&self) -> &[f64] {
        match &self.inner {
            Inner::Mean(r) => r.rounds(),
            Inner::Median(r) => r.rounds(),
        }
    }

    /// The rounds pushed (judged and set aside).
    pub fn paired(&self) -> usize {
        self.paired
    }
}

/// The judgement of one source over a report.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdicts {
    /// `cells[w][t]`: `None` for the baseline and where no round pairs.
    pub cells: Vec<Vec<Option<Verdict>>>,
    /// The baseline's runs per workload by state.
    pub baseline_states: Vec<Counts>,
    /// Where the states come from.
    pub states: StateSource,
    /// How the comparisons are judged.
    pub method: Method,
    /// The comparisons the intervals are simultaneous over (M).
    pub comparisons: usize,
    /// Each interval's level: 1 − `alpha`.
    pub alpha: f64,
    /// The fewest judged rounds an interval at that level needs.
    pub min_rounds: usize,
    /// Whether the intervals are a confidence sequence's (a budget run).
    pub sequential: bool,
    /// A budget run's `--budget`, seconds.
    pub budget_s: Option<f64>,
}

impl Verdicts {
    /// Each interval's confidence.
    pub fn confidence(&self) -> f64 {
        1.0 - self.alpha
    }

    /// The comparisons decided and judged (with a verdict or undecided).
    pub fn decided(&self) -> (usize, usize) {
        let all: Vec<&Verdict> = self.cells.iter().flatten().flatten().collect();
        let decided = all
            .iter()
            .filter(|v| v.judgement != Judgement::Undecided)
            .count();
        (decided, all.len())
    }

    /// The projection of comparison (`w`, `t`) at this report's level (`None` when decided or
    /// not judged).
    pub fn projection(&self, w: usize, t: usize) -> Option<Projection> {
        let v = self.cells[w][t].as_ref()?;
        (v.judgement == Judgement::Undecided)
            .then(|| project(&v.judged, v.paired, self.alpha, self.method))
    }
}

/// Whether `cmp`'s measured runs were timed on the emulated drive (whose replays model the
/// drive that timed them).
fn emulated(cmp: &Comparison) -> bool {
    super::render::device_kind(cmp) == super::render::DeviceKind::Emulated
}

/// A run's drive state and where it came from.
type RunState = (Option<State>, StateSource);

/// Per run of `cell` (index k − 1), its drive state in `source` and where it came from: for
/// the measured runs, the emulator's statistics, else (on the emulated drive) the replay
/// under the shipped profile `shipped`; for a profile's replays, that replay's.
fn run_states(
    cmp: &Comparison,
    cell: &super::layout::Cell,
    source: Source<'_>,
    shipped: Option<&str>,
) -> Vec<RunState> {
    let replay = |p: &str, k: usize| {
        cell.models
            .get(p)
            .and_then(|v| v.get(k))
            .and_then(|m| m.as_ref())
            .and_then(|m| states::state_of(&m.model.work.drive, gets(&m.report)))
    };
    (0..cmp.runs)
        .map(|k| match source {
            Source::Modelled(p) => match replay(p, k) {
                Some(s) => (Some(s), StateSource::Replay),
                None => (None, StateSource::None),
            },
            Source::Measured => {
                let Some(Run::Ok(report)) = cell.runs.get(k) else {
                    return (None, StateSource::None);
                };
                if let Some(s) = cell
                    .emulator
                    .get(k)
                    .copied()
                    .flatten()
                    .and_then(|c| states::state_of(&c, gets(report)))
                {
                    return (Some(s), StateSource::Emulator);
                }
                match shipped.filter(|_| emulated(cmp)).and_then(|p| replay(p, k)) {
                    Some(s) => (Some(s), StateSource::Replay),
                    None => (None, StateSource::None),
                }
            }
        })
        .collect()
}

/// The lumps a run got (its `Get(…)` kinds).
fn gets(r: &crate::run::report::RunReport) -> u64 {
    r.kinds
        .iter()
        .filter(|k| k.kind.starts_with("Get("))
        .map(|k| k.count)
        .sum()
}

/// Every target against the baseline in `source`, judged once (see the module's note).
pub fn verdicts(cmp: &Comparison, source: Source<'_>) -> Verdicts {
    let sequential_run = cmp.meta.sequential();
    let shipped = super::render::model_variants(cmp).map(|(p, _)| p.id.clone());
    let empty = |comparisons: usize, alpha: f64, min_rounds: usize| Verdicts {
        cells: vec![vec![None; cmp.targets.len()]; cmp.workloads.len()],
        baseline_states: vec![Counts::default(); cmp.workloads.len()],
        states: StateSource::None,
        method: Method::SignedRank,
        comparisons,
        alpha,
        min_rounds,
        sequential: sequential_run,
        budget_s: cmp.meta.budget_s,
    };
    let Some(b) = cmp.baseline() else {
        let a = stats::FAMILY_ALPHA;
        return empty(0, a, stats::min_rounds(1.0 - a));
    };
    let totals: Vec<Vec<Vec<Option<f64>>>> = cmp
        .cells
        .iter()
        .map(|row| row.iter().map(|c| round_totals(c, source)).collect())
        .collect();
    let run_state: Vec<Vec<Vec<RunState>>> = cmp
        .cells
        .iter()
        .map(|row| {
            row.iter()
                .map(|c| run_states(cmp, c, source, shipped.as_deref()))
                .collect()
        })
        .collect();
    // The rounds of (w, t) in which both ran: (log-ratio, target's state, baseline's state).
    let paired = |w: usize, t: usize| -> Vec<(f64, Option<State>, Option<State>)> {
        let (x, y) = (&totals[w][t], &totals[w][b]);
        (0..x.len().min(y.len()))
            .filter_map(|k| match (x[k], y[k]) {
                (Some(tv), Some(bv)) if tv > 0.0 && bv > 0.0 => Some((
                    (tv / bv).ln(),
                    run_state[w][t].get(k).and_then(|s| s.0),
                    run_state[w][b].get(k).and_then(|s| s.0),
                )),
                _ => None,
            })
            .collect()
    };
    // The family: a budget run's planned comparisons; a fixed run's with 2 or more rounds.
    let comparisons = if sequential_run {
        cmp.workloads.len() * cmp.targets.len().saturating_sub(1)
    } else {
        (0..cmp.workloads.len())
            .flat_map(|w| (0..cmp.targets.len()).map(move |t| (w, t)))
            .filter(|&(w, t)| t != b && paired(w, t).len() >= 2)
            .count()
    };
    let alpha = stats::FAMILY_ALPHA / comparisons.max(1) as f64;
    // The runs' own states: a profile's replays always; measured runs where the emulator
    // recorded them.
    let own_states = match source {
        Source::Modelled(_) => true,
        Source::Measured => cmp
            .cells
            .iter()
            .flatten()
            .any(|c| c.emulator.iter().any(Option::is_some)),
    };
    let method = match (sequential_run, own_states) {
        (false, _) => Method::SignedRank,
        (true, true) => Method::Mean,
        (true, false) => Method::Median,
    };
    let min_rounds = match method {
        Method::Mean => sequential::min_rounds(alpha),
        Method::Median => sequential::sign_min_rounds(alpha),
        Method::SignedRank => stats::min_rounds(1.0 - alpha),
    };
    let mut out = empty(comparisons, alpha, min_rounds);
    out.method = method;
    let sources: Vec<StateSource> = run_state
        .iter()
        .flatten()
        .flatten()
        .map(|s| s.1)
        .filter(|s| *s != StateSource::None)
        .collect();
    out.states = match (
        sources.contains(&StateSource::Emulator),
        sources.contains(&StateSource::Replay),
    ) {
        (true, true) => StateSource::Mixed,
        (true, false) => StateSource::Emulator,
        (false, true) => StateSource::Replay,
        (false, false) => StateSource::None,
    };
    for (w, states) in run_state.iter().enumerate() {
        out.baseline_states[w] = Counts::of(states[b].iter().map(|s| s.0));
        for t in (0..cmp.targets.len()).filter(|&t| t != b) {
            let rounds = paired(w, t);
            if rounds.is_empty() {
                continue;
            }
            let mut sequence = Sequence::new(alpha, method);
            let mut set_aside = Vec::new();
            let mut judged_states = Vec::new();
            for &(d, st, sb) in &rounds {
                // Where the states are not the runs' own, they decide nothing.
                let (st, sb) = if own_states { (st, sb) } else { (None, None) };
                if sequence.push(d, st, sb) {
                    judged_states.push(st.zip(sb).map(|(x, _)| x));
                } else if let Some(x) = st {
                    set_aside.push((d, x));
                }
            }
            let judged = sequence.judged().to_vec();
            let judged_state = match judged_states.first().filter(|_| own_states) {
                Some(Some(s)) if judged_states.iter().all(|x| *x == Some(*s)) => Some(*s),
                _ => None,
            };
            let interval = if sequential_run {
                sequence.interval()
            } else {
                signed_rank(&judged, alpha)
            };
            let estimate = match (&interval, judged.len()) {
                (Some(i), _) => i.ratio,
                (None, 0) => f64::NAN,
                (None, n) => (judged.iter().sum::<f64>() / n as f64).exp(),
            };
            let bounded = interval.filter(|i| i.high.is_finite() && i.low > 0.0);
            out.cells[w][t] = Some(Verdict {
                estimate,
                judgement: bounded.map_or(Judgement::Undecided, |i| stats::judge(&i)),
                side: bounded.and_then(|i| i.side()),
                interval: bounded,
                judged,
                judged_state,
                paired: rounds.len(),
                set_aside,
                target_states: Counts::of(states[t].iter().map(|s| s.0)),
            });
        }
    }
    out
}

/// A fixed-count run's interval of the judged log-ratios `d` at `alpha`: the signed-rank
/// interval with the Hodges–Lehmann estimate (`None` with fewer than 2; unbounded while too
/// few for the level).
fn signed_rank(d: &[f64], alpha: f64) -> Option<Interval> {
    let t: Vec<Option<f64>> = d.iter().map(|x| Some(x.exp())).collect();
    let one = vec![Some(1.0); d.len()];
    stats::paired_interval(&t, &one, 1.0 - alpha)
}

/// The state a baseline's or target's runs took most often, and how many of how many
/// (`None` without known states).
pub fn most_common(c: &Counts) -> Option<(State, u64, u64)> {
    if c.total() == 0 {
        return None;
    }
    let s = if c.cache > c.media {
        State::Cache
    } else {
        State::Media
    };
    Some((s, c.get(s), c.total()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn projections_count_the_rounds_set_aside() {
        let a = sequential::alpha(24);
        // Five judged rounds of eight: the rounds still to judge take 8/5 as many rounds.
        let judged = [0.03, 0.05, 0.02, 0.04, 0.06];
        let Projection::Rounds { total, judged: j } = project(&judged, 8, a, Method::Mean) else {
            panic!("not projected");
        };
        let more = (j - 5) as f64 * 8.0 / 5.0;
        assert_eq!(total, 8 + more.ceil() as usize);
        assert!(total > j);
        assert_eq!(
            project(&judged[..2], 8, a, Method::Mean),
            Projection::TooFew
        );
        // The median's sequence: at least the 12 rounds its first interval needs.
        let Projection::Rounds { judged: m, .. } = project(&judged, 5, a, Method::Median) else {
            panic!("not projected");
        };
        assert!(m >= 12 && m >= j, "{m} {j}");
        // At the margin's end: never decided.
        let at_end: Vec<f64> = [0.01, -0.01, 0.01, -0.01]
            .iter()
            .map(|x| 1.05f64.ln() + x)
            .collect();
        assert_eq!(project(&at_end, 4, a, Method::Mean), Projection::Beyond);
    }
}

/// A report's judgements, each computed once: the measured runs' and each profile's replays'.
#[derive(Debug, Clone, PartialEq)]
pub struct Judged {
    /// The measured runs'.
    pub measured: Verdicts,
    /// Per profile id, its replays'.
    pub modelled: std::collections::BTreeMap<String, Verdicts>,
}

impl Judged {
    /// The judgements of `cmp`.
    pub fn of(cmp: &Comparison) -> Judged {
        Judged {
            measured: verdicts(cmp, Source::Measured),
            modelled: cmp
                .profiles
                .iter()
                .map(|p| (p.id.clone(), verdicts(cmp, Source::Modelled(&p.id))))
                .collect(),
        }
    }

    /// The judgements of `source`.
    pub fn of_source(&self, source: Source<'_>) -> Option<&Verdicts> {
        match source {
            Source::Measured => Some(&self.measured),
            Source::Modelled(p) => self.modelled.get(p),
        }
    }
}

/// `f` of each comparison's verdict in the measured judgement of `cmp` (`None` for the
/// baseline; `f(None)` where no round pairs), with the judgement itself.
fn per_comparison<T>(
    cmp: &Comparison,
    f: impl Fn(&Verdicts, Option<&Verdict>) -> T,
) -> Vec<Vec<Option<T>>> {
    let v = verdicts(cmp, Source::Measured);
    let b = cmp.baseline();
    v.cells
        .iter()
        .map(|row| {
            row.iter()
                .enumerate()
                .map(|(t, c)| (Some(t) != b).then(|| f(&v, c.as_ref())))
                .collect()
        })
        .collect()
}

/// What the runner decides after a round (`minfs-bench compare --budget`): per workload and
/// target (the comparison's order), `None` for the baseline, else the measured verdict so far
/// — `Judgement::Undecided` while the comparison must go on. The report's own judgement
/// ([`verdicts`]), so the rule that stops a comparison is the report's.
pub fn decide(cmp: &Comparison) -> Vec<Vec<Option<Judgement>>> {
    per_comparison(cmp, |_, c| c.map_or(Judgement::Undecided, |c| c.judgement))
}

/// A comparison's rounds so far and the rounds it would need in all (`None`: not projected).
pub type RoundsNeeded = (usize, Option<usize>);

/// What the runner prices a comparison by after a round ([`super::allocate`]): per workload and
/// target (`None` for the baseline), the rounds it has with the baseline and the rounds in all
/// its sequence would need at the judged rounds' mean and spread and the share of rounds in
/// matching states so far ([`project`] at the report's level; `None` inside when not
/// projected). A comparison with fewer than [`super::allocate::ALLOCATE_FROM`] judged rounds
/// gives that count instead of its rounds, so that the allocation runs it unpriced until its
/// rounds in matching states can be priced.
pub fn projections(cmp: &Comparison) -> Vec<Vec<Option<RoundsNeeded>>> {
    per_comparison(cmp, |v, c| match c {
        Some(c) if c.judged.len() < super::allocate::ALLOCATE_FROM => (c.judged.len(), None),
        Some(c) => (
            c.paired,
            match project(&c.judged, c.paired, v.alpha, v.method) {
                Projection::Rounds { total, .. } => Some(total),
                _ => None,
            },
        ),
        None => (0, None),
    })
}
