//! Latent sector errors of the emulated drive (`hddsim emulate --bad-sectors`,
//! `--latent-errors`).
//!
//! A set of unreadable logical sectors (512-byte LBAs). A read that touches one fails with
//! `EIO` after the drive's error recovery time (`read_error_recovery_ms` of the profile); a
//! write that covers one succeeds and makes it readable again — the drive writes the sector
//! anew or reallocates it, as drives do on a write to a pending sector. Nothing else changes
//! them.
//!
//! # Generated errors (`--latent-errors COUNT --seed S`)
//! Latent sector errors are not independent: Bairavasundaram et al., "An Analysis of Latent
//! Sector Errors in Disk Drives" (SIGMETRICS 2007, 1.53 million drives over 32 months: 3.45 %
//! developed latent sector errors) find that a drive with one error is likely to have more,
//! and that errors have spatial locality — many lie close to another error of the same drive;
//! Schroeder, Damouras and Gill (FAST 2010) find them in bursts of consecutive sectors. The
//! generator follows that shape; its numbers are estimates, not the papers' figures:
//! - COUNT bad **physical** sectors (every logical sector of each: an Advanced Format drive's
//!   ECC codeword covers the whole 4 KiB physical sector, so the media loses it whole);
//! - in clusters: a cluster starts at a uniformly drawn physical sector and holds 1 + a
//!   geometric number of errors, mean [`MEAN_CLUSTER`] (estimate);
//! - within a cluster, the next error is the next physical sector with probability
//!   [`P_CONSECUTIVE`] (a burst; estimate), else up to [`CLUSTER_SPAN`] bytes further
//!   (uniform; estimate).
//!
//! The same COUNT, seed and capacity always give the same sectors.

use std::collections::BTreeSet;

/// Mean errors per cluster (estimate).
pub const MEAN_CLUSTER: f64 = 4.0;
/// Probability that the next error of a cluster is the next physical sector (estimate).
pub const P_CONSECUTIVE: f64 = 0.5;
/// How far (bytes) the next error of a cluster lies at most, when not the next sector
/// (estimate: 8 MiB).
pub const CLUSTER_SPAN: u64 = 8 << 20;

/// The drive's unreadable logical sectors.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LatentErrors {
    bad: BTreeSet<u64>,
}

/// splitmix64: small, deterministic, good enough to place errors.
#[derive(Debug)]
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }
}

impl LatentErrors {
    /// No errors.
    pub fn none() -> LatentErrors {
        LatentErrors::default()
    }

    /// Parses `--bad-sectors`: comma-separated 512-byte LBAs or inclusive ranges `A-B`, each
    /// inside a drive of `capacity` bytes. An error names the bad piece.
    pub fn parse(list: &str, capacity: u64) -> Result<LatentErrors, String> {
        let sectors = capacity / 512;
        let mut bad = BTreeSet::new();
        for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let num = |s: &str| -> Result<u64, String> {
                s.trim().parse::<u64>().map_err(|_| {
                    format!("--bad-sectors: `{item}` is not an LBA or a range LBA-LBA")
                })
            };
            let (a, b) = match item.split_once('-') {
                Some((a, b)) => (num(a)?, num(b)?),
                None => (num(item)?, num(item)?),
            };
            if a > b {
                return Err(format!(
                    "--bad-sectors: range `{item}` ends before it starts"
                ));
            }
            if b >= sectors {
                return Err(format!(
                    "--bad-sectors: LBA {b} is past the drive's last sector ({})",
                    sectors.saturating_sub(1)
                ));
            }
            if b - a >= 1 << 24 {
                return Err(format!(
                    "--bad-sectors: range `{item}` has more than {} sectors",
                    1u64 << 24
                ));
            }
            bad.extend(a..=b);
        }
        if bad.is_empty() {
            return Err("--bad-sectors: no LBA given".into());
        }
        Ok(LatentErrors { bad })
    }

    /// `count` bad physical sectors of `physical` bytes in clusters (see the module docs), on
    /// a drive of `capacity` bytes, drawn from `seed`.
    pub fn generate(count: u64, seed: u64, capacity: u64, physical: u32) -> LatentErrors {
        let phys = u64::from(physical.max(512));
        let units = capacity / phys;
        let per = phys / 512;
        let mut rng = Rng(seed ^ 0x5EED_1A7E_u64);
        let mut chosen: BTreeSet<u64> = BTreeSet::new();
        let count = count.min(units);
        let mut guard = 0u64;
        while (chosen.len() as u64) < count && guard < count * 100 + 100 {
            guard += 1;
            let mut at = rng.below(units);
            // 1 + geometric with mean MEAN_CLUSTER - 1 more.
            let p_more = 1.0 - 1.0 / MEAN_CLUSTER;
            loop {
                chosen.insert(at);
                if chosen.len() as u64 >= count || rng.unit() >= p_more {
                    break;
                }
                let step = if rng.unit() < P_CONSECUTIVE {
                    1
                } else {
                    1 + rng.below(CLUSTER_SPAN / phys)
                };
                if at + step >= units {
                    break;
                }
                at += step;
            }
        }
        let bad = chosen
            .into_iter()
            .flat_map(|u| u * per..(u + 1) * per)
            .collect();
        LatentErrors { bad }
    }

    /// Adds `other`'s unreadable sectors.
    pub fn extend(&mut self, other: &LatentErrors) {
        self.bad.extend(other.bad.iter().copied());
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.bad.is_empty()
    }

    /// The unreadable LBAs, in order.
    pub fn lbas(&self) -> Vec<u64> {
        self.bad.iter().copied().collect()
    }

    /// How many LBAs are unreadable.
    pub fn len(&self) -> usize {
        self.bad.len()
    }

    /// The first unreadable LBA among `sectors` LBAs from `lba`.
    pub fn first_in(&self, lba: u64, sectors: u64) -> Option<u64> {
        self.bad
            .range(lba..lba.saturating_add(sectors))
            .next()
            .copied()
    }

    /// A write of `sectors` LBAs from `lba`: the unreadable ones it covers are readable again
    /// (written or reallocated). Returns how many.
    pub fn write(&mut self, lba: u64, sectors: u64) -> u64 {
        let hit: Vec<u64> = self
            .bad
            .range(lba..lba.saturating_add(sectors))
            .copied()
            .collect();
        for l in &hit {
            self.bad.remove(l);
        }
        hit.len() as u64
    }

    /// The unreadable LBAs as ranges `A-B` (or `A`), comma-separated: what `--bad-sectors`
    /// takes.
    pub fn to_list(&self) -> String {
        let mut out: Vec<String> = Vec::new();
        let mut run: Option<(u64, u64)> = None;
        for &l in &self.bad {
            run = match run {
                Some((a, b)) if b + 1 == l => Some((a, l)),
                Some((a, b)) => {
                    out.push(range_text(a, b));
                    Some((l, l))
                }
                None => Some((l, l)),
            };
        }
        if let Some((a, b)) = run {
            out.push(range_text(a, b));
        }
        out.join(",")
    }
}

fn range_text(a: u64, b: u64) -> String {
    if a == b {
        a.to_string()
    } else {
        format!("{a}-{b}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TB: u64 = 1_000_204_886_016;

    #[test]
    fn a_list_parses_and_writes_clear_what_they_cover() {
        let mut e = LatentErrors::parse("10, 20-23,7", TB).unwrap();
        assert_eq!(e.lbas(), vec![7, 10, 20, 21, 22, 23]);
        assert_eq!(e.to_list(), "7,10,20-23");
        assert_eq!(LatentErrors::parse(&e.to_list(), TB).unwrap(), e);
        assert_eq!(e.first_in(0, 8), Some(7));
        assert_eq!(e.first_in(11, 9), None);
        assert_eq!(e.first_in(11, 10), Some(20));
        assert_eq!(e.write(21, 2), 2);
        assert_eq!(e.lbas(), vec![7, 10, 20, 23]);
        assert_eq!(e.write(0, 100), 4);
        assert!(e.is_empty());
        for (bad, says) in [
            ("x", "`x` is not an LBA"),
            ("5-3", "ends before it starts"),
            ("1953525168", "past the drive's last sector (1953525167)"),
            ("", "no LBA given"),
            ("0-99999999", "more than"),
        ] {
            let err = LatentErrors::parse(bad, TB).unwrap_err();
            assert!(err.contains(says), "{bad}: {err}");
        }
    }

    #[test]
    fn generated_errors_are_whole_physical_sectors_in_clusters_and_reproducible() {
        let e = LatentErrors::generate(200, 7, TB, 4096);
        assert_eq!(e, LatentErrors::generate(200, 7, TB, 4096));
        assert_ne!(e, LatentErrors::generate(200, 8, TB, 4096));
        let lbas = e.lbas();
        assert_eq!(lbas.len(), 200 * 8);
        // Whole physical sectors.
        for chunk in lbas.chunks(8) {
            assert_eq!(chunk[0] % 8, 0);
            assert_eq!(chunk[7], chunk[0] + 7);
        }
        // Clustered: far more neighbours within 8 MiB than 200 uniform sectors on 1 TB would
        // have (about 200 * 200 * 16 MiB / 1 TB ≈ 0.7).
        let units: Vec<u64> = lbas.iter().step_by(8).map(|l| l / 8).collect();
        let close = units
            .windows(2)
            .filter(|w| (w[1] - w[0]) * 4096 <= CLUSTER_SPAN)
            .count();
        assert!(close > 100, "{close} of 199 gaps within 8 MiB");
        let bursts = units.windows(2).filter(|w| w[1] == w[0] + 1).count();
        assert!(bursts > 30, "{bursts} consecutive pairs");
    }
}
