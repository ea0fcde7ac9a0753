//! `scripts/test.sh` on a small workspace of its own (the script next to a copy of it): every
//! step runs whatever an earlier one gave, and the last line says what happened — "N passed,
//! 0 failed (all N tests passed …)" with exit status 0, or "N passed, M failed: WHAT; …" with
//! exit status 1, naming a formatting failure, each failed test with the command that reruns
//! it, and a test binary that crashed. (In a one-package workspace cargo names a test
//! binary without `-p`.)

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

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
    fs::create_dir_all(dir.join("scripts")).unwrap();
    fs::copy(repo().join("scripts/test.sh"), dir.join("scripts/test.sh")).unwrap();
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
