//! Expansion: hand-computed examples of the live-list semantics, counts, scaling,
//! sync-every, limits and determinism.

use std::collections::BTreeSet;
use std::num::NonZeroU64;

use bencher_workloads::dsl::parse;
use bencher_workloads::generate::{
    count_steps, expand, scale_count, Expansion, GenerateError, GenerateOptions, Op, OpKind,
};
use bencher_workloads::Summary;

fn run_with(src: &str, options: &GenerateOptions) -> Expansion {
    let w = parse("t.wl", src).unwrap_or_else(|e| panic!("{e}"));
    expand(&w, options).unwrap()
}

fn run(src: &str) -> Expansion {
    run_with(src, &GenerateOptions::default())
}

fn put(id: u64, size: u32) -> Op {
    Op::Put {
        id,
        size,
        embedded: false,
        overwrite: false,
    }
}

fn kinds(ops: &[Op]) -> String {
    ops.iter()
        .map(|op| match op.kind() {
            OpKind::New => 'P',
            OpKind::OverWrite => 'O',
            OpKind::Embed => 'E',
            OpKind::Get => 'G',
            OpKind::Delete => 'D',
            OpKind::DeleteRange => 'R',
            OpKind::Sync => 'S',
        })
        .collect()
}

/// The ids read by the `Get`s.
fn got(ops: &[Op]) -> Vec<u64> {
    ops.iter()
        .filter_map(|op| match op {
            Op::Get { id, .. } => Some(*id),
            _ => None,
        })
        .collect()
}

#[test]
fn ids_count_from_one_and_embed_is_flagged() {
    let e = run("Command { New(10); Embed(20); New(30); Sync; }");
    assert_eq!(
        e.ops,
        vec![
            put(1, 10),
            Op::Put {
                id: 2,
                size: 20,
                embedded: true,
                overwrite: false
            },
            put(3, 30),
            Op::Sync
        ]
    );
    assert_eq!(e.seed, 0);
    assert_eq!(e.skipped, 0);
}

#[test]
fn delete_0_0_removes_the_oldest() {
    let e =
        run("Seed: 1; Command { 5.times { New(1K); }; Delete(0, 0); Delete(0, 0); Get(0, 0); }");
    assert_eq!(
        e.ops[5..],
        [
            Op::Delete { id: 1 },
            Op::Delete { id: 2 },
            Op::Get { id: 3, size: 1024 }
        ]
    );
}

#[test]
fn get_by_position_with_l_equal_r() {
    // L = 10: p = ⌊10·l/100⌋, index max(p − 1, 0).
    let e = run("Command { 10.times { New(1); }; \
                 Get(0, 0); Get(5, 5); Get(10, 10); Get(19, 19); Get(20, 20); Get(50, 50); Get(99, 99); Get(100, 100); }");
    assert_eq!(got(&e.ops), vec![1, 1, 1, 1, 2, 5, 9, 10]);
}

#[test]
fn get_by_position_with_a_range() {
    // L = 10, Get(20, 30): p ∈ {2, 3}, index ∈ {1, 2}: ids 2 and 3, both drawn.
    let e = run("Command { 10.times { New(1); }; 400.times { Get(20, 30); }; }");
    let ids: BTreeSet<u64> = got(&e.ops).into_iter().collect();
    assert_eq!(ids, BTreeSet::from([2, 3]));
    // L = 5000, Get(1, 5) (rand-oldest-1m): p ∈ [50, 250], index ∈ [49, 249]: ids 50..=250.
    let e = run("Seed: 4; Command { 5000.times { New(1); }; 20000.times { Get(1, 5); }; }");
    let ids: BTreeSet<u64> = got(&e.ops).into_iter().collect();
    assert_eq!(ids, (50..=250).collect::<BTreeSet<u64>>());
    // Get(0, 100) over L = 4: p ∈ 0..=4 → index 0,0,1,2,3: every id, id 1 twice as often.
    let e = run("Command { 4.times { New(1); }; 10000.times { Get(0, 100); }; }");
    let g = got(&e.ops);
    let count = |id| g.iter().filter(|&&x| x == id).count();
    assert!((3600..4400).contains(&count(1)), "{}", count(1));
    for id in 2..=4 {
        assert!((1700..2300).contains(&count(id)), "{id}: {}", count(id));
    }
}

/// cannyls_bencher (4de308c, `generator.rs`) expands `Get` and `Delete` as `get(state, 0, 100)`
/// and `delete(state, 0, 100)`: the same choice by age as `Get(0, 100)` and `Delete(0, 100)`.
#[test]
fn plain_get_and_delete_are_the_0_100_forms_as_in_cannyls_bencher() {
    for (plain, bounded) in [("Get", "Get(0, 100)"), ("Delete", "Delete(0, 100)")] {
        let with = |cmd: &str| {
            run(&format!(
                "Seed: 11; Command {{ 40.times {{ New(1); }}; }} \
                 Unordered[300] {{ <50%> New(2); <50%> {cmd}; }}"
            ))
            .ops
        };
        assert_eq!(with(plain), with(bounded), "{plain} and {bounded} differ");
    }
    // Over L = 4, p ∈ 0..=4 → position 0,0,1,2,3: lump 1 twice as often as each other one.
    let e = run("Command { 4.times { New(1); }; 10000.times { Get; }; }");
    let g = got(&e.ops);
    let count = |id| g.iter().filter(|&&x| x == id).count();
    assert!((3600..4400).contains(&count(1)), "{}", count(1));
    for id in 2..=4 {
        assert!((1700..2300).contains(&count(id)), "{id}: {}", count(id));
    }
    // Delete: every lump deleted once, in some order; then nothing is left to delete.
    let e = run("Command { 50.times { New(1); }; 60.times { Delete; }; }");
    let deleted: Vec<u64> = e.ops[50..]
        .iter()
        .map(|op| match op {
            Op::Delete { id } => *id,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        deleted.iter().copied().collect::<BTreeSet<_>>(),
        (1..=50).collect()
    );
    assert_ne!(deleted, (1..=50).collect::<Vec<_>>());
    assert_eq!(e.skipped, 10);
}

/// `OverWrite` picks among the live lumps uniformly, as cannyls_bencher's `choose(0, L - 1)`.
#[test]
fn overwrite_is_uniform() {
    let e = run("Command { 4.times { New(1); }; 8000.times { OverWrite(2); }; }");
    let ids: Vec<u64> = e.ops[4..]
        .iter()
        .map(|op| match op {
            Op::Put {
                id,
                overwrite: true,
                ..
            } => *id,
            other => panic!("{other:?}"),
        })
        .collect();
    for id in 1..=4 {
        let n = ids.iter().filter(|&&x| x == id).count();
        assert!((1700..2300).contains(&n), "{id}: {n}");
    }
}

#[test]
fn delete_by_position_keeps_order() {
    // L = 10, Delete(50, 50): p = 5, index 4: id 5; then L = 9, p = 4, index 3: id 4; then
    // L = 8, Delete(100, 100): index 7, the newest (id 10).
    let e = run(
        "Command { 10.times { New(1); }; Delete(50, 50); Delete(50, 50); Delete(100, 100); \
                 Get(0, 0); Get(100, 100); Get(50, 50); }",
    );
    assert_eq!(
        e.ops[10..13],
        [
            Op::Delete { id: 5 },
            Op::Delete { id: 4 },
            Op::Delete { id: 10 }
        ]
    );
    // Live now [1, 2, 3, 6, 7, 8, 9]: L = 7, Get(50, 50): p = 3, index 2: id 3.
    assert_eq!(got(&e.ops), vec![1, 9, 3]);
}

#[test]
fn delete_range_positions() {
    let e = run("Command { 10.times { New(1); };
        DeleteRange(0, 50);   # L = 10: x = 0, y = ⌊9·50/100⌋ = 4: ids 1..5, removes 4
        Get(0, 0);            # oldest is now 5
        DeleteRange(0, 100);  # L = 6 [5..=10]: x = 0, y = 5: ids 5..10, removes 5
        Get(0, 0);            # only 10 is left
        DeleteRange(0, 100);  # L = 1: x = y = 0: the empty range 10..10, removes nothing
        Get;
    }");
    assert_eq!(
        e.ops[10..],
        [
            Op::DeleteRange { start: 1, end: 5 },
            Op::Get { id: 5, size: 1 },
            Op::DeleteRange { start: 5, end: 10 },
            Op::Get { id: 10, size: 1 },
            Op::DeleteRange { start: 10, end: 10 },
            Op::Get { id: 10, size: 1 },
        ]
    );
    // L = 100, DeleteRange(10, 20): x = ⌊99·10/100⌋ = 9, y = ⌊99·20/100⌋ = 19: ids 10..20.
    let e =
        run("Command { 100.times { New(1); }; DeleteRange(10, 20); Get(10, 10); Get(11, 11); }");
    assert_eq!(e.ops[100], Op::DeleteRange { start: 10, end: 20 });
    // Live: 1..=9, 20..=100 (L = 90). Get(10,10): p = 9, index 8: id 9; Get(11, 11): p = 9 too.
    assert_eq!(got(&e.ops), vec![9, 9]);
    let s = Summary::of(&e.ops);
    assert_eq!(s.final_live_lumps, 90);
}

#[test]
fn overwrite_changes_the_size_and_the_peak() {
    let e = run(
        "Command { New(100); New(100); OverWrite(1000); Get(0, 100); Delete; Delete; Delete; }",
    );
    let overwritten = match e.ops[2] {
        Op::Put {
            id,
            size: 1000,
            embedded: false,
            overwrite: true,
        } => id,
        other => panic!("{other:?}"),
    };
    assert!(overwritten == 1 || overwritten == 2);
    let s = Summary::of(&e.ops);
    assert_eq!(s.put_bytes, 1200);
    assert_eq!((s.new_puts, s.overwrites, s.operations.put), (2, 1, 3));
    assert_eq!(s.peak_live_bytes, 1100);
    assert_eq!(s.peak_live_lumps, 2);
    assert_eq!((s.final_live_lumps, s.final_live_bytes), (0, 0));
    assert_eq!(e.skipped, 1); // the third Delete
                              // A Get reports the size the lump has now.
    let e = run("Command { New(5); OverWrite(7); Get; }");
    assert_eq!(e.ops[2], Op::Get { id: 1, size: 7 });
}

#[test]
fn commands_on_an_empty_list_are_skipped() {
    let e = run(
        "Command { Get; Get(1, 5); Delete; Delete(0, 0); OverWrite(5); DeleteRange(0, 100);
                 New(1); Delete; Get; Sync; }",
    );
    assert_eq!(kinds(&e.ops), "PDS");
    assert_eq!(e.skipped, 7);
    let s = Summary::of(&e.ops);
    assert_eq!(s.total_operations, 3);
}

#[test]
fn ordered_emits_copies_in_item_order() {
    let e = run("Ordered[10] { <30%> New(1); <20%> Get(100, 100); <50%> Sync; <0%> Delete; }");
    assert_eq!(kinds(&e.ops), "PPPGGSSSSS");
    assert_eq!(got(&e.ops), vec![3, 3]);
    // ⌊N·p/100⌋: 7·33/100 = 2.31 → 2; percentages need not add up to 100.
    let e = run("Ordered[7] { <33%> New(1); <100%> Sync; <100%> { New(2); Sync; }; }");
    assert_eq!(kinds(&e.ops), "PPSSSSSSSPSPSPSPSPSPSPS");
}

#[test]
fn unordered_shuffles_the_same_multiset_and_keeps_blocks_whole() {
    let ordered = run("Command { 100.times { New(1); }; } Ordered[1000] { <40%> Get; <35%> New(2); <25%> Delete; }");
    let unordered =
        run("Command { 100.times { New(1); }; } Unordered[1000] { <40%> Get; <35%> New(2); <25%> Delete; }");
    let count = |e: &Expansion| {
        let s = Summary::of(&e.ops);
        (s.operations, s.put_bytes)
    };
    assert_eq!(count(&ordered), count(&unordered));
    assert_ne!(kinds(&ordered.ops), kinds(&unordered.ops));
    // A braced item's copies run whole.
    let e = run("Unordered[200] { <50%> { New(7); Sync; }; <50%> Get; }");
    let k = kinds(&e.ops);
    assert_eq!(k.matches("PS").count(), 100);
    assert_eq!(k.matches('S').count(), 100);
}

#[test]
fn determinism_and_seeds() {
    let src = "Seed: 7; Command { 100.times { New(1); }; } Unordered[500] { <50%> Get; <30%> Delete(0, 50); <20%> OverWrite(9); }";
    assert_eq!(run(src), run(src));
    assert_eq!(run(src).seed, 7);
    // The option overrides the file's seed; another seed gives another order.
    let same = run_with(
        src,
        &GenerateOptions {
            seed: Some(7),
            ..Default::default()
        },
    );
    assert_eq!(same, run(src));
    let other = run_with(
        src,
        &GenerateOptions {
            seed: Some(8),
            ..Default::default()
        },
    );
    assert_eq!(other.seed, 8);
    assert_ne!(kinds(&other.ops), kinds(&run(src).ops));
    // No Seed: is seed 0.
    let no_seed = src.replacen("Seed: 7;", "", 1);
    let zero = src.replacen("Seed: 7;", "Seed: 0;", 1);
    assert_eq!(run(&no_seed), run(&zero));
}

#[test]
fn scaling_rounds_to_nearest_and_at_least_one() {
    assert_eq!(scale_count(5, 0.5), 3); // 2.5 rounds away from zero
    assert_eq!(scale_count(100, 0.014), 1);
    assert_eq!(scale_count(100, 0.015), 2);
    assert_eq!(scale_count(1, 0.01), 1);
    assert_eq!(scale_count(100_000, 0.01), 1000);
    assert_eq!(scale_count(0, 10.0), 0);
    assert_eq!(scale_count(3, 2.5), 8); // 7.5 → 8
    assert_eq!(scale_count(u64::MAX, 1.0), u64::MAX);
    assert_eq!(scale_count(u64::MAX - 1, 1.0), u64::MAX - 1);
    assert_eq!(scale_count(u64::MAX, 3.0), u64::MAX);
    assert_eq!(scale_count(1, f64::MIN_POSITIVE), 1);

    let scaled = |src: &str, scale: f64| {
        run_with(
            src,
            &GenerateOptions {
                scale,
                ..Default::default()
            },
        )
    };
    // Every count scales: N.times (10 → 3 and 2 → 1), Ordered[N] and Unordered[N].
    let e = scaled("Command { 10.times { New(1); 2.times { Get; }; }; }", 0.25);
    assert_eq!(kinds(&e.ops), "PGPGPG");
    let e = scaled("Ordered[1000] { <50%> New(1); <50%> Sync; }", 0.01);
    assert_eq!(kinds(&e.ops), "PPPPPSSSSS");
    // Ordered[10] at 0.01 is Ordered[1]: ⌊1·50/100⌋ = 0 copies.
    let e = scaled("Unordered[10] { <50%> New(1); <100%> Sync; }", 0.01);
    assert_eq!(kinds(&e.ops), "S");
    let e = scaled("Command { 3.times { New(1); }; }", 2.0);
    assert_eq!(e.ops.len(), 6);
}

#[test]
fn sync_every_counts_mutating_operations() {
    let options = GenerateOptions {
        sync_every: NonZeroU64::new(2),
        ..Default::default()
    };
    let e = run_with("Command { 5.times { New(1); Get; }; Delete; Embed(1); Sync; OverWrite(3); DeleteRange(0, 100); }", &options);
    // Mutating: P P | P P | P D | E O | R → a Sync after each pair; the written Sync (after
    // E) does not reset the count, and none is added after the odd R at the end.
    assert_eq!(kinds(&e.ops), "PGPSGPGPSGPGDSESOSR");
    let e = run_with(
        "Command { New(1); New(1); New(1); }",
        &GenerateOptions {
            sync_every: NonZeroU64::new(1),
            ..Default::default()
        },
    );
    assert_eq!(kinds(&e.ops), "PSPSPS");
    // Skipped commands are not operations.
    let e = run_with("Command { Delete; Delete; New(1); Delete; }", &options);
    assert_eq!(kinds(&e.ops), "PDS");
}

#[test]
fn final_sync_ends_the_run_with_one_sync() {
    let options = GenerateOptions {
        final_sync: true,
        ..Default::default()
    };
    assert_eq!(
        kinds(&run_with("Command { New(1); Get; }", &options).ops),
        "PGS"
    );
    // A workload that ends with a Sync gets no second one.
    assert_eq!(
        kinds(&run_with("Command { 2.times { New(1); Sync; }; }", &options).ops),
        "PSPS"
    );
    // With sync_every too: the last mutating operation's Sync ends it already.
    let both = GenerateOptions {
        sync_every: NonZeroU64::new(1),
        ..options.clone()
    };
    assert_eq!(kinds(&run_with("Command { New(1); }", &both).ops), "PS");
    // Off by default.
    assert_eq!(kinds(&run("Command { New(1); Get; }").ops), "PG");
}

#[test]
fn oversized_expansions_are_refused_not_allocated() {
    let w = parse(
        "t.wl",
        "Command { 1000000000.times { 1000000000.times { New(1); }; }; }",
    )
    .unwrap();
    assert_eq!(count_steps(&w, 1.0), 1_000_000_000_000_000_000);
    assert_eq!(
        expand(&w, &GenerateOptions::default()),
        Err(GenerateError::TooLarge {
            steps: 1_000_000_000_000_000_000,
            limit: 100_000_000
        })
    );
    // Saturating arithmetic: no overflow however deep or large.
    let max = u64::MAX;
    let src = format!("Command {{ {max}.times {{ {max}.times {{ {max}.times {{ Get; }}; }}; }}; }} Unordered[{max}] {{ <100%> {max}.times {{ New(1); }}; }}");
    let w = parse("t.wl", &src).unwrap();
    assert_eq!(count_steps(&w, 1.0), u128::MAX);
    assert!(matches!(
        expand(&w, &GenerateOptions::default()),
        Err(GenerateError::TooLarge { .. })
    ));
    // Empty loops count too: they would spin, not allocate.
    let w = parse(
        "t.wl",
        "Command { 1000000000000.times { }; } Unordered[1000000000000] { <100%> { }; }",
    )
    .unwrap();
    assert_eq!(count_steps(&w, 1.0), 2_000_000_000_000);
    assert!(expand(&w, &GenerateOptions::default()).is_err());
    // The limit is inclusive.
    let w = parse("t.wl", "Command { 10.times { New(1); }; }").unwrap();
    let limited = |max_ops| GenerateOptions {
        max_ops,
        ..Default::default()
    };
    assert_eq!(expand(&w, &limited(10)).unwrap().ops.len(), 10);
    assert_eq!(
        expand(&w, &limited(9)),
        Err(GenerateError::TooLarge {
            steps: 10,
            limit: 9
        })
    );
    // Scaling applies before the check.
    let w = parse("t.wl", "Command { 1000000000000.times { New(1); }; }").unwrap();
    let e = expand(
        &w,
        &GenerateOptions {
            scale: 1e-9,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(e.ops.len(), 1000);
}

#[test]
fn invalid_scales_are_refused() {
    let w = parse("t.wl", "Command { New(1); }").unwrap();
    for scale in [0.0, -1.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        let r = expand(
            &w,
            &GenerateOptions {
                scale,
                ..Default::default()
            },
        );
        assert!(matches!(r, Err(GenerateError::InvalidScale(_))), "{scale}");
    }
}

#[test]
fn a_pinned_expansion() {
    // Pins the generator (ChaCha8 + our sampling): a change here changes every workload's
    // operations, so it must be deliberate. (Changed deliberately once: `Get` and `Delete`
    // became `Get(0, 100)` and `Delete(0, 100)`, cannyls_bencher's meaning.)
    let e = run(
        "Seed: 42; Command { 10.times { New(1); }; } Unordered[10] { <50%> Get; <50%> Delete; }",
    );
    assert_eq!(kinds(&e.ops[10..]), PINNED_KINDS);
    let ids: Vec<u64> = e.ops[10..]
        .iter()
        .map(|op| match op {
            Op::Get { id, .. } | Op::Delete { id } => *id,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(ids, PINNED_IDS);
}

const PINNED_KINDS: &str = "GDDDGGGDGD";
const PINNED_IDS: [u64; 10] = [7, 8, 3, 7, 6, 2, 5, 6, 2, 4];
