//! Parser: every construct, the lenient corners, and errors with exact positions.

use bencher_workloads::dsl::{
    parse, parse_bytes, Command, Section, Weighted, Workload, MAX_EMBED_SIZE, MAX_NESTING,
    MAX_PUT_SIZE,
};
use Command::*;

fn ok(src: &str) -> Workload {
    match parse("t.wl", src) {
        Ok(w) => w,
        Err(e) => panic!("did not parse:\n{e}"),
    }
}

/// The commands of a one-section `Command { … }` workload.
fn commands(body: &str) -> Vec<Command> {
    match ok(&format!("Command {{ {body} }}")).sections.as_slice() {
        [Section::Command(c)] => c.clone(),
        other => panic!("{other:?}"),
    }
}

/// (line, column, message) of the error.
fn err(src: &str) -> (usize, usize, String) {
    let e = parse("t.wl", src).expect_err("parsed");
    (e.line, e.column, e.message)
}

fn item(percent: u8, body: Vec<Command>, braced: bool) -> Weighted {
    Weighted {
        percent,
        body,
        braced,
    }
}

#[test]
fn every_command() {
    assert_eq!(
        commands(
            "New(1); OverWrite(2); Embed(3); Get; Get(1, 5); Delete; Delete(0,0); \
             DeleteRange(10, 90); Sync;"
        ),
        vec![
            New(1),
            OverWrite(2),
            Embed(3),
            Get,
            GetAt(1, 5),
            Delete,
            DeleteAt(0, 0),
            DeleteRange(10, 90),
            Sync
        ]
    );
}

#[test]
fn sizes_and_limits() {
    assert_eq!(
        commands("New(0); New(7); New(256K); New(4M); OverWrite(1K); Embed(63K); Embed(65535);"),
        vec![
            New(0),
            New(7),
            New(256 * 1024),
            New(4 << 20),
            OverWrite(1024),
            Embed(63 * 1024),
            Embed(65535)
        ]
    );
    assert_eq!(MAX_PUT_SIZE, 33_553_918);
    assert_eq!(MAX_EMBED_SIZE, 65_535);
    assert_eq!(
        commands("New(33553918); OverWrite(33553918);"),
        vec![New(MAX_PUT_SIZE), OverWrite(MAX_PUT_SIZE)]
    );
    // One over each limit; G only fits nowhere (1G > the lump limit).
    let (l, c, m) = err("Command { New(33553919); }");
    assert_eq!((l, c), (1, 15));
    assert_eq!(
        m,
        "`New` size 33553919 is over the limit of 33553918 bytes \
         (0xFFFF × 512 − 2, the largest Cannyls lump)"
    );
    let (_, c, m) = err("Command { OverWrite(32M); }");
    assert_eq!(c, 21);
    assert!(
        m.starts_with("`OverWrite` size 32M (33554432 bytes) is over the limit"),
        "{m}"
    );
    let (_, c, m) = err("Command { Embed(64K); }");
    assert_eq!(c, 17);
    assert_eq!(
        m,
        "`Embed` size 64K (65536 bytes) is over the limit of 65535 bytes (the largest embedded lump)"
    );
    let (_, c, m) = err("Command { New(1G); }");
    assert_eq!(c, 15);
    assert!(m.contains("1G (1073741824 bytes)"), "{m}");
    // Overflowing the multiplication or u64 is the same kind of error, not a panic.
    let (_, c, m) = err("Command { New(18446744073709551615G); }");
    assert_eq!(c, 15);
    assert!(
        m.starts_with("`New` size 18446744073709551615G is over the limit"),
        "{m}"
    );
    let (_, c, m) = err("Command { New(99999999999999999999999); }");
    assert_eq!(c, 15);
    assert!(
        m.starts_with("number `99999999999999999999999` is too large"),
        "{m}"
    );
    // Suffixes are K, M, G only, directly after the digits.
    let (_, c, m) = err("Command { New(4k); }");
    assert_eq!(c, 16);
    assert_eq!(
        m,
        "unknown size suffix `k` (expected K, M or G, powers of 1024)"
    );
    // The command line's units are named, not taken (issue 31: 1MB is 10^6 bytes there).
    for text in ["Command { New(1MB); }", "Command { New(1MiB); }"] {
        let (_, c, m) = err(text);
        assert_eq!(c, 16, "{text}");
        assert!(m.starts_with("unknown size suffix `M"), "{text}: {m}");
        assert!(m.contains("expected K, M or G, powers of 1024"), "{m}");
        assert!(m.contains("no KB, MB, GB or KiB, MiB, GiB"), "{m}");
    }
    let (_, c, m) = err("Command { New(4 K); }");
    assert_eq!(c, 17);
    assert_eq!(m, "expected `)`, found `K`");
}

#[test]
fn percentages() {
    assert_eq!(commands("Get(0, 100);"), vec![GetAt(0, 100)]);
    let (_, c, m) = err("Command { Get(1, 101); }");
    assert_eq!(c, 18);
    assert_eq!(m, "a percentage must be 0 to 100, found 101");
    let (_, c, m) = err("Command { DeleteRange(50, 10); }");
    assert_eq!(c, 23);
    assert_eq!(
        m,
        "the range 50%..10% is backwards: the first percentage must not be larger than the second"
    );
    let (_, c, m) = err("Unordered[10] { <101%> Get; }");
    assert_eq!(c, 18);
    assert_eq!(m, "a percentage must be 0 to 100, found 101");
    let (_, c, m) = err("Command { Delete(5); }");
    assert_eq!(c, 19);
    assert_eq!(m, "expected `,`, found `)`");
}

#[test]
fn sections_times_and_weighted_items() {
    let w = ok("Seed: 42;
        Command { New(1); 3.times { Get; 2.times { Sync; }; }; }
        Ordered[100] { <10%> Get; <20%> { New(1); Delete; }; <0%> Sync; }
        Unordered[7] { <50%> 2.times { New(2); }; <50%> Delete(1, 5); }");
    assert_eq!(w.seed, Some(42));
    assert_eq!(
        w.sections,
        vec![
            Section::Command(vec![
                New(1),
                Times {
                    count: 3,
                    body: vec![
                        Get,
                        Times {
                            count: 2,
                            body: vec![Sync]
                        }
                    ]
                }
            ]),
            Section::Ordered {
                count: 100,
                items: vec![
                    item(10, vec![Get], false),
                    item(20, vec![New(1), Delete], true),
                    item(0, vec![Sync], false),
                ]
            },
            Section::Unordered {
                count: 7,
                items: vec![
                    item(
                        50,
                        vec![Times {
                            count: 2,
                            body: vec![New(2)]
                        }],
                        false
                    ),
                    item(50, vec![DeleteAt(1, 5)], false),
                ]
            },
        ]
    );
    // Empty bodies are fine.
    let w = ok("Command { } Ordered[5] { } Unordered[0] { <5%> { }; } Command { 0.times { }; }");
    assert_eq!(w.seed, None);
    assert_eq!(w.sections.len(), 4);
}

#[test]
fn optional_semicolons_after_braces() {
    // The grammar's `;` after `N.times {…}` and `<p%> {…}` may be left out, and one after a
    // section's `}` is tolerated; all these mean the same.
    let strict = ok("Command { 2.times { New(1); }; } Unordered[4] { <50%> { Get; }; }");
    let lenient = ok("Command { 2.times { New(1); } } Unordered[4] { <50%> { Get; } };");
    assert_eq!(strict, lenient);
    // But a command still needs its `;`.
    // The caret goes where the `;` belongs: right after the command.
    let (_, c, m) = err("Command { New(1) }");
    assert_eq!(c, 17);
    assert_eq!(m, "expected `;` after the command, found `}`");
}

#[test]
fn whitespace_and_comments_are_free_between_tokens() {
    let tight = ok("Seed:1;Command{2.times{New(1K);Get(1,5);};}Ordered[3]{<50%>Sync;}");
    let loose = ok(
        "# header\n\n  Seed : 1 ; # the seed\r\n\tCommand\n{\n 2 . times # loop\n { New ( 1K ) ;\n\
         Get ( 1 , 5 ) ; } ; }\nOrdered [ 3 ] { < 50 % > Sync ; } # end",
    );
    assert_eq!(tight, loose);
    // A comment runs to the end of the line only, even with a lone CR in it.
    assert_eq!(ok("Command { # a\r b }\nNew(1); }").sections.len(), 1);
    // A byte-order mark is whitespace.
    assert_eq!(ok("\u{feff}Command { }").sections.len(), 1);
}

#[test]
fn the_reference_workload_shapes() {
    let w = ok(
        "Command {\n  625.times {\n    32.times {\n      New(256K);\n    };\n    Sync;\n  };\n}\n",
    );
    assert_eq!(
        w.sections,
        vec![Section::Command(vec![Times {
            count: 625,
            body: vec![
                Times {
                    count: 32,
                    body: vec![New(262_144)]
                },
                Sync
            ]
        }])]
    );
}

#[test]
fn errors_have_exact_positions() {
    let cases: &[(&str, usize, usize, &str)] = &[
        ("", 1, 1, "expected a section (`Command {`, `Ordered[N] {` or `Unordered[N] {`), found end of file"),
        ("# only a comment\n", 2, 1, "expected a section (`Command {`, `Ordered[N] {` or `Unordered[N] {`), found end of file"),
        ("Seed: 1;", 1, 9, "expected a section (`Command {`, `Ordered[N] {` or `Unordered[N] {`), found end of file"),
        ("Seed 1;", 1, 6, "expected `:` after `Seed`, found `1`"),
        ("Seed: x;", 1, 7, "expected a seed (a number), found `x`"),
        ("Seed: 1", 1, 8, "expected `;` after the seed, found end of file"),
        ("Seed: 18446744073709551616;", 1, 7, "number `18446744073709551616` is too large (the largest is 18446744073709551615)"),
        ("Command { }\nSeed: 1;", 2, 1, "`Seed:` must come before the first section"),
        ("Seed: 1;\nSeed: 2;", 2, 1, "a second `Seed:`; a workload has at most one"),
        ("Commands { }", 1, 1, "expected a section (`Command {`, `Ordered[N] {` or `Unordered[N] {`), found `Commands`"),
        ("Command New(1);", 1, 9, "expected `{` after `Command`, found `New`"),
        ("Command {\n  New(1);\n  Gte;\n}", 3, 3, "expected a command or `}`, found `Gte`"),
        ("Command {\n  New(1);\n", 3, 1, "expected a command or `}`, found end of file"),
        ("Command { New(1); Ordered[1] { } }", 1, 19, "expected a command or `}`, found `Ordered`"),
        ("Command { New(1);; }", 1, 18, "expected a command or `}`, found `;`"),
        ("Command { New 1); }", 1, 15, "expected `(` after `New`, found `1`"),
        ("Command { New(); }", 1, 15, "expected a size (bytes, or a number with K, M or G), found `)`"),
        ("Command { New(1; }", 1, 16, "expected `)`, found `;`"),
        ("Command { DeleteRange; }", 1, 22, "expected `(` after `DeleteRange`, found `;`"),
        ("Command { Sync(1); }", 1, 15, "expected `;` after the command, found `(`"),
        ("Command { 3 { New(1); }; }", 1, 13, "expected `.times` after the count, found `{`"),
        ("Command { 3.time { New(1); }; }", 1, 13, "expected `times`, found `time`"),
        ("Command { 3.times New(1); }", 1, 19, "expected `{` after `.times`, found `New`"),
        ("Command { x.times { }; }", 1, 11, "expected a command or `}`, found `x`"),
        ("Ordered { }", 1, 9, "expected `[` after `Ordered`, found `{`"),
        ("Unordered[] { }", 1, 11, "expected a count, found `]`"),
        ("Unordered[-1] { }", 1, 11, "expected a count, found `-`"),
        ("Ordered[1 { }", 1, 11, "expected `]`, found `{`"),
        ("Ordered[1] <1%> Get;", 1, 12, "expected `{`, found `<`"),
        ("Ordered[1] { Get; }", 1, 14, "expected a weighted item `<p%> …` or `}`, found `Get`"),
        ("Ordered[1] { <5> Get; }", 1, 16, "expected `%`, found `>`"),
        ("Ordered[1] { <5%> ; }", 1, 19, "expected a command or `{`, found `;`"),
        ("Ordered[1] { <5%> Get }", 1, 22, "expected `;` after the command, found `}`"),
        ("Ordered[1] { <5%> { Get } }", 1, 24, "expected `;` after the command, found `}`"),
        ("Command { New(1); } @", 1, 21, "expected a section (`Command {`, `Ordered[N] {` or `Unordered[N] {`), found `@`"),
        ("Command { New(1); } é", 1, 21, "expected a section (`Command {`, `Ordered[N] {` or `Unordered[N] {`), found `é`"),
        ("Command {\n\tNew(1)\n}", 2, 8, "expected `;` after the command, found `}`"),
    ];
    for &(src, line, column, message) in cases {
        let e = parse("t.wl", src).expect_err(src);
        assert_eq!(
            (e.line, e.column, e.message.as_str()),
            (line, column, message),
            "for {src:?}"
        );
    }
}

#[test]
fn error_rendering_has_file_line_column_source_and_caret() {
    let src = "# demo\nCommand {\n  New(256K)\n  Get;\n}\n";
    let e = parse("workloads/demo.wl", src).unwrap_err();
    assert_eq!(
        e.to_string(),
        "workloads/demo.wl:3:12: expected `;` after the command, found `Get`\n  New(256K)\n           ^"
    );
    // Tabs are copied so that the caret stays under the column; columns count characters.
    let e = parse("x.wl", "Command {\n\t\u{e9}\n}").unwrap_err();
    assert_eq!(
        e.to_string(),
        "x.wl:2:2: expected a command or `}`, found `é`\n\té\n\t^"
    );
    let e = parse("x.wl", "Command { Get(1,\n  200); }").unwrap_err();
    assert_eq!(
        e.to_string(),
        "x.wl:2:3: a percentage must be 0 to 100, found 200\n  200); }\n  ^"
    );
}

#[test]
fn invalid_utf8_is_a_parse_error() {
    let e = parse_bytes("b.wl", b"Command {\n  New(1);\xff\n}").unwrap_err();
    assert_eq!((e.line, e.column), (2, 10));
    assert_eq!(e.message, "the file is not valid UTF-8");
    assert!(parse_bytes("b.wl", b"Command { }").is_ok());
}

#[test]
fn nesting_is_limited() {
    // A section's braces count as one level: MAX_NESTING − 1 nested `times` are fine.
    let nested = |n: usize| format!("Command {{ {} {} }}", "1.times {".repeat(n), "};".repeat(n));
    assert!(parse("n.wl", &nested(MAX_NESTING - 1)).is_ok());
    let (l, c, m) = err(&nested(MAX_NESTING));
    assert_eq!((l, c), (1, 11 + 9 * (MAX_NESTING - 1)));
    assert_eq!(m, format!("blocks are nested more than {MAX_NESTING} deep"));
    // Far deeper input fails the same way instead of overflowing the stack.
    assert!(parse("n.wl", &nested(100_000)).is_err());
}

#[test]
fn display_round_trips() {
    let src = "Seed: 9;
        Command { New(1); Embed(2); OverWrite(3); 3.times { Get; Get(1, 5); 2.times { Sync; }; }; }
        Ordered[100] { <10%> Delete; <20%> { New(1); DeleteRange(0, 10); }; <5%> { }; <1%> 4.times { Delete(2, 3); }; }
        Unordered[7] { <50%> { Sync; }; }";
    let w = ok(src);
    let printed = w.to_string();
    assert_eq!(ok(&printed), w, "{printed}");
}
