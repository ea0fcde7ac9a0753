//! What each lump must hold after a crash: the op-log of `minfs-bench run`, placed among the
//! write log's flushes.
//!
//! A `journal_sync` acknowledges every put and delete issued before it once it returns. The
//! flush behind it is found by **position**: the last flush the drive accepted before the
//! sync returned (its `accepted_ns` ≤ the sync's `end_ns`, both CLOCK_MONOTONIC). Accepting
//! happens before the drive replies and the reply before `fdatasync` returns, so that flush
//! is the sync's own or a later one. (A flush's *reply* time is no safe bound: taken on the
//! thread that replies, it need not precede `fdatasync`'s return in the application, and a
//! sync whose flush looked unreplied would blame the target for losses it did not have.)
//!
//! Crash point `i` is the state after flush `i` (from 0) completed: every write accepted
//! before it is on the media, writes after it may or may not be. An operation acknowledged by
//! flush `j` must show at crash points `i ≥ j`.

use std::collections::{BTreeMap, BTreeSet};

/// What an operation left a lump as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LumpState {
    /// Absent (deleted, or never put).
    Absent,
    /// Present with the content of this version and length.
    Present {
        /// Its content version (bencher_workloads::run::content).
        version: u32,
        /// Its length in bytes.
        len: u64,
    },
}

/// One operation on one lump.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LumpOp {
    /// Its place in the op-log.
    pub seq: u64,
    /// What it left the lump as.
    pub after: LumpState,
    /// The flush (index among the flushes) that acknowledged it, if any sync did.
    pub acked_by: Option<usize>,
}

/// How acknowledgements are bound to flushes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// The last flush accepted before the sync returned (correct).
    SyncReturn,
    /// Deliberately wrong, to show that the checker can fail: an operation counts as
    /// acknowledged by the last flush accepted before the operation *started*, i.e. before
    /// its writes were even issued.
    BeforeOpStart,
}

/// One op-log line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpLine {
    /// seq.
    pub seq: u64,
    /// kind.
    pub kind: String,
    /// id field (a number, `A..B`, or `-`).
    pub id: String,
    /// bytes.
    pub bytes: u64,
    /// start (CLOCK_MONOTONIC ns).
    pub start_ns: u64,
    /// end (CLOCK_MONOTONIC ns).
    pub end_ns: u64,
}

/// Parses an op-log (`minfs-bench run --op-log`); an error names the line.
pub fn parse_oplog(text: &str) -> Result<Vec<OpLine>, String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let bad = |why: &str| format!("op-log line {}: {why}: `{line}`", i + 1);
        let f: Vec<&str> = line.split('\t').collect();
        if f.len() != 6 {
            return Err(bad("not 6 tab-separated fields"));
        }
        let n = |k: usize| f[k].parse::<u64>().map_err(|_| bad("not a number"));
        out.push(OpLine {
            seq: n(0)?,
            kind: f[1].to_string(),
            id: f[2].to_string(),
            bytes: n(3)?,
            start_ns: n(4)?,
            end_ns: n(5)?,
        });
    }
    Ok(out)
}

/// The index of the last flush accepted at or before `t` (flush times ascending).
pub fn last_flush_at_or_before(flush_ns: &[u64], t: u64) -> Option<usize> {
    flush_ns.partition_point(|&f| f <= t).checked_sub(1)
}

/// Every lump's operations, in order, with the flush that acknowledged each.
#[derive(Debug, Clone, Default)]
pub struct Expectations {
    /// id → its operations.
    pub lumps: BTreeMap<u64, Vec<LumpOp>>,
    /// The flush that acknowledged the last sync (for reporting).
    pub syncs_acked: usize,
}

impl Expectations {
    /// Builds the expectations from an op-log and the write log's flush times.
    pub fn build(ops: &[OpLine], flush_ns: &[u64], bound: Bound) -> Result<Self, String> {
        let mut lumps: BTreeMap<u64, Vec<LumpOp>> = BTreeMap::new();
        let mut versions: BTreeMap<u64, u32> = BTreeMap::new();
        let mut live: BTreeSet<u64> = BTreeSet::new();
        // Operations not yet acknowledged: (id, index in its list).
        let mut pending: Vec<(u64, usize)> = Vec::new();
        let mut syncs_acked = 0;
        let parse_id = |o: &OpLine| {
            o.id.parse::<u64>()
                .map_err(|_| format!("op-log seq {}: id `{}` is not a number", o.seq, o.id))
        };
        for o in ops {
            let mut push = |id: u64, after: LumpState, pending: &mut Vec<(u64, usize)>| {
                let list = lumps.entry(id).or_default();
                let acked_by = match bound {
                    Bound::SyncReturn => None,
                    Bound::BeforeOpStart => last_flush_at_or_before(flush_ns, o.start_ns),
                };
                list.push(LumpOp {
                    seq: o.seq,
                    after,
                    acked_by,
                });
                if bound == Bound::SyncReturn {
                    pending.push((id, list.len() - 1));
                }
            };
            match o.kind.as_str() {
                "new" | "overwrite" | "embed" => {
                    let id = parse_id(o)?;
                    let version = versions.get(&id).map_or(0, |v| v.wrapping_add(1));
                    versions.insert(id, version);
                    live.insert(id);
                    push(
                        id,
                        LumpState::Present {
                            version,
                            len: o.bytes,
                        },
                        &mut pending,
                    );
                }
                "delete" => {
                    let id = parse_id(o)?;
                    live.remove(&id);
                    push(id, LumpState::Absent, &mut pending);
                }
                "delete_range" => {
                    let (a, b) = o
                        .id
                        .split_once("..")
                        .and_then(|(a, b)| Some((a.parse::<u64>().ok()?, b.parse::<u64>().ok()?)))
                        .ok_or_else(|| format!("op-log seq {}: range `{}`", o.seq, o.id))?;
                    let ids: Vec<u64> = live.range(a..b).copied().collect();
                    for id in ids {
                        live.remove(&id);
                        push(id, LumpState::Absent, &mut pending);
                    }
                }
                "sync" => {
                    if bound == Bound::SyncReturn {
                        let Some(j) = last_flush_at_or_before(flush_ns, o.end_ns) else {
                            return Err(format!(
                                "op-log seq {}: a sync returned at {} ns before the drive \
                                 accepted any flush: the op-log and the write log are not of \
                                 one run, or not on one clock",
                                o.seq, o.end_ns
                            ));
                        };
                        for (id, k) in pending.drain(..) {
                            if let Some(op) = lumps.get_mut(&id).and_then(|l| l.get_mut(k)) {
                                op.acked_by = Some(j);
                            }
                        }
                        syncs_acked += 1;
                    }
                }
                "get" => {}
                other => return Err(format!("op-log seq {}: unknown kind `{other}`", o.seq)),
            }
        }
        Ok(Expectations { lumps, syncs_acked })
    }

    /// Whether any operation is acknowledged at crash point `point`.
    pub fn any_acked_at(&self, point: usize) -> bool {
        self.lumps
            .values()
            .flatten()
            .any(|o| o.acked_by.is_some_and(|j| j <= point))
    }

    /// The state lump `id` must have at crash point `point` (`None`: no operation on it is
    /// acknowledged there, so absent or any state an operation gave it is allowed), and the
    /// states allowed besides (those of later operations, still in flight or not yet issued).
    pub fn at(&self, id: u64, point: usize) -> (Option<LumpState>, Vec<LumpState>) {
        let Some(list) = self.lumps.get(&id) else {
            return (None, Vec::new());
        };
        let last_acked = list
            .iter()
            .rposition(|o| o.acked_by.is_some_and(|j| j <= point));
        let later_from = last_acked.map_or(0, |k| k + 1);
        let required = last_acked.map(|k| list[k].after);
        let later = list[later_from..].iter().map(|o| o.after).collect();
        (required, later)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(seq: u64, kind: &str, id: &str, start: u64, end: u64) -> OpLine {
        OpLine {
            seq,
            kind: kind.into(),
            id: id.into(),
            bytes: if kind == "new" { 4096 } else { 0 },
            start_ns: start,
            end_ns: end,
        }
    }

    #[test]
    fn acknowledged_at_the_flush_accepted_before_the_sync_returned() {
        // put 1, sync (flush 0 accepted at 150, the sync returns at 200), put 2, delete 1,
        // sync (flush 1 at 350, returns 400), put 3 (never synced).
        let ops = [
            line(0, "new", "1", 0, 100),
            line(1, "sync", "-", 100, 200),
            line(2, "new", "2", 200, 250),
            line(3, "delete", "1", 250, 260),
            line(4, "sync", "-", 260, 400),
            line(5, "new", "3", 400, 450),
        ];
        let e = Expectations::build(&ops, &[150, 350], Bound::SyncReturn).unwrap();
        let p = |version| LumpState::Present { version, len: 4096 };
        assert_eq!(e.at(1, 0), (Some(p(0)), vec![LumpState::Absent]));
        assert_eq!(e.at(1, 1), (Some(LumpState::Absent), vec![]));
        assert_eq!(e.at(2, 0), (None, vec![p(0)]));
        assert_eq!(e.at(2, 1), (Some(p(0)), vec![]));
        assert_eq!(e.at(3, 1), (None, vec![p(0)]));
        assert!(e.any_acked_at(0));
        // The wrong bound acknowledges put 2 at flush 0, before it was written.
        let w = Expectations::build(&ops, &[150, 350], Bound::BeforeOpStart).unwrap();
        assert_eq!(w.at(2, 0).0, Some(p(0)));
    }

    /// The bound is by position: a flush accepted before the sync returned acknowledges it,
    /// whenever its reply was sent (a reply time after the sync's return must not make the
    /// sync's own flush look unacknowledged).
    #[test]
    fn flush_accepted_before_return_counts_even_if_its_reply_was_later() {
        let ops = [line(0, "new", "7", 0, 10), line(1, "sync", "-", 10, 100)];
        // Flush accepted at 60 (its modelled reply, say, at 100.004 µs): acknowledged by it.
        let e = Expectations::build(&ops, &[60, 500], Bound::SyncReturn).unwrap();
        assert_eq!(
            e.at(7, 0).0,
            Some(LumpState::Present {
                version: 0,
                len: 4096
            })
        );
        // A sync returning at exactly the flush's accept time is still bound to it.
        assert_eq!(last_flush_at_or_before(&[60, 500], 60), Some(0));
        assert_eq!(last_flush_at_or_before(&[60, 500], 59), None);
    }

    #[test]
    fn versions_and_ranges() {
        let ops = [
            line(0, "new", "1", 0, 1),
            line(1, "new", "2", 1, 2),
            line(2, "overwrite", "1", 2, 3),
            line(3, "delete_range", "0..2", 3, 4),
            line(4, "sync", "-", 4, 10),
        ];
        let e = Expectations::build(&ops, &[5], Bound::SyncReturn).unwrap();
        assert_eq!(e.at(1, 0).0, Some(LumpState::Absent));
        assert_eq!(
            e.at(2, 0).0,
            Some(LumpState::Present {
                version: 0,
                len: 4096
            })
        );
        assert_eq!(e.lumps[&1].len(), 3);
        // A sync before any flush: the logs do not belong together.
        let err = Expectations::build(&ops, &[50], Bound::SyncReturn).unwrap_err();
        assert!(err.contains("not of one run"), "{err}");
        assert!(parse_oplog("0\tnew\t1\t5\t1")
            .unwrap_err()
            .contains("line 1"));
    }
}
