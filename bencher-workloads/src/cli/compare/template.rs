//! On the emulated drive each target's filesystem is made once per comparison, on a sparse
//! image of the drive's size (its *template*), and restored onto the drive's image before
//! every run, outside the model: the run then starts on a drive as deployed — mkfs long done,
//! the drive idle with its cache empty — not on one still busy with mkfs's writes, and
//! however large the drive, no run pays for an mkfs in the drive's time (mkfs.ext4 writes
//! 15.6 GB of inode tables on the 1 TB drive: about two minutes of modelled time per run).
//!
//! mkfs.ext4 and mkfs.xfs make their template on the image file itself (mkfs.ext4 told that
//! the file is zeros, `assume_storage_prezeroed=1`, so that it neither writes nor allocates
//! 15 GB of them; the same layout as the target's own mkfs on a block device of that size,
//! which `a_template_made_on_a_file_has_the_layout_mkfs_gives_a_device` compares); `minfs
//! mkfs` on a loop device over it (on a file it preallocates). What mkfs left allocated but
//! reading as holes is given back ([`devguard::release_holes`]). A restore punches the drive's image to zeros, then writes the
//! template's non-zero blocks ([`devguard::copy_nonzero`]).

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;

use devguard::{ImageFile, LoopDevice};

use super::target::{self, Maker, Recorder};

/// The filesystem a target's run starts on, which its template holds: `None` for `raw` (the
/// bare device, all zeros).
pub fn fs_of(t: &str) -> Option<&'static str> {
    match target::base(t) {
        "minfs" | "minfs-512" | "minfs-fuse" | "minfs-fuse-grow" => Some("minfs"),
        "ext4" | "ext4-prealloc" => Some("ext4"),
        "ext4-defaults" => Some("ext4-defaults"),
        "xfs" | "xfs-prealloc" => Some("xfs"),
        _ => None,
    }
}

/// The templates made so far, in `dir`, for a drive of `size` bytes.
#[derive(Debug)]
pub struct Templates {
    dir: PathBuf,
    size: u64,
    sector_size: u32,
    /// The comparison's targets (`xfs@4096` too): each gets its filesystem's mkfs recorded.
    targets: Vec<String>,
    made: BTreeMap<&'static str, ImageFile>,
}

impl Templates {
    /// None made yet; they will be sparse files in `dir` of `size` bytes, loop devices over
    /// them of `sector_size`-byte sectors, for the comparison's `targets`.
    pub fn new(dir: &Path, size: u64, sector_size: u32, targets: &[String]) -> Templates {
        Templates {
            dir: dir.to_path_buf(),
            size,
            sector_size,
            targets: targets.to_vec(),
            made: BTreeMap::new(),
        }
    }

    /// Writes target `t`'s filesystem onto `image` (already punched to zeros), making its
    /// template first if this is its first run; records the commands for SETUP.md. Returns
    /// the bytes written.
    pub fn restore(
        &mut self,
        maker: &Maker<'_>,
        rec: &mut Recorder,
        t: &str,
        image: &Path,
    ) -> io::Result<u64> {
        let Some(fs) = fs_of(t) else {
            return Ok(0);
        };
        if !self.made.contains_key(fs) {
            let tpl = self.make(maker, rec, fs)?;
            self.made.insert(fs, tpl);
        }
        let tpl = self.made[fs].path().to_path_buf();
        rec.record(
            t,
            &format!("copy the non-zero blocks of TEMPLATE-{fs} to IMAGE (not through the drive)"),
        );
        devguard::copy_nonzero(&tpl, image)
    }

    /// Makes filesystem `fs`'s template.
    fn make(
        &self,
        maker: &Maker<'_>,
        rec: &mut Recorder,
        fs: &'static str,
    ) -> io::Result<ImageFile> {
        let path = self
            .dir
            .join(format!("template-{fs}-{}.img", std::process::id()));
        let tpl = ImageFile::new(path.clone(), false);
        let f = std::fs::File::create(&path)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        f.set_len(self.size)?;
        drop(f);
        let shown = format!("TEMPLATE-{fs}");
        let record_for = |rec: &mut Recorder, line: &str| {
            for t in &self.targets {
                if fs_of(t) == Some(fs) {
                    rec.record(t, line);
                }
            }
        };
        record_for(
            rec,
            &format!(
                "truncate -s {} {shown}  # once per comparison: a sparse image of the drive's size",
                self.size
            ),
        );
        match fs {
            "minfs" => {
                let dev = LoopDevice::over(&path, self.sector_size)?;
                let minfs = maker.minfs.display().to_string();
                let words = [minfs.as_str(), "mkfs", "-f", "-L", "compare"];
                record_for(
                    rec,
                    &format!("minfs mkfs -f -L compare LOOP  # LOOP: a loop device over {shown}"),
                );
                run(&words, dev.path())?;
                rec.info(
                    "minfs",
                    Command::new(maker.minfs).arg("info").arg(dev.path()),
                );
            }
            "ext4" | "ext4-defaults" | "xfs" => {
                let words = mkfs_words(fs, maker.xfs_4k_sectors);
                let words: Vec<&str> = words.iter().map(String::as_str).collect();
                record_for(rec, &format!("{} {shown}", words.join(" ")));
                run(&words, &path)?;
                // XFS's is `xfs_info` of the mounted filesystem, recorded at its mount.
                if fs != "xfs" {
                    rec.info(fs, Command::new("tune2fs").arg("-l").arg(&path));
                }
            }
            _ => {}
        }
        // Zeros mkfs wrote as allocated-but-unwritten extents (mke2fs's inode tables on an
        // ext4 host: 15 GB for the 1 TB drive) go back to the host.
        devguard::release_holes(&path)?;
        Ok(tpl)
    }
}

/// The mkfs command (without its device) that makes filesystem `fs`'s template, a fresh
/// sparse file: the target's own mkfs (`xfs_4k_sectors`: with `-s size=4096`), ext4's with
/// `assume_storage_prezeroed=1` where mke2fs has it — the file is all zeros, so mke2fs need not
/// zero its inode tables (on an ext4 host it would allocate 15 GB for the 1 TB drive with
/// FALLOC_FL_ZERO_RANGE, more than a CI host may have free) and marks them zeroed as it does
/// after zeroing them: the same filesystem.
fn mkfs_words(fs: &str, xfs_4k_sectors: bool) -> Vec<String> {
    let words: &[&str] = match fs {
        "ext4" => target::EXT4_MKFS,
        "ext4-defaults" => target::EXT4_DEFAULTS_MKFS,
        _ => target::XFS_MKFS,
    };
    let mut words: Vec<String> = words.iter().map(|w| w.to_string()).collect();
    if fs == "ext4" && mke2fs_knows_prezeroed() {
        if let Some(e) = words.iter_mut().find(|w| w.starts_with("lazy_itable_init")) {
            e.push_str(",assume_storage_prezeroed=1");
        }
    }
    if fs == "xfs" && xfs_4k_sectors {
        words.extend(["-s".to_string(), "size=4096".to_string()]);
    }
    words
}

/// Whether this mke2fs takes `-E assume_storage_prezeroed=1` (e2fsprogs 1.47.0 and later).
fn mke2fs_knows_prezeroed() -> bool {
    let Ok(out) = Command::new("mke2fs").arg("-V").output() else {
        return false;
    };
    let text =
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find_map(|l| l.strip_prefix("mke2fs "))
        .and_then(|v| v.split_whitespace().next())
        .is_some_and(|v| e2fsprogs_at_least(v, (1, 47)))
}

/// Whether version `v` (`1.47.0`) is at least `major.minor`.
fn e2fsprogs_at_least(v: &str, (major, minor): (u32, u32)) -> bool {
    let mut parts = v.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let (a, b) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (a, b) >= (major, minor)
}

/// Runs `words DEV`, failing with its output.
fn run(words: &[&str], dev: &Path) -> io::Result<()> {
    let mut cmd = Command::new(words[0]);
    cmd.args(&words[1..]).arg(dev);
    devguard::run(&mut cmd).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `dumpe2fs -h` / `xfs_db`'s superblock say of the filesystem on `dev`, without
    /// what differs on every mkfs (UUIDs, times, checksums, the hash seed).
    fn layout(fs: &str, dev: &Path) -> String {
        let out = match fs {
            "ext4" => devguard::run(Command::new("dumpe2fs").arg("-h").arg(dev)),
            _ => devguard::run(
                Command::new("xfs_db")
                    .args(["-r", "-c", "sb 0", "-c", "print"])
                    .arg(dev),
            ),
        }
        .unwrap();
        out.lines()
            .filter(|l| {
                let l = l.to_ascii_lowercase();
                ![
                    "uuid",
                    "time",
                    "created",
                    "checksum",
                    "crc",
                    "hash seed",
                    "mount",
                    "write",
                ]
                .iter()
                .any(|w| l.contains(w))
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn mke2fs_versions_before_1_47_do_not_get_assume_storage_prezeroed() {
        assert!(e2fsprogs_at_least("1.47.0", (1, 47)));
        assert!(e2fsprogs_at_least("1.47.2", (1, 47)));
        assert!(e2fsprogs_at_least("2.0", (1, 47)));
        assert!(!e2fsprogs_at_least("1.46.5", (1, 47)));
        assert!(!e2fsprogs_at_least("garbage", (1, 47)));
    }

    /// The templates of ext4 and XFS are made on the image file (on a loop device over tmpfs
    /// mkfs.ext4 writes 15.6 GB of zeros for the 1 TB drive), ext4's told the file is zeros.
    /// The layout is the one the target's own mkfs gives a block device of that size.
    #[test]
    fn a_template_made_on_a_file_has_the_layout_mkfs_gives_a_device() {
        if !devguard::is_root() {
            eprintln!("SKIPPED {}: needs root (loop devices)", module_path!());
            return;
        }
        for tool in ["mkfs.ext4", "dumpe2fs", "mkfs.xfs", "xfs_db"] {
            if devguard::which(tool).is_none() {
                eprintln!("SKIPPED {}: {tool} is missing", module_path!());
                return;
            }
        }
        let dir = tempfile::tempdir_in(devguard::scratch_dir()).unwrap();
        for fs in ["ext4", "xfs"] {
            // The template's mkfs on the file, the target's own on the device.
            let template = mkfs_words(fs, true);
            let template: Vec<&str> = template.iter().map(String::as_str).collect();
            let mut words: Vec<&str> = if fs == "ext4" {
                target::EXT4_MKFS.to_vec()
            } else {
                target::XFS_MKFS.to_vec()
            };
            if fs == "xfs" {
                words.extend(["-s", "size=4096"]);
            }
            let (file, img) = (dir.path().join("file.img"), dir.path().join("dev.img"));
            for p in [&file, &img] {
                std::fs::File::create(p).unwrap().set_len(40 << 30).unwrap();
            }
            run(&template, &file).unwrap();
            let dev = LoopDevice::over(&img, 512).unwrap();
            run(&words, dev.path()).unwrap();
            let (a, b) = (layout(fs, &file), layout(fs, dev.path()));
            assert!(a.lines().count() > 20, "{fs}: {a}");
            assert_eq!(
                a, b,
                "{fs}: the template's layout differs from the device's"
            );
        }
    }
}
