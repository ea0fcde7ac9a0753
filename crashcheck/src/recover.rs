//! Each target recovered from a crash state as its user would, then the Cannyls storage
//! opened the documented way and every lump compared with what the op-log says it must be.
//!
//! | target | recovery | storage |
//! | --- | --- | --- |
//! | `minfs`, `minfs-512` | `minfs fsck -n`, `minfs-cannyls fsck -n` (reports; `MinfsNvm` repairs a torn journal tail on open) | `MinfsNvm::open` + `StorageBuilder::open`; `minfs fsck -n` must be clean afterwards |
//! | `ext4` (no journal) | `e2fsck -fy`, then mount | `FileNvm::open` + `StorageBuilder::open` |
//! | `ext4-journal` (mkfs.ext4's defaults) | mount (the kernel replays the journal); `e2fsck -fy` and mount again where that fails | the same |
//! | `xfs` | mount (log replay); `xfs_repair` (`-L` where the log is the problem) where that fails | the same |
//! | `raw`, `raw-4096` | nothing | `FileNvm::open` on the image |

use std::collections::BTreeSet;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::process::Command;

use bencher_workloads::run::content;
use cannyls::lump::LumpId;
use cannyls::nvm::{FileNvm, NonVolatileMemory};
use cannyls::storage::{Storage, StorageBuilder};
use cannyls_adapter::MinfsNvm;

use crate::expect::{Expectations, LumpState};

/// The storage file's name in every filesystem target.
pub const FILE: &str = "cannyls.lusf";

/// A target of the comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Target {
    /// Cannyls on minfs (MinfsNvm, block size 4096).
    Minfs,
    /// Cannyls on minfs at block size 512.
    #[value(name = "minfs-512")]
    #[serde(rename = "minfs-512")]
    Minfs512,
    /// FileNvm on ext4 without a journal.
    Ext4,
    /// FileNvm on ext4 with mkfs.ext4's defaults (journal on).
    #[value(name = "ext4-journal")]
    Ext4Journal,
    /// FileNvm on XFS.
    Xfs,
    /// FileNvm on the bare device, block size 512.
    Raw,
    /// FileNvm on the bare device, block size 4096.
    #[value(name = "raw-4096")]
    #[serde(rename = "raw-4096")]
    Raw4096,
}

/// What one crash state showed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Recovery needed a repair (fsck fixed something, xfs_repair ran, a journal tail was cut).
    pub repaired: bool,
    /// The filesystem did not open (or stayed damaged after its recovery).
    pub fs_failed: bool,
    /// The storage did not open.
    pub storage_failed: bool,
    /// The storage could not be expected yet (no sync acknowledged at this point).
    pub before_storage: bool,
    /// Acknowledged lumps missing (put acknowledged, not there, no later operation on it).
    pub lost: u64,
    /// Acknowledged lumps that read other bytes.
    pub wrong_bytes: u64,
    /// Lumps whose delete was acknowledged that are back.
    pub resurrected: u64,
    /// Lumps never put.
    pub phantom: u64,
    /// Cannyls issue #28: a lump whose delete had begun, unacknowledged, reads another lump's
    /// bytes (counted apart).
    pub issue28: u64,
    /// Lumps whose put was in flight (not acknowledged) that read wrong bytes (counted apart).
    pub inflight_wrong: u64,
    /// minfs: the copy of the Cannyls header and journal (cannyls_adapter::copy) vouched, in
    /// the crash state, for bytes the journal does not hold, or was not level with it after
    /// the storage was opened and closed.
    pub copy_disagrees: bool,
    /// What went wrong, for the report.
    pub notes: Vec<String>,
}

impl Outcome {
    /// Whether anything counted against the target.
    pub fn bad(&self) -> bool {
        self.fs_failed
            || self.storage_failed
            || self.copy_disagrees
            || self.lost + self.wrong_bytes + self.resurrected + self.phantom > 0
    }
}

/// The binaries the recovery runs.
#[derive(Debug, Clone)]
pub struct Tools {
    /// `minfs`.
    pub minfs: PathBuf,
    /// `minfs-cannyls`.
    pub minfs_cannyls: PathBuf,
}

fn run(cmd: &mut Command) -> (i32, String) {
    match cmd.output() {
        Ok(o) => (
            o.status.code().unwrap_or(-1),
            format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            )
            .trim()
            .chars()
            .take(300)
            .collect(),
        ),
        Err(e) => (-1, format!("{:?}: {e}", cmd.get_program())),
    }
}

/// Whether the copy of the header and journal of the storage on `dev` agrees with the journal
/// wherever it vouches for it (and, with `level`, is level with it); a storage without a copy
/// passes.
fn copy_agrees(dev: &Path, level: bool) -> Result<(), String> {
    let fs = minfs::Filesystem::open(dev, minfs::OpenMode::ReadOnly).map_err(|e| e.to_string())?;
    let file = match fs.open_file(FILE) {
        Ok(f) => f,
        // No storage file yet (a crash before it was made): nothing to compare.
        Err(minfs::Error::FileNotFound { .. }) => return Ok(()),
        Err(e) => return Err(e.to_string()),
    };
    let c = cannyls_adapter::copy::check(&file).map_err(|e| e.to_string())?;
    if c.trailer.is_none() {
        return Ok(());
    }
    if !c.agree() || (level && !c.level()) {
        return Err(format!(
            "agrees {}, level {}: differ {:?}, damaged {:?}, primary {:?}, copy {:?}",
            c.agree(),
            c.level(),
            c.differ,
            c.damaged,
            c.primary,
            c.copy
        ));
    }
    Ok(())
}

/// A loop device over a state, detached on drop.
struct Loop(String);

impl Loop {
    fn over(image: &Path) -> Result<Loop, String> {
        Loop::with_args(image, &[])
    }

    /// `losetup --find --show ARGS IMAGE`, retried: with other jobs attaching loop devices,
    /// the free device it picks can be taken before it binds it.
    fn with_args(image: &Path, args: &[&str]) -> Result<Loop, String> {
        let mut last = String::new();
        for k in 0..10 {
            let (rc, out) = run(Command::new("losetup")
                .args(["--find", "--show"])
                .args(args)
                .arg(image));
            if rc == 0 {
                return Ok(Loop(out.trim().to_string()));
            }
            last = out;
            std::thread::sleep(std::time::Duration::from_millis(100 * (k + 1)));
        }
        Err(format!("losetup: {last}"))
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        for _ in 0..50 {
            if run(Command::new("losetup").args(["-d", &self.0])).0 == 0 {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        eprintln!("crashcheck: warning: could not detach {}", self.0);
    }
}

/// A mount, unmounted on drop.
struct Mounted(PathBuf);

impl Drop for Mounted {
    fn drop(&mut self) {
        for _ in 0..50 {
            if run(Command::new("umount").arg(&self.0)).0 == 0 {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        eprintln!(
            "crashcheck: warning: could not unmount {}",
            self.0.display()
        );
    }
}

fn mount(dev: &str, dir: &Path, xfs: bool) -> Result<Mounted, String> {
    let mut cmd = Command::new("mount");
    if xfs {
        // A crash state has the recorded filesystem's UUID.
        cmd.args(["-o", "nouuid"]);
    }
    let (rc, out) = run(cmd.arg(dev).arg(dir));
    if rc == 0 {
        Ok(Mounted(dir.to_path_buf()))
    } else {
        Err(format!("mount: {out}"))
    }
}

/// Recovers the target on `image` and checks the storage against `exp` at crash point
/// `point`. `mnt` is an empty directory to mount on.
pub fn check_state(
    target: Target,
    image: &Path,
    mnt: &Path,
    tools: &Tools,
    exp: &Expectations,
    point: usize,
) -> Outcome {
    let mut o = Outcome::default();
    let acked = exp.any_acked_at(point);
    match target {
        Target::Minfs | Target::Minfs512 => {
            // On a disk, as deployed: a loop device with 512-byte sectors (an image file's
            // O_DIRECT alignment may be larger than the recorded drive's sector).
            let dev = match Loop::with_args(image, &["--direct-io=on", "--sector-size", "512"]) {
                Ok(d) => d,
                Err(e) => {
                    o.notes.push(e);
                    o.fs_failed = true;
                    return o;
                }
            };
            let devp = Path::new(&dev.0);
            let (rc, out) = run(Command::new(&tools.minfs).args(["fsck", "-n"]).arg(devp));
            // What minfs's own commits leave when cut between their two slot writes (a slot
            // one commit older, `StaleSlot`) — any preen-safe problem — is repaired by the
            // read-write open below (`minfs fsck -n` must be clean after it): a repair, not a
            // filesystem that does not open.
            let preen_safe = || {
                minfs::fsck::check(devp).is_ok_and(|r| {
                    !r.problems.is_empty() && r.problems.iter().all(|p| p.preen_safe())
                })
            };
            if rc == 4 && preen_safe() {
                o.repaired = true;
            } else if rc != 0 {
                o.notes.push(format!("minfs fsck -n: exit {rc}: {out}"));
                o.fs_failed = true;
            }
            let (rc, out) = run(Command::new(&tools.minfs_cannyls)
                .args(["fsck", "-n"])
                .arg(devp)
                .arg(FILE));
            if rc == 4 || rc == 1 {
                o.repaired = true;
            } else if rc != 0 && acked {
                o.notes
                    .push(format!("minfs-cannyls fsck -n: exit {rc}: {out}"));
            }
            // The copy vouches only for what the journal holds, whatever the crash left.
            if let Err(e) = copy_agrees(devp, false) {
                o.copy_disagrees = true;
                o.notes.push(format!("the crash state's copy: {e}"));
            }
            let opened = catch_unwind(AssertUnwindSafe(|| {
                let nvm = MinfsNvm::open(devp, FILE).map_err(|e| e.to_string())?;
                let repaired = nvm.recovery().is_some();
                let storage = StorageBuilder::new().open(nvm).map_err(|e| e.to_string())?;
                Ok::<_, String>((storage, repaired))
            }));
            match opened {
                Ok(Ok((mut storage, repaired))) => {
                    o.repaired |= repaired;
                    check_lumps(&mut storage, exp, point, &mut o);
                    drop(storage);
                    // Closed: the copy is level with the journal.
                    if let Err(e) = copy_agrees(devp, true) {
                        o.copy_disagrees = true;
                        o.notes.push(format!("the copy after open and close: {e}"));
                    }
                }
                Ok(Err(e)) => storage_failed(&mut o, acked, e),
                Err(_) => storage_failed(&mut o, acked, "panic".into()),
            }
            let (rc, out) = run(Command::new(&tools.minfs).args(["fsck", "-n"]).arg(devp));
            if rc != 0 && !o.fs_failed {
                o.notes
                    .push(format!("minfs fsck -n after opening: exit {rc}: {out}"));
                o.fs_failed = true;
            }
            drop(dev);
        }
        Target::Raw | Target::Raw4096 => file_storage(image, exp, point, acked, &mut o),
        Target::Ext4 | Target::Ext4Journal | Target::Xfs => {
            let e2fsck = |o: &mut Outcome| {
                let (rc, out) = match Command::new("e2fsck").args(["-fy"]).arg(image).output() {
                    Ok(x) => (
                        x.status.code().unwrap_or(-1),
                        String::from_utf8_lossy(&x.stdout).into_owned(),
                    ),
                    Err(e) => (-1, format!("e2fsck: {e}")),
                };
                if rc & 3 != 0 {
                    o.repaired = true;
                    o.notes
                        .push(format!("e2fsck -fy fixed: {}", e2fsck_fixes(&out)));
                }
                if !(0..4).contains(&rc) {
                    o.notes
                        .push(format!("e2fsck -fy: exit {rc}: {}", e2fsck_fixes(&out)));
                }
            };
            if target == Target::Ext4 {
                e2fsck(&mut o);
            }
            let dev = match Loop::over(image) {
                Ok(d) => d,
                Err(e) => {
                    o.notes.push(e);
                    o.fs_failed = true;
                    return o;
                }
            };
            let xfs = target == Target::Xfs;
            let mut m = mount(&dev.0, mnt, xfs);
            if let Err(e) = &m {
                o.notes.push(e.clone());
                o.repaired = true;
                if xfs {
                    let (rc, out) = run(Command::new("xfs_repair").arg(&dev.0));
                    if rc != 0 {
                        o.notes.push(format!("xfs_repair: exit {rc}: {out}"));
                        let (rc, out) = run(Command::new("xfs_repair").arg("-L").arg(&dev.0));
                        if rc != 0 {
                            o.notes.push(format!("xfs_repair -L: exit {rc}: {out}"));
                        }
                    }
                } else {
                    e2fsck(&mut o);
                }
                m = mount(&dev.0, mnt, xfs);
            }
            match m {
                Ok(mounted) => {
                    file_storage(&mnt.join(FILE), exp, point, acked, &mut o);
                    drop(mounted);
                }
                Err(e) => {
                    o.notes.push(e);
                    o.fs_failed = true;
                }
            }
            drop(dev);
        }
    }
    o.before_storage = !acked;
    o
}

/// The lines of e2fsck's output that name a problem it fixed (not the pass headers, the
/// summary or the banner), the first few, shortened.
fn e2fsck_fixes(output: &str) -> String {
    let fixes: Vec<&str> = output
        .lines()
        .map(str::trim)
        .filter(|l| {
            !l.is_empty()
                && !l.starts_with("Pass ")
                && !l.starts_with("e2fsck ")
                && !l.contains("***")
                && !l.contains(" files, ")
        })
        .take(4)
        .collect();
    fixes.join(" / ").chars().take(400).collect()
}

fn storage_failed(o: &mut Outcome, acked: bool, e: String) {
    if acked {
        o.storage_failed = true;
        o.notes.push(format!("storage does not open: {e}"));
    }
}

fn file_storage(path: &Path, exp: &Expectations, point: usize, acked: bool, o: &mut Outcome) {
    let opened = catch_unwind(AssertUnwindSafe(|| {
        let nvm = FileNvm::open(path).map_err(|e| e.to_string())?;
        StorageBuilder::new().open(nvm).map_err(|e| e.to_string())
    }));
    match opened {
        Ok(Ok(mut storage)) => check_lumps(&mut storage, exp, point, o),
        Ok(Err(e)) => storage_failed(o, acked, e),
        Err(_) => storage_failed(o, acked, "panic".into()),
    }
}

fn matches(id: u64, s: LumpState, data: &[u8]) -> bool {
    match s {
        LumpState::Absent => false,
        LumpState::Present { version, len } => {
            data.len() as u64 == len && content::first_mismatch(id, version, data).is_none()
        }
    }
}

/// Every lump listed reads bytes some allowed state has, every acknowledged lump is there,
/// every acknowledged delete stays done, no lump that was never put.
pub fn check_lumps<N: NonVolatileMemory>(
    storage: &mut Storage<N>,
    exp: &Expectations,
    point: usize,
    o: &mut Outcome,
) {
    let note = |o: &mut Outcome, s: String| {
        if o.notes.len() < 8 {
            o.notes.push(s);
        }
    };
    let listed: Vec<LumpId> = storage.list();
    let mut present = BTreeSet::new();
    for lid in listed {
        let Ok(id) = u64::try_from(lid.as_u128()) else {
            o.phantom += 1;
            note(o, format!("lump {} was never put", lid.as_u128()));
            continue;
        };
        present.insert(id);
        if !exp.lumps.contains_key(&id) {
            o.phantom += 1;
            note(o, format!("lump {id} was never put"));
            continue;
        }
        let (required, later) = exp.at(id, point);
        let data = match catch_unwind(AssertUnwindSafe(|| storage.get(&lid))) {
            Ok(Ok(Some(d))) => d.as_bytes().to_vec(),
            Ok(Ok(None)) => {
                present.remove(&id);
                continue;
            }
            Ok(Err(e)) => {
                note(o, format!("lump {id}: get: {e}"));
                Vec::new()
            }
            Err(_) => {
                note(o, format!("lump {id}: get panicked"));
                Vec::new()
            }
        };
        let ok_required = required.is_some_and(|s| matches(id, s, &data));
        let ok_later = later.iter().any(|&s| matches(id, s, &data));
        if ok_required || ok_later {
            continue;
        }
        match required {
            Some(LumpState::Absent) => {
                // A delete was acknowledged: back with its old bytes, or with other bytes.
                o.resurrected += 1;
                note(
                    o,
                    format!("lump {id}: deleted and acknowledged, but listed"),
                );
            }
            Some(LumpState::Present { .. }) => {
                if later.contains(&LumpState::Absent) {
                    o.issue28 += 1;
                } else {
                    o.wrong_bytes += 1;
                    note(
                        o,
                        format!("lump {id}: acknowledged, reads {} other bytes", data.len()),
                    );
                }
            }
            None => {
                o.inflight_wrong += 1;
            }
        }
    }
    for (&id, _) in exp.lumps.iter() {
        if present.contains(&id) {
            continue;
        }
        let (required, later) = exp.at(id, point);
        if matches!(required, Some(LumpState::Present { .. }))
            && !later.contains(&LumpState::Absent)
        {
            o.lost += 1;
            note(o, format!("lump {id}: acknowledged, missing"));
        }
    }
}
