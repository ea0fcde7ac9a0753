//! The report's verdicts on rounds measured on this machine (docs/COMPARISON.md, "What each
//! verdict assumes" and "How the default run is sized").
//!
//! **Budget runs** (`minfs-bench compare`'s default: each comparison judged after each of its
//! rounds by the report's own rule — the rounds whose two runs took the same drive state fed
//! to a confidence sequence, `src/compare/verdict.rs` and `sequential.rs` — and stopped once its
//! interval lies inside one of the three regions; each round after the 4th given to the
//! comparisons nearest a verdict, `src/compare/allocate.rs`), simulated as the runner runs
//! them, on **each comparison's own measured rounds**: the default's runs on the emulated drive
//! as issue 47 made it — replies when the drive would, the whole 1 TB drive — and two pilots
//! on it (`tests/data/rounds-emulated.json`, `scripts/size-default.py DIR... --rounds-data
//! FILE --targets ext4,xfs`: every round of the default's 12 comparisons as measured, with the
//! state each run took), drawn with
//! replacement, not pooled across comparisons and not mirrored, each shifted so that the true
//! ratio — the mean log-ratio of the rounds the rule judges — is the one the test sets:
//!
//! - per comparison, alone, up to the runner's most rounds, at true ratios of 1, 0.95, 1.05
//!   and 1.15: a false call (a verdict or a "slower"/"faster" beside it that the true ratio
//!   contradicts) in at most the nominal share 0.05/12 (the default's 12 comparisons);
//! - per report, the runner's loop in time (the 15-minute budget at the run times measured,
//!   `allocate::fit_round` and `allocate::allocate` as the runner calls them) with every
//!   comparison at one true ratio: a false call anywhere in at most 5 % of reports;
//! - a 15 % difference decided within the budget in at least 90 % of simulated default runs;
//! - the rule before this one (every round judged, a comparison stopped when its interval first
//!   lay inside ±5 % or excluded 1) calls falsely far above the nominal share on XFS's
//!   rand-oldest-1m rounds where they are two-state, as does the present rule with the states
//!   ignored: the default's runs before issue 47 (`tests/data/rounds-two-state.json`, at a
//!   1306 MiB span, where XFS's gets came from the drive's cache in 28 of 141 runs; on the
//!   whole drive every run reads from the media).
//!
//! A round is drawn as a smoothed bootstrap: a measured round's residual plus a normal jitter
//! of Silverman's bandwidth, shrunk to the rounds' own variance. Without the jitter a
//! comparison with a few dozen measured rounds gives the same value in two or three draws now
//! and then, a spread of zero that no real pair of runs has, and an interval of no width.
//!
//! **Fixed-count runs** (`--runs N`: the Wilcoxon signed-rank interval, all rounds run) at 18
//! rounds of 24 comparisons on the loop device's pilots (`tests/data/noise-loop.json`): the
//! family-wise rate, a 20 % difference found, ±5 % resolution.

use std::time::Duration;

use bencher_workloads::compare::states::State;
use bencher_workloads::compare::stats::{self, Judgement};
use bencher_workloads::compare::verdict::{self, Method, Sequence};
use bencher_workloads::compare::{allocate, defaults, sequential};
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use statrs::distribution::{ContinuousCDF, StudentsT};

// ---------------------------------------------------------------------------------------------
// Fixed-count runs.

/// The fixed-count case checked below: `--runs 18`, 24 comparisons (the loop device's earlier
/// default, sized in docs/COMPARISON.md).
fn fixed_size() -> (usize, usize) {
    (24, 18)
}

/// The loop pilots' noise: each comparison's standard deviation of its per-round log-ratios,
/// and every residual divided by its comparison's deviation (scaled by √(n/(n − 1)) to unit
/// variance), pooled — the fixed-count check predates per-comparison rounds and keeps its
/// data.
fn noise(file: &str) -> (Vec<f64>, Vec<f64>) {
    let v = json(file);
    let (mut sds, mut shape) = (Vec::new(), Vec::new());
    for c in v["residuals"].as_array().unwrap() {
        let r = floats(c);
        if r.len() < 2 {
            continue;
        }
        let n = r.len() as f64;
        let sd = (r.iter().map(|x| x * x).sum::<f64>() / (n - 1.0)).sqrt();
        if sd <= 0.0 {
            continue;
        }
        sds.push(sd);
        shape.extend(r.iter().map(|x| x / sd * (n / (n - 1.0)).sqrt()));
    }
    (sds, shape)
}

fn json(file: &str) -> serde_json::Value {
    let path = format!("{}/tests/data/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap()
}

/// A JSON array of numbers.
fn floats(v: &serde_json::Value) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

/// One simulated fixed-count report: `m` comparisons of `n` rounds each, comparison `i` with a
/// true log-ratio `shift(i)` and a measured deviation drawn from `sds`, its rounds' noise from
/// `shape`. Each comparison's interval and its verdict.
fn report(
    rng: &mut ChaCha8Rng,
    (sds, shape): &(Vec<f64>, Vec<f64>),
    m: usize,
    n: usize,
    shift: impl Fn(usize) -> f64,
) -> Vec<(stats::Interval, Judgement)> {
    let conf = stats::confidence(m);
    let mut pick = |v: &[f64]| v[(rng.next_u64() % v.len() as u64) as usize];
    (0..m)
        .map(|i| {
            let sd = pick(sds);
            let base: Vec<Option<f64>> = (0..n).map(|_| Some(1.0)).collect();
            let target: Vec<Option<f64>> = (0..n)
                .map(|_| Some((shift(i) + sd * pick(shape)).exp()))
                .collect();
            let iv = stats::paired_interval(&target, &base, conf).unwrap();
            (iv, stats::judge(&iv))
        })
        .collect()
}

const TRIALS: usize = 2000;

#[test]
fn equal_targets_are_judged_equal_in_95_percent_of_reports() {
    let (m, n) = fixed_size();
    // The same target twice: the pooled shape and its mirror image (two runs of one target
    // in one round are exchangeable, so their log-ratio is symmetric about 0).
    let (sds, shape) = noise("noise-loop.json");
    let mirrored: Vec<f64> = shape
        .iter()
        .chain(shape.iter())
        .enumerate()
        .map(|(i, x)| if i < shape.len() { *x } else { -x })
        .collect();
    let noise = (sds, mirrored);
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let wrong = (0..TRIALS)
        .filter(|_| {
            report(&mut rng, &noise, m, n, |_| 0.0)
                .iter()
                .any(|(i, j)| is_false(Claim::of(*j, i.low, i.high), 0.0))
        })
        .count();
    let share = wrong as f64 / TRIALS as f64;
    eprintln!("equal targets: {wrong} of {TRIALS} reports with a false call ({m} comparisons, {n} rounds)");
    assert!(
        share <= five_percent(TRIALS),
        "{wrong} of {TRIALS} reports ({m} comparisons, {n} rounds) called an equal target \
         different"
    );
}

#[test]
fn a_20_percent_difference_is_found_and_5_percent_is_the_resolution() {
    let (m, n) = fixed_size();
    let noise = noise("noise-loop.json");
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    let mut found = 0;
    let mut half_widths = Vec::new();
    for _ in 0..TRIALS {
        let r = report(&mut rng, &noise, m, n, |i| {
            if i == 0 {
                1.2f64.ln()
            } else {
                0.0
            }
        });
        found += usize::from(r[0].1 == Judgement::Slower);
        half_widths.extend(r.iter().map(|x| (x.0.high / x.0.low).ln() / 2.0));
    }
    assert!(
        found as f64 >= 0.95 * TRIALS as f64,
        "a 20 % difference found in {found} of {TRIALS} reports ({m} comparisons, {n} rounds)"
    );
    half_widths.sort_by(f64::total_cmp);
    let median = half_widths[half_widths.len() / 2];
    eprintln!(
        "20 % found in {found} of {TRIALS}; median half-width ±{:.1} % ({m} comparisons, {n} rounds)",
        (median.exp() - 1.0) * 100.0
    );
    assert!(
        median <= 1.05f64.ln(),
        "median interval half-width {median:.3} (log) is wider than 5 % ({m} comparisons, {n} rounds)"
    );
}

// ---------------------------------------------------------------------------------------------
// What a verdict claims, and when the truth contradicts it.

/// The ±5 % margin on the log scale.
fn margin() -> f64 {
    (1.0 + stats::EQUIVALENCE_MARGIN).ln()
}

/// What a decided comparison claims of its true log-ratio.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Claim {
    /// The interval lies above 1.05 (the report's "slower by more than 5 %").
    Above5,
    /// Below 1/1.05.
    Below5,
    /// Inside the margin; with `side`, also above (1) or below (−1) 1.
    Within {
        side: i8,
    },
    /// Before this issue: "slower" for an interval above 1, "faster" below 1.
    Above1,
    Below1,
}

impl Claim {
    /// The claim of the report's verdict `j` on an interval from `low` to `high` (ratios);
    /// `None` while undecided.
    fn of(j: Judgement, low: f64, high: f64) -> Option<Claim> {
        match j {
            Judgement::Slower => Some(Claim::Above5),
            Judgement::Faster => Some(Claim::Below5),
            Judgement::Equal => Some(Claim::Within {
                side: match stats::side(low, high) {
                    Some(stats::Side::Slower) => 1,
                    Some(stats::Side::Faster) => -1,
                    None => 0,
                },
            }),
            Judgement::Undecided => None,
        }
    }
}

/// Whether `claim` is false for the true log-ratio `truth` (the ends of the margin belong to
/// "within"). No claim is never false.
fn is_false(claim: Option<Claim>, truth: f64) -> bool {
    let m = margin();
    let eps = 1e-12;
    match claim {
        None => false,
        Some(Claim::Above5) => truth <= m + eps,
        Some(Claim::Below5) => truth >= -m - eps,
        Some(Claim::Within { side }) => {
            truth < -m - eps
                || truth > m + eps
                || (side > 0 && truth <= 0.0)
                || (side < 0 && truth >= 0.0)
        }
        Some(Claim::Above1) => truth <= 0.0,
        Some(Claim::Below1) => truth >= 0.0,
    }
}

// ---------------------------------------------------------------------------------------------
// The measured rounds.

/// One measured round of a comparison: its log-ratio and the two runs' states.
#[derive(Clone, Copy, Debug)]
struct Round {
    d: f64,
    target: Option<State>,
    base: Option<State>,
}

#[derive(Clone)]
struct Target {
    name: String,
    cost: f64,
    rounds: Vec<Round>,
}

/// What a rule's rounds estimate: the mean log-ratio of the rounds whose states match, of every
/// round, or the median of every round.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Estimand {
    MatchedMean,
    Mean,
    Median,
}

impl Target {
    /// The rounds the estimand is of.
    fn of(&self, e: Estimand) -> Vec<f64> {
        self.rounds
            .iter()
            .filter(|r| e != Estimand::MatchedMean || judged(r))
            .map(|r| r.d)
            .collect()
    }

    /// The smoothed bootstrap for estimand `e`: the jitter's bandwidth (Silverman's: 0.9 ·
    /// min(sd, IQR/1.34) · n^(−1/5), on the rounds `e` is of) and the factor that gives the
    /// jittered rounds their measured variance.
    fn smoothing(&self, e: Estimand) -> (f64, f64) {
        let d = self.of(e);
        let n = d.len();
        if n < 2 {
            return (0.0, 1.0);
        }
        let mean = d.iter().sum::<f64>() / n as f64;
        let mut r: Vec<f64> = d.iter().map(|x| x - mean).collect();
        let sd = (r.iter().map(|x| x * x).sum::<f64>() / (n - 1) as f64).sqrt();
        r.sort_by(f64::total_cmp);
        let iqr = r[3 * n / 4] - r[n / 4];
        let spread = if iqr > 0.0 { sd.min(iqr / 1.34) } else { sd };
        let h = 0.9 * spread * (n as f64).powf(-0.2);
        let shrink = if sd > 0.0 {
            1.0 / (1.0 + h * h / (sd * sd)).sqrt()
        } else {
            1.0
        };
        (h, shrink)
    }

    /// The value that, taken from every round before the jitter, gives the simulated rounds
    /// estimand `e` exactly 0: the mean of the rounds it is of, or the median of the smoothed
    /// law of every round (the c at which the rounds' jittered values fall below c half the
    /// time).
    fn centre(&self, e: Estimand) -> f64 {
        let d = self.of(e);
        if e != Estimand::Median {
            return d.iter().sum::<f64>() / d.len() as f64;
        }
        let (h, _) = self.smoothing(e);
        let below = |c: f64| {
            d.iter()
                .map(|x| {
                    if h > 0.0 {
                        let z = (c - x) / h;
                        0.5 * (1.0 + statrs::function::erf::erf(z / std::f64::consts::SQRT_2))
                    } else if *x < c {
                        1.0
                    } else {
                        0.0
                    }
                })
                .sum::<f64>()
                / d.len() as f64
        };
        let (mut lo, mut hi) = (-10.0, 10.0);
        for _ in 0..200 {
            let mid = (lo + hi) / 2.0;
            if below(mid) < 0.5 {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        (lo + hi) / 2.0
    }
}

fn judged(r: &Round) -> bool {
    bencher_workloads::compare::verdict::judged_round(r.target, r.base)
}

#[derive(Clone)]
struct Workload {
    name: String,
    scale: Option<f64>,
    baseline: f64,
    targets: Vec<Target>,
}

/// A device's default budget run as measured: the budget, the time before round 1, and per
/// workload minfs's time per run and per target its time per run and its rounds.
#[derive(Clone)]
struct Device {
    budget: f64,
    before: f64,
    workloads: Vec<Workload>,
    /// The report's method for these rounds: the mean's sequence on matching states where the
    /// runs carry states, else the median's (`verdict::verdicts` chooses so).
    method: Method,
}

fn state(v: &serde_json::Value) -> Option<State> {
    match v.as_str() {
        Some("cache") => Some(State::Cache),
        Some("media") => Some(State::Media),
        _ => None,
    }
}

impl Device {
    /// `tests/data/FILE`: `rounds` per target (`--rounds-data`), or, in the loop device's
    /// data (`--budget-data`, no states), its `effect` plus each residual.
    fn load(file: &str) -> Device {
        let v = json(file);
        let workloads: Vec<Workload> = v["workloads"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| Workload {
                name: w["name"].as_str().unwrap().to_string(),
                scale: w["scale"].as_f64(),
                baseline: w["baseline_s"].as_f64().unwrap(),
                targets: w["targets"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|t| {
                        let rounds = match t["rounds"].as_array() {
                            Some(rs) => rs
                                .iter()
                                .map(|r| Round {
                                    d: r[0].as_f64().unwrap(),
                                    target: state(&r[1]),
                                    base: state(&r[2]),
                                })
                                .collect(),
                            None => {
                                let e = t["effect"].as_f64().unwrap();
                                floats(&t["residuals"])
                                    .into_iter()
                                    .map(|x| Round {
                                        d: e + x,
                                        target: None,
                                        base: None,
                                    })
                                    .collect()
                            }
                        };
                        Target {
                            name: t["name"].as_str().unwrap().to_string(),
                            cost: t["cost_s"].as_f64().unwrap(),
                            rounds,
                        }
                    })
                    .collect(),
            })
            .collect();
        let states = workloads
            .iter()
            .flat_map(|w: &Workload| &w.targets)
            .flat_map(|t| &t.rounds)
            .any(|r| r.target.is_some() || r.base.is_some());
        Device {
            budget: v["budget_s"].as_f64().unwrap(),
            before: v["before_round_1_s"].as_f64().unwrap(),
            workloads,
            method: if states { Method::Mean } else { Method::Median },
        }
    }

    fn comparisons(&self) -> usize {
        self.workloads.iter().map(|w| w.targets.len()).sum()
    }

    fn ats(&self) -> Vec<At> {
        (0..self.workloads.len())
            .flat_map(|w| (0..self.workloads[w].targets.len()).map(move |t| (w, t)))
            .collect()
    }

    fn target(&self, (w, t): At) -> &Target {
        &self.workloads[w].targets[t]
    }

    fn name(&self, (w, t): At) -> String {
        format!(
            "{} {}",
            self.workloads[w].name, self.workloads[w].targets[t].name
        )
    }
}

/// A comparison's place in a [`Device`]: (workload, target).
type At = (usize, usize);

const EMULATED: &str = "rounds-emulated.json";
/// The default's rounds before issue 47, where rand-oldest-1m is two-state.
const TWO_STATE: &str = "rounds-two-state.json";
const LOOP: &str = "budget-loop.json";

// ---------------------------------------------------------------------------------------------
// The rules.

/// How a simulated comparison is judged after each round.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Rule {
    /// The report's (and so the runner's): the rounds whose two runs took the same state, a
    /// confidence sequence at 0.05/M, a verdict only inside one of three regions.
    Report,
    /// The same with the states ignored: every round judged.
    NoStates,
    /// The rule before this issue: every round judged by the same sequence, a comparison
    /// stopped once its interval lay inside ±5 % ("within") or excluded 1 ("slower",
    /// "faster"), whichever came first.
    Before,
    /// Without any correction: Student's t interval at 1 − 0.05/M over the rounds so far, as
    /// if their number had been fixed, looked at after every round (the rule before's
    /// regions).
    Peeking,
    /// The report's rule, every open comparison in every round (no `allocate::allocate`).
    EveryRound,
}

impl Rule {
    /// What the rule's verdicts are of, the report's judged by `method`.
    fn estimand(self, method: Method) -> Estimand {
        match (self, method) {
            (Rule::Report | Rule::EveryRound, Method::Median) => Estimand::Median,
            (Rule::Report | Rule::EveryRound, _) => Estimand::MatchedMean,
            _ => Estimand::Mean,
        }
    }
}

/// One comparison's rounds so far, judged by a rule.
#[derive(Clone)]
enum Judge {
    Report(Sequence),
    Sequence(sequential::Running),
    Peeking(Vec<f64>),
}

impl Judge {
    fn new(rule: Rule, alpha: f64, method: Method) -> Judge {
        match rule {
            Rule::Report | Rule::EveryRound => Judge::Report(Sequence::new(alpha, method)),
            Rule::NoStates | Rule::Before => Judge::Sequence(sequential::Running::new(alpha)),
            Rule::Peeking => Judge::Peeking(Vec::new()),
        }
    }

    fn push(&mut self, r: Round) {
        match self {
            Judge::Report(s) => {
                s.push(r.d, r.target, r.base);
            }
            Judge::Sequence(s) => s.push(r.d),
            Judge::Peeking(v) => v.push(r.d),
        }
    }

    /// The claim the rule makes now (`None`: undecided, go on), at `alpha`.
    fn claim(&self, rule: Rule, alpha: f64) -> Option<Claim> {
        let before = |i: stats::Interval| {
            if i.low >= stats::margin_low() && i.high <= stats::margin_high() {
                Some(Claim::Within { side: 0 })
            } else if i.low > 1.0 {
                Some(Claim::Above1)
            } else if i.high < 1.0 {
                Some(Claim::Below1)
            } else {
                None
            }
        };
        match (self, rule) {
            (Judge::Report(s), _) => {
                let i = s.interval()?;
                Claim::of(s.judge(), i.low, i.high)
            }
            (Judge::Sequence(s), Rule::NoStates) => {
                let i = s.interval()?;
                Claim::of(s.judge(), i.low, i.high)
            }
            (Judge::Sequence(s), _) => before(s.interval()?),
            (Judge::Peeking(d), _) => {
                let n = d.len();
                if n < 2 {
                    return None;
                }
                let mean = d.iter().sum::<f64>() / n as f64;
                let sd = (d.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1) as f64)
                    .sqrt();
                let t = StudentsT::new(0.0, 1.0, (n - 1) as f64)
                    .unwrap()
                    .inverse_cdf(1.0 - alpha / 2.0);
                let h = t * sd / (n as f64).sqrt();
                before(stats::Interval {
                    ratio: mean.exp(),
                    low: (mean - h).exp(),
                    high: (mean + h).exp(),
                    rounds: n,
                })
            }
        }
    }

    /// Rounds judged and pushed, and the projection the allocation prices by (as
    /// `verdict::projections` gives the runner).
    fn allocation(&self, alpha: f64, method: Method) -> (usize, Option<usize>) {
        match self {
            Judge::Report(s) => {
                if s.judged().len() < allocate::ALLOCATE_FROM {
                    return (s.judged().len(), None);
                }
                match verdict::project(s.judged(), s.paired(), alpha, method) {
                    verdict::Projection::Rounds { total, .. } => (s.paired(), Some(total)),
                    _ => (s.paired(), None),
                }
            }
            Judge::Sequence(s) => (
                s.rounds().len(),
                sequential::projection(s.rounds(), alpha).and_then(|p| p.2),
            ),
            Judge::Peeking(d) => (d.len(), None),
        }
    }
}

/// Draws comparison `t`'s next round: a measured round (with its states) picked at random,
/// moved so that the rule's true log-ratio is `truth`, with the smoothing jitter.
struct Drawer {
    centre: f64,
    h: f64,
    shrink: f64,
}

impl Drawer {
    fn new(t: &Target, e: Estimand) -> Drawer {
        let (h, shrink) = t.smoothing(e);
        Drawer {
            centre: t.centre(e),
            h,
            shrink,
        }
    }

    fn draw(&self, rng: &mut ChaCha8Rng, t: &Target, truth: f64) -> Round {
        let r = t.rounds[(rng.next_u64() % t.rounds.len() as u64) as usize];
        Round {
            d: truth + (r.d - self.centre + self.h * normal(rng)) * self.shrink,
            ..r
        }
    }
}

/// A standard normal draw (Box–Muller).
fn normal(rng: &mut ChaCha8Rng) -> f64 {
    let u1 = ((rng.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
    let u2 = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

// ---------------------------------------------------------------------------------------------
// One comparison alone.

/// The true ratios every comparison is checked at.
const RATIOS: [f64; 4] = [1.0, 0.95, 1.05, 1.15];

/// Over `trials` simulated runs of comparison `t` alone (up to the runner's most rounds,
/// stopped once the rule decides) at the true ratio `ratio`: how many ended in a false call,
/// and how many were decided.
fn alone(
    t: &Target,
    rule: Rule,
    method: Method,
    ratio: f64,
    trials: usize,
    seed: u64,
    alpha: f64,
) -> (usize, usize) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let drawer = Drawer::new(t, rule.estimand(method));
    let truth = ratio.ln();
    let (mut wrong, mut decided) = (0, 0);
    for _ in 0..trials {
        let mut j = Judge::new(rule, alpha, method);
        for _ in 0..defaults::MAX_ROUNDS {
            j.push(drawer.draw(&mut rng, t, truth));
            if let Some(c) = j.claim(rule, alpha) {
                decided += 1;
                wrong += usize::from(is_false(Some(c), truth));
                break;
            }
        }
    }
    (wrong, decided)
}

/// The bound a simulated share of `trials` whose true value is at most `p` is held to: `p`
/// plus three standard errors of the simulation.
fn at_most(p: f64, trials: usize) -> f64 {
    p + 3.0 * (p * (1.0 - p) / trials as f64).sqrt()
}

/// The bound a simulated share is held to: 5 % plus three standard errors of the simulation.
fn five_percent(trials: usize) -> f64 {
    at_most(0.05, trials)
}

const ALONE_TRIALS: usize = 4000;

/// The simulated runs per cell of [`the_simulation_table`] (run by hand, optimized): enough to
/// tell a share of 0.42 % from 0.84 % (the tests' 4,000 runs allow three standard errors of
/// 0.3 points).
const TABLE_TRIALS: usize = 40_000;

/// Each comparison's false calls and decisions at each true ratio by `rule`, printed as the
/// table docs/COMPARISON.md quotes; the comparisons whose false calls exceed the nominal share
/// (plus three standard errors), with their figures.
fn per_comparison(
    dev: &Device,
    rule: Rule,
    method: Method,
    ats: &[At],
    trials: usize,
) -> Vec<String> {
    let alpha = sequential::alpha(defaults::comparisons());
    let bound = at_most(alpha, trials);
    let mut over = Vec::new();
    eprintln!(
        "{rule:?} ({method:?}), each comparison alone (up to {} rounds), {trials} runs each: false \
         calls % / decided % at true ratios {RATIOS:?} (nominal {:.2} %)",
        defaults::MAX_ROUNDS,
        alpha * 100.0
    );
    for &at in ats {
        let t = dev.target(at);
        let mut line = format!("| {} |", dev.name(at));
        for (i, &ratio) in RATIOS.iter().enumerate() {
            let (wrong, decided) = alone(t, rule, method, ratio, trials, 100 + i as u64, alpha);
            let share = wrong as f64 / trials as f64;
            line.push_str(&format!(
                " {:.2} / {:.0} |",
                share * 100.0,
                decided as f64 * 100.0 / trials as f64
            ));
            if share > bound {
                over.push(format!(
                    "{} at {ratio}: {:.2} %",
                    dev.name(at),
                    share * 100.0
                ));
            }
        }
        eprintln!("{line}");
    }
    over
}

/// The comparisons whose rounds have a rare level, a few tenths of a percent to 1.5 % away from
/// a tight common one, on which the sequence — which assumes one normal law within a state —
/// called falsely above its nominal share at an end of the margin until it took a round's
/// spread as at least `sequential::SD_FLOOR` (docs/COMPARISON.md, "What each verdict
/// assumes"): ext4 at 512 on rand-mixed-1m, whose 21 rounds of the corrected emulator lie
/// within 1.104–1.111 but one at 1.091 (three reads more from the drive's cache in that run).
/// The comparisons at 512 whose rounds step with the drive's read-modify-writes (seq-256k and
/// seq-4m on ext4 and XFS, two to a dozen levels each) hold their share without it.
const RARE_LEVEL: [(&str, &str); 1] = [("rand-mixed-1m", "ext4")];

fn rare_level(dev: &Device, (w, t): At) -> bool {
    RARE_LEVEL.contains(&(
        dev.workloads[w].name.as_str(),
        dev.workloads[w].targets[t].name.as_str(),
    ))
}

/// The issue's check on every comparison but [`RARE_LEVEL`] (the test below): false calls at most the nominal
/// share 0.05/12 at every true ratio.
#[test]
fn each_comparison_calls_falsely_at_most_its_nominal_share() {
    let dev = Device::load(EMULATED);
    let ats: Vec<At> = dev
        .ats()
        .into_iter()
        .filter(|&a| !rare_level(&dev, a))
        .collect();
    let over = per_comparison(&dev, Rule::Report, dev.method, &ats, ALONE_TRIALS);
    assert!(over.is_empty(), "over the nominal share: {over:?}");
}

/// The same on [`RARE_LEVEL`], the bug this guards: before the sequence took a round's spread
/// as at least `sequential::SD_FLOOR`, at the margin's end (a true ratio of 1.05 exactly, the
/// common level 0.07 % above it) it decided on the common level's spread, up to the runner's
/// 50 rounds, and called "slower by more than 5 %" in 2.67 % of runs (nominal 0.21 % then);
/// with the floor (and now the verdict's resolution too), in none of 4000.
#[test]
fn comparisons_with_a_rare_level_call_falsely_at_most_their_nominal_share() {
    let dev = Device::load(EMULATED);
    let ats: Vec<At> = dev
        .ats()
        .into_iter()
        .filter(|&a| rare_level(&dev, a))
        .collect();
    let over = per_comparison(&dev, Rule::Report, dev.method, &ats, ALONE_TRIALS);
    assert!(over.is_empty(), "over the nominal share: {over:?}");
}

/// [`per_comparison`] by `rule` on XFS's rand-oldest-1m rounds in [`TWO_STATE`].
fn over_on_two_state_xfs(rule: Rule) -> Vec<String> {
    let dev = Device::load(TWO_STATE);
    let xfs = dev
        .ats()
        .into_iter()
        .find(|&a| dev.name(a) == "rand-oldest-1m xfs")
        .expect("rand-oldest-1m xfs in the data");
    per_comparison(&dev, rule, dev.method, &[xfs], ALONE_TRIALS)
}

/// The rule before this issue, on XFS's rand-oldest-1m rounds (two states: in 28 of 141 runs
/// its gets came from the drive's cache): false calls far above the nominal share.
#[test]
fn the_rule_before_calls_falsely_too_often_on_two_state_rounds() {
    let over = over_on_two_state_xfs(Rule::Before);
    assert!(!over.is_empty(), "the rule before held its nominal share");
}

/// The present rule with the states ignored, on the same rounds: also over — the states are
/// what keeps it within its share.
#[test]
fn without_the_states_two_state_rounds_are_called_falsely_too_often() {
    let over = over_on_two_state_xfs(Rule::NoStates);
    assert!(
        !over.is_empty(),
        "every round judged held the nominal share"
    );
}

/// rand-oldest-1m's XFS and ext4 at 512 in [`TWO_STATE`]: the two-state comparisons.
fn two_state_rand_oldest(dev: &Device) -> Vec<At> {
    let ats: Vec<At> = dev
        .ats()
        .into_iter()
        .filter(|&a| ["rand-oldest-1m xfs", "rand-oldest-1m ext4"].contains(&dev.name(a).as_str()))
        .collect();
    assert_eq!(ats.len(), 2, "{TWO_STATE}: rand-oldest-1m xfs and ext4");
    ats
}

/// The report's rule on the same two-state rounds — XFS's and ext4's rand-oldest-1m at 512 (28
/// of 141 and 12 of 114 runs in the cache's state) — judged on matching states: within the
/// nominal share at every true ratio. The runs of the whole drive have no two-state
/// comparison, so this is where the states are checked as the rule runs.
#[test]
fn two_state_rounds_judged_on_matching_states_hold_the_nominal_share() {
    let dev = Device::load(TWO_STATE);
    let ats = two_state_rand_oldest(&dev);
    let over = per_comparison(&dev, Rule::Report, dev.method, &ats, ALONE_TRIALS);
    assert!(over.is_empty(), "over the nominal share: {over:?}");
}

// ---------------------------------------------------------------------------------------------
// The runner's loop.

/// One simulated budget run on `dev`, as `minfs-bench compare` runs it: rounds until the budget
/// fits no further one (`allocate::fit_round` on the measured run times) or the default's most
/// rounds are done, each round running minfs and the open comparisons — with the runner's
/// rule, after the first `allocate::ALLOCATE_FROM` rounds only those `allocate::allocate` gives
/// it — each comparison judged by `rule` after each of its rounds and closed once decided.
/// Comparison `at` has the true log-ratio `truth(at)`. Returns each comparison's claim (`None`:
/// undecided) and the round it was decided at (0: never).
fn budget_run(
    rng: &mut ChaCha8Rng,
    dev: &Device,
    drawers: &[Vec<Drawer>],
    rule: Rule,
    truth: impl Fn(At) -> f64,
) -> Vec<Vec<(Option<Claim>, usize)>> {
    let m = dev.comparisons();
    let alpha = sequential::alpha(m);
    let mut judges: Vec<Vec<Judge>> = dev
        .workloads
        .iter()
        .map(|w| vec![Judge::new(rule, alpha, dev.method); w.targets.len()])
        .collect();
    let mut out: Vec<Vec<(Option<Claim>, usize)>> = dev
        .workloads
        .iter()
        .map(|w| vec![(None, 0); w.targets.len()])
        .collect();
    let mut open: Vec<Vec<bool>> = dev
        .workloads
        .iter()
        .map(|w| vec![true; w.targets.len()])
        .collect();
    let secs = Duration::from_secs_f64;
    let mut elapsed = dev.before;
    for round in 1..=defaults::MAX_ROUNDS as usize {
        let left = secs((dev.budget - elapsed).max(0.0));
        let mut waiting: Vec<At> = Vec::new();
        if !matches!(rule, Rule::EveryRound) && round > allocate::ALLOCATE_FROM {
            let ats: Vec<At> = dev.ats().into_iter().filter(|&(w, t)| open[w][t]).collect();
            let items: Vec<allocate::Open> = ats
                .iter()
                .map(|&(w, t)| {
                    let (rounds, needed) = judges[w][t].allocation(alpha, dev.method);
                    allocate::Open {
                        workload: w,
                        rounds,
                        needed,
                        cost: secs(dev.workloads[w].targets[t].cost),
                    }
                })
                .collect();
            let take = allocate::allocate(&items, |w| secs(dev.workloads[w].baseline), left);
            waiting = ats
                .into_iter()
                .zip(take)
                .filter(|(_, t)| !t)
                .map(|(a, _)| a)
                .collect();
        }
        let active: Vec<(usize, Vec<&str>)> = dev
            .workloads
            .iter()
            .enumerate()
            .filter_map(|(w, wl)| {
                let ts: Vec<&str> = wl
                    .targets
                    .iter()
                    .enumerate()
                    .filter(|&(t, _)| open[w][t] && !waiting.contains(&(w, t)))
                    .map(|(_, x)| x.name.as_str())
                    .collect();
                (!ts.is_empty()).then(|| (w, std::iter::once("minfs").chain(ts).collect()))
            })
            .collect();
        if active.is_empty() {
            break;
        }
        let cost = |w: usize, t: &str| {
            let wl = &dev.workloads[w];
            Some(secs(if t == "minfs" {
                wl.baseline
            } else {
                wl.targets.iter().find(|x| x.name == t).unwrap().cost
            }))
        };
        let fitted = allocate::fit_round(&active, "minfs", cost, left);
        if fitted.is_empty() {
            break;
        }
        for (w, ts) in &fitted {
            for name in ts {
                elapsed += cost(*w, name).unwrap().as_secs_f64();
                if *name == "minfs" {
                    continue;
                }
                let t = dev.workloads[*w]
                    .targets
                    .iter()
                    .position(|x| x.name == *name)
                    .unwrap();
                let r = drawers[*w][t].draw(rng, &dev.workloads[*w].targets[t], truth((*w, t)));
                judges[*w][t].push(r);
                if let Some(c) = judges[*w][t].claim(rule, alpha) {
                    open[*w][t] = false;
                    out[*w][t] = (Some(c), round);
                }
            }
        }
    }
    out
}

fn drawers(dev: &Device, rule: Rule) -> Vec<Vec<Drawer>> {
    let e = rule.estimand(dev.method);
    dev.workloads
        .iter()
        .map(|w| w.targets.iter().map(|t| Drawer::new(t, e)).collect())
        .collect()
}

const BUDGET_TRIALS: usize = 1000;

/// The share of simulated budget runs on `file` with a false call anywhere, every comparison's
/// true ratio `ratio`.
fn false_reports(file: &str, rule: Rule, ratio: f64, seed: u64) -> f64 {
    let dev = Device::load(file);
    let dr = drawers(&dev, rule);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let truth = ratio.ln();
    let (mut wrong, mut decided) = (0, 0);
    for _ in 0..BUDGET_TRIALS {
        let r = budget_run(&mut rng, &dev, &dr, rule, |_| truth);
        wrong += usize::from(r.iter().flatten().any(|(c, _)| is_false(*c, truth)));
        decided += r.iter().flatten().filter(|(c, _)| c.is_some()).count();
    }
    let share = wrong as f64 / BUDGET_TRIALS as f64;
    eprintln!(
        "{file}, {rule:?}, every true ratio {ratio}: a false call in {wrong} of {BUDGET_TRIALS} \
         budget runs ({} comparisons, {:.0} s; {:.1} decided on average)",
        dev.comparisons(),
        dev.budget,
        decided as f64 / BUDGET_TRIALS as f64
    );
    share
}

#[test]
fn a_report_calls_falsely_in_at_most_5_percent_of_budget_runs_emulated() {
    let shares: Vec<f64> = RATIOS
        .iter()
        .enumerate()
        .map(|(i, &r)| false_reports(EMULATED, Rule::Report, r, 11 + i as u64))
        .collect();
    assert!(
        shares.iter().all(|&s| s <= five_percent(BUDGET_TRIALS)),
        "{shares:?} at {RATIOS:?}"
    );
}

#[test]
fn a_report_calls_falsely_in_at_most_5_percent_of_budget_runs_loop() {
    // The loop device's rounds carry no states (a loop device has none).
    let shares: Vec<f64> = RATIOS
        .iter()
        .enumerate()
        .map(|(i, &r)| false_reports(LOOP, Rule::Report, r, 21 + i as u64))
        .collect();
    assert!(
        shares.iter().all(|&s| s <= five_percent(BUDGET_TRIALS)),
        "{shares:?} at {RATIOS:?}"
    );
}

#[test]
fn peeking_at_a_fixed_count_interval_calls_equal_targets_different_too_often() {
    // The correction matters: the same runs judged by an interval that assumes its number of
    // rounds was fixed in advance.
    let share = false_reports(EMULATED, Rule::Peeking, 1.0, 13).max(false_reports(
        LOOP,
        Rule::Peeking,
        1.0,
        14,
    ));
    assert!(share > five_percent(BUDGET_TRIALS), "{share}");
}

/// The share of simulated budget runs on `file` that decide a 15 % difference (slower by more
/// than 5 %): in each, one comparison drawn at random has a true ratio of 1.15 and the others
/// their measured ratios, so the budget is spent as in the default's runs. Prints the median
/// round it was decided at and the misses by comparison.
fn fifteen_percent(file: &str, seed: u64, method: Option<Method>) -> f64 {
    let mut dev = Device::load(file);
    if let Some(m) = method {
        dev.method = m;
    }
    let rule = Rule::Report;
    let dr = drawers(&dev, rule);
    let ats = dev.ats();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut at = Vec::new();
    let mut missed: Vec<usize> = vec![0; ats.len()];
    for _ in 0..BUDGET_TRIALS {
        let i = (rng.next_u64() % ats.len() as u64) as usize;
        let chosen = ats[i];
        let r = budget_run(&mut rng, &dev, &dr, rule, |a| {
            if a == chosen {
                1.15f64.ln()
            } else {
                dev.target(a).centre(rule.estimand(dev.method))
            }
        });
        let (c, k) = r[chosen.0][chosen.1];
        if c == Some(Claim::Above5) {
            at.push(k);
        } else {
            missed[i] += 1;
        }
    }
    at.sort_unstable();
    let median = at.get(at.len() / 2).copied().unwrap_or(0);
    let worst: Vec<String> = ats
        .iter()
        .zip(&missed)
        .filter(|(_, n)| **n > 0)
        .map(|(&a, n)| format!("{}: {n}", dev.name(a)))
        .collect();
    eprintln!(
        "{file} ({:?}): a 15 % difference decided slower in {} of {BUDGET_TRIALS} budget runs \
         (median round {median}; {} comparisons, {:.0} s); missed: {}",
        dev.method,
        at.len(),
        dev.comparisons(),
        dev.budget,
        worst.join(", ")
    );
    at.len() as f64 / BUDGET_TRIALS as f64
}

/// The issue's target for the default (issues 36, 48): on the emulated drive (the default
/// device), a 15 % difference is decided within the default budget in at least 90 % of
/// simulated runs. With ext4 and XFS at 4096 in the default too (24 comparisons, a round of
/// the six workloads about 4 minutes on the whole drive) it was not met: 87.6 %, the misses
/// mostly seq-4m XFS at 512 (its rounds vary 5 % with the drive's read-modify-writes) and
/// rand-oldest-1m (its runs the longest).
#[test]
fn a_15_percent_difference_is_decided_within_the_default_budget() {
    let share = fifteen_percent(EMULATED, 31, None);
    assert!(share >= 0.9, "{share}");
}

/// Why the emulated drive's rounds are judged by the mean's sequence on matching states and
/// not by the median's, which assumes nothing: on the same rounds the median's decides a 15 %
/// difference within the default budget far less often (it bounds nothing before 12 rounds).
#[test]
fn the_medians_sequence_would_miss_the_15_percent_aim_on_the_emulated_drive() {
    let share = fifteen_percent(EMULATED, 33, Some(Method::Median));
    assert!(share < 0.9, "{share}");
}

/// The whole simulation table of docs/COMPARISON.md ("What each verdict assumes"): every
/// comparison alone at every true ratio, by the report's rule (the mean's sequence on
/// matching states), the rule before this issue and the median's sequence; on the two-state
/// rounds of 2026-11-28, rand-oldest-1m's XFS and ext4 by those and by the report's rule with
/// the states ignored. [`TABLE_TRIALS`] runs per cell: run optimized, `cargo test --release
/// --test verdict_stats -- --ignored --nocapture the_simulation_table`.
#[test]
#[ignore = "prints the table of docs/COMPARISON.md; the checks are the tests above"]
fn the_simulation_table() {
    let rules = [
        (Rule::Report, Method::Mean),
        (Rule::NoStates, Method::Mean),
        (Rule::Before, Method::Mean),
        (Rule::Report, Method::Median),
    ];
    let dev = Device::load(EMULATED);
    eprintln!("{EMULATED}:");
    for (rule, method) in rules {
        if rule != Rule::NoStates {
            per_comparison(&dev, rule, method, &dev.ats(), TABLE_TRIALS);
        }
    }
    let dev = Device::load(TWO_STATE);
    let ats = two_state_rand_oldest(&dev);
    eprintln!("{TWO_STATE}:");
    for (rule, method) in rules {
        per_comparison(&dev, rule, method, &ats, TABLE_TRIALS);
    }
}

/// The same aim on the loop device (`--device loop`, the same budget): not met. Its rounds are
/// short and their noise is large (a sd of 8–22 % per round at the default's scales,
/// results/2026-11-27-vm-loop-budget). Run with `--ignored` to see the figure.
#[test]
#[ignore = "not met on the loop device: its per-round noise at the default's scales is 8-22 %; \
            docs/COMPARISON.md, issue 36"]
fn a_15_percent_difference_is_decided_within_the_default_budget_on_the_loop_device() {
    let share = fifteen_percent(LOOP, 32, None);
    assert!(share >= 0.9, "{share}");
}

/// Over `trials` simulated budget runs on `dev` by `rule` (each comparison at its measured
/// ratio, rounds and run time) with the budget `budget` seconds: the share that decide every
/// comparison, and the mean count decided.
fn every_comparison_decided(
    dev: &Device,
    budget: f64,
    rule: Rule,
    seed: u64,
    trials: usize,
) -> (f64, f64) {
    let dev = Device {
        budget,
        ..dev.clone()
    };
    let dr = drawers(&dev, rule);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (mut all, mut total) = (0, 0);
    for _ in 0..trials {
        let n = budget_run(&mut rng, &dev, &dr, rule, |a| {
            dev.target(a).centre(rule.estimand(dev.method))
        })
        .iter()
        .flatten()
        .filter(|(c, _)| c.is_some())
        .count();
        total += n;
        all += usize::from(n == dev.comparisons());
    }
    (all as f64 / trials as f64, total as f64 / trials as f64)
}

#[test]
fn giving_rounds_to_the_comparisons_nearest_a_verdict_decides_more_in_the_budget() {
    // The allocation's gain, on the default's own rounds (each comparison at its measured
    // ratio, rounds and run time): the mean count of comparisons a simulated default run
    // decides, with the runner's allocation and with every open comparison run every round.
    let dev = Device::load(EMULATED);
    let decided = |rule: Rule| every_comparison_decided(&dev, dev.budget, rule, 41, 300).1;
    let with = decided(Rule::Report);
    let without = decided(Rule::EveryRound);
    eprintln!(
        "{EMULATED}: a default run decides {with:.2} of {} comparisons on average with the \
         allocation, {without:.2} with every open comparison in every round",
        dev.comparisons()
    );
    assert!(with > without, "{with} <= {without}");
}

/// The default's sizing (issue 36: every comparison decided inside the budget in at least 90 %
/// of default runs), on the default's own measured rounds, which must be runs of the default's
/// workloads, targets and scales: not met. Run with `--ignored` to see the figures, the same
/// rounds at longer budgets beside it.
#[test]
#[ignore = "not met: comparisons near the ends of the ±5 % margin need far more rounds than \
            the budget holds (docs/COMPARISON.md, 'No budget decides it'; issue 36)"]
fn the_default_decides_every_comparison_within_its_budget() {
    let dev = Device::load(EMULATED);
    assert_eq!(
        dev.budget,
        defaults::BUDGET_S,
        "{EMULATED}: not the default's budget"
    );
    let names: Vec<&str> = dev.workloads.iter().map(|w| w.name.as_str()).collect();
    assert_eq!(
        names,
        defaults::WORKLOADS,
        "{EMULATED}: not the default's workloads"
    );
    for w in &dev.workloads {
        assert_eq!(
            w.scale,
            defaults::scale(&w.name),
            "{EMULATED}: {} not at the default's scale",
            w.name
        );
        let targets: Vec<&str> = w.targets.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(targets, defaults::TARGETS[1..], "{EMULATED}: {}", w.name);
    }
    let trials = 300;
    let (share, mean) = every_comparison_decided(&dev, dev.budget, Rule::Report, 51, trials);
    eprintln!(
        "{EMULATED}: every one of {} comparisons decided in {:.1} % of {trials} simulated \
         default runs ({:.0} s; {mean:.2} decided on average)",
        dev.comparisons(),
        100.0 * share,
        dev.budget
    );
    for budget in [1800.0, 3600.0] {
        let (s, m) = every_comparison_decided(&dev, budget, Rule::Report, 51, trials);
        eprintln!("  at {budget:.0} s: {:.1} % ({m:.2} on average)", 100.0 * s);
    }
    assert!(share >= 0.9, "{share}");
}

#[test]
fn the_runner_decides_with_the_reports_rule() {
    // compare::decide (what the runner calls after each round) on a directory gives the
    // judgement the report's sequence gives on the same rounds: the mean's where the runs
    // carry the emulator's statistics, the median's where not.
    use std::fs;
    let dir = tempfile::tempdir().unwrap();
    fs::write(
        dir.path().join("compare.json"),
        r#"{"workloads": ["w"], "targets": ["minfs", "a", "b"], "runs": 5, "stopping": "budget"}"#,
    )
    .unwrap();
    let a = [1.30, 1.31, 1.29, 1.30, 1.32];
    let b = [1.01, 0.97, 1.05, 0.99, 1.03];
    for (t, ratios) in [("a", &a[..]), ("b", &b[..])] {
        for (k, r) in ratios.iter().enumerate() {
            for (target, total) in [("minfs", 1e9), (t, 1e9 * r)] {
                let d = dir.path().join(format!("runs/w/{target}"));
                fs::create_dir_all(&d).unwrap();
                let mut report: serde_json::Value =
                    serde_json::from_str(include_str!("data/hdd-mixed.run.json")).unwrap();
                report["total_elapsed_ns"] = serde_json::json!(total as u64);
                fs::write(d.join(format!("run-{}.json", k + 1)), report.to_string()).unwrap();
            }
        }
    }
    let alpha = sequential::alpha(2);
    let judge = |v: &[f64], method: Method| {
        let mut s = Sequence::new(alpha, method);
        for x in v {
            s.push(x.ln(), None, None);
        }
        s.judge()
    };
    let decided = |dir: &std::path::Path| {
        bencher_workloads::compare::decide(&bencher_workloads::compare::load(dir).unwrap())
    };
    // No emulator statistics: the median's sequence, which 5 rounds do not bound.
    let d = decided(dir.path());
    assert_eq!(d[0][0], None);
    assert_eq!(d[0][1], Some(judge(&a, Method::Median)));
    assert_eq!(d[0][1], Some(Judgement::Undecided));
    // With them: the mean's, which decides a.
    for t in ["minfs", "a", "b"] {
        for k in 1..=5 {
            fs::write(
                dir.path().join(format!("runs/w/{t}/run-{k}.emulator.json")),
                r#"{"drive": {"cache_read_hits": 0, "media_reads": 0}}"#,
            )
            .unwrap();
        }
    }
    let d = decided(dir.path());
    assert_eq!(d[0][1], Some(judge(&a, Method::Mean)));
    assert_eq!(d[0][2], Some(judge(&b, Method::Mean)));
    assert_eq!(d[0][1], Some(Judgement::Slower));
}

/// `scripts/size-default.py --budget-data` writes what the simulations above draw from; runs
/// of one workload at different scales are different experiments, and pooling them would give
/// the simulation a noise and run time no run had (a what-if of the default's sizing puts such
/// runs side by side, each scale from its own DIRs). Two committed runs, rand-oldest-1m at
/// 0.04 and at 0.1.
#[test]
fn size_default_refuses_to_pool_runs_of_different_scales() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let out = tempfile::tempdir().unwrap();
    let data = out.path().join("budget.json");
    let run = |dirs: &[&str]| {
        let mut cmd = std::process::Command::new("python3");
        cmd.current_dir(root).arg("scripts/size-default.py");
        cmd.args(dirs.iter().map(|d| format!("results/{d}")));
        cmd.arg("--budget-data").arg(&data);
        match cmd.output() {
            Ok(o) => Some(o),
            Err(e) => {
                eprintln!("skipped: python3 cannot run ({e})");
                None
            }
        }
    };
    let Some(o) = run(&[
        "2026-11-28-vm-emulated-default-8",
        "2026-11-28-vm-emulated-rand-oldest-0.1-alone",
    ]) else {
        return;
    };
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("rand-oldest-1m at scale 0.1, another DIR at 0.04"),
        "{err}"
    );
    assert!(!data.exists());
    // One run alone: written, with each workload's scale.
    let o = run(&["2026-11-28-vm-emulated-rand-oldest-0.1-alone"]).unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&data).unwrap()).unwrap();
    assert_eq!(v["workloads"][0]["name"], "rand-oldest-1m");
    assert_eq!(v["workloads"][0]["scale"], 0.1);
}

/// `--rounds-data` writes every round as measured with the runs' states: XFS's rand-oldest-1m
/// rounds of `-rest-3` (40 rounds; 10 of its runs took the cache's state by their median get,
/// none of minfs's).
#[test]
fn size_default_writes_each_rounds_states() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let out = tempfile::tempdir().unwrap();
    let data = out.path().join("rounds.json");
    let o = match std::process::Command::new("python3")
        .current_dir(root)
        .args([
            "scripts/size-default.py",
            "results/2026-11-28-vm-emulated-rest-3",
            "--rounds-data",
        ])
        .arg(&data)
        .output()
    {
        Ok(o) => o,
        Err(e) => {
            eprintln!("skipped: python3 cannot run ({e})");
            return;
        }
    };
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&data).unwrap()).unwrap();
    let xfs = v["workloads"][0]["targets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "xfs")
        .unwrap();
    let rounds = xfs["rounds"].as_array().unwrap();
    assert_eq!(rounds.len(), 40);
    let cached = rounds.iter().filter(|r| r[1] == "cache").count();
    assert_eq!(cached, 10);
    assert!(rounds.iter().all(|r| r[2] == "media"));
    assert_eq!(v["state_source"], "median get");
}
