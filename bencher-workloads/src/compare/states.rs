//! The drive's state in a run, read from what the drive did (its own per-run statistics), not
//! from the run's time.
//!
//! # Why
//! On the emulated drive the runs of one workload and target do not all come from one law: in
//! some, most of the gets are served by the drive's cache, in the others by the media
//! (rand-oldest-1m at the default's scale: a median get of 2.3–4.7 ms or of 9.3–15 ms, nothing
//! between 5 and 9 ms; XFS at Cannyls' block size 512 takes the cache's state in about one run
//! in five, minfs in none). A comparison whose rounds mix the two has a per-round log-ratio far
//! from normal, which the confidence sequence assumes ([`super::sequential`]); so the report
//! judges a comparison on the rounds in which both runs took the same state
//! ([`super::verdict`]) and reports how often each target took each state.
//!
//! # The state
//! Of a run that gets lumps (its workload reads): [`State::Cache`] when the drive served more
//! of the run's reads from its cache than from the media (`cache_read_hits > media_reads`),
//! else [`State::Media`]. For a read workload, whose reads are nearly all its gets, that is
//! whether its median get was a cache hit — the fact behind the two states above — taken from
//! the drive's counters rather than from a time. A run without gets has no such state (its few
//! reads, the file system's own, say nothing of it): `None`, which matches any state. The counters are hddsim's `DriveStats`: the emulator's own for the run
//! (`run-K.emulator.json`, written next to each run since the emulator is reset per run) where
//! present, else the replay of the run's block trace through the model
//! (`run-K.model-<profile>.json`). A replay is the model driven at the block layer's issue
//! times, which are not the emulator's arrivals: it need not take the state the emulated run
//! took (in the runs of 2026-11-27 and -28 it read from the media in all but one of the runs
//! whose emulated gets came from the cache), so the report names the source. A real disk and a
//! loop device report no such counters: no states.
//!
//! # How often
//! A target's share of runs in a state comes with an anytime-valid binomial interval
//! ([`frequency_interval`]): the set of shares p whose conjugate-mixture e-value (a
//! Beta(½, ½) mixture of Bernoulli likelihood ratios against p: Robbins, "Statistical methods
//! related to the law of the iterated logarithm", Ann. Math. Statist. 1970; Howard, Ramdas,
//! McAuliffe & Sekhon, Ann. Statist. 2021) stays below 1/α — valid however many runs were
//! taken and whatever stopped them.

use serde::Deserialize;
use statrs::function::gamma::ln_gamma;

/// What the drive did in a run, as far as the state needs it: the fields of hddsim's
/// `DriveStats` (every one optional, so a report without one still loads).
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct DriveCounts {
    /// Reads served from the cache.
    pub cache_read_hits: Option<u64>,
    /// Reads that needed the media.
    pub media_reads: Option<u64>,
    /// Writes that waited for room in the cache.
    pub cache_full_waits: Option<u64>,
    /// How long they waited (ns).
    pub cache_full_wait_ns: Option<f64>,
    /// Seek time of reads and of destage runs (ns).
    pub read_seek_ns: Option<f64>,
    /// Seek time of destage runs (ns).
    pub destage_seek_ns: Option<f64>,
    /// Rotational wait of reads (ns).
    pub read_rotation_ns: Option<f64>,
    /// Rotational wait of destage runs (ns).
    pub destage_rotation_ns: Option<f64>,
    /// Time flushes waited for the cache to drain (ns).
    pub flush_wait_ns: Option<f64>,
    /// Time reads waited for a destage run in progress (ns).
    pub read_destage_wait_ns: Option<f64>,
    /// Time 512e read-modify-writes cost (ns).
    pub rmw_ns: Option<f64>,
}

/// The state a run found the drive in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum State {
    /// Most reads from the media (or no reads).
    Media,
    /// Most reads from the drive's cache.
    Cache,
}

impl State {
    /// Both states, in the order the report lists them.
    pub const ALL: [State; 2] = [State::Media, State::Cache];

    /// What the state means, after "its gets came": `from the media`, `from the drive's
    /// cache`.
    pub fn words(self) -> &'static str {
        match self {
            State::Media => "from the media",
            State::Cache => "from the drive's cache",
        }
    }

    /// A short name for tables: `media`, `cache`.
    pub fn name(self) -> &'static str {
        match self {
            State::Media => "media",
            State::Cache => "cache",
        }
    }
}

/// The state of a run that got `gets` lumps and whose drive did `c`: `None` without gets or
/// without the read counters.
pub fn state_of(c: &DriveCounts, gets: u64) -> Option<State> {
    if gets == 0 {
        return None;
    }
    let (hits, media) = (c.cache_read_hits?, c.media_reads?);
    Some(if hits > media {
        State::Cache
    } else {
        State::Media
    })
}

/// Where a report's states come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateSource {
    /// The emulator's own statistics of each run (`run-K.emulator.json`).
    Emulator,
    /// The replays of the runs' block traces through the model (`run-K.model-<profile>.json`).
    Replay,
    /// Some runs' from the emulator, the others' from the replay.
    Mixed,
    /// No per-run statistics: a real disk, a loop device, or runs neither recorded nor traced.
    None,
}

/// ln of the Beta function.
fn ln_beta(a: f64, b: f64) -> f64 {
    ln_gamma(a) + ln_gamma(b) - ln_gamma(a + b)
}

/// ln of the Beta(½, ½)-mixture e-value against "the share is `p`" after `k` of `n` runs: a
/// nonnegative martingale under that share, starting at 1.
pub fn ln_evalue(k: u64, n: u64, p: f64) -> f64 {
    let (k, n) = (k as f64, n as f64);
    let ln_lik = |q: f64, x: f64| if x == 0.0 { 0.0 } else { x * q.ln() };
    ln_beta(k + 0.5, n - k + 0.5) - ln_beta(0.5, 0.5) - ln_lik(p, k) - ln_lik(1.0 - p, n - k)
}

/// The anytime-valid interval at level 1 − `alpha` of the share of runs in a state, `k` of
/// `n` having taken it: the shares whose e-value ([`ln_evalue`]) is below 1/`alpha`. (0, 1)
/// with no runs.
pub fn frequency_interval(k: u64, n: u64, alpha: f64) -> (f64, f64) {
    if n == 0 || k > n {
        return (0.0, 1.0);
    }
    let t = (1.0 / alpha).ln();
    let centre = k as f64 / n as f64;
    // The e-value is convex in p with its least value at the share seen (below 1): bisect
    // each side for where it reaches 1/alpha.
    let edge = |mut inside: f64, mut outside: f64| {
        if ln_evalue(k, n, outside) < t {
            return outside;
        }
        for _ in 0..100 {
            let mid = (inside + outside) / 2.0;
            if ln_evalue(k, n, mid) < t {
                inside = mid;
            } else {
                outside = mid;
            }
        }
        inside
    };
    (edge(centre, 0.0), edge(centre, 1.0))
}

/// How many of a target's runs took each state, of those whose state is known.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Runs with most reads from the media.
    pub media: u64,
    /// Runs with most reads from the drive's cache.
    pub cache: u64,
}

impl Counts {
    /// The counts of `states` (unknown ones left out).
    pub fn of(states: impl IntoIterator<Item = Option<State>>) -> Counts {
        let mut c = Counts::default();
        for s in states.into_iter().flatten() {
            match s {
                State::Media => c.media += 1,
                State::Cache => c.cache += 1,
            }
        }
        c
    }

    /// The runs whose state is known.
    pub fn total(&self) -> u64 {
        self.media + self.cache
    }

    /// The runs in `state`.
    pub fn get(&self, state: State) -> u64 {
        match state {
            State::Media => self.media,
            State::Cache => self.cache,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_state_is_where_most_reads_came_from() {
        let c = |h, m| DriveCounts {
            cache_read_hits: Some(h),
            media_reads: Some(m),
            ..DriveCounts::default()
        };
        assert_eq!(state_of(&c(300, 113), 400), Some(State::Cache));
        assert_eq!(state_of(&c(170, 243), 400), Some(State::Media));
        assert_eq!(state_of(&c(0, 0), 400), Some(State::Media));
        assert_eq!(state_of(&DriveCounts::default(), 400), None);
        // A run without gets: its few reads (the file system's) make no state.
        assert_eq!(state_of(&c(7, 4), 0), None);
    }

    #[test]
    fn frequency_intervals_hold_the_share_and_narrow_with_runs() {
        let a = 0.05;
        let (lo, hi) = frequency_interval(28, 141, a);
        assert!(lo < 28.0 / 141.0 && hi > 28.0 / 141.0, "{lo} {hi}");
        assert!(lo > 0.09 && hi < 0.33, "{lo} {hi}");
        // None of 189: from 0 to a few per cent.
        let (lo, hi) = frequency_interval(0, 189, a);
        assert_eq!(lo, 0.0);
        assert!(hi > 0.005 && hi < 0.05, "{hi}");
        // More runs, a narrower interval; a higher level, a wider one.
        let w = |k, n, a| {
            let (l, h) = frequency_interval(k, n, a);
            h - l
        };
        assert!(w(20, 100, a) < w(2, 10, a));
        assert!(w(20, 100, 0.01) > w(20, 100, a));
        // At the ends the e-value is 1/alpha (or the interval reaches 0 or 1).
        let (lo, hi) = frequency_interval(5, 40, a);
        let t = (1.0 / a).ln();
        assert!((ln_evalue(5, 40, lo) - t).abs() < 1e-9);
        assert!((ln_evalue(5, 40, hi) - t).abs() < 1e-9);
        assert_eq!(frequency_interval(0, 0, a), (0.0, 1.0));
    }

    #[test]
    fn the_interval_covers_at_its_level_at_every_run() {
        // Anytime validity, checked: runs with a share of 0.2 in the cache's state, the
        // interval looked at after every run up to 200; it misses 0.2 at some run in at most
        // 5 % of sequences.
        use rand_chacha::rand_core::{RngCore, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let trials = 400;
        let mut missed = 0;
        for _ in 0..trials {
            let mut k = 0;
            for n in 1..=200u64 {
                k += u64::from(rng.next_u64() % 5 == 0);
                let (lo, hi) = frequency_interval(k, n, 0.05);
                if !(lo..=hi).contains(&0.2) {
                    missed += 1;
                    break;
                }
            }
        }
        assert!(missed * 20 <= trials, "{missed} of {trials}");
    }
}
