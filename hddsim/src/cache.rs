//! The drive's cache as sets of sector ranges: dirty (written by the host, not yet on the
//! media) and clean (the same as on the media: destaged writes, read data, read-ahead).
//!
//! Sectors are 512-byte units. Dirty and clean ranges never overlap. Clean data is evicted
//! oldest first (the order in which it became clean) when room is needed; dirty data only
//! leaves by being destaged.

use std::collections::{BTreeMap, VecDeque};

/// Disjoint half-open ranges `[start, end)` with a value each; neighbours with equal values
/// are merged.
#[derive(Debug, Clone, Default)]
pub(crate) struct RangeMap<V: Copy + PartialEq> {
    map: BTreeMap<u64, (u64, V)>,
    total: u64,
}

impl<V: Copy + PartialEq> RangeMap<V> {
    /// Sectors held.
    pub(crate) fn total(&self) -> u64 {
        self.total
    }

    /// The pieces overlapping `[a, b)`, clipped to it, in order.
    pub(crate) fn overlaps(&self, a: u64, b: u64) -> Vec<(u64, u64, V)> {
        let mut out = Vec::new();
        if a >= b {
            return out;
        }
        for (&s, &(e, v)) in self.map.range(..b).rev() {
            if e <= a {
                break;
            }
            out.push((s.max(a), e.min(b), v));
        }
        out.reverse();
        out
    }

    /// Sectors of `[a, b)` held.
    pub(crate) fn count_in(&self, a: u64, b: u64) -> u64 {
        self.overlaps(a, b).iter().map(|&(s, e, _)| e - s).sum()
    }

    /// Removes `[a, b)`; returns the pieces removed.
    pub(crate) fn remove(&mut self, a: u64, b: u64) -> Vec<(u64, u64, V)> {
        let pieces = self.overlaps(a, b);
        for &(s, e, _) in &pieces {
            // The stored range containing `s`.
            let (&start, &(end, v)) = self
                .map
                .range(..=s)
                .next_back()
                .expect("an overlapping range exists");
            self.map.remove(&start);
            if start < s {
                self.map.insert(start, (s, v));
            }
            if e < end {
                self.map.insert(e, (end, v));
            }
            self.total -= e - s;
        }
        pieces
    }

    /// Inserts `[a, b)` with `v`; it must not overlap anything held.
    pub(crate) fn insert(&mut self, a: u64, b: u64, v: V) {
        if a >= b {
            return;
        }
        debug_assert!(self.overlaps(a, b).is_empty());
        let mut start = a;
        let mut end = b;
        if let Some((&ps, &(pe, pv))) = self.map.range(..a).next_back() {
            if pe == a && pv == v {
                self.map.remove(&ps);
                start = ps;
            }
        }
        if let Some(&(ne, nv)) = self.map.get(&b) {
            if nv == v {
                self.map.remove(&b);
                end = ne;
            }
        }
        self.map.insert(start, (end, v));
        self.total += b - a;
    }

    /// The first range starting at or after `pos`.
    pub(crate) fn first_from(&self, pos: u64) -> Option<(u64, u64)> {
        self.map.range(pos..).next().map(|(&s, &(e, _))| (s, e))
    }

    /// The stored ranges (unclipped) overlapping `[a, b)`, in order.
    pub(crate) fn ranges_overlapping(&self, a: u64, b: u64) -> Vec<(u64, u64)> {
        let mut out: Vec<(u64, u64)> = self
            .map
            .range(..b)
            .rev()
            .take_while(|(_, &(e, _))| e > a)
            .map(|(&s, &(e, _))| (s, e))
            .collect();
        out.reverse();
        out
    }

    /// The stored range containing sector `s`.
    pub(crate) fn range_containing(&self, s: u64) -> Option<(u64, u64)> {
        self.map
            .range(..=s)
            .next_back()
            .filter(|(_, &(e, _))| e > s)
            .map(|(&st, &(e, _))| (st, e))
    }

    /// The first range.
    pub(crate) fn first(&self) -> Option<(u64, u64)> {
        self.map.iter().next().map(|(&s, &(e, _))| (s, e))
    }
}

/// The cache.
#[derive(Debug, Clone)]
pub(crate) struct Cache {
    /// Capacity in sectors.
    cap: u64,
    dirty: RangeMap<()>,
    /// Clean ranges with the stamp of when they became clean.
    clean: RangeMap<u64>,
    /// Clean ranges oldest first, for eviction (entries whose data is gone are skipped).
    fifo: VecDeque<(u64, u64, u64)>,
    next_stamp: u64,
    /// Ranges whose state changed since [`Cache::take_touched`] was last called (only while
    /// `track` is on).
    touched: Vec<(u64, u64)>,
    track: bool,
}

impl Cache {
    pub(crate) fn new(cap_sectors: u64) -> Cache {
        Cache {
            cap: cap_sectors,
            dirty: RangeMap::default(),
            clean: RangeMap::default(),
            fifo: VecDeque::new(),
            next_stamp: 0,
            touched: Vec::new(),
            track: true,
        }
    }

    pub(crate) fn capacity(&self) -> u64 {
        self.cap
    }

    /// Dirty sectors.
    pub(crate) fn dirty(&self) -> u64 {
        self.dirty.total()
    }

    /// Clean sectors.
    pub(crate) fn clean(&self) -> u64 {
        self.clean.total()
    }

    /// Is every sector of `[a, b)` in the cache (dirty or clean)?
    pub(crate) fn covered(&self, a: u64, b: u64) -> bool {
        self.dirty.count_in(a, b) + self.clean.count_in(a, b) == b - a
    }

    /// The cached ranges (dirty or clean) overlapping `[a, b)`, sorted by start.
    fn held(&self, a: u64, b: u64) -> Vec<(u64, u64)> {
        let mut held: Vec<(u64, u64)> = self
            .dirty
            .overlaps(a, b)
            .into_iter()
            .map(|(s, e, _)| (s, e))
            .chain(
                self.clean
                    .overlaps(a, b)
                    .into_iter()
                    .map(|(s, e, _)| (s, e)),
            )
            .collect();
        held.sort_unstable();
        held
    }

    /// The span from the first to the last sector of `[a, b)` that is not in the cache.
    pub(crate) fn uncovered_span(&self, a: u64, b: u64) -> Option<(u64, u64)> {
        let held = self.held(a, b);
        // Walk the holes.
        let mut first = None;
        let mut last = None;
        let mut pos = a;
        for (s, e) in held {
            if s > pos {
                first.get_or_insert(pos);
                last = Some(s);
            }
            pos = pos.max(e);
        }
        if pos < b {
            first.get_or_insert(pos);
            last = Some(b);
        }
        Some((first?, last?))
    }

    /// The next dirty run to destage from the head at `head`, elevator order (C-SCAN): the
    /// first dirty range starting at or after `head`, else the lowest; with the dirty ranges
    /// right after it that it merges with.
    pub(crate) fn next_dirty_run(&self, head: u64) -> Option<(u64, u64)> {
        self.dirty.first_from(head).or_else(|| self.dirty.first())
    }

    /// The first dirty run starting at or after `pos`.
    pub(crate) fn dirty_run_from(&self, pos: u64) -> Option<(u64, u64)> {
        self.dirty.first_from(pos)
    }

    /// Dirty sectors of `[a, b)`.
    pub(crate) fn dirty_in(&self, a: u64, b: u64) -> u64 {
        self.dirty.count_in(a, b)
    }

    /// The span from the first to the last dirty sector of `[a, b)`.
    pub(crate) fn dirty_span(&self, a: u64, b: u64) -> Option<(u64, u64)> {
        let pieces = self.dirty.overlaps(a, b);
        Some((pieces.first()?.0, pieces.last()?.1))
    }

    /// The dirty run (maximal range of contiguous dirty sectors) holding sector `s`.
    pub(crate) fn dirty_run_at(&self, s: u64) -> Option<(u64, u64)> {
        self.dirty.range_containing(s)
    }

    /// Dirty sectors contiguous up to `a`: the dirty data of the sequential stream a write at
    /// `a` continues.
    pub(crate) fn dirty_run_ending_at(&self, a: u64) -> u64 {
        match a
            .checked_sub(1)
            .and_then(|s| self.dirty.range_containing(s))
        {
            Some((s, _)) => a - s,
            None => 0,
        }
    }

    /// Clears the clean segments a write of `[a, b)` overlaps: every clean range that became
    /// clean together (one destage, read or look-ahead: the same stamp) and overlaps `[a, b)`
    /// is removed whole. Returns the ranges removed.
    pub(crate) fn clear_clean_segments(&mut self, a: u64, b: u64) -> Vec<(u64, u64)> {
        let ranges = self.clean.ranges_overlapping(a, b);
        for &(s, e) in &ranges {
            self.clean.remove(s, e);
            self.touch((s, e));
        }
        ranges
    }

    /// The dirty runs (unclipped) overlapping `[a, b)`.
    #[cfg(test)]
    pub(crate) fn dirty_runs_overlapping(&self, a: u64, b: u64) -> Vec<(u64, u64)> {
        self.dirty.ranges_overlapping(a, b)
    }

    /// `[a, b)` is written by the host: dirty from now on.
    pub(crate) fn write(&mut self, a: u64, b: u64) {
        self.touch((a, b));
        self.clean.remove(a, b);
        self.dirty.remove(a, b);
        self.dirty.insert(a, b, ());
    }

    /// Dirty sectors of `[a, b)` were written to the media: clean from now on. Returns how
    /// many there were.
    pub(crate) fn destaged(&mut self, a: u64, b: u64) -> u64 {
        let pieces = self.dirty.remove(a, b);
        if pieces.is_empty() {
            return 0;
        }
        self.touch((a, b));
        let stamp = self.stamp();
        let mut n = 0;
        for (s, e, ()) in pieces {
            self.clean.insert(s, e, stamp);
            n += e - s;
        }
        self.push_fifo(a, b, stamp);
        n
    }

    /// The dirty pieces of `[a, b)`, clipped to it, in order.
    pub(crate) fn dirty_pieces(&self, a: u64, b: u64) -> Vec<(u64, u64)> {
        self.dirty
            .overlaps(a, b)
            .into_iter()
            .map(|(s, e, ())| (s, e))
            .collect()
    }

    /// `[a, b)` was read from the media: the sectors not in the cache become clean, as room
    /// allows (oldest clean data is evicted for it; dirty data never is).
    pub(crate) fn fill(&mut self, a: u64, b: u64) {
        if a >= b {
            return;
        }
        let need = (b - a) - self.dirty.count_in(a, b) - self.clean.count_in(a, b);
        if need == 0 {
            return;
        }
        self.make_room(need, Some((a, b)));
        if self.dirty() + self.clean() + need > self.cap {
            return;
        }
        self.touch((a, b));
        let stamp = self.stamp();
        let held = self.held(a, b);
        let mut pos = a;
        for (s, e) in held {
            if s > pos {
                self.clean.insert(pos, s, stamp);
            }
            pos = pos.max(e);
        }
        if pos < b {
            self.clean.insert(pos, b, stamp);
        }
        self.push_fifo(a, b, stamp);
    }

    /// Evicts clean data, oldest first, until `need` more sectors fit (or nothing clean is
    /// left outside `keep`).
    pub(crate) fn make_room(&mut self, need: u64, keep: Option<(u64, u64)>) {
        while self.dirty() + self.clean() + need > self.cap {
            let Some((a, b, stamp)) = self.fifo.pop_front() else {
                return;
            };
            for (s, e, v) in self.clean.overlaps(a, b) {
                if v != stamp {
                    continue;
                }
                match keep {
                    Some((ka, kb)) if s < kb && e > ka => {
                        // Evict only the parts outside `keep`.
                        if s < ka {
                            self.clean.remove(s, ka);
                        }
                        if e > kb {
                            self.clean.remove(kb, e);
                        }
                        self.touch((s, e));
                    }
                    _ => {
                        self.clean.remove(s, e);
                        self.touch((s, e));
                    }
                }
            }
        }
    }

    /// Sectors `[a, b)` would add to the cache when written (those not held at all).
    pub(crate) fn new_sectors(&self, a: u64, b: u64) -> u64 {
        (b - a) - self.dirty.count_in(a, b) - self.clean.count_in(a, b)
    }

    /// Whether changed ranges are recorded for [`Cache::take_touched`] (on by default; off
    /// when nobody takes them, so that they do not pile up).
    pub(crate) fn track_touched(&mut self, on: bool) {
        self.track = on;
        if !on {
            self.touched = Vec::new();
        }
    }

    fn touch(&mut self, range: (u64, u64)) {
        if self.track {
            self.touched.push(range);
        }
    }

    /// Records clean data for eviction. Entries whose data is gone (overwritten, cleared) are
    /// dropped once they outnumber the clean ranges: without cache pressure nothing else
    /// pops them, and a write that clears segments keeps the cache from ever filling.
    fn push_fifo(&mut self, a: u64, b: u64, stamp: u64) {
        self.fifo.push_back((a, b, stamp));
        if self.fifo.len() > 2 * self.clean.map.len() + 1024 {
            let clean = &self.clean;
            self.fifo
                .retain(|&(a, b, stamp)| clean.overlaps(a, b).iter().any(|&(_, _, v)| v == stamp));
        }
    }

    /// Entries waiting for eviction, and the clean ranges they can refer to.
    #[cfg(test)]
    pub(crate) fn fifo_and_clean_ranges(&self) -> (usize, usize) {
        (self.fifo.len(), self.clean.map.len())
    }

    /// Ranges recorded and not yet taken.
    #[cfg(test)]
    pub(crate) fn touched_len(&self) -> usize {
        self.touched.len()
    }

    /// The ranges whose state (dirty, clean, absent) changed since the last call.
    pub(crate) fn take_touched(&mut self) -> Vec<(u64, u64)> {
        std::mem::take(&mut self.touched)
    }

    fn stamp(&mut self) -> u64 {
        self.next_stamp += 1;
        self.next_stamp
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_map() {
        let mut m: RangeMap<u8> = RangeMap::default();
        m.insert(10, 20, 1);
        m.insert(20, 30, 1);
        m.insert(30, 40, 2);
        assert_eq!(m.overlaps(0, 100), [(10, 30, 1), (30, 40, 2)]);
        assert_eq!(m.total(), 30);
        assert_eq!(m.remove(15, 35), [(15, 30, 1), (30, 35, 2)]);
        assert_eq!(m.overlaps(0, 100), [(10, 15, 1), (35, 40, 2)]);
        assert_eq!(m.total(), 10);
        assert_eq!(m.count_in(12, 38), 6);
        assert_eq!(m.first_from(11), Some((35, 40)));
        m.insert(15, 35, 1);
        assert_eq!(m.overlaps(0, 100), [(10, 35, 1), (35, 40, 2)]);
    }

    #[test]
    fn cache_states() {
        let mut c = Cache::new(100);
        c.write(0, 10);
        c.write(10, 20);
        assert_eq!(c.next_dirty_run(0), Some((0, 20)));
        assert_eq!(c.next_dirty_run(5), Some((0, 20)), "wraps to the lowest");
        c.destaged(0, 8);
        assert_eq!((c.dirty(), c.clean()), (12, 8));
        assert!(c.covered(0, 20) && !c.covered(0, 21));
        assert_eq!(c.uncovered_span(0, 30), Some((20, 30)));
        assert_eq!(c.uncovered_span(0, 20), None);
        c.fill(30, 40);
        assert_eq!(c.uncovered_span(0, 50), Some((20, 50)));
        // Re-writing clean data makes it dirty without using more room.
        c.write(0, 4);
        assert_eq!((c.dirty(), c.clean()), (16, 14));
        // Filling never overwrites dirty data and evicts the oldest clean data for room.
        c.fill(0, 90);
        assert_eq!(c.dirty() + c.clean(), 90);
        c.fill(90, 120);
        assert!(c.dirty() + c.clean() <= 100);
        assert_eq!(c.dirty(), 16);
        assert!(c.covered(90, 120));
    }

    #[test]
    fn clearing_removes_whole_clean_segments() {
        let mut c = Cache::new(1000);
        // Two segments: one destage run [0, 520), one read [600, 700).
        c.write(0, 520);
        c.destaged(0, 520);
        c.fill(600, 700);
        c.write(800, 810);
        assert_eq!(c.dirty_run_ending_at(810), 10);
        assert_eq!(c.dirty_run_ending_at(805), 5);
        assert_eq!(c.dirty_run_ending_at(800), 0);
        assert_eq!(c.dirty_run_at(805), Some((800, 810)));
        assert_eq!(c.dirty_span(0, 1000), Some((800, 810)));
        // A write into the last physical sector of the first one clears all of it, and only
        // it.
        assert_eq!(c.clear_clean_segments(513, 560), [(0, 520)]);
        assert_eq!(c.clean(), 100);
        assert!(!c.covered(512, 513));
        assert!(c.covered(600, 700));
        // A write touching no clean data clears nothing.
        assert!(c.clear_clean_segments(700, 800).is_empty());
        assert_eq!(c.clean(), 100);
    }
}
