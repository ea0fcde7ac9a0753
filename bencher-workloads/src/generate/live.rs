//! The live list: live lumps with their sizes, oldest first.
//!
//! A sequence supporting append, and read / update / remove at a position, each in
//! O(log n): entries stay in an append-only array and a Fenwick tree counts the ones still
//! live, so the k-th live entry is found by a binary descent over the tree. (A plain `Vec`
//! with `remove` is O(n) per delete, which a churn workload of 10⁵–10⁶ live lumps would
//! feel.)

/// The live list.
#[derive(Debug, Clone, Default)]
pub struct LiveList {
    /// Every entry ever pushed: (id, size).
    entries: Vec<(u64, u32)>,
    alive: Vec<bool>,
    /// Fenwick tree over `alive`, 1-based (`tree[0]` unused).
    tree: Vec<usize>,
    len: usize,
}

fn lowbit(k: usize) -> usize {
    k & k.wrapping_neg()
}

impl LiveList {
    /// An empty list.
    pub fn new() -> Self {
        LiveList {
            entries: Vec::new(),
            alive: Vec::new(),
            tree: vec![0],
            len: 0,
        }
    }

    /// Number of live lumps.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no lump is live.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Live entries among the first `k` slots.
    fn prefix(&self, mut k: usize) -> usize {
        let mut sum = 0;
        while k > 0 {
            sum += self.tree[k];
            k -= lowbit(k);
        }
        sum
    }

    /// Appends a lump (the newest).
    pub fn push(&mut self, id: u64, size: u32) {
        let n = self.entries.len() + 1;
        // tree[n] counts the live slots in (n - lowbit(n), n]: the new one plus those before.
        let node = 1 + self.prefix(n - 1) - self.prefix(n - lowbit(n));
        self.entries.push((id, size));
        self.alive.push(true);
        self.tree.push(node);
        self.len += 1;
    }

    /// The 1-based slot of the live entry at position `pos` (0 = oldest).
    fn slot(&self, pos: usize) -> Option<usize> {
        if pos >= self.len {
            return None;
        }
        let n = self.entries.len();
        let mut idx = 0;
        let mut rem = pos + 1;
        let mut step = if n == 0 {
            0
        } else {
            1 << (usize::BITS - 1 - n.leading_zeros())
        };
        while step > 0 {
            let next = idx + step;
            if next <= n && self.tree[next] < rem {
                idx = next;
                rem -= self.tree[next];
            }
            step >>= 1;
        }
        Some(idx + 1)
    }

    /// (id, size) of the lump at position `pos` (0 = oldest).
    pub fn get(&self, pos: usize) -> Option<(u64, u32)> {
        self.slot(pos).map(|s| self.entries[s - 1])
    }

    /// Sets the size of the lump at `pos`; returns its id.
    pub fn set_size(&mut self, pos: usize, size: u32) -> Option<u64> {
        let s = self.slot(pos)?;
        self.entries[s - 1].1 = size;
        Some(self.entries[s - 1].0)
    }

    /// Removes the lump at `pos`, keeping the order of the rest; returns (id, size).
    pub fn remove(&mut self, pos: usize) -> Option<(u64, u32)> {
        let s = self.slot(pos)?;
        self.alive[s - 1] = false;
        let mut k = s;
        while k < self.tree.len() {
            self.tree[k] -= 1;
            k += lowbit(k);
        }
        self.len -= 1;
        Some(self.entries[s - 1])
    }

    /// The live lumps, oldest first (O(total pushed); for tests and diagnostics).
    pub fn to_vec(&self) -> Vec<(u64, u32)> {
        self.entries
            .iter()
            .zip(&self.alive)
            .filter(|(_, &a)| a)
            .map(|(e, _)| *e)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn basics() {
        let mut l = LiveList::new();
        assert!(l.is_empty());
        assert_eq!(l.get(0), None);
        assert_eq!(l.remove(0), None);
        for id in 1..=5 {
            l.push(id, id as u32 * 10);
        }
        assert_eq!(l.get(0), Some((1, 10)));
        assert_eq!(l.remove(2), Some((3, 30)));
        assert_eq!(l.get(2), Some((4, 40)));
        assert_eq!(l.set_size(0, 7), Some(1));
        assert_eq!(l.to_vec(), vec![(1, 7), (2, 20), (4, 40), (5, 50)]);
        assert_eq!(l.get(4), None);
    }

    #[derive(Debug, Clone)]
    enum Step {
        Push(u32),
        Remove(usize),
        Set(usize, u32),
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            2 => any::<u32>().prop_map(Step::Push),
            2 => any::<usize>().prop_map(Step::Remove),
            1 => (any::<usize>(), any::<u32>()).prop_map(|(p, s)| Step::Set(p, s)),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        /// Behaves exactly like a `Vec` with `remove`.
        #[test]
        fn matches_a_vec(steps in proptest::collection::vec(step(), 0..300)) {
            let mut live = LiveList::new();
            let mut model: Vec<(u64, u32)> = Vec::new();
            let mut next = 1;
            for s in steps {
                match s {
                    Step::Push(size) => {
                        live.push(next, size);
                        model.push((next, size));
                        next += 1;
                    }
                    Step::Remove(p) if !model.is_empty() => {
                        let p = p % model.len();
                        prop_assert_eq!(live.remove(p), Some(model.remove(p)));
                    }
                    Step::Set(p, size) if !model.is_empty() => {
                        let p = p % model.len();
                        model[p].1 = size;
                        prop_assert_eq!(live.set_size(p, size), Some(model[p].0));
                    }
                    Step::Remove(p) | Step::Set(p, _) => prop_assert_eq!(live.get(p), None),
                }
                prop_assert_eq!(live.len(), model.len());
                for (p, e) in model.iter().enumerate() {
                    prop_assert_eq!(live.get(p), Some(*e));
                }
                prop_assert_eq!(live.get(model.len()), None);
            }
        }
    }
}
