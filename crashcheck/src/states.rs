//! Crash states from an initial image and a write log, CrashMonkey's way (Mohan et al., OSDI
//! 2018): at a crash point (a flush), the image holds every write accepted before it, plus —
//! of the writes accepted after it and before the next flush (in flight, in the drive's
//! volatile cache) — none, a random subset, a subset with one torn write (a prefix of its
//! sectors), or on 512e media a subset plus a write covering part of a 4 KiB physical sector
//! whose read-modify-write was cut: that whole physical sector is garbage, neighbours' flushed
//! bytes too (as `minfs::device::fault::MediaState::with_rmw_physical`). "All of them" is the
//! next crash point's "none".
//!
//! States are built copy-on-write: the base image (initial image + writes up to the crash
//! point) is kept up to date in one pass over the log, and each state is a reflink copy of it
//! (`cp --reflink=always`, on XFS or btrfs) with its in-flight writes applied.

use std::fs::{File, OpenOptions};
use std::io::BufReader;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::process::Command;

use hddsim::emulate::writelog::{Entry, Reader};

/// A logged write.
#[derive(Debug, Clone)]
pub struct Write {
    /// First sector (512 bytes).
    pub sector: u64,
    /// Data.
    pub data: Vec<u8>,
}

/// A state's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Variant {
    /// No in-flight write.
    None,
    /// A random subset of them.
    Subset,
    /// A random subset plus one torn write (a prefix of its sectors).
    Torn,
    /// A random subset plus a write covering part of a physical sector that ruined it whole.
    Ruined512e,
}

impl Variant {
    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Variant::None => "none",
            Variant::Subset => "subset",
            Variant::Torn => "torn",
            Variant::Ruined512e => "ruined-512e",
        }
    }
}

/// What to write on top of the base image for one state.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Its kind.
    pub variant: Variant,
    /// (write index in the in-flight set, sectors of it kept from its start; all when None).
    pub kept: Vec<(usize, Option<u64>)>,
    /// Byte ranges filled with garbage afterwards (ruined physical sectors).
    pub ruined: Vec<(u64, u64)>,
}

/// xorshift64* (a fixed, seeded sequence).
#[derive(Debug, Clone)]
pub struct Rng(pub u64);

impl Rng {
    /// The next value.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0.max(1);
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number below `n` (> 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// The physical sector size of 512e media.
pub const PHYSICAL: u64 = 4096;

/// The states to build at one crash point with `inflight` writes: none; `subsets` random
/// subsets; a torn write; a ruined physical sector when `rmw_512e` and a write covers part of
/// one. Identical plans are not repeated.
pub fn plans(inflight: &[Write], subsets: usize, rmw_512e: bool, rng: &mut Rng) -> Vec<Plan> {
    let mut out = vec![Plan {
        variant: Variant::None,
        kept: vec![],
        ruined: vec![],
    }];
    if inflight.is_empty() {
        return out;
    }
    let subset = |rng: &mut Rng, except: Option<usize>| -> Vec<(usize, Option<u64>)> {
        (0..inflight.len())
            .filter(|&k| Some(k) != except && rng.below(2) == 0)
            .map(|k| (k, None))
            .collect()
    };
    for _ in 0..subsets {
        let kept = subset(rng, None);
        if !out.iter().any(|p| p.kept == kept) {
            out.push(Plan {
                variant: Variant::Subset,
                kept,
                ruined: vec![],
            });
        }
    }
    let multi: Vec<usize> = (0..inflight.len())
        .filter(|&k| inflight[k].data.len() > 512)
        .collect();
    if !multi.is_empty() {
        let k = multi[rng.below(multi.len() as u64) as usize];
        let sectors = inflight[k].data.len() as u64 / 512;
        let keep = 1 + rng.below(sectors - 1);
        let mut kept = subset(rng, Some(k));
        kept.push((k, Some(keep)));
        out.push(Plan {
            variant: Variant::Torn,
            kept,
            ruined: vec![],
        });
    }
    if rmw_512e {
        let partial: Vec<usize> = (0..inflight.len())
            .filter(|&k| !partial_physical(&inflight[k]).is_empty())
            .collect();
        if !partial.is_empty() {
            let k = partial[rng.below(partial.len() as u64) as usize];
            let kept = subset(rng, Some(k));
            out.push(Plan {
                variant: Variant::Ruined512e,
                kept,
                ruined: partial_physical(&inflight[k]),
            });
        }
    }
    out
}

/// The physical sectors (byte ranges) a write covers only in part.
pub fn partial_physical(w: &Write) -> Vec<(u64, u64)> {
    let a = w.sector * 512;
    let b = a + w.data.len() as u64;
    let mut out = Vec::new();
    if a % PHYSICAL != 0 {
        let p = a / PHYSICAL * PHYSICAL;
        out.push((p, p + PHYSICAL));
    }
    if b % PHYSICAL != 0 {
        let p = b / PHYSICAL * PHYSICAL;
        if out.last() != Some(&(p, p + PHYSICAL)) {
            out.push((p, p + PHYSICAL));
        }
    }
    out
}

/// Writes a plan's in-flight writes (and garbage) onto `image`.
pub fn apply(image: &File, inflight: &[Write], plan: &Plan, rng: &mut Rng) -> std::io::Result<()> {
    for &(k, sectors) in &plan.kept {
        let w = &inflight[k];
        let n = sectors.map_or(w.data.len(), |s| (s * 512) as usize);
        image.write_all_at(&w.data[..n], w.sector * 512)?;
    }
    for &(a, b) in &plan.ruined {
        let garbage: Vec<u8> = (0..(b - a) / 8)
            .flat_map(|_| rng.next_u64().to_le_bytes())
            .collect();
        image.write_all_at(&garbage, a)?;
    }
    Ok(())
}

/// A reflink copy of `from` at `to` (fails where the filesystem cannot share extents).
pub fn reflink(from: &Path, to: &Path) -> Result<(), String> {
    let out = Command::new("cp")
        .arg("--reflink=always")
        .arg(from)
        .arg(to)
        .output()
        .map_err(|e| format!("cp: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "cp --reflink=always {} {}: {}",
            from.display(),
            to.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// The flushes of a write log: (count of writes before each, accept time of each), and the
/// total number of writes.
pub fn scan(log: &Path) -> Result<(Vec<u64>, Vec<u64>, u64), String> {
    let f = File::open(log).map_err(|e| format!("{}: {e}", log.display()))?;
    let mut r = Reader::new(BufReader::with_capacity(4 << 20, f))
        .map_err(|e| format!("{}: {e}", log.display()))?;
    let (mut before, mut times, mut writes) = (Vec::new(), Vec::new(), 0);
    while let Some(e) = r
        .next_entry()
        .map_err(|e| format!("{}: {e}", log.display()))?
    {
        match e {
            Entry::Write { .. } => writes += 1,
            Entry::Flush { accepted_ns, .. } => {
                before.push(writes);
                times.push(accepted_ns);
            }
        }
    }
    Ok((before, times, writes))
}

/// `n` crash points spread evenly over `m` flushes (all of them when `n ≥ m`).
pub fn sample_points(m: usize, n: usize) -> Vec<usize> {
    if n >= m {
        return (0..m).collect();
    }
    if n == 0 {
        return vec![];
    }
    if n == 1 {
        return vec![m - 1];
    }
    let mut v: Vec<usize> = (0..n).map(|k| k * (m - 1) / (n - 1)).collect();
    v.dedup();
    v
}

/// Walks the log once: calls `at_point(point, base, inflight)` at each chosen crash point, with
/// `base` holding the initial image plus every write before that flush.
pub fn walk(
    log: &Path,
    base: &Path,
    points: &[usize],
    mut at_point: impl FnMut(usize, &[Write]) -> Result<(), String>,
) -> Result<(), String> {
    let f = File::open(log).map_err(|e| format!("{}: {e}", log.display()))?;
    let mut r = Reader::new(BufReader::with_capacity(4 << 20, f))
        .map_err(|e| format!("{}: {e}", log.display()))?;
    let img = OpenOptions::new()
        .write(true)
        .open(base)
        .map_err(|e| format!("{}: {e}", base.display()))?;
    let mut segment: Vec<Write> = Vec::new();
    let mut flush = 0usize; // flushes seen
    let mut want = points.iter().copied().peekable();
    let apply_segment = |segment: &mut Vec<Write>| -> Result<(), String> {
        for w in segment.drain(..) {
            img.write_all_at(&w.data, w.sector * 512)
                .map_err(|e| format!("{}: {e}", base.display()))?;
        }
        Ok(())
    };
    loop {
        let e = r
            .next_entry()
            .map_err(|e| format!("{}: {e}", log.display()))?;
        let end = e.is_none();
        match e {
            Some(Entry::Write { sector, data, .. }) => segment.push(Write { sector, data }),
            Some(Entry::Flush { .. }) | None => {
                // The segment since the previous flush: in flight at crash point flush-1.
                if flush > 0 && want.peek() == Some(&(flush - 1)) {
                    want.next();
                    at_point(flush - 1, &segment)?;
                }
                apply_segment(&mut segment)?;
                if end {
                    break;
                }
                flush += 1;
            }
        }
        if want.peek().is_none() {
            break;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(sector: u64, sectors: usize) -> Write {
        Write {
            sector,
            data: vec![1; sectors * 512],
        }
    }

    #[test]
    fn plans_cover_the_variants() {
        let inflight = [w(8, 8), w(17, 2), w(64, 16)];
        let mut rng = Rng(5);
        let p = plans(&inflight, 2, true, &mut rng);
        let kinds: Vec<Variant> = p.iter().map(|p| p.variant).collect();
        assert_eq!(kinds[0], Variant::None);
        assert!(kinds.contains(&Variant::Torn));
        let r = p.iter().find(|p| p.variant == Variant::Ruined512e).unwrap();
        // Only the write at sector 17 (bytes 8704..9728) covers part of a physical sector.
        assert_eq!(r.ruined, vec![(8192, 12288)]);
        assert!(!r.kept.iter().any(|&(k, _)| k == 1));
        let t = p.iter().find(|p| p.variant == Variant::Torn).unwrap();
        assert!(t.kept.iter().any(|&(_, s)| s.is_some_and(|s| s >= 1)));
        // Without 512e, no ruined state; without writes in flight, only "none".
        assert!(plans(&inflight, 2, false, &mut rng)
            .iter()
            .all(|p| p.variant != Variant::Ruined512e));
        assert_eq!(plans(&[], 2, true, &mut rng).len(), 1);
    }

    #[test]
    fn sampling_is_spread_and_counted() {
        assert_eq!(sample_points(5, 10), vec![0, 1, 2, 3, 4]);
        assert_eq!(sample_points(100, 3), vec![0, 49, 99]);
        assert_eq!(sample_points(100, 25).len(), 25);
    }

    #[test]
    fn partial_sectors() {
        assert!(partial_physical(&w(8, 8)).is_empty());
        assert_eq!(partial_physical(&w(7, 2)), vec![(0, 4096), (4096, 8192)]);
        assert_eq!(partial_physical(&w(9, 1)), vec![(4096, 8192)]);
    }
}
