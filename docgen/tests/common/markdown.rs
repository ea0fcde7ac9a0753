//! What the documentation tests read from the repository's Markdown: its files, their links,
//! their headings as GitHub anchors them, and their tables.

#![allow(dead_code)] // each test binary uses its own part

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The repository's root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The repository's files that `keep` accepts, relative to its root, sorted: all but build
/// output, git's directory, scratch (`work-tmp`) and the runs git ignores (`results/local`).
pub fn repo_files(keep: impl Fn(&Path) -> bool) -> Vec<PathBuf> {
    let root = repo();
    let mut found = Vec::new();
    let mut todo = vec![root.clone()];
    while let Some(dir) = todo.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            let rel = path.strip_prefix(&root).unwrap().to_path_buf();
            if entry.file_type().unwrap().is_dir() {
                let skipped = [".git", "target", "work-tmp", "results/local"]
                    .iter()
                    .any(|s| rel == Path::new(s));
                if !skipped {
                    todo.push(path);
                }
            } else if keep(&rel) {
                found.push(rel);
            }
        }
    }
    found.sort();
    found
}

/// Every Markdown file of the repository, relative to its root.
pub fn markdown_files() -> Vec<PathBuf> {
    repo_files(|p| p.extension().is_some_and(|e| e == "md"))
}

/// The lines of `text` outside fenced code blocks (``` or ~~~), with their 1-based numbers.
pub fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut fence: Option<&str> = None;
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        match fence {
            Some(f) => {
                if trimmed.starts_with(f) {
                    fence = None;
                }
            }
            None => {
                if trimmed.starts_with("```") {
                    fence = Some("```");
                } else if trimmed.starts_with("~~~") {
                    fence = Some("~~~");
                } else {
                    out.push((n + 1, line));
                }
            }
        }
    }
    out
}

/// `line` with its inline code spans blanked out (a link written as code is not a link).
pub fn without_code_spans(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(start) = rest.find('`') {
        let ticks = rest[start..].chars().take_while(|&c| c == '`').count();
        let fence = &rest[start..start + ticks];
        let after = &rest[start + ticks..];
        match after.find(fence) {
            Some(end) => {
                out.push_str(&rest[..start]);
                out.push(' ');
                rest = &after[end + ticks..];
            }
            None => {
                out.push_str(&rest[..start + ticks]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The destinations of the inline links and images (`[text](dest)`, `![alt](dest)`) and the
/// link reference definitions (`[label]: dest`) of a line (code spans already removed).
pub fn link_destinations(line: &str) -> Vec<String> {
    let mut found = Vec::new();
    let trimmed = line.trim_start();
    if trimmed.starts_with('[') {
        if let Some(close) = trimmed.find("]:") {
            let label = &trimmed[1..close];
            if !label.contains('[') && !label.is_empty() {
                if let Some(dest) = trimmed[close + 2..].split_whitespace().next() {
                    found.push(dest.trim_matches(['<', '>']).to_string());
                }
            }
        }
    }
    let mut from = 0;
    while let Some(at) = line[from..].find("](") {
        let start = from + at + 2;
        from = start;
        let rest = &line[start..];
        let dest = if let Some(inner) = rest.strip_prefix('<') {
            match inner.find('>') {
                Some(end) => inner[..end].to_string(),
                None => continue,
            }
        } else {
            // Up to white space (a title follows) or the parenthesis that closes the link,
            // parentheses inside the destination balanced.
            let mut depth = 0usize;
            let mut end = rest.len();
            for (i, c) in rest.char_indices() {
                match c {
                    '(' => depth += 1,
                    ')' if depth == 0 => {
                        end = i;
                        break;
                    }
                    ')' => depth -= 1,
                    c if c.is_whitespace() => {
                        end = i;
                        break;
                    }
                    _ => {}
                }
            }
            rest[..end].to_string()
        };
        found.push(dest);
    }
    found
}

/// GitHub's anchor for a heading's text (github-slugger): lower case, markup and
/// punctuation dropped (letters, digits, `-`, `_` and spaces kept), spaces made `-`.
pub fn slug(heading: &str) -> String {
    // A link in a heading keeps only its text.
    let mut text = String::new();
    let mut rest = heading;
    while let Some(open) = rest.find('[') {
        match rest[open..].find("](") {
            Some(mid) => {
                let after = &rest[open + mid + 2..];
                let close = after.find(')').map_or(after.len(), |c| c + 1);
                text.push_str(&rest[..open]);
                text.push_str(&rest[open + 1..open + mid]);
                rest = &after[close..];
            }
            None => {
                text.push_str(&rest[..=open]);
                rest = &rest[open + 1..];
            }
        }
    }
    text.push_str(rest);
    text.trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors a Markdown text offers: one per ATX heading (`#` to `######`), numbered `-1`,
/// `-2`, … when repeated, as GitHub does, and the `id`/`name` of HTML anchors.
pub fn anchors(text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut seen = std::collections::HashMap::<String, usize>::new();
    for (_, line) in prose_lines(text) {
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if (1..=6).contains(&hashes) && line[hashes..].starts_with(' ') {
            let title = line[hashes..].trim().trim_end_matches('#').trim_end();
            let base = slug(title);
            let n = seen.entry(base.clone()).or_insert(0);
            let anchor = if *n == 0 {
                base.clone()
            } else {
                format!("{base}-{n}")
            };
            *n += 1;
            found.insert(anchor);
        }
        for attr in ["id=\"", "name=\""] {
            let mut from = 0;
            while let Some(at) = line[from..].find(attr) {
                let start = from + at + attr.len();
                from = start;
                if let Some(end) = line[start..].find('"') {
                    found.insert(line[start..start + end].to_string());
                }
            }
        }
    }
    found
}

/// The rows of the first Markdown table after the line `after` (exclusive) of `text`, each a
/// list of trimmed cells; the header row first, the delimiter row left out.
pub fn table_after(text: &str, after: usize) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut started = false;
    for line in text.lines().skip(after) {
        let t = line.trim();
        if t.starts_with('|') {
            started = true;
            let cells: Vec<String> = t
                .trim_matches('|')
                .split('|')
                .map(|c| c.trim().to_string())
                .collect();
            let delimiter = cells
                .iter()
                .all(|c| !c.is_empty() && c.chars().all(|ch| matches!(ch, '-' | ':' | ' ')));
            if !delimiter {
                rows.push(cells);
            }
        } else if started {
            break;
        }
    }
    rows
}
