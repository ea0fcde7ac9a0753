//! The report's verdict at the default size of `scripts/compare.sh`, on noise measured on this
//! machine (docs/COMPARISON.md, "How the default run is sized"):
//!
//! - equal targets (the same target twice) are judged equal — no target called slower or
//!   faster anywhere in a report — in at least 95 % of simulated reports (the family-wise rate
//!   the intervals are held to);
//! - a target 20 % slower in truth is found slower;
//! - the intervals are narrow enough to tell a 5 % difference (the median half-width over the
//!   comparisons, which differ in noise as the measured ones did).
//!
//! Each simulated report has the default run's comparisons (targets but minfs × workloads) and
//! rounds (`--runs`), both read from compare.sh's defaults. A comparison's per-round
//! log-ratios are drawn, with replacement, from the residuals of a real run of the default's
//! targets and scale on this machine (`tests/data/noise-loop.json`: per comparison, each
//! round's log-ratio minus the comparison's mean; pooled), so the noise has the machine's
//! shape — heavy tails included — and not a normal law's.

use bencher_workloads::compare::stats::{self, Judgement};
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A default of compare.sh (`name=value` at the top of its option parsing).
fn compare_default(name: &str) -> String {
    let script = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../scripts/compare.sh"
    ))
    .unwrap();
    let line = script
        .lines()
        .find(|l| l.starts_with(&format!("{name}=")))
        .unwrap_or_else(|| panic!("no default {name}= in compare.sh"));
    line[name.len() + 1..].trim_matches('"').to_string()
}

/// The default run's size: (comparisons per report, rounds).
fn default_size() -> (usize, usize) {
    let targets = compare_default("targets").split(',').count();
    let workloads = compare_default("workloads").split(',').count();
    let runs: usize = compare_default("runs").parse().unwrap();
    ((targets - 1) * workloads, runs)
}

/// The measured noise: each comparison's standard deviation of its per-round log-ratios, and
/// the shape of the noise — every residual divided by its comparison's deviation (and scaled by
/// √(n/(n − 1)), to unit variance), pooled. A simulated comparison takes one measured deviation
/// and draws its rounds from the pooled shape: the comparisons differ in noise as the measured
/// ones did, and their noise has the machine's shape. (A comparison's handful of residuals
/// alone is too few to draw from: it would often give the same value every round, an interval
/// of no width.)
fn noise() -> (Vec<f64>, Vec<f64>) {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/noise-loop.json"
    ))
    .unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let (mut sds, mut shape) = (Vec::new(), Vec::new());
    for c in v["residuals"].as_array().unwrap() {
        let c: Vec<f64> = c
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect();
        let n = c.len() as f64;
        let sd = (c.iter().map(|x| x * x).sum::<f64>() / (n - 1.0)).sqrt();
        sds.push(sd);
        shape.extend(c.iter().map(|x| x / sd * (n / (n - 1.0)).sqrt()));
    }
    (sds, shape)
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
    let (m, n) = default_size();
    let noise = symmetric(noise());
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
    let (m, n) = default_size();
    let noise = noise();
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
