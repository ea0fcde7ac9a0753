//! Fragmentation: thousands of extents from files created, grown and removed in turns, with the
//! filesystem agreeing with a model at every step — a proptest state machine, and one long
//! seeded run of the same machine that must reach thousands of extents.
//!
//! The model is a block-by-block map (one `bool` per data block) with the placement policy
//! written out the simple way: one extent in the first free run by address that holds the whole
//! request, else the largest free runs first (equal lengths by lower start), in block order; a
//! grow extends the last extent in place when the blocks after it are free. It predicts every
//! file's exact extents and every refusal (no space, exists, not found, file table full); after
//! each step the filesystem's files, extents and free space must equal it and `fsck` must find
//! nothing wrong.

use std::collections::BTreeMap;
use std::sync::Arc;

use minfs::format::file_table::{EXTENT_SIZE, PAYLOAD_CAPACITY, RECORD_HEADER_SIZE};
use minfs::format::{blocks_for, Extent, BLOCK_SIZE, DATA_START};
use minfs::{fsck, Error, Filesystem, FormatOptions, MemDevice};
use proptest::prelude::*;
use proptest::test_runner::Config;
use proptest_state_machine::{prop_state_machine, ReferenceStateMachine, StateMachineTest};
use testutil::XorShift;

/// Data blocks of the long run: room for more one-block extents than the file table holds.
const BLOCKS: u64 = 12288;
/// Data blocks of the proptest runs: small, so that space runs out and runs get fragmented
/// (new files and grows then gather several free runs, largest first).
const SMALL_BLOCKS: u64 = 1024;
const FIRST: u64 = DATA_START / BLOCK_SIZE;
const NAMES: [&str; 12] = ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    Ok,
    NoSpace,
    Exists,
    NotFound,
    TableFull,
}

#[derive(Debug, Clone)]
enum Op {
    /// Name, size in bytes.
    Create(usize, u64),
    /// Name, bytes to add.
    Grow(usize, u64),
    Remove(usize),
    Reopen,
}

#[derive(Debug, Clone)]
struct Model {
    /// Name → (size, extents in file order).
    files: BTreeMap<String, (u64, Vec<Extent>)>,
    /// One flag per data block: in use.
    used: Vec<bool>,
    last: Expect,
}

impl Model {
    fn new(blocks: u64) -> Model {
        Model {
            files: BTreeMap::new(),
            used: vec![false; blocks as usize],
            last: Expect::Ok,
        }
    }

    fn free_runs(&self) -> Vec<Extent> {
        let mut runs = Vec::new();
        let mut i = 0;
        while i < self.used.len() {
            if self.used[i] {
                i += 1;
                continue;
            }
            let j = (i..self.used.len())
                .find(|&j| self.used[j])
                .unwrap_or(self.used.len());
            runs.push(Extent {
                start: FIRST + i as u64,
                len: (j - i) as u64,
            });
            i = j;
        }
        runs
    }

    fn is_free(&self, e: Extent) -> bool {
        e.start >= FIRST
            && e.end() <= FIRST + self.used.len() as u64
            && (e.start..e.end()).all(|b| !self.used[(b - FIRST) as usize])
    }

    fn choose(&self, n: u64) -> Option<Vec<Extent>> {
        if n == 0 {
            return Some(vec![]);
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
        let mut out = Vec::new();
        let mut left = n;
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
    }

    fn mark(&mut self, e: Extent, used: bool) {
        for b in e.start..e.end() {
            self.used[(b - FIRST) as usize] = used;
        }
    }

    /// Whether the file table with `files` fits in a slot.
    fn fits(files: &BTreeMap<String, (u64, Vec<Extent>)>) -> bool {
        let bytes: usize = files
            .iter()
            .map(|(n, (_, e))| RECORD_HEADER_SIZE + n.len() + EXTENT_SIZE * e.len())
            .sum();
        bytes <= PAYLOAD_CAPACITY
    }

    fn extent_count(&self) -> usize {
        self.files.values().map(|(_, e)| e.len()).sum()
    }

    fn apply(&mut self, op: &Op) {
        self.last = match *op {
            Op::Create(n, size) => self.create(NAMES[n], size),
            Op::Grow(n, add) => self.grow(NAMES[n], add),
            Op::Remove(n) => match self.files.remove(NAMES[n]) {
                Some((_, extents)) => {
                    extents.iter().for_each(|e| self.mark(*e, false));
                    Expect::Ok
                }
                None => Expect::NotFound,
            },
            Op::Reopen => Expect::Ok,
        };
    }

    fn create(&mut self, name: &str, size: u64) -> Expect {
        if self.files.contains_key(name) {
            return Expect::Exists;
        }
        let Some(extents) = self.choose(blocks_for(size)) else {
            return Expect::NoSpace;
        };
        self.commit(name, size, extents.clone(), &extents)
    }

    fn grow(&mut self, name: &str, add: u64) -> Expect {
        let Some((size, old)) = self.files.get(name).cloned() else {
            return Expect::NotFound;
        };
        let need = blocks_for(size + add) - blocks_for(size);
        let in_place = old.last().map(|l| Extent {
            start: l.end(),
            len: need,
        });
        let added = match in_place {
            Some(e) if need > 0 && self.is_free(e) => vec![e],
            _ => match self.choose(need) {
                Some(x) => x,
                None => return Expect::NoSpace,
            },
        };
        let mut extents = old;
        for e in &added {
            match extents.last_mut() {
                Some(l) if l.end() == e.start => l.len += e.len,
                _ => extents.push(*e),
            }
        }
        self.commit(name, size + add, extents, &added)
    }

    /// The change if its file table fits, else `TableFull` and nothing changes.
    fn commit(&mut self, name: &str, size: u64, extents: Vec<Extent>, added: &[Extent]) -> Expect {
        let mut files = self.files.clone();
        files.insert(name.to_string(), (size, extents));
        if !Model::fits(&files) {
            return Expect::TableFull;
        }
        self.files = files;
        added.iter().for_each(|e| self.mark(*e, true));
        Expect::Ok
    }
}

struct RefMachine;

/// Small sizes, many grows of existing files: files grown in turns interleave, so most grows
/// add an extent; space runs out, and removes leave holes that later creates and grows gather
/// up, largest first.
fn op_strategy(m: &Model) -> BoxedStrategy<Op> {
    let existing: Vec<usize> = (0..NAMES.len())
        .filter(|&i| m.files.contains_key(NAMES[i]))
        .collect();
    let size = prop_oneof![
        2 => (0u64..=4).prop_map(|b| b * BLOCK_SIZE),
        1 => 1u64..=(64 * BLOCK_SIZE),
    ];
    let add = prop_oneof![
        5 => Just(BLOCK_SIZE),
        2 => (0u64..=3).prop_map(|b| b * BLOCK_SIZE),
        2 => 1u64..=(40 * BLOCK_SIZE),
    ];
    let any = 0..NAMES.len();
    let grown = if existing.is_empty() {
        any.clone().boxed()
    } else {
        prop_oneof![1 => any.clone(), 6 => proptest::sample::select(existing)].boxed()
    };
    prop_oneof![
        4 => (any.clone(), size).prop_map(|(n, s)| Op::Create(n, s)),
        14 => (grown.clone(), add).prop_map(|(n, a)| Op::Grow(n, a)),
        2 => grown.prop_map(Op::Remove),
        1 => Just(Op::Reopen),
    ]
    .boxed()
}

impl ReferenceStateMachine for RefMachine {
    type State = Model;
    type Transition = Op;

    fn init_state() -> BoxedStrategy<Model> {
        Just(Model::new(SMALL_BLOCKS)).boxed()
    }

    fn transitions(m: &Model) -> BoxedStrategy<Op> {
        op_strategy(m)
    }

    fn apply(mut m: Model, op: &Op) -> Model {
        m.apply(op);
        m
    }
}

struct Sut {
    dev: Arc<MemDevice>,
    fs: Filesystem,
}

impl Sut {
    fn new(blocks: u64) -> Sut {
        let dev = Arc::new(MemDevice::new(DATA_START + blocks * BLOCK_SIZE, 512, 4096));
        let fs = Filesystem::format(dev.clone(), "frag", &FormatOptions::default()).unwrap();
        Sut { dev, fs }
    }

    fn apply(&mut self, op: &Op) -> Expect {
        let fs = &self.fs;
        let result = match *op {
            Op::Create(n, size) => fs.create(NAMES[n], size).map(drop),
            Op::Grow(n, add) => match fs.stat(NAMES[n]) {
                Ok(st) => fs.grow(NAMES[n], st.size + add).map(drop),
                Err(e) => Err(e),
            },
            Op::Remove(n) => fs.remove(NAMES[n]),
            Op::Reopen => {
                self.fs = Filesystem::open_device(self.dev.clone(), "frag").unwrap();
                Ok(())
            }
        };
        match result {
            Ok(()) => Expect::Ok,
            Err(Error::NoSpace { .. }) => Expect::NoSpace,
            Err(Error::FileExists { .. }) => Expect::Exists,
            Err(Error::FileNotFound { .. }) => Expect::NotFound,
            Err(Error::FileTableFull { .. }) => Expect::TableFull,
            Err(e) => panic!("{op:?}: unexpected error {e}"),
        }
    }

    fn check(&self, m: &Model) {
        let got: BTreeMap<String, (u64, Vec<Extent>)> = self
            .fs
            .list()
            .into_iter()
            .map(|f| {
                let extents = f
                    .extents
                    .iter()
                    .map(|e| Extent {
                        start: e.offset / BLOCK_SIZE,
                        len: e.length / BLOCK_SIZE,
                    })
                    .collect();
                (f.name, (f.size, extents))
            })
            .collect();
        assert_eq!(got, m.files, "files or extents differ from the model");
        let free = m.used.iter().filter(|u| !**u).count() as u64;
        assert_eq!(self.fs.free_bytes(), free * BLOCK_SIZE);
        let report = fsck::check_device(self.dev.as_ref(), "frag").unwrap();
        assert!(report.is_clean(), "{:?}", report.problems);
    }
}

impl StateMachineTest for Sut {
    type SystemUnderTest = Sut;
    type Reference = RefMachine;

    fn init_test(m: &Model) -> Sut {
        Sut::new(m.used.len() as u64)
    }

    fn apply(mut sut: Sut, m: &Model, op: Op) -> Sut {
        let got = sut.apply(&op);
        assert_eq!(got, m.last, "{op:?}");
        sut
    }

    fn check_invariants(sut: &Sut, m: &Model) {
        sut.check(m);
    }
}

prop_state_machine! {
    #![proptest_config(Config {
        cases: 12,
        failure_persistence: None,
        .. Config::default()
    })]
    #[test]
    fn fragmented_filesystem_matches_model(sequential 1..1500 => Sut);
}

/// One long seeded run of the same machine: it must reach thousands of extents and run into
/// the file table's limit, agreeing with the model all the way.
#[test]
fn thousands_of_extents_agree_with_the_model() {
    let mut rng = XorShift(0x5eed_0012);
    let mut m = Model::new(BLOCKS);
    let mut sut = Sut::new(BLOCKS);
    let (mut peak, mut table_full, mut removed) = (0, 0, 0);
    for step in 0..16_000 {
        let r = rng.next();
        let n = (r % NAMES.len() as u64) as usize;
        let x = r >> 8;
        // Phases of 4,000 steps: 3,700 of interleaved one-block grows (and creates of the
        // names not in use), then 300 with removes and creates that gather up the holes.
        let op = match (step % 4000 < 3700, x % 100) {
            (false, 0..=7) => Op::Remove(n),
            (true, 0..=3) | (false, 8..=59) => Op::Create(n, (x >> 8) % (32 * BLOCK_SIZE)),
            (_, 60..=61) => Op::Reopen,
            _ => Op::Grow(n, BLOCK_SIZE),
        };
        m.apply(&op);
        let got = sut.apply(&op);
        assert_eq!(got, m.last, "step {step}: {op:?}");
        if step % 50 == 0 || got != Expect::Ok {
            sut.check(&m);
        }
        peak = peak.max(m.extent_count());
        table_full += u64::from(got == Expect::TableFull);
        removed += u64::from(matches!(op, Op::Remove(_)) && got == Expect::Ok);
    }
    sut.check(&m);
    eprintln!("peak {peak} extents, {table_full} refused (table full), {removed} removes");
    assert!(peak >= 3000, "only {peak} extents at most");
    assert!(table_full > 0, "the file table never filled");
    assert!(removed >= 50, "only {removed} removes");
}
