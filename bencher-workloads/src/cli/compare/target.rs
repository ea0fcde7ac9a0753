//! Preparing the device for a target before each run, and the commands recorded for SETUP.md.

use std::collections::BTreeMap;
use std::io;
use std::path::Path;
use std::process::Command;

use devguard::{retry_busy, FuseMount, Mount};

/// Every target `compare` knows (`--targets all`), in that order.
pub const ALL_TARGETS: [&str; 10] = [
    "minfs",
    "minfs-512",
    "minfs-fuse",
    "minfs-fuse-grow",
    "ext4",
    "ext4-prealloc",
    "ext4-defaults",
    "xfs",
    "xfs-prealloc",
    "raw",
];

/// The commands each target's preparation and run used (SETUP.md's "Commands"), with the
/// device, the mount point and the minfs binary's path written DEV, MNT and minfs; and the
/// filesystems' own descriptions after their first mkfs.
#[derive(Debug, Default)]
pub struct Recorder {
    subst: Vec<(String, String)>,
    /// Per target, its commands in order (each once).
    pub commands: BTreeMap<String, Vec<String>>,
    /// `tune2fs -l`, `xfs_info`, `minfs info` after the first mkfs, per filesystem.
    pub fs_info: BTreeMap<String, String>,
}

impl Recorder {
    /// Replaces `dev`, `mnt` and `minfs` (longest first) in what is recorded.
    pub fn new(dev: &Path, mnt: &Path, minfs: &Path) -> Recorder {
        let mut subst = vec![
            (dev.display().to_string(), "DEV".to_string()),
            (mnt.display().to_string(), "MNT".to_string()),
            (minfs.display().to_string(), "minfs".to_string()),
        ];
        subst.sort_by_key(|(a, _)| std::cmp::Reverse(a.len()));
        Recorder {
            subst,
            ..Recorder::default()
        }
    }

    /// Text with the paths replaced.
    pub fn clean(&self, text: &str) -> String {
        let mut s = text.to_string();
        for (from, to) in &self.subst {
            if !from.is_empty() {
                s = s.replace(from.as_str(), to);
            }
        }
        s
    }

    /// Remembers `line` for `target` (once).
    pub fn record(&mut self, target: &str, line: &str) {
        let line = self.clean(line);
        let list = self.commands.entry(target.to_string()).or_default();
        if !list.contains(&line) {
            list.push(line);
        }
    }

    /// Records `cmd`'s output as `fs`'s description, the first time only.
    pub fn info(&mut self, fs: &str, cmd: &mut Command) {
        if !self.fs_info.contains_key(fs) {
            if let Ok(out) = cmd.output() {
                let text = String::from_utf8_lossy(&out.stdout).into_owned();
                self.fs_info.insert(fs.to_string(), text);
            }
        }
    }
}

/// What a target's preparation made: the backend `minfs-bench run` is given, its block size,
/// and the mount to undo after the run (dropped: unmounted).
#[derive(Debug)]
pub struct Prepared {
    /// `--backend`.
    pub backend: String,
    /// `--block-size`, if any.
    pub block_size: Option<u32>,
    /// `--no-journal-copy` (`minfs@nocopy`: minfs without the copy of the Cannyls header and
    /// journal, to measure what the copy costs).
    pub no_journal_copy: bool,
    _mount: Option<Mount>,
    _fuse: Option<FuseMount>,
}

/// How the targets are made on this device.
#[derive(Debug)]
pub struct Maker<'a> {
    /// The device.
    pub dev: &'a Path,
    /// The mount point.
    pub mnt: &'a Path,
    /// The minfs binary.
    pub minfs: &'a Path,
    /// `--block-size`.
    pub block_size: Option<u32>,
    /// Give mkfs.xfs `-s size=4096` (the emulated 512e drive's physical sectors).
    pub xfs_4k_sectors: bool,
    /// Who says the busy-device retries.
    pub who: &'a str,
    /// The filesystem is on the device already (restored from its template, see
    /// `template.rs`): prepare mounts it and makes no filesystem.
    pub premade: bool,
}

/// `mkfs.ext4` without a journal and with every table written at mkfs time.
pub const EXT4_MKFS: &[&str] = &[
    "mkfs.ext4",
    "-F",
    "-q",
    "-O",
    "^has_journal",
    "-E",
    "lazy_itable_init=0,lazy_journal_init=0,nodiscard",
];
/// A typical deployment: mkfs.ext4's defaults (lazy inode-table init: ext4lazyinit zeroes the
/// inode tables in the background after mount), without the journal.
pub const EXT4_DEFAULTS_MKFS: &[&str] = &["mkfs.ext4", "-F", "-q", "-O", "^has_journal"];
/// `mkfs.xfs`.
pub const XFS_MKFS: &[&str] = &["mkfs.xfs", "-f", "-q", "-K"];

fn line(words: &[&str], dev: &Path) -> String {
    format!("{} {}", words.join(" "), dev.display())
}

impl Maker<'_> {
    fn mkfs(&self, rec: &mut Recorder, t: &str, words: &[&str]) -> io::Result<()> {
        if self.premade {
            return Ok(());
        }
        rec.record(t, &line(words, self.dev));
        let mut cmd = Command::new(words[0]);
        cmd.args(&words[1..]).arg(self.dev);
        retry_busy(&mut cmd, self.who, &mut io::stderr())?;
        Ok(())
    }

    fn minfs_mkfs(&self, rec: &mut Recorder, t: &str) -> io::Result<()> {
        let minfs = self.minfs.display().to_string();
        self.mkfs(rec, t, &[&minfs, "mkfs", "-f", "-L", "compare"])
    }

    fn mount(&self, rec: &mut Recorder, t: &str) -> io::Result<Mount> {
        rec.record(
            t,
            &format!("mount {} {}", self.dev.display(), self.mnt.display()),
        );
        Mount::on(self.dev, self.mnt, self.who, &mut io::stderr())
    }

    fn fuse(&self, rec: &mut Recorder, t: &str) -> io::Result<FuseMount> {
        rec.record(
            t,
            &format!(
                "{} mount {} {}",
                self.minfs.display(),
                self.dev.display(),
                self.mnt.display()
            ),
        );
        FuseMount::new(self.minfs, self.dev, self.mnt)
    }

    /// ext4 as long mounted: every group's block bitmap and buddy in memory. A freshly
    /// mounted ext4 reads its block bitmaps in the background (`prefetch_block_bitmaps`, on
    /// by default since Linux 5.9) and its allocator reads those of the groups it scans: on
    /// the 1 TB drive 7,452 groups in 466 flex groups, about 466 reads 2 GB apart, seconds of
    /// seeking that a deployed disk did once at boot. Reading `/proc/fs/ext4/DEV/mb_groups`
    /// loads them all, before the run (and before the drive's reset, so the run's drive
    /// starts idle).
    fn warm_ext4(&self, rec: &mut Recorder, t: &str) -> io::Result<()> {
        let name = self
            .dev
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let path = Path::new("/proc/fs/ext4").join(&name).join("mb_groups");
        rec.record(
            t,
            "cat /proc/fs/ext4/DEV/mb_groups > /dev/null  # every group's bitmaps in memory, as \
             on a long-mounted ext4",
        );
        std::fs::read(&path)
            .map(|_| ())
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))
    }

    /// Makes the device ready for target `t` (with `capacity`, the bytes the workload needs,
    /// for a file sized first).
    pub fn prepare(&self, rec: &mut Recorder, t: &str, capacity: u64) -> io::Result<Prepared> {
        let (base, at) = match t.split_once('@') {
            Some((b, n)) => (b, n.parse::<u32>().ok()),
            None => (t, None),
        };
        let no_journal_copy = base == "minfs" && t.ends_with("@nocopy");
        let mut p = Prepared {
            backend: String::new(),
            block_size: at.or(self.block_size),
            no_journal_copy,
            _mount: None,
            _fuse: None,
        };
        let file = self.mnt.join("cannyls.lusf");
        let file_s = file.display().to_string();
        match base {
            "minfs" | "minfs-512" => {
                if base == "minfs-512" {
                    p.block_size = Some(512);
                }
                self.minfs_mkfs(rec, t)?;
                rec.info("minfs", Command::new(self.minfs).arg("info").arg(self.dev));
                p.backend = format!("minfs:{}", self.dev.display());
            }
            "minfs-fuse" => {
                self.minfs_mkfs(rec, t)?;
                p._fuse = Some(self.fuse(rec, t)?);
                // FileNvm opens an existing file only when it holds a Cannyls header, so the
                // storage file is sized first (a minfs file of one extent) and taken by
                // `existing-file:`.
                rec.record(t, &format!("truncate -s CAPACITY {file_s}"));
                std::fs::OpenOptions::new()
                    .create(true)
                    .truncate(false)
                    .write(true)
                    .open(&file)
                    .and_then(|f| f.set_len(capacity))
                    .map_err(|e| io::Error::new(e.kind(), format!("{file_s}: {e}")))?;
                p.backend = format!("existing-file:{file_s}");
            }
            "minfs-fuse-grow" => {
                self.minfs_mkfs(rec, t)?;
                p._fuse = Some(self.fuse(rec, t)?);
                // FileNvm::create_if_absent makes the file; it grows as Cannyls writes past
                // its end (minfs allocates ahead and commits the size at fsync, close and
                // unmount).
                p.backend = format!("file:{file_s}");
            }
            "ext4" | "ext4-prealloc" | "ext4-defaults" => {
                let words = if base == "ext4-defaults" {
                    EXT4_DEFAULTS_MKFS
                } else {
                    EXT4_MKFS
                };
                self.mkfs(rec, t, words)?;
                p._mount = Some(self.mount(rec, t)?);
                self.warm_ext4(rec, t)?;
                let key = if base == "ext4-defaults" {
                    "ext4-defaults"
                } else {
                    "ext4"
                };
                rec.info(key, Command::new("tune2fs").arg("-l").arg(self.dev));
                p.backend = if base == "ext4-prealloc" {
                    format!("file-prealloc:{file_s}")
                } else {
                    format!("file:{file_s}")
                };
            }
            "xfs" | "xfs-prealloc" => {
                let mut words = XFS_MKFS.to_vec();
                if self.xfs_4k_sectors {
                    words.extend(["-s", "size=4096"]);
                }
                self.mkfs(rec, t, &words)?;
                p._mount = Some(self.mount(rec, t)?);
                rec.info("xfs", Command::new("xfs_info").arg(self.mnt));
                p.backend = if base == "xfs-prealloc" {
                    format!("file-prealloc:{file_s}")
                } else {
                    format!("file:{file_s}")
                };
            }
            "raw" => {
                self.mkfs(rec, t, &["wipefs", "-a", "-q"])?;
                p.backend = format!("raw:{}", self.dev.display());
            }
            other => return Err(io::Error::other(format!("unknown target '{other}'"))),
        }
        Ok(p)
    }

    /// Records the unmount that dropping `p` does.
    pub fn record_release(&self, rec: &mut Recorder, t: &str, p: &Prepared) {
        if p._fuse.is_some() {
            rec.record(
                t,
                &format!("{} umount {}", self.minfs.display(), self.mnt.display()),
            );
        } else if p._mount.is_some() {
            rec.record(t, &format!("umount {}", self.mnt.display()));
        }
    }
}

/// A target's name without `@N`.
pub fn base(t: &str) -> &str {
    t.split_once('@').map_or(t, |(b, _)| b)
}

/// Checks a `--targets` list as compare.sh did; the targets, or the error.
pub fn parse_targets(list: &str) -> Result<Vec<String>, String> {
    let list = if list == "all" {
        ALL_TARGETS.join(",")
    } else {
        list.to_string()
    };
    let targets: Vec<String> = list
        .split(',')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    if targets.is_empty() {
        return Err("--targets is empty".into());
    }
    for t in &targets {
        let b = base(t);
        if !ALL_TARGETS.contains(&b) {
            return Err(format!(
                "unknown target '{b}' (known: {})",
                ALL_TARGETS.join(" ")
            ));
        }
        if let Some((_, n)) = t.split_once('@') {
            if n == "nocopy" && b != "minfs" {
                return Err(format!(
                    "target '{t}': @nocopy (no copy of the Cannyls header and journal) is for \
                     minfs only"
                ));
            }
            if n != "512" && n != "4096" && n != "nocopy" {
                return Err(format!(
                    "target '{t}': the block size after @ is 512 or 4096 (or minfs@nocopy: \
                     minfs without the copy of the Cannyls header and journal)"
                ));
            }
            if b == "minfs-512" {
                return Err(format!(
                    "target '{t}': minfs-512 is minfs at 512; use minfs@N"
                ));
            }
        }
    }
    for (i, t) in targets.iter().enumerate() {
        if targets[..i].contains(t) {
            return Err(format!("target '{t}' is listed twice"));
        }
    }
    Ok(targets)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_lists() {
        assert_eq!(parse_targets("all").unwrap().len(), 10);
        assert_eq!(
            parse_targets("minfs,ext4@4096").unwrap(),
            ["minfs", "ext4@4096"]
        );
        assert_eq!(
            parse_targets("minfs,minfs@nocopy").unwrap(),
            ["minfs", "minfs@nocopy"]
        );
        for (bad, want) in [
            ("zfs@4096", "unknown target 'zfs'"),
            ("ext4@1024", "after @ is 512 or 4096"),
            ("xfs,xfs", "listed twice"),
            ("minfs-512@4096", "use minfs@N"),
            ("ext4@nocopy", "for minfs only"),
            ("minfs@copy", "or minfs@nocopy"),
            ("", "--targets is empty"),
        ] {
            let e = parse_targets(bad).unwrap_err();
            assert!(e.contains(want), "{bad}: {e}");
        }
    }

    #[test]
    fn recorded_commands_name_dev_and_mnt() {
        let mut r = Recorder::new(
            Path::new("/dev/loop7"),
            Path::new("/tmp/m.1"),
            Path::new("/x/release/minfs"),
        );
        r.record("ext4", "mount /dev/loop7 /tmp/m.1");
        r.record("ext4", "mount /dev/loop7 /tmp/m.1");
        r.record("minfs", "/x/release/minfs mkfs -f -L compare /dev/loop7");
        assert_eq!(r.commands["ext4"], ["mount DEV MNT"]);
        assert_eq!(r.commands["minfs"], ["minfs mkfs -f -L compare DEV"]);
    }
}
