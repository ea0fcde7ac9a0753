//! The free-space map: the free runs of data blocks, ordered by start, with an index by length.
//!
//! It is not stored on disk: it is derived from the file table whenever a slot is decoded, so
//! there is nothing to keep consistent; the superblock records only the free-block count, which
//! `fsck` checks against it. Its memory and time depend on the number of free runs F, never on
//! the size of the device: F ≤ E + 1 for E extents in the file table (at most a few thousand,
//! see `docs/FORMAT.md`, "Limits").
//!
//! | operation | cost |
//! |---|---|
//! | [`Allocator::new`], [`Allocator::free_blocks`], [`Allocator::block_count`] | O(1) |
//! | [`Allocator::from_files`] | O(E log E) (sorts the extents) |
//! | [`Allocator::is_free`] | O(log F) |
//! | [`Allocator::set`] | O((k + 1) log F) for k free runs the extent touches |
//! | [`Allocator::choose`] | O(F): first fit scans the runs by address (O(log F) decides that none fits); else the k largest runs, O(k log F) |
//! | [`Allocator::free_runs`] | O(F) |

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;

use crate::error::Corruption;
use crate::format::{Extent, FileEntry};

/// Which data blocks are free.
///
/// Invariants: the runs are non-empty, lie in `[first, first + count)`, neither overlap nor
/// touch (two adjacent free runs are one run), `by_len` holds exactly the runs of `by_start`,
/// and `free` is the sum of their lengths.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allocator {
    first: u64,
    count: u64,
    free: u64,
    /// Free runs: start → length.
    by_start: BTreeMap<u64, u64>,
    /// The same runs as (length, Reverse(start)): the last entry is the largest run, the one
    /// with the lowest start among equals.
    by_len: BTreeSet<(u64, Reverse<u64>)>,
}

impl Allocator {
    /// All `count` blocks from block `first` on are free.
    pub fn new(first: u64, count: u64) -> Allocator {
        let mut a = Allocator::without_runs(first, count);
        a.insert_run(first, count);
        a
    }

    /// `count` blocks from block `first` on, none of them free yet.
    fn without_runs(first: u64, count: u64) -> Allocator {
        Allocator {
            first,
            count,
            free: 0,
            by_start: BTreeMap::new(),
            by_len: BTreeSet::new(),
        }
    }

    /// The map of `files`, refusing two files (or two extents) that claim the same block; the
    /// error names the file whose extent starts first (`a`), the other (`b`) and the first
    /// shared block. Sorts the extents: O(E log E) for E extents, whatever the device size.
    /// Extents must already lie inside the data area (the file table checks that).
    pub fn from_files(
        first: u64,
        count: u64,
        files: &[FileEntry],
    ) -> Result<Allocator, Corruption> {
        let mut all: Vec<(Extent, usize)> = files
            .iter()
            .enumerate()
            .flat_map(|(i, f)| f.extents.iter().map(move |e| (*e, i)))
            .collect();
        all.sort_by_key(|(e, i)| (e.start, *i));
        let mut a = Allocator::without_runs(first, count);
        // The end of the extents so far, and the file owning the extent reaching furthest.
        let mut end = first;
        let mut owner: Option<usize> = None;
        for (e, i) in all {
            if let Some(o) = owner.filter(|_| e.start < end) {
                return Err(Corruption::OverlappingExtents {
                    a: files[o].name.clone(),
                    b: files[i].name.clone(),
                    block: e.start,
                });
            }
            a.insert_run(end, e.start.saturating_sub(end));
            end = e.end();
            owner = Some(i);
        }
        a.insert_run(end, (first + count).saturating_sub(end));
        Ok(a)
    }

    /// Number of data blocks.
    pub fn block_count(&self) -> u64 {
        self.count
    }

    /// Number of free blocks.
    pub fn free_blocks(&self) -> u64 {
        self.free
    }

    /// Number of free runs.
    pub fn run_count(&self) -> usize {
        self.by_start.len()
    }

    /// Whether every block of `e` is free.
    pub fn is_free(&self, e: Extent) -> bool {
        if e.len == 0 {
            return e.start >= self.first && e.start <= self.first + self.count;
        }
        match self.by_start.range(..=e.start).next_back() {
            Some((&s, &len)) => e.end() <= s + len,
            None => false,
        }
    }

    /// The length of the free run starting exactly at block `start` (0 when block `start` is
    /// used, or free but inside a run that starts earlier). Right after a file's last extent
    /// it is the room that file can grow into in place. O(log F).
    pub fn free_run_at(&self, start: u64) -> u64 {
        self.by_start.get(&start).copied().unwrap_or(0)
    }

    /// Marks the blocks of `e` used or free (any of them may already be either).
    pub fn set(&mut self, e: Extent, used: bool) {
        if e.len == 0 {
            return;
        }
        // Every free run that overlaps `e` or, when freeing, touches it.
        let end = e.end();
        let upper = if used {
            Bound::Excluded(end)
        } else {
            Bound::Included(end)
        };
        let before = self.by_start.range(..e.start).next_back();
        let hit: Vec<(u64, u64)> = before
            .filter(|&(&s, &len)| s + len > e.start || (!used && s + len == e.start))
            .into_iter()
            .chain(self.by_start.range((Bound::Included(e.start), upper)))
            .map(|(&s, &len)| (s, len))
            .collect();
        for &(s, len) in &hit {
            self.remove_run(s, len);
        }
        if used {
            for (s, len) in hit {
                self.insert_run(s, e.start.saturating_sub(s).min(len));
                let tail = e.end().max(s);
                self.insert_run(tail, (s + len).saturating_sub(tail));
            }
        } else {
            let start = hit.iter().map(|r| r.0).fold(e.start, u64::min);
            let end = hit.iter().map(|r| r.0 + r.1).fold(e.end(), u64::max);
            self.insert_run(start, end - start);
        }
    }

    /// The free runs, in block order.
    pub fn free_runs(&self) -> Vec<Extent> {
        self.by_start
            .iter()
            .map(|(&start, &len)| Extent { start, len })
            .collect()
    }

    /// Chooses free blocks for `n` more blocks without marking them: the first free run (by
    /// address) that holds all `n` (one contiguous extent), else the largest runs first (fewest
    /// extents; equal lengths by lower start), returned in block order. `None` when fewer than
    /// `n` blocks are free.
    pub fn choose(&self, n: u64) -> Option<Vec<Extent>> {
        if n == 0 {
            return Some(Vec::new());
        }
        if n > self.free {
            return None;
        }
        let largest = self.by_len.last().map_or(0, |r| r.0);
        if largest >= n {
            let (&start, _) = self.by_start.iter().find(|(_, &len)| len >= n)?;
            return Some(vec![Extent { start, len: n }]);
        }
        let mut left = n;
        let mut out = Vec::new();
        for &(len, Reverse(start)) in self.by_len.iter().rev() {
            let take = len.min(left);
            out.push(Extent { start, len: take });
            left -= take;
            if left == 0 {
                break;
            }
        }
        out.sort_by_key(|e| e.start);
        Some(out)
    }

    fn insert_run(&mut self, start: u64, len: u64) {
        if len > 0 {
            self.by_start.insert(start, len);
            self.by_len.insert((len, Reverse(start)));
            self.free += len;
        }
    }

    fn remove_run(&mut self, start: u64, len: u64) {
        self.by_start.remove(&start);
        self.by_len.remove(&(len, Reverse(start)));
        self.free -= len;
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
    fn free_run_at_is_the_run_starting_there() {
        let mut a = Allocator::new(100, 20);
        a.set(Extent { start: 103, len: 2 }, true); // free: 100-102, 105-119
        assert_eq!(a.free_run_at(105), 15);
        assert_eq!(a.free_run_at(100), 3);
        assert_eq!(a.free_run_at(103), 0, "used");
        assert_eq!(a.free_run_at(106), 0, "inside a run starting earlier");
    }

    #[test]
    fn equal_runs_are_taken_by_lower_start() {
        let mut a = Allocator::new(0, 20);
        // free: 0-3 (4), 6-9 (4), 12-15 (4), 18-19 (2)
        for s in [4, 10, 16] {
            a.set(Extent { start: s, len: 2 }, true);
        }
        assert_eq!(
            a.choose(9),
            Some(vec![
                Extent { start: 0, len: 4 },
                Extent { start: 6, len: 4 },
                Extent { start: 12, len: 1 }
            ])
        );
    }

    #[test]
    fn freeing_merges_with_neighbours_and_marking_splits() {
        let mut a = Allocator::new(10, 30);
        a.set(Extent { start: 10, len: 30 }, true);
        assert_eq!(a.free_runs(), vec![]);
        a.set(Extent { start: 15, len: 5 }, false);
        a.set(Extent { start: 25, len: 5 }, false);
        a.set(Extent { start: 20, len: 5 }, false); // joins both neighbours
        assert_eq!(a.free_runs(), vec![Extent { start: 15, len: 15 }]);
        a.set(Extent { start: 18, len: 2 }, true); // splits it
        assert_eq!(
            a.free_runs(),
            vec![Extent { start: 15, len: 3 }, Extent { start: 20, len: 10 }]
        );
        // Freeing blocks of which some are free already counts each once.
        a.set(Extent { start: 12, len: 20 }, false);
        assert_eq!(a.free_runs(), vec![Extent { start: 12, len: 20 }]);
        assert_eq!(a.free_blocks(), 20);
        // Marking blocks of which some are used already.
        a.set(Extent { start: 30, len: 10 }, true);
        a.set(Extent { start: 10, len: 4 }, true);
        assert_eq!(a.free_runs(), vec![Extent { start: 14, len: 16 }]);
        assert_eq!(a.free_blocks(), 16);
        assert_eq!(a.by_len.len(), a.by_start.len());
    }

    #[test]
    fn matches_a_block_by_block_map() {
        // A tiny reference: one bool per block. Random marks and frees, then every query.
        let mut a = Allocator::new(7, 64);
        let mut m = [true; 64];
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..2000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let s = x % 64;
            let len = (x >> 8) % (64 - s) + 1;
            let used = (x >> 20) % 2 == 0;
            a.set(Extent { start: 7 + s, len }, used);
            m[s as usize..(s + len) as usize].fill(!used);
            let runs: Vec<Extent> = {
                let mut r = Vec::new();
                let mut i = 0;
                while i < 64 {
                    if m[i] {
                        let j = (i..64).find(|&j| !m[j]).unwrap_or(64);
                        r.push(Extent {
                            start: 7 + i as u64,
                            len: (j - i) as u64,
                        });
                        i = j;
                    } else {
                        i += 1;
                    }
                }
                r
            };
            assert_eq!(a.free_runs(), runs);
            // The placement policy as the block-by-block allocator had it.
            let n = (x >> 44) % 40;
            let want = if n == 0 {
                Some(vec![])
            } else if let Some(r) = runs.iter().find(|r| r.len >= n) {
                Some(vec![Extent {
                    start: r.start,
                    len: n,
                }])
            } else if runs.iter().map(|r| r.len).sum::<u64>() < n {
                None
            } else {
                let mut by_size = runs.clone();
                by_size.sort_by(|a, b| b.len.cmp(&a.len).then(a.start.cmp(&b.start)));
                let mut left = n;
                let mut out = Vec::new();
                for r in by_size {
                    if left == 0 {
                        break;
                    }
                    out.push(Extent {
                        start: r.start,
                        len: r.len.min(left),
                    });
                    left -= r.len.min(left);
                }
                out.sort_by_key(|e| e.start);
                Some(out)
            };
            assert_eq!(a.choose(n), want, "choose({n}) from {runs:?}");
            assert_eq!(a.free_blocks(), m.iter().filter(|b| **b).count() as u64);
            let q = Extent {
                start: 7 + (x >> 30) % 64,
                len: (x >> 40) % 8,
            };
            let want =
                q.start >= 7 && q.end() <= 71 && (q.start..q.end()).all(|b| m[(b - 7) as usize]);
            assert_eq!(a.is_free(q), want, "{q:?}");
        }
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
        // Listed in the other order, and inside one file.
        let err = Allocator::from_files(0, 100, &[f("z", 24, 3), f("x", 10, 5), f("y", 20, 5)])
            .unwrap_err();
        assert_eq!(
            err,
            Corruption::OverlappingExtents {
                a: "y".into(),
                b: "z".into(),
                block: 24
            }
        );
        let mut w = f("w", 30, 10);
        w.extents.push(Extent { start: 39, len: 2 });
        let err = Allocator::from_files(0, 100, &[w]).unwrap_err();
        assert_eq!(
            err,
            Corruption::OverlappingExtents {
                a: "w".into(),
                b: "w".into(),
                block: 39
            }
        );
        // An extent inside a long one that an earlier, shorter one follows.
        let mut long = f("long", 10, 50);
        long.extents.push(Extent { start: 70, len: 1 });
        let err =
            Allocator::from_files(0, 100, &[long, f("short", 20, 2), f("in", 40, 1)]).unwrap_err();
        assert_eq!(
            err,
            Corruption::OverlappingExtents {
                a: "long".into(),
                b: "short".into(),
                block: 20
            }
        );
    }

    #[test]
    fn from_files_gives_the_gaps() {
        let f = |name: &str, ext: &[(u64, u64)]| FileEntry {
            name: name.into(),
            size: 0,
            extents: ext
                .iter()
                .map(|&(start, len)| Extent { start, len })
                .collect(),
        };
        let a = Allocator::from_files(
            100,
            50,
            &[f("a", &[(120, 5), (100, 3)]), f("b", &[(125, 5), (145, 5)])],
        )
        .unwrap();
        assert_eq!(
            a.free_runs(),
            vec![
                Extent {
                    start: 103,
                    len: 17
                },
                Extent {
                    start: 130,
                    len: 15
                }
            ]
        );
        assert_eq!(a.free_blocks(), 32);
    }
}
