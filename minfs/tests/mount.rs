//! `minfs mount` / `minfs umount` for real: FUSE mounts of images and loop devices, used with
//! dd, std::fs and Cannyls' own `FileNvm`, checked against `minfs cat` and `fsck`.
//!
//! Needs root, loop devices and /dev/fuse; elsewhere each test is skipped with the reason
//! (and fails instead under MINFS_REQUIRE_LOOP=1). Every mount is undone by a guard, lazily
//! and with the server killed if a test fails half-way, and each test checks that its server
//! process is gone and nothing is left mounted.

mod common;

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Once, RwLock, RwLockReadGuard};
use std::time::{Duration, Instant};

use common::{cat, minfs};
use predicates::prelude::*;
use testutil::LoopDevice;

/// Skips the test (or fails it under MINFS_REQUIRE_LOOP=1) without root, loop devices or
/// /dev/fuse.
macro_rules! require_fuse {
    () => {
        testutil::require_loop!();
        if !Path::new("/dev/fuse").exists() {
            let reason =
                "/dev/fuse is missing (no FUSE in this kernel, or a container without the device)";
            if std::env::var_os("MINFS_REQUIRE_LOOP").is_some_and(|v| v == "1") {
                panic!("MINFS_REQUIRE_LOOP=1 but {reason}");
            }
            testutil::print_skip(module_path!(), reason);
            return;
        }
        become_subreaper();
    };
}

/// Makes this test process the reaper of the servers `minfs mount` leaves running (they are
/// orphaned when it exits), so a test can collect its server's exit and see it gone.
fn become_subreaper() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| nix::sys::prctl::set_child_subreaper(true).expect("PR_SET_CHILD_SUBREAPER"));
}

fn scratch() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("minfs-mount-")
        .tempdir_in(testutil::scratch_dir())
        .unwrap()
}

/// A fresh minfs image of `size` bytes.
fn image(dir: &Path, size: &str) -> PathBuf {
    let img = dir.join("disk.img");
    minfs()
        .args(["mkfs", "-s", size])
        .arg(&img)
        .assert()
        .success();
    img
}

/// Whether anything is mounted at `mp`.
fn mounted_at(mp: &Path) -> bool {
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let mp = mp.to_str().unwrap();
    info.lines().any(|l| l.split(' ').nth(4) == Some(mp))
}

/// `fs.fuse.max_pages_limit` is global and copied into a FUSE connection when it is made:
/// every mount here raises it to 2048. Tests mount holding this lock shared; the one that
/// mounts with the limit at its default 256 holds it exclusively, so no other mount raises the
/// limit between its write of 256 and its mount. (Test binaries run one after another.)
static MAX_PAGES_LIMIT: RwLock<()> = RwLock::new(());

fn mounting() -> RwLockReadGuard<'static, ()> {
    MAX_PAGES_LIMIT.read().unwrap_or_else(|e| e.into_inner())
}

/// A `minfs mount` of a target on a fresh directory. Dropping it unmounts (lazily, and kills
/// the server, if the normal way fails) and reaps the server.
struct Mounted {
    dir: tempfile::TempDir,
    pid: u32,
    done: bool,
}

impl Mounted {
    fn new(target: &Path, options: &[&str]) -> Mounted {
        let _limit = mounting();
        Mounted::new_unlocked(target, options)
    }

    /// [`Mounted::new`] without taking [`MAX_PAGES_LIMIT`].
    fn new_unlocked(target: &Path, options: &[&str]) -> Mounted {
        let dir = tempfile::Builder::new()
            .prefix("minfs-mnt-")
            .tempdir_in(testutil::scratch_dir())
            .unwrap();
        let out = minfs()
            .arg("mount")
            .args(options)
            .arg(target)
            .arg(dir.path())
            .timeout(Duration::from_secs(30))
            .assert()
            .success()
            .stdout(predicate::str::contains("mounted"))
            .get_output()
            .stdout
            .clone();
        let out = String::from_utf8(out).unwrap();
        let pid: u32 = out
            .split("server pid ")
            .nth(1)
            .and_then(|s| s.trim().trim_end_matches(')').parse().ok())
            .unwrap_or_else(|| panic!("no server pid in {out:?}"));
        assert!(mounted_at(dir.path()), "not mounted after `minfs mount`");
        Mounted {
            dir,
            pid,
            done: false,
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn file(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `minfs umount`; then the server must be gone and nothing mounted.
    ///
    /// A busy refusal is tried again for a moment ([`testutil::umount_retrying_busy`]: a
    /// child another test forks holds a copy of this test's files until its exec). The CLI's
    /// own refusal of a busy mount is tested apart, without this helper.
    fn umount(mut self) {
        let out = testutil::umount_retrying_busy(
            Command::new(assert_cmd::cargo::cargo_bin("minfs"))
                .arg("umount")
                .arg(self.path()),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("released"),
            "minfs umount: {}",
            testutil::output_text(&out)
        );
        self.done = true;
        // `minfs umount` returned after the server exited: reaping it does not wait.
        let start = Instant::now();
        reap(self.pid);
        assert!(start.elapsed() < Duration::from_secs(1), "server still ran");
        assert!(
            !Path::new(&format!("/proc/{}", self.pid)).exists(),
            "server process {} is still there",
            self.pid
        );
        assert!(!mounted_at(self.path()), "still mounted");
    }
}

/// Collects the exit of `pid` if it is our child (it is, through the subreaper).
fn reap(pid: u32) {
    use nix::sys::wait::waitpid;
    use nix::unistd::Pid;
    let _ = waitpid(Pid::from_raw(pid as i32), None);
}

impl Drop for Mounted {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let ok = minfs()
            .args(["umount", "--timeout", "10"])
            .arg(self.path())
            .output()
            .is_ok_and(|o| o.status.success());
        if !ok {
            testutil::retry_args("umount", &["-l".as_ref(), self.path().as_os_str()]);
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(self.pid as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        reap(self.pid);
    }
}

/// Deterministic bytes.
fn pattern(seed: u64, len: usize) -> Vec<u8> {
    let mut x = testutil::XorShift(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        out.extend_from_slice(&x.next().to_le_bytes());
    }
    out.truncate(len);
    out
}

fn dd(args: &[String]) {
    let out = Command::new("dd").args(args).output().expect("dd");
    assert!(
        out.status.success(),
        "dd {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `rm` of a file just closed: FUSE sends a close's RELEASE asynchronously, so the server may
/// still count the file open (EBUSY) for a moment after `close` returned.
fn remove_when_released(path: &Path) {
    let start = Instant::now();
    loop {
        match std::fs::remove_file(path) {
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                assert!(
                    start.elapsed() < Duration::from_secs(10),
                    "{}: still busy 10 s after close",
                    path.display()
                );
                std::thread::sleep(Duration::from_millis(20));
            }
            r => return r.unwrap(),
        }
    }
}

fn errno_of<T: std::fmt::Debug>(r: std::io::Result<T>) -> i32 {
    r.unwrap_err().raw_os_error().unwrap()
}

/// Flush requests the block layer completed on `dev` (field 16 of /sys/block/X/stat).
fn flushes(dev: &Path) -> u64 {
    let name = dev.file_name().unwrap().to_str().unwrap();
    let stat = std::fs::read_to_string(format!("/sys/block/{name}/stat")).unwrap();
    stat.split_whitespace().nth(15).unwrap().parse().unwrap()
}

#[test]
fn dd_in_and_out_with_and_without_o_direct() {
    require_fuse!();
    let lo = LoopDevice::new(96 << 20, 512).unwrap();
    minfs().arg("mkfs").arg(lo.path()).assert().success();
    let dir = scratch();
    let src = dir.path().join("src.bin");
    let data = pattern(1, 5_000_000);
    std::fs::write(&src, &data).unwrap();
    let m = Mounted::new(lo.path(), &[]);
    let s = |p: &Path| p.display().to_string();
    // Through the page cache (files created by dd), and with O_DIRECT both ways.
    dd(&[
        format!("if={}", s(&src)),
        format!("of={}", s(&m.file("cached"))),
        "bs=1M".into(),
    ]);
    dd(&[
        format!("if={}", s(&src)),
        format!("of={}", s(&m.file("direct"))),
        "bs=256K".into(),
        "oflag=direct".into(),
    ]);
    assert_eq!(std::fs::read(m.file("cached")).unwrap(), data);
    for (name, iflag) in [("cached", "iflag=direct"), ("direct", "iflag=direct")] {
        let out = dir.path().join(format!("{name}.out"));
        dd(&[
            format!("if={}", s(&m.file(name))),
            format!("of={}", s(&out)),
            "bs=64K".into(),
            iflag.into(),
        ]);
        assert!(std::fs::read(&out).unwrap() == data, "{name} read back");
    }
    // While mounted, minfs cat reads the device directly: the writes are there already.
    assert!(cat(lo.path(), "direct") == data);
    let listing = std::fs::read_dir(m.path())
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().into_string().unwrap(),
                e.metadata().unwrap().len(),
            )
        })
        .collect::<std::collections::BTreeMap<_, _>>();
    assert_eq!(
        listing.into_iter().collect::<Vec<_>>(),
        vec![
            ("cached".to_string(), 5_000_000),
            ("direct".to_string(), 5_000_000)
        ]
    );
    m.umount();
    assert!(cat(lo.path(), "cached") == data);
    assert!(cat(lo.path(), "direct") == data);
    minfs().args(["fsck", "-n"]).arg(lo.path()).assert().code(0);
}

#[test]
fn unaligned_reads_and_writes_keep_the_bytes_around_them() {
    require_fuse!();
    // 4096-byte logical sectors, so every sub-4K request is a read-modify-write.
    let lo = LoopDevice::new(32 << 20, 4096).unwrap();
    minfs().arg("mkfs").arg(lo.path()).assert().success();
    minfs()
        .arg("create")
        .arg(lo.path())
        .args(["f", "-s", "100000"])
        .assert()
        .success();
    let m = Mounted::new(lo.path(), &[]);
    let mut model = cat(lo.path(), "f");
    assert_eq!(model.len(), 100_000);
    let cached = OpenOptions::new()
        .read(true)
        .write(true)
        .open(m.file("f"))
        .unwrap();
    let direct = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(m.file("f"))
        .unwrap();
    let writes: [(u64, usize); 8] = [
        (0, 1),
        (1, 4095),
        (4095, 2),
        (5000, 10_000),
        (12_288, 4096),
        (30_001, 77),
        (99_990, 10),
        (65_535, 8193),
    ];
    for (i, &(off, len)) in writes.iter().enumerate() {
        let bytes = pattern(100 + i as u64, len);
        // Alternate the cached and the direct descriptor (both reach minfs unaligned).
        let f = if i % 2 == 0 { &cached } else { &direct };
        f.write_all_at(&bytes, off).unwrap();
        model[off as usize..off as usize + len].copy_from_slice(&bytes);
    }
    for &(off, len) in &[(3u64, 10usize), (4090, 20), (99_999, 1), (0, 100_000)] {
        let mut got = vec![0u8; len];
        direct.read_exact_at(&mut got, off).unwrap();
        assert!(
            got == model[off as usize..off as usize + len],
            "read {len}@{off}"
        );
    }
    // A write past the end grows the file to its end.
    direct.write_all_at(b"tail", 100_000).unwrap();
    model.extend_from_slice(b"tail");
    assert_eq!(std::fs::metadata(m.file("f")).unwrap().len(), 100_004);
    // The last short page through the page cache is the file's, not more.
    assert!(std::fs::read(m.file("f")).unwrap() == model);
    drop((cached, direct));
    m.umount();
    assert!(cat(lo.path(), "f") == model);
    minfs().args(["fsck", "-n"]).arg(lo.path()).assert().code(0);
}

#[test]
fn fsync_and_close_flush_the_device() {
    require_fuse!();
    let lo = LoopDevice::new(32 << 20, 512).unwrap();
    minfs().arg("mkfs").arg(lo.path()).assert().success();
    minfs()
        .arg("create")
        .arg(lo.path())
        .args(["f", "-s", "1M"])
        .assert()
        .success();
    let m = Mounted::new(lo.path(), &[]);
    let f = OpenOptions::new().write(true).open(m.file("f")).unwrap();
    f.write_all_at(&pattern(7, 8192), 4096).unwrap();
    let before = flushes(lo.path());
    f.sync_data().unwrap();
    assert!(
        flushes(lo.path()) > before,
        "fdatasync sent no flush to the device"
    );
    let before = flushes(lo.path());
    f.sync_all().unwrap();
    assert!(
        flushes(lo.path()) > before,
        "fsync sent no flush to the device"
    );
    // A write, then close: flushed.
    f.write_all_at(b"x", 0).unwrap();
    let before = flushes(lo.path());
    drop(f);
    assert!(
        flushes(lo.path()) > before,
        "close after a write did not flush"
    );
    // Opening and closing without writing does not.
    let before = flushes(lo.path());
    drop(File::open(m.file("f")).unwrap());
    assert_eq!(flushes(lo.path()), before, "a read-only close flushed");
    m.umount();
    let got = cat(lo.path(), "f");
    assert_eq!(got[0], b'x');
    assert!(got[4096..4096 + 8192] == pattern(7, 8192));
}

#[test]
fn create_size_remove_and_refused_operations() {
    require_fuse!();
    let dir = scratch();
    let img = image(dir.path(), "64M");
    let m = Mounted::new(&img, &[]);
    // Create empty, size with truncate, fallocate, ftruncate; shrink frees blocks.
    File::create(m.file("empty")).unwrap();
    let t = File::create(m.file("t")).unwrap();
    t.set_len(3 << 20).unwrap();
    let fa = File::create(m.file("fa")).unwrap();
    nix::fcntl::fallocate(
        std::os::fd::AsRawFd::as_raw_fd(&fa),
        nix::fcntl::FallocateFlags::empty(),
        0,
        1 << 20,
    )
    .unwrap();
    // KEEP_SIZE inside the file is fine, past its end it is refused.
    let keep = nix::fcntl::FallocateFlags::FALLOC_FL_KEEP_SIZE;
    let fd = std::os::fd::AsRawFd::as_raw_fd(&fa);
    nix::fcntl::fallocate(fd, keep, 0, 4096).unwrap();
    assert_eq!(
        nix::fcntl::fallocate(fd, keep, 0, 2 << 20).unwrap_err(),
        nix::errno::Errno::EOPNOTSUPP
    );
    let size = |n: &str| std::fs::metadata(m.file(n)).unwrap().len();
    assert_eq!(
        (size("empty"), size("t"), size("fa")),
        (0, 3 << 20, 1 << 20)
    );
    let st = nix::sys::statvfs::statvfs(m.path()).unwrap();
    assert_eq!(st.block_size(), 4096);
    let free_before = st.blocks_free();
    t.set_len(1 << 20).unwrap();
    let freed = nix::sys::statvfs::statvfs(m.path()).unwrap().blocks_free() - free_before;
    assert_eq!(freed, 512, "shrinking by 2 MiB frees 512 blocks");
    assert_eq!(size("t"), 1 << 20);
    // More than the filesystem holds: ENOSPC, and nothing changes.
    assert_eq!(errno_of(t.set_len(1 << 40)), libc::ENOSPC);
    assert_eq!(
        nix::fcntl::fallocate(fd, nix::fcntl::FallocateFlags::empty(), 0, 1 << 40).unwrap_err(),
        nix::errno::Errno::ENOSPC
    );
    assert_eq!(errno_of(t.write_all_at(b"x", 1 << 40)), libc::ENOSPC);
    assert_eq!(size("t"), 1 << 20);

    // Removing an open file is refused; closed, it goes.
    assert_eq!(errno_of(std::fs::remove_file(m.file("t"))), libc::EBUSY);
    drop(t);
    drop(fa);
    remove_when_released(&m.file("t"));
    assert_eq!(errno_of(std::fs::metadata(m.file("t"))), libc::ENOENT);
    // No renames, directories, links, other modes or owners.
    assert_eq!(
        errno_of(std::fs::rename(m.file("fa"), m.file("fb"))),
        libc::EPERM
    );
    assert_eq!(errno_of(std::fs::create_dir(m.file("d"))), libc::EPERM);
    assert_eq!(
        errno_of(std::fs::hard_link(m.file("fa"), m.file("h"))),
        libc::EPERM
    );
    assert_eq!(
        errno_of(std::os::unix::fs::symlink("fa", m.file("s"))),
        libc::EPERM
    );
    assert_eq!(errno_of(std::fs::remove_dir(m.file("fa"))), libc::ENOTDIR);
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        errno_of(std::fs::set_permissions(
            m.file("fa"),
            std::fs::Permissions::from_mode(0o600)
        )),
        libc::EPERM
    );
    assert_eq!(
        errno_of(File::create(m.file(&"n".repeat(65)))),
        libc::ENAMETOOLONG
    );
    // The same errors through the shell's tools, which must not crash anything.
    for (prog, args) in [("mv", vec!["fa", "fc"]), ("mkdir", vec!["dir"])] {
        let out = Command::new(prog)
            .args(args)
            .current_dir(m.path())
            .output()
            .unwrap();
        assert!(!out.status.success());
        assert!(String::from_utf8_lossy(&out.stderr).contains("Operation not permitted"));
    }
    // Still serving.
    let mut names: Vec<String> = std::fs::read_dir(m.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["empty", "fa"]);
    m.umount();
    minfs()
        .arg("ls")
        .arg(&img)
        .assert()
        .success()
        .stdout("empty\nfa\n");
    minfs().args(["fsck", "-n"]).arg(&img).assert().code(0);
}

#[test]
fn the_target_is_held_while_mounted_and_released_by_umount() {
    require_fuse!();
    let lo = LoopDevice::new(32 << 20, 512).unwrap();
    let dir = scratch();
    let img = image(dir.path(), "32M");
    minfs().arg("mkfs").arg(lo.path()).assert().success();
    for target in [img.as_path(), lo.path()] {
        let m = Mounted::new(target, &[]);
        let held = || predicate::str::contains("locked").or(predicate::str::contains("busy"));
        // On an image the lock's holder is named: the mount and its server.
        let holder = if target == img.as_path() {
            format!(
                "locked by the minfs mount at {} (server process {})",
                m.path().display(),
                m.pid
            )
        } else {
            String::new()
        };
        minfs()
            .args(["mkfs", "-f"])
            .arg(target)
            .assert()
            .code(1)
            .stderr(held().and(predicate::str::contains(holder)));
        minfs()
            .args(["fsck", "-y"])
            .arg(target)
            .assert()
            .code(8)
            .stderr(held());
        minfs()
            .arg("create")
            .arg(target)
            .args(["x", "-s", "4096"])
            .assert()
            .code(1)
            .stderr(held());
        let other = scratch();
        minfs()
            .arg("mount")
            .arg(target)
            .arg(other.path())
            .assert()
            .code(1)
            .stderr(held());
        assert!(!mounted_at(other.path()));
        minfs()
            .args(["mount", "-o", "ro"])
            .arg(target)
            .arg(other.path())
            .assert()
            .code(1);
        assert!(!mounted_at(other.path()));
        // Read-only commands still work.
        minfs().args(["fsck", "-n"]).arg(target).assert().code(0);
        std::fs::write(m.file("new"), b"hello").unwrap();
        // Right after umount returns the target is free again.
        m.umount();
        minfs().args(["fsck", "-y"]).arg(target).assert().code(0);
        assert_eq!(cat(target, "new"), b"hello");
        minfs().args(["mkfs", "-f"]).arg(target).assert().success();
    }
}

#[test]
fn read_only_mount() {
    require_fuse!();
    let dir = scratch();
    let img = image(dir.path(), "32M");
    minfs()
        .arg("create")
        .arg(&img)
        .args(["f", "-s", "4096"])
        .assert()
        .success();
    let m = Mounted::new(&img, &["-o", "ro"]);
    assert_eq!(std::fs::read(m.file("f")).unwrap(), vec![0u8; 4096]);
    assert_eq!(errno_of(std::fs::write(m.file("f"), b"x")), libc::EROFS);
    assert_eq!(errno_of(File::create(m.file("g"))), libc::EROFS);
    assert_eq!(errno_of(std::fs::remove_file(m.file("f"))), libc::EROFS);
    // Held exclusively all the same.
    minfs().args(["mkfs", "-f"]).arg(&img).assert().code(1);
    m.umount();
    minfs().args(["fsck", "-n"]).arg(&img).assert().code(0);
}

#[test]
fn mount_errors_are_clear_and_leave_nothing_behind() {
    require_fuse!();
    let dir = scratch();
    let img = image(dir.path(), "32M");
    let mp = dir.path().join("mp");
    std::fs::create_dir(&mp).unwrap();
    let junk = dir.path().join("junk.img");
    std::fs::write(&junk, vec![0u8; 4 << 20]).unwrap();
    let cases: [(PathBuf, PathBuf, &str); 4] = [
        (junk.clone(), mp.clone(), "not a minfs filesystem"),
        (img.clone(), img.clone(), "not a directory"),
        (img.clone(), dir.path().join("absent"), "No such file"),
        (dir.path().join("absent.img"), mp.clone(), "cannot open"),
    ];
    for (target, mountpoint, want) in cases {
        minfs()
            .arg("mount")
            .arg(&target)
            .arg(&mountpoint)
            .assert()
            .code(1)
            .stderr(predicate::str::contains(want));
        assert!(!mounted_at(&mountpoint));
    }
    minfs()
        .args(["mount", "-o", "bogus"])
        .arg(&img)
        .arg(&mp)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("unknown mount option"));
    minfs()
        .arg("umount")
        .arg(&mp)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("not mounted"));
    // Not ours: refused by name.
    minfs()
        .arg("umount")
        .arg("/proc")
        .assert()
        .code(1)
        .stderr(predicate::str::contains("not a minfs mount"));
    // The target was never held.
    minfs().args(["fsck", "-y"]).arg(&img).assert().code(0);
}

#[test]
fn foreground_server_unmounts_on_sigterm() {
    require_fuse!();
    let dir = scratch();
    let img = image(dir.path(), "32M");
    let mp = dir.path().join("mp");
    std::fs::create_dir(&mp).unwrap();
    let limit = mounting();
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("minfs"))
        .args(["mount", "--foreground"])
        .arg(&img)
        .arg(&mp)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while !mounted_at(&mp) {
        assert!(start.elapsed() < Duration::from_secs(20), "never mounted");
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the server exited with {status}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(limit);
    std::fs::write(mp.join("f"), b"kept").unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            testutil::retry_args("umount", &["-l".as_ref(), mp.as_os_str()]);
            panic!("the server did not exit on SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "server exited with {status}");
    assert!(!mounted_at(&mp));
    assert_eq!(cat(&img, "f"), b"kept");
    minfs().args(["fsck", "-n"]).arg(&img).assert().code(0);
}

#[test]
fn cannyls_file_nvm_on_a_mounted_file_survives_remount() {
    use cannyls::lump::{LumpData, LumpId};
    use cannyls::nvm::FileNvm;
    use cannyls::storage::StorageBuilder;
    require_fuse!();
    // 4096-byte logical sectors: FileNvm's 512-byte O_DIRECT requests are read-modify-written.
    for sector in [512u32, 4096] {
        let lo = LoopDevice::new(64 << 20, sector).unwrap();
        minfs().arg("mkfs").arg(lo.path()).assert().success();
        let lumps: Vec<(u128, Vec<u8>)> = (0..60u128)
            .map(|id| {
                (
                    id,
                    pattern(id as u64 + 1000, 100 + (id as usize * 7919) % 70_000),
                )
            })
            .collect();
        let m = Mounted::new(lo.path(), &[]);
        let path = m.file("cannyls.lusf");
        {
            // FileNvm creates the file itself (O_CREAT | O_DIRECT) and takes its flock.
            let (nvm, created) = FileNvm::create_if_absent(&path, 16 << 20).unwrap();
            assert!(created);
            let mut storage = StorageBuilder::new().create(nvm).unwrap();
            // flock works on the mounted file: a second FileNvm is refused.
            let second = FileNvm::open(&path).map(drop).unwrap_err().to_string();
            assert!(
                second.contains("temporarily unavailable"),
                "second FileNvm: {second}"
            );
            for (id, bytes) in &lumps {
                let data = LumpData::new(bytes.clone()).unwrap();
                assert!(storage.put(&LumpId::new(*id), &data).unwrap());
            }
            assert!(storage.delete(&LumpId::new(3)).unwrap());
            storage.journal_sync().unwrap();
        }
        m.umount();
        minfs().args(["fsck", "-n"]).arg(lo.path()).assert().code(0);
        let m = Mounted::new(lo.path(), &[]);
        {
            let nvm = FileNvm::open(m.file("cannyls.lusf")).unwrap();
            let mut storage = StorageBuilder::new().open(nvm).unwrap();
            let listed: Vec<u128> = storage.list().iter().map(|l| l.as_u128()).collect();
            let want: Vec<u128> = lumps.iter().map(|l| l.0).filter(|&id| id != 3).collect();
            assert_eq!(listed, want, "sector {sector}");
            for (id, bytes) in &lumps {
                let got = storage.get(&LumpId::new(*id)).unwrap();
                if *id == 3 {
                    assert!(got.is_none());
                } else {
                    let got = got.unwrap_or_else(|| panic!("lump {id} lost"));
                    assert!(got.as_bytes() == bytes.as_slice(), "lump {id} differs");
                }
            }
        }
        m.umount();
        minfs().args(["fsck", "-n"]).arg(lo.path()).assert().code(0);
    }
}

/// An in-memory device whose writes and flushes fail while `fail` is set.
#[derive(Debug)]
struct Failing {
    inner: minfs::MemDevice,
    fail: std::sync::atomic::AtomicBool,
}

impl Failing {
    fn check(&self) -> std::io::Result<()> {
        if self.fail.load(std::sync::atomic::Ordering::SeqCst) {
            Err(std::io::Error::other("injected device error"))
        } else {
            Ok(())
        }
    }
}

impl minfs::BlockDevice for Failing {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        self.inner.read_at(buf, offset)
    }
    fn write_at(&self, buf: &[u8], offset: u64) -> std::io::Result<()> {
        self.check()?;
        self.inner.write_at(buf, offset)
    }
    fn flush(&self) -> std::io::Result<()> {
        self.check()?;
        self.inner.flush()
    }
    fn len(&self) -> u64 {
        self.inner.len()
    }
    fn logical_sector_size(&self) -> u32 {
        self.inner.logical_sector_size()
    }
    fn physical_sector_size(&self) -> u32 {
        self.inner.physical_sector_size()
    }
    fn is_read_only(&self) -> bool {
        false
    }
}

/// Lazily unmounts `0` if it is still mounted (a test that failed half-way).
struct Unmount(PathBuf);

impl Drop for Unmount {
    fn drop(&mut self) {
        testutil::lazy_umount(&self.0);
    }
}

#[test]
fn after_a_failed_write_everything_answers_eio() {
    use std::sync::atomic::Ordering;
    use std::sync::Arc;
    require_fuse!();
    let dev = Arc::new(Failing {
        inner: minfs::MemDevice::new(8 << 20, 512, 4096),
        fail: false.into(),
    });
    let fs = minfs::Filesystem::format(dev.clone(), "failing", &Default::default()).unwrap();
    fs.create("f", 1 << 20).unwrap();
    let dir = scratch();
    let mp = dir.path().join("mp");
    std::fs::create_dir(&mp).unwrap();
    // The server runs in this process, on a thread; the test is its client.
    let server =
        minfs::fuse::Server::mount_filesystem(fs, &mp, &minfs::fuse::MountConfig::default())
            .unwrap();
    let serving = std::thread::spawn(move || server.run());
    let guard = Unmount(mp.clone());
    let direct = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(mp.join("f"))
        .unwrap();
    direct.write_all_at(b"ok", 0).unwrap();
    dev.fail.store(true, Ordering::SeqCst);
    assert_eq!(errno_of(direct.write_all_at(b"no", 4096)), libc::EIO);
    // The device works again, but nothing is trusted until a remount.
    dev.fail.store(false, Ordering::SeqCst);
    assert_eq!(errno_of(direct.write_all_at(b"no", 0)), libc::EIO);
    let mut b = [0u8; 2];
    assert_eq!(errno_of(direct.read_exact_at(&mut b, 0)), libc::EIO);
    assert_eq!(errno_of(direct.sync_data()), libc::EIO);
    assert_eq!(errno_of(File::create(mp.join("g"))), libc::EIO);
    assert_eq!(errno_of(std::fs::metadata(mp.join("h"))), libc::EIO);
    assert_eq!(errno_of(std::fs::read_dir(&mp)), libc::EIO);
    // The mount point itself still answers, so it can be unmounted.
    assert!(std::fs::metadata(&mp).unwrap().is_dir());
    drop(direct);
    minfs::fuse::mounts::unmount(&mp, false).unwrap();
    let served = serving.join().unwrap();
    assert!(
        served
            .as_ref()
            .is_err_and(|e| e.to_string().contains("final flush")),
        "{served:?}"
    );
    drop(guard);
    assert!(!mounted_at(&mp));
}

/// What `truncate` through a mount relies on: `Filesystem::set_size` shrinks across extents,
/// frees exactly the blocks past the new size, and the result is a clean filesystem.
#[test]
fn set_size_shrinks_across_extents() {
    use std::sync::Arc;
    let dev = Arc::new(minfs::MemDevice::new(8 << 20, 512, 4096));
    let fs = minfs::Filesystem::format(dev.clone(), "mem", &Default::default()).unwrap();
    fs.create("a", 8192).unwrap();
    fs.create("b", 4096).unwrap();
    // "b" sits right after "a": growing "a" adds a second extent.
    fs.grow("a", 6 * 4096).unwrap();
    assert_eq!(fs.stat("a").unwrap().extents.len(), 2);
    let free = fs.free_bytes();
    let handle = fs.open_file("a").unwrap();
    let s = fs.set_size("a", 4097).unwrap();
    assert_eq!((s.size, s.allocated, s.extents.len()), (4097, 8192, 1));
    assert_eq!(fs.free_bytes(), free + 4 * 4096);
    // Open handles see the new size: I/O past it is refused.
    let mut buf = minfs::AlignedBuf::zeroed(4096, 4096);
    assert!(handle.read_at(&mut buf, 4096).is_err());
    handle.read_at(&mut buf[..512], 4096).unwrap();
    // Growing back within the kept blocks allocates nothing; to zero frees everything.
    fs.set_size("a", 8000).unwrap();
    assert_eq!(fs.free_bytes(), free + 4 * 4096);
    fs.set_size("a", 0).unwrap();
    assert_eq!(fs.stat("a").unwrap().extents, vec![]);
    drop((handle, fs));
    let report = minfs::fsck::check_device(dev.as_ref(), "mem").unwrap();
    assert!(report.is_clean(), "{:?}", report.problems);
    let fs = minfs::Filesystem::open_device(dev, "mem").unwrap();
    assert_eq!(fs.stat("a").unwrap().size, 0);
    assert_eq!(fs.stat("b").unwrap().size, 4096);
}

/// The image's commit count (its generation).
fn generation(target: &Path) -> u64 {
    common::json(&["info", "--json"], target)["generation"]
        .as_u64()
        .unwrap()
}

/// A file's size and allocated bytes as `minfs ls --json` reports them.
fn size_and_allocated(target: &Path, name: &str) -> (u64, u64) {
    let v = common::json(&["ls", "--json"], target);
    let f = v
        .as_array()
        .or_else(|| v["files"].as_array())
        .unwrap()
        .iter()
        .find(|f| f["name"] == name)
        .unwrap_or_else(|| panic!("no {name} in {v}"))
        .clone();
    (
        f["size"].as_u64().unwrap(),
        f["allocated"].as_u64().unwrap(),
    )
}

/// 301 appends through the mount with an fsync after every 100th: one commit for the create
/// and one per fsync (the last append's size is committed at close), not one per write; the
/// preallocation is given back by then.
#[test]
fn appends_on_the_mount_commit_at_fsync_and_close_not_per_write() {
    use std::os::unix::fs::MetadataExt;
    require_fuse!();
    let dir = scratch();
    let img = image(dir.path(), "64M");
    let g0 = generation(&img);
    let m = Mounted::new(&img, &[]);
    let chunk = 3000usize; // unaligned appends, through the page cache
    let mut want = Vec::new();
    {
        let mut f = OpenOptions::new()
            .create_new(true)
            .write(true)
            .open(m.file("log"))
            .unwrap();
        for i in 0..301u64 {
            let data = pattern(i, chunk);
            std::io::Write::write_all(&mut f, &data).unwrap();
            want.extend_from_slice(&data);
            if (i + 1) % 100 == 0 {
                f.sync_data().unwrap();
            }
        }
        let st = f.metadata().unwrap();
        assert_eq!(st.len(), want.len() as u64);
        assert!(
            st.blocks() * 512 > want.len() as u64 + 4096,
            "no preallocation while appending ({} blocks)",
            st.blocks()
        );
    }
    m.umount();
    let commits = generation(&img) - g0;
    assert_eq!(commits, 5, "create + 3 fsyncs + the last close");
    assert_eq!(
        size_and_allocated(&img, "log"),
        (want.len() as u64, (want.len() as u64).div_ceil(4096) * 4096)
    );
    assert!(cat(&img, "log") == want, "the appended bytes differ");
    minfs().args(["fsck", "-n"]).arg(&img).assert().code(0);
}

/// The server killed (a crash) after an fsync and more appends: the file comes back at the
/// fsync's size, holding its bytes, and fsck is clean.
#[test]
fn a_killed_server_leaves_the_last_fsynced_size() {
    use std::os::unix::fs::MetadataExt;
    require_fuse!();
    let dir = scratch();
    let img = image(dir.path(), "64M");
    let m = Mounted::new(&img, &[]);
    let chunk = 8192usize;
    let f = OpenOptions::new()
        .create_new(true)
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(m.file("store"))
        .unwrap();
    let mut buf = minfs::AlignedBuf::zeroed(chunk, 4096);
    for i in 0..30u64 {
        buf.copy_from_slice(&pattern(i, chunk));
        f.write_all_at(&buf, i * chunk as u64).unwrap();
        if i == 19 {
            f.sync_data().unwrap();
        }
    }
    assert_eq!(f.metadata().unwrap().size(), 30 * chunk as u64);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(m.pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    drop(f);
    drop(m); // unmounts lazily and reaps the killed server
    let (size, allocated) = size_and_allocated(&img, "store");
    assert_eq!(size, 20 * chunk as u64, "not the fsynced size");
    assert_eq!(allocated, size, "blocks past the synced size kept");
    let got = cat(&img, "store");
    for i in 0..20u64 {
        let at = i as usize * chunk;
        assert!(got[at..at + chunk] == pattern(i, chunk), "append {i}");
    }
    minfs().args(["fsck", "-n"]).arg(&img).assert().code(0);
}

/// Regression: after `rm` of a file holding a Cannyls storage, a file made on the mount (by
/// `truncate`, `fallocate`, or a first write past its start) began with the old storage's
/// header, and `FileNvm` would have opened the removed storage as the new one.
#[test]
fn a_new_file_on_the_mount_never_opens_as_a_removed_cannyls_storage() {
    use cannyls::lump::{LumpData, LumpId};
    use cannyls::nvm::FileNvm;
    use cannyls::storage::StorageBuilder;
    require_fuse!();
    let dir = scratch();
    let img = image(dir.path(), "64M");
    let m = Mounted::new(&img, &[]);
    let path = m.file("store.lusf");
    type Make = fn(&Path);
    let ways: [(&str, Make); 3] = [
        ("truncate", |p| {
            File::create(p).unwrap().set_len(4 << 20).unwrap();
        }),
        ("fallocate", |p| {
            let f = File::create(p).unwrap();
            use std::os::fd::AsRawFd;
            nix::fcntl::fallocate(
                f.as_raw_fd(),
                nix::fcntl::FallocateFlags::empty(),
                0,
                4 << 20,
            )
            .unwrap();
        }),
        ("a first write at 64 KiB", |p| {
            File::create(p)
                .unwrap()
                .write_all_at(b"x", 64 << 10)
                .unwrap();
        }),
    ];
    for (how, make) in ways {
        {
            let (nvm, created) = FileNvm::create_if_absent(&path, 4 << 20).unwrap();
            assert!(created);
            let mut storage = StorageBuilder::new().create(nvm).unwrap();
            let data = LumpData::new(pattern(1, 100_000)).unwrap();
            storage.put(&LumpId::new(1), &data).unwrap();
            storage.journal_sync().unwrap();
        }
        assert_eq!(&std::fs::read(&path).unwrap()[..4], b"lusf");
        remove_when_released(&path);
        make(&path);
        let head = std::fs::read(&path).unwrap();
        assert!(
            head[..4096].iter().all(|&b| b == 0),
            "{how}: the new file begins with {:?}",
            String::from_utf8_lossy(&head[..8])
        );
        // FileNvm takes a non-empty file for an existing storage: it must find none.
        assert!(FileNvm::open(&path).is_err(), "{how}: opened as a storage");
        remove_when_released(&path);
    }
    m.umount();
    minfs().args(["fsck", "-n"]).arg(&img).assert().code(0);
}

/// Where the kernel has fs.fuse.max_pages_limit (Linux ≥ 6.13); prints the skip otherwise.
fn has_max_pages_limit() -> bool {
    let there = Path::new(minfs::fuse::max_pages::LIMIT_PATH).exists();
    if !there {
        testutil::print_skip(
            module_path!(),
            "no fs.fuse.max_pages_limit (Linux < 6.13): FUSE requests are at most 1 MiB",
        );
    }
    there
}

/// A 64 MiB image in `dir` holding a 4 MiB file `lumps`.
fn lumps_image(dir: &Path) -> PathBuf {
    let img = image(dir, "64M");
    minfs()
        .arg("create")
        .arg(&img)
        .args(["lumps", "-s", "4M"])
        .assert()
        .success();
    img
}

/// The length of a Cannyls lump read: 1 MiB and its 512-byte trailer.
const LUMP_READ: usize = (1 << 20) + 512;

/// Reads a lump's worth ([`LUMP_READ`], O_DIRECT) from `lumps` on `m`, unmounts, and returns
/// the server's request statistics (written to `stats` at unmount).
fn read_a_lump(m: Mounted, stats: &Path) -> serde_json::Value {
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(m.file("lumps"))
        .unwrap();
    let mut buf = minfs::AlignedBuf::zeroed(LUMP_READ, 4096);
    f.read_exact_at(&mut buf, 512).unwrap();
    drop(f);
    m.umount();
    serde_json::from_str(&std::fs::read_to_string(stats).unwrap()).unwrap()
}

/// A Cannyls lump read — 1 MiB and its 512-byte trailer, O_DIRECT — reaches the server as one
/// FUSE request: `minfs mount` asks for 8 MiB requests and, as root, raises
/// fs.fuse.max_pages_limit (default 256 pages, which splits the read in two).
#[test]
fn a_lump_with_its_trailer_is_read_in_one_request() {
    require_fuse!();
    if !has_max_pages_limit() {
        return;
    }
    let dir = scratch();
    let img = lumps_image(dir.path());
    let stats = dir.path().join("stats.json");
    let m = Mounted::new(&img, &["--stats", stats.to_str().unwrap()]);
    let limit: u32 = std::fs::read_to_string(minfs::fuse::max_pages::LIMIT_PATH)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(limit >= 2048, "max_pages_limit {limit} after mounting");
    let s = read_a_lump(m, &stats);
    assert_eq!(s["max_pages_asked"], 2048);
    assert_eq!(s["largest_read"], LUMP_READ as u64, "{s}");
    assert_eq!(s["read_requests"], 1, "the read was split: {s}");
}

/// The control for the test above: with fs.fuse.max_pages_limit at its default, 256 pages, and
/// `--keep-max-pages-limit`, the same lump read reaches the server as two requests, the first of
/// 1 MiB.
#[test]
fn a_lump_read_is_split_in_two_at_the_default_max_pages_limit() {
    require_fuse!();
    if !has_max_pages_limit() {
        return;
    }
    /// Puts the limit back as it was, also when the test fails half-way.
    struct Restore(String);
    impl Drop for Restore {
        fn drop(&mut self) {
            let _ = std::fs::write(minfs::fuse::max_pages::LIMIT_PATH, &self.0);
        }
    }
    let limit_path = Path::new(minfs::fuse::max_pages::LIMIT_PATH);
    let dir = scratch();
    let img = lumps_image(dir.path());
    let stats = dir.path().join("stats.json");
    let m = {
        let _only_mount = MAX_PAGES_LIMIT.write().unwrap_or_else(|e| e.into_inner());
        let _restore = Restore(std::fs::read_to_string(limit_path).unwrap());
        std::fs::write(limit_path, "256").unwrap();
        Mounted::new_unlocked(
            &img,
            &["--keep-max-pages-limit", "--stats", stats.to_str().unwrap()],
        )
    };
    let s = read_a_lump(m, &stats);
    assert_eq!(s["max_pages_asked"], 2048);
    assert_eq!(s["read_requests"], 2, "{s}");
    assert_eq!(s["largest_read"], 1u64 << 20, "{s}");
}

/// The mappings of process `pid` that can hold transparent huge pages (`THPeligible: 1`), at
/// least 2 MiB long and starting at a 2 MiB boundary: `(start, length)`.
fn huge_page_mappings(pid: u32) -> Vec<(usize, usize)> {
    const HUGE: usize = 2 << 20;
    testutil::mappings(&pid.to_string())
        .unwrap()
        .into_iter()
        .filter(|m| m.thp_eligible && m.start % HUGE == 0 && m.len >= HUGE)
        .map(|m| (m.start, m.len))
        .collect()
}

/// The server moves a request's data through buffers on huge pages — fuser's receive buffer
/// and minfs's O_DIRECT buffer, both from the `minfs` binary's allocator (`HugeAlloc`) — so the
/// kernel pins each as one folio per request, not 256 pages, and the device gets the data in
/// one segment. Where THP is off the advice is ignored (skipped here).
#[test]
fn the_server_moves_requests_through_huge_page_buffers() {
    require_fuse!();
    if testutil::thp_mode().is_none_or(|mode| mode == "never") {
        testutil::print_skip(
            module_path!(),
            "transparent huge pages are off or missing in this kernel",
        );
        return;
    }
    let dir = scratch();
    let img = lumps_image(dir.path());
    let m = Mounted::new(&img, &[]);
    let before = huge_page_mappings(m.pid);
    let data = pattern(23, 1 << 20);
    let mut buf = minfs::AlignedBuf::zeroed(data.len(), 4096);
    buf.copy_from_slice(&data);
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(m.file("lumps"))
        .unwrap();
    f.write_all_at(&buf, 1 << 20).unwrap();
    buf.fill(0);
    f.read_exact_at(&mut buf, 1 << 20).unwrap();
    assert!(buf[..] == data[..], "the lump did not read back");
    let after = huge_page_mappings(m.pid);
    drop(f);
    m.umount();
    assert!(
        after.len() >= 2,
        "the server has {} huge-page buffer(s) after a 1 MiB write and read ({after:x?}; \
         before: {before:x?}); expected fuser's receive buffer and minfs's I/O buffer",
        after.len()
    );
}

/// Regression (CI, 2026-11-28: `the_server_moves_requests_through_huge_page_buffers` failed
/// with "umount failed: … busy" after closing its file): a process forked while the file was
/// open holds the mount until it lets its copy go; `Mounted::umount` must wait that out, as it
/// would a sibling test's child between fork and exec, and still unmount.
#[test]
fn umount_waits_out_a_forked_childs_copy_of_a_closed_file() {
    require_fuse!();
    let dir = scratch();
    let img = image(dir.path(), "64M");
    let m = Mounted::new(&img, &[]);
    let f = File::create(m.file("held")).unwrap();
    // The child's stdin is a copy of `f`, held for 0.7 s, as a forked child holds every
    // open file until its exec.
    let mut child = Command::new("sleep")
        .arg("0.7")
        .stdin(f.try_clone().unwrap())
        .spawn()
        .unwrap();
    drop(f);
    let started = Instant::now();
    m.umount();
    assert!(
        started.elapsed() >= Duration::from_millis(500),
        "umount succeeded while the child still held the file: the test did not make the case"
    );
    child.wait().unwrap();
}

/// Regression (issue 37): after the server of mount A was killed and the same image mounted
/// at B, `minfs umount A` waited 60 s for B's live server and named it as A's: umount must
/// wait for the server of the mount it unmounts only.
#[test]
fn umount_of_a_dead_servers_mount_does_not_wait_for_another_mounts_server() {
    require_fuse!();
    let dir = scratch();
    let img = image(dir.path(), "64M");
    let mut a = Mounted::new(&img, &[]);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(a.pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    reap(a.pid);
    let b = Mounted::new(&img, &[]);
    let start = Instant::now();
    let out = minfs()
        .args(["umount", "--timeout", "20"])
        .arg(a.path())
        .timeout(Duration::from_secs(40))
        .output()
        .unwrap();
    let took = start.elapsed();
    let text = testutil::output_text(&out);
    assert!(out.status.success(), "umount A: {text}");
    assert!(
        !text.contains(&b.pid.to_string()),
        "umount A names B's server {}: {text}",
        b.pid
    );
    assert!(
        took < Duration::from_secs(5),
        "umount A took {took:?}: {text}"
    );
    assert!(!mounted_at(a.path()), "A still mounted");
    assert!(mounted_at(b.path()), "B was unmounted");
    assert!(
        !minfs::fuse::mounts::exited(b.pid),
        "B's server exited with A's umount"
    );
    // Unmounted, its server reaped: nothing left for its guard (whose pid may be reused).
    a.done = true;
    drop(a);
    b.umount();
}

/// `minfs tune` on a mounted target is refused, naming the mount; after umount it works.
#[test]
fn tune_refuses_a_mounted_target() {
    require_fuse!();
    let dir = scratch();
    let img = image(dir.path(), "16M");
    let m = Mounted::new(&img, &[]);
    minfs()
        .args(["tune", "-L", "x"])
        .arg(&img)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("the minfs mount at"));
    m.umount();
    minfs()
        .args(["tune", "-L", "x"])
        .arg(&img)
        .assert()
        .success();
}

/// A busy block device's refusal names what holds it — here a `minfs mount` of it: the mount
/// point and its server process — instead of listing guesses (issue 37).
#[test]
fn a_busy_block_devices_refusal_names_the_mount_and_its_server() {
    require_fuse!();
    let dev = LoopDevice::new(64 << 20, 512).unwrap();
    minfs()
        .args(["mkfs", "-q"])
        .arg(dev.path())
        .assert()
        .success();
    let m = Mounted::new(dev.path(), &[]);
    let out = minfs()
        .args(["mkfs", "-f"])
        .arg(dev.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("mounted at {} (fuse.minfs)", m.path().display())),
        "{err}"
    );
    assert!(
        err.contains(&format!("open by process {} (minfs)", m.pid)),
        "{err}"
    );
    assert!(!err.contains("another namespace"), "{err}");
    m.umount();
}
