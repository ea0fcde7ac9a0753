//! Expansion of a parsed workload into the flat list of Cannyls operations, exactly as
//! `docs/DSL.md` ("Meaning") says, before anything runs.
//!
//! State: a counter for the next new id (from 1), the live list (oldest first; removal
//! keeps the order of the rest) and one [`Rng`] seeded from the workload's `Seed:` (or the
//! override). The live list is always sorted by id (ids only grow, removal keeps order,
//! `OverWrite` does not move a lump), so `delete_range(id[x]..id[y])` in Cannyls removes
//! exactly positions `x..y` of the list.
//!
//! Choices where the specification is silent (also in the README):
//! - `OverWrite` picks a position uniformly in `0..L`; `Get` and `Delete` without bounds are
//!   `Get(0, 100)` and `Delete(0, 100)`, as in cannyls_bencher (so position 0, the oldest, is
//!   twice as likely as any other).
//! - `Get(l, r)` / `Delete(l, r)`: p uniformly in `[⌊L·l/100⌋, ⌊L·r/100⌋]`, or
//!   `p = ⌊L·l/100⌋` without drawing from the generator when `l == r`; index
//!   `max(p − 1, 0)`, also clamped to `L − 1` as a safety net (it cannot trigger: with
//!   `r ≤ 100`, `p ≤ L`). Percentages over 100 in a hand-built tree are taken as 100 and
//!   `l > r` as `(r, l)`; the parser refuses both. (A hand-built tree is also trusted not
//!   to nest deeper than the parser's [`MAX_NESTING`](crate::dsl::MAX_NESTING): expansion
//!   recurses once per level.)
//! - `DeleteRange(l, r)` with `x == y` still issues the one `delete_range`, over the empty
//!   range `id[x]..id[x]` (`DeleteRange { start, end }` with `start == end`), which removes
//!   nothing; it counts as an operation (and as a mutating one for `sync_every`).
//! - `Unordered` shuffles the copies of its items as units: the copies of a braced item
//!   `<p%> { a; b; };` run whole, never interleaved. The shuffle draws from the generator
//!   when the section is reached (after the previous sections have run).
//! - Scaling (`scale`) multiplies every count (`Ordered[N]`, `Unordered[N]`, `N.times`),
//!   rounds to the nearest integer (halves away from zero) and makes it at least 1; a count
//!   of 0 stays 0. A scale of exactly 1 changes nothing.
//! - `sync_every = N` appends a `Sync` after the N-th, 2N-th, … mutating operation (`New`,
//!   `OverWrite`, `Embed`, `Delete`, `DeleteRange` actually emitted); the workload's own
//!   `Sync`s do not reset that count, and no `Sync` is added at the end.
//! - `final_sync` appends one `Sync` after the last operation (unless the last one is a
//!   `Sync` already): the run ends with its data on the media, so that a drive with a write
//!   cache does not leave the last of it unpaid for (on the emulated drive 64 MB: at the
//!   comparison's default scales 10–30 % of a sequential run's data).
//! - Before expanding, the number of steps is bounded (every command run counts one, and so
//!   does every repetition of an empty block); over `max_ops` the expansion is refused.

mod live;
mod rng;

use std::num::NonZeroU64;

pub use live::LiveList;
pub use rng::Rng;

use crate::dsl::{Command, Section, Workload};

/// Default limit on the steps of an expansion (see [`GenerateOptions::max_ops`]).
pub const DEFAULT_MAX_OPS: u64 = 100_000_000;

/// One Cannyls operation. Ids are Cannyls lump ids (`LumpId::new(id as u128)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    /// `put` of `size` bytes under `id`.
    Put {
        /// Lump id.
        id: u64,
        /// Bytes.
        size: u32,
        /// An embedded lump (`Embed`): `LumpData::new_embedded`.
        embedded: bool,
        /// `OverWrite` of a live lump (false: `New`/`Embed` of a fresh id).
        overwrite: bool,
    },
    /// `get` of `id`, whose current size is `size`.
    Get {
        /// Lump id.
        id: u64,
        /// Its size now.
        size: u32,
    },
    /// `delete` of `id`.
    Delete {
        /// Lump id.
        id: u64,
    },
    /// `delete_range(start..end)` (end exclusive; `start == end` is an empty range).
    DeleteRange {
        /// First id of the range.
        start: u64,
        /// One past the last id.
        end: u64,
    },
    /// `journal_sync()`.
    Sync,
}

/// The kind of an [`Op`], for counting and statistics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OpKind {
    /// `New(n)`.
    New,
    /// `OverWrite(n)`.
    OverWrite,
    /// `Embed(n)`.
    Embed,
    /// `Get`, `Get(l, r)`.
    Get,
    /// `Delete`, `Delete(l, r)`.
    Delete,
    /// `DeleteRange(l, r)`.
    DeleteRange,
    /// `Sync` (written or inserted by `sync_every`).
    Sync,
}

impl OpKind {
    /// Lowercase name (`new`, `overwrite`, `embed`, `get`, `delete`, `delete_range`, `sync`).
    pub fn name(self) -> &'static str {
        match self {
            OpKind::New => "new",
            OpKind::OverWrite => "overwrite",
            OpKind::Embed => "embed",
            OpKind::Get => "get",
            OpKind::Delete => "delete",
            OpKind::DeleteRange => "delete_range",
            OpKind::Sync => "sync",
        }
    }
}

impl Op {
    /// Its kind.
    pub fn kind(&self) -> OpKind {
        match self {
            Op::Put { embedded: true, .. } => OpKind::Embed,
            Op::Put {
                overwrite: true, ..
            } => OpKind::OverWrite,
            Op::Put { .. } => OpKind::New,
            Op::Get { .. } => OpKind::Get,
            Op::Delete { .. } => OpKind::Delete,
            Op::DeleteRange { .. } => OpKind::DeleteRange,
            Op::Sync => OpKind::Sync,
        }
    }

    /// Whether it changes the store (what `sync_every` counts): puts and deletes.
    pub fn is_mutating(&self) -> bool {
        !matches!(self, Op::Get { .. } | Op::Sync)
    }
}

/// How to expand.
#[derive(Debug, Clone, PartialEq)]
pub struct GenerateOptions {
    /// Multiplies every count; finite and > 0. Default 1.
    pub scale: f64,
    /// Overrides the workload's `Seed:`.
    pub seed: Option<u64>,
    /// Insert a `Sync` after every N mutating operations.
    pub sync_every: Option<NonZeroU64>,
    /// End with a `Sync` (unless the last operation is one).
    pub final_sync: bool,
    /// Refuse an expansion of more steps than this (operations before `sync_every`'s
    /// `Sync`s, plus repetitions of empty blocks). Default [`DEFAULT_MAX_OPS`].
    pub max_ops: u64,
}

impl Default for GenerateOptions {
    fn default() -> Self {
        GenerateOptions {
            scale: 1.0,
            seed: None,
            sync_every: None,
            final_sync: false,
            max_ops: DEFAULT_MAX_OPS,
        }
    }
}

/// An expanded workload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expansion {
    /// The seed used (override, else the file's `Seed:`, else 0).
    pub seed: u64,
    /// The operations, in order.
    pub ops: Vec<Op>,
    /// Commands skipped because the live list was empty (emitted and counted as nothing;
    /// reported by `check` as a diagnostic only).
    pub skipped: u64,
}

/// Why a workload cannot be expanded.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum GenerateError {
    /// The scale is not a finite number > 0.
    #[error("the scale must be a finite number greater than 0, not {0}")]
    InvalidScale(f64),
    /// More steps than `max_ops`.
    #[error(
        "the workload expands to {steps} operations, more than the limit of {limit} \
         (shrink it with --scale, or raise --max-ops)"
    )]
    TooLarge {
        /// Steps counted (saturating at `u128::MAX`).
        steps: u128,
        /// The limit.
        limit: u64,
    },
    /// The operation list could not be allocated.
    #[error("not enough memory for {0} operations")]
    OutOfMemory(u128),
}

/// A count after scaling: `round(n · scale)`, at least 1, except that 0 stays 0 and a scale
/// of exactly 1 changes nothing. Saturates at `u64::MAX`.
pub fn scale_count(n: u64, scale: f64) -> u64 {
    if n == 0 || scale == 1.0 {
        return n;
    }
    let x = (n as f64 * scale).round();
    if x.is_nan() || x < 1.0 {
        1
    } else {
        // `as` saturates at u64::MAX.
        x as u64
    }
}

/// ⌊n·p/100⌋, the copies of a weighted item.
fn copies(n: u64, percent: u8) -> u64 {
    // ≤ n · 255 / 100 < 2^64 · 3, computed in u128; saturates for hand-built percentages.
    u64::try_from(u128::from(n) * u128::from(percent) / 100).unwrap_or(u64::MAX)
}

/// The number of steps expanding `workload` at `scale` takes: every command run counts one
/// (so it bounds the operations), and every repetition of an empty block counts one too.
/// Saturates at `u128::MAX`.
pub fn count_steps(workload: &Workload, scale: f64) -> u128 {
    bound(workload, scale, 1)
}

/// An upper bound of the operations (before `sync_every`'s): commands run.
fn count_commands(workload: &Workload, scale: f64) -> u128 {
    bound(workload, scale, 0)
}

/// Commands run, where a repetition of an empty block counts `empty`.
fn bound(workload: &Workload, scale: f64, empty: u128) -> u128 {
    workload
        .sections
        .iter()
        .map(|s| section_bound(s, scale, empty))
        .fold(0, u128::saturating_add)
}

fn section_bound(section: &Section, scale: f64, empty: u128) -> u128 {
    match section {
        Section::Command(commands) => commands_bound(commands, scale, empty),
        Section::Ordered { count, items } | Section::Unordered { count, items } => {
            let n = scale_count(*count, scale);
            items
                .iter()
                .map(|item| {
                    u128::from(copies(n, item.percent))
                        .saturating_mul(commands_bound(&item.body, scale, empty).max(empty))
                })
                .fold(0, u128::saturating_add)
        }
    }
}

fn commands_bound(commands: &[Command], scale: f64, empty: u128) -> u128 {
    commands
        .iter()
        .map(|c| match c {
            Command::Times { count, body } => u128::from(scale_count(*count, scale))
                .saturating_mul(commands_bound(body, scale, empty).max(empty)),
            _ => 1,
        })
        .fold(0, u128::saturating_add)
}

/// Expands `workload` into operations.
pub fn expand(workload: &Workload, options: &GenerateOptions) -> Result<Expansion, GenerateError> {
    let scale = options.scale;
    if !scale.is_finite() || scale <= 0.0 {
        return Err(GenerateError::InvalidScale(scale));
    }
    let steps = count_steps(workload, scale);
    if steps > u128::from(options.max_ops) {
        return Err(GenerateError::TooLarge {
            steps,
            limit: options.max_ops,
        });
    }
    let seed = options.seed.or(workload.seed).unwrap_or(0);
    let mut ops = Vec::new();
    // Every command run emits at most one operation (plus, with sync_every, one Sync):
    // reserving that up front avoids doubling the peak memory by regrowth.
    let commands = count_commands(workload, scale);
    usize::try_from(commands)
        .ok()
        .and_then(|n| ops.try_reserve_exact(n).ok())
        .ok_or(GenerateError::OutOfMemory(commands))?;
    let mut generator = Generator {
        rng: Rng::new(seed),
        live: LiveList::new(),
        next_id: 1,
        ops,
        skipped: 0,
        sync_every: options.sync_every.map(NonZeroU64::get),
        since_sync: 0,
        scale,
    };
    for section in &workload.sections {
        generator.section(section)?;
    }
    if options.final_sync && generator.ops.last() != Some(&Op::Sync) {
        generator.ops.push(Op::Sync);
    }
    Ok(Expansion {
        seed,
        ops: generator.ops,
        skipped: generator.skipped,
    })
}

struct Generator {
    rng: Rng,
    live: LiveList,
    next_id: u64,
    ops: Vec<Op>,
    skipped: u64,
    sync_every: Option<u64>,
    since_sync: u64,
    scale: f64,
}

impl Generator {
    fn emit(&mut self, op: Op) {
        self.ops.push(op);
        if let (true, Some(every)) = (op.is_mutating(), self.sync_every) {
            self.since_sync += 1;
            if self.since_sync >= every {
                self.since_sync = 0;
                self.ops.push(Op::Sync);
            }
        }
    }

    fn section(&mut self, section: &Section) -> Result<(), GenerateError> {
        match section {
            Section::Command(commands) => self.commands(commands),
            Section::Ordered { count, items } => {
                let n = scale_count(*count, self.scale);
                for item in items {
                    for _ in 0..copies(n, item.percent) {
                        self.commands(&item.body);
                    }
                }
            }
            Section::Unordered { count, items } => {
                let n = scale_count(*count, self.scale);
                let total = items
                    .iter()
                    .map(|item| u128::from(copies(n, item.percent)))
                    .fold(0, u128::saturating_add);
                let mut units: Vec<usize> = Vec::new();
                usize::try_from(total)
                    .ok()
                    .and_then(|t| units.try_reserve_exact(t).ok())
                    .ok_or(GenerateError::OutOfMemory(total))?;
                for (k, item) in items.iter().enumerate() {
                    for _ in 0..copies(n, item.percent) {
                        units.push(k);
                    }
                }
                self.rng.shuffle(&mut units);
                for k in units {
                    self.commands(&items[k].body);
                }
            }
        }
        Ok(())
    }

    fn commands(&mut self, commands: &[Command]) {
        for command in commands {
            self.command(command);
        }
    }

    /// A position chosen as `Get(l, r)` / `Delete(l, r)` do, for a list of `len > 0`.
    fn position(&mut self, len: usize, l: u8, r: u8) -> usize {
        let (l, r) = (l.min(100), r.min(100));
        let (l, r) = (l.min(r), l.max(r));
        let len64 = len as u64;
        let lo = copies(len64, l);
        let hi = copies(len64, r);
        let p = if l == r {
            lo
        } else {
            self.rng.inclusive(lo, hi)
        };
        // p ≤ len, so the index fits a usize.
        (p.saturating_sub(1) as usize).min(len - 1)
    }

    fn uniform(&mut self, len: usize) -> usize {
        // below(len) < len, so it fits a usize.
        self.rng.below(len as u64) as usize
    }

    fn new_lump(&mut self, size: u32, embedded: bool) {
        let id = self.next_id;
        self.next_id = self.next_id.saturating_add(1);
        self.live.push(id, size);
        self.emit(Op::Put {
            id,
            size,
            embedded,
            overwrite: false,
        });
    }

    fn command(&mut self, command: &Command) {
        let len = self.live.len();
        let needs_live = matches!(
            command,
            Command::OverWrite(_)
                | Command::Get
                | Command::GetAt(..)
                | Command::Delete
                | Command::DeleteAt(..)
                | Command::DeleteRange(..)
        );
        if needs_live && len == 0 {
            self.skipped += 1;
            return;
        }
        match *command {
            Command::New(size) => self.new_lump(size, false),
            Command::Embed(size) => self.new_lump(size, true),
            Command::OverWrite(size) => {
                let pos = self.uniform(len);
                if let Some(id) = self.live.set_size(pos, size) {
                    self.emit(Op::Put {
                        id,
                        size,
                        embedded: false,
                        overwrite: true,
                    });
                }
            }
            // As in cannyls_bencher: `Get` is `Get(0, 100)` (the oldest lump twice as likely).
            Command::Get => {
                let pos = self.position(len, 0, 100);
                self.get(pos);
            }
            Command::GetAt(l, r) => {
                let pos = self.position(len, l, r);
                self.get(pos);
            }
            // As in cannyls_bencher: `Delete` is `Delete(0, 100)`.
            Command::Delete => {
                let pos = self.position(len, 0, 100);
                self.delete(pos);
            }
            Command::DeleteAt(l, r) => {
                let pos = self.position(len, l, r);
                self.delete(pos);
            }
            Command::DeleteRange(l, r) => {
                let (l, r) = (l.min(100), r.min(100));
                let (l, r) = (l.min(r), l.max(r));
                let last = (len - 1) as u64;
                // x ≤ y ≤ len − 1, so both fit a usize.
                let x = copies(last, l) as usize;
                let y = copies(last, r) as usize;
                if let (Some((start, _)), Some((end, _))) = (self.live.get(x), self.live.get(y)) {
                    self.emit(Op::DeleteRange { start, end });
                    for _ in x..y {
                        self.live.remove(x);
                    }
                }
            }
            Command::Sync => self.emit(Op::Sync),
            Command::Times { count, ref body } => {
                for _ in 0..scale_count(count, self.scale) {
                    self.commands(body);
                }
            }
        }
    }

    fn get(&mut self, pos: usize) {
        if let Some((id, size)) = self.live.get(pos) {
            self.emit(Op::Get { id, size });
        }
    }

    fn delete(&mut self, pos: usize) {
        if let Some((id, _)) = self.live.remove(pos) {
            self.emit(Op::Delete { id });
        }
    }
}
