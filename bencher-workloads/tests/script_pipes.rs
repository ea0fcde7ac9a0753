//! A lint over the repository's shell scripts: under `set -o pipefail`, no pipe may end in a
//! reader that stops before its input ends (`head`, `grep -q`/`-m`/`-l`, `sed …q`). When the
//! reader exits first, the writer dies of SIGPIPE, the pipeline's status is 141 and `set -e`
//! ends the script: `mkfs.ext4 -V 2>&1 | head -1` (two lines of output) failed compare.sh
//! that way in about 1 run in 10. `sed -n 1p` reads its whole input instead.

use std::fs;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The part of a shell line before a comment (a `#` at the start or after a space; good
/// enough for these scripts, which have no `#` inside quoted words after a space).
fn code(line: &str) -> &str {
    let t = line.trim_start();
    if t.starts_with('#') {
        return "";
    }
    match line.find(" #") {
        Some(i) => &line[..i],
        None => line,
    }
}

/// Whether `line` pipes into a reader that may stop before its input ends.
fn early_reader(line: &str) -> Option<String> {
    for part in code(line).split('|').skip(1) {
        // `||` splits into an empty part: not a pipe.
        let words: Vec<&str> = part.split_whitespace().collect();
        let Some(&cmd) = words.first() else { continue };
        let opts = || words[1..].iter().take_while(|w| w.starts_with('-'));
        let bad = match cmd {
            "head" => true,
            "grep" => opts().any(|o| {
                !o.starts_with("--") && o[1..].chars().any(|c| matches!(c, 'q' | 'm' | 'l'))
                    || *o == "--quiet"
                    || o.starts_with("--max-count")
                    || *o == "--files-with-matches"
            }),
            "sed" => words[1..]
                .iter()
                .filter(|w| !w.starts_with('-'))
                .take(1)
                .map(|s| s.trim_matches(['\'', '"', '}']))
                .any(|s| s.ends_with('q') || s.contains(";q")),
            _ => false,
        };
        if bad {
            return Some(part.trim().to_string());
        }
    }
    None
}

fn scripts() -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![repo().join("scripts"), repo().join(".ci")];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "sh") || p.ends_with(".ci/run") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn the_lint_sees_early_readers() {
    for bad in [
        "  mkfs.ext4 -V 2>&1 | head -1",
        "x=$(ls a b | head -n 1 || true)",
        "lsblk | grep -q loop",
        "cat f | grep -m1 x",
        "cat f | grep -lq x",
        "cat f | sed 1q",
        "cat f | sed -n '/x/{p;q}'",
    ] {
        assert!(early_reader(bad).is_some(), "not seen: {bad}");
    }
    for good in [
        "mkfs.ext4 -V 2>&1 | sed -n 1p",
        "a || b | sort -u | paste -sd, -",
        "grep -q x file",
        "cat f | grep -v '^#'",
        "echo x # | head",
        "# pipe | head -1",
    ] {
        assert_eq!(early_reader(good), None, "{good}");
    }
}

#[test]
fn no_pipe_under_pipefail_ends_in_an_early_reader() {
    let files = scripts();
    assert!(
        files.iter().any(|f| f.ends_with("scripts/compare.sh")),
        "{files:?}"
    );
    let mut found = Vec::new();
    for f in &files {
        let text = fs::read_to_string(f).unwrap();
        if !text.contains("pipefail") {
            continue;
        }
        for (i, line) in text.lines().enumerate() {
            if let Some(reader) = early_reader(line) {
                found.push(format!(
                    "{}:{}: `| {reader}`",
                    f.strip_prefix(repo()).unwrap().display(),
                    i + 1
                ));
            }
        }
    }
    assert!(
        found.is_empty(),
        "under pipefail these pipes can exit 141 (SIGPIPE) when the reader stops early; \
         read the whole input instead (e.g. `sed -n 1p`):\n{}",
        found.join("\n")
    );
}
