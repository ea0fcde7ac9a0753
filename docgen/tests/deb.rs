//! The Debian package (`scripts/deb.sh`, cargo-deb) built from this build's binaries,
//! installed into this system with `dpkg -i`, used through util-linux (`mkfs -t minfs`,
//! `mount -t minfs`, `umount`, `fsck -t minfs -n`) on an image, and removed with `dpkg -r`,
//! leaving nothing behind. Root, dpkg, cargo-deb and fuse3 (the package depends on it)
//! needed: skipped with a printed reason otherwise, a failure under MINFS_REQUIRE_LOOP=1. It
//! refuses to run where minfs is installed from elsewhere (the package, or a helper or program
//! in the system's directories), and removes the package on every path.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use docgen::PROGRAMS;
use testutil::output_text as text;

const PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn cmd(program: &str) -> Command {
    let mut c = Command::new(program);
    c.env("PATH", PATH).env("LC_ALL", "C");
    c
}

fn run(c: &mut Command) -> Output {
    c.output().unwrap_or_else(|e| panic!("{c:?}: {e}"))
}

fn installed() -> bool {
    let out = run(cmd("dpkg-query").args(["-W", "-f", "${Status}", "minfs"]));
    out.status.success() && String::from_utf8_lossy(&out.stdout).contains(" installed")
}

/// Removes the package when dropped (a failed assertion must not leave it installed).
struct Package;

impl Drop for Package {
    fn drop(&mut self) {
        let status = run(cmd("dpkg-query").args(["-W", "-f", "${Status}", "minfs"]));
        if status.status.success()
            && !String::from_utf8_lossy(&status.stdout).contains("not-installed")
        {
            let _ = cmd("dpkg").args(["-r", "minfs"]).output();
        }
    }
}

/// Unmounts `0` if still mounted when dropped.
struct Unmount(PathBuf);

impl Drop for Unmount {
    fn drop(&mut self) {
        let mounted = std::fs::read_to_string("/proc/self/mountinfo")
            .is_ok_and(|m| m.contains(&format!(" {} ", self.0.display())));
        if mounted {
            let _ = cmd("umount").arg(&self.0).status();
        }
    }
}

fn missing(test: &str) -> Option<String> {
    if !testutil::is_root() {
        return Some("needs root (dpkg -i into this system)".into());
    }
    for (prog, package) in [
        ("dpkg", "dpkg"),
        ("dpkg-deb", "dpkg"),
        ("mount", "mount"),
        ("fsck", "util-linux"),
        ("mkfs", "util-linux"),
        ("man", "man-db"),
        ("mount.fuse3", "fuse3"),
    ] {
        if !testutil::require_program(test, prog, package) {
            return Some(format!("{prog} is missing"));
        }
    }
    let deb = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .args(["deb", "--version"])
        .output();
    if !deb.is_ok_and(|o| o.status.success()) {
        return Some("cargo-deb is not installed (cargo install cargo-deb --locked)".into());
    }
    None
}

#[test]
fn debian_package_installs_works_and_removes_cleanly() {
    let test = "debian_package_installs_works_and_removes_cleanly";
    if let Some(reason) = missing(test) {
        if std::env::var_os("MINFS_REQUIRE_LOOP").is_some_and(|v| v == "1") {
            panic!("MINFS_REQUIRE_LOOP=1 but {reason}");
        }
        testutil::print_skip(test, &reason);
        return;
    }
    // The package from this build's binaries (the dev profile: the layout is what is tested).
    let programs: Vec<(&str, &str)> = PROGRAMS.iter().map(|p| (p.package, p.name)).collect();
    testutil::bin_dir_with(env!("CARGO_BIN_EXE_minfs-docgen"), &programs);
    let tmp = tempfile::Builder::new()
        .prefix("minfs-deb-")
        .tempdir_in(testutil::scratch_dir())
        .unwrap();
    let out = run(Command::new("bash")
        .arg(repo().join("scripts/deb.sh"))
        .args(["--profile", "dev", "--no-build", "--output"])
        .arg(tmp.path()));
    assert!(out.status.success(), "deb.sh: {}", text(&out));
    let deb = PathBuf::from(String::from_utf8_lossy(&out.stdout).lines().last().unwrap());
    assert!(deb.is_file(), "{}", text(&out));
    let info = run(cmd("dpkg-deb")
        .args(["-f"])
        .arg(&deb)
        .args(["Package", "Depends"]));
    let info = String::from_utf8_lossy(&info.stdout);
    assert!(info.contains("Package: minfs"), "{info}");
    assert!(info.contains("fuse3"), "{info}");

    let _lock = testutil::SystemInstallLock::acquire().unwrap();
    let helpers: Vec<&str> = minfs::cli::HELPERS.iter().flat_map(|h| h.names()).collect();
    if let Some(what) = testutil::foreign_minfs_install(&helpers) {
        panic!("refusing to run: {what} (installed from elsewhere)");
    }
    for p in PROGRAMS {
        for dir in ["/usr/bin", "/usr/local/bin", "/usr/local/sbin"] {
            let path = Path::new(dir).join(p.name);
            assert!(
                path.symlink_metadata().is_err(),
                "refusing to run: {} exists (installed from elsewhere)",
                path.display()
            );
        }
    }

    let _package = Package;
    let out = run(cmd("dpkg").arg("-i").arg(&deb));
    assert!(out.status.success(), "dpkg -i: {}", text(&out));
    assert!(installed());
    let listed = run(cmd("dpkg").args(["-L", "minfs"]));
    let listed: Vec<PathBuf> = String::from_utf8_lossy(&listed.stdout)
        .lines()
        .map(PathBuf::from)
        .collect();
    let owned: Vec<&PathBuf> = listed
        .iter()
        .filter(|p| p.symlink_metadata().is_ok_and(|m| !m.is_dir()))
        .collect();
    for must in [
        "/usr/bin/minfs",
        "/usr/bin/minfs-bench",
        "/usr/bin/minfs-cannyls",
        "/usr/bin/hddsim",
        "/usr/sbin/mkfs.minfs",
        "/usr/sbin/fsck.minfs",
        "/usr/sbin/fsck.fuse.minfs",
        "/usr/sbin/mount.minfs",
        "/usr/sbin/mount.fuse.minfs",
        "/usr/sbin/umount.fuse.minfs",
        "/usr/share/man/man8/mount.minfs.8.gz",
        "/usr/share/man/man1/minfs-bench.1.gz",
        "/usr/share/bash-completion/completions/minfs",
        "/usr/share/zsh/vendor-completions/_minfs",
        "/usr/share/fish/vendor_completions.d/minfs.fish",
        "/usr/share/hddsim/profiles/st1000dm003.toml",
        "/usr/share/minfs-bench/workloads/seq-256k.wl",
        "/usr/share/doc/minfs/SYSTEM.md",
        "/usr/lib/udev/rules.d/64-minfs.rules",
    ] {
        assert!(
            owned.iter().any(|p| *p == Path::new(must)),
            "{must} not in dpkg -L minfs"
        );
    }
    for h in &helpers {
        let link = Path::new("/usr/sbin").join(h);
        assert_eq!(
            std::fs::read_link(&link).unwrap(),
            Path::new("../bin/minfs"),
            "{h}"
        );
    }
    // A man page per program and helper, found by man (an alias's `.so` too).
    for page in [
        "minfs",
        "minfs-bench",
        "mkfs.minfs",
        "fsck.minfs",
        "mount.fuse.minfs",
    ] {
        let out = run(cmd("man").args(["-w", page]));
        assert!(out.status.success(), "man -w {page}: {}", text(&out));
    }
    let out =
        run(cmd("minfs-bench").args(["check", "/usr/share/minfs-bench/workloads/seq-256k.wl"]));
    assert!(out.status.success(), "{}", text(&out));

    // mkfs -t, mount -t, umount and fsck -t on an image, through the installed helpers.
    let img = tmp.path().join("minfs.img");
    let mnt = tmp.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let _unmount = Unmount(mnt.clone());
    let out = run(cmd("mkfs").args(["-t", "minfs"]).arg(&img).arg("16384"));
    assert!(out.status.success(), "mkfs -t minfs: {}", text(&out));
    let out = run(cmd("mount").args(["-t", "minfs"]).arg(&img).arg(&mnt));
    assert!(out.status.success(), "mount -t minfs: {}", text(&out));
    let findmnt = run(cmd("findmnt").args(["-n", "-o", "FSTYPE"]).arg(&mnt));
    assert_eq!(
        String::from_utf8_lossy(&findmnt.stdout).trim(),
        "fuse.minfs"
    );
    std::fs::write(mnt.join("hello"), b"from the package").unwrap();
    testutil::umount_retrying_busy(cmd("umount").arg(&mnt))
        .unwrap_or_else(|e| panic!("umount: {e}"));
    let out = run(cmd("fsck").args(["-t", "minfs", "-n"]).arg(&img));
    assert_eq!(
        out.status.code(),
        Some(0),
        "fsck -t minfs -n: {}",
        text(&out)
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("1 file"),
        "{}",
        text(&out)
    );

    // dpkg -r: every file and link it installed gone, and the package with them.
    let out = run(cmd("dpkg").args(["-r", "minfs"]));
    assert!(out.status.success(), "dpkg -r: {}", text(&out));
    assert!(!installed());
    let left: Vec<&&PathBuf> = owned
        .iter()
        .filter(|p| p.symlink_metadata().is_ok())
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    for dir in [
        "/usr/share/minfs-bench",
        "/usr/share/hddsim",
        "/usr/share/doc/minfs",
    ] {
        assert!(!Path::new(dir).exists(), "{dir} left behind");
    }
    let status = run(cmd("dpkg-query").args(["-W", "-f", "${Status}", "minfs"]));
    let status = String::from_utf8_lossy(&status.stdout);
    assert!(
        status.is_empty() || status.contains("not-installed"),
        "dpkg still knows minfs: {status}"
    );
}
