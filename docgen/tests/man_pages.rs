//! The man pages: one per program and subcommand, each rendering cleanly with `man -l`
//! (man-db; skipped with a printed reason where it is missing, a failure in CI), with the
//! exit statuses the programs really return.

use std::collections::BTreeSet;
use std::process::Command;

use docgen::{File, PROGRAMS};

fn pages() -> Vec<File> {
    PROGRAMS
        .iter()
        .flat_map(|p| p.man_pages().expect("pages render"))
        .collect()
}

fn page(path: &str) -> String {
    let page = pages()
        .into_iter()
        .find(|f| f.path.to_str() == Some(path))
        .unwrap_or_else(|| panic!("no page {path}"));
    String::from_utf8(page.contents).unwrap()
}

#[test]
fn a_page_per_program_and_subcommand() {
    let paths: BTreeSet<String> = pages()
        .iter()
        .map(|f| f.path.to_str().unwrap().to_string())
        .collect();
    for name in [
        "man8/minfs.8",
        "man8/minfs-mkfs.8",
        "man8/minfs-fsck.8",
        "man8/minfs-info.8",
        "man8/minfs-mount.8",
        "man8/minfs-umount.8",
        "man1/minfs-bench.1",
        "man1/minfs-bench-check.1",
        "man1/minfs-bench-run.1",
        "man1/minfs-bench-report.1",
        "man1/minfs-bench-hdd-replay.1",
    ] {
        assert!(
            paths.contains(&format!("man/{name}")),
            "{name} in {paths:?}"
        );
    }
    // Every visible subcommand has its page, and clap's `help` none.
    for program in PROGRAMS {
        for sub in (program.command)().get_subcommands() {
            let path = format!(
                "man/man{s}/{}-{}.{s}",
                program.name,
                sub.get_name(),
                s = program.section
            );
            assert_eq!(paths.contains(&path), !sub.is_hide_set(), "{path}");
        }
    }
    assert!(!paths.iter().any(|p| p.contains("-help.")), "{paths:?}");
}

/// The text between `.SH "EXIT STATUS"` and the next section.
fn exit_section(roff: &str) -> &str {
    let start = roff
        .find(".SH \"EXIT STATUS\"")
        .expect("an EXIT STATUS section");
    let rest = &roff[start..];
    let end = rest[4..].find(".SH ").map_or(rest.len(), |i| i + 4);
    &rest[..end]
}

fn statuses(roff: &str) -> Vec<u32> {
    exit_section(roff)
        .lines()
        .filter_map(|l| l.strip_prefix("\\fB")?.strip_suffix("\\fR")?.parse().ok())
        .collect()
}

#[test]
fn exit_statuses_are_the_commands_own() {
    // fsck: e2fsck's codes; the other minfs commands 0, 1, 2; minfs-bench 0, 1, 2.
    assert_eq!(statuses(&page("man/man8/minfs-fsck.8")), [0, 1, 4, 8, 16]);
    assert_eq!(statuses(&page("man/man8/minfs-mkfs.8")), [0, 1, 2]);
    assert_eq!(statuses(&page("man/man8/minfs.8")), [0, 1, 2, 4, 8, 16]);
    assert_eq!(statuses(&page("man/man1/minfs-bench-run.1")), [0, 1, 2]);
    assert!(exit_section(&page("man/man8/minfs-fsck.8")).contains("uncorrected"));
}

/// `minfs fsck` really exits with the status its page gives for a usage error and for an
/// operational error (the page's table comes from the constants the command returns).
#[test]
fn fsck_page_matches_the_command() {
    let roff = page("man/man8/minfs-fsck.8");
    let section = exit_section(&roff);
    let usage = minfs::cli::main_with(["minfs", "fsck", "--bogus"].map(Into::into));
    let missing =
        minfs::cli::main_with(["minfs", "fsck", "/nonexistent/minfs.img"].map(Into::into));
    assert_eq!(usage, std::process::ExitCode::from(16));
    assert_eq!(missing, std::process::ExitCode::from(8));
    assert!(section.contains("\\fB16\\fR\nusage error"), "{section}");
    assert!(
        section.contains("\\fB8\\fR\noperational error"),
        "{section}"
    );
}

#[test]
fn pages_render_with_man() {
    if !testutil::require_program("pages_render_with_man", "man", "man-db") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let all = pages();
    assert!(all.len() > 10, "{} pages", all.len());
    for page in all {
        let path = dir.path().join(page.path.file_name().unwrap());
        std::fs::write(&path, &page.contents).unwrap();
        let out = Command::new("man")
            .args(["--warnings", "-l"])
            .arg(&path)
            .env("MANWIDTH", "100")
            .env("MANPAGER", "cat")
            .env("PAGER", "cat")
            .output()
            .expect("man runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let name = path.file_stem().unwrap().to_str().unwrap();
        assert!(out.status.success(), "man -l {name}: {stderr}");
        assert!(stderr.is_empty(), "man -l {name} warns: {stderr}");
        for heading in ["NAME", "SYNOPSIS", "OPTIONS", "EXIT STATUS", "SEE ALSO"] {
            assert!(
                stdout.lines().any(|l| l == heading),
                "{name}: no {heading}:\n{stdout}"
            );
        }
        // The header names the page as NAME(SECTION).
        let section = path.extension().unwrap().to_str().unwrap();
        assert!(
            stdout.contains(&format!("{name}({section})")),
            "{name}: {stdout}"
        );
    }
}
