//! The front door: README.md's table is the verdicts of the run it names, as that run's
//! report.md gives them (`MINFS_BLESS=1` regenerates it from the named run, so that pointing the
//! README at a new run is one edit and one command); the README stays a front door (under 200
//! lines, its sections in order, every document listed); results/README.md opens with an index
//! of every run directory; CHANGELOG.md keeps keep-a-changelog's form.

mod common;

use std::collections::BTreeMap;

use common::markdown::{prose_lines, repo, table_after};

const TABLE_START: &str = "<!-- verdict-table ";
const TABLE_END: &str = "<!-- /verdict-table -->";

/// A workload's row of a report's first table: its name and each target's cell.
type Row = (String, Vec<String>);

/// The first table of a report (its first screen): the targets of its header, and per
/// workload, in the report's order, each target's cell as written (estimate, mark, interval).
/// `None` when the report has no such table.
fn first_table(report: &str) -> Option<(Vec<String>, Vec<Row>)> {
    let lines: Vec<&str> = report.lines().collect();
    let start = lines.iter().position(|l| l.starts_with("| Workload |"))?;
    let cells = |l: &str| -> Vec<String> {
        l.trim()
            .trim_matches('|')
            .split('|')
            .map(|c| c.trim().to_string())
            .collect()
    };
    let targets = cells(lines[start])[1..].to_vec();
    let mut rows = Vec::new();
    for line in &lines[start + 2..] {
        if !line.starts_with('|') {
            break;
        }
        let c = cells(line);
        rows.push((c[0].clone(), c[1..].to_vec()));
    }
    Some((targets, rows))
}

/// A target's column header: `ext4@4096` is "ext4, Cannyls at 4 KiB".
fn column(target: &str) -> String {
    let (fs, block) = match target.split_once('@') {
        Some((fs, n)) => (fs, n.parse::<u32>().ok()),
        None => (target, None),
    };
    let fs = if fs == "xfs" { "XFS" } else { fs };
    match block {
        Some(n) if n % 1024 == 0 => format!("{fs}, Cannyls at {} KiB", n / 1024),
        Some(n) => format!("{fs}, Cannyls at {n} B"),
        None => fs.to_string(),
    }
}

/// The README's table for the run in `dir` (relative to the repository): its report's first
/// table, one row per workload, one column per target other than minfs, each cell as the
/// report writes it (the estimate, the verdict's mark, the interval).
fn render_table(dir: &str) -> Result<String, String> {
    let report = std::fs::read_to_string(repo().join(dir).join("report.md"))
        .map_err(|e| format!("{dir}/report.md: {e}"))?;
    let (targets, rows) =
        first_table(&report).ok_or(format!("{dir}/report.md has no first table"))?;
    let mut out = String::new();
    let header: Vec<String> = targets.iter().map(|t| column(t)).collect();
    out += &format!("| workload | {} |\n", header.join(" | "));
    out += &format!("| --- |{}\n", " --- |".repeat(targets.len()));
    for (w, cells) in rows {
        out += &format!("| {w} | {} |\n", cells.join(" | "));
    }
    Ok(out)
}

/// The README's marked table: the run directory its marker names, and the table's lines.
fn readme_table(readme: &str) -> (String, usize, usize) {
    let lines: Vec<&str> = readme.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.starts_with(TABLE_START))
        .expect("README.md has no verdict-table marker");
    let end = lines
        .iter()
        .position(|l| l.trim() == TABLE_END)
        .expect("README.md's verdict table has no end marker");
    let dir = lines[start][TABLE_START.len()..]
        .split([':', ' '])
        .next()
        .unwrap()
        .trim_end_matches('/')
        .to_string();
    (dir, start, end)
}

#[test]
fn the_readme_table_is_what_its_run_shows() {
    let path = repo().join("README.md");
    let readme = std::fs::read_to_string(&path).unwrap();
    let (dir, start, end) = readme_table(&readme);
    assert!(
        dir.starts_with("results/") && repo().join(&dir).is_dir(),
        "README.md's table names {dir:?}, not a run directory under results/"
    );
    let table = render_table(&dir).unwrap();
    let lines: Vec<&str> = readme.lines().collect();
    let current = lines[start + 1..end]
        .iter()
        .map(|l| format!("{l}\n"))
        .collect::<String>();
    if current != table && std::env::var_os("MINFS_BLESS").is_some() {
        let mut new: Vec<String> = lines[..=start].iter().map(|l| l.to_string()).collect();
        new.extend(table.lines().map(String::from));
        new.extend(lines[end..].iter().map(|l| l.to_string()));
        std::fs::write(&path, new.join("\n") + "\n").unwrap();
        return;
    }
    assert_eq!(
        current, table,
        "README.md's table is not what {dir}/report.md says (MINFS_BLESS=1 rewrites it from there)"
    );
    // The sentence and the plot next to the table name the same run.
    let section: String = lines[start..]
        .iter()
        .take_while(|l| !l.starts_with("## "))
        .map(|l| format!("{l}\n"))
        .collect();
    let named: Vec<&str> = section
        .match_indices("results/")
        .map(|(i, _)| {
            let name = &section[i + "results/".len()..];
            let end = name
                .find(|c: char| !(c.is_ascii_alphanumeric() || "-._".contains(c)))
                .unwrap_or(name.len());
            &name[..end]
        })
        .collect();
    let run = dir.trim_start_matches("results/");
    assert!(
        named.iter().filter(|n| **n == run).count() >= 3,
        "the table's section names its run {named:?}"
    );
    // Besides its run, the section may name the full-scale reference the run was held
    // against (its compare.json's `reference`), nothing else.
    let compare: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join(&dir).join("compare.json")).unwrap(),
    )
    .unwrap();
    let reference = compare["reference"]["dir"]
        .as_str()
        .map(|d| d.trim_start_matches("results/").to_string());
    assert!(
        named
            .iter()
            .all(|n| *n == run || Some(n.to_string()) == reference),
        "the table's section names other runs than {run} and its reference {reference:?}: \
         {named:?}"
    );
    assert!(
        section.contains(&format!("]({dir}/plots/")),
        "the table's section shows no plot of {dir}"
    );
}

#[test]
fn a_reports_first_table_is_read_as_written() {
    let report = "# minfs-bench comparison\n\n**2 of 3 comparisons decided**\n\n\
        | Workload | ext4 | xfs@4096 |\n| --- | --- | --- |\n\
        | seq-4m | 1.12 ▲ [1.06–1.19] | 1.01 = [0.99–1.03] |\n\
        | durable-256k | 2.57 ? [0.9–3.1] | 1.40 ▲ [1.30–1.51] |\n\nLegend.\n\n\
        | Workload | other |\n";
    let (targets, rows) = first_table(report).unwrap();
    assert_eq!(targets, ["ext4", "xfs@4096"]);
    assert_eq!(rows.len(), 2, "the second table is not read: {rows:?}");
    assert_eq!(rows[0].0, "seq-4m");
    assert_eq!(rows[1].1, ["2.57 ? [0.9–3.1]", "1.40 ▲ [1.30–1.51]"]);
    assert_eq!(column("xfs@4096"), "XFS, Cannyls at 4 KiB");
}

#[test]
fn the_readme_is_a_front_door() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let n = readme.lines().count();
    assert!(n < 200, "README.md has {n} lines; its limit is 199");
    let headings: Vec<&str> = prose_lines(&readme)
        .into_iter()
        .map(|(_, l)| l)
        .filter(|l| l.starts_with("## "))
        .collect();
    let order = [
        "## Does minfs help Cannyls?",
        "## Try it without root",
        "## Reproduce",
        "## Test",
        "## Install",
        "## Documentation",
    ];
    let found: Vec<&str> = headings
        .iter()
        .copied()
        .filter(|h| order.contains(h))
        .collect();
    assert_eq!(found, order, "README.md's first sections, in order");
    let first_screen_end = readme
        .lines()
        .position(|l| l == "## Documentation")
        .unwrap();
    assert!(
        first_screen_end < 75,
        "README.md's Documentation heading is at line {}: the first screen has grown",
        first_screen_end + 1
    );
    // One line per document, each linked from the Documentation section.
    let docs_section: String = readme
        .lines()
        .skip(first_screen_end + 1)
        .take_while(|l| !l.starts_with("## "))
        .collect::<Vec<_>>()
        .join("\n");
    let mut docs: Vec<String> = std::fs::read_dir(repo().join("docs"))
        .unwrap()
        .flatten()
        .map(|e| format!("docs/{}", e.file_name().to_string_lossy()))
        .filter(|p| p.ends_with(".md"))
        .collect();
    docs.extend(["ARCHITECTURE.md".into(), "results/README.md".into()]);
    for doc in docs {
        assert!(
            docs_section.contains(&format!("]({doc})")),
            "README.md's Documentation does not list {doc}"
        );
    }
}

/// The run directories under results/ (those git ignores, results/local, left out).
fn run_directories() -> Vec<String> {
    let mut dirs: Vec<String> = std::fs::read_dir(repo().join("results"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_type().unwrap().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != "local")
        .collect();
    dirs.sort();
    dirs
}

/// The run directory a cell of the index names: `[DIR](DIR/...)`, `` `DIR` `` or `DIR`.
fn cell_directory(cell: &str) -> String {
    let cell = cell.trim();
    let name = match cell.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap(),
        None => cell,
    };
    name.trim_matches(['`', '*'])
        .trim_end_matches('/')
        .to_string()
}

#[test]
fn the_results_index_lists_every_run_directory() {
    let text = std::fs::read_to_string(repo().join("results/README.md")).unwrap();
    let first_section = text.lines().position(|l| l.starts_with("## ")).unwrap();
    let table_line = text
        .lines()
        .position(|l| l.trim_start().starts_with('|'))
        .expect("results/README.md has no table");
    assert!(
        table_line < first_section,
        "results/README.md does not open with its index: the first table is at line {}, after \
         the first section (line {})",
        table_line + 1,
        first_section + 1
    );
    let rows = table_after(&text, table_line);
    let header: Vec<String> = rows[0].iter().map(|c| c.to_lowercase()).collect();
    assert_eq!(
        header,
        ["directory", "date", "command", "what it decided", "status"],
        "the index's columns"
    );
    let mut listed = BTreeMap::new();
    for row in &rows[1..] {
        assert_eq!(
            row.len(),
            5,
            "an index row with {} cells: {row:?}",
            row.len()
        );
        let dir = cell_directory(&row[0]);
        assert!(
            repo().join("results").join(&dir).is_dir(),
            "the index lists {dir}, which is not a directory of results/"
        );
        assert!(
            dir.starts_with(&row[1]),
            "the index dates {dir} {}, not as its name",
            row[1]
        );
        let status = row[4].to_lowercase();
        assert!(
            status.starts_with("current") || status.starts_with("superseded by"),
            "{dir}'s status says neither current nor superseded by which: {}",
            row[4]
        );
        if let Some(by) = status.strip_prefix("superseded by") {
            assert!(
                run_directories().iter().any(|d| by.contains(d.as_str())),
                "{dir} is superseded by no run directory named: {}",
                row[4]
            );
        }
        *listed.entry(dir).or_insert(0) += 1;
    }
    let all = run_directories();
    let missing: Vec<&String> = all.iter().filter(|d| !listed.contains_key(*d)).collect();
    assert!(
        missing.is_empty(),
        "results/README.md's index misses {missing:?}"
    );
    let twice: Vec<&String> = listed
        .iter()
        .filter(|(_, n)| **n > 1)
        .map(|(d, _)| d)
        .collect();
    assert!(twice.is_empty(), "listed more than once: {twice:?}");
}

#[test]
fn the_changelog_keeps_a_changelog() {
    let text = std::fs::read_to_string(repo().join("CHANGELOG.md")).unwrap();
    let lines = prose_lines(&text);
    assert_eq!(lines.first().map(|l| l.1), Some("# Changelog"));
    let releases: Vec<&str> = lines
        .iter()
        .map(|l| l.1)
        .filter(|l| l.starts_with("## "))
        .collect();
    assert_eq!(
        releases.first(),
        Some(&"## [Unreleased]"),
        "CHANGELOG.md opens with one [Unreleased] section"
    );
    assert_eq!(
        releases.iter().filter(|r| r.contains("Unreleased")).count(),
        1,
        "{releases:?}"
    );
    for r in &releases[1..] {
        let rest = r
            .strip_prefix("## [")
            .unwrap_or_else(|| panic!("{r}: not `## [VERSION] - DATE`"));
        let (version, date) = rest
            .split_once("] - ")
            .unwrap_or_else(|| panic!("{r}: no date"));
        assert!(
            version.split('.').count() == 3 && version.split('.').all(|p| p.parse::<u32>().is_ok()),
            "{r}: {version} is not a version"
        );
        assert!(
            date.len() == 10 && date.as_bytes()[4] == b'-' && date.as_bytes()[7] == b'-',
            "{r}: {date} is not YYYY-MM-DD"
        );
    }
    let kinds = [
        "Added",
        "Changed",
        "Deprecated",
        "Removed",
        "Fixed",
        "Security",
    ];
    let mut release = String::new();
    let mut seen: Vec<String> = Vec::new();
    for (n, line) in &lines[1..] {
        if line.starts_with("## ") {
            release = line.to_string();
            seen.clear();
        } else if let Some(kind) = line.strip_prefix("### ") {
            assert!(
                kinds.contains(&kind),
                "CHANGELOG.md:{n}: ### {kind} is not a kind of change"
            );
            assert!(
                !seen.iter().any(|s| s == kind),
                "CHANGELOG.md:{n}: ### {kind} twice in {release}"
            );
            seen.push(kind.to_string());
        } else if line.starts_with("#") {
            panic!("CHANGELOG.md:{n}: {line}: only releases (##) and kinds (###)");
        }
        // Test functions' names belong in commits: an identifier of five or more words.
        for word in line.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
            assert!(
                word.split('_').filter(|p| !p.is_empty()).count() < 5,
                "CHANGELOG.md:{n}: {word} looks like a test's name"
            );
        }
    }
}
