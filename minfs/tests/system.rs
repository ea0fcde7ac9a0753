//! minfs in the system as a filesystem type, with the real util-linux mount(8), umount(8),
//! fsck(8), mkfs(8) and findmnt(8), systemd's fstab generator and systemd-fsck, on a loop
//! device and an image, with this build's `minfs` linked into /sbin under the helper names
//! (the links removed on every path; refused when a minfs helper or package from elsewhere is
//! installed). Root and loop devices needed: skipped with a printed reason otherwise, a failure
//! under MINFS_REQUIRE_LOOP=1. The helpers' own arguments: tests/helpers.rs.

use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use testutil::output_text as text;

/// Every helper name, as `scripts/install.sh` and the Debian package install them.
fn helper_names() -> Vec<&'static str> {
    minfs::cli::HELPERS.iter().flat_map(|h| h.names()).collect()
}

const SBIN_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// A command with root's usual PATH (fsck(8) and mkfs(8) look for their helpers in PATH).
fn cmd(program: &str) -> Command {
    let mut c = Command::new(program);
    c.env("PATH", SBIN_PATH).env("LC_ALL", "C");
    c
}

fn run(c: &mut Command) -> Output {
    c.output().unwrap_or_else(|e| panic!("{c:?}: {e}"))
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The mounts at `dir` as findmnt(8) shows them: (SOURCE, FSTYPE, OPTIONS) each.
fn findmnt(dir: &Path) -> Vec<(String, String, String)> {
    let out = run(cmd("findmnt")
        .args(["-n", "-r", "-o", "SOURCE,FSTYPE,OPTIONS", "--mountpoint"])
        .arg(dir));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            (f[0].to_string(), f[1].to_string(), f[2].to_string())
        })
        .collect()
}

/// Unmounts whatever is still mounted at its directories when dropped (a failed assertion
/// must not leave a mount behind).
struct Unmount(Vec<PathBuf>);

impl Drop for Unmount {
    fn drop(&mut self) {
        for dir in &self.0 {
            while !findmnt(dir).is_empty() {
                let ok = cmd("umount").arg(dir).status().is_ok_and(|s| s.success());
                if !ok {
                    let _ = cmd("umount").arg("-l").arg(dir).status();
                    break;
                }
            }
        }
    }
}

/// Root, loop devices, and the util-linux and fuse3 programs; `None` when the test cannot run.
fn ready(test: &str) -> Option<()> {
    if let Some(reason) = testutil::loop_unavailable() {
        if std::env::var_os("MINFS_REQUIRE_LOOP").is_some_and(|v| v == "1") {
            panic!("MINFS_REQUIRE_LOOP=1 but {reason}");
        }
        testutil::print_skip(test, &reason);
        return None;
    }
    for (prog, package) in [
        ("mount", "mount"),
        ("findmnt", "util-linux"),
        ("fsck", "util-linux"),
        ("mkfs", "util-linux"),
        ("blkid", "util-linux"),
        ("mkfs.ext4", "e2fsprogs"),
        ("mount.fuse3", "fuse3"),
    ] {
        if !testutil::require_program(test, prog, package) {
            return None;
        }
    }
    Some(())
}

/// Takes the system-install lock, refuses (fails) when minfs is installed from elsewhere, and
/// links the helpers into /sbin, and `minfs` into /usr/local/sbin (the first directory of
/// /bin/sh's default PATH: mount(8) clears PATH, and mount.fuse(8) runs `minfs` through sh).
fn install_helpers() -> (testutil::SystemInstallLock, testutil::SystemLinks) {
    let lock = testutil::SystemInstallLock::acquire().unwrap();
    if let Some(what) = testutil::foreign_minfs_install(&helper_names()) {
        panic!(
            "refusing to run: {what} (installed from elsewhere; this test links its own \
             helpers into /sbin and removes them after, so it does not run beside another)"
        );
    }
    let mut paths: Vec<PathBuf> = helper_names()
        .into_iter()
        .map(|h| Path::new("/sbin").join(h))
        .collect();
    paths.push(PathBuf::from("/usr/local/sbin/minfs"));
    let links = testutil::SystemLinks::new(Path::new(env!("CARGO_BIN_EXE_minfs")), &paths)
        .unwrap_or_else(|e| panic!("refusing to run: {e}"));
    (lock, links)
}

fn flip_slot_b(target: &Path, bytes: &[u8]) {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(target)
        .unwrap();
    f.write_all_at(bytes, 65536).unwrap();
    f.sync_all().unwrap();
}

fn head(target: &Path) -> Vec<u8> {
    let mut b = vec![0u8; 256 << 10];
    std::fs::File::open(target)
        .unwrap()
        .read_exact_at(&mut b, 0)
        .unwrap();
    b
}

/// /etc/fstab lines of type `minfs` (on a loop device named through a symlink, as by-id paths
/// are) and `fuse.minfs` (on an image), with pass 2, work with util-linux: `mount -a` mounts both
/// (and again changes nothing), `umount DIR` leaves the target released at once, `mount DIR`
/// mounts one line; a LABEL= line and an unknown option are refused with nothing mounted;
/// `fsck -A -a` (the boot-time check) runs fsck.minfs -a on both, repairs a torn slot, and exits
/// 4 writing nothing on damage it must not repair unattended, as does the real systemd-fsck;
/// `mkfs -t minfs` refuses a device holding ext4; `mount -t fuse.minfs` works through
/// mount.fuse(8) too.
#[test]
fn fstab_lines_work_with_mount_fsck_and_umount() {
    let test = "fstab_lines_work_with_mount_fsck_and_umount";
    if ready(test).is_none() {
        return;
    }
    let dev = testutil::LoopDevice::new(64 << 20, 512).unwrap();
    let dir = tempfile::Builder::new()
        .prefix("minfs-system-")
        .tempdir_in(testutil::scratch_dir())
        .unwrap();
    let base = dir.path().canonicalize().unwrap();
    let (_lock, mut links) = install_helpers();
    let (m1, m2, m3, m4) = (
        base.join("m1"),
        base.join("m2"),
        base.join("m3"),
        base.join("m4"),
    );
    for m in [&m1, &m2, &m3, &m4] {
        std::fs::create_dir(m).unwrap();
    }
    let _unmount = Unmount(vec![m1.clone(), m2.clone(), m3.clone(), m4.clone()]);

    // mkfs -t minfs refuses a device holding ext4, which stays; -f overwrites it.
    testutil::mkfs_ext4(dev.path()).unwrap();
    let out = run(cmd("mkfs").args(["-t", "minfs"]).arg(dev.path()));
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("ext"),
        "{}",
        text(&out)
    );
    let blkid = run(cmd("blkid")
        .args(["-o", "value", "-s", "TYPE"])
        .arg(dev.path()));
    assert_eq!(String::from_utf8_lossy(&blkid.stdout).trim(), "ext4");
    let out = run(cmd("mkfs")
        .args(["-t", "minfs", "-f", "-L", "disk0"])
        .arg(dev.path()));
    assert!(out.status.success(), "{}", text(&out));
    // mkfs(8)'s SIZE (1 KiB blocks) makes the image.
    let img = base.join("minfs.img");
    let out = run(cmd("mkfs").args(["-t", "minfs", s(&img), "16384"]));
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(std::fs::metadata(&img).unwrap().len(), 16 << 20);

    // A stable name for the device, as /dev/disk/by-id/… is: a symlink.
    let by_id = base.join("by-id-disk0");
    std::os::unix::fs::symlink(dev.path(), &by_id).unwrap();
    let fstab = base.join("fstab");
    std::fs::write(
        &fstab,
        format!(
            "# minfs test fstab\n\
             {by_id} {m1} minfs defaults,noatime,nofail,x-systemd.device-timeout=5s 0 2\n\
             {img} {m2} fuse.minfs defaults,_netdev 0 2\n\
             LABEL=disk0 {m3} minfs defaults,noauto 0 0\n\
             {base}/by-id-absent {m4} minfs defaults,nofail 0 2\n",
            base = base.display(),
            m4 = m4.display(),
            by_id = by_id.display(),
            m1 = m1.display(),
            img = img.display(),
            m2 = m2.display(),
            m3 = m3.display(),
        ),
    )
    .unwrap();

    // mount -a: both auto lines, mounted and ready when mount returns.
    let out = run(cmd("mount").arg("--fstab").arg(&fstab).arg("-a"));
    assert!(out.status.success(), "mount -a: {}", text(&out));
    let (src, fstype, opts) = findmnt(&m1).pop().expect("m1 mounted");
    assert_eq!(
        (src.as_str(), fstype.as_str()),
        (s(dev.path()), "fuse.minfs")
    );
    assert!(opts.split(',').any(|o| o == "noatime"), "{opts}");
    let (src, fstype, _) = findmnt(&m2).pop().expect("m2 mounted");
    assert_eq!((src.as_str(), fstype.as_str()), (s(&img), "fuse.minfs"));
    // Neither the noauto line nor the nofail line of a disk that is not there (not an error).
    assert!(findmnt(&m3).is_empty(), "the noauto line was mounted");
    assert!(
        findmnt(&m4).is_empty(),
        "the absent disk's line was mounted"
    );
    // Preen of a clean mounted target (nothing written through the mount yet: a write's
    // commit may be in flight for a moment after it) only reads: 0; -y is refused: 8.
    let out = run(cmd("fsck.minfs").arg("-a").arg(dev.path()));
    assert_eq!(out.status.code(), Some(0), "preen, mounted: {}", text(&out));
    let out = run(cmd("fsck.minfs").arg("-y").arg(dev.path()));
    assert_eq!(out.status.code(), Some(8), "-y, mounted: {}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains(&format!("{}: device is busy", s(dev.path()))),
        "{}",
        text(&out)
    );
    std::fs::write(m1.join("hello"), b"on the loop device").unwrap();
    std::fs::write(m2.join("hello"), b"on the image").unwrap();
    // Again: already mounted, nothing mounted twice.
    let out = run(cmd("mount").arg("--fstab").arg(&fstab).arg("-a"));
    assert!(out.status.success(), "mount -a again: {}", text(&out));
    assert_eq!(findmnt(&m1).len(), 1);
    assert_eq!(findmnt(&m2).len(), 1);

    // umount DIR runs umount.fuse.minfs (its -v message says so), which returns once the
    // server has released the target: an exclusive open (fsck -y) succeeds at once.
    for (m, target) in [(&m1, dev.path()), (&m2, img.as_path())] {
        let out = testutil::umount_retrying_busy(cmd("umount").arg("-v").arg(m))
            .unwrap_or_else(|e| panic!("umount: {e}"));
        assert!(
            String::from_utf8_lossy(&out.stdout).contains(&format!(
                "umount.fuse.minfs: {} unmounted; {} released",
                m.display(),
                target.display()
            )),
            "{}",
            text(&out)
        );
        assert!(findmnt(m).is_empty());
        let out = run(cmd("fsck").args(["-t", "minfs", "-y"]).arg(target));
        assert_eq!(
            out.status.code(),
            Some(0),
            "fsck -y right after umount: {}",
            text(&out)
        );
    }
    let out = run(Command::new(env!("CARGO_BIN_EXE_minfs"))
        .arg("cat")
        .arg(&img)
        .arg("hello"));
    assert_eq!(out.stdout, b"on the image");

    // mount DIR: the fstab line of that mount point; then minfs umount.
    let out = run(cmd("mount").arg("--fstab").arg(&fstab).arg(&m1));
    assert!(out.status.success(), "mount DIR: {}", text(&out));
    assert_eq!(
        std::fs::read(m1.join("hello")).unwrap(),
        b"on the loop device"
    );
    let out = run(Command::new(env!("CARGO_BIN_EXE_minfs"))
        .arg("umount")
        .arg(&m1));
    assert!(out.status.success(), "{}", text(&out));
    assert!(findmnt(&m1).is_empty());

    // LABEL=: mount cannot resolve it (blkid does not know minfs), and says so.
    let out = run(cmd("mount").arg("--fstab").arg(&fstab).arg(&m3));
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("LABEL=disk0"),
        "{}",
        text(&out)
    );
    assert!(findmnt(&m3).is_empty());
    // An unknown option: named, mount(8)'s "mount failure", nothing mounted.
    let bad = base.join("fstab.bad");
    std::fs::write(
        &bad,
        format!(
            "{} {} minfs defaults,frobnicate 0 0\n",
            by_id.display(),
            m1.display()
        ),
    )
    .unwrap();
    let out = run(cmd("mount").arg("--fstab").arg(&bad).arg(&m1));
    assert_eq!(out.status.code(), Some(32), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("\"frobnicate\""),
        "{}",
        text(&out)
    );
    assert!(findmnt(&m1).is_empty());

    // The boot-time check: fsck -A -a runs fsck.minfs -a on both pass-2 lines.
    let fsck_all = || {
        run(cmd("fsck")
            .args(["-A", "-a", "-T", "-V"])
            .env("FSTAB_FILE", &fstab))
    };
    let out = fsck_all();
    assert_eq!(out.status.code(), Some(0), "fsck -A -a: {}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    // fsck(8) runs fsck.TYPE: fsck.fuse.minfs for the fuse.minfs line.
    for (helper, target) in [("fsck.minfs", s(dev.path())), ("fsck.fuse.minfs", s(&img))] {
        assert!(
            stdout.contains(&format!("{helper} -a {target}")),
            "{stdout}"
        );
        assert!(
            stdout.contains(&format!("checking {target} (preen)")),
            "{stdout}"
        );
    }
    // A slot torn by an interrupted commit (a byte of its file table): repaired, exit 1.
    let torn = {
        let mut b = [0u8; 1];
        std::fs::File::open(dev.path())
            .unwrap()
            .read_exact_at(&mut b, 65536 + 4096 + 40)
            .unwrap();
        b[0] ^ 0xff
    };
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(dev.path())
        .unwrap();
    f.write_all_at(&[torn], 65536 + 4096 + 40).unwrap();
    f.sync_all().unwrap();
    drop(f);
    let out = fsck_all();
    assert_eq!(
        out.status.code(),
        Some(1),
        "fsck -A -a, torn slot: {}",
        text(&out)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("FILESYSTEM WAS MODIFIED"));
    assert_eq!(fsck_all().status.code(), Some(0));
    // Garbage over slot B's magic: not repaired unattended, exit 4, nothing written.
    flip_slot_b(dev.path(), &[0x5a; 64]);
    let before = head(dev.path());
    let out = fsck_all();
    assert_eq!(
        out.status.code(),
        Some(4),
        "fsck -A -a, hit magic: {}",
        text(&out)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("UNEXPECTED INCONSISTENCY"));
    assert!(head(dev.path()) == before, "preen wrote");

    // The real systemd-fsck (what systemd-fsck@.service runs at boot: fsck -a -T -l -M …)
    // refuses it too, and passes once fsck -y has repaired it by hand.
    let systemd_fsck = ["/usr/lib/systemd/systemd-fsck", "/lib/systemd/systemd-fsck"]
        .into_iter()
        .find(|p| Path::new(p).exists());
    if let Some(systemd_fsck) = systemd_fsck {
        let out = run(cmd(systemd_fsck).arg(dev.path()).env("FSTAB_FILE", &fstab));
        assert!(!out.status.success(), "systemd-fsck: {}", text(&out));
        assert!(head(dev.path()) == before, "systemd-fsck wrote");
        let out = run(cmd("fsck")
            .args(["-y"])
            .arg(dev.path())
            .env("FSTAB_FILE", &fstab));
        assert_eq!(out.status.code(), Some(1), "fsck -y: {}", text(&out));
        let out = run(cmd(systemd_fsck).arg(dev.path()).env("FSTAB_FILE", &fstab));
        assert!(out.status.success(), "systemd-fsck: {}", text(&out));
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("(preen)"),
            "{}",
            text(&out)
        );
    } else {
        testutil::require_program(test, "systemd-fsck", "systemd");
        let out = run(cmd("fsck")
            .args(["-y"])
            .arg(dev.path())
            .env("FSTAB_FILE", &fstab));
        assert_eq!(out.status.code(), Some(1), "fsck -y: {}", text(&out));
    }

    // mount -t fuse.minfs through mount.fuse(8) (fuse3), which runs `minfs SPEC DIR -o …`
    // through /bin/sh (its default PATH: mount(8) clears PATH), when there is no
    // mount.fuse.minfs.
    links.remove(Path::new("/sbin/mount.fuse.minfs"));
    let out = run(cmd("mount")
        .args(["-t", "fuse.minfs", "-o", "ro"])
        .arg(&img)
        .arg(&m2));
    assert!(out.status.success(), "mount via mount.fuse: {}", text(&out));
    let (src, fstype, opts) = findmnt(&m2).pop().expect("m2 mounted");
    assert_eq!((src.as_str(), fstype.as_str()), (s(&img), "fuse.minfs"));
    assert!(opts.starts_with("ro,"), "{opts}");
    assert_eq!(std::fs::read(m2.join("hello")).unwrap(), b"on the image");
    testutil::umount_retrying_busy(cmd("umount").arg(&m2)).unwrap_or_else(|e| panic!("{e}"));
    assert!(findmnt(&m2).is_empty());
}

/// systemd-fstab-generator on fstab lines of type minfs and fuse.minfs (run on a temporary
/// fstab, SYSTEMD_FSTAB): a .mount unit each, with the line's type and options, and for a
/// pass number a Requires= and After= of systemd-fsck@ for the device — but only while
/// fsck.minfs (fsck.fuse.minfs) can be found: without it, no check.
#[test]
fn systemd_fstab_generator_makes_mount_units_with_the_fsck_dependency() {
    let test = "systemd_fstab_generator_makes_mount_units_with_the_fsck_dependency";
    let Some(generator) = [
        "/usr/lib/systemd/system-generators/systemd-fstab-generator",
        "/lib/systemd/system-generators/systemd-fstab-generator",
    ]
    .into_iter()
    .find(|p| Path::new(p).exists()) else {
        testutil::require_program(test, "systemd-fstab-generator", "systemd");
        return;
    };
    let Some(fsck) = testutil::which("fsck") else {
        testutil::require_program(test, "fsck", "util-linux");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // The generator's PATH: this directory only, holding fsck(8) (which the generator looks
    // for first) and, for the second run, the fsck.minfs links — not /sbin, where another
    // test (or an installed minfs) may have its helpers.
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    std::os::unix::fs::symlink(fsck, bin.join("fsck")).unwrap();
    let fstab = dir.path().join("fstab");
    std::fs::write(
        &fstab,
        "/dev/disk/by-id/ata-EXAMPLE_DISK0 /srv/minfs0 minfs defaults,nofail 0 2\n\
         /dev/disk/by-id/ata-EXAMPLE_DISK1 /srv/minfs1 fuse.minfs defaults,_netdev 0 2\n\
         /dev/disk/by-id/ata-EXAMPLE_DISK2 /srv/minfs2 minfs defaults 0 0\n",
    )
    .unwrap();
    let generate = |out: &Path| {
        std::fs::create_dir(out).unwrap();
        let o = run(Command::new(generator)
            .args([out, out, out])
            .env_clear()
            .env("PATH", &bin)
            .env("SYSTEMD_FSTAB", &fstab)
            .env("SYSTEMD_PROC_CMDLINE", "")
            .env("SYSTEMD_LOG_LEVEL", "debug"));
        assert!(o.status.success(), "{}", text(&o));
        let unit = |name: &str| std::fs::read_to_string(out.join(name)).unwrap();
        (
            unit("srv-minfs0.mount"),
            unit("srv-minfs1.mount"),
            unit("srv-minfs2.mount"),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let fsck0 = "systemd-fsck@dev-disk-by\\x2did-ata\\x2dEXAMPLE_DISK0.service";
    let fsck1 = "systemd-fsck@dev-disk-by\\x2did-ata\\x2dEXAMPLE_DISK1.service";

    // No fsck.minfs on PATH: the units, without a check.
    let (u0, u1, _, log) = generate(&dir.path().join("without"));
    assert!(!u0.contains("systemd-fsck@"), "{u0}");
    assert!(!u1.contains("systemd-fsck@"), "{u1}");
    assert!(log.contains("fsck.minfs does not exist"), "{log}");

    let exe = Path::new(env!("CARGO_BIN_EXE_minfs"));
    for name in ["fsck.minfs", "fsck.fuse.minfs"] {
        std::os::unix::fs::symlink(exe, bin.join(name)).unwrap();
    }
    let out = dir.path().join("with");
    let (u0, u1, u2, _) = generate(&out);
    for line in [
        "What=/dev/disk/by-id/ata-EXAMPLE_DISK0",
        "Where=/srv/minfs0",
        "Type=minfs",
        "Options=defaults,nofail",
        &format!("Requires={fsck0}"),
        &format!("After={fsck0}"),
    ] {
        assert!(u0.lines().any(|l| l == line), "{line}:\n{u0}");
    }
    for line in [
        "Type=fuse.minfs",
        "Options=defaults,_netdev",
        "Before=remote-fs.target",
        &format!("Requires={fsck1}"),
    ] {
        assert!(u1.lines().any(|l| l == line), "{line}:\n{u1}");
    }
    assert!(u2.lines().any(|l| l == "Type=minfs"), "{u2}");
    assert!(!u2.contains("systemd-fsck@"), "pass 0: {u2}");
    // nofail: wanted by local-fs.target, not required; _netdev: remote-fs.target.
    assert!(out.join("local-fs.target.wants/srv-minfs0.mount").exists());
    assert!(out
        .join("remote-fs.target.requires/srv-minfs1.mount")
        .exists());
    assert!(out
        .join("local-fs.target.requires/srv-minfs2.mount")
        .exists());
}

/// The real systemd-udevd running this build's `64-minfs.rules` (installed in
/// /run/udev/rules.d, which overrides a packaged one): started here when none runs, and then
/// stopped again; the rule removed when dropped.
struct Udevd {
    child: Option<std::process::Child>,
    rule: PathBuf,
}

impl Udevd {
    fn ping() -> bool {
        cmd("udevadm")
            .args(["control", "--ping", "-t", "2"])
            .output()
            .is_ok_and(|o| o.status.success())
    }

    /// `Err` says why udevd cannot run here.
    fn start() -> Result<Udevd, String> {
        let bin = [
            "/usr/lib/systemd/systemd-udevd",
            "/lib/systemd/systemd-udevd",
        ]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .ok_or("systemd-udevd is not installed (Debian package udev)")?;
        let rule = PathBuf::from("/run/udev/rules.d/64-minfs.rules");
        if rule.exists() {
            return Err(format!("{} exists (another test run?)", rule.display()));
        }
        let text =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/udev/64-minfs.rules"))
                .unwrap()
                .replace(
                    "/usr/bin/minfs probe",
                    &format!("{} probe", env!("CARGO_BIN_EXE_minfs")),
                );
        std::fs::create_dir_all(rule.parent().unwrap()).unwrap();
        std::fs::write(&rule, text).unwrap();
        let mut me = Udevd { child: None, rule };
        if Udevd::ping() {
            run(cmd("udevadm").args(["control", "--reload"]));
        } else {
            Udevd::clear_watches();
            let child = Command::new(bin)
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .map_err(|e| format!("starting {bin}: {e}"))?;
            me.child = Some(child);
            let start = std::time::Instant::now();
            while !Udevd::ping() {
                if let Some(st) = me.child.as_mut().unwrap().try_wait().ok().flatten() {
                    return Err(format!("{bin} exited at start ({st})"));
                }
                if start.elapsed() > std::time::Duration::from_secs(10) {
                    return Err(format!("{bin} does not answer udevadm control --ping"));
                }
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
        }
        Ok(me)
    }

    /// Removes the inotify-watch records a stopped udevd left in /run/udev (only when none
    /// runs). udevd renames them to watch.old at start and then refuses to delete that on a
    /// /run that is not tmpfs (as in some containers), so stale records would collide with the
    /// new watches ("Failed to add inotify watch: File exists") and no relabel be seen.
    fn clear_watches() {
        for d in ["/run/udev/watch", "/run/udev/watch.old"] {
            let _ = std::fs::remove_dir_all(d);
        }
    }

    /// `udevadm trigger --action=change DEV` and `udevadm settle`.
    fn trigger(dev: &Path) {
        let o = run(cmd("udevadm").args(["trigger", "--action=change"]).arg(dev));
        assert!(o.status.success(), "udevadm trigger: {}", text(&o));
        Udevd::settle();
    }

    fn settle() {
        let o = run(cmd("udevadm").args(["settle", "-t", "30"]));
        assert!(o.status.success(), "udevadm settle: {}", text(&o));
    }
}

impl Drop for Udevd {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.rule);
        match self.child.as_mut() {
            Some(child) => {
                let _ = cmd("udevadm").args(["settle", "-t", "10"]).status();
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(child.id() as i32),
                    nix::sys::signal::Signal::SIGTERM,
                );
                let _ = child.wait();
                Udevd::clear_watches();
            }
            None => {
                let _ = cmd("udevadm").args(["control", "--reload"]).status();
            }
        }
    }
}

/// The /dev/disk/by-`kind` links that point at `dev`.
fn links_to(kind: &str, dev: &Path) -> Vec<String> {
    let Ok(dir) = std::fs::read_dir(Path::new("/dev/disk").join(kind)) else {
        return Vec::new();
    };
    let mut v: Vec<String> = dir
        .flatten()
        .filter(|e| std::fs::canonicalize(e.path()).ok().as_deref() == Some(dev))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// With the real systemd-udevd and the minfs rule, a minfs on a loop device is found by name
/// as ext4 is: /dev/disk/by-uuid and by-label links (a label with a space, escaped as udev
/// does), `findfs`, `lsblk -f`, `mount UUID=…` and `mount LABEL=…`, an fstab `UUID=` line
/// through `mount -a` and systemd-fstab-generator's unit; no ext4 link is left once minfs is
/// made over ext4, and no old label link after `minfs tune -L` (the watched device's close
/// runs the rule again, with no trigger).
#[test]
fn udev_links_minfs_by_uuid_and_label() {
    let test = "udev_links_minfs_by_uuid_and_label";
    if ready(test).is_none() {
        return;
    }
    for (prog, package) in [
        ("udevadm", "udev"),
        ("findfs", "util-linux"),
        ("lsblk", "util-linux"),
    ] {
        if !testutil::require_program(test, prog, package) {
            return;
        }
    }
    // First the system-install lock: no other test of this kind (fstab_lines_…, whose LABEL=
    // line must find no by-label link) runs while udevd does.
    let (_lock, _links) = install_helpers();
    let udevd = match Udevd::start() {
        Ok(u) => u,
        Err(reason) => {
            if std::env::var_os("MINFS_REQUIRE_LOOP").is_some_and(|v| v == "1") {
                panic!("MINFS_REQUIRE_LOOP=1 but {reason}");
            }
            testutil::print_skip(test, &reason);
            return;
        }
    };
    let dev = testutil::LoopDevice::new(64 << 20, 512).unwrap();
    let devp = dev.path().to_path_buf();
    let dir = tempfile::Builder::new()
        .prefix("minfs-udev-")
        .tempdir_in(testutil::scratch_dir())
        .unwrap();
    let base = dir.path().canonicalize().unwrap();
    let mnt = base.join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let _unmount = Unmount(vec![mnt.clone()]);
    let pid = std::process::id();

    // ext4 first: udev's own links for it.
    let ext_label = format!("ext{pid}");
    let o = run(cmd("mkfs.ext4")
        .args(["-q", "-F", "-L", &ext_label])
        .arg(&devp));
    assert!(o.status.success(), "{}", text(&o));
    Udevd::trigger(&devp);
    assert_eq!(links_to("by-label", &devp), vec![ext_label.clone()]);
    assert_eq!(links_to("by-uuid", &devp).len(), 1);

    // minfs over it.
    let label = format!("minfs {pid}");
    let o = run(cmd("mkfs")
        .args(["-t", "minfs", "-f", "-L", &label])
        .arg(&devp));
    assert!(o.status.success(), "{}", text(&o));
    let uuid = minfs::probe::probe(&devp).map(|sb| uuid::Uuid::from_bytes(sb.uuid).to_string());
    let uuid = uuid.expect("minfs on the device");
    Udevd::trigger(&devp);
    let enc = format!("minfs\\x20{pid}");
    println!("transcript: after mkfs -t minfs -f -L {label:?} {} over ext4 and udevadm trigger + settle:", devp.display());
    println!("  /dev/disk/by-uuid:  {:?}", links_to("by-uuid", &devp));
    println!("  /dev/disk/by-label: {:?}", links_to("by-label", &devp));
    assert_eq!(links_to("by-uuid", &devp), vec![uuid.clone()], "by-uuid");
    assert_eq!(
        links_to("by-label", &devp),
        vec![enc.clone()],
        "by-label (the ext4 link stale?)"
    );

    // findfs and lsblk -f.
    for tag in [format!("UUID={uuid}"), format!("LABEL={label}")] {
        let o = run(cmd("findfs").arg(&tag));
        assert!(o.status.success(), "findfs {tag}: {}", text(&o));
        assert_eq!(
            String::from_utf8_lossy(&o.stdout).trim(),
            s(&devp),
            "findfs {tag}"
        );
        println!(
            "  findfs {tag}: {}",
            String::from_utf8_lossy(&o.stdout).trim()
        );
    }
    let o = run(cmd("lsblk")
        .args(["-f", "-n", "-o", "NAME,FSTYPE,FSVER,LABEL,UUID"])
        .arg(&devp));
    let lsblk = String::from_utf8_lossy(&o.stdout).to_string();
    println!("  lsblk -f: {}", lsblk.trim());
    assert!(
        lsblk.contains("minfs") && lsblk.contains(&label) && lsblk.contains(&uuid),
        "lsblk -f: {}",
        text(&o)
    );
    // blkid itself has no minfs prober: it shows nothing (what the docs say).
    let o = run(cmd("blkid").args(["-p"]).arg(&devp));
    assert!(
        String::from_utf8_lossy(&o.stdout).trim().is_empty(),
        "blkid -p: {}",
        text(&o)
    );

    // mount UUID=… and LABEL=… (-t minfs: libmount cannot guess the type), and umount.
    for tag in [format!("UUID={uuid}"), format!("LABEL={label}")] {
        let o = run(cmd("mount").args(["-t", "minfs", &tag]).arg(&mnt));
        assert!(o.status.success(), "mount {tag}: {}", text(&o));
        let m = findmnt(&mnt);
        assert_eq!(m.len(), 1, "{m:?}");
        assert_eq!(m[0].0, s(&devp), "mounted from {m:?}");
        println!("  mount -t minfs {tag} {}: {:?}", mnt.display(), m[0]);
        let o = run(cmd("umount").arg(&mnt));
        assert!(o.status.success(), "umount: {}", text(&o));
        assert!(findmnt(&mnt).is_empty());
    }

    // An fstab UUID= line: mount -a with that fstab, and systemd-fstab-generator's unit.
    let fstab = base.join("fstab");
    std::fs::write(
        &fstab,
        format!("UUID={uuid} {} minfs defaults 0 2\n", mnt.display()),
    )
    .unwrap();
    let o = run(cmd("mount").arg("-T").arg(&fstab).arg("-a"));
    assert!(o.status.success(), "mount -a -T fstab: {}", text(&o));
    assert_eq!(
        findmnt(&mnt).first().map(|m| m.0.clone()),
        Some(s(&devp).to_string())
    );
    println!(
        "  mount -a with fstab line UUID={uuid}: mounted {}",
        devp.display()
    );
    let o = run(cmd("umount").arg(&mnt));
    assert!(o.status.success(), "umount: {}", text(&o));
    if let Some(generator) = [
        "/usr/lib/systemd/system-generators/systemd-fstab-generator",
        "/lib/systemd/system-generators/systemd-fstab-generator",
    ]
    .into_iter()
    .find(|p| Path::new(p).exists())
    {
        let out = base.join("units");
        std::fs::create_dir(&out).unwrap();
        let o = run(Command::new(generator)
            .args([&out, &out, &out])
            .env("SYSTEMD_FSTAB", &fstab)
            .env("SYSTEMD_PROC_CMDLINE", ""));
        assert!(o.status.success(), "{}", text(&o));
        let units: Vec<String> = std::fs::read_dir(&out)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".mount"))
            .map(|e| std::fs::read_to_string(e.path()).unwrap())
            .collect();
        let what = format!("What=/dev/disk/by-uuid/{uuid}");
        assert!(
            units
                .iter()
                .any(|u| u.contains(&what) && u.contains("Type=minfs")),
            "no unit with {what}: {units:?}"
        );
        println!("  systemd-fstab-generator: a mount unit with {what} (the link udev made)");
    }

    // A relabel: the watched device's close makes udev run the rules again.
    let other = format!("other{pid}");
    let o = run(Command::new(env!("CARGO_BIN_EXE_minfs"))
        .args(["tune", "-L", &other])
        .arg(&devp));
    assert!(o.status.success(), "tune: {}", text(&o));
    let start = std::time::Instant::now();
    while links_to("by-label", &devp) != vec![other.clone()]
        && start.elapsed() < std::time::Duration::from_secs(10)
    {
        Udevd::settle();
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    println!(
        "  after minfs tune -L {other} (no trigger): by-label {:?}",
        links_to("by-label", &devp)
    );
    assert_eq!(
        links_to("by-label", &devp),
        vec![other.clone()],
        "stale label link"
    );
    assert_eq!(links_to("by-uuid", &devp), vec![uuid.clone()]);

    // Detached: udev removes the links before it stops.
    drop(dev);
    Udevd::settle();
    assert!(
        !Path::new("/dev/disk/by-label").join(&other).exists(),
        "link left after detaching"
    );
    drop(udevd);
}
