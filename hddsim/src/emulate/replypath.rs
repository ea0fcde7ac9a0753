//! The host's time between the emulator's reply and the kernel's completion, measured online
//! and taken off the reply's wait, so that the kernel sees each request complete when the
//! modelled drive completes it.
//!
//! A worker that waits for a request's modelled completion and then replies is late by the
//! time it takes to wake (the timer's slack, the scheduler) plus the time the reply takes to
//! reach the kernel: the `writev` to `/dev/fuse`, for a read the copy of its data, and the
//! kernel's own bookkeeping until FUSE's `fuse_request_end` tracepoint fires. A real drive's
//! completion reaches the host in microseconds; the emulator's, before this module, 0.15 ms
//! (1 MiB writes) to 0.38 ms (1 MiB reads) later. The host then sends the next request that
//! much later, and the modelled drive, which counts the time between requests as idle time
//! (destaging, reading ahead), got idle time the real drive does not get.
//!
//! [`ReplyPath`] learns that lag per [`Class`] (the operation and its size, by powers of
//! two): for each reply it records the moment it left and, when the kernel's completion of the
//! request is read ([`super::kstamp`]), the lag from that moment to the kernel's completion:
//! for a request a loop device over the drive's file made, that loop device's
//! `block_rq_complete` (where the host's block layer sees it complete, as it would see a real
//! drive's); for others, FUSE's `fuse_request_end`. A reply is then aimed at the modelled
//! completion minus the class's median lag over its last [`WINDOW`] replies
//! ([`ReplyPath::lead`]). The moment a reply left is the one aimed at when its worker waited
//! for it, else (a reply already late, its backing I/O or the host slower than the model) when
//! it was sent: so the estimate does not depend on the lead in use (no feedback loop), and a
//! lead learnt too large, which has every reply of its class sent at once, keeps being
//! measured and corrected. The residual, the kernel's completion minus the modelled one, is
//! kept per class too: what the compensation left (`stats.json`'s `reply_path`).

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use serde::Serialize;

use crate::trace::ReqOp;

/// Replies per class whose lags make the estimate.
pub const WINDOW: usize = 64;
/// Size classes: up to 4 KiB, 8 KiB, …, 8 MiB and more.
const SIZE_CLASSES: usize = 12;
/// Requests whose reply is sent but whose end the kernel has not reported yet, kept at most
/// (ends never read, e.g. a tracing buffer overrun, would pile up); the oldest go first.
const MAX_PENDING: usize = 4096;

/// A request's class: its operation and size (reads and writes by powers of two from 4 KiB;
/// flushes one class), and whether its completion is a block device's (a loop device over
/// the drive's file: [`Key::Block`]) or FUSE's (a program using the file itself).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Class {
    op: u8,
    size: u8,
    block: bool,
}

impl Class {
    /// The class of a request of `op` over `bytes` completed through FUSE.
    pub fn of(op: ReqOp, bytes: u64) -> Class {
        let op = match op {
            ReqOp::Read => 0,
            ReqOp::Write => 1,
            _ => 2,
        };
        if op == 2 {
            return Class {
                op,
                size: 0,
                block: false,
            };
        }
        // ≤ 4 KiB → 0, ≤ 8 KiB → 1, …
        let pages = bytes.div_ceil(4096).max(1);
        let size = (64 - (pages - 1).leading_zeros()).min(SIZE_CLASSES as u32 - 1) as u8;
        Class {
            op,
            size,
            block: false,
        }
    }

    /// The same class completed by a block device ([`Key::Block`]).
    pub fn on_block_device(self) -> Class {
        Class {
            block: true,
            ..self
        }
    }

    fn index(self) -> usize {
        (usize::from(self.block) * 3 + usize::from(self.op)) * SIZE_CLASSES + usize::from(self.size)
    }

    /// `read ≤ 4 KiB`, `write ≤ 1 MiB`, `write > 4 MiB`, `flush`; ` (block)` after it when
    /// completed by a block device.
    pub fn name(self) -> String {
        let name = self.base_name();
        if self.block {
            format!("{name} (block)")
        } else {
            name
        }
    }

    fn base_name(self) -> String {
        let op = match self.op {
            0 => "read",
            1 => "write",
            _ => return "flush".into(),
        };
        let size = 4096u64 << self.size;
        let human = |b: u64| {
            if b >= 1 << 20 {
                format!("{} MiB", b >> 20)
            } else {
                format!("{} KiB", b >> 10)
            }
        };
        if usize::from(self.size) == SIZE_CLASSES - 1 {
            format!("{op} > {}", human(size / 2))
        } else {
            format!("{op} ≤ {}", human(size))
        }
    }
}

/// One class's recent lags and what the compensation left.
#[derive(Debug, Default, Clone)]
struct Lags {
    /// Lags (ns) of the last [`WINDOW`] measured replies: aimed-at moment to kernel end.
    recent: VecDeque<i64>,
    /// Residuals (ns) of the same replies: kernel end minus modelled completion.
    residual: VecDeque<i64>,
    /// The median of `recent`, recomputed at each sample.
    lead_ns: i64,
    /// Replies measured.
    measured: u64,
}

impl Lags {
    fn push(&mut self, lag: i64, residual: i64) {
        for (q, v) in [(&mut self.recent, lag), (&mut self.residual, residual)] {
            if q.len() == WINDOW {
                q.pop_front();
            }
            q.push_back(v);
        }
        self.lead_ns = median(&self.recent).max(0);
        self.measured += 1;
    }
}

fn median(v: &VecDeque<i64>) -> i64 {
    let mut s: Vec<i64> = v.iter().copied().collect();
    if s.is_empty() {
        return 0;
    }
    s.sort_unstable();
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2
    }
}

/// What the kernel's completion of a request is recognised by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Key {
    /// FUSE's `fuse_request_end` of the request with this `unique`.
    Fuse(u64),
    /// `block_rq_complete` of a loop device over the drive's file: (operation as
    /// [`ReqOp`]'s discriminant, first sector, sectors). The request the loop device made
    /// is complete there, after FUSE's end (the loop device's own completion work).
    Block(u8, u64, u64),
}

impl Key {
    /// The block key of a request of `op` at `sector` of `sectors`.
    pub fn block(op: ReqOp, sector: u64, sectors: u64) -> Key {
        Key::Block(op as u8, sector, sectors)
    }
}

/// A reply sent, waiting for the kernel's end.
#[derive(Debug, Clone, Copy)]
struct Sent {
    class: Class,
    /// CLOCK_MONOTONIC ns the worker aimed the reply at.
    aimed_ns: u64,
    /// CLOCK_MONOTONIC ns of the modelled completion.
    modelled_ns: u64,
}

#[derive(Debug, Default)]
struct Inner {
    classes: Vec<Lags>,
    /// Replies measured, those the kernel completed more than [`LATE_NS`] after the modelled
    /// completion, and the sum of every measured reply's lateness (its positive residual).
    measured: u64,
    late: u64,
    late_ns: u64,
    /// Replies registered before they were sent (so before the kernel can end them), by the
    /// key their end will come with. Several requests of one block key may be outstanding
    /// (rewrites of one range): their ends come in order.
    pending: HashMap<Key, VecDeque<Sent>>,
    order: VecDeque<Key>,
}

/// The reply path's lag per class, learnt online (see the module's note).
#[derive(Debug)]
pub struct ReplyPath {
    inner: Mutex<Inner>,
}

impl Default for ReplyPath {
    fn default() -> Self {
        ReplyPath::new()
    }
}

impl ReplyPath {
    /// Nothing learnt yet: every lead is 0.
    pub fn new() -> ReplyPath {
        ReplyPath {
            inner: Mutex::new(Inner {
                classes: vec![Lags::default(); 2 * 3 * SIZE_CLASSES],
                ..Inner::default()
            }),
        }
    }

    /// How much earlier than the modelled completion a reply of `class` is sent (ns): the
    /// median lag of its last replies, 0 before any.
    pub fn lead(&self, class: Class) -> u64 {
        let g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        g.classes[class.index()].lead_ns.max(0) as u64
    }

    /// The reply of the request whose end will come as `key` was aimed at `aimed_ns` for a
    /// modelled completion at `modelled_ns` (CLOCK_MONOTONIC ns) and is about to be sent:
    /// called before the reply, so that the kernel cannot end it first.
    pub fn sent(&self, key: Key, class: Class, aimed_ns: u64, modelled_ns: u64) {
        let mut g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        g.pending.entry(key).or_default().push_back(Sent {
            class,
            aimed_ns,
            modelled_ns,
        });
        g.order.push_back(key);
        while g.order.len() > MAX_PENDING {
            if let Some(k) = g.order.pop_front() {
                if let Some(q) = g.pending.get_mut(&k) {
                    q.pop_front();
                    if q.is_empty() {
                        g.pending.remove(&k);
                    }
                }
            }
        }
    }

    /// The kernel ended the request `key` at `end_ns` (CLOCK_MONOTONIC ns): its lag is
    /// measured if its reply was registered ([`ReplyPath::sent`]); other ends (replies not
    /// waited for, other programs' requests) are ignored.
    pub fn ended(&self, key: Key, end_ns: u64) {
        let mut g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let Some(q) = g.pending.get_mut(&key) else {
            return;
        };
        let sent = q.pop_front();
        if q.is_empty() {
            g.pending.remove(&key);
        }
        if let Some(pos) = g.order.iter().position(|k| *k == key) {
            g.order.remove(pos);
        }
        if let Some(s) = sent {
            record(&mut g, s, end_ns);
        }
    }

    /// What was learnt and what it left, for `stats.json`.
    pub fn stats(&self) -> PathStats {
        let g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        PathStats {
            measured: g.measured,
            late: g.late,
            late_ns: g.late_ns,
            classes: class_stats(&g),
        }
    }
}

/// Per class, what was learnt and what it left.
fn class_stats(g: &Inner) -> Vec<ClassStats> {
    let mut out = Vec::new();
    for (block, op) in [false, true]
        .into_iter()
        .flat_map(|b| (0..3u8).map(move |o| (b, o)))
    {
        for size in 0..SIZE_CLASSES as u8 {
            let c = Class { op, size, block };
            let l = &g.classes[c.index()];
            if l.measured == 0 {
                continue;
            }
            out.push(ClassStats {
                class: c.name(),
                measured: l.measured,
                lead_ns: l.lead_ns.max(0) as u64,
                median_residual_ns: median(&l.residual),
            });
        }
    }
    out
}

fn record(g: &mut Inner, s: Sent, end_ns: u64) {
    let lag = end_ns as i64 - s.aimed_ns as i64;
    let residual = end_ns as i64 - s.modelled_ns as i64;
    // A lag of more than a second is no reply path (a stalled reader, a clock mix-up).
    if (0..1_000_000_000).contains(&lag) {
        g.classes[s.class.index()].push(lag, residual);
        g.measured += 1;
        if residual > LATE_NS {
            g.late += 1;
        }
        g.late_ns += residual.max(0) as u64;
    }
}

/// A completion this much after the modelled one counts as late (ns).
pub const LATE_NS: i64 = 500_000;

/// `stats.json`'s `reply_path`.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct PathStats {
    /// Replies whose completion by the kernel was measured.
    pub measured: u64,
    /// Of those, completed more than 0.5 ms after the modelled completion ([`LATE_NS`]).
    pub late: u64,
    /// The sum of every measured reply's lateness (kernel completion after the modelled one,
    /// ns): the time the host added to the drive's.
    pub late_ns: u64,
    /// Per class.
    pub classes: Vec<ClassStats>,
}

/// One class in `stats.json`'s `reply_path`.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ClassStats {
    /// The class (`read ≤ 1 MiB`).
    pub class: String,
    /// Replies whose lag was measured.
    pub measured: u64,
    /// The lead in use now: replies are sent this much before the modelled completion (ns).
    pub lead_ns: u64,
    /// Over the last replies, the kernel's completion minus the modelled completion (ns):
    /// what the compensation left (0 is exact; positive, late).
    pub median_residual_ns: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_are_the_operation_and_its_size_by_powers_of_two() {
        let c = |op, b| Class::of(op, b).name();
        assert_eq!(c(ReqOp::Read, 512), "read ≤ 4 KiB");
        assert_eq!(c(ReqOp::Read, 4096), "read ≤ 4 KiB");
        assert_eq!(c(ReqOp::Read, 4097), "read ≤ 8 KiB");
        assert_eq!(c(ReqOp::Write, 1 << 20), "write ≤ 1 MiB");
        assert_eq!(c(ReqOp::Write, (1 << 20) + 512), "write ≤ 2 MiB");
        assert_eq!(c(ReqOp::Write, 64 << 20), "write > 4 MiB");
        assert_eq!(c(ReqOp::Flush, 0), "flush");
        assert_ne!(Class::of(ReqOp::Read, 4096), Class::of(ReqOp::Write, 4096));
    }

    #[test]
    fn the_lead_is_the_median_lag_of_the_class_and_does_not_feed_back() {
        let p = ReplyPath::new();
        let r = Class::of(ReqOp::Read, 1 << 20);
        let w = Class::of(ReqOp::Write, 1 << 20);
        assert_eq!(p.lead(r), 0);
        // Reads take 380 µs from the aimed-at moment to the kernel's end, ±20 µs.
        let mut t = 1_000_000_000u64;
        for (i, jitter) in [0i64, 20_000, -20_000, 10_000, -10_000]
            .iter()
            .cycle()
            .take(40)
            .enumerate()
        {
            let lead = p.lead(r);
            let modelled = t;
            let aimed = modelled - lead;
            p.sent(Key::Fuse(i as u64), r, aimed, modelled);
            p.ended(
                Key::Fuse(i as u64),
                (aimed as i64 + 380_000 + jitter) as u64,
            );
            t += 10_000_000;
        }
        // The lead is the lag, not lag plus the lead in use (which would grow each time).
        assert_eq!(p.lead(r), 380_000);
        assert_eq!(p.lead(w), 0, "another class learns nothing from reads");
        let st = p.stats();
        assert_eq!(st.classes.len(), 1);
        assert_eq!(st.classes[0].measured, 40);
        // Once the lead is learnt the kernel's end falls on the modelled completion.
        assert!(st.classes[0].median_residual_ns.abs() <= 20_000, "{st:?}");
        // Only the first replies, sent before anything was learnt, were late (by 380 µs ±
        // 20 µs, under the 0.5 ms that counts as late).
        assert_eq!(st.measured, 40);
        assert_eq!(st.late, 0);
        assert!(st.late_ns >= 360_000 && st.late_ns < 40 * 40_000, "{st:?}");
    }

    #[test]
    fn only_registered_replies_are_measured_each_by_its_own_key() {
        let p = ReplyPath::new();
        let w = Class::of(ReqOp::Write, 4096);
        let wb = w.on_block_device();
        assert_eq!(wb.name(), "write ≤ 4 KiB (block)");
        // An end with no reply registered (a reply sent late, another program's request)
        // counts nothing.
        p.ended(Key::Fuse(8), 2_000_000_000);
        assert!(p.stats().classes.is_empty());
        p.sent(Key::Fuse(7), w, 1_000_000_000, 1_000_000_000);
        p.ended(Key::Fuse(7), 1_000_150_000);
        assert_eq!(p.lead(w), 150_000);
        // Two outstanding requests of one block range end in order, each in its class.
        let k = Key::block(ReqOp::Write, 80, 8);
        p.sent(k, wb, 3_000_000_000, 3_000_000_000);
        p.sent(k, wb, 3_100_000_000, 3_100_000_000);
        p.ended(k, 3_000_030_000);
        p.ended(k, 3_100_050_000);
        assert_eq!(p.lead(wb), 40_000);
        assert_eq!(p.lead(w), 150_000, "the FUSE class is apart");
        // Absurd lags (negative, or over a second) are not a reply path.
        p.sent(Key::Fuse(9), w, 3_000_000_000, 3_000_000_000);
        p.ended(Key::Fuse(9), 2_000_000_000);
        p.sent(Key::Fuse(10), w, 3_000_000_000, 3_000_000_000);
        p.ended(Key::Fuse(10), 5_000_000_000);
        let st = p.stats();
        assert_eq!(
            st.classes.iter().map(|c| c.measured).sum::<u64>(),
            3,
            "{st:?}"
        );
        assert_eq!(st.measured, 3);
    }
}
