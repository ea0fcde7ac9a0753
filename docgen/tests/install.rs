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

/// The drive profiles and their README (`hddsim/profiles`), installed under
/// `PREFIX/share/hddsim/profiles`.
fn shipped_profiles() -> impl Iterator<Item = std::ffi::OsString> {
    std::fs::read_dir(repo().join("hddsim/profiles"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
}

/// The shipped workloads (`bencher-workloads/workloads/*.wl`), installed under
/// `PREFIX/share/minfs-bench/workloads`.
fn shipped_workloads() -> impl Iterator<Item = std::ffi::OsString> {
    std::fs::read_dir(repo().join("bencher-workloads/workloads"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().ends_with(".wl"))
}

/// Every name of every helper (`mount.minfs`, `mount.fuse.minfs`, …).
fn helper_names() -> impl Iterator<Item = &'static str> {
    minfs::cli::HELPERS.iter().flat_map(|h| h.names())
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
        .chain(PROGRAMS.iter().map(|p| prefix.join("bin").join(p.name)))
        .chain(shipped_profiles().map(|f| prefix.join("share/hddsim/profiles").join(f)))
        .chain(shipped_workloads().map(|f| prefix.join("share/minfs-bench/workloads").join(f)))
        .chain([prefix.join("lib/udev/rules.d/64-minfs.rules")])
        // Outside /usr and /usr/local the helper links go to PREFIX/sbin.
        .chain(helper_names().map(|h| prefix.join("sbin").join(h)));
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
        "share/hddsim/profiles/st1000dm003.toml",
        "share/minfs-bench/workloads/seq-256k.wl",
        "share/man/man8/mount.minfs.8",
        "share/man/man8/mount.fuse.minfs.8",
        "share/man/man8/fsck.minfs.8",
        "share/man/man8/mkfs.minfs.8",
        "sbin/mount.minfs",
        "sbin/mount.fuse.minfs",
        "sbin/umount.fuse.minfs",
        "sbin/fsck.minfs",
        "sbin/mkfs.minfs",
        "lib/udev/rules.d/64-minfs.rules",
    ] {
        assert!(expected.contains(&prefix.join(must)), "{must}");
    }
    // Exactly those files, each listed as installed.
    assert_eq!(files_under(tmp.path()), expected);
    let listed: BTreeSet<PathBuf> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("installed "))
        .map(|l| PathBuf::from(l.split(" -> ").next().unwrap()))
        .collect();
    assert_eq!(listed, expected, "{}", text(&out));
    assert!(stdout.contains(&format!("{} files installed", expected.len())));
    // Each helper is a link to the installed minfs, and runs as the helper its name says.
    for h in helper_names() {
        let link = prefix.join("sbin").join(h);
        assert_eq!(
            std::fs::read_link(&link).unwrap(),
            prefix.join("bin/minfs"),
            "{h}"
        );
        assert!(
            stdout.contains(&format!("installed {} -> ", link.display())),
            "{h}"
        );
        let v = Command::new(&link).arg("--version").output().unwrap();
        assert!(v.status.success(), "{h} --version: {}", text(&v));
        assert!(
            String::from_utf8_lossy(&v.stdout).starts_with(&format!("{h} ")),
            "{h}"
        );
    }
    // The udev rule runs this prefix's minfs.
    let rules = std::fs::read_to_string(prefix.join("lib/udev/rules.d/64-minfs.rules")).unwrap();
    assert!(
        rules.contains(&format!(
            "IMPORT{{program}}=\"{} probe --export $devnode\"",
            prefix.join("bin/minfs").display()
        )),
        "{rules}"
    );
    // The installed minfs-bench reads an installed workload; its help says where they are.
    let wl = prefix.join("share/minfs-bench/workloads/seq-256k.wl");
    let check = Command::new(prefix.join("bin/minfs-bench"))
        .arg("check")
        .arg(&wl)
        .output()
        .unwrap();
    assert!(check.status.success(), "{}", text(&check));
    let help = Command::new(prefix.join("bin/minfs-bench"))
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(
        help.contains("PREFIX/share/minfs-bench/workloads"),
        "{help}"
    );
    assert!(help.contains("/usr/share/minfs-bench/workloads"), "{help}");
    // PREFIX/sbin is not where mount(8) looks: said so.
    assert!(
        stdout.contains("look for their helpers in /sbin only"),
        "{}",
        text(&out)
    );
    // Outside /usr and /usr/local, how to reach the man pages.
    let manpath = format!("export MANPATH=\"{}/share/man:$MANPATH\"", prefix.display());
    assert!(stdout.contains(&manpath), "{}", text(&out));

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
    // With --prefix /usr the helpers go to /sbin, where mount(8) looks, linked to the
    // installed path (not the staging one).
    for h in helper_names() {
        assert_eq!(
            std::fs::read_link(stage.join("sbin").join(h)).unwrap(),
            Path::new("/usr/bin/minfs"),
            "{h}"
        );
    }
    assert!(!String::from_utf8_lossy(&out.stdout).contains("look for their helpers"));
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
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(help.contains("--prefix DIR"));
    // It names every program it installs.
    for p in PROGRAMS {
        assert!(
            help.contains(p.name),
            "--help does not name {}:\n{help}",
            p.name
        );
    }
    assert!(help.contains("share/hddsim/profiles"), "{help}");
    assert!(help.contains("share/minfs-bench/workloads"), "{help}");
    for h in helper_names() {
        assert!(help.contains(h), "--help does not name {h}:\n{help}");
    }
    assert!(help.contains("--sbin-dir DIR"), "{help}");
}

/// A helper already installed from elsewhere (the Debian package's /usr/sbin/mount.minfs, a
/// file of another program) is refused before anything is installed, never replaced; a link
/// left by an earlier install.sh to the same minfs is replaced.
#[test]
fn a_helper_from_elsewhere_is_refused() {
    let bins = bin_dir();
    let tmp = tempfile::tempdir().unwrap();
    let prefix = tmp.path().join("usr");
    let sbin = tmp.path().join("sbin");
    std::fs::create_dir_all(&sbin).unwrap();
    let foreign = sbin.join("mount.minfs");
    std::fs::write(&foreign, "#!/bin/sh\n").unwrap();
    let args = [
        "--bin-dir",
        bins.to_str().unwrap(),
        "--prefix",
        prefix.to_str().unwrap(),
        "--sbin-dir",
        sbin.to_str().unwrap(),
    ];
    let out = install(&args);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&foreign.display().to_string()), "{stderr}");
    assert!(stderr.contains("not replacing it"), "{stderr}");
    assert_eq!(std::fs::read(&foreign).unwrap(), b"#!/bin/sh\n");
    assert!(!prefix.exists(), "installed something: {}", text(&out));
    // Ours (a link to PREFIX/bin/minfs): replaced, as by a second install.
    std::fs::remove_file(&foreign).unwrap();
    std::os::unix::fs::symlink(prefix.join("bin/minfs"), &foreign).unwrap();
    let out = install(&args);
    assert!(out.status.success(), "{}", text(&out));
    let out = install(&args);
    assert!(out.status.success(), "again: {}", text(&out));
}

/// The installed `hddsim` and `minfs-bench hdd-replay` find their drive profiles with the
/// checkout out of reach (a tmpfs over it in a private mount namespace, run from an empty
/// directory): a built-in name is the built-in profile, whatever file of that name is
/// installed (a broken installed `st1000dm003.toml` changes nothing); another name is found in
/// `PREFIX/share/hddsim/profiles` (a broken one is named); with that directory gone, the
/// built-in profiles still work. Needs root and unshare(1); skipped otherwise (a failure under
/// MINFS_REQUIRE_LOOP=1).
#[test]
fn installed_tools_find_profiles_without_the_checkout() {
    let test = "installed_tools_find_profiles_without_the_checkout";
    let missing = if !testutil::is_root() {
        Some("needs root (a mount namespace with a tmpfs over the checkout)")
    } else if testutil::which("unshare").is_none() {
        Some("unshare(1) is not installed (util-linux)")
    } else {
        None
    };
    if let Some(reason) = missing {
        if std::env::var_os("MINFS_REQUIRE_LOOP").is_some_and(|v| v == "1") {
            panic!("MINFS_REQUIRE_LOOP=1 but {reason}");
        }
        testutil::print_skip(test, reason);
        return;
    }
    let checkout = repo().canonicalize().unwrap();
    let tmp = tempfile::Builder::new()
        .prefix("minfs-installed-")
        .tempdir_in(testutil::scratch_dir())
        .unwrap();
    let base = tmp.path().canonicalize().unwrap();
    assert!(
        !base.starts_with(&checkout),
        "the scratch directory is in the checkout"
    );
    let prefix = base.join("prefix");
    let out = install(&[
        "--bin-dir",
        bin_dir().to_str().unwrap(),
        "--prefix",
        prefix.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let profiles = prefix.join("share/hddsim/profiles");
    assert!(
        profiles.join("st1000dm003.toml").is_file(),
        "{}",
        text(&out)
    );
    // The inputs of a replay (a golden trace and op-log), and an empty working directory.
    let data = base.join("data");
    std::fs::create_dir(&data).unwrap();
    for f in ["hdd-mixed.trace", "hdd-mixed.oplog"] {
        std::fs::copy(checkout.join("hddsim/tests/data").join(f), data.join(f)).unwrap();
    }
    let empty = base.join("empty");
    std::fs::create_dir(&empty).unwrap();
    let script = r#"
        set -e
        mount -t tmpfs -o size=1m minfs-test-hides-the-checkout "$1"
        test ! -e "$1/Cargo.toml"
        cd "$2"
        "$3/bin/hddsim" validate --profile st1000dm003 >/dev/null
        "$3/bin/hddsim" validate --profile st1000dm003-merge+write_hit_clean=keep >/dev/null
        "$3/bin/minfs-bench" hdd-replay --profile st1000dm003-4kn "$4/hdd-mixed.trace" "$4/hdd-mixed.oplog" >/dev/null
        if [ -n "$5" ]; then
          "$3/bin/minfs-bench" hdd-replay --profile "$5" "$4/hdd-mixed.trace" "$4/hdd-mixed.oplog" >/dev/null
        fi
        test -z "$(ls -A "$2")"
    "#;
    let run = |extra: &str| {
        Command::new("unshare")
            .args(["-m", "--propagation", "private", "sh", "-c", script, "sh"])
            .args([&checkout, &empty, &prefix, &data])
            .arg(extra)
            .output()
            .unwrap()
    };
    let out = run("");
    assert!(out.status.success(), "installed profiles: {}", text(&out));

    // A built-in name is the built-in profile: a broken installed file of that name is not
    // read (regression: a binary read its checkout's newer file and failed).
    let installed = profiles.join("st1000dm003.toml");
    let good = std::fs::read(&installed).unwrap();
    std::fs::write(&installed, "rpm = \"fast\"\n").unwrap();
    let out = run("");
    assert!(out.status.success(), "built-in name: {}", text(&out));

    // Another name is looked up in the installed directory: found there, and a broken one is
    // named with its path.
    let custom = profiles.join("site-drive.toml");
    std::fs::write(&custom, &good).unwrap();
    let out = run("site-drive");
    assert!(out.status.success(), "installed profile: {}", text(&out));
    std::fs::write(&custom, "rpm = \"fast\"\n").unwrap();
    let out = run("site-drive");
    assert!(!out.status.success(), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&custom.display().to_string()),
        "{}",
        text(&out)
    );

    // No installed profiles: the built-in ones.
    std::fs::remove_dir_all(&profiles).unwrap();
    let out = run("");
    assert!(out.status.success(), "built-in profiles: {}", text(&out));
    // Nothing was left mounted over the checkout out here.
    assert!(checkout.join("Cargo.toml").is_file());
}
