//! A proptest state machine of create / remove / grow / reopen on a real O_DIRECT image file,
//! against an in-memory model: sizes and names agree, no two extents overlap, free space is
//! conserved, failures happen exactly when the model says (no space, duplicate, missing), a
//! reopen gives back the model, and data stamped into each file survives the others' changes.

use std::collections::BTreeMap;
use std::path::PathBuf;

use minfs::format::{blocks_for, BLOCK_SIZE, DATA_START};
use minfs::{AlignedBuf, Error, Filesystem, FormatOptions, OpenMode};
use proptest::prelude::*;
use proptest::test_runner::Config;
use proptest_state_machine::{prop_state_machine, ReferenceStateMachine, StateMachineTest};

const IMAGE: u64 = 16 << 20;
const DATA_BLOCKS: u64 = (IMAGE - DATA_START) / BLOCK_SIZE;
const NAMES: [&str; 6] = [
    "a",
    "b",
    "cannyls",
    "d",
    "journal",
    "name-of-exactly-64-bytes-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    Ok,
    NoSpace,
    Exists,
    NotFound,
}

#[derive(Debug, Clone)]
struct Model {
    files: BTreeMap<String, u64>,
    last: Expect,
}

impl Model {
    fn used(&self) -> u64 {
        self.files.values().map(|s| blocks_for(*s)).sum()
    }
}

#[derive(Debug, Clone)]
enum Op {
    Create(usize, u64),
    Remove(usize),
    Grow(usize, u64),
    Reopen,
}

struct RefMachine;

impl ReferenceStateMachine for RefMachine {
    type State = Model;
    type Transition = Op;

    fn init_state() -> BoxedStrategy<Model> {
        Just(Model {
            files: BTreeMap::new(),
            last: Expect::Ok,
        })
        .boxed()
    }

    fn transitions(_: &Model) -> BoxedStrategy<Op> {
        // Sizes up to ~40% of the data area so that "no space" happens too.
        let size = prop_oneof![
            0u64..=8192,
            (0u64..=DATA_BLOCKS * 2 / 5).prop_map(|b| b * BLOCK_SIZE),
            (1u64..=DATA_BLOCKS * 2 / 5 * BLOCK_SIZE),
        ];
        let name = 0..NAMES.len();
        prop_oneof![
            4 => (name.clone(), size.clone()).prop_map(|(n, s)| Op::Create(n, s)),
            2 => name.clone().prop_map(Op::Remove),
            3 => (name, 0u64..=DATA_BLOCKS / 4 * BLOCK_SIZE).prop_map(|(n, s)| Op::Grow(n, s)),
            1 => Just(Op::Reopen),
        ]
        .boxed()
    }

    fn apply(mut m: Model, op: &Op) -> Model {
        let free = DATA_BLOCKS - m.used();
        m.last = match *op {
            Op::Create(n, size) => match m.files.entry(NAMES[n].to_string()) {
                std::collections::btree_map::Entry::Occupied(_) => Expect::Exists,
                std::collections::btree_map::Entry::Vacant(_) if blocks_for(size) > free => {
                    Expect::NoSpace
                }
                std::collections::btree_map::Entry::Vacant(v) => {
                    v.insert(size);
                    Expect::Ok
                }
            },
            Op::Remove(n) => match m.files.remove(NAMES[n]) {
                Some(_) => Expect::Ok,
                None => Expect::NotFound,
            },
            Op::Grow(n, add) => match m.files.get(NAMES[n]).copied() {
                None => Expect::NotFound,
                Some(size) => {
                    let new = size + add;
                    if blocks_for(new) - blocks_for(size) > free {
                        Expect::NoSpace
                    } else {
                        m.files.insert(NAMES[n].to_string(), new);
                        Expect::Ok
                    }
                }
            },
            Op::Reopen => Expect::Ok,
        };
        m
    }
}

struct Sut {
    _dir: tempfile::TempDir,
    path: PathBuf,
    fs: Option<Filesystem>,
    /// A stamp per file, written into its first and last sector.
    stamps: BTreeMap<String, u64>,
    next_stamp: u64,
}

impl Sut {
    fn fs(&self) -> &Filesystem {
        self.fs.as_ref().expect("open")
    }

    fn stamp(&mut self, name: &str) {
        let f = self.fs().open_file(name).unwrap();
        let size = f.size();
        if size == 0 {
            self.stamps.remove(name);
            return;
        }
        self.next_stamp += 1;
        let stamp = self.next_stamp;
        let buf = stamp_buf(name, stamp);
        let last = (size - 1) / 512 * 512;
        f.write_at(&buf, 0).unwrap();
        f.write_at(&buf, last).unwrap();
        f.flush().unwrap();
        self.stamps.insert(name.to_string(), stamp);
    }
}

fn stamp_buf(name: &str, stamp: u64) -> AlignedBuf {
    let mut buf = AlignedBuf::zeroed(512, 512);
    let text = format!("{name}:{stamp}");
    buf[..text.len()].copy_from_slice(text.as_bytes());
    buf
}

impl StateMachineTest for Sut {
    type SystemUnderTest = Sut;
    type Reference = RefMachine;

    fn init_test(_: &Model) -> Sut {
        let dir = tempfile::Builder::new()
            .prefix("minfs-model-")
            .tempdir_in(testutil::scratch_dir())
            .unwrap();
        let path = dir.path().join("model.img");
        let opts = FormatOptions {
            size: Some(IMAGE),
            ..Default::default()
        };
        minfs::mkfs::mkfs(&path, &opts, false).unwrap();
        let fs = Filesystem::open(&path, OpenMode::ReadWrite).unwrap();
        Sut {
            _dir: dir,
            path,
            fs: Some(fs),
            stamps: BTreeMap::new(),
            next_stamp: 0,
        }
    }

    fn apply(mut sut: Sut, m: &Model, op: Op) -> Sut {
        let result = match op {
            Op::Create(n, size) => sut.fs().create(NAMES[n], size).map(drop),
            Op::Remove(n) => sut.fs().remove(NAMES[n]),
            Op::Grow(n, add) => match sut.fs().stat(NAMES[n]) {
                Ok(st) => sut.fs().grow(NAMES[n], st.size + add).map(drop),
                Err(e) => Err(e),
            },
            Op::Reopen => {
                let before = sut.fs().list();
                sut.fs = None;
                sut.fs = Some(Filesystem::open(&sut.path, OpenMode::ReadWrite).unwrap());
                assert_eq!(sut.fs().list(), before, "reopen changed the files");
                Ok(())
            }
        };
        let got = match &result {
            Ok(()) => Expect::Ok,
            Err(Error::NoSpace { .. }) => Expect::NoSpace,
            Err(Error::FileExists { .. }) => Expect::Exists,
            Err(Error::FileNotFound { .. }) => Expect::NotFound,
            Err(e) => panic!("{op:?}: unexpected error {e}"),
        };
        assert_eq!(got, m.last, "{op:?} gave {result:?}");
        match op {
            Op::Create(n, _) | Op::Grow(n, _) if got == Expect::Ok => sut.stamp(NAMES[n]),
            Op::Remove(n) if got == Expect::Ok => {
                sut.stamps.remove(NAMES[n]);
            }
            _ => {}
        }
        sut
    }

    fn check_invariants(sut: &Sut, m: &Model) {
        let fs = sut.fs();
        let list = fs.list();
        let got: BTreeMap<String, u64> = list.iter().map(|f| (f.name.clone(), f.size)).collect();
        assert_eq!(got, m.files, "files differ from the model");
        // Extents inside the data area, allocation = size in blocks, no overlap.
        let mut all: Vec<(u64, u64, &str)> = Vec::new();
        for f in &list {
            assert_eq!(f.allocated, blocks_for(f.size) * BLOCK_SIZE, "{}", f.name);
            for e in &f.extents {
                assert!(
                    e.offset >= DATA_START && e.offset + e.length <= IMAGE,
                    "{f:?}"
                );
                assert_eq!(e.offset % BLOCK_SIZE, 0);
                all.push((e.offset, e.offset + e.length, &f.name));
            }
        }
        all.sort();
        for w in all.windows(2) {
            assert!(w[0].1 <= w[1].0, "extents overlap: {w:?}");
        }
        // Free space is conserved.
        let used: u64 = list.iter().map(|f| f.allocated).sum();
        assert_eq!(fs.free_bytes() + used, DATA_BLOCKS * BLOCK_SIZE);
        // Stamps survive everything that happened to other files.
        for (name, stamp) in &sut.stamps {
            let f = fs.open_file(name).unwrap();
            let mut buf = AlignedBuf::zeroed(512, 512);
            let want = stamp_buf(name, *stamp);
            f.read_at(&mut buf, 0).unwrap();
            assert_eq!(&buf[..], &want[..], "first sector of {name}");
            f.read_at(&mut buf, (f.size() - 1) / 512 * 512).unwrap();
            assert_eq!(&buf[..], &want[..], "last sector of {name}");
        }
    }
}

prop_state_machine! {
    #![proptest_config(Config {
        cases: 256,
        failure_persistence: None,
        .. Config::default()
    })]
    #[test]
    fn filesystem_matches_model(sequential 1..40 => Sut);
}
