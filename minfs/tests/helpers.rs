//! The helpers util-linux runs (`mkfs.minfs`, `fsck.minfs`, `mount.minfs`,
//! `umount.fuse.minfs`), as links to this build's `minfs` in a temporary directory, on image
//! files: their arguments, their refusals (nothing written), fsck's preen mode and exit codes.
//! The same helpers run by the real mount(8), fsck(8) and mkfs(8) on loop devices and an
//! fstab: tests/system.rs (root).

mod common;

use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{json, minfs};
use testutil::output_text as text;

struct Helpers {
    dir: tempfile::TempDir,
}

impl Helpers {
    /// A directory with a link per helper name to this build's `minfs`.
    fn new() -> Helpers {
        let dir = tempfile::Builder::new()
            .prefix("minfs-helpers-")
            .tempdir_in(testutil::scratch_dir())
            .unwrap();
        let exe = Path::new(env!("CARGO_BIN_EXE_minfs"));
        for h in minfs::cli::HELPERS {
            for name in h.names() {
                std::os::unix::fs::symlink(exe, dir.path().join(name)).unwrap();
            }
        }
        Helpers { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn run(&self, helper: &str, args: &[&str]) -> Output {
        Command::new(self.path(helper)).args(args).output().unwrap()
    }

    /// A fresh 16 MiB minfs image `name` with one file.
    fn image(&self, name: &str) -> PathBuf {
        let img = self.path(name);
        minfs()
            .args(["mkfs", "-q", "-s", "16M"])
            .arg(&img)
            .assert()
            .success();
        minfs()
            .arg("create")
            .arg(&img)
            .args(["data", "-s", "1M"])
            .assert()
            .success();
        img
    }
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn flip(img: &Path, at: u64) {
    let f = std::fs::OpenOptions::new()
        .write(true)
        .read(true)
        .open(img)
        .unwrap();
    let mut b = [0u8; 1];
    f.read_exact_at(&mut b, at).unwrap();
    b[0] ^= 0xff;
    f.write_all_at(&b, at).unwrap();
}

const SLOT_B: u64 = 65536;

/// mkfs.minfs takes `[OPTIONS] DEVICE [SIZE]` as mkfs(8) passes them: a bare SIZE counts 1 KiB
/// blocks, a unit is -s's; -s and SIZE together are refused, as a bad SIZE, without a file left.
#[test]
fn mkfs_helper_takes_mkfs_arguments() {
    let h = Helpers::new();
    let img = h.path("a.img");
    let out = h.run("mkfs.minfs", &["-L", "disk0", s(&img), "8192"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(std::fs::metadata(&img).unwrap().len(), 8 << 20);
    assert_eq!(json(&["info", "--json"], &img)["label"], "disk0");
    let img2 = h.path("b.img");
    let out = h.run("mkfs.minfs", &["-q", s(&img2), "8192KB"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(out.stdout.is_empty(), "-q: {}", text(&out));
    assert_eq!(std::fs::metadata(&img2).unwrap().len(), 8_192_000);

    let c = h.path("c.img");
    for (args, says) in [
        (vec!["-s", "8M", s(&c), "8192"], "the size is given twice"),
        (vec![s(&c), "8Q"], "unknown unit \"Q\""),
        (vec![s(&c), "-5"], "sizes are positive"),
    ] {
        let out = h.run("mkfs.minfs", &args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(says),
            "{args:?}: {}",
            text(&out)
        );
        assert!(!c.exists(), "{args:?} left {c:?}");
    }
    // -V is the version, as mke2fs's.
    let out = h.run("mkfs.minfs", &["-V"]);
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with("mkfs.minfs "),
        "{}",
        text(&out)
    );
}

/// mkfs.minfs on an image holding ext4 refuses as `minfs mkfs` does, and the image is left as
/// it was; -F (mke2fs's force) overwrites it.
#[test]
fn mkfs_helper_refuses_another_filesystem() {
    if !testutil::require_program(
        "mkfs_helper_refuses_another_filesystem",
        "mkfs.ext4",
        "e2fsprogs",
    ) {
        return;
    }
    let h = Helpers::new();
    let img = h.path("ext4.img");
    std::fs::File::create(&img)
        .unwrap()
        .set_len(16 << 20)
        .unwrap();
    testutil::run(Command::new("mkfs.ext4").args(["-q", "-F"]).arg(&img)).unwrap();
    let before = std::fs::read(&img).unwrap();
    let out = h.run("mkfs.minfs", &[s(&img)]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.starts_with("mkfs.minfs: "), "{stderr}");
    assert!(stderr.contains("ext"), "{stderr}");
    assert!(stderr.contains(s(&img)), "{stderr}");
    assert!(
        std::fs::read(&img).unwrap() == before,
        "the refused mkfs wrote"
    );
    let out = h.run("mkfs.minfs", &["-F", "-q", s(&img)]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        json(&["info", "--json"], &img)["files"],
        serde_json::json!([])
    );
}

/// Preen (-a as fsck(8) passes it at boot, -p) repairs a slot torn by an interrupted commit:
/// exit 1, then clean. The same on fsck.minfs and `minfs fsck`.
#[test]
fn fsck_preen_repairs_a_torn_slot() {
    let h = Helpers::new();
    for (program, flag) in [("fsck.minfs", "-a"), ("fsck.minfs", "-p"), ("minfs", "-p")] {
        let img = h.image("torn.img");
        // A byte of slot B's file table: its checksum no longer matches.
        flip(&img, SLOT_B + 4096 + 40);
        let run = |args: &[&str]| match program {
            "minfs" => Command::new(env!("CARGO_BIN_EXE_minfs"))
                .arg("fsck")
                .args(args)
                .output()
                .unwrap(),
            _ => h.run(program, args),
        };
        let out = run(&[flag, s(&img)]);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{program} {flag}: {}",
            text(&out)
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("checksum mismatch"), "{stdout}");
        assert!(stdout.contains("FILESYSTEM WAS MODIFIED"), "{stdout}");
        let out = run(&["-n", s(&img)]);
        assert_eq!(out.status.code(), Some(0), "{program}: {}", text(&out));
        std::fs::remove_file(&img).unwrap();
    }
}

/// Preen refuses what it must not repair unattended — slots of two different filesystems, a
/// slot overwritten over its magic — with fsck(8)'s "errors left uncorrected" (4), naming the
/// problem, and writes nothing; `fsck -y` by hand then repairs it.
#[test]
fn fsck_preen_refuses_damage_it_must_not_repair_and_writes_nothing() {
    let h = Helpers::new();
    let img = h.image("mixed.img");
    let other = h.image("other.img");
    // Slot B from another filesystem of the same geometry (another UUID).
    let mut slot = vec![0u8; 65536];
    std::fs::File::open(&other)
        .unwrap()
        .read_exact_at(&mut slot, SLOT_B)
        .unwrap();
    let f = std::fs::OpenOptions::new().write(true).open(&img).unwrap();
    f.write_all_at(&slot, SLOT_B).unwrap();
    drop(f);
    let garbage = h.image("garbage.img");
    std::fs::OpenOptions::new()
        .write(true)
        .open(&garbage)
        .unwrap()
        .write_all_at(&[0x5a; 64], SLOT_B)
        .unwrap();

    for (target, says) in [(&img, "belongs to filesystem"), (&garbage, "bad magic")] {
        let before = std::fs::read(target).unwrap();
        for (program, args) in [
            ("fsck.minfs", vec!["-a", s(target)]),
            ("fsck.minfs", vec!["-p", "-f", s(target)]),
            ("minfs", vec!["fsck", "-a", s(target)]),
        ] {
            let out = match program {
                "minfs" => Command::new(env!("CARGO_BIN_EXE_minfs"))
                    .args(&args)
                    .output()
                    .unwrap(),
                _ => h.run(program, &args),
            };
            assert_eq!(out.status.code(), Some(4), "{args:?}: {}", text(&out));
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(stdout.contains(says), "{args:?}: {stdout}");
            assert!(stdout.contains("not repaired in preen mode"), "{stdout}");
            assert!(stdout.contains("nothing was written"), "{stdout}");
            assert!(std::fs::read(target).unwrap() == before, "{args:?} wrote");
        }
        let out = h.run("fsck.minfs", &["-y", s(target)]);
        assert_eq!(out.status.code(), Some(1), "{}", text(&out));
        let out = h.run("fsck.minfs", &["-n", s(target)]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    }
}

/// fsck.minfs's invocation: -C FD writes e2fsck-style progress lines to the descriptor; a
/// descriptor that is not open, -n with -y or -a, an unknown option are usage errors (16); a
/// missing target is an operational error (8); -V is the version.
#[test]
fn fsck_helper_options_and_exit_codes() {
    let h = Helpers::new();
    let img = h.image("ok.img");
    let progress = h.path("progress");
    let out = Command::new("sh")
        .arg("-c")
        .arg(r#""$0" -a -C 3 "$1" 3>"$2""#)
        .arg(h.path("fsck.minfs"))
        .args([&img, &progress])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(
        std::fs::read_to_string(&progress).unwrap(),
        format!("1 0 1 {0}\n1 1 1 {0}\n", img.display())
    );
    let out = h.run("fsck.minfs", &["-C0", "-n", s(&img)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("check done"),
        "{}",
        text(&out)
    );

    for args in [
        vec!["-C", "9", s(&img)],
        vec!["-n", "-y", s(&img)],
        vec!["-an", s(&img)],
        vec!["-y", "-p", s(&img)],
        vec!["-c", s(&img)],
        vec![],
    ] {
        let out = h.run("fsck.minfs", &args);
        assert_eq!(out.status.code(), Some(16), "{args:?}: {}", text(&out));
    }
    let out = h.run("fsck.minfs", &["-C", "9", s(&img)]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("file descriptor 9"),
        "{}",
        text(&out)
    );
    let out = h.run("fsck.minfs", &["-a", "/nonexistent/minfs.img"]);
    assert_eq!(out.status.code(), Some(8), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).starts_with("fsck.minfs: "),
        "{}",
        text(&out)
    );
    let out = h.run("fsck.fuse.minfs", &["-V"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("fsck.fuse.minfs "));
}

/// mount.minfs (and `minfs SPEC DIR -o …`, mount.fuse's form) refuses an unknown option by
/// name with mount(8)'s "mount failure" (32) and mounts nothing; -t naming another type and
/// -N are invocation errors (1); -f (fake) checks SPEC and DIR and mounts nothing; -s (sloppy)
/// ignores an unknown option. None of this needs root: nothing is mounted.
#[test]
fn mount_helper_refuses_unknown_options_by_name() {
    let h = Helpers::new();
    let img = h.image("m.img");
    let dir = h.path("mnt");
    std::fs::create_dir(&dir).unwrap();
    let exe = env!("CARGO_BIN_EXE_minfs");
    for (program, args, code, says) in [
        (
            h.path("mount.minfs"),
            vec![s(&img), s(&dir), "-o", "rw,frobnicate"],
            32,
            "unknown mount option \"frobnicate\"",
        ),
        (
            h.path("mount.fuse.minfs"),
            vec![s(&img), s(&dir), "-o", "defaults,nofail,compress=zstd"],
            32,
            "unknown mount option \"compress=zstd\"",
        ),
        // mount.fuse runs `minfs SPEC DIR -o OPTIONS,dev,suid`.
        (
            PathBuf::from(exe),
            vec![s(&img), s(&dir), "-o", "rw,dev,suid,bogus"],
            32,
            "unknown mount option \"bogus\"",
        ),
        (
            h.path("mount.minfs"),
            vec![s(&img), s(&dir), "-t", "ext4"],
            1,
            "-t ext4",
        ),
        (
            h.path("mount.minfs"),
            vec![s(&img), s(&dir), "-N", "/proc/1/ns/mnt"],
            1,
            "not supported",
        ),
        (h.path("mount.minfs"), vec![s(&img)], 1, "DIR"),
        (
            h.path("mount.minfs"),
            vec!["-f", s(&dir), s(&dir)],
            32,
            "mount failed",
        ),
    ] {
        let out = Command::new(&program).args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(code), "{args:?}: {}", text(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(
            !std::fs::read_to_string("/proc/self/mountinfo")
                .unwrap()
                .contains(s(&dir)),
            "{args:?} mounted"
        );
    }
    for args in [
        vec![
            "-f",
            s(&img),
            s(&dir),
            "-o",
            "defaults,noatime,x-systemd.automount",
        ],
        vec!["-f", "-s", s(&img), s(&dir), "-o", "frobnicate"],
        vec!["-f", s(&img), s(&dir), "-t", "fuse.minfs", "-n", "-o", "ro"],
    ] {
        let out = h.run("mount.minfs", &args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", text(&out));
        assert!(
            out.stdout.is_empty() && out.stderr.is_empty(),
            "{}",
            text(&out)
        );
    }
    let out = h.run(
        "mount.minfs",
        &["-f", "-v", s(&img), s(&dir), "-o", "nofail"],
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("options without effect: nofail"));
    // nofail: a device that does not exist is not an error, and nothing is mounted; without
    // it, it is.
    let gone = h.path("by-id-gone");
    std::os::unix::fs::symlink("/dev/minfs-test-no-such-disk", &gone).unwrap();
    let out = h.run("mount.minfs", &[s(&gone), s(&dir), "-o", "defaults,nofail"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        out.stdout.is_empty() && out.stderr.is_empty(),
        "{}",
        text(&out)
    );
    let out = h.run("mount.minfs", &[s(&gone), s(&dir), "-o", "defaults"]);
    assert_eq!(out.status.code(), Some(32), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("by-id-gone"),
        "{}",
        text(&out)
    );
}

/// umount.fuse.minfs on something that is not a minfs mount refuses with umount(8)'s "umount
/// failure" (32), naming it.
#[test]
fn umount_helper_refuses_what_is_not_a_minfs_mount() {
    let h = Helpers::new();
    let dir = h.path("empty");
    std::fs::create_dir(&dir).unwrap();
    let out = h.run("umount.fuse.minfs", &[s(&dir)]);
    assert_eq!(out.status.code(), Some(32), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("not mounted"),
        "{}",
        text(&out)
    );
    let out = h.run("umount.fuse.minfs", &["/", "-t", "ext4"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
}
