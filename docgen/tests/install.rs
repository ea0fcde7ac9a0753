//! `scripts/install.sh` into a temporary prefix (with this build's binaries, `--bin-dir`):
//! every binary, man page and completion lands where it should and is listed; bad arguments
//! are refused with exit status 2 and a message naming them.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use docgen::PROGRAMS;

use testutil::output_text as text;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn install(args: &[&str]) -> Output {
    Command::new("bash")
        .arg(repo().join("scripts/install.sh"))
        .args(args)
        .env_remove("DESTDIR")
        .output()
        .expect("bash runs")
}

fn files_under(dir: &Path) -> BTreeSet<PathBuf> {
    let mut found = BTreeSet::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            if e.file_type().unwrap().is_dir() {
                todo.push(e.path());
            } else {
                found.insert(e.path());
            }
        }
    }
    found
}

/// This build's binaries: minfs-docgen and every program's.
fn bin_dir() -> PathBuf {
    let programs: Vec<(&str, &str)> = PROGRAMS.iter().map(|p| (p.package, p.name)).collect();
    testutil::bin_dir_with(env!("CARGO_BIN_EXE_minfs-docgen"), &programs)
}

#[test]
fn installs_binaries_man_pages_and_completions_under_the_prefix() {
    let bins = bin_dir();
    let tmp = tempfile::tempdir().unwrap();
    let prefix = tmp.path().join("usr/local");
    let out = install(&[
        "--bin-dir",
        bins.to_str().unwrap(),
        "--prefix",
        prefix.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);

    let expected = docgen::all_files()
        .unwrap()
        .into_iter()
        .map(|f| prefix.join("share").join(f.path))
        .chain(PROGRAMS.iter().map(|p| prefix.join("bin").join(p.name)));
    let expected: BTreeSet<PathBuf> = expected.collect();
    for must in [
        "bin/minfs",
        "bin/minfs-bench",
        "share/man/man8/minfs.8",
        "share/man/man8/minfs-fsck.8",
        "share/man/man1/minfs-bench-run.1",
        "share/bash-completion/completions/minfs",
        "share/bash-completion/completions/minfs-bench",
        "share/zsh/site-functions/_minfs",
        "share/fish/vendor_completions.d/minfs-bench.fish",
    ] {
        assert!(expected.contains(&prefix.join(must)), "{must}");
    }
    // Exactly those files, each listed as installed.
    assert_eq!(files_under(tmp.path()), expected);
    let listed: BTreeSet<PathBuf> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("installed "))
        .map(PathBuf::from)
        .collect();
    assert_eq!(listed, expected, "{}", text(&out));
    assert!(stdout.contains(&format!("{} files installed", expected.len())));

    // The installed binaries run; the pages are the generated ones.
    for bin in PROGRAMS.iter().map(|p| p.name) {
        let v = Command::new(prefix.join("bin").join(bin))
            .arg("--version")
            .output()
            .unwrap();
        assert!(v.status.success(), "{bin} --version");
    }
    let page = std::fs::read(prefix.join("share/man/man8/minfs-fsck.8")).unwrap();
    let generated = PROGRAMS[0].man_pages().unwrap();
    assert!(generated.iter().any(|f| f.contents == page));
}

#[test]
fn destdir_stages_under_it() {
    let bins = bin_dir();
    let tmp = tempfile::tempdir().unwrap();
    let stage = tmp.path().join("stage");
    let out = install(&[
        "--bin-dir",
        bins.to_str().unwrap(),
        "--prefix",
        "/usr",
        "--destdir",
        stage.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(stage.join("usr/bin/minfs").is_file());
    assert!(stage.join("usr/share/man/man8/minfs.8").is_file());
}

#[test]
fn bad_arguments_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("no-such-dir");
    for (args, says) in [
        (vec!["--frobnicate"], "unknown argument '--frobnicate'"),
        (vec!["--prefix"], "--prefix needs a directory"),
        (
            vec!["--prefix", "usr/local"],
            "absolute path, not 'usr/local'",
        ),
        (
            vec!["--bin-dir", missing.to_str().unwrap()],
            "is not a directory",
        ),
    ] {
        let out = install(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(says), "{args:?}: {}", text(&out));
        assert!(out.stdout.is_empty(), "{args:?}: {}", text(&out));
    }
    assert!(!missing.exists());
    let help = install(&["--help"]);
    assert!(help.status.success());
    assert!(String::from_utf8_lossy(&help.stdout).contains("--prefix DIR"));
}
