//! Every `docs/…` path the repository names — in source (`.rs`), scripts (`.sh`, `.ci/run`),
//! Markdown, workload files, manifests, and the `--help` of every command and subcommand —
//! exists in the repository. (Links of the Markdown, with their anchors: `doc_links.rs`.)

mod common;

use std::path::{Path, PathBuf};

use common::markdown::{repo, repo_files};
use docgen::PROGRAMS;

/// The files to scan, relative to the repository.
fn sources() -> Vec<PathBuf> {
    repo_files(|rel| {
        matches!(
            rel.extension().and_then(|e| e.to_str()),
            Some("rs" | "sh" | "md" | "wl" | "toml")
        ) || rel == Path::new(".ci/run")
    })
}

/// The `docs/…` paths named in `text`: `docs/` not preceded by a letter, digit or `_`,
/// followed by path characters, without a trailing `.`, `,` or `:` (sentence punctuation)
/// or an `#anchor`.
fn docs_paths(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let mut from = 0;
        while let Some(at) = line[from..].find("docs/") {
            let start = from + at;
            from = start + 5;
            let before = line[..start].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue;
            }
            let path: String = line[start..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || "_-./".contains(*c))
                .collect();
            let path = path.trim_end_matches(['.', ',', ':']).to_string();
            found.push((n + 1, path));
        }
    }
    found
}

/// Every command's and subcommand's long help, with where it comes from.
fn help_texts() -> Vec<(String, String)> {
    fn walk(cmd: &mut clap::Command, name: String, out: &mut Vec<(String, String)>) {
        out.push((
            format!("`{name} --help`"),
            cmd.render_long_help().to_string(),
        ));
        // clap's own `help` subcommand repeats the others' help.
        for sub in cmd.get_subcommands_mut().filter(|s| s.get_name() != "help") {
            let sub_name = format!("{name} {}", sub.get_name());
            walk(sub, sub_name, out);
        }
    }
    let mut out = Vec::new();
    for program in PROGRAMS {
        let mut cmd = (program.command)();
        cmd.build();
        walk(&mut cmd, program.name.to_string(), &mut out);
    }
    out
}

/// Where each missing `docs/…` path is named, one line per mention.
fn missing_docs() -> Vec<String> {
    let root = repo();
    let mut named: Vec<(String, String)> = Vec::new();
    for rel in sources() {
        let text = std::fs::read_to_string(root.join(&rel)).unwrap_or_default();
        for (line, path) in docs_paths(&text) {
            named.push((format!("{}:{line}", rel.display()), path));
        }
    }
    for (place, text) in help_texts() {
        for (_, path) in docs_paths(&text) {
            named.push((place.clone(), path));
        }
    }
    assert!(
        named.iter().any(|(_, p)| p == "docs/FORMAT.md"),
        "the scan finds nothing: {named:?}"
    );
    named
        .into_iter()
        .filter(|(_, path)| !root.join(path).exists())
        .map(|(place, path)| format!("{place} names {path}, which does not exist"))
        .collect()
}

#[test]
fn every_docs_path_named_exists() {
    let missing = missing_docs();
    assert!(
        missing.is_empty(),
        "{} mentions of missing docs:\n{}",
        missing.len(),
        missing.join("\n")
    );
}

#[test]
fn help_names_the_docs_it_relies_on() {
    // The scan of --help is real: minfs-bench's help points at the language's doc.
    let helps = help_texts();
    assert!(helps
        .iter()
        .any(|(place, text)| place == "`minfs-bench --help`" && text.contains("docs/DSL.md")));
    assert!(helps
        .iter()
        .any(|(place, _)| place == "`minfs fsck --help`"));
}

#[test]
fn the_scanner_finds_paths_as_written() {
    let text = "see `docs/DSL.md`, (docs/FORMAT.md#assumptions) and ../docs/WORKLOADS.md.\n\
                not mydocs/x.md";
    let paths: Vec<String> = docs_paths(text).into_iter().map(|(_, p)| p).collect();
    assert_eq!(
        paths,
        ["docs/DSL.md", "docs/FORMAT.md", "docs/WORKLOADS.md"]
    );
}
