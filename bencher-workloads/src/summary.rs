//! What a list of operations amounts to: counts, bytes, and the live set over time.
//!
//! Computed from the operations alone (replaying them on an id → size map), so it holds for
//! any `&[Op]`, not only the generator's.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::generate::{Op, OpKind};

/// Operation counts. `put` counts `New` and `OverWrite`; `embed` counts `Embed`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct OpCounts {
    /// `New` + `OverWrite`.
    pub put: u64,
    /// `Embed`.
    pub embed: u64,
    /// `Get`, `Get(l, r)`.
    pub get: u64,
    /// `Delete`, `Delete(l, r)`.
    pub delete: u64,
    /// `DeleteRange`.
    pub delete_range: u64,
    /// `Sync`, written or inserted.
    pub sync: u64,
}

/// The summary of an operation list.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// Counts by kind.
    pub operations: OpCounts,
    /// All operations.
    pub total_operations: u64,
    /// Puts of a fresh id (`New`).
    pub new_puts: u64,
    /// Puts over a live id (`OverWrite`).
    pub overwrites: u64,
    /// Bytes of `New` and `OverWrite`.
    pub put_bytes: u64,
    /// Bytes of `Embed`.
    pub embed_bytes: u64,
    /// Bytes read by `Get`.
    pub get_bytes: u64,
    /// The largest total size of the live lumps at any point.
    pub peak_live_bytes: u64,
    /// The largest number of live lumps at any point.
    pub peak_live_lumps: u64,
    /// Live lumps at the end.
    pub final_live_lumps: u64,
    /// Their total size.
    pub final_live_bytes: u64,
}

impl Summary {
    /// Replays `ops`.
    pub fn of(ops: &[Op]) -> Summary {
        let mut s = Summary::default();
        let mut live: BTreeMap<u64, u32> = BTreeMap::new();
        let mut live_bytes: u64 = 0;
        for op in ops {
            s.total_operations += 1;
            match *op {
                Op::Put { id, size, .. } => {
                    let size64 = u64::from(size);
                    match op.kind() {
                        OpKind::Embed => {
                            s.operations.embed += 1;
                            s.embed_bytes = s.embed_bytes.saturating_add(size64);
                        }
                        kind => {
                            s.operations.put += 1;
                            s.put_bytes = s.put_bytes.saturating_add(size64);
                            if kind == OpKind::OverWrite {
                                s.overwrites += 1;
                            } else {
                                s.new_puts += 1;
                            }
                        }
                    }
                    if let Some(old) = live.insert(id, size) {
                        live_bytes = live_bytes.saturating_sub(u64::from(old));
                    }
                    live_bytes = live_bytes.saturating_add(size64);
                }
                Op::Get { size, .. } => {
                    s.operations.get += 1;
                    s.get_bytes = s.get_bytes.saturating_add(u64::from(size));
                }
                Op::Delete { id } => {
                    s.operations.delete += 1;
                    if let Some(old) = live.remove(&id) {
                        live_bytes = live_bytes.saturating_sub(u64::from(old));
                    }
                }
                Op::DeleteRange { start, end } => {
                    s.operations.delete_range += 1;
                    if start < end {
                        let ids: Vec<u64> = live.range(start..end).map(|(&id, _)| id).collect();
                        for id in ids {
                            if let Some(old) = live.remove(&id) {
                                live_bytes = live_bytes.saturating_sub(u64::from(old));
                            }
                        }
                    }
                }
                Op::Sync => s.operations.sync += 1,
            }
            s.peak_live_bytes = s.peak_live_bytes.max(live_bytes);
            s.peak_live_lumps = s.peak_live_lumps.max(live.len() as u64);
        }
        s.final_live_lumps = live.len() as u64;
        s.final_live_bytes = live_bytes;
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(id: u64, size: u32) -> Op {
        Op::Put {
            id,
            size,
            embedded: false,
            overwrite: false,
        }
    }

    #[test]
    fn replay() {
        let ops = [
            put(1, 100),
            put(2, 200),
            Op::Put {
                id: 3,
                size: 10,
                embedded: true,
                overwrite: false,
            },
            Op::Put {
                id: 1,
                size: 500,
                embedded: false,
                overwrite: true,
            },
            Op::Get { id: 1, size: 500 },
            Op::Delete { id: 2 },
            Op::DeleteRange { start: 1, end: 3 },
            Op::DeleteRange { start: 3, end: 3 },
            Op::Sync,
        ];
        let s = Summary::of(&ops);
        assert_eq!(
            s.operations,
            OpCounts {
                put: 3,
                embed: 1,
                get: 1,
                delete: 1,
                delete_range: 2,
                sync: 1
            }
        );
        assert_eq!(s.total_operations, 9);
        assert_eq!((s.new_puts, s.overwrites), (2, 1));
        assert_eq!((s.put_bytes, s.embed_bytes, s.get_bytes), (800, 10, 500));
        // 100+200+10 = 310, then the overwrite: 500+200+10 = 710.
        assert_eq!(s.peak_live_bytes, 710);
        assert_eq!(s.peak_live_lumps, 3);
        assert_eq!((s.final_live_lumps, s.final_live_bytes), (1, 10));
    }
}
