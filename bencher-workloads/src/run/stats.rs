//! Latency statistics of a run, per kind of operation and overall (`docs/DSL.md`,
//! "Statistics"): count, mean, min, max and the 50/90/95/99/99.9th percentiles.
//!
//! Percentiles come from an HDR histogram in nanoseconds with 3 significant digits (so within
//! 0.1%, and never above the exact maximum); count, total, mean, min and max are exact.

use std::collections::BTreeMap;
use std::fmt;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// The kinds statistics are kept for: puts and gets by size, embedded puts by size, deletes,
/// range deletes and syncs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum StatKind {
    /// `put` of a lump of this many bytes in the data region (`New`, `OverWrite`).
    Put(u32),
    /// `put` of an embedded lump of this many bytes (`Embed`).
    Embed(u32),
    /// `get` of a lump of this many bytes.
    Get(u32),
    /// `delete`.
    Delete,
    /// `delete_range`.
    DeleteRange,
    /// `journal_sync`.
    Sync,
}

impl fmt::Display for StatKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StatKind::Put(n) => write!(f, "Put({n})"),
            StatKind::Embed(n) => write!(f, "Embed({n})"),
            StatKind::Get(n) => write!(f, "Get({n})"),
            StatKind::Delete => f.write_str("Delete"),
            StatKind::DeleteRange => f.write_str("DeleteRange"),
            StatKind::Sync => f.write_str("Sync"),
        }
    }
}

/// The largest time recorded in a histogram (one hour); longer operations count as one hour
/// in the percentiles (max and mean stay exact).
pub const MAX_TRACKED_NS: u64 = 3_600_000_000_000;

/// The percentiles reported, as (label, quantile).
pub const PERCENTILES: [(&str, f64); 5] = [
    ("50%", 0.50),
    ("90%", 0.90),
    ("95%", 0.95),
    ("99%", 0.99),
    ("99.9%", 0.999),
];

/// The times of one kind of operation (or of all).
#[derive(Debug, Clone)]
pub struct Series {
    hist: Histogram<u64>,
    count: u64,
    total_ns: u64,
    min_ns: u64,
    max_ns: u64,
    bytes: u64,
}

impl Default for Series {
    fn default() -> Series {
        Series {
            hist: Histogram::new_with_bounds(1, MAX_TRACKED_NS, 3).expect("valid histogram bounds"),
            count: 0,
            total_ns: 0,
            min_ns: u64::MAX,
            max_ns: 0,
            bytes: 0,
        }
    }
}

impl Series {
    /// Records one operation of `ns` nanoseconds that moved `bytes` bytes.
    pub fn record(&mut self, ns: u64, bytes: u64) {
        self.hist.saturating_record(ns.max(1));
        self.count += 1;
        self.total_ns = self.total_ns.saturating_add(ns);
        self.min_ns = self.min_ns.min(ns);
        self.max_ns = self.max_ns.max(ns);
        self.bytes = self.bytes.saturating_add(bytes);
    }

    /// Operations recorded.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The sum of their times.
    pub fn total_ns(&self) -> u64 {
        self.total_ns
    }

    /// The `q`-quantile (0–1) in nanoseconds, at most the exact maximum; 0 when empty.
    pub fn quantile_ns(&self, q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        self.hist.value_at_quantile(q).min(self.max_ns)
    }

    /// The summary of this series under the name `kind`.
    pub fn report(&self, kind: &str) -> KindReport {
        let p = |q| self.quantile_ns(q);
        KindReport {
            kind: kind.to_string(),
            count: self.count,
            total_ns: self.total_ns,
            mean_ns: if self.count == 0 {
                0.0
            } else {
                self.total_ns as f64 / self.count as f64
            },
            min_ns: if self.count == 0 { 0 } else { self.min_ns },
            max_ns: self.max_ns,
            percentiles_ns: Percentiles {
                p50: p(0.50),
                p90: p(0.90),
                p95: p(0.95),
                p99: p(0.99),
                p99_9: p(0.999),
            },
            bytes: self.bytes,
        }
    }
}

/// The times of a run: one [`Series`] per [`StatKind`] and one over all operations.
#[derive(Debug, Clone, Default)]
pub struct Recorder {
    kinds: BTreeMap<StatKind, Series>,
    overall: Series,
}

impl Recorder {
    /// Records one operation.
    pub fn record(&mut self, kind: StatKind, ns: u64, bytes: u64) {
        self.kinds.entry(kind).or_default().record(ns, bytes);
        self.overall.record(ns, bytes);
    }

    /// The series of each kind seen, in the order Put (by size), Embed (by size), Get (by
    /// size), Delete, DeleteRange, Sync.
    pub fn kinds(&self) -> impl Iterator<Item = (StatKind, &Series)> {
        self.kinds.iter().map(|(&k, s)| (k, s))
    }

    /// The series over all operations.
    pub fn overall(&self) -> &Series {
        &self.overall
    }

    /// The reports of each kind, then the overall one (named `overall`).
    pub fn reports(&self) -> (Vec<KindReport>, KindReport) {
        let kinds = self
            .kinds()
            .map(|(k, s)| s.report(&k.to_string()))
            .collect();
        (kinds, self.overall.report("overall"))
    }
}

/// The five percentiles, in nanoseconds, with fio-like keys `"50.0"` … `"99.9"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Percentiles {
    /// Median.
    #[serde(rename = "50.0")]
    pub p50: u64,
    /// 90th percentile.
    #[serde(rename = "90.0")]
    pub p90: u64,
    /// 95th percentile.
    #[serde(rename = "95.0")]
    pub p95: u64,
    /// 99th percentile.
    #[serde(rename = "99.0")]
    pub p99: u64,
    /// 99.9th percentile.
    #[serde(rename = "99.9")]
    pub p99_9: u64,
}

impl Percentiles {
    /// In the order of [`PERCENTILES`].
    pub fn values(&self) -> [u64; 5] {
        [self.p50, self.p90, self.p95, self.p99, self.p99_9]
    }
}

/// The statistics of one kind (or of all operations), as `--json` writes them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KindReport {
    /// `Put(262144)`, `Embed(512)`, `Get(1048576)`, `Delete`, `DeleteRange`, `Sync`, or
    /// `overall`.
    pub kind: String,
    /// Operations.
    pub count: u64,
    /// The sum of their times.
    pub total_ns: u64,
    /// Mean time.
    pub mean_ns: f64,
    /// Shortest time.
    pub min_ns: u64,
    /// Longest time.
    pub max_ns: u64,
    /// Percentiles of the times.
    pub percentiles_ns: Percentiles,
    /// Payload bytes put or read (0 for deletes and syncs).
    pub bytes: u64,
}

/// A time for people: `812ns`, `25.3µs`, `1.234ms`, `2.5s` (what `Duration`'s `Debug` prints).
pub fn human_ns(ns: u64) -> String {
    format!("{:?}", std::time::Duration::from_nanos(ns))
}

impl KindReport {
    /// The `50% = …, 90% = …, 95% = …, 99% = …, 99.9% = …, max = …, mean = …` part of a
    /// text line.
    pub fn times_text(&self) -> String {
        let mut s = String::new();
        for ((label, _), v) in PERCENTILES.iter().zip(self.percentiles_ns.values()) {
            s.push_str(&format!("{label} = {}, ", human_ns(v)));
        }
        s.push_str(&format!(
            "max = {}, mean = {}",
            human_ns(self.max_ns),
            human_ns(self.mean_ns.round() as u64)
        ));
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_order_and_names() {
        let mut r = Recorder::default();
        r.record(StatKind::Sync, 10, 0);
        r.record(StatKind::Get(4096), 10, 4096);
        r.record(StatKind::Put(1 << 20), 10, 1 << 20);
        r.record(StatKind::Put(4096), 10, 4096);
        r.record(StatKind::Embed(512), 10, 512);
        r.record(StatKind::DeleteRange, 10, 0);
        r.record(StatKind::Delete, 10, 0);
        let names: Vec<String> = r.kinds().map(|(k, _)| k.to_string()).collect();
        assert_eq!(
            names,
            [
                "Put(4096)",
                "Put(1048576)",
                "Embed(512)",
                "Get(4096)",
                "Delete",
                "DeleteRange",
                "Sync"
            ]
        );
        assert_eq!(r.overall().count(), 7);
    }

    #[test]
    fn percentiles_and_exact_figures() {
        let mut s = Series::default();
        for ns in 1..=1000u64 {
            s.record(ns * 1000, 10);
        }
        let r = s.report("x");
        assert_eq!(r.count, 1000);
        assert_eq!(r.min_ns, 1000);
        assert_eq!(r.max_ns, 1_000_000);
        assert_eq!(r.total_ns, 500_500_000);
        assert_eq!(r.mean_ns, 500_500.0);
        assert_eq!(r.bytes, 10_000);
        let within = |got: u64, want: u64| (got as f64 - want as f64).abs() <= want as f64 * 0.001;
        assert!(
            within(r.percentiles_ns.p50, 500_000),
            "{:?}",
            r.percentiles_ns
        );
        assert!(within(r.percentiles_ns.p90, 900_000));
        assert!(within(r.percentiles_ns.p99, 990_000));
        assert!(within(r.percentiles_ns.p99_9, 999_000));
        let v = r.percentiles_ns.values();
        assert!(v.windows(2).all(|w| w[0] <= w[1]) && v[4] <= r.max_ns);
    }

    #[test]
    fn empty_and_text() {
        let r = Series::default().report("none");
        assert_eq!((r.count, r.min_ns, r.max_ns, r.mean_ns), (0, 0, 0, 0.0));
        let mut s = Series::default();
        s.record(1_500_000, 0);
        assert_eq!(
            s.report("x").times_text(),
            "50% = 1.5ms, 90% = 1.5ms, 95% = 1.5ms, 99% = 1.5ms, 99.9% = 1.5ms, max = 1.5ms, \
             mean = 1.5ms"
        );
        let json = serde_json::to_value(s.report("Sync")).unwrap();
        assert_eq!(json["percentiles_ns"]["99.9"], 1_500_000);
        assert_eq!(json["kind"], "Sync");
    }
}
