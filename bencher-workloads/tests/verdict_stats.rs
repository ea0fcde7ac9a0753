//! The report's verdicts on noise measured on this machine (docs/COMPARISON.md, "The verdict"
//! and "How the default run is sized").
//!
//! **Budget runs** (`minfs-bench compare`'s default: each comparison stopped once decided,
//! judged by a confidence sequence, `src/compare/sequential.rs`; each round after the 4th
//! given to the comparisons nearest a verdict, `src/compare/allocate.rs`), simulated as the
//! runner runs them — in time: the default's 15-minute budget spent at the run times measured
//! in the default's runs on that device, round after round, each round fitted to the budget
//! left by the runner's own `allocate::fit_round` and shared out by its own
//! `allocate::allocate`, each comparison judged after each of its rounds at 0.05/M and closed
//! once decided:
//!
//! - equal targets are called slower or faster in at most 5 % of simulated reports, on the
//!   emulated drive and on the loop device;
//! - a 15 % difference is decided (slower) within the budget in at least 90 % of reports on
//!   the emulated drive (the default device; on the loop device, far noisier per round, it
//!   is not: an ignored test says how often it is);
//! - without the correction — a fixed-count interval looked at after every round, stopping
//!   when it excludes 1 — equal targets are called different in more than 5 % of reports.
//!
//! **Fixed-count runs** (`--runs N`: the Wilcoxon signed-rank interval, all rounds run) at 18
//! rounds of 24 comparisons on the loop device: the same family-wise rate, a 20 % difference
//! found, ±5 % resolution.
//!
//! A comparison's per-round log-ratios are drawn, with replacement, from residuals of runs on
//! this machine — the default's own runs on the emulated drive
//! (`tests/data/budget-emulated.json`), its budget on the loop device
//! (`tests/data/budget-loop.json`, `--device loop`), both with the run times
//! (`scripts/size-default.py DIR... --budget-data FILE`), and, for the fixed-count case, the
//! pilots on the loop device (`tests/data/noise-loop.json`): per comparison, each round's
//! log-ratio minus the comparison's mean — so the noise has the machine's shape, heavy tails
//! included, and not a normal law's; in a budget run each comparison keeps its own measured
//! deviation, run time and (unless the test sets it) mean ratio.

use std::time::Duration;

use bencher_workloads::compare::allocate;
use bencher_workloads::compare::sequential;
use bencher_workloads::compare::stats::{self, Judgement};
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use statrs::distribution::{ContinuousCDF, StudentsT};

/// The fixed-count case checked below: `--runs 18`, 24 comparisons (the loop device's earlier
/// default, sized in docs/COMPARISON.md).
fn fixed_size() -> (usize, usize) {
    (24, 18)
}

/// The measured noise: each comparison's standard deviation of its per-round log-ratios, and
/// the shape of the noise — every residual divided by its comparison's deviation (and scaled by
/// √(n/(n − 1)), to unit variance), pooled. A simulated comparison takes one measured deviation
/// and draws its rounds from the pooled shape: the comparisons differ in noise as the measured
/// ones did, and their noise has the machine's shape. (A comparison's handful of residuals
/// alone is too few to draw from: it would often give the same value every round, an interval
/// of no width.)
fn noise(file: &str) -> (Vec<f64>, Vec<f64>) {
    let path = format!("{}/tests/data/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let (mut sds, mut shape) = (Vec::new(), Vec::new());
    for c in v["residuals"].as_array().unwrap() {
        if c.as_array().unwrap().len() < 2 {
            continue;
        }
        let (sd, s) = standardised(&floats(c));
        sds.push(sd);
        shape.extend(s);
    }
    (sds, shape)
}

/// A JSON array of numbers.
fn floats(v: &serde_json::Value) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

/// One comparison's residuals (at least 2): their standard deviation, and each divided by it
/// and scaled by √(n/(n − 1)) to unit variance (none if they are all 0).
fn standardised(r: &[f64]) -> (f64, Vec<f64>) {
    let n = r.len() as f64;
    let sd = (r.iter().map(|x| x * x).sum::<f64>() / (n - 1.0)).sqrt();
    if sd <= 0.0 {
        return (sd, Vec::new());
    }
    (
        sd,
        r.iter().map(|x| x / sd * (n / (n - 1.0)).sqrt()).collect(),
    )
}

/// The shape for the same target twice: `shape` and its mirror image. The log-ratio of two
/// runs of one target in one round is symmetric about 0 (the two runs are exchangeable); the
/// measured residuals, from different targets against minfs, need not be (one of the two may
/// have occasional slow runs the other has not).
fn symmetric((sds, shape): (Vec<f64>, Vec<f64>)) -> (Vec<f64>, Vec<f64>) {
    let mirror: Vec<f64> = shape.iter().map(|x| -x).collect();
    (sds, shape.into_iter().chain(mirror).collect())
}

/// One simulated report: `m` comparisons of `n` rounds each, comparison `i` with a true
/// log-ratio `shift(i)` and a measured deviation drawn from `sds`, its rounds' noise from
/// `shape`. Returns each comparison's judgement and its interval's half-width (log scale).
fn report(
    rng: &mut ChaCha8Rng,
    (sds, shape): &(Vec<f64>, Vec<f64>),
    m: usize,
    n: usize,
    shift: impl Fn(usize) -> f64,
) -> Vec<(Judgement, f64)> {
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
            (stats::judge(&iv), (iv.high / iv.low).ln() / 2.0)
        })
        .collect()
}

const TRIALS: usize = 2000;

#[test]
fn equal_targets_are_judged_equal_in_95_percent_of_reports() {
    let (m, n) = fixed_size();
    let noise = symmetric(noise("noise-loop.json"));
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let wrong = (0..TRIALS)
        .filter(|_| {
            report(&mut rng, &noise, m, n, |_| 0.0)
                .iter()
                .any(|(j, _)| matches!(j, Judgement::Slower | Judgement::Faster))
        })
        .count();
    let share = wrong as f64 / TRIALS as f64;
    eprintln!("equal targets: {wrong} of {TRIALS} reports called one slower or faster ({m} comparisons, {n} rounds)");
    // 95 % at least, less three standard errors of the simulation (±0.5 % at 2,000 trials).
    assert!(
        share <= 0.05 + 3.0 * (0.05f64 * 0.95 / TRIALS as f64).sqrt(),
        "{wrong} of {TRIALS} reports ({m} comparisons, {n} rounds) called an equal target \
         slower or faster"
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
        found += usize::from(r[0].0 == Judgement::Slower);
        half_widths.extend(r.iter().map(|x| x.1));
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
        "median interval half-width {:.3} (log) is wider than 5 % ({m} comparisons, {n} rounds)",
        median
    );
}

/// How a simulated budget run judges a comparison after each round.
#[derive(Clone, Copy, Debug)]
enum Rule {
    /// The runner's: the confidence sequence at 0.05/M.
    Sequence,
    /// Without the correction: Student's t interval at 1 − 0.05/M over the rounds so far, as if
    /// their number had been fixed, looked at after every round.
    Peeking,
    /// The runner's verdict, but every open comparison runs every round (no
    /// `allocate::allocate`): the runner before 2026-11-28.
    EveryRound,
}

/// The verdict of `rule` on the rounds `d` of a report of `m` comparisons.
fn judge_by(rule: Rule, d: &[f64], m: usize) -> Judgement {
    match rule {
        Rule::Sequence | Rule::EveryRound => sequential::judge_rounds(d, sequential::alpha(m)),
        Rule::Peeking => {
            let n = d.len();
            if n < 2 {
                return Judgement::Undecided;
            }
            let mean = d.iter().sum::<f64>() / n as f64;
            let sd =
                (d.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1) as f64).sqrt();
            let t = StudentsT::new(0.0, 1.0, (n - 1) as f64)
                .unwrap()
                .inverse_cdf(1.0 - sequential::alpha(m) / 2.0);
            let h = t * sd / (n as f64).sqrt();
            stats::judge(&stats::Interval {
                ratio: mean.exp(),
                low: (mean - h).exp(),
                high: (mean + h).exp(),
                rounds: n,
            })
        }
    }
}

/// A device's default budget run as measured (`tests/data/budget-*.json`, written by
/// `scripts/size-default.py DIR... --budget-data FILE` from the default's runs there): the
/// budget, the time before round 1, and per workload minfs's time per run and per target its
/// time per run, its mean log-ratio and its noise.
#[derive(Clone)]
struct Device {
    budget: f64,
    before: f64,
    workloads: Vec<Workload>,
    /// The pooled shape of the noise: every residual divided by its comparison's deviation
    /// (scaled to unit variance), as in [`noise`].
    shape: Vec<f64>,
}

#[derive(Clone)]
struct Workload {
    name: String,
    /// The scale its runs had (`None` in data written before size-default.py recorded it).
    scale: Option<f64>,
    baseline: f64,
    targets: Vec<Target>,
}

#[derive(Clone)]
struct Target {
    name: String,
    cost: f64,
    effect: f64,
    sd: f64,
}

impl Device {
    fn load(file: &str) -> Device {
        let path = format!("{}/tests/data/{file}", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let mut shape = Vec::new();
        let workloads = v["workloads"]
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
                        let (sd, s) = standardised(&floats(&t["residuals"]));
                        shape.extend(s);
                        Target {
                            name: t["name"].as_str().unwrap().to_string(),
                            cost: t["cost_s"].as_f64().unwrap(),
                            effect: t["effect"].as_f64().unwrap(),
                            sd,
                        }
                    })
                    .collect(),
            })
            .collect();
        Device {
            budget: v["budget_s"].as_f64().unwrap(),
            before: v["before_round_1_s"].as_f64().unwrap(),
            workloads,
            shape,
        }
    }

    fn comparisons(&self) -> usize {
        self.workloads.iter().map(|w| w.targets.len()).sum()
    }

    /// The shape for the same target twice: `shape` and its mirror image ([`symmetric`]).
    fn symmetric(mut self) -> Device {
        let mirror: Vec<f64> = self.shape.iter().map(|x| -x).collect();
        self.shape.extend(mirror);
        self
    }
}

/// A comparison's place in a [`Device`]: (workload, target).
type At = (usize, usize);

/// One simulated budget run on `dev`, as `minfs-bench compare` runs it: rounds until the budget
/// fits no further one (`allocate::fit_round` on the measured run times) or the default's most
/// rounds are done, each round running minfs and the open comparisons — with the runner's
/// rule, after the first `allocate::ALLOCATE_FROM` rounds only those `allocate::allocate` gives
/// it — each comparison judged by `rule` after each of its rounds and closed once decided.
/// Comparison `at` has the true log-ratio `effect(at)`, its measured deviation and rounds drawn
/// from the pooled shape. Returns each comparison's verdict and the round it was decided at
/// (0: never).
fn budget_run(
    rng: &mut ChaCha8Rng,
    dev: &Device,
    rule: Rule,
    effect: impl Fn(At) -> f64,
) -> Vec<Vec<(Judgement, usize)>> {
    let m = dev.comparisons();
    let alpha = sequential::alpha(m);
    let mut pick = |v: &[f64]| v[(rng.next_u64() % v.len() as u64) as usize];
    let mut rounds: Vec<Vec<sequential::Running>> = dev
        .workloads
        .iter()
        .map(|w| vec![sequential::Running::new(alpha); w.targets.len()])
        .collect();
    let mut peeked: Vec<Vec<Vec<f64>>> = dev
        .workloads
        .iter()
        .map(|w| vec![Vec::new(); w.targets.len()])
        .collect();
    let mut out: Vec<Vec<(Judgement, usize)>> = dev
        .workloads
        .iter()
        .map(|w| vec![(Judgement::Undecided, 0); w.targets.len()])
        .collect();
    let mut open: Vec<Vec<bool>> = dev
        .workloads
        .iter()
        .map(|w| vec![true; w.targets.len()])
        .collect();
    let secs = Duration::from_secs_f64;
    let mut elapsed = dev.before;
    for round in 1..=bencher_workloads::compare::defaults::MAX_ROUNDS as usize {
        let left = secs((dev.budget - elapsed).max(0.0));
        let mut waiting: Vec<At> = Vec::new();
        if matches!(rule, Rule::Sequence) && round > allocate::ALLOCATE_FROM {
            let ats: Vec<At> = (0..dev.workloads.len())
                .flat_map(|w| (0..open[w].len()).map(move |t| (w, t)))
                .filter(|&(w, t)| open[w][t])
                .collect();
            let items: Vec<allocate::Open> = ats
                .iter()
                .map(|&(w, t)| allocate::Open {
                    workload: w,
                    rounds: rounds[w][t].rounds().len(),
                    needed: sequential::projection(rounds[w][t].rounds(), alpha).and_then(|p| p.2),
                    cost: secs(dev.workloads[w].targets[t].cost),
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
                let sd = dev.workloads[*w].targets[t].sd;
                let x = effect((*w, t)) + sd * pick(&dev.shape);
                // The runner's verdict, fed round by round (the same function as the report's:
                // sequential::interval is this); the uncorrected one on all rounds so far.
                let j = match rule {
                    Rule::Sequence | Rule::EveryRound => {
                        rounds[*w][t].push(x);
                        rounds[*w][t].judge()
                    }
                    Rule::Peeking => {
                        peeked[*w][t].push(x);
                        judge_by(rule, &peeked[*w][t], m)
                    }
                };
                if j != Judgement::Undecided {
                    open[*w][t] = false;
                    out[*w][t] = (j, round);
                }
            }
        }
    }
    out
}

const BUDGET_TRIALS: usize = 1000;

/// The default budget run on the emulated drive (the default device) and on the loop device
/// (`--device loop`, the same budget; its runs are far shorter and noisier per round).
const EMULATED: &str = "budget-emulated.json";
const LOOP: &str = "budget-loop.json";

/// The share of simulated budget runs on `file` in which equal targets (every true ratio 1)
/// are called slower or faster.
fn false_calls(file: &str, rule: Rule, seed: u64) -> f64 {
    let dev = Device::load(file).symmetric();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let wrong = (0..BUDGET_TRIALS)
        .filter(|_| {
            budget_run(&mut rng, &dev, rule, |_| 0.0)
                .iter()
                .flatten()
                .any(|(j, _)| matches!(j, Judgement::Slower | Judgement::Faster))
        })
        .count();
    let share = wrong as f64 / BUDGET_TRIALS as f64;
    eprintln!(
        "{file}, {rule:?}: equal targets called slower or faster in {wrong} of {BUDGET_TRIALS} \
         budget runs ({} comparisons, {:.0} s)",
        dev.comparisons(),
        dev.budget
    );
    share
}

/// The bound a simulated share is held to: 5 % plus three standard errors of the simulation.
fn five_percent(trials: usize) -> f64 {
    0.05 + 3.0 * (0.05f64 * 0.95 / trials as f64).sqrt()
}

#[test]
fn budget_runs_call_equal_targets_different_in_at_most_5_percent_emulated() {
    let share = false_calls(EMULATED, Rule::Sequence, 11);
    assert!(share <= five_percent(BUDGET_TRIALS), "{share}");
}

#[test]
fn budget_runs_call_equal_targets_different_in_at_most_5_percent_loop() {
    let share = false_calls(LOOP, Rule::Sequence, 12);
    assert!(share <= five_percent(BUDGET_TRIALS), "{share}");
}

#[test]
fn peeking_at_a_fixed_count_interval_calls_equal_targets_different_too_often() {
    // The correction matters: the same runs judged by an interval that assumes its number of
    // rounds was fixed in advance.
    let share = false_calls(EMULATED, Rule::Peeking, 13).max(false_calls(LOOP, Rule::Peeking, 14));
    assert!(share > five_percent(BUDGET_TRIALS), "{share}");
}

/// The share of simulated budget runs on `file` that decide a 15 % difference (slower): in
/// each, one comparison drawn at random has a true ratio of 1.15 and the others their measured
/// ratios, so the budget is spent as in the default's runs. Prints the median round it was
/// decided at and the share by workload.
fn fifteen_percent(file: &str, seed: u64) -> f64 {
    let dev = Device::load(file);
    let ats: Vec<At> = (0..dev.workloads.len())
        .flat_map(|w| (0..dev.workloads[w].targets.len()).map(move |t| (w, t)))
        .collect();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut at = Vec::new();
    let mut missed: Vec<usize> = vec![0; ats.len()];
    for _ in 0..BUDGET_TRIALS {
        let i = (rng.next_u64() % ats.len() as u64) as usize;
        let chosen = ats[i];
        let r = budget_run(&mut rng, &dev, Rule::Sequence, |a| {
            if a == chosen {
                1.15f64.ln()
            } else {
                dev.workloads[a.0].targets[a.1].effect
            }
        });
        let (j, k) = r[chosen.0][chosen.1];
        if j == Judgement::Slower {
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
        .map(|(&(w, t), n)| format!("{w}/{}: {n}", dev.workloads[w].targets[t].name))
        .collect();
    eprintln!(
        "{file}: a 15 % difference decided slower in {} of {BUDGET_TRIALS} budget runs (median \
         round {median}; {} comparisons, {:.0} s); missed by workload/target: {}",
        at.len(),
        dev.comparisons(),
        dev.budget,
        worst.join(", ")
    );
    at.len() as f64 / BUDGET_TRIALS as f64
}

#[test]
fn giving_rounds_to_the_comparisons_nearest_a_verdict_decides_more_in_the_budget() {
    // The allocation's gain, on the default's own runs (each comparison at its measured ratio,
    // deviation and run time): the mean count of comparisons a simulated default run decides,
    // with the runner's allocation and with every open comparison run every round.
    let dev = Device::load(EMULATED);
    let decided = |rule: Rule| every_comparison_decided(&dev, dev.budget, rule, 31, 300).1;
    let with = decided(Rule::Sequence);
    let without = decided(Rule::EveryRound);
    eprintln!(
        "{EMULATED}: a default run decides {with:.2} of {} comparisons on average with the \
         allocation, {without:.2} with every open comparison in every round",
        dev.comparisons()
    );
    assert!(with > without, "{with} <= {without}");
}

/// The issue's target for the default (issue 36): on the emulated drive (the default device),
/// a 15 % difference is decided within the default budget in at least 90 % of simulated runs.
#[test]
fn a_15_percent_difference_is_decided_within_the_default_budget() {
    let share = fifteen_percent(EMULATED, 21);
    assert!(share >= 0.9, "{share}");
}

/// The same aim on the loop device (`--device loop`, the same budget): not met. Its rounds are
/// short and their noise is large (a sd of 8–22 % per round at the default's scales,
/// results/2026-11-27-vm-loop-budget; with the image in memory the same,
/// results/2026-11-28-vm-loop-budget-shm). Run with `--ignored` to see the figure.
#[test]
#[ignore = "not met on the loop device: its per-round noise at the default's scales is 8-22 %; \
            docs/COMPARISON.md, issue 36"]
fn a_15_percent_difference_is_decided_within_the_default_budget_on_the_loop_device() {
    let share = fifteen_percent(LOOP, 22);
    assert!(share >= 0.9, "{share}");
}

#[test]
fn the_runner_decides_with_the_reports_rule() {
    // compare::decide (what the runner calls after each round) on a directory gives the
    // judgement sequential::judge_rounds gives on the same rounds.
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
    let cmp = bencher_workloads::compare::load(dir.path()).unwrap();
    let decided = bencher_workloads::compare::decide(&cmp);
    let alpha = sequential::alpha(2);
    let ln = |v: &[f64]| v.iter().map(|x| x.ln()).collect::<Vec<_>>();
    assert_eq!(decided[0][0], None);
    assert_eq!(
        decided[0][1],
        Some(sequential::judge_rounds(&ln(&a), alpha))
    );
    assert_eq!(
        decided[0][2],
        Some(sequential::judge_rounds(&ln(&b), alpha))
    );
    assert_eq!(decided[0][1], Some(Judgement::Slower));
}

/// Over `trials` simulated budget runs on `dev` by `rule` (each comparison at its measured
/// ratio, deviation and run time) with the budget `budget` seconds: the share that decide every
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
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (mut all, mut total) = (0, 0);
    for _ in 0..trials {
        let n = budget_run(&mut rng, &dev, rule, |(w, t)| {
            dev.workloads[w].targets[t].effect
        })
        .iter()
        .flatten()
        .filter(|(j, _)| *j != Judgement::Undecided)
        .count();
        total += n;
        all += usize::from(n == dev.comparisons());
    }
    (all as f64 / trials as f64, total as f64 / trials as f64)
}

/// The default's sizing (issue 36: scales, targets and budget chosen so that the default
/// decides ext4 and XFS, at 512 and at 4096, against minfs on every workload inside the
/// budget), checked on the default's own measured runs (`tests/data/budget-emulated.json`,
/// which must be runs of the default's workloads, targets and scales, simulated at its
/// budget): every comparison is decided in at least 90 % of simulated default runs. Not met
/// (0 % at 15 minutes): XFS (and at 0.04 ext4) at Cannyls' block size 512 on rand-oldest-1m
/// take the drive cache's second state in about one run in six, and ext4 at 512 on seq-256k
/// and seq-4m vary 4–6 % per round; a larger scale and a budget of up to 30 minutes did not
/// meet it either (docs/COMPARISON.md, "A larger scale and budget, tried"). Nor does any
/// budget on these runs: XFS at 512 on rand-oldest-1m (0.97×, 6.6 % per round) needs about
/// 90 rounds, more than the runner's 50 (`--max-rounds`), so the share levels off near 20 %
/// (docs/COMPARISON.md, "No budget decides it"). Run with `--ignored` to see the figures,
/// the same runs at longer budgets beside it.
#[test]
#[ignore = "not met: 0 % at 15 minutes on the default's runs; two-state comparisons at block \
            size 512 (docs/COMPARISON.md, 'A larger scale and budget, tried'; issue 36)"]
fn the_default_decides_every_comparison_within_its_budget() {
    use bencher_workloads::compare::defaults;
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
    let trials = 500;
    let (share, mean) = every_comparison_decided(&dev, dev.budget, Rule::Sequence, 41, trials);
    eprintln!(
        "{EMULATED}: every one of {} comparisons decided in {:.1} % of {trials} simulated \
         default runs ({:.0} s; {mean:.2} decided on average)",
        dev.comparisons(),
        100.0 * share,
        dev.budget
    );
    for budget in [1200.0, 1500.0, 1800.0, 2700.0, 3600.0, 5400.0] {
        let (s, m) = every_comparison_decided(&dev, budget, Rule::Sequence, 41, trials);
        eprintln!("  at {budget:.0} s: {:.1} % ({m:.2} on average)", 100.0 * s);
    }
    assert!(share >= 0.9, "{share}");
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
