//! How a report judges a target against the baseline: a ratio with a confidence interval, the
//! intervals of one report simultaneous over all its comparisons.
//!
//! # Method
//! `scripts/compare.sh` runs every target once per round (`--order runs`, the default; the
//! target order rotates from round to round), so run *k* of a target and run *k* of the
//! baseline were taken minutes apart on the same machine. For each round in which both
//! succeeded, d_k = ln(target's total elapsed / baseline's). The **ratio** is exp(mean d):
//! the geometric mean of the per-round ratios. Its **interval** is exp(mean d ± t·s/√n), with
//! s the standard deviation of the d_k, n the rounds, and t Student's t quantile with n − 1
//! degrees of freedom at 1 − α/(2M), where M is the number of comparisons the report judges
//! (Bonferroni) and α = 0.05. So the M intervals hold the true ratios together with at least
//! 95 % probability (normal log-ratios assumed): when no target differs from the baseline,
//! the chance that a report calls *any* of them slower or faster is at most 5 %.
//!
//! Working on logarithms of paired ratios follows the benchmarking literature that reports a
//! ratio of execution times with a confidence interval rather than two means (Kalibera &
//! Jones, "Rigorous Benchmarking in Reasonable Time", ISMM 2013) and uses Student's t for
//! the few runs a benchmark can afford (Georges, Buytaert & Eeckhout, "Statistically Rigorous
//! Java Performance Evaluation", OOPSLA 2007); pairing by round removes the machine's drift
//! between rounds, which on a shared VM is the larger part of the variation. Bonferroni is
//! the simplest correction that bounds the family-wise error for any dependence between the
//! comparisons; with tens of comparisons it is conservative (a real difference needs a
//! narrower interval to be called), which the sizing of the default run takes into account.
//!
//! # Verdict
//! - **slower** / **faster**: the interval lies above / below 1;
//! - **within ±5 %**: the interval lies inside 1/1.05 – 1.05 (an equivalence margin, at the
//!   same simultaneous confidence);
//! - **no difference found**: neither — the runs cannot tell at this resolution;
//! - not judged: fewer than 2 paired rounds (no spread to judge by).

use statrs::distribution::{ContinuousCDF, StudentsT};

/// The family-wise error rate the intervals of one report are held to.
pub const FAMILY_ALPHA: f64 = 0.05;

/// The equivalence margin: a ratio within 1/(1 + m) – 1 + m is "within ±5 %".
pub const EQUIVALENCE_MARGIN: f64 = 0.05;

/// A ratio with its confidence interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    /// The geometric mean of the per-round ratios.
    pub ratio: f64,
    /// The interval's lower end.
    pub low: f64,
    /// Its upper end.
    pub high: f64,
    /// The paired rounds it comes from.
    pub rounds: usize,
}

/// What a report says of a target against the baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Judgement {
    /// The interval lies above 1.
    Slower,
    /// The interval lies below 1.
    Faster,
    /// The interval lies inside the equivalence margin.
    Equal,
    /// None of these.
    Undecided,
}

impl Judgement {
    /// The mark the summary tables put after a ratio.
    pub fn mark(self) -> &'static str {
        match self {
            Judgement::Slower => " ▲",
            Judgement::Faster => " ▼",
            Judgement::Equal => " =",
            Judgement::Undecided => " ~",
        }
    }
}

/// The confidence level of each interval in a report of `m` comparisons (Bonferroni).
pub fn confidence(m: usize) -> f64 {
    1.0 - FAMILY_ALPHA / m.max(1) as f64
}

/// The interval of the ratio of `target` to `base` over the rounds in which both have a
/// value (index k = round k), at `confidence` (two-sided). `None` with fewer than 2 such
/// rounds or a value that is not positive.
pub fn paired_interval(
    target: &[Option<f64>],
    base: &[Option<f64>],
    confidence: f64,
) -> Option<Interval> {
    let d: Vec<f64> = target
        .iter()
        .zip(base)
        .filter_map(|(t, b)| match (t, b) {
            (Some(t), Some(b)) if *t > 0.0 && *b > 0.0 => Some((t / b).ln()),
            _ => None,
        })
        .collect();
    let n = d.len();
    if n < 2 {
        return None;
    }
    let mean = d.iter().sum::<f64>() / n as f64;
    let var = d.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1) as f64;
    let t = StudentsT::new(0.0, 1.0, (n - 1) as f64)
        .expect("n − 1 ≥ 1 degrees of freedom")
        .inverse_cdf(1.0 - (1.0 - confidence) / 2.0);
    let half = t * (var / n as f64).sqrt();
    Some(Interval {
        ratio: mean.exp(),
        low: (mean - half).exp(),
        high: (mean + half).exp(),
        rounds: n,
    })
}

/// The verdict on an interval.
pub fn judge(i: &Interval) -> Judgement {
    if i.low > 1.0 {
        Judgement::Slower
    } else if i.high < 1.0 {
        Judgement::Faster
    } else if i.low >= 1.0 / (1.0 + EQUIVALENCE_MARGIN) && i.high <= 1.0 + EQUIVALENCE_MARGIN {
        Judgement::Equal
    } else {
        Judgement::Undecided
    }
}

/// The smallest number of rounds whose interval, at `confidence`, would be at most
/// `half_width` wide on the log scale on each side when the per-round log-ratios have
/// standard deviation `sd`: how many rounds a comparison needs to tell a difference of about
/// `half_width` (e.g. ln 1.05) from none.
pub fn rounds_needed(sd: f64, half_width: f64, confidence: f64) -> usize {
    (2..10_000)
        .find(|&n| {
            let t = StudentsT::new(0.0, 1.0, (n - 1) as f64)
                .expect("n − 1 ≥ 1")
                .inverse_cdf(1.0 - (1.0 - confidence) / 2.0);
            t * sd / (n as f64).sqrt() <= half_width
        })
        .unwrap_or(10_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn some(v: &[f64]) -> Vec<Option<f64>> {
        v.iter().map(|&x| Some(x)).collect()
    }

    #[test]
    fn interval_of_known_figures() {
        // Ratios 1.1, 1.2, 1.3 per round: d = ln of each; n = 3, t(0.975, 2) = 4.303.
        let base = some(&[10.0, 20.0, 30.0]);
        let t = some(&[11.0, 24.0, 39.0]);
        let i = paired_interval(&t, &base, 0.95).unwrap();
        let d = [1.1f64.ln(), 1.2f64.ln(), 1.3f64.ln()];
        let mean = d.iter().sum::<f64>() / 3.0;
        let sd = (d.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / 2.0).sqrt();
        assert!((i.ratio - mean.exp()).abs() < 1e-12);
        let half = 4.302_652_7 * sd / 3f64.sqrt();
        assert!((i.low - (mean - half).exp()).abs() < 1e-6, "{i:?}");
        assert!((i.high - (mean + half).exp()).abs() < 1e-6, "{i:?}");
        assert_eq!(i.rounds, 3);
    }

    #[test]
    fn rounds_missing_on_either_side_are_left_out() {
        let base = vec![Some(10.0), None, Some(10.0), Some(10.0)];
        let t = vec![Some(11.0), Some(99.0), None, Some(12.0)];
        let i = paired_interval(&t, &base, 0.95).unwrap();
        assert_eq!(i.rounds, 2);
        assert!(paired_interval(&t[..2], &base[..2], 0.95).is_none());
    }

    #[test]
    fn judgements() {
        let i = |low, high| Interval {
            ratio: 1.0,
            low,
            high,
            rounds: 5,
        };
        assert_eq!(judge(&i(1.01, 1.2)), Judgement::Slower);
        assert_eq!(judge(&i(0.8, 0.99)), Judgement::Faster);
        assert_eq!(judge(&i(0.97, 1.04)), Judgement::Equal);
        assert_eq!(judge(&i(0.9, 1.04)), Judgement::Undecided);
        assert_eq!(judge(&i(0.97, 1.06)), Judgement::Undecided);
    }

    #[test]
    fn bonferroni_levels() {
        assert_eq!(confidence(1), 0.95);
        assert!((confidence(50) - 0.999).abs() < 1e-12);
    }

    #[test]
    fn rounds_needed_shrinks_with_noise_and_grows_with_comparisons() {
        let h = 1.05f64.ln();
        let quiet = rounds_needed(0.02, h, confidence(24));
        let noisy = rounds_needed(0.06, h, confidence(24));
        assert!(quiet < noisy, "{quiet} {noisy}");
        assert!(rounds_needed(0.06, h, confidence(54)) >= noisy);
        // With no noise, two rounds are enough.
        assert_eq!(rounds_needed(0.0, h, 0.999), 2);
    }
}
