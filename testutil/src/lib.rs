//! Test support: loop devices and mounts that clean up after themselves, and skipping tests
//! with a printed reason where root or loop devices are missing.
//!
//! Everything here touches only image files it creates in its own temporary directories and
//! the loop devices it attaches to them.
//!
//! Set `MINFS_REQUIRE_LOOP=1` (CI does) to turn a skip into a failure, so a CI machine that
//! silently lost its loop devices does not pass by skipping.

use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

pub use devguard::{
    is_root, lazy_umount, retry_args, retry_busy, run, scratch_dir, shm_is_tmpfs, which, Emulator,
    FuseMount, GuestHaltPoll, ImageFile, LoopDevice, MaxPagesLimit, Mount, QueueMode, Tracing,
};

/// Runs an unmount command (`umount DIR`, `minfs umount DIR`) and, while it fails saying the
/// mount is busy, again 100 ms later, for up to 5 s ([`devguard::retry_busy_every`], each
/// retry reported on stderr); its output once it succeeds, else why it failed.
///
/// A test's own file, closed just before, can hold a mount for a moment: the tests of one
/// binary are threads of one process, and a child that another test forks holds a copy of
/// every open file until its exec closes it (close-on-exec). For an unmount after the test's
/// own file access (regression: minfs's `umount_waits_out_a_forked_childs_copy_of_a_closed_file`);
/// a test of the busy refusal itself runs its command once.
pub fn umount_retrying_busy(cmd: &mut Command) -> Result<Output, devguard::CommandFailed> {
    devguard::retry_busy_every(
        cmd,
        "umount_retrying_busy",
        &mut io::stderr(),
        Duration::from_millis(100),
        50,
    )
}

/// Why loop-device tests cannot run here, or `None` when they can.
pub fn loop_unavailable() -> Option<String> {
    if !is_root() {
        return Some("not running as root (loop devices need root)".into());
    }
    if !Path::new("/dev/loop-control").exists() {
        return Some("/dev/loop-control is missing".into());
    }
    if which("losetup").is_none() {
        return Some("losetup is not installed (util-linux)".into());
    }
    None
}

/// Skips the calling test (returns from it) with a printed reason when loop devices are
/// unavailable; fails it instead when `MINFS_REQUIRE_LOOP=1`.
#[macro_export]
macro_rules! require_loop {
    () => {
        if let Some(reason) = $crate::loop_unavailable() {
            if std::env::var_os("MINFS_REQUIRE_LOOP").is_some_and(|v| v == "1") {
                panic!("MINFS_REQUIRE_LOOP=1 but loop devices are unavailable: {reason}");
            }
            $crate::print_skip(module_path!(), &reason);
            return;
        }
    };
}

/// Prints a skip notice to the process's stderr, bypassing the test harness's output capture
/// (which hides `eprintln!` of passing tests), so the reason is always visible:
/// `SKIPPED NAME (WHAT): REASON` ([`skip_line`]), NAME being the harness's name for the
/// running test, WHAT `test` (a module path, or the part of the test that is skipped).
/// scripts/test.sh counts the tests that printed one apart from the passed ones.
pub fn print_skip(test: &str, reason: &str) {
    use std::io::Write;
    let line = skip_line(std::thread::current().name(), test, reason);
    // One write, so that the line does not interleave with the harness's output.
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

/// The notice [`print_skip`] prints from a thread named `thread` (the test harness runs each
/// test on a thread named after it, e.g. `tests::it_works`): `SKIPPED NAME (WHAT): REASON`,
/// or `SKIPPED WHAT: REASON` from an unnamed thread or `main`.
pub fn skip_line(thread: Option<&str>, what: &str, reason: &str) -> String {
    match thread {
        Some(name) if name != "main" => format!("SKIPPED {name} ({what}): {reason}\n"),
        _ => format!("SKIPPED {what}: {reason}\n"),
    }
}

/// `mkfs.ext4` without a journal, as the comparison uses it.
pub fn mkfs_ext4(dev: &Path) -> io::Result<()> {
    run(Command::new("mkfs.ext4")
        .args([
            "-q",
            "-F",
            "-O",
            "^has_journal",
            "-E",
            "lazy_itable_init=0,lazy_journal_init=0,nodiscard",
        ])
        .arg(dev))
    .map(drop)
}

/// `mkfs.xfs -f -K`.
pub fn mkfs_xfs(dev: &Path) -> io::Result<()> {
    run(Command::new("mkfs.xfs").args(["-q", "-f", "-K"]).arg(dev)).map(drop)
}

/// A number from the environment variable `name`, or `default` when it is unset (benchmarks'
/// settings). A value that is not a whole number is an error naming the variable.
pub fn env_num(name: &str, default: u64) -> Result<u64, Box<dyn std::error::Error>> {
    match std::env::var(name) {
        Ok(v) => v
            .trim()
            .parse::<u64>()
            .map_err(|e| format!("{name}={v:?}: {e}").into()),
        Err(std::env::VarError::NotPresent) => Ok(default),
        Err(e) => Err(format!("{name}: {e}").into()),
    }
}

/// xorshift64*: a fixed, seeded sequence for benchmarks, without an extra crate.
pub struct XorShift(pub u64);

impl XorShift {
    /// The next value.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

/// The command prefix that runs `bin` as user `nobody` (65534) via `setpriv`, empty when this
/// process is not root (already unprivileged), or why that is not possible.
pub fn unprivileged_runner(bin: &Path) -> Result<Vec<std::ffi::OsString>, String> {
    if !is_root() {
        return Ok(Vec::new());
    }
    let setpriv = which("setpriv").ok_or("setpriv (util-linux) is not installed")?;
    let prefix: Vec<std::ffi::OsString> = vec![
        setpriv.into_os_string(),
        "--reuid=65534".into(),
        "--regid=65534".into(),
        "--clear-groups".into(),
    ];
    let out = Command::new(&prefix[0])
        .args(&prefix[1..])
        .arg(bin)
        .arg("--version")
        .output()
        .map_err(|e| format!("setpriv: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "user 65534 cannot run {}: {}",
            bin.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(prefix)
}

/// Prints a reliability suite's counts line and writes it to
/// `TMPDIR/reliability-<suite>.txt` (pass the test's `env!("CARGO_TARGET_TMPDIR")`), where
/// `scripts/test.sh` picks it up for CI's log (cargo test hides a passing test's output).
pub fn report_counts(tmpdir: &str, suite: &str, counts: &str) {
    println!("{counts}");
    let path = Path::new(tmpdir).join(format!("reliability-{suite}.txt"));
    if let Err(e) = std::fs::write(&path, format!("{suite}: {counts}\n")) {
        eprintln!("cannot write {}: {e}", path.display());
    }
}

/// Whether `prog` is installed. When it is not, prints a skip notice for `test` naming the
/// Debian `package` and returns false — or panics when `MINFS_REQUIRE_LOOP=1` (CI installs
/// the package, so a skip there would hide a lost dependency).
pub fn require_program(test: &str, prog: &str, package: &str) -> bool {
    if which(prog).is_some() {
        return true;
    }
    let reason = format!("{prog} is not installed (Debian package {package})");
    if std::env::var_os("MINFS_REQUIRE_LOOP").is_some_and(|v| v == "1") {
        panic!("MINFS_REQUIRE_LOOP=1 but {reason}");
    }
    print_skip(test, &reason);
    false
}

/// The directory of this build's binaries (the one holding `own_bin`, a test's
/// `env!("CARGO_BIN_EXE_…")`), after building each `(package, binary)` of `others` that is
/// not there yet (a package-only test run builds only its own package's binaries).
pub fn bin_dir_with(own_bin: &str, others: &[(&str, &str)]) -> PathBuf {
    let dir = Path::new(own_bin).parent().unwrap().to_path_buf();
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    for (package, bin) in others {
        if dir.join(bin).exists() {
            continue;
        }
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let status = Command::new(cargo)
            .args(["build", "-q", "-p", package, "--bin", bin])
            .env("CARGO_TARGET_DIR", dir.parent().unwrap())
            .current_dir(workspace)
            .status()
            .expect("cargo runs");
        assert!(status.success(), "building {bin} ({package}) failed");
        assert!(dir.join(bin).exists(), "no {bin} in {}", dir.display());
    }
    dir
}

/// A finished command's exit status, stdout and stderr as one text, for assertion messages.
pub fn output_text(out: &std::process::Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}\n--- stderr\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The transparent-huge-page setting in force (the bracketed word of
/// /sys/kernel/mm/transparent_hugepage/enabled, e.g. `madvise`), or `None` without THP.
pub fn thp_mode() -> Option<String> {
    let s = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").ok()?;
    let open = s.find('[')?;
    let close = s[open..].find(']')? + open;
    Some(s[open + 1..close].to_string())
}

/// One mapping of a process from /proc/PID/smaps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mapping {
    pub start: usize,
    pub len: usize,
    /// `THPeligible: 1`: the mapping can hold transparent huge pages.
    pub thp_eligible: bool,
}

/// The mappings of process `pid` (a number, or `self`), from /proc/PID/smaps.
pub fn mappings(pid: &str) -> io::Result<Vec<Mapping>> {
    let smaps = std::fs::read_to_string(format!("/proc/{pid}/smaps"))?;
    let mut out: Vec<Mapping> = Vec::new();
    for line in smaps.lines() {
        let range = line.split_once(' ').and_then(|(r, _)| r.split_once('-'));
        if let Some((a, b)) = range {
            if let (Ok(a), Ok(b)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16)) {
                out.push(Mapping {
                    start: a,
                    len: b - a,
                    thp_eligible: false,
                });
                continue;
            }
        }
        if let (Some(v), Some(last)) = (line.strip_prefix("THPeligible:"), out.last_mut()) {
            last.thp_eligible = v.trim() == "1";
        }
    }
    Ok(out)
}

/// Every file under `dir`, in no particular order (panics if a directory cannot be read: for
/// tests).
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            files.extend(files_under(&p));
        } else {
            files.push(p);
        }
    }
    files
}

#[cfg(test)]
mod tests {
    #[test]
    fn mappings_of_this_process_hold_its_stack_and_heap() {
        let on_stack = 0u64;
        let on_heap = Box::new(0u64);
        let maps = super::mappings("self").unwrap();
        for addr in [
            &on_stack as *const u64 as usize,
            &*on_heap as *const u64 as usize,
        ] {
            assert!(
                maps.iter()
                    .any(|m| (m.start..m.start + m.len).contains(&addr)),
                "{addr:#x} in none of {} mappings",
                maps.len()
            );
        }
    }

    /// The skip notice names the test as the harness does (scripts/test.sh matches the two),
    /// with one test thread as with several.
    #[test]
    fn a_skip_notice_names_the_test_as_the_harness_does() {
        let name = std::thread::current().name().map(str::to_string);
        assert_eq!(
            name.as_deref(),
            Some("tests::a_skip_notice_names_the_test_as_the_harness_does")
        );
        assert_eq!(
            super::skip_line(name.as_deref(), module_path!(), "no widget"),
            "SKIPPED tests::a_skip_notice_names_the_test_as_the_harness_does \
             (testutil::tests): no widget\n"
        );
        assert_eq!(super::skip_line(Some("main"), "x", "y"), "SKIPPED x: y\n");
        assert_eq!(super::skip_line(None, "x", "y"), "SKIPPED x: y\n");
    }
}

/// Where mount(8) and umount(8) look for helpers (util-linux's FS_SEARCH_PATH), and the other
/// sbin directories a minfs helper installed from elsewhere could be in.
pub const SBIN_DIRS: [&str; 5] = [
    "/sbin",
    "/usr/sbin",
    "/sbin/fs.d",
    "/sbin/fs",
    "/usr/local/sbin",
];

/// Serialises the tests that install into the system (helper links in /sbin, the Debian
/// package), across test binaries and processes: an exclusive `flock` on
/// `/run/lock/minfs-system-install.lock`, held until dropped.
#[derive(Debug)]
pub struct SystemInstallLock {
    _lock: nix::fcntl::Flock<std::fs::File>,
}

impl SystemInstallLock {
    /// Waits for the lock.
    pub fn acquire() -> io::Result<SystemInstallLock> {
        let dir = Path::new("/run/lock");
        std::fs::create_dir_all(dir)?;
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(dir.join("minfs-system-install.lock"))?;
        let lock = nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive)
            .map_err(|(_, e)| io::Error::from(e))?;
        Ok(SystemInstallLock { _lock: lock })
    }
}

/// What of minfs is installed on this system from elsewhere — the Debian package `minfs`, or
/// any of `helpers` in [`SBIN_DIRS`] — which a test installing into the system must not
/// touch; `None` when nothing is.
pub fn foreign_minfs_install(helpers: &[&str]) -> Option<String> {
    let status = Command::new("dpkg-query")
        .args(["-W", "-f", "${Status}", "minfs"])
        .output();
    if let Ok(out) = status {
        let status = String::from_utf8_lossy(&out.stdout);
        if out.status.success() && !status.contains("not-installed") && !status.is_empty() {
            return Some(format!(
                "the Debian package minfs is on this system ({status})"
            ));
        }
    }
    for dir in SBIN_DIRS {
        for h in helpers {
            let p = Path::new(dir).join(h);
            if p.symlink_metadata().is_ok() {
                return Some(format!("{} exists", p.display()));
            }
        }
    }
    None
}

/// Links each of `links` (full paths, e.g. `/sbin/mount.minfs`, where mount(8), umount(8),
/// fsck(8) and mkfs(8) find helpers) to `exe`; dropping it removes the links it made (only
/// while they still point to `exe`). Hold a [`SystemInstallLock`] and check
/// [`foreign_minfs_install`] first.
#[derive(Debug)]
pub struct SystemLinks {
    exe: PathBuf,
    links: Vec<PathBuf>,
}

impl SystemLinks {
    /// Makes the links; fails (removing the ones made) if any exists already.
    pub fn new(exe: &Path, links: &[PathBuf]) -> io::Result<SystemLinks> {
        let mut made = SystemLinks {
            exe: exe.to_path_buf(),
            links: Vec::new(),
        };
        for link in links {
            std::os::unix::fs::symlink(exe, link)
                .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", link.display())))?;
            made.links.push(link.clone());
        }
        Ok(made)
    }

    /// Removes the link `link` now (e.g. to let mount(8) fall back to another helper).
    pub fn remove(&mut self, link: &Path) {
        if let Some(i) = self.links.iter().position(|l| l == link) {
            self.remove_link(link);
            self.links.remove(i);
        }
    }

    fn remove_link(&self, link: &Path) {
        if std::fs::read_link(link).is_ok_and(|t| t == self.exe) {
            let _ = std::fs::remove_file(link);
        }
    }
}

impl Drop for SystemLinks {
    fn drop(&mut self) {
        for link in &self.links {
            self.remove_link(link);
        }
    }
}

/// The rows of the first Markdown table after `heading` in `text`, as cells (trimmed, backticks
/// removed), without the header row and the separator: what the format-document tests compare
/// with the code.
pub fn markdown_table_after(text: &str, heading: &str) -> Vec<Vec<String>> {
    let start = text
        .find(heading)
        .unwrap_or_else(|| panic!("no heading {heading:?}"));
    text[start..]
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2) // header and separator
        .map(|l| {
            l.trim_matches('|')
                .split('|')
                .map(|c| c.trim().trim_matches('`').to_string())
                .collect()
        })
        .collect()
}
