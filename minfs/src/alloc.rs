//! The free-space map: one bit per 4 KiB data block (`bitvec`), 1 = in use.
//!
//! It is not stored on disk: it is derived from the file table whenever a slot is decoded, so
//! there is nothing to keep consistent; the superblock records only the free-block count, which
//! `fsck` checks against it. Memory cost: 32 MiB per TiB of data area.

use bitvec::prelude::*;

use crate::error::Corruption;
use crate::format::{Extent, FileEntry};

/// Which data blocks are in use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allocator {
    first: u64,
    bits: BitVec<u64, Lsb0>,
}

impl Allocator {
    /// All `count` blocks from block `first` on are free.
    pub fn new(first: u64, count: u64) -> Allocator {
        Allocator {
            first,
            bits: bitvec![u64, Lsb0; 0; count as usize],
        }
    }

    /// The map of `files`, refusing two files (or two extents) that claim the same block.
    /// Extents must already lie inside the data area (the file table checks that).
    pub fn from_files(
        first: u64,
        count: u64,
        files: &[FileEntry],
    ) -> Result<Allocator, Corruption> {
        let mut a = Allocator::new(first, count);
        for (i, f) in files.iter().enumerate() {
            for e in &f.extents {
                let r = a.range(*e);
                if let Some(off) = a.bits[r.clone()].first_one() {
                    let block = e.start + off as u64;
                    let owner = files[..=i]
                        .iter()
                        .find(|g| {
                            g.extents
                                .iter()
                                .take_while(|x| !std::ptr::eq(*x, e))
                                .any(|x| x.start <= block && block < x.end())
                        })
                        .map_or_else(|| f.name.clone(), |g| g.name.clone());
                    return Err(Corruption::OverlappingExtents {
                        a: owner,
                        b: f.name.clone(),
                        block,
                    });
                }
                a.bits[r].fill(true);
            }
        }
        Ok(a)
    }

    /// Number of data blocks.
    pub fn block_count(&self) -> u64 {
        self.bits.len() as u64
    }

    /// Number of free blocks.
    pub fn free_blocks(&self) -> u64 {
        self.bits.count_zeros() as u64
    }

    /// Whether every block of `e` is free.
    pub fn is_free(&self, e: Extent) -> bool {
        e.start >= self.first
            && e.end() <= self.first + self.block_count()
            && self.bits[self.range(e)].not_any()
    }

    /// Marks the blocks of `e` used or free.
    pub fn set(&mut self, e: Extent, used: bool) {
        let r = self.range(e);
        self.bits[r].fill(used);
    }

    /// The free runs, in block order.
    pub fn free_runs(&self) -> Vec<Extent> {
        let mut runs = Vec::new();
        let mut at = 0usize;
        let n = self.bits.len();
        while at < n {
            let Some(z) = self.bits[at..].first_zero() else {
                break;
            };
            let start = at + z;
            let len = self.bits[start..].first_one().unwrap_or(n - start);
            runs.push(Extent {
                start: self.first + start as u64,
                len: len as u64,
            });
            at = start + len;
        }
        runs
    }

    /// Chooses free blocks for `n` more blocks without marking them: the first free run that
    /// holds all `n` (one contiguous extent), else the largest runs first (fewest extents),
    /// returned in block order. `None` when fewer than `n` blocks are free.
    pub fn choose(&self, n: u64) -> Option<Vec<Extent>> {
        if n == 0 {
            return Some(Vec::new());
        }
        let runs = self.free_runs();
        if let Some(r) = runs.iter().find(|r| r.len >= n) {
            return Some(vec![Extent {
                start: r.start,
                len: n,
            }]);
        }
        if runs.iter().map(|r| r.len).sum::<u64>() < n {
            return None;
        }
        let mut by_size = runs;
        by_size.sort_by(|a, b| b.len.cmp(&a.len).then(a.start.cmp(&b.start)));
        let mut left = n;
        let mut out = Vec::new();
        for r in by_size {
            let take = r.len.min(left);
            out.push(Extent {
                start: r.start,
                len: take,
            });
            left -= take;
            if left == 0 {
                break;
            }
        }
        out.sort_by_key(|e| e.start);
        Some(out)
    }

    fn range(&self, e: Extent) -> std::ops::Range<usize> {
        let s = (e.start - self.first) as usize;
        s..s + e.len as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contiguous_first_fit_then_largest_first() {
        let mut a = Allocator::new(100, 20);
        a.set(Extent { start: 103, len: 2 }, true); // free: 100-102 (3), 105-119 (15)
        assert_eq!(a.choose(3), Some(vec![Extent { start: 100, len: 3 }]));
        assert_eq!(
            a.choose(10),
            Some(vec![Extent {
                start: 105,
                len: 10
            }])
        );
        assert_eq!(
            a.choose(17),
            Some(vec![
                Extent { start: 100, len: 2 },
                Extent {
                    start: 105,
                    len: 15
                }
            ])
        );
        assert_eq!(a.choose(19), None);
        assert_eq!(a.free_blocks(), 18);
        assert!(!a.is_free(Extent { start: 102, len: 2 }));
        assert!(a.is_free(Extent {
            start: 105,
            len: 15
        }));
        assert!(!a.is_free(Extent {
            start: 105,
            len: 16
        }));
    }

    #[test]
    fn overlap_names_both_files() {
        let f = |name: &str, start, len| FileEntry {
            name: name.into(),
            size: len * 4096,
            extents: vec![Extent { start, len }],
        };
        let err = Allocator::from_files(0, 100, &[f("x", 10, 5), f("y", 20, 5), f("z", 24, 3)])
            .unwrap_err();
        assert_eq!(
            err,
            Corruption::OverlappingExtents {
                a: "y".into(),
                b: "z".into(),
                block: 24
            }
        );
    }
}
