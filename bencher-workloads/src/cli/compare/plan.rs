//! The parts of `minfs-bench compare` that decide nothing on the machine: parsing its
//! durations, sizes and scales, the order of a round's runs, and the estimates of the time
//! left.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// `15m`, `90s`, `1h`, `1h30m`, `2h15m30s` (or a plain number of seconds) as a duration.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let bad = || {
        format!("--budget '{s}' is not a duration (a number with s, m or h, e.g. 90s, 15m, 1h30m)")
    };
    let t = s.trim();
    if t.is_empty() {
        return Err(bad());
    }
    if let Ok(secs) = t.parse::<u64>() {
        return if secs > 0 {
            Ok(Duration::from_secs(secs))
        } else {
            Err(bad())
        };
    }
    let mut total = 0u64;
    let mut num = String::new();
    let mut last_unit = 4;
    for c in t.chars() {
        if c.is_ascii_digit() {
            num.push(c);
            continue;
        }
        let (unit, mult) = match c {
            'h' => (0, 3600),
            'm' => (1, 60),
            's' => (2, 1),
            _ => return Err(bad()),
        };
        if num.is_empty() || (last_unit != 4 && unit <= last_unit) {
            return Err(bad());
        }
        let n: u64 = num.parse().map_err(|_| bad())?;
        total = n
            .checked_mul(mult)
            .and_then(|v| total.checked_add(v))
            .ok_or_else(bad)?;
        num.clear();
        last_unit = unit;
    }
    if !num.is_empty() || total == 0 {
        return Err(bad());
    }
    Ok(Duration::from_secs(total))
}

/// "8G" → bytes: K, M, G, T and KiB … TiB powers of 1024; KB … TB powers of 1000; no unit:
/// bytes. `what` names the option in the error.
pub fn parse_size(s: &str, what: &str) -> Result<u64, String> {
    let bad = || {
        format!(
            "{what} '{s}': a number with no unit (bytes) or one of K, M, G, T, KiB, MiB, GiB, \
             TiB (powers of 1024) or KB, MB, GB, TB (powers of 1000)"
        )
    };
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return Err(bad());
    }
    let n: u64 = s[..digits].parse().map_err(|_| bad())?;
    let mult: u64 = match &s[digits..] {
        "" => 1,
        "K" | "KiB" => 1 << 10,
        "M" | "MiB" => 1 << 20,
        "G" | "GiB" => 1 << 30,
        "T" | "TiB" => 1 << 40,
        "KB" => 1000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        "TB" => 1_000_000_000_000,
        _ => return Err(bad()),
    };
    n.checked_mul(mult).ok_or_else(bad)
}

/// `--scale`: a default and per-workload overrides (`0.05,seq-4m=0.02,durable-256k=0.1`).
/// A workload with neither has its own default ([`crate::compare::defaults::scale`]), else
/// [`FALLBACK_SCALE`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Scales {
    /// The default given, if any.
    pub default: Option<f64>,
    /// Per workload name.
    pub overrides: BTreeMap<String, f64>,
}

/// The scale of a workload file that is not a reference workload, when `--scale` gives none.
pub const FALLBACK_SCALE: f64 = 0.05;

fn parse_factor(s: &str, whole: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(f) if f.is_finite() && f > 0.0 => Ok(f),
        _ => Err(format!(
            "--scale '{whole}': '{s}' is not a number greater than 0"
        )),
    }
}

impl Scales {
    /// Parses `F[,WORKLOAD=F…]` (the default may also come after the overrides, or be left
    /// out).
    pub fn parse(s: &str) -> Result<Scales, String> {
        let mut default = None;
        let mut overrides = BTreeMap::new();
        for part in s.split(',') {
            let part = part.trim();
            if part.is_empty() {
                return Err(format!("--scale '{s}': an empty entry"));
            }
            match part.split_once('=') {
                Some((w, f)) => {
                    let w = w.trim();
                    if w.is_empty() {
                        return Err(format!("--scale '{s}': '{part}' names no workload"));
                    }
                    if overrides
                        .insert(w.to_string(), parse_factor(f, s)?)
                        .is_some()
                    {
                        return Err(format!("--scale '{s}': workload '{w}' is given twice"));
                    }
                }
                None => {
                    if default.replace(parse_factor(part, s)?).is_some() {
                        return Err(format!("--scale '{s}': two defaults"));
                    }
                }
            }
        }
        Ok(Scales { default, overrides })
    }

    /// The scale of workload `w`.
    pub fn of(&self, w: &str) -> f64 {
        self.overrides
            .get(w)
            .copied()
            .or(self.default)
            .or_else(|| crate::compare::defaults::scale(w))
            .unwrap_or(FALLBACK_SCALE)
    }
}

/// Round `round`'s (1-based) order of the targets: the list rotated by `round − 1`, so that
/// no target always goes first, keeping only those in `active`.
pub fn round_order<'a>(
    targets: &'a [String],
    round: usize,
    active: &BTreeSet<&str>,
) -> Vec<&'a str> {
    let n = targets.len();
    (0..n)
        .map(|j| targets[(j + round - 1) % n].as_str())
        .filter(|t| active.contains(t))
        .collect()
}

/// The time each (workload, target) took so far, preparation and replays included.
#[derive(Debug, Clone, Default)]
pub struct Timings {
    cells: BTreeMap<(String, String), (Duration, u32)>,
}

impl Timings {
    /// Records one run's time.
    pub fn add(&mut self, w: &str, t: &str, d: Duration) {
        let e = self
            .cells
            .entry((w.to_string(), t.to_string()))
            .or_insert((Duration::ZERO, 0));
        e.0 += d;
        e.1 += 1;
    }

    /// The estimated time of a run of `t` on `w`: the mean of that cell so far, else of `w`'s
    /// other targets, else of all runs; `None` before any run.
    pub fn estimate(&self, w: &str, t: &str) -> Option<Duration> {
        let mean = |it: &mut dyn Iterator<Item = &(Duration, u32)>| {
            let (sum, n) = it.fold((Duration::ZERO, 0u32), |(s, n), (d, k)| (s + *d, n + k));
            (n > 0).then(|| sum / n)
        };
        if let Some(c) = self.cells.get(&(w.to_string(), t.to_string())) {
            return mean(&mut std::iter::once(c));
        }
        mean(
            &mut self
                .cells
                .iter()
                .filter(|((cw, _), _)| cw == w)
                .map(|(_, v)| v),
        )
        .or_else(|| mean(&mut self.cells.values()))
    }

    /// The mean time of a run per workload and target, seconds (compare.json's
    /// `seconds_per_run`).
    pub fn means(&self) -> BTreeMap<String, BTreeMap<String, f64>> {
        let mut out: BTreeMap<String, BTreeMap<String, f64>> = BTreeMap::new();
        for ((w, t), (sum, n)) in &self.cells {
            if *n > 0 {
                out.entry(w.clone())
                    .or_default()
                    .insert(t.clone(), sum.as_secs_f64() / f64::from(*n));
            }
        }
        out
    }

    /// The estimated time of the runs `plan` lists (workload, target); `None` before any run.
    pub fn estimate_all<'a>(
        &self,
        plan: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Option<Duration> {
        let mut sum = Duration::ZERO;
        for (w, t) in plan {
            sum += self.estimate(w, t)?;
        }
        Some(sum)
    }
}

/// The time left as progress shows it: the runs left in this round plus `more_rounds` rounds
/// like the next one, but never more than the budget left.
pub fn time_left(
    rest_of_round: Duration,
    next_round: Duration,
    more_rounds: u32,
    budget_left: Option<Duration>,
) -> Duration {
    let est = rest_of_round.saturating_add(next_round.saturating_mul(more_rounds));
    match budget_left {
        Some(b) => est.min(b),
        None => est,
    }
}

/// "1h02m", "12m03s", "45s".
pub fn human(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 3600 {
        format!("{}h{:02}m", s / 3600, s % 3600 / 60)
    } else if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("15m"), Ok(Duration::from_secs(900)));
        assert_eq!(parse_duration("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration("2h15m30s"), Ok(Duration::from_secs(8130)));
        assert_eq!(parse_duration("120"), Ok(Duration::from_secs(120)));
        for bad in ["", "0", "0m", "m", "15x", "1m1h", "1h1h", "-5m", "1.5h"] {
            let e = parse_duration(bad).unwrap_err();
            assert!(e.contains(&format!("'{bad}'")), "{bad}: {e}");
        }
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("8G", "--span"), Ok(8 << 30));
        assert_eq!(parse_size("500MB", "--span"), Ok(500_000_000));
        assert_eq!(parse_size("4096", "--span"), Ok(4096));
        let e = parse_size("8Q", "--span").unwrap_err();
        assert!(e.starts_with("--span '8Q'"), "{e}");
        assert!(parse_size("99999999999T", "--span").is_err());
    }

    #[test]
    fn scales_default_and_overrides() {
        let s = Scales::parse("0.05,seq-4m=0.02,durable-256k=0.1").unwrap();
        assert_eq!(s.default, Some(0.05));
        assert_eq!(s.of("seq-4m"), 0.02);
        assert_eq!(s.of("durable-256k"), 0.1);
        assert_eq!(s.of("seq-256k"), 0.05);
        // Without a default: each reference workload's own, else the fallback.
        let s = Scales::parse("seq-4m=0.02").unwrap();
        assert_eq!((s.default, s.of("seq-4m")), (None, 0.02));
        assert_eq!(
            Some(s.of("seq-256k")),
            crate::compare::defaults::scale("seq-256k")
        );
        assert_eq!(s.of("my-own"), FALLBACK_SCALE);
        assert_eq!(Scales::default().of("my-own"), FALLBACK_SCALE);
        for (bad, want) in [
            ("0", "'0' is not a number greater than 0"),
            ("x", "'x' is not"),
            ("0.1,0.2", "two defaults"),
            ("a=1,a=2", "given twice"),
            ("=1", "names no workload"),
            ("0.1,,a=1", "empty entry"),
            ("a=-1", "'-1' is not"),
        ] {
            let e = Scales::parse(bad).unwrap_err();
            assert!(e.contains(want), "{bad}: {e}");
        }
    }

    #[test]
    fn rounds_rotate_and_keep_the_active_targets() {
        let t: Vec<String> = ["minfs", "ext4", "xfs"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let all: BTreeSet<&str> = ["minfs", "ext4", "xfs"].into();
        assert_eq!(round_order(&t, 1, &all), ["minfs", "ext4", "xfs"]);
        assert_eq!(round_order(&t, 2, &all), ["ext4", "xfs", "minfs"]);
        assert_eq!(round_order(&t, 4, &all), ["minfs", "ext4", "xfs"]);
        let some: BTreeSet<&str> = ["minfs", "xfs"].into();
        assert_eq!(round_order(&t, 2, &some), ["xfs", "minfs"]);
    }

    #[test]
    fn estimates_fall_back_from_cell_to_workload_to_all() {
        let mut t = Timings::default();
        assert_eq!(t.estimate("a", "x"), None);
        t.add("a", "x", Duration::from_secs(10));
        t.add("a", "x", Duration::from_secs(20));
        t.add("a", "y", Duration::from_secs(40));
        t.add("b", "x", Duration::from_secs(100));
        assert_eq!(t.estimate("a", "x"), Some(Duration::from_secs(15)));
        // a's runs: 10, 20, 40.
        assert_eq!(t.estimate("a", "z"), Some(Duration::from_secs(70) / 3));
        // All runs: 170 / 4.
        assert_eq!(t.estimate("c", "x"), Some(Duration::from_millis(42_500)));
        assert_eq!(
            t.estimate_all([("a", "x"), ("a", "y")]),
            Some(Duration::from_secs(55))
        );
    }

    #[test]
    fn means_are_each_cells_mean_in_seconds() {
        let mut t = Timings::default();
        t.add("a", "x", Duration::from_secs(10));
        t.add("a", "x", Duration::from_secs(20));
        t.add("b", "y", Duration::from_millis(2500));
        let m = t.means();
        assert_eq!(m["a"]["x"], 15.0);
        assert_eq!(m["b"]["y"], 2.5);
        assert_eq!(m.values().map(BTreeMap::len).sum::<usize>(), 2);
    }

    /// The first round's estimate of a 15-minute budget never reads more than the budget
    /// (the bug: the first round's ETA read 3 h for a 1 h 45 min run).
    #[test]
    fn time_left_never_exceeds_the_budget_left() {
        let left = time_left(
            Duration::from_secs(60),
            Duration::from_secs(120),
            49,
            Some(Duration::from_secs(840)),
        );
        assert_eq!(left, Duration::from_secs(840));
        let left = time_left(Duration::from_secs(60), Duration::from_secs(120), 2, None);
        assert_eq!(left, Duration::from_secs(300));
        assert_eq!(human(Duration::from_secs(3725)), "1h02m");
        assert_eq!(human(Duration::from_secs(723)), "12m03s");
        assert_eq!(human(Duration::from_secs(45)), "45s");
    }
}
