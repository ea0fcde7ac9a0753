//! Every relative link of every Markdown file in the repository — README.md, ARCHITECTURE.md,
//! CHANGELOG.md, docs/, the crates' READMEs, results/ and every run's report — leads to a
//! file or directory that exists inside the repository, and a link's `#anchor` to a heading
//! of the Markdown file it names (as GitHub anchors headings), so that a section a document
//! cites is one a reader can reach.

mod common;

use std::collections::{BTreeSet, HashMap};
use std::path::{Component, Path, PathBuf};

use common::markdown::{
    anchors, link_destinations, markdown_files, prose_lines, repo, slug, without_code_spans,
};

/// One relative link: where it is written and what it names.
struct Link {
    place: String,
    from_dir: PathBuf,
    dest: String,
}

fn relative_links(files: &[PathBuf]) -> Vec<Link> {
    let root = repo();
    let mut links = Vec::new();
    for rel in files {
        let text = std::fs::read_to_string(root.join(rel)).unwrap();
        let from_dir = rel.parent().unwrap().to_path_buf();
        for (n, line) in prose_lines(&text) {
            for dest in link_destinations(&without_code_spans(line)) {
                let external = dest.contains("://") || dest.starts_with("mailto:");
                if dest.is_empty() || external {
                    continue;
                }
                links.push(Link {
                    place: format!("{}:{n}", rel.display()),
                    from_dir: from_dir.clone(),
                    dest,
                });
            }
        }
    }
    links
}

/// `dir/dest` with `.` and `..` resolved, or `None` when it leaves the repository.
fn resolve(dir: &Path, dest: &str) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for part in dir.join(dest).components() {
        match part {
            Component::Normal(p) => out.push(p),
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(out)
}

fn percent_decoded(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let Ok(b) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// What is wrong with each link that leads nowhere, and how many links were checked.
fn broken_links(files: &[PathBuf]) -> (Vec<String>, usize) {
    let root = repo();
    let mut anchor_cache: HashMap<PathBuf, BTreeSet<String>> = HashMap::new();
    let links = relative_links(files);
    let mut broken = Vec::new();
    for link in &links {
        let (path, fragment) = match link.dest.split_once('#') {
            Some((p, f)) => (p, Some(f)),
            None => (link.dest.as_str(), None),
        };
        let path = percent_decoded(path);
        let target = if path.is_empty() {
            // `#anchor` alone: this file.
            let file = link.place.rsplit_once(':').unwrap().0;
            Some(PathBuf::from(file))
        } else {
            resolve(&link.from_dir, &path)
        };
        let Some(target) = target else {
            broken.push(format!(
                "{}: {} leaves the repository",
                link.place, link.dest
            ));
            continue;
        };
        if !root.join(&target).exists() {
            broken.push(format!(
                "{}: {} ({} does not exist)",
                link.place,
                link.dest,
                target.display()
            ));
            continue;
        }
        let Some(fragment) = fragment else { continue };
        let fragment = percent_decoded(fragment);
        if target.extension().is_some_and(|e| e == "md") {
            let offered = anchor_cache.entry(target.clone()).or_insert_with(|| {
                anchors(&std::fs::read_to_string(root.join(&target)).unwrap_or_default())
            });
            if !offered.contains(&fragment) {
                broken.push(format!(
                    "{}: {} (no heading of {} has the anchor #{fragment})",
                    link.place,
                    link.dest,
                    target.display()
                ));
            }
        } else {
            // A source file's line (`#L10`, `#L10-L20`) is the only other anchor GitHub offers.
            let line_anchor = fragment.split('-').all(|p| {
                p.len() > 1 && p.starts_with('L') && p[1..].chars().all(|c| c.is_ascii_digit())
            });
            if !line_anchor {
                broken.push(format!(
                    "{}: {} (#{fragment} in a file that is not Markdown)",
                    link.place, link.dest
                ));
            }
        }
    }
    (broken, links.len())
}

#[test]
fn every_relative_link_and_anchor_in_the_markdown_resolves() {
    let files = markdown_files();
    for must in [
        "README.md",
        "ARCHITECTURE.md",
        "docs/COMPARISON.md",
        "results/README.md",
    ] {
        assert!(
            files.iter().any(|f| f == Path::new(must)),
            "the scan misses {must}: {files:?}"
        );
    }
    assert!(
        files
            .iter()
            .any(|f| f.starts_with("results") && f.ends_with("report.md")),
        "the scan misses the runs' reports"
    );
    let (broken, checked) = broken_links(&files);
    println!(
        "{checked} relative links checked in {} Markdown files",
        files.len()
    );
    assert!(
        checked > 1000,
        "only {checked} links found: is the scan blind?"
    );
    assert!(
        broken.is_empty(),
        "{} of {checked} relative links lead nowhere:\n{}",
        broken.len(),
        broken.join("\n")
    );
}

/// The checker itself: a missing file, a missing anchor, a link out of the repository and a
/// link inside code are told apart from good links.
#[test]
fn the_link_checker_finds_what_is_broken() {
    let dir = repo().join("target/doc-links-selftest");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(
        dir.join("sub/B.md"),
        "# B\n\n## No budget decides it\n\n## Twice\n\n## Twice\n\n```\n## Not a heading\n```\n",
    )
    .unwrap();
    let a = "# A\n\n\
             [good](sub/B.md#no-budget-decides-it) [dup](sub/B.md#twice-1) [self](#a)\n\
             [missing file](sub/C.md) [missing anchor](sub/B.md#no-budget)\n\
             [code block anchor](sub/B.md#not-a-heading) [out](../../../../etc/passwd)\n\
             `[in code](nowhere.md)` [web](https://example.com/x.md) ![img](sub)\n\
             [ref]: sub/B.md#twice\n";
    std::fs::write(dir.join("A.md"), a).unwrap();
    let rel = dir.strip_prefix(repo()).unwrap().join("A.md");
    let (broken, checked) = broken_links(&[rel]);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(checked, 9, "{broken:?}");
    let named: Vec<&str> = broken
        .iter()
        .map(|b| b.split(": ").nth(1).unwrap().split(' ').next().unwrap())
        .collect();
    assert_eq!(
        named,
        [
            "sub/C.md",
            "sub/B.md#no-budget",
            "sub/B.md#not-a-heading",
            "../../../../etc/passwd"
        ],
        "{broken:#?}"
    );
}

#[test]
fn anchors_are_githubs() {
    assert_eq!(slug("No budget decides it"), "no-budget-decides-it");
    assert_eq!(
        slug("The whole drive under every rule set: 2026-11-26-vm-emulated-whole-drive-rev3, -merge, and x"),
        "the-whole-drive-under-every-rule-set-2026-11-26-vm-emulated-whole-drive-rev3--merge-and-x"
    );
    assert_eq!(
        slug("Scrubbing: finding `unreadable` sectors [before](x.md) ±5 % × 2"),
        "scrubbing-finding-unreadable-sectors-before-5---2"
    );
    assert_eq!(slug("The kernel's time"), "the-kernels-time");
}
