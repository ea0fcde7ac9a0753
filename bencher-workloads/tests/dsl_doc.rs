//! `docs/DSL.md` against the code: every `wl` block of it parses and expands, each `ops`
//! block after one is exactly the operations it expands to, and the limits it states are
//! the parser's and the generator's.

use bencher_workloads::cli::MAX_FILE_SIZE;
use bencher_workloads::compare::format::thousands;
use bencher_workloads::dsl::{self, MAX_EMBED_SIZE, MAX_NESTING, MAX_PUT_SIZE};
use bencher_workloads::generate::DEFAULT_MAX_OPS;
use bencher_workloads::run::OpText;
use bencher_workloads::{expand, GenerateOptions};

fn doc() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/DSL.md");
    std::fs::read_to_string(path).expect("docs/DSL.md is readable")
}

/// The fenced blocks of a Markdown text: (info string, contents).
fn blocks(text: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let mut open: Option<(String, String)> = None;
    for line in text.lines() {
        match (&mut open, line.strip_prefix("```")) {
            (None, Some(info)) => open = Some((info.trim().to_string(), String::new())),
            (Some(_), Some(_)) => found.push(open.take().unwrap()),
            (Some((_, body)), None) => {
                body.push_str(line);
                body.push('\n');
            }
            (None, None) => {}
        }
    }
    assert!(open.is_none(), "an unclosed fenced block");
    found
}

#[test]
fn examples_parse_and_expand_as_shown() {
    let blocks = blocks(&doc());
    let mut workloads = 0;
    let mut checked = 0;
    for (k, (info, body)) in blocks.iter().enumerate() {
        if info != "wl" {
            continue;
        }
        workloads += 1;
        let workload = dsl::parse("DSL.md", body).unwrap_or_else(|e| panic!("{e}\n{body}"));
        let expansion = expand(&workload, &GenerateOptions::default()).unwrap();
        if let Some((_, shown)) = blocks.get(k + 1).filter(|(i, _)| i == "ops") {
            let actual: Vec<String> = expansion
                .ops
                .iter()
                .map(|op| OpText(*op).to_string())
                .collect();
            let shown: Vec<&str> = shown.lines().collect();
            assert_eq!(actual, shown, "the ops block after\n{body}");
            checked += 1;
        }
    }
    assert!(workloads >= 3, "{workloads} wl blocks");
    assert!(checked >= 2, "{checked} ops blocks");
}

#[test]
fn stated_limits_are_the_codes() {
    let doc = doc();
    for must in [
        format!(
            "n ≤ {} (0xFFFF × 512 − 2) bytes",
            thousands(MAX_PUT_SIZE.into())
        ),
        format!("n ≤ {} bytes", thousands(MAX_EMBED_SIZE.into())),
        format!("{MAX_NESTING} levels of braces"),
        format!("| file size | {} MiB |", MAX_FILE_SIZE >> 20),
        format!("default {} steps", thousands(DEFAULT_MAX_OPS)),
        format!("(default {})", thousands(DEFAULT_MAX_OPS)),
    ] {
        assert!(doc.contains(&must), "docs/DSL.md does not say {must:?}");
    }
    assert_eq!(MAX_PUT_SIZE, 0xFFFF * 512 - 2);
}

/// The error shown in the doc is what the parser reports for that line.
#[test]
fn shown_errors_are_the_parsers() {
    let doc = doc();
    let errors: Vec<String> = blocks(&doc)
        .into_iter()
        .filter(|(info, body)| info == "text" && body.starts_with("w.wl:"))
        .map(|(_, body)| body)
        .collect();
    assert_eq!(errors.len(), 2);
    for shown in errors {
        let line = shown.lines().nth(1).unwrap();
        let src = format!("Command {{\n{line}\n}}\n");
        let err = dsl::parse("w.wl", &src).unwrap_err();
        assert_eq!(format!("{err}\n"), shown);
    }
}
