//! The man pages: one per program and subcommand, each rendering cleanly with `man -l`
//! (man-db; skipped with a printed reason where it is missing, a failure in CI), with the
//! exit statuses the programs really return.

use std::collections::BTreeSet;
use std::process::Command;

use docgen::{File, PROGRAMS};

/// Every program's and subcommand's page, and each helper's own (not the aliases' `.so`).
fn pages() -> Vec<File> {
    PROGRAMS
        .iter()
        .flat_map(|p| p.man_pages().expect("pages render"))
        .chain(
            docgen::helper_pages()
                .expect("pages render")
                .into_iter()
                .filter(|f| !f.contents.starts_with(b".so ")),
        )
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

/// The helpers util-linux runs have a page each (mkfs.minfs(8), fsck.minfs(8), mount.minfs(8),
/// umount.fuse.minfs(8)) with their own exit statuses (fsck(8)'s, mount(8)'s), and the other
/// names they answer to a page that sources it, which man finds in an installed tree.
#[test]
fn a_page_per_helper() {
    assert_eq!(statuses(&page("man/man8/mkfs.minfs.8")), [0, 1, 2]);
    assert_eq!(statuses(&page("man/man8/fsck.minfs.8")), [0, 1, 4, 8, 16]);
    assert_eq!(statuses(&page("man/man8/mount.minfs.8")), [0, 1, 2, 32]);
    assert_eq!(statuses(&page("man/man8/umount.fuse.minfs.8")), [0, 1, 32]);
    let fsck = page("man/man8/fsck.minfs.8");
    assert!(fsck.contains("preen"), "{fsck}");
    assert!(
        section_text(&fsck, "SYNOPSIS").contains("fsck.minfs"),
        "{fsck}"
    );
    let mount = page("man/man8/mount.minfs.8");
    for option in ["nofail", "_netdev", "noatime", "x\\-*"] {
        assert!(mount.contains(option), "{option}: {mount}");
    }
    let helpers = docgen::helper_pages().unwrap();
    let alias = |name: &str| {
        helpers
            .iter()
            .find(|f| f.path.to_str() == Some(&format!("man/man8/{name}.8")))
            .map(|f| String::from_utf8(f.contents.clone()).unwrap())
            .unwrap_or_else(|| panic!("no page {name}"))
    };
    assert_eq!(alias("mount.fuse.minfs"), ".so man8/mount.minfs.8\n");
    assert_eq!(alias("fsck.fuse.minfs"), ".so man8/fsck.minfs.8\n");

    if !testutil::require_program("a_page_per_helper", "man", "man-db") {
        return;
    }
    // man resolves `.so` from the tree's root, as in PREFIX/share/man.
    let tree = tempfile::tempdir().unwrap();
    for f in &helpers {
        let path = tree.path().join(f.path.strip_prefix("man").unwrap());
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, &f.contents).unwrap();
    }
    let out = Command::new("man")
        .args(["--warnings", "-l", "man8/mount.fuse.minfs.8"])
        .current_dir(tree.path())
        .env("MANPAGER", "cat")
        .env("PAGER", "cat")
        .output()
        .expect("man runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", testutil::output_text(&out));
    assert!(stdout.contains("mount.minfs(8)"), "{stdout}");
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

/// The text of section `name` (`.SH NAME` … up to the next `.SH`), roff requests dropped,
/// escapes of `-` undone, lines joined.
fn section_text(roff: &str, name: &str) -> String {
    let mut lines = roff.lines().skip_while(|l| *l != format!(".SH {name}"));
    lines.next();
    lines
        .take_while(|l| !l.starts_with(".SH"))
        .filter(|l| !l.starts_with('.') && !l.starts_with('\''))
        .map(|l| l.replace("\\-", "-"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Every page's DESCRIPTION says more than its NAME line does.
#[test]
fn every_page_has_a_real_description() {
    let mut bare = Vec::new();
    for f in pages() {
        let roff = String::from_utf8(f.contents).unwrap();
        let name = section_text(&roff, "NAME");
        let summary = name.split_once(" - ").map_or(name.as_str(), |(_, s)| s);
        let description = section_text(&roff, "DESCRIPTION");
        if description.len() < summary.len() + 60 {
            bare.push(format!("{}: {description:?}", f.path.display()));
        }
    }
    assert!(
        bare.is_empty(),
        "DESCRIPTION only repeats NAME:\n{}",
        bare.join("\n")
    );
}

/// A reference to another page, `NAME(SECTION)`, names the section that page is installed in
/// (a subcommand page of `minfs` is in section 8, like `minfs(8)`).
#[test]
fn cross_references_name_the_installed_section() {
    let pages = pages();
    let installed: Vec<(String, String)> = pages
        .iter()
        .map(|f| {
            let file = f.path.file_name().unwrap().to_str().unwrap();
            let (name, section) = file.rsplit_once('.').unwrap();
            (name.to_string(), section.to_string())
        })
        .collect();
    let mut wrong = Vec::new();
    let mut seen = 0;
    for f in &pages {
        let roff = String::from_utf8(f.contents.clone())
            .unwrap()
            .replace("\\-", "-");
        for (name, section) in &installed {
            for other in ["1", "5", "7", "8"] {
                let reference = format!("{name}({other})");
                // Not a longer name's reference (`minfs-bench(1)` holds `bench(1)`).
                let found = roff.match_indices(&reference).any(|(at, _)| {
                    at == 0 || {
                        let c = roff.as_bytes()[at - 1];
                        !(c.is_ascii_alphanumeric() || c == b'-')
                    }
                });
                if found {
                    seen += 1;
                    if other != section {
                        wrong.push(format!(
                            "{}: {reference}, installed as {name}.{section}",
                            f.path.display()
                        ));
                    }
                }
            }
        }
    }
    assert!(seen > PROGRAMS.len(), "only {seen} references found");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
