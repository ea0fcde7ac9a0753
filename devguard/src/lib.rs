//! RAII guards for what `minfs-bench compare` and the tests make on this machine: loop
//! devices (and their queue settings), block mounts, `minfs mount` FUSE mounts, the
//! `hddsim emulate` server, a tracefs instance on its own tracefs mount,
//! fs.fuse.max_pages_limit, image files; and [`retry_busy`], a command retried while the device
//! it works on is busy for a moment.
//!
//! Every guard undoes in `Drop` what it made (and only that), so cleanup happens on an error
//! return, a panic that unwinds and an interrupted comparison alike. Dropping never fails: what
//! cannot be undone is said on stderr.

#![deny(unsafe_code)]

use std::ffi::OsStr;
use std::fmt;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// Whether a program is on PATH (also looks in the sbin directories).
pub fn which(prog: &str) -> Option<PathBuf> {
    let path = std::env::var("PATH").unwrap_or_default();
    let found = path
        .split(':')
        .chain(["/usr/sbin", "/sbin", "/usr/bin", "/bin"])
        .map(|d| Path::new(d).join(prog))
        .find(|p| p.is_file());
    found
}

/// Whether this process runs as root (effective uid 0).
pub fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// Runs a command, failing with its stderr when it exits non-zero.
pub fn run(cmd: &mut Command) -> io::Result<String> {
    let out = cmd.output()?;
    if !out.status.success() {
        return Err(io::Error::other(format!(
            "{:?} failed with {}: {}",
            cmd,
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Runs `prog args` until it succeeds (a device can stay busy for a moment after its last
/// user closes it), for up to 5 s; warns if it never does. For cleanup in `Drop`.
pub fn retry_args(prog: &str, args: &[&std::ffi::OsStr]) -> bool {
    for _ in 0..50 {
        let ok = Command::new(prog)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        if ok {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    eprintln!("warning: `{prog} {args:?}` kept failing");
    false
}

/// Where tests put images: `MINFS_TEST_DIR`, else `/var/tmp` (on disk, O_DIRECT-capable).
pub fn scratch_dir() -> PathBuf {
    std::env::var_os("MINFS_TEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/tmp"))
}

/// Whether /dev/shm is a tmpfs (memory): where the emulated drive's image goes when it has room.
pub fn shm_is_tmpfs() -> bool {
    std::fs::read_to_string("/proc/mounts").is_ok_and(|m| {
        m.lines()
            .any(|l| l.split_whitespace().nth(1) == Some("/dev/shm") && l.contains(" tmpfs "))
    })
}

/// How long [`retry_busy`] keeps trying: 30 retries, 1 s apart.
pub const BUSY_RETRIES: u32 = 30;

/// A command that failed (after any retries): what it was, its status and its stderr.
#[derive(Debug)]
#[non_exhaustive]
pub struct CommandFailed {
    /// The command line.
    pub command: String,
    /// `exit status: N`, `signal: N`, or why it could not start.
    pub status: String,
    /// Its stderr, trimmed.
    pub stderr: String,
}

impl fmt::Display for CommandFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}` failed ({})", self.command, self.status)?;
        if !self.stderr.is_empty() {
            write!(f, ": {}", self.stderr)?;
        }
        Ok(())
    }
}

impl std::error::Error for CommandFailed {}

impl From<CommandFailed> for io::Error {
    fn from(e: CommandFailed) -> io::Error {
        io::Error::other(e)
    }
}

/// A command line for messages: the program's file name and the arguments.
pub fn command_line(cmd: &Command) -> String {
    let prog = Path::new(cmd.get_program())
        .file_name()
        .unwrap_or(cmd.get_program())
        .to_string_lossy()
        .into_owned();
    let mut s = prog;
    for a in cmd.get_args() {
        s.push(' ');
        s.push_str(&a.to_string_lossy());
    }
    s
}

/// Whether a command's stderr says that the device was busy (EBUSY: another process has it
/// open for a moment, e.g. udev's or another user's probe); mke2fs says "apparently in use
/// by the system" for EBUSY.
pub fn says_busy(stderr: &str) -> bool {
    let s = stderr.to_ascii_lowercase();
    s.contains("busy") || s.contains("in use by the system")
}

/// Runs `cmd` (stdout and stderr captured); when it fails because the device is busy for a
/// moment ([`says_busy`]), runs it again, 1 s later, up to [`BUSY_RETRIES`] times, writing
/// `WHO: PROG: device busy, retrying (I): FIRST LINE OF ITS STDERR` to `log` for each retry.
/// Any other failure is returned at once.
pub fn retry_busy(
    cmd: &mut Command,
    who: &str,
    log: &mut dyn Write,
) -> Result<Output, CommandFailed> {
    retry_busy_every(cmd, who, log, Duration::from_secs(1), BUSY_RETRIES)
}

/// [`retry_busy`] with the pause between tries and the number of retries given.
pub fn retry_busy_every(
    cmd: &mut Command,
    who: &str,
    log: &mut dyn Write,
    pause: Duration,
    retries: u32,
) -> Result<Output, CommandFailed> {
    let line = command_line(cmd);
    let prog = Path::new(cmd.get_program())
        .file_name()
        .unwrap_or(cmd.get_program())
        .to_string_lossy()
        .into_owned();
    cmd.stdin(Stdio::null());
    let mut i = 0;
    loop {
        let out = cmd.output().map_err(|e| CommandFailed {
            command: line.clone(),
            status: format!("cannot start it: {e}"),
            stderr: String::new(),
        })?;
        if out.status.success() {
            return Ok(out);
        }
        let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
        if i < retries && says_busy(&stderr) {
            i += 1;
            let first = stderr.lines().next().unwrap_or("");
            let _ = writeln!(log, "{who}: {prog}: device busy, retrying ({i}): {first}");
            std::thread::sleep(pause);
            continue;
        }
        return Err(CommandFailed {
            command: line,
            status: out.status.to_string(),
            stderr,
        });
    }
}

/// Whether `path` is a mount point (`mountpoint -q`).
pub fn is_mountpoint(path: &Path) -> bool {
    Command::new("mountpoint")
        .arg("-q")
        .arg(path)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Moves this process (and the children it starts from now on) into a mount namespace of its
/// own, receiving the system's mounts (`MS_SLAVE`) but not showing its own to the system.
///
/// Why: a process elsewhere on the machine that makes a mount namespace (`unshare -m`, a
/// sandbox, a test) while one of our filesystems is mounted gets a copy of that mount, which
/// keeps the filesystem — and so the device — in use after we unmount ours ("apparently in use
/// by the system" for as long as that namespace lives). Mounts no one else can see cannot be
/// copied. Needs CAP_SYS_ADMIN, and must be called while the process has one thread.
pub fn private_mount_namespace() -> io::Result<()> {
    use nix::mount::{mount, MsFlags};
    nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNS).map_err(io::Error::from)?;
    mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_REC | MsFlags::MS_SLAVE,
        None::<&str>,
    )
    .map_err(io::Error::from)
}

/// What a loop device's queue is set to while it is held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueMode {
    /// Scheduler `none` (a loop device's scheduler outlives its detach, so an earlier user's
    /// choice would otherwise carry over).
    Plain,
    /// As Linux sets a SATA HDD's: rotational 1 and scheduler mq-deadline.
    Drive,
}

/// A loop device over a file. Dropping it puts back the queue settings it changed and
/// detaches the device (and deletes the image when it made it in its own directory).
#[derive(Debug)]
pub struct LoopDevice {
    dev: PathBuf,
    image: PathBuf,
    restore: Vec<(PathBuf, String)>,
    _dir: Option<tempfile::TempDir>,
}

impl LoopDevice {
    /// Attaches a loop device (`--direct-io=on`, the given logical sector size) over a new
    /// zero-filled image of `size` bytes.
    pub fn new(size: u64, sector_size: u32) -> io::Result<LoopDevice> {
        let dir = tempfile::Builder::new()
            .prefix("minfs-test-")
            .tempdir_in(scratch_dir())?;
        let image = dir.path().join("loop.img");
        let f = std::fs::File::create(&image)?;
        f.set_len(size)?;
        drop(f);
        let mut dev = LoopDevice::over(&image, sector_size)?;
        dev._dir = Some(dir);
        Ok(dev)
    }

    /// The `losetup` command [`LoopDevice::over`] runs.
    pub fn attach_command(image: &Path, sector_size: u32) -> Command {
        let mut cmd = Command::new("losetup");
        cmd.args(["--find", "--show", "--direct-io=on", "--sector-size"])
            .arg(sector_size.to_string())
            .arg(image);
        cmd
    }

    /// Attaches a loop device (`--direct-io=on`, the given logical sector size) over an
    /// existing file, which stays when the device is detached.
    ///
    /// `losetup --find` can lose a race with another process attaching at the same moment,
    /// or pick a device whose node devtmpfs has not made yet ("No such file or directory"):
    /// those two failures are retried for up to 5 s.
    pub fn over(image: &Path, sector_size: u32) -> io::Result<LoopDevice> {
        let attach = || run(&mut LoopDevice::attach_command(image, sector_size));
        let mut out = attach();
        for _ in 0..50 {
            match &out {
                Err(e) if is_transient_attach_failure(&e.to_string()) => {
                    std::thread::sleep(Duration::from_millis(100));
                    out = attach();
                }
                _ => break,
            }
        }
        let out = out?;
        Ok(LoopDevice {
            dev: PathBuf::from(out.trim()),
            image: image.to_path_buf(),
            restore: Vec::new(),
            _dir: None,
        })
    }

    /// The device node, e.g. `/dev/loop3`.
    pub fn path(&self) -> &Path {
        &self.dev
    }

    /// The backing file.
    pub fn image(&self) -> &Path {
        &self.image
    }

    /// `/sys/class/block/loopN/queue`.
    pub fn queue_dir(&self) -> PathBuf {
        queue_dir(&self.dev)
    }

    /// Sets the queue as `mode` says; what it was is put back when the device is dropped.
    pub fn set_queue(&mut self, mode: QueueMode) -> io::Result<()> {
        let q = self.queue_dir();
        let settings: &[(&str, &str)] = match mode {
            QueueMode::Plain => &[("scheduler", "none")],
            QueueMode::Drive => &[("rotational", "1"), ("scheduler", "mq-deadline")],
        };
        for (file, value) in settings {
            let path = q.join(file);
            let old = std::fs::read_to_string(&path)
                .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
            let old = chosen(&old);
            std::fs::write(&path, value).map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!("cannot set {} to {value}: {e}", path.display()),
                )
            })?;
            self.restore.push((path, old));
        }
        Ok(())
    }

    /// The reads and writes the device has completed since it was attached (fields 1 and 5
    /// of /sys/block/loopN/stat): requests as the device got them, after the block layer
    /// split or merged what programs asked for.
    pub fn completed_requests(&self) -> io::Result<(u64, u64)> {
        let name = self
            .dev
            .file_name()
            .ok_or_else(|| io::Error::other(format!("{}: no device name", self.dev.display())))?;
        let path = Path::new("/sys/block").join(name).join("stat");
        let text = std::fs::read_to_string(&path)?;
        let fields: Vec<u64> = text
            .split_whitespace()
            .map(|f| f.parse::<u64>())
            .collect::<Result<_, _>>()
            .map_err(|e| io::Error::other(format!("{}: {e}: {text:?}", path.display())))?;
        match fields[..] {
            [reads, _, _, _, writes, ..] => Ok((reads, writes)),
            _ => Err(io::Error::other(format!("{}: {text:?}", path.display()))),
        }
    }
}

/// `/sys/class/block/NAME/queue` of a device node.
pub fn queue_dir(dev: &Path) -> PathBuf {
    let real = std::fs::canonicalize(dev).unwrap_or_else(|_| dev.to_path_buf());
    let name = real.file_name().unwrap_or(OsStr::new(""));
    Path::new("/sys/class/block").join(name).join("queue")
}

/// The chosen value of a sysfs list (`none [mq-deadline]` → `mq-deadline`), else the text.
pub fn chosen(s: &str) -> String {
    match (s.find('['), s.find(']')) {
        (Some(a), Some(b)) if a < b => s[a + 1..b].to_string(),
        _ => s.trim().to_string(),
    }
}

/// A device's number as the block tracepoints' `dev` field has it: `MAJOR << 20 | MINOR`.
pub fn trace_dev_number(dev: &Path) -> io::Result<u64> {
    use std::os::unix::fs::MetadataExt;
    let rdev = std::fs::metadata(dev)?.rdev();
    let (major, minor) = (nix::sys::stat::major(rdev), nix::sys::stat::minor(rdev));
    Ok((major << 20) | minor)
}

/// Whether `losetup --find`'s error is one that a retry can get past: the device it found was
/// taken by another process first, or its node did not exist yet.
pub fn is_transient_attach_failure(err: &str) -> bool {
    err.contains("failed to set up loop device")
        && (err.contains("No such file or directory") || err.contains("Device or resource busy"))
}

impl Drop for LoopDevice {
    fn drop(&mut self) {
        for (path, old) in self.restore.drain(..).rev() {
            if let Err(e) = std::fs::write(&path, &old) {
                eprintln!("warning: cannot put {} back to {old}: {e}", path.display());
            }
        }
        retry_args("losetup", &["-d".as_ref(), self.dev.as_os_str()]);
    }
}

/// A mount of a block device; dropping it unmounts (retried for 5 s, then lazily).
#[derive(Debug)]
pub struct Mount {
    dir: PathBuf,
    _tmp: Option<tempfile::TempDir>,
}

impl Mount {
    /// `mount DEV DIR` on a fresh temporary directory (removed when dropped).
    pub fn new(dev: &Path) -> io::Result<Mount> {
        let dir = tempfile::Builder::new()
            .prefix("minfs-mnt-")
            .tempdir_in(scratch_dir())?;
        run(Command::new("mount").arg(dev).arg(dir.path()))?;
        Ok(Mount {
            dir: dir.path().to_path_buf(),
            _tmp: Some(dir),
        })
    }

    /// `mount DEV DIR` on an existing directory (which stays), retried while the device is
    /// busy ([`retry_busy`], retries reported to `log` as `WHO: …`).
    pub fn on(dev: &Path, dir: &Path, who: &str, log: &mut dyn Write) -> io::Result<Mount> {
        retry_busy(Command::new("mount").arg(dev).arg(dir), who, log)?;
        Ok(Mount {
            dir: dir.to_path_buf(),
            _tmp: None,
        })
    }

    /// The mount point.
    pub fn path(&self) -> &Path {
        &self.dir
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        if !retry_args("umount", &[self.dir.as_os_str()]) {
            lazy_umount(&self.dir);
        }
    }
}

/// Detaches the mount on `dir` lazily (`umount -l`) if `dir` is still a mount point, saying so:
/// what a guard does when an orderly unmount failed or never came (a test that failed half-way).
pub fn lazy_umount(dir: &Path) {
    if is_mountpoint(dir) {
        let ok = Command::new("umount")
            .arg("-l")
            .arg(dir)
            .status()
            .is_ok_and(|s| s.success());
        if ok {
            eprintln!("warning: {} was busy; detached it lazily", dir.display());
        }
    }
}

/// A `minfs mount DEV DIR` FUSE mount; dropping it runs `minfs umount DIR` (then a lazy
/// `umount -l` if that fails).
#[derive(Debug)]
pub struct FuseMount {
    minfs: PathBuf,
    dir: PathBuf,
}

impl FuseMount {
    /// `MINFS mount DEV DIR`.
    pub fn new(minfs: &Path, dev: &Path, dir: &Path) -> io::Result<FuseMount> {
        run(Command::new(minfs).arg("mount").arg(dev).arg(dir))?;
        Ok(FuseMount {
            minfs: minfs.to_path_buf(),
            dir: dir.to_path_buf(),
        })
    }

    /// The mount point.
    pub fn path(&self) -> &Path {
        &self.dir
    }
}

impl Drop for FuseMount {
    fn drop(&mut self) {
        let ok = Command::new(&self.minfs)
            .arg("umount")
            .arg(&self.dir)
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            lazy_umount(&self.dir);
        }
    }
}

/// An `hddsim emulate` server mounted on a fresh directory; dropping it stops it as
/// [`stop_emulator`] does and removes the directory.
#[derive(Debug)]
pub struct Emulator {
    hddsim: PathBuf,
    mnt: PathBuf,
    command: String,
}

impl Emulator {
    /// `HDDSIM emulate --profile PROFILE --backing IMAGE [--create-sparse] MNT`, MNT a fresh
    /// directory `emulator.XXXXXX` in `parent`.
    pub fn start(
        hddsim: &Path,
        profile: &str,
        image: &Path,
        create_sparse: bool,
        parent: &Path,
    ) -> io::Result<Emulator> {
        Emulator::start_with(hddsim, profile, image, create_sparse, parent, &[])
    }

    /// [`Emulator::start`] with more options for `hddsim emulate` (`--log FILE`, …) before
    /// the mount point.
    pub fn start_with(
        hddsim: &Path,
        profile: &str,
        image: &Path,
        create_sparse: bool,
        parent: &Path,
        extra: &[&std::ffi::OsStr],
    ) -> io::Result<Emulator> {
        let mnt = tempfile::Builder::new()
            .prefix("emulator.")
            .tempdir_in(parent)?
            .keep();
        let mut cmd = Command::new(hddsim);
        cmd.args(["emulate", "--profile", profile, "--backing"])
            .arg(image);
        if create_sparse {
            cmd.arg("--create-sparse");
        }
        cmd.args(extra).arg(&mnt);
        let command = command_line(&cmd);
        if let Err(e) = run(cmd.stdout(Stdio::null())) {
            let _ = std::fs::remove_dir(&mnt);
            return Err(e);
        }
        Ok(Emulator {
            hddsim: hddsim.to_path_buf(),
            mnt,
            command,
        })
    }

    /// The mount point.
    pub fn path(&self) -> &Path {
        &self.mnt
    }

    /// The drive: `MNT/disk`.
    pub fn disk(&self) -> PathBuf {
        self.mnt.join("disk")
    }

    /// The emulator's statistics: `MNT/stats.json`.
    pub fn stats(&self) -> PathBuf {
        self.mnt.join("stats.json")
    }

    /// The command that started it (`hddsim emulate …`).
    pub fn command(&self) -> &str {
        &self.command
    }

    /// Puts the modelled drive back as at power-on (`reset` written to `MNT/control`): its
    /// cache empty, its head at sector 0. The drive must be idle with a clean cache (flush
    /// it first, `sync MNT/disk`); refused otherwise (EBUSY), and by an emulator older than
    /// the control file (ENOENT).
    pub fn reset(&self) -> io::Result<()> {
        self.control("reset")
    }

    /// Has the emulator write the block events of the loop devices over its drive to `path`
    /// (`trace PATH` to `MNT/control`): a trace for `hddsim replay` with the timestamps the
    /// modelled arrivals came from. Refused (EOPNOTSUPP) where the emulator does not record
    /// the kernel's events (not root, no tracefs).
    pub fn trace_to(&self, path: &Path) -> io::Result<()> {
        self.control(&format!("trace {}", path.display()))
    }

    /// Stops [`Emulator::trace_to`]'s trace once everything recorded so far is written.
    pub fn trace_off(&self) -> io::Result<()> {
        self.control("trace off")
    }

    /// Writes `command` to `MNT/control`.
    fn control(&self, command: &str) -> io::Result<()> {
        let path = self.mnt.join("control");
        let mut f = std::fs::OpenOptions::new().write(true).open(&path)?;
        f.write_all(format!("{command}\n").as_bytes())
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {command}: {e}", path.display())))
    }
}

/// Unmounts the `hddsim emulate` server at `mnt` and removes the directory: `hddsim umount`
/// retried for up to 5 s (the loop device may hold the emulator's file a moment after it was
/// detached); if it is still mounted then, it is detached lazily (`umount -l`) and the
/// result is false.
pub fn stop_emulator(hddsim: &Path, mnt: &Path) -> bool {
    for _ in 0..10 {
        if !is_mountpoint(mnt) {
            break;
        }
        let ok = Command::new(hddsim)
            .arg("umount")
            .arg(mnt)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if ok {
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    let mut clean = true;
    if is_mountpoint(mnt) {
        let _ = Command::new("umount").arg("-l").arg(mnt).status();
        clean = false;
    }
    let _ = std::fs::remove_dir(mnt);
    clean
}

impl Drop for Emulator {
    fn drop(&mut self) {
        if !stop_emulator(&self.hddsim, &self.mnt) {
            eprintln!("warning: the emulator was still busy; detached it lazily");
        }
    }
}

/// A file this process made (an image); dropping it deletes the file unless kept.
#[derive(Debug)]
pub struct ImageFile {
    path: PathBuf,
    keep: bool,
}

impl ImageFile {
    /// Takes charge of `path` (which need not exist yet).
    pub fn new(path: PathBuf, keep: bool) -> ImageFile {
        ImageFile { path, keep }
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for ImageFile {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// The data segments of `file` (`SEEK_DATA` to the next `SEEK_HOLE`), in order, as byte
/// ranges `[start, end)`: what a sparse file holds; the rest reads as zeros (unwritten extents
/// included).
fn data_segments(file: &std::fs::File) -> io::Result<Vec<(u64, u64)>> {
    use nix::unistd::{lseek, Whence};
    use std::os::fd::AsRawFd;
    let len = file.metadata()?.len();
    let fd = file.as_raw_fd();
    let mut segments = Vec::new();
    let mut pos: i64 = 0;
    while (pos as u64) < len {
        let start = match lseek(fd, pos, Whence::SeekData) {
            Ok(p) => p,
            // No data after `pos`.
            Err(nix::errno::Errno::ENXIO) => break,
            Err(e) => return Err(e.into()),
        };
        let end = lseek(fd, start, Whence::SeekHole)?;
        segments.push((start as u64, end as u64));
        pos = end;
    }
    Ok(segments)
}

/// Writes the non-zero 4 KiB blocks of `src` to `dst` at the same offsets and leaves `dst`'s
/// other blocks as they are (a caller that wants `dst` to equal `src` punches it to zeros
/// first); returns the bytes written. Only `src`'s data segments are read (`SEEK_DATA`,
/// `SEEK_HOLE`), so a sparse terabyte image with a few megabytes of data copies in
/// milliseconds. `dst` must be at least as long as `src`'s data.
pub fn copy_nonzero(src: &Path, dst: &Path) -> io::Result<u64> {
    use std::os::unix::fs::FileExt;
    const BLOCK: usize = 4096;
    const CHUNK: usize = 1 << 20;
    let named = |p: &Path, e: io::Error| io::Error::new(e.kind(), format!("{}: {e}", p.display()));
    let input = std::fs::File::open(src).map_err(|e| named(src, e))?;
    let output = std::fs::OpenOptions::new()
        .write(true)
        .open(dst)
        .map_err(|e| named(dst, e))?;
    let mut written = 0u64;
    let mut buf = vec![0u8; CHUNK];
    for (start, end) in data_segments(&input).map_err(|e| named(src, e))? {
        let mut at = start;
        while at < end {
            let n = (end - at).min(CHUNK as u64) as usize;
            input
                .read_exact_at(&mut buf[..n], at)
                .map_err(|e| named(src, e))?;
            // Runs of non-zero blocks, each one write.
            let mut i = 0;
            while i < n {
                let block = |i: usize| &buf[i..(i + BLOCK).min(n)];
                if block(i).iter().all(|&b| b == 0) {
                    i += BLOCK;
                    continue;
                }
                let run_start = i;
                while i < n && !block(i).iter().all(|&b| b == 0) {
                    i += BLOCK;
                }
                let run_end = i.min(n);
                output
                    .write_all_at(&buf[run_start..run_end], at + run_start as u64)
                    .map_err(|e| named(dst, e))?;
                written += (run_end - run_start) as u64;
            }
            at += n as u64;
        }
    }
    output.sync_data().map_err(|e| named(dst, e))?;
    Ok(written)
}

/// Gives back the space of every range of `path` that reads as a hole (`SEEK_HOLE`) but holds
/// allocated blocks, by punching it; returns the ranges' bytes. mke2fs zeroes an image file's
/// inode tables with `FALLOC_FL_ZERO_RANGE`, which on ext4 allocates unwritten extents: a
/// template of the 1 TB drive then reads as 15 MB of data but holds 15 GB of the host's disk.
pub fn release_holes(path: &Path) -> io::Result<u64> {
    use nix::fcntl::{fallocate, FallocateFlags};
    use std::os::fd::AsRawFd;
    let named = |e: io::Error| io::Error::new(e.kind(), format!("{}: {e}", path.display()));
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(named)?;
    let len = file.metadata().map_err(named)?.len();
    let mut segments = data_segments(&file).map_err(named)?;
    // The gaps between the data segments, the last one up to the end.
    segments.push((len, len));
    let mut released = 0u64;
    let mut hole = 0u64;
    for (start, end) in segments {
        if start > hole {
            fallocate(
                file.as_raw_fd(),
                FallocateFlags::FALLOC_FL_PUNCH_HOLE | FallocateFlags::FALLOC_FL_KEEP_SIZE,
                hole as i64,
                (start - hole) as i64,
            )
            .map_err(|e| named(e.into()))?;
            released += start - hole;
        }
        hole = end;
    }
    Ok(released)
}

/// fs.fuse.max_pages_limit as it was: `hddsim emulate` and `minfs mount` raise it (so that a
/// Cannyls lump is one FUSE request); it is read when a FUSE connection starts, so once this
/// process's mounts are gone it is put back. Dropping it puts it back and says so.
#[derive(Debug)]
pub struct MaxPagesLimit {
    before: Option<String>,
}

/// Where fs.fuse.max_pages_limit is.
pub const MAX_PAGES_PATH: &str = "/proc/sys/fs/fuse/max_pages_limit";

impl MaxPagesLimit {
    /// Remembers the value now.
    pub fn save() -> MaxPagesLimit {
        MaxPagesLimit {
            before: std::fs::read_to_string(MAX_PAGES_PATH)
                .ok()
                .map(|s| s.trim().to_string()),
        }
    }

    /// The value when it was saved, if the file exists.
    pub fn before(&self) -> Option<&str> {
        self.before.as_deref()
    }
}

impl Drop for MaxPagesLimit {
    fn drop(&mut self) {
        let Some(before) = &self.before else { return };
        let now = std::fs::read_to_string(MAX_PAGES_PATH)
            .map(|s| s.trim().to_string())
            .unwrap_or_default();
        if !now.is_empty() && &now != before && std::fs::write(MAX_PAGES_PATH, before).is_ok() {
            eprintln!("put fs.fuse.max_pages_limit back from {now} to {before}");
        }
    }
}

/// A virtual machine's guest halt polling (the `haltpoll` cpuidle driver's
/// `guest_halt_poll_ns`), raised while the emulated drive runs and put back when dropped.
///
/// An idle vCPU halts, and waking it takes the hypervisor tens of microseconds: on the 2-vCPU
/// VM a request of the emulated drive reached its server 40–60 µs after the kernel queued it,
/// so a 4 KiB write into the drive's cache (0.1 ms modelled) took 0.17 ms. A vCPU that polls
/// for up to `ns` before halting wakes at once (the same request then within 5 µs of the
/// model), at the cost of the host CPU it burns polling. Nothing where the driver is not
/// there (bare metal, other hypervisors' guests).
#[derive(Debug)]
pub struct GuestHaltPoll {
    before: Option<String>,
    now: Option<String>,
}

/// Where the haltpoll driver's polling limit is.
pub const HALT_POLL_PATH: &str = "/sys/module/haltpoll/parameters/guest_halt_poll_ns";

impl GuestHaltPoll {
    /// Raises the polling limit to `ns` where it is lower (and the driver is there).
    pub fn raise(ns: u64) -> GuestHaltPoll {
        let before = std::fs::read_to_string(HALT_POLL_PATH)
            .ok()
            .map(|s| s.trim().to_string());
        let now = match &before {
            Some(b) if b.parse::<u64>().is_ok_and(|b| b < ns) => {
                std::fs::write(HALT_POLL_PATH, ns.to_string())
                    .ok()
                    .map(|()| ns.to_string())
            }
            _ => None,
        };
        GuestHaltPoll { before, now }
    }

    /// The limit before (`None`: no haltpoll driver here) and the one set (`None`: left as it
    /// was).
    pub fn values(&self) -> (Option<&str>, Option<&str>) {
        (self.before.as_deref(), self.now.as_deref())
    }
}

impl Drop for GuestHaltPoll {
    fn drop(&mut self) {
        if let (Some(before), Some(_)) = (&self.before, &self.now) {
            let _ = std::fs::write(HALT_POLL_PATH, before);
        }
    }
}

/// A tracefs instance recording some events (clock `mono`), on a tracefs mount of its own
/// when one can be made (a mount at /sys/kernel/tracing may be unmounted by another program
/// while this one uses it; every mount of tracefs shows the same instances): one device's
/// block requests ([`Tracing::start`]) or any events ([`Tracing::start_events`]). Dropping
/// it turns the events off, removes the instance and unmounts its tracefs.
#[derive(Debug)]
pub struct Tracing {
    instance: PathBuf,
    own_mount: Option<PathBuf>,
    /// The events enabled (`SYSTEM/EVENT`), turned off on drop.
    events: Vec<String>,
}

/// Whether the kernel offers tracefs.
pub fn tracefs_available() -> bool {
    std::fs::read_to_string("/proc/filesystems").is_ok_and(|s| {
        s.lines()
            .any(|l| l.split_whitespace().last() == Some("tracefs"))
    })
}

impl Tracing {
    /// Mounts tracefs on a fresh directory `PREFIX.XXXXXX` in `mount_parent` (else uses
    /// /sys/kernel/tracing), makes the instance `name` with a per-CPU buffer of `buffer_kb`
    /// and the block events filtered to device number `dev` ([`trace_dev_number`]), off.
    /// `Ok(None)` when tracefs has no instances or block tracepoints here.
    pub fn start(
        mount_parent: &Path,
        prefix: &str,
        name: &str,
        dev: u64,
        buffer_kb: u64,
    ) -> io::Result<Option<Tracing>> {
        let filter = format!("dev == {dev}");
        Tracing::start_events(
            mount_parent,
            prefix,
            name,
            &[
                ("block/block_rq_issue", filter.as_str()),
                ("block/block_rq_complete", filter.as_str()),
            ],
            buffer_kb,
        )
    }

    /// [`Tracing::start`] for any `events`: `(SYSTEM/EVENT, filter)` (an empty filter: every
    /// event), recording off. `Ok(None)` when tracefs has no instances or one of the events
    /// here.
    pub fn start_events(
        mount_parent: &Path,
        prefix: &str,
        name: &str,
        events: &[(&str, &str)],
        buffer_kb: u64,
    ) -> io::Result<Option<Tracing>> {
        let mut own_mount = None;
        let mut root = PathBuf::from("/sys/kernel/tracing");
        if tracefs_available() {
            let dir = tempfile::Builder::new()
                .prefix(&format!("{prefix}."))
                .tempdir_in(mount_parent)?
                .keep();
            let ok = Command::new("mount")
                .args(["-t", "tracefs", "nodev"])
                .arg(&dir)
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if ok {
                root = dir.clone();
                own_mount = Some(dir);
            } else {
                let _ = std::fs::remove_dir(&dir);
            }
        }
        let mut t = Tracing {
            instance: root.join("instances").join(name),
            own_mount,
            events: Vec::new(),
        };
        let missing = events
            .iter()
            .any(|(ev, _)| !root.join("events").join(ev).is_dir());
        if missing || !root.join("instances").is_dir() {
            t.instance = PathBuf::new();
            return Ok(None);
        }
        std::fs::create_dir(&t.instance).map_err(|e| {
            let p = t.instance.clone();
            t.instance = PathBuf::new();
            io::Error::new(e.kind(), format!("{}: {e}", p.display()))
        })?;
        t.write("tracing_on", "0")?;
        t.write("trace_clock", "mono")?;
        t.write("buffer_size_kb", &buffer_kb.to_string())?;
        for (ev, filter) in events {
            if !filter.is_empty() {
                t.write(&format!("events/{ev}/filter"), filter)?;
            }
            t.events.push(ev.to_string());
            t.write(&format!("events/{ev}/enable"), "1")?;
        }
        Ok(Some(t))
    }

    fn write(&self, file: &str, value: &str) -> io::Result<()> {
        let p = self.instance.join(file);
        std::fs::write(&p, value)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", p.display())))
    }

    /// The instance's directory.
    pub fn instance(&self) -> &Path {
        &self.instance
    }

    /// Clears the buffer and starts recording.
    pub fn on(&self) -> io::Result<()> {
        self.write("trace", "")?;
        self.write("tracing_on", "1")
    }

    /// Stops recording.
    pub fn off(&self) -> io::Result<()> {
        self.write("tracing_on", "0")
    }

    /// Writes the recorded lines (comments dropped) to `dest`; returns the events lost to a
    /// full buffer (the per-CPU `overrun` counts).
    pub fn save(&self, dest: &Path) -> io::Result<u64> {
        let text = std::fs::read(self.instance.join("trace"))?;
        let mut f = io::BufWriter::new(std::fs::File::create(dest)?);
        for line in text.split(|&b| b == b'\n') {
            if line.is_empty() || line.starts_with(b"#") {
                continue;
            }
            f.write_all(line)?;
            f.write_all(b"\n")?;
        }
        f.flush()?;
        let mut overrun = 0;
        if let Ok(cpus) = std::fs::read_dir(self.instance.join("per_cpu")) {
            for cpu in cpus.flatten() {
                let stats = std::fs::read_to_string(cpu.path().join("stats")).unwrap_or_default();
                for l in stats.lines() {
                    if let Some(v) = l.strip_prefix("overrun:") {
                        overrun += v.trim().parse::<u64>().unwrap_or(0);
                    }
                }
            }
        }
        Ok(overrun)
    }
}

impl Drop for Tracing {
    fn drop(&mut self) {
        if !self.instance.as_os_str().is_empty() && self.instance.is_dir() {
            let _ = self.write("tracing_on", "0");
            for ev in &self.events {
                let _ = self.write(&format!("events/{ev}/enable"), "0");
            }
            if let Err(e) = std::fs::remove_dir(&self.instance) {
                eprintln!(
                    "warning: could not remove tracefs instance {}: {e}",
                    self.instance.display()
                );
            }
        }
        if let Some(dir) = &self.own_mount {
            if !retry_args("umount", &[dir.as_os_str()]) {
                lazy_umount(dir);
            }
            let _ = std::fs::remove_dir(dir);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_nonzero_writes_the_data_blocks_and_nothing_else() {
        use std::os::unix::fs::FileExt;
        let dir = tempfile::tempdir().unwrap();
        let (src, dst) = (dir.path().join("src"), dir.path().join("dst"));
        let f = std::fs::File::create(&src).unwrap();
        f.set_len(64 << 20).unwrap();
        // Data in two places, one 4 KiB block of zeros written between two of data, and a
        // partial last block.
        f.write_all_at(&[1u8; 8192], 4096).unwrap();
        f.write_all_at(&[0u8; 4096], 12288).unwrap();
        f.write_all_at(&[2u8; 4096], 16384).unwrap();
        f.write_all_at(&[3u8; 100], (40 << 20) + 7).unwrap();
        drop(f);
        let g = std::fs::File::create(&dst).unwrap();
        g.set_len(64 << 20).unwrap();
        // What the destination held elsewhere stays.
        g.write_all_at(&[9u8; 4096], 1 << 20).unwrap();
        drop(g);
        let n = copy_nonzero(&src, &dst).unwrap();
        assert_eq!(n, 8192 + 4096 + 4096, "the zero block is not written");
        let out = std::fs::read(&dst).unwrap();
        let mut want = vec![0u8; 64 << 20];
        want[4096..12288].fill(1);
        want[16384..20480].fill(2);
        want[(40 << 20) + 7..(40 << 20) + 107].fill(3);
        want[1 << 20..(1 << 20) + 4096].fill(9);
        assert!(out == want, "the copy differs");
    }

    /// Bug: the ext4 template of the 1 TB drive held 15 GB of the host's disk (mke2fs zeroes
    /// inode tables with FALLOC_FL_ZERO_RANGE: unwritten extents) and a compare on a host
    /// with less space stopped in mkfs.ext4 with ENOSPC.
    #[test]
    fn zeroed_ranges_of_a_template_give_their_space_back() {
        use nix::fcntl::{fallocate, FallocateFlags};
        use std::os::fd::AsRawFd;
        use std::os::unix::fs::{FileExt, MetadataExt};
        let dir = tempfile::tempdir_in(scratch_dir()).unwrap();
        let path = dir.path().join("tpl");
        let f = std::fs::OpenOptions::new()
            .create(true)
            .truncate(true)
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        f.set_len(256 << 20).unwrap();
        if fallocate(
            f.as_raw_fd(),
            FallocateFlags::FALLOC_FL_ZERO_RANGE,
            1 << 20,
            128 << 20,
        )
        .is_err()
        {
            eprintln!(
                "SKIPPED zeroed_ranges_of_a_template_give_their_space_back: {} does not \
                 support FALLOC_FL_ZERO_RANGE",
                scratch_dir().display()
            );
            return;
        }
        f.write_all_at(&[7u8; 4096], 0).unwrap();
        f.write_all_at(&[8u8; 8192], 200 << 20).unwrap();
        f.sync_all().unwrap();
        let held = |p: &Path| std::fs::metadata(p).unwrap().blocks() * 512;
        assert!(held(&path) >= 128 << 20, "the zeroed range is allocated");
        let released = release_holes(&path).unwrap();
        assert!(released >= 128 << 20, "released {released}");
        assert!(held(&path) < 1 << 20, "still held: {}", held(&path));
        let mut b = vec![0u8; 8192];
        f.read_exact_at(&mut b[..4096], 0).unwrap();
        assert!(b[..4096].iter().all(|&x| x == 7));
        f.read_exact_at(&mut b, 200 << 20).unwrap();
        assert!(b.iter().all(|&x| x == 8));
    }

    #[test]
    fn only_races_of_losetup_find_are_retried() {
        let e = "\"losetup\" failed with exit status: 1: losetup: /var/tmp/x.img: failed to set up loop device";
        assert!(is_transient_attach_failure(&format!(
            "{e}: No such file or directory"
        )));
        assert!(is_transient_attach_failure(&format!(
            "{e}: Device or resource busy"
        )));
        assert!(!is_transient_attach_failure(&format!(
            "{e}: Invalid argument"
        )));
        assert!(!is_transient_attach_failure(
            "losetup: /nonexistent.img: No such file or directory"
        ));
    }

    #[test]
    fn the_chosen_entry_of_a_sysfs_list() {
        assert_eq!(chosen("none [mq-deadline] kyber\n"), "mq-deadline");
        assert_eq!(chosen("[none] mq-deadline\n"), "none");
        assert_eq!(chosen("1\n"), "1");
    }

    /// A fake command that fails `fails` times with `message` on stderr, then succeeds; the
    /// number of its runs is counted in a file.
    fn fake(dir: &Path, fails: u32, message: &str) -> (Command, PathBuf) {
        let count = dir.join("count");
        let script = format!(
            "n=$(cat {c} 2>/dev/null || echo 0); n=$((n + 1)); echo $n > {c}; \
             if [ $n -le {fails} ]; then echo '{message}' >&2; echo 'more' >&2; exit 1; fi; \
             echo ok",
            c = count.display()
        );
        let mut cmd = Command::new("sh");
        cmd.args(["-c", &script]);
        (cmd, count)
    }

    fn runs(count: &Path) -> u32 {
        std::fs::read_to_string(count)
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }

    #[test]
    fn a_busy_device_is_retried_and_each_retry_is_said() {
        let dir = tempfile::tempdir().unwrap();
        let (mut cmd, count) = fake(
            dir.path(),
            2,
            "mkfs.xfs: cannot open /dev/loop9: Device or resource busy",
        );
        let mut log = Vec::new();
        let out =
            retry_busy_every(&mut cmd, "test", &mut log, Duration::from_millis(10), 30).unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "ok\n");
        assert_eq!(runs(&count), 3);
        let log = String::from_utf8(log).unwrap();
        assert_eq!(
            log,
            "test: sh: device busy, retrying (1): mkfs.xfs: cannot open /dev/loop9: Device or resource busy\n\
             test: sh: device busy, retrying (2): mkfs.xfs: cannot open /dev/loop9: Device or resource busy\n"
        );
        // mke2fs's words for EBUSY.
        let (mut cmd, count) = fake(
            dir.path(),
            1,
            "/dev/loop9 is apparently in use by the system; will not make a filesystem here!",
        );
        std::fs::remove_file(&count).unwrap();
        let mut log = Vec::new();
        retry_busy_every(&mut cmd, "test", &mut log, Duration::from_millis(10), 30).unwrap();
        assert_eq!(runs(&count), 2);
    }

    #[test]
    fn another_failure_is_not_retried() {
        let dir = tempfile::tempdir().unwrap();
        let (mut cmd, count) = fake(dir.path(), 5, "mkfs.xfs: no such device");
        let mut log = Vec::new();
        let e = retry_busy_every(&mut cmd, "test", &mut log, Duration::from_millis(10), 30)
            .unwrap_err();
        assert_eq!(runs(&count), 1);
        assert!(log.is_empty());
        assert!(e.to_string().contains("no such device"), "{e}");
        assert!(e.to_string().starts_with("`sh -c "), "{e}");
    }

    #[test]
    fn a_device_busy_for_too_long_fails_after_the_retries() {
        let dir = tempfile::tempdir().unwrap();
        let (mut cmd, count) = fake(dir.path(), 100, "Device or resource busy");
        let mut log = Vec::new();
        let e =
            retry_busy_every(&mut cmd, "test", &mut log, Duration::from_millis(1), 3).unwrap_err();
        assert_eq!(runs(&count), 4);
        assert!(e.to_string().contains("busy"), "{e}");
    }
}

/// The example of this crate's README, compiled and run as a doc-test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
