//! The one pseudo-random generator of an expansion, with platform-independent sampling.
//!
//! ChaCha8 seeded with `seed_from_u64` (a documented, portable expansion of the seed), and
//! nothing but `next_u64` drawn from it: uniform choice is u64 rejection sampling done
//! here, so the numbers never depend on `usize` width or on a `rand` version's sampling
//! algorithm.

use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The generator.
#[derive(Debug, Clone)]
pub struct Rng(ChaCha8Rng);

impl Rng {
    /// The generator for `seed`.
    pub fn new(seed: u64) -> Self {
        Rng(ChaCha8Rng::seed_from_u64(seed))
    }

    /// The next raw 64 bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// Uniform in `0..n` (0 for `n == 0`, drawing nothing). Rejects the lowest
    /// `2^64 mod n` raw values so that every result is equally likely.
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        let threshold = n.wrapping_neg() % n; // = 2^64 mod n
        loop {
            let x = self.next_u64();
            if x >= threshold {
                return x % n;
            }
        }
    }

    /// Uniform in `lo..=hi` (`lo` if `hi < lo`).
    pub fn inclusive(&mut self, lo: u64, hi: u64) -> u64 {
        if hi < lo {
            return lo;
        }
        match (hi - lo).checked_add(1) {
            Some(span) => lo + self.below(span),
            None => self.next_u64(),
        }
    }

    /// Fisher–Yates shuffle.
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            // j <= i < items.len(), so it fits a usize.
            let j = self.below(i as u64 + 1) as usize;
            items.swap(i, j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream_known_values() {
        let mut a = Rng::new(42);
        let mut b = Rng::new(42);
        let xs: Vec<u64> = (0..8).map(|_| a.below(1000)).collect();
        let ys: Vec<u64> = (0..8).map(|_| b.below(1000)).collect();
        assert_eq!(xs, ys);
        assert_ne!(
            xs,
            (0..8).map(|_| Rng::new(43).below(1000)).collect::<Vec<_>>()
        );
        // Pinned: a change of generator or sampling would silently change every workload.
        let mut r = Rng::new(0);
        let first: Vec<u64> = (0..4).map(|_| r.below(100)).collect();
        assert_eq!(first, PINNED_SEED0_BELOW100);
    }

    const PINNED_SEED0_BELOW100: [u64; 4] = [52, 23, 78, 56];

    #[test]
    fn ranges() {
        let mut r = Rng::new(1);
        for _ in 0..1000 {
            assert!(r.below(7) < 7);
            let x = r.inclusive(5, 9);
            assert!((5..=9).contains(&x));
        }
        assert_eq!(r.below(0), 0);
        assert_eq!(r.below(1), 0);
        assert_eq!(r.inclusive(3, 3), 3);
        assert_eq!(r.inclusive(4, 3), 4);
        let _ = r.inclusive(0, u64::MAX);
        assert!(r.below(u64::MAX) < u64::MAX);
    }

    #[test]
    fn roughly_uniform() {
        let mut r = Rng::new(7);
        let mut hist = [0u32; 10];
        for _ in 0..100_000 {
            hist[r.below(10) as usize] += 1;
        }
        for h in hist {
            assert!((9_000..11_000).contains(&h), "{hist:?}");
        }
    }

    #[test]
    fn shuffle_is_a_permutation() {
        let mut r = Rng::new(3);
        let mut v: Vec<u32> = (0..100).collect();
        r.shuffle(&mut v);
        assert_ne!(v, (0..100).collect::<Vec<_>>());
        v.sort_unstable();
        assert_eq!(v, (0..100).collect::<Vec<_>>());
        let mut empty: [u8; 0] = [];
        r.shuffle(&mut empty);
    }
}
