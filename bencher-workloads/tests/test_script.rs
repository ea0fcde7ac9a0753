//! `scripts/test.sh` on a small workspace of its own (the script next to a copy of it): every
//! step runs whatever an earlier one gave, and the last line says what happened — "N passed,
//! 0 failed (all N tests passed …)" with exit status 0, or "N passed, M failed: WHAT; …" with
//! exit status 1, naming a formatting failure, each failed test with the command that reruns
//! it, and a test binary that crashed. (In a one-package workspace cargo names a test
//! binary without `-p`.) Tests that skipped at run time (testutil::print_skip's notice) are
//! counted apart from the passed ones and named; the summary's awk is also run on canned logs.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// test.sh's summary of cargo test's output.
const SUMMARY_AWK: &str = "scripts/lib/test-summary.awk";

/// The reliability suites whose counts test.sh expects to find.
const SUITES: [&str; 7] = [
    "crash_sweep",
    "crash_sweep_512e",
    "cannyls_crash",
    "cannyls_crash_512",
    "cannyls_crash_512e",
    "cannyls_crash_512e_512",
    "io_errors",
];

/// A workspace with one package, `toy`: a unit test, `tests/counts.rs` leaving every suite's
/// counts line (as the real suites do), and, when `broken`, a badly formatted file,
/// `tests/cli.rs` with one passing and one failing test and `tests/boom.rs` that aborts.
fn workspace(dir: &Path, broken: bool) {
    fs::create_dir_all(dir.join("scripts/lib")).unwrap();
    fs::copy(repo().join("scripts/test.sh"), dir.join("scripts/test.sh")).unwrap();
    fs::copy(repo().join(SUMMARY_AWK), dir.join(SUMMARY_AWK)).unwrap();
    fs::write(
        dir.join("Cargo.toml"),
        "[workspace]\nmembers = [\"toy\"]\nresolver = \"2\"\n",
    )
    .unwrap();
    let toy = dir.join("toy");
    fs::create_dir_all(toy.join("src")).unwrap();
    fs::create_dir_all(toy.join("tests")).unwrap();
    fs::write(
        toy.join("Cargo.toml"),
        "[package]\nname = \"toy\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    )
    .unwrap();
    fs::write(
        toy.join("src/lib.rs"),
        "//! A toy.\n\n/// Two.\npub fn two() -> u32 {\n    2\n}\n\n#[cfg(test)]\nmod tests {\n    \
         #[test]\n    fn two() {\n        assert_eq!(super::two(), 2);\n    }\n}\n",
    )
    .unwrap();
    // (Formatted as rustfmt would: test.sh checks the formatting.)
    let counts = "#[test]\nfn counts() {\n    let dir = env!(\"CARGO_TARGET_TMPDIR\");\n    \
                  for s in std::env::var(\"TOY_SUITES\").unwrap().split(',') {\n        \
                  let line = format!(\"{s}: crash points: 1, panics: 0\\n\");\n        \
                  std::fs::write(format!(\"{dir}/reliability-{s}.txt\"), line).unwrap();\n    \
                  }\n}\n";
    fs::write(toy.join("tests/counts.rs"), counts).unwrap();
    if broken {
        fs::write(toy.join("tests/ugly.rs"), "#[test]\nfn   ugly( ) {}\n").unwrap();
        fs::write(
            toy.join("tests/cli.rs"),
            "#[test]\nfn fine() {}\n\n#[test]\nfn wrong() {\n    assert_eq!(1 + 1, 3);\n}\n",
        )
        .unwrap();
        fs::write(
            toy.join("tests/boom.rs"),
            "#[test]\nfn boom() {\n    std::process::abort();\n}\n",
        )
        .unwrap();
    }
}

/// Runs the copy's test.sh; returns its exit code and the last line of its output.
fn test_sh(dir: &Path) -> (Option<i32>, String, String) {
    let out = Command::new("bash")
        .arg(dir.join("scripts/test.sh"))
        .env("CARGO_TARGET_DIR", dir.join("target"))
        .env("TOY_SUITES", SUITES.join(","))
        .env_remove("RUSTFLAGS")
        .output()
        .expect("bash runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let last = stdout.lines().last().unwrap_or("").to_string();
    let all = format!("{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    (out.status.code(), last, all)
}

#[test]
fn test_sh_runs_every_step_and_ends_with_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();

    workspace(dir, true);
    let (code, last, all) = test_sh(dir);
    assert_eq!(code, Some(1), "{all}");
    // 1 unit test, counts, fine: 3 passed; wrong failed; boom crashed (its test is not
    // counted); ugly.rs, though badly formatted, ran and passed: 4.
    assert!(
        last.starts_with("test.sh: 4 passed, 3 failed: "),
        "{last}\n{all}"
    );
    for what in [
        "cargo fmt --check",
        "wrong (cargo test --test cli)",
        "cargo test --test boom: ended without a test result",
    ] {
        assert!(last.contains(what), "{what:?} not in {last:?}");
    }
    // The suites' counts lines are shown even so.
    assert!(
        all.contains("cannyls_crash_512e_512: crash points: 1"),
        "{all}"
    );

    // Everything fixed: one line saying all passed, exit status 0.
    for f in ["ugly.rs", "cli.rs", "boom.rs"] {
        fs::remove_file(dir.join("toy/tests").join(f)).unwrap();
    }
    let (code, last, all) = test_sh(dir);
    assert_eq!(code, Some(0), "{all}");
    assert_eq!(
        last,
        "test.sh: 2 passed, 0 failed (all 2 tests passed; cargo fmt --check and clippy -D \
         warnings clean)",
        "{all}"
    );

    // Tests that skip at run time, printing testutil::print_skip's notice (once or twice: one
    // skipped test), are counted apart from the passed ones and named; one that printed a
    // notice and failed is a failure.
    let notice = |test: &str| testutil::skip_line(Some(test), "skips", "no widget here");
    let skips = format!(
        "use std::io::Write;\n\nconst TWICE: &str = {:?};\n\n#[test]\nfn skipped_twice() {{\n    \
         for _ in 0..2 {{\n        let _ = std::io::stderr().write_all(TWICE.as_bytes());\n    \
         }}\n}}\n\n#[test]\nfn runs() {{}}\n",
        notice("skipped_twice")
    );
    fs::write(dir.join("toy/tests/skips.rs"), &skips).unwrap();
    let (code, last, all) = test_sh(dir);
    assert_eq!(code, Some(0), "{all}");
    assert_eq!(
        last,
        "test.sh: 3 passed, 1 skipped (skips::skipped_twice), 0 failed (all 3 tests passed; \
         cargo fmt --check and clippy -D warnings clean)",
        "{all}"
    );
    let failing = format!(
        "{skips}\n#[test]\nfn skipped_then_failed() {{\n    const NOTICE: &str = {:?};\n    \
         let _ = std::io::stderr().write_all(NOTICE.as_bytes());\n    panic!(\"no\");\n}}\n",
        notice("skipped_then_failed")
    );
    fs::write(dir.join("toy/tests/skips.rs"), failing).unwrap();
    let (code, last, all) = test_sh(dir);
    assert_eq!(code, Some(1), "{all}");
    assert_eq!(
        last,
        "test.sh: 3 passed, 1 skipped (skips::skipped_twice), 1 failed: skipped_then_failed \
         (cargo test --test skips)",
        "{all}"
    );
    fs::remove_file(dir.join("toy/tests/skips.rs")).unwrap();

    // A suite that left no counts is a failure.
    fs::write(dir.join("toy/tests/counts.rs"), "#[test]\nfn counts() {}\n").unwrap();
    let (code, last, all) = test_sh(dir);
    assert_eq!(code, Some(1), "{all}");
    assert!(
        last.starts_with(
            "test.sh: 2 passed, 7 failed: reliability suite crash_sweep left no counts"
        ),
        "{last}"
    );
}

/// Runs test.sh's summary (scripts/lib/test-summary.awk) on `log`.
fn summary(log: &str) -> String {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("log");
    fs::write(&path, log).unwrap();
    let out = Command::new("awk")
        .arg("-f")
        .arg(repo().join(SUMMARY_AWK))
        .arg(&path)
        .output()
        .expect("awk runs");
    assert!(out.status.success(), "{}", testutil::output_text(&out));
    String::from_utf8(out.stdout).unwrap()
}

/// Canned `cargo test` output: skip notices as testutil prints them (also in the middle of the
/// harness's line, as with one test thread, and one from no test's thread, not counted), a
/// test skipped and failed, a test with two notices, a doc-test binary.
#[test]
fn the_summary_counts_skipped_tests_apart_and_names_them() {
    let notice = |test: &str, what: &str| testutil::skip_line(Some(test), what, "no root");
    let log = format!(
        "     Running unittests src/lib.rs (target/debug/deps/minfs-0123abcdef)\n\n\
         running 4 tests\n\
         {}\
         test sys::t::a ... ok\n\
         test sys::t::b ... ok\n\
         test loopy ... {}\
         ok\n\
         test twice ... {}\
         {}\
         ok\n\n\
         test result: ok. 4 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out\n\n\
         \x20    Running tests/mount.rs (target/debug/deps/mount-4567)\n\n\
         running 3 tests\n\
         {}\
         SKIPPED mount: old-style notice\n\
         test fuse_works ... ok\n\
         test old ... ok\n\
         test broken ... {}\
         FAILED\n\n\
         failures:\n\n\
         test result: FAILED. 2 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out\n\n\
         error: test failed, to rerun pass `-p minfs --test mount`\n\
         \x20  Doc-tests minfs\n\n\
         running 1 test\n\
         test minfs/src/lib.rs - (line 7) ... ok\n\n\
         test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out\n",
        notice("sys::t::a", "minfs::sys::t"),
        notice("loopy", "minfs"),
        notice("twice", "part one"),
        notice("twice", "part two"),
        notice("fuse_works", "mount"),
        notice("broken", "mount"),
    );
    let got = summary(&log);
    assert_eq!(
        got,
        "3 1 1 4\n\
         failed: broken (cargo test -p minfs --test mount)\n\
         skipped: minfs::sys::t::a\n\
         skipped: minfs::loopy\n\
         skipped: minfs::twice\n\
         skipped: mount::fuse_works\n",
        "{log}"
    );
    // Nothing skipped: the counts as cargo gave them.
    let plain = "     Running tests/x.rs (target/debug/deps/x-89ab)\n\
                 test a ... ok\n\
                 test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out\n";
    assert_eq!(summary(plain), "1 0 0 0\n");
}
