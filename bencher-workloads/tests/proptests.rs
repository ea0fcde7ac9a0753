//! Properties: the parser never panics on any text (random, or shipped workloads mutated),
//! printing a tree parses back to it, and expansion never panics and stays consistent with
//! Cannyls' semantics. Kept to a few seconds.

use std::collections::BTreeMap;
use std::num::NonZeroU64;

use bencher_workloads::dsl::{
    parse, Command, Section, Weighted, Workload, MAX_EMBED_SIZE, MAX_PUT_SIZE,
};
use bencher_workloads::generate::{expand, GenerateError, GenerateOptions, Op};
use bencher_workloads::Summary;
use proptest::prelude::*;

const SHIPPED: [&str; 10] = [
    include_str!("../workloads/seq-256k.wl"),
    include_str!("../workloads/seq-4m.wl"),
    include_str!("../workloads/rand-mixed-1m.wl"),
    include_str!("../workloads/rand-oldest-1m.wl"),
    include_str!("../workloads/durable-256k.wl"),
    include_str!("../workloads/group-commit-256k.wl"),
    include_str!("../workloads/churn-256k.wl"),
    include_str!("../workloads/overwrite-heavy-1m.wl"),
    include_str!("../workloads/small-embedded.wl"),
    include_str!("../workloads/delete-range-sweep.wl"),
];

/// Pieces that make mutations likely to stay near-valid, and the classic troublemakers.
const TOKENS: &[&str] = &[
    "{",
    "}",
    ";",
    "(",
    ")",
    "[",
    "]",
    "<",
    "%>",
    ",",
    ".times",
    "#",
    "\n",
    " ",
    "0",
    "1",
    "100",
    "101",
    "99999999999999999999",
    "18446744073709551615",
    "65535",
    "65536",
    "K",
    "M",
    "G",
    "k",
    "New",
    "OverWrite",
    "Embed",
    "Get",
    "Delete",
    "DeleteRange",
    "Sync",
    "Seed:",
    "Command",
    "Ordered",
    "Unordered",
    "é",
    "\u{feff}",
    "\r",
    "\t",
    "\0",
];

fn small_options() -> GenerateOptions {
    GenerateOptions {
        scale: 0.001,
        max_ops: 200_000,
        ..Default::default()
    }
}

/// Parses; if that works, expands small. Neither may panic; expansion may only refuse.
fn parse_and_expand(src: &str) {
    if let Ok(w) = parse("p.wl", src) {
        match expand(&w, &small_options()) {
            Ok(e) => check_consistent(&e.ops),
            Err(GenerateError::TooLarge { .. }) => {}
            Err(other) => panic!("{other}"),
        }
    }
}

/// The operations are what Cannyls would accept, in the order the live list implies:
/// fresh ids count up from 1, reads/overwrites/deletes name live ids with their sizes,
/// a range's ends are live ids (or equal), and the summary agrees.
fn check_consistent(ops: &[Op]) {
    let mut live: BTreeMap<u64, u32> = BTreeMap::new();
    let mut next = 1;
    for op in ops {
        match *op {
            Op::Put {
                id,
                size,
                embedded,
                overwrite,
            } => {
                if overwrite {
                    assert!(!embedded);
                    assert!(live.contains_key(&id), "{op:?}");
                } else {
                    assert_eq!(id, next);
                    next += 1;
                }
                live.insert(id, size);
            }
            Op::Get { id, size } => assert_eq!(live.get(&id), Some(&size), "{op:?}"),
            Op::Delete { id } => assert!(live.remove(&id).is_some(), "{op:?}"),
            Op::DeleteRange { start, end } => {
                assert!(start <= end);
                assert!(
                    live.contains_key(&start) && live.contains_key(&end),
                    "{op:?}"
                );
                let ids: Vec<u64> = live.range(start..end).map(|(&k, _)| k).collect();
                for id in ids {
                    live.remove(&id);
                }
            }
            Op::Sync => {}
        }
    }
    let s = Summary::of(ops);
    assert_eq!(s.final_live_lumps, live.len() as u64);
    assert_eq!(
        s.final_live_bytes,
        live.values().map(|&v| u64::from(v)).sum::<u64>()
    );
    assert_eq!(s.total_operations, ops.len() as u64);
}

fn leaf() -> impl Strategy<Value = Command> {
    let pct = || 0u8..=100;
    let range = move || (pct(), pct()).prop_map(|(a, b)| (a.min(b), a.max(b)));
    prop_oneof![
        (0..=MAX_PUT_SIZE).prop_map(Command::New),
        (0..=MAX_PUT_SIZE).prop_map(Command::OverWrite),
        (0..=MAX_EMBED_SIZE).prop_map(Command::Embed),
        Just(Command::Get),
        range().prop_map(|(l, r)| Command::GetAt(l, r)),
        Just(Command::Delete),
        range().prop_map(|(l, r)| Command::DeleteAt(l, r)),
        range().prop_map(|(l, r)| Command::DeleteRange(l, r)),
        Just(Command::Sync),
    ]
}

fn command() -> impl Strategy<Value = Command> {
    leaf().prop_recursive(3, 24, 4, |inner| {
        (0u64..5, prop::collection::vec(inner, 0..4))
            .prop_map(|(count, body)| Command::Times { count, body })
    })
}

fn weighted() -> impl Strategy<Value = Weighted> {
    prop_oneof![
        (0u8..=100, command()).prop_map(|(percent, c)| Weighted {
            percent,
            body: vec![c],
            braced: false
        }),
        (0u8..=100, prop::collection::vec(command(), 0..3)).prop_map(|(percent, body)| {
            Weighted {
                percent,
                body,
                braced: true,
            }
        }),
    ]
}

fn section() -> impl Strategy<Value = Section> {
    prop_oneof![
        prop::collection::vec(command(), 0..5).prop_map(Section::Command),
        (0u64..60, prop::collection::vec(weighted(), 0..4))
            .prop_map(|(count, items)| Section::Ordered { count, items }),
        (0u64..60, prop::collection::vec(weighted(), 0..4))
            .prop_map(|(count, items)| Section::Unordered { count, items }),
    ]
}

fn workload() -> impl Strategy<Value = Workload> {
    (
        prop::option::of(any::<u64>()),
        prop::collection::vec(section(), 1..4),
    )
        .prop_map(|(seed, sections)| Workload { seed, sections })
}

#[derive(Debug, Clone)]
enum Mutation {
    Delete { at: usize, len: usize },
    Insert { at: usize, token: usize },
    Replace { at: usize, token: usize },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), 1usize..20).prop_map(|(at, len)| Mutation::Delete { at, len }),
        (any::<usize>(), 0..TOKENS.len()).prop_map(|(at, token)| Mutation::Insert { at, token }),
        (any::<usize>(), 0..TOKENS.len()).prop_map(|(at, token)| Mutation::Replace { at, token }),
    ]
}

fn apply(src: &str, mutations: &[Mutation]) -> String {
    let mut chars: Vec<char> = src.chars().collect();
    for m in mutations {
        let n = chars.len() + 1;
        match *m {
            Mutation::Delete { at, len } => {
                let at = at % n;
                let end = (at + len).min(chars.len());
                if at < end {
                    chars.drain(at..end);
                }
            }
            Mutation::Insert { at, token } => {
                let at = at % n;
                chars.splice(at..at, TOKENS[token].chars());
            }
            Mutation::Replace { at, token } => {
                let at = at % n;
                let end = (at + 1).min(chars.len());
                chars.splice(at..end, TOKENS[token].chars());
            }
        }
    }
    chars.into_iter().collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn random_text_never_panics(src in "\\PC{0,200}") {
        parse_and_expand(&src);
    }

    #[test]
    fn random_token_soup_never_panics(tokens in prop::collection::vec(0..TOKENS.len(), 0..80)) {
        let src: String = tokens.iter().map(|&t| TOKENS[t]).collect::<Vec<_>>().join(" ");
        parse_and_expand(&src);
    }

    #[test]
    fn mutated_shipped_workloads_never_panic(
        which in 0..SHIPPED.len(),
        mutations in prop::collection::vec(mutation(), 1..6),
    ) {
        let src = apply(SHIPPED[which], &mutations);
        parse_and_expand(&src);
        // Errors always point inside the text.
        if let Err(e) = parse("m.wl", &src) {
            prop_assert!(e.line >= 1 && e.column >= 1);
            prop_assert!(e.line <= src.split('\n').count());
            let rendered = e.to_string();
            let prefix = format!("m.wl:{}:{}: ", e.line, e.column);
            prop_assert!(rendered.starts_with(&prefix));
            prop_assert!(rendered.ends_with('^'));
        }
    }

    #[test]
    fn printing_parses_back(w in workload()) {
        let text = w.to_string();
        let back = parse("r.wl", &text);
        prop_assert_eq!(back.as_ref().ok(), Some(&w), "{}", text);
    }

    #[test]
    fn expansion_is_consistent_and_deterministic(
        w in workload(),
        seed in any::<u64>(),
        sync_every in prop::option::of(1u64..5),
        final_sync in any::<bool>(),
        scale in prop_oneof![Just(1.0), 0.1f64..3.0],
    ) {
        let options = GenerateOptions {
            scale,
            seed: Some(seed),
            sync_every: sync_every.and_then(NonZeroU64::new),
            final_sync,
            max_ops: 200_000,
        };
        match expand(&w, &options) {
            Ok(e) => {
                check_consistent(&e.ops);
                prop_assert_eq!(e.seed, seed);
                prop_assert_eq!(expand(&w, &options).ok(), Some(e.clone()));
                if let Some(n) = sync_every {
                    // Without the inserted Syncs, every run of n mutating operations is
                    // followed by one.
                    let mut since = 0;
                    for (k, op) in e.ops.iter().enumerate() {
                        if op.is_mutating() {
                            since += 1;
                            if since == n {
                                prop_assert_eq!(e.ops.get(k + 1), Some(&Op::Sync));
                                since = 0;
                            }
                        }
                    }
                }
            }
            Err(GenerateError::TooLarge { .. }) => {}
            Err(other) => prop_assert!(false, "{}", other),
        }
    }
}

#[test]
fn shipped_workloads_expand_consistently() {
    for src in SHIPPED {
        let w = parse("s.wl", src).unwrap();
        let e = expand(
            &w,
            &GenerateOptions {
                scale: 0.05,
                ..Default::default()
            },
        )
        .unwrap();
        check_consistent(&e.ops);
    }
}
