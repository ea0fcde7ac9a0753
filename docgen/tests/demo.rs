//! `scripts/demo.sh` works for a user who is not root, on a fresh clone: as root the test runs
//! it as user `nobody` (65534, through `setpriv`) on a copy of the repository's tracked files
//! (but results/) that nobody owns; as another user, as that user. The minfs binary is this build's
//! (`--bin-dir`): the demo's only other step is `cargo build`, which needs no privilege but a
//! toolchain that user can reach.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use testutil::output_text;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The repository's tracked files as a fresh clone has them (their content in this working
/// tree), copied under `dest` — all but the committed runs under results/ (tens of thousands of
/// files the demo never reads); `Err` with the reason when git cannot list them.
fn fresh_clone(dest: &Path) -> Result<(), String> {
    let out = Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(repo())
        .output()
        .map_err(|e| format!("git: {e}"))?;
    if !out.status.success() {
        return Err(format!("git ls-files failed: {}", output_text(&out)));
    }
    for name in out.stdout.split(|&b| b == 0).filter(|n| !n.is_empty()) {
        let rel = Path::new(std::str::from_utf8(name).unwrap());
        if rel.starts_with("results") {
            continue;
        }
        let from = repo().join(rel);
        let to = dest.join(rel);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        let meta = std::fs::symlink_metadata(&from).unwrap();
        if meta.file_type().is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&from).unwrap(), &to).unwrap();
        } else {
            std::fs::copy(&from, &to).unwrap();
        }
    }
    Ok(())
}

/// Gives every file under `dir` (and `dir`) to `uid`:`gid`.
fn chown_tree(dir: &Path, uid: u32, gid: u32) {
    std::os::unix::fs::lchown(dir, Some(uid), Some(gid)).unwrap();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if entry.file_type().unwrap().is_dir() {
            chown_tree(&path, uid, gid);
        } else {
            std::os::unix::fs::lchown(&path, Some(uid), Some(gid)).unwrap();
        }
    }
}

#[test]
fn the_demo_runs_as_an_unprivileged_user_on_a_fresh_clone() {
    let bins = testutil::bin_dir_with(env!("CARGO_BIN_EXE_minfs-docgen"), &[("minfs", "minfs")]);
    let scratch = tempfile::Builder::new()
        .prefix("minfs-demo-")
        .tempdir_in(testutil::scratch_dir())
        .unwrap();
    let clone = scratch.path().join("minfs");
    if let Err(why) = fresh_clone(&clone) {
        testutil::print_skip("demo", &why);
        return;
    }
    // The binary, where the user can run it.
    let bin_dir = scratch.path().join("bin");
    std::fs::create_dir(&bin_dir).unwrap();
    std::fs::copy(bins.join("minfs"), bin_dir.join("minfs")).unwrap();

    let runner = match testutil::unprivileged_runner(&bin_dir.join("minfs")) {
        Ok(prefix) => prefix,
        Err(why) => {
            if std::env::var_os("MINFS_REQUIRE_LOOP").is_some_and(|v| v == "1") {
                panic!("MINFS_REQUIRE_LOOP=1 but the demo cannot run unprivileged: {why}");
            }
            testutil::print_skip("demo", &why);
            return;
        }
    };
    let as_nobody = !runner.is_empty();
    if as_nobody {
        // The scratch directory (0700, root's) must let nobody reach the clone.
        std::fs::set_permissions(
            scratch.path(),
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
        chown_tree(&clone, 65534, 65534);
        chown_tree(&bin_dir, 65534, 65534);
    }

    let mut cmd = match runner.split_first() {
        Some((prog, args)) => {
            let mut c = Command::new(prog);
            c.args(args).arg("bash");
            c
        }
        None => Command::new("bash"),
    };
    cmd.arg(clone.join("scripts/demo.sh"))
        .arg("--bin-dir")
        .arg(&bin_dir)
        .current_dir(scratch.path())
        .env("HOME", scratch.path());
    let started = Instant::now();
    let out = cmd.output().expect("bash runs");
    let took = started.elapsed();
    let text = output_text(&out);
    assert!(out.status.success(), "demo.sh failed:\n{text}");
    println!(
        "scripts/demo.sh ran in {:.2?} as {} (binary given)",
        took,
        if as_nobody {
            "nobody (65534)"
        } else {
            "this user"
        }
    );

    // It made a filesystem, wrote and read back a file, and fsck found it clean.
    let stdout = String::from_utf8_lossy(&out.stdout);
    for step in [
        "+ minfs mkfs",
        "+ minfs create",
        "+ minfs ls -l",
        "+ minfs fsck -n",
    ] {
        assert!(stdout.contains(step), "no `{step}` step:\n{text}");
    }
    assert!(
        stdout.contains("hello from minfs"),
        "the file's content was not read back:\n{text}"
    );
    // Its image is in the clone's work-tmp/demo (git ignores work-tmp), owned by the user.
    let img = clone.join("work-tmp/demo/disk.img");
    let meta = std::fs::metadata(&img).unwrap_or_else(|e| panic!("{}: {e}\n{text}", img.display()));
    if as_nobody {
        assert_eq!(meta.uid(), 65534, "the image is not the user's");
    }
    let ignored = Command::new("git")
        .args(["check-ignore", "-q", "work-tmp/demo/disk.img"])
        .current_dir(repo())
        .status()
        .unwrap();
    assert!(ignored.success(), "git does not ignore the demo's image");
}

#[test]
fn the_demo_refuses_bad_arguments() {
    let script = repo().join("scripts/demo.sh");
    for (args, says) in [
        (&["--frobnicate"][..], "unknown option --frobnicate"),
        (&["--bin-dir"][..], "--bin-dir needs a directory"),
        (
            &["--bin-dir", "/nonexistent"][..],
            "no minfs binary in /nonexistent",
        ),
        (&["a", "b"][..], "one WORKDIR only"),
    ] {
        let out = Command::new("bash")
            .arg(&script)
            .args(args)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            output_text(&out)
        );
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(says),
            "{args:?}: {}",
            output_text(&out)
        );
    }
}
