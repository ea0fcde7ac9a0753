//! DiskSim's demerit figure: how far apart two response-time distributions are.
//!
//! Ganger's validation of DiskSim (the DiskSim 2.0/4.0 reference manuals, "demerit figure";
//! Ruemmler and Wilkes, "An introduction to disk drive modeling", IEEE Computer 1994, who
//! introduced it) compares a simulated drive with a real one by the root-mean-square
//! *horizontal* distance between the two cumulative distributions of response time: for every
//! fraction q of requests, the difference between the q-quantiles, squared, averaged over q,
//! square-rooted. It is in time units; divided by the reference's mean response time it is
//! a percentage (DiskSim reports both).
//!
//! Here a distribution comes from either
//! - an op-log (every operation's latency: the exact empirical distribution), or
//! - a `RunReport`-shaped JSON (`minfs-bench run --json`, `hdd-replay --json`), which keeps
//!   per kind only the minimum, the 50/90/95/99/99.9th percentiles and the maximum: its
//!   quantile function is taken as linear between those points (an approximation, stated
//!   in the output).
//!
//! The distance is integrated over q on a fixed grid of [`GRID`] midpoints, so two exact
//! distributions give the same figure whatever their sizes.

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;

use crate::replay::{self, OpRecord};

/// The number of quantiles the RMS is taken over (midpoints of equal steps of q).
pub const GRID: usize = 10_000;

/// A response-time distribution as a quantile function.
#[derive(Debug, Clone, PartialEq)]
pub enum Distribution {
    /// Every sample, sorted (ns).
    Samples(Vec<u64>),
    /// Points (q, ns) of the quantile function, q from 0 to 1, linear between them.
    Quantiles(Vec<(f64, f64)>),
}

impl Distribution {
    /// The q-quantile (0 ≤ q ≤ 1), ns.
    pub fn quantile(&self, q: f64) -> f64 {
        match self {
            Distribution::Samples(s) => {
                if s.is_empty() {
                    return 0.0;
                }
                let i = ((q * s.len() as f64).floor() as usize).min(s.len() - 1);
                s[i] as f64
            }
            Distribution::Quantiles(pts) => {
                let i = pts.partition_point(|&(pq, _)| pq < q);
                if i == 0 {
                    return pts.first().map_or(0.0, |p| p.1);
                }
                if i >= pts.len() {
                    return pts.last().map_or(0.0, |p| p.1);
                }
                let (q0, v0) = pts[i - 1];
                let (q1, v1) = pts[i];
                if q1 <= q0 {
                    v1
                } else {
                    v0 + (v1 - v0) * (q - q0) / (q1 - q0)
                }
            }
        }
    }

    /// The mean response time, ns.
    pub fn mean(&self) -> f64 {
        match self {
            Distribution::Samples(s) if !s.is_empty() => {
                s.iter().map(|&v| v as f64).sum::<f64>() / s.len() as f64
            }
            Distribution::Samples(_) => 0.0,
            Distribution::Quantiles(_) => {
                grid().map(|q| self.quantile(q)).sum::<f64>() / GRID as f64
            }
        }
    }

    /// Whether it is exact (every sample) rather than interpolated.
    pub fn exact(&self) -> bool {
        matches!(self, Distribution::Samples(_))
    }
}

fn grid() -> impl Iterator<Item = f64> {
    (0..GRID).map(|i| (i as f64 + 0.5) / GRID as f64)
}

/// The demerit figure of `model` against `reference`: RMS of the horizontal distance
/// between the two distributions, ns.
pub fn demerit_ns(model: &Distribution, reference: &Distribution) -> f64 {
    let sq: f64 = grid()
        .map(|q| {
            let d = model.quantile(q) - reference.quantile(q);
            d * d
        })
        .sum();
    (sq / GRID as f64).sqrt()
}

/// The distributions of a run, per operation kind (`Put(1048576)`, …) and `overall`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunDistributions {
    /// By kind name.
    pub kinds: BTreeMap<String, Distribution>,
}

/// A run that cannot be read as distributions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DistError(pub String);

impl fmt::Display for DistError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DistError {}

/// The kind name of an op-log line, as a `RunReport` names it.
fn kind_name(op: &OpRecord) -> String {
    match op.op_kind() {
        crate::OpKind::Put => format!("Put({})", op.bytes),
        crate::OpKind::Embed => format!("Embed({})", op.bytes),
        crate::OpKind::Get => format!("Get({})", op.bytes),
        crate::OpKind::Delete => "Delete".into(),
        crate::OpKind::DeleteRange => "DeleteRange".into(),
        _ => "Sync".into(),
    }
}

impl RunDistributions {
    /// From an op-log's operations.
    pub fn from_ops(ops: &[OpRecord]) -> RunDistributions {
        let mut kinds: BTreeMap<String, Vec<u64>> = BTreeMap::new();
        for op in ops {
            let lat = op.end_ns - op.start_ns;
            kinds.entry(kind_name(op)).or_default().push(lat);
            kinds.entry("overall".into()).or_default().push(lat);
        }
        RunDistributions {
            kinds: kinds
                .into_iter()
                .map(|(k, mut v)| {
                    v.sort_unstable();
                    (k, Distribution::Samples(v))
                })
                .collect(),
        }
    }

    /// From a `RunReport`-shaped JSON value (`kinds[]` and `overall`, each with `kind`,
    /// `min_ns`, `max_ns` and `percentiles_ns`).
    pub fn from_report(v: &serde_json::Value) -> Result<RunDistributions, DistError> {
        let mut kinds = BTreeMap::new();
        let list = v
            .get("kinds")
            .and_then(|k| k.as_array())
            .ok_or_else(|| DistError("no `kinds` array: not a RunReport JSON".into()))?;
        for k in list.iter().chain(v.get("overall")) {
            let name = k
                .get("kind")
                .and_then(|n| n.as_str())
                .ok_or_else(|| DistError("a kind without a `kind` name".into()))?;
            if k.get("count").and_then(|c| c.as_u64()) == Some(0) {
                continue;
            }
            let num = |key: &str| {
                k.get(key).and_then(|x| x.as_f64()).ok_or_else(|| {
                    DistError(format!("kind `{name}`: `{key}` missing or not a number"))
                })
            };
            let mut pts = vec![(0.0, num("min_ns")?)];
            let pct = k
                .get("percentiles_ns")
                .and_then(|p| p.as_object())
                .ok_or_else(|| DistError(format!("kind `{name}`: no `percentiles_ns`")))?;
            for (label, val) in pct {
                let q: f64 = label.parse().map_err(|_| {
                    DistError(format!(
                        "kind `{name}`: percentile label `{label}` is not a number"
                    ))
                })?;
                let ns = val.as_f64().ok_or_else(|| {
                    DistError(format!("kind `{name}`: percentile {label} is not a number"))
                })?;
                pts.push((q / 100.0, ns));
            }
            pts.push((1.0, num("max_ns")?));
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            kinds.insert(name.to_string(), Distribution::Quantiles(pts));
        }
        Ok(RunDistributions { kinds })
    }

    /// From a file's text: a JSON object (`RunReport`) or an op-log.
    pub fn from_text(text: &str) -> Result<RunDistributions, DistError> {
        if text.trim_start().starts_with('{') {
            let v: serde_json::Value =
                serde_json::from_str(text).map_err(|e| DistError(format!("not JSON: {e}")))?;
            RunDistributions::from_report(&v)
        } else {
            let ops = replay::parse_oplog(text).map_err(|e| DistError(e.to_string()))?;
            Ok(RunDistributions::from_ops(&ops))
        }
    }
}

/// The demerit figure of one kind.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KindDemerit {
    /// The kind (`Put(1048576)`, `overall`).
    pub kind: String,
    /// Mean response time of the model, ns.
    pub model_mean_ns: f64,
    /// Mean response time of the reference, ns.
    pub reference_mean_ns: f64,
    /// The demerit figure, ns.
    pub demerit_ns: f64,
    /// The same as a percentage of the reference's mean.
    pub demerit_percent: f64,
    /// Both distributions exact (op-logs); false when a percentile summary was interpolated.
    pub exact: bool,
}

/// The demerit figure of every kind present in both runs.
pub fn compare(model: &RunDistributions, reference: &RunDistributions) -> Vec<KindDemerit> {
    let mut out = Vec::new();
    for (kind, m) in &model.kinds {
        let Some(r) = reference.kinds.get(kind) else {
            continue;
        };
        let d = demerit_ns(m, r);
        let rm = r.mean();
        out.push(KindDemerit {
            kind: kind.clone(),
            model_mean_ns: m.mean(),
            reference_mean_ns: rm,
            demerit_ns: d,
            demerit_percent: if rm > 0.0 { 100.0 * d / rm } else { 0.0 },
            exact: m.exact() && r.exact(),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_distributions_have_no_demerit() {
        let a = Distribution::Samples(vec![1, 2, 3, 4]);
        assert_eq!(demerit_ns(&a, &a), 0.0);
    }

    #[test]
    fn a_shift_is_its_own_demerit() {
        // Every quantile 10 apart: the RMS horizontal distance is 10.
        let a = Distribution::Samples((0..1000).collect());
        let b = Distribution::Samples((10..1010).collect());
        assert!((demerit_ns(&a, &b) - 10.0).abs() < 1e-9);
    }

    #[test]
    fn a_tail_counts_by_its_share() {
        // 10% of the model's requests 100 ns slower: sqrt(0.1 · 100²) = 31.6 ns.
        let reference = Distribution::Samples(vec![100; 1000]);
        let mut m = vec![100; 900];
        m.extend(vec![200; 100]);
        let d = demerit_ns(&Distribution::Samples(m), &reference);
        assert!((d - 1000f64.sqrt()).abs() < 1e-6, "{d}");
    }

    #[test]
    fn quantiles_interpolate() {
        let d = Distribution::Quantiles(vec![(0.0, 0.0), (0.5, 10.0), (1.0, 30.0)]);
        assert_eq!(d.quantile(0.25), 5.0);
        assert_eq!(d.quantile(0.75), 20.0);
        assert!((d.mean() - 12.5).abs() < 1e-6);
    }

    #[test]
    fn report_json() {
        let v: serde_json::Value = serde_json::from_str(
            r#"{"kinds":[{"kind":"Get(4096)","count":3,"min_ns":1,"max_ns":9,
            "percentiles_ns":{"50.0":5,"90.0":8}}],
            "overall":{"kind":"overall","count":3,"min_ns":1,"max_ns":9,"percentiles_ns":{"50.0":5}}}"#,
        )
        .unwrap();
        let r = RunDistributions::from_report(&v).unwrap();
        assert_eq!(r.kinds.len(), 2);
        assert_eq!(r.kinds["Get(4096)"].quantile(0.5), 5.0);
        assert!(RunDistributions::from_text("{}").is_err());
    }
}
