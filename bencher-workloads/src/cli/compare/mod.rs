//! `minfs-bench compare`: the comparison of Cannyls on minfs against Cannyls on a file in
//! ext4 and XFS and on the bare device, all on one device (by default an emulated 512e hard
//! drive), each target freshly made before every run; round after round until every
//! comparison is decided or the time budget is spent (or a fixed number of rounds).
//!
//! It writes the comparison directory `minfs-bench report` reads (compare.json, SETUP.md,
//! runs/<workload>/<target>/run-<k>.{json,oplog,trace,model-<profile>.json}), renders
//! report.md and prints its summary. What it makes on the machine (loop device, mounts, the
//! emulator, the tracefs instance, the queue settings, fs.fuse.max_pages_limit) is held by
//! [`devguard`] guards and undone on every way out: success, a failed step, Ctrl-C, SIGTERM.
//!
//! Exit codes: 0 every run succeeded; 1 a run or step failed (the report marks it); 2 usage
//! error, an --out that is not empty, or a refused device; 130 interrupted (SIGINT or
//! SIGTERM).

mod plan;
mod runstats;
pub(crate) mod setup;
mod target;
mod template;

pub use plan::{parse_duration, parse_size, round_order, time_left, Scales, Timings};
pub use target::{parse_targets, ALL_TARGETS};

use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;

use devguard::{
    is_root, trace_dev_number, Emulator, ImageFile, LoopDevice, MaxPagesLimit, QueueMode, Tracing,
};

use crate::compare;
use crate::compare::stats::Judgement;
use crate::compare::{allocate, defaults};

// The workloads, targets, scales and budget by default: `crate::compare::defaults`.
/// The emulated drive's profile by default.
pub const DEFAULT_PROFILE: &str = "st1000dm003";
/// The guest halt polling the comparison asks of a VM while the emulated drive runs (ns; the
/// haltpoll driver's default when enabled).
const HALT_POLL_NS: u64 = 200_000;

/// Why the emulated drive spans only its first part (SETUP.md): with 4096-byte logical
/// sectors, which the modelled drive does not have, the whole drive is refused.
pub const SPAN_WHY: &str = "the first part of the drive, the largest capacity the workloads \
    need at their scale plus 15 % and 256 MiB for the filesystems (at least 320 MiB): the \
    whole drive, the default, is refused with 4096-byte logical sectors (not the modelled \
    drive's)";

/// Where the image lives without --work (the emulated drive's prefers [`SHM_WORK`]).
pub const DISK_WORK: &str = "/var/tmp/minfs-compare";
/// Where the emulated drive's backing image lives without --work when /dev/shm has room.
pub const SHM_WORK: &str = "/dev/shm/minfs-compare";

/// Whether /dev/shm is a tmpfs with more than `bytes` free.
fn shm_has_room(bytes: u64) -> bool {
    devguard::shm_is_tmpfs() && avail_bytes(Path::new("/dev/shm")).is_ok_and(|a| a > bytes)
}

/// The emulated drive's span by default for workloads needing `need` bytes: `need` rounded
/// up to MiB, at least 320 MiB (mkfs.xfs needs 300 MiB).
pub fn default_span(need: u64) -> u64 {
    let min = 320 << 20;
    need.max(min).div_ceil(1 << 20) << 20
}

/// What the device needs for workloads with a largest capacity of `max_capacity`: the
/// capacity plus 15% and 256 MiB for the filesystems' overhead.
pub fn need_bytes(max_capacity: u64) -> u64 {
    max_capacity + max_capacity * 15 / 100 + (256 << 20)
}

/// Arguments of `compare`.
#[derive(Debug, Clone, Args)]
pub struct CompareArgs {
    /// The device: `emulated[:PROFILE]` (default; `hddsim emulate`, profile st1000dm003, the
    /// HDD model in real time behind FUSE, a loop device over its file), `loop` (a loop
    /// device over a zero-filled image: the software's cost only, no seeks, rotation or 512e
    /// read-modify-write), or a block device /dev/sdX (refused when mounted or in use, or
    /// when it holds a filesystem or partition table unless --destroy-data; EVERYTHING ON IT
    /// IS DESTROYED). Without /dev/fuse or the hddsim binary the default falls back to
    /// `loop`, and says so first.
    #[arg(long, value_name = "DEV")]
    pub device: Option<String>,
    /// Allow --device to be a device that holds data.
    #[arg(long)]
    pub destroy_data: bool,
    /// With the emulated drive: span the profile's whole capacity (1,000,204,886,016 bytes
    /// for st1000dm003), a sparse image; every filesystem is made over all of it, as on the
    /// real drive. Refused unless --work's host has room for the data the runs write.
    #[arg(long)]
    pub whole_drive: bool,
    /// With the emulated drive: how much of it the loop device spans, from its start (a
    /// sparse image; e.g. 2G). Default: what the workloads need at their scale.
    #[arg(long, value_name = "SIZE")]
    pub span: Option<String>,
    /// With the emulated drive: the loop device's queue set as Linux sets a SATA HDD's
    /// (rotational 1, scheduler mq-deadline). Without it a loop device gets scheduler none;
    /// the old setting is put back on exit.
    #[arg(long)]
    pub drive_queue: bool,
    /// What the lumps hold: `stream` (each lump's own checkable bytes) or `zeros` (for
    /// timing runs on a --whole-drive: the emulator stores zeros as holes).
    #[arg(long, value_name = "stream|zeros", default_value = "stream")]
    pub content: String,
    /// `runs`: round by round, each workload, every target (the order rotated each round);
    /// `targets` (with --runs only): every run of one target before the next target.
    #[arg(long, value_name = "runs|targets", default_value = "runs")]
    pub order: String,
    /// Where the image lives. Default: for the emulated drive /dev/shm/minfs-compare when
    /// /dev/shm is a tmpfs with room for what the runs write (the emulator's backing store in
    /// memory, so that the host's own disk never delays a modelled reply: on a busy host disk
    /// the pilots' emulated runs took up to 35 % longer than the model said), else
    /// /var/tmp/minfs-compare.
    #[arg(long, value_name = "DIR")]
    pub work: Option<PathBuf>,
    /// With --device loop: the image's size (e.g. 8G; default: the largest capacity the
    /// workloads need, plus 15% and 256 MiB). With the emulated drive: the same as --span.
    #[arg(long, value_name = "SIZE")]
    pub image_size: Option<String>,
    /// Logical sector size of the loop device: 512 or 4096.
    #[arg(long, value_name = "N", default_value = "512")]
    pub sector_size: String,
    /// Leave the image in --work afterwards.
    #[arg(long)]
    pub keep_image: bool,
    /// Comma-separated workload names (bencher-workloads/workloads/NAME.wl) or paths (default:
    /// the six reference workloads).
    #[arg(long, value_name = "LIST")]
    pub workloads: Option<String>,
    /// Comma-separated, from: minfs minfs-512 minfs-fuse minfs-fuse-grow ext4 ext4-prealloc
    /// ext4-defaults xfs xfs-prealloc raw; `all` for every one. TARGET@N runs TARGET at
    /// Cannyls block size N (512 or 4096); minfs@nocopy is minfs without the copy of the
    /// Cannyls header and journal (`--targets minfs,minfs@nocopy`: what the copy costs).
    /// Default: minfs,ext4,xfs (the file systems at Cannyls' default block size, 512, as
    /// published); add ext4@4096,xfs@4096 for the report to tell the file system's part of a
    /// gap from the block size's.
    #[arg(long, value_name = "LIST")]
    pub targets: Option<String>,
    /// Multiply every workload count by F; per workload with WORKLOAD=F, e.g.
    /// `0.05,seq-4m=0.02,durable-256k=0.1` (default: each reference workload's own, sized so
    /// that its minfs run takes about 2 s of the emulated drive's time; 0.05 for other files).
    #[arg(long, value_name = "F[,WORKLOAD=F…]")]
    pub scale: Option<String>,
    /// A fixed number of rounds (each runs every target once per workload); excludes
    /// --budget.
    #[arg(long, value_name = "N", conflicts_with = "budget")]
    pub runs: Option<String>,
    /// The wall time the rounds may take (e.g. 15m, 90s, 1h; default 15m): each round runs
    /// minfs and only the targets whose comparison with it is still undecided; a round the
    /// budget left cannot hold whole runs the comparisons that still fit (each workload with
    /// its minfs run); the runs end when every comparison is decided or no run of one fits.
    #[arg(long, value_name = "DURATION")]
    pub budget: Option<String>,
    /// With a budget: at most N rounds.
    #[arg(long, value_name = "N", default_value = "50")]
    pub max_rounds: String,
    /// Cannyls block size of every target but minfs-512 (default: each target's own).
    #[arg(long, value_name = "N")]
    pub block_size: Option<String>,
    /// Generator seed (default: each workload's own).
    #[arg(long, value_name = "S")]
    pub seed: Option<String>,
    /// Record the device's block requests (tracefs) for every run and replay them through
    /// the HDD model (default: on when root and tracefs is available).
    #[arg(long, overrides_with = "no_trace")]
    pub trace: bool,
    /// Do not record block traces.
    #[arg(long, overrides_with = "trace")]
    pub no_trace: bool,
    /// gzip (-9n) every op-log and trace once the report is rendered.
    #[arg(long)]
    pub compress: bool,
    /// Where the minfs and hddsim binaries are (default: next to this minfs-bench).
    #[arg(long, value_name = "DIR")]
    pub bin_dir: Option<PathBuf>,
    /// Results directory (default results/local/<date>T<time>-<host>-<device>/). Refused,
    /// before anything is made, when it exists and is not empty.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// The name messages start with.
pub const WHO: &str = "minfs-bench compare";

/// Why `compare` stopped early.
#[derive(Debug)]
enum Stop {
    /// Exit 2, "(see --help)".
    Usage(String),
    /// Exit 2, a refused device or directory.
    Refused(String),
    /// Exit 1.
    Fail(String),
    /// Exit 130.
    Interrupted,
}

impl From<io::Error> for Stop {
    fn from(e: io::Error) -> Stop {
        Stop::Fail(e.to_string())
    }
}

impl From<devguard::CommandFailed> for Stop {
    fn from(e: devguard::CommandFailed) -> Stop {
        Stop::Fail(e.to_string())
    }
}

fn usage<T>(msg: impl Into<String>) -> Result<T, Stop> {
    Err(Stop::Usage(msg.into()))
}

/// The device as chosen.
#[derive(Debug, Clone, PartialEq)]
enum DeviceKind {
    Loop,
    Emulated { profile: String },
    Real(PathBuf),
}

/// Where the shipped workloads are: this source tree's, else PREFIX/share/minfs-bench/workloads
/// next to the binary.
fn workloads_dir() -> PathBuf {
    let tree = Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads");
    if tree.is_dir() {
        return tree;
    }
    if let Ok(exe) = std::env::current_exe() {
        if let Some(prefix) = exe.parent().and_then(Path::parent) {
            let p = prefix.join("share/minfs-bench/workloads");
            if p.is_dir() {
                return p;
            }
        }
    }
    tree
}

/// The source tree this binary was built from, when it is still there.
fn repo() -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).parent()?;
    p.join("Cargo.toml").is_file().then(|| p.to_path_buf())
}

/// One line of output: `minfs-bench compare: …` on stderr.
fn say(msg: &str) {
    let _ = writeln!(io::stderr().lock(), "{WHO}: {msg}");
}

/// Runs `compare`.
pub fn compare(
    args: &CompareArgs,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<ExitCode> {
    let stop = Arc::new(AtomicBool::new(false));
    let result = Runner::main(args, out, &stop);
    Ok(match result {
        Ok(code) => code,
        Err(Stop::Usage(m)) => {
            writeln!(err, "{WHO}: error: {m}")?;
            writeln!(err, "(see {WHO} --help)")?;
            ExitCode::from(2)
        }
        Err(Stop::Refused(m)) => {
            writeln!(err, "{WHO}: {m}")?;
            ExitCode::from(2)
        }
        Err(Stop::Fail(m)) => {
            writeln!(err, "{WHO}: error: {m}")?;
            ExitCode::FAILURE
        }
        Err(Stop::Interrupted) => {
            writeln!(err, "{WHO}: interrupted; cleaned up")?;
            ExitCode::from(130)
        }
    })
}

/// The options, checked.
#[derive(Debug)]
struct Options {
    kind: DeviceKind,
    whole_drive: bool,
    span: Option<u64>,
    image_size: Option<u64>,
    sector_size: u32,
    content: String,
    order_targets: bool,
    workloads: Vec<(String, PathBuf)>,
    targets: Vec<String>,
    targets_given: bool,
    scales: Scales,
    runs: Option<u32>,
    budget: Option<Duration>,
    max_rounds: u32,
    block_size: Option<u32>,
    seed: Option<u64>,
    trace: Option<bool>,
    minfs: PathBuf,
    hddsim: PathBuf,
    bench: PathBuf,
    bin_dir_given: bool,
}

fn check_options(args: &CompareArgs) -> Result<Options, Stop> {
    let bench = std::env::current_exe()
        .map_err(|e| Stop::Fail(format!("cannot find this program: {e}")))?;
    let bin_dir = match &args.bin_dir {
        Some(d) => std::fs::canonicalize(d)
            .map_err(|e| Stop::Usage(format!("--bin-dir {}: {e}", d.display())))?,
        None => bench.parent().map(Path::to_path_buf).unwrap_or_default(),
    };
    let minfs = bin_dir.join("minfs");
    let hddsim = bin_dir.join("hddsim");
    let kind = match args.device.as_deref() {
        None => {
            let why = if !Path::new("/dev/fuse").exists() {
                Some("/dev/fuse is missing (modprobe fuse)".to_string())
            } else if !hddsim.is_file() {
                Some(format!("no hddsim binary at {}", hddsim.display()))
            } else {
                None
            };
            match why {
                Some(why) => {
                    // First, before anything else.
                    say(&format!(
                        "the emulated drive needs FUSE and hddsim, and {why}: using a loop \
                         device instead (--device loop: the software's cost only, no drive \
                         timing)"
                    ));
                    DeviceKind::Loop
                }
                None => DeviceKind::Emulated {
                    profile: DEFAULT_PROFILE.into(),
                },
            }
        }
        Some("loop") => DeviceKind::Loop,
        Some("emulated") => DeviceKind::Emulated {
            profile: DEFAULT_PROFILE.into(),
        },
        Some(d) if d.starts_with("emulated:") => {
            let p = &d["emulated:".len()..];
            if !valid_profile(p) {
                return usage(format!(
                    "--device emulated:PROFILE: bad profile '{p}' (a name, or \
                     NAME+PARAM=VALUE[,PARAM=VALUE…])"
                ));
            }
            DeviceKind::Emulated { profile: p.into() }
        }
        Some("") => return usage("--device needs a value"),
        Some(d) => DeviceKind::Real(PathBuf::from(d)),
    };
    let emulated = matches!(kind, DeviceKind::Emulated { .. });
    let positive = |s: &str, what: &str| -> Result<u32, Stop> {
        match s.parse::<u32>() {
            Ok(n) if n > 0 => Ok(n),
            _ => usage(format!("{what} '{s}' is not a positive integer")),
        }
    };
    let runs = args
        .runs
        .as_deref()
        .map(|r| positive(r, "--runs"))
        .transpose()?;
    let budget = match (&args.budget, runs) {
        (Some(b), _) => Some(parse_duration(b).map_err(Stop::Usage)?),
        (None, None) => Some(Duration::from_secs_f64(defaults::BUDGET_S)),
        (None, Some(_)) => None,
    };
    let max_rounds = positive(&args.max_rounds, "--max-rounds")?;
    let block_size = match &args.block_size {
        None => None,
        Some(b) => match b.parse::<u32>() {
            Ok(n) if n > 0 && n % 512 == 0 => Some(n),
            _ => {
                return usage(format!(
                    "--block-size '{b}' is not a positive multiple of 512"
                ))
            }
        },
    };
    let sector_size = match args.sector_size.as_str() {
        "512" => 512,
        "4096" => 4096,
        s => return usage(format!("--sector-size '{s}' is not 512 or 4096")),
    };
    let scales = match &args.scale {
        Some(s) => Scales::parse(s).map_err(Stop::Usage)?,
        None => Scales::default(),
    };
    let seed = match &args.seed {
        None => None,
        Some(s) => Some(
            s.parse::<u64>()
                .map_err(|_| Stop::Usage(format!("--seed '{s}' is not a number")))?,
        ),
    };
    if args.content != "stream" && args.content != "zeros" {
        return usage(format!(
            "--content '{}' is not stream or zeros",
            args.content
        ));
    }
    if args.order != "runs" && args.order != "targets" {
        return usage(format!("--order '{}' is not runs or targets", args.order));
    }
    let order_targets = args.order == "targets";
    if order_targets && runs.is_none() {
        return usage("--order targets needs --runs N (a budget runs round by round)");
    }
    if args.drive_queue && !emulated {
        return usage("--drive-queue needs --device emulated[:PROFILE]");
    }
    let mut span = args
        .span
        .as_deref()
        .map(|s| parse_size(s, "--span"))
        .transpose()
        .map_err(Stop::Usage)?;
    let image_size = args
        .image_size
        .as_deref()
        .map(|s| parse_size(s, "size"))
        .transpose()
        .map_err(Stop::Usage)?;
    if args.whole_drive {
        if !emulated {
            return usage("--whole-drive needs --device emulated[:PROFILE]");
        }
        if image_size.is_some() || span.is_some() {
            return usage(
                "--whole-drive and --image-size or --span exclude each other (the drive's \
                 capacity is the image's size)",
            );
        }
        if sector_size != 512 {
            return usage(
                "--whole-drive: the drive's logical sectors are 512 bytes (--sector-size 4096 \
                 is not the modelled drive)",
            );
        }
    }
    if span.is_some() && !emulated {
        return usage("--span needs the emulated drive (--device emulated[:PROFILE])");
    }
    if emulated && span.is_none() {
        span = image_size;
    }
    if span.is_some_and(|s| s % 512 != 0) {
        return usage("--span must be a multiple of 512 bytes");
    }
    let targets_given = args.targets.is_some();
    let targets = parse_targets(
        &args
            .targets
            .clone()
            .unwrap_or_else(|| defaults::TARGETS.join(",")),
    )
    .map_err(Stop::Usage)?;
    let mut workloads = Vec::new();
    let dir = workloads_dir();
    let listed = args
        .workloads
        .clone()
        .unwrap_or_else(|| defaults::WORKLOADS.join(","));
    for w in listed.split(',').filter(|w| !w.is_empty()) {
        let f = if Path::new(w).is_file() {
            PathBuf::from(w)
        } else if dir.join(format!("{w}.wl")).is_file() {
            dir.join(format!("{w}.wl"))
        } else {
            return usage(format!(
                "no workload '{w}' (not a file, not bencher-workloads/workloads/{w}.wl)"
            ));
        };
        let f = std::fs::canonicalize(&f).unwrap_or(f);
        let name = f
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        if workloads.iter().any(|(n, _)| n == &name) {
            return usage(format!("workload '{name}' is listed twice"));
        }
        workloads.push((name, f));
    }
    if workloads.is_empty() {
        return usage("--workloads is empty");
    }
    for w in scales.overrides.keys() {
        if !workloads.iter().any(|(n, _)| n == w) {
            return usage(format!(
                "--scale names workload '{w}', which is not among --workloads"
            ));
        }
    }
    let trace = match (args.trace, args.no_trace) {
        (true, _) => Some(true),
        (_, true) => Some(false),
        _ => None,
    };
    Ok(Options {
        kind,
        // The emulated drive is the whole drive unless a span is asked for (or its sectors
        // are not the drive's): the filesystems' layout and the seeks across it are the real
        // drive's (docs/COMPARISON.md, "A miniature of the 1 TB drive").
        whole_drive: args.whole_drive
            || (emulated && span.is_none() && image_size.is_none() && sector_size == 512),
        span,
        image_size,
        sector_size,
        content: args.content.clone(),
        order_targets,
        workloads,
        targets,
        targets_given,
        scales,
        runs,
        budget,
        max_rounds,
        block_size,
        seed,
        trace,
        minfs,
        hddsim,
        bench,
        bin_dir_given: args.bin_dir.is_some(),
    })
}

fn valid_profile(p: &str) -> bool {
    let name_ok = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
    };
    match p.split_once('+') {
        None => name_ok(p),
        Some((name, params)) => {
            name_ok(name)
                && params.split(',').all(|kv| {
                    kv.split_once('=').is_some_and(|(k, v)| {
                        !k.is_empty()
                            && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                            && name_ok(v)
                    })
                })
        }
    }
}

/// Why `dev` must not be used (compare.sh's refusals), or `None`.
fn dev_refusal(dev: &Path, destroy_data: bool) -> Option<String> {
    use std::os::unix::fs::FileTypeExt;
    let d = dev.display();
    if !std::fs::metadata(dev).is_ok_and(|m| m.file_type().is_block_device()) {
        return Some(format!("{d} is not a block device"));
    }
    let findmnt = |src: &Path| -> Option<String> {
        let out = Command::new("findmnt")
            .args(["-rno", "TARGET", "-S"])
            .arg(src)
            .output()
            .ok()?;
        let s = String::from_utf8_lossy(&out.stdout);
        let v: Vec<&str> = s.lines().filter(|l| !l.is_empty()).collect();
        (out.status.success() && !v.is_empty()).then(|| v.join(","))
    };
    if let Some(on) = findmnt(dev) {
        return Some(format!("{d} is mounted on {on}"));
    }
    let real = std::fs::canonicalize(dev).unwrap_or_else(|_| dev.to_path_buf());
    let name = real.file_name()?.to_string_lossy().into_owned();
    let sys = Path::new("/sys/class/block").join(&name);
    if let Ok(entries) = std::fs::read_dir(&sys) {
        for e in entries.flatten() {
            let part = e.file_name().to_string_lossy().into_owned();
            if part.starts_with(&name) && e.path().join("partition").exists() {
                let p = PathBuf::from(format!("/dev/{part}"));
                if findmnt(&p).is_some() {
                    return Some(format!("partition {} of {d} is mounted", p.display()));
                }
            }
        }
    }
    if let Ok(h) = std::fs::read_dir(sys.join("holders")) {
        let holders: Vec<String> = h
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        if !holders.is_empty() {
            return Some(format!("{d} is in use by {}", holders.join(",")));
        }
    }
    if !destroy_data {
        let out = Command::new("wipefs")
            .args(["-n", "-O", "TYPE", "--noheadings"])
            .arg(dev)
            .output()
            .ok()?;
        let mut sigs: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| l.trim().to_string())
            .filter(|l| !l.is_empty())
            .collect();
        sigs.sort();
        sigs.dedup();
        if !sigs.is_empty() {
            return Some(format!(
                "{d} holds {} (use --destroy-data to overwrite it)",
                sigs.join(",")
            ));
        }
    }
    None
}

fn shell(cmd: &str) -> String {
    Command::new("sh")
        .args(["-c", cmd])
        .stderr(Stdio::null())
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

fn host_name() -> String {
    let h = shell("hostname -s 2>/dev/null || hostname");
    if h.is_empty() {
        "host".into()
    } else {
        h
    }
}

/// Bytes free in `dir`'s filesystem.
fn avail_bytes(dir: &Path) -> io::Result<u64> {
    let s = nix::sys::statvfs::statvfs(dir).map_err(io::Error::from)?;
    Ok(s.blocks_available() as u64 * s.fragment_size() as u64)
}

/// What the device is, as set up.
#[derive(Debug)]
///
/// Its guards drop in field order: the loop device, then the emulator under it, then the image.
struct Device {
    dev: PathBuf,
    bytes: u64,
    loop_dev: Option<LoopDevice>,
    emulator: Option<Emulator>,
    /// The image, when the device is a loop device over one made here.
    image: Option<ImageFile>,
    loop_cmd: String,
    zero_cmd: String,
    /// Where the image is (--work, or the default chosen for the device).
    work: PathBuf,
}

/// The comparison in progress.
struct Runner<'a> {
    o: Options,
    args: &'a CompareArgs,
    stop: &'a AtomicBool,
    out_dir: PathBuf,
    failures: u32,
    /// On the emulated drive, each target's filesystem made once ([`template`]).
    templates: Option<template::Templates>,
    /// The emulator writes each run's block trace ([`Emulator::trace_to`]).
    emulator_traces: bool,
}

impl Runner<'_> {
    fn main(
        args: &CompareArgs,
        out: &mut dyn Write,
        stop: &Arc<AtomicBool>,
    ) -> Result<ExitCode, Stop> {
        let git_rev = repo().map(|r| {
            let rev = shell(&format!("git -C '{}' rev-parse HEAD", r.display()));
            let dirty = !Command::new("git")
                .arg("-C")
                .arg(&r)
                .args(["diff", "--quiet", "HEAD"])
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if rev.is_empty() {
                "n/a".to_string()
            } else if dirty {
                format!("{rev} (with uncommitted changes)")
            } else {
                rev
            }
        });
        let o = check_options(args)?;
        // The results directory: checked before anything is made.
        let label = match &o.kind {
            DeviceKind::Real(d) => std::fs::canonicalize(d)
                .unwrap_or_else(|_| d.clone())
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            DeviceKind::Emulated { profile } if o.whole_drive => {
                format!("emulated-{profile}-whole")
            }
            DeviceKind::Emulated { profile } => format!("emulated-{profile}"),
            DeviceKind::Loop => format!("loop-{}", o.sector_size),
        };
        let out_dir = match &args.out {
            Some(d) => d.clone(),
            None => {
                let base = repo().unwrap_or_else(|| PathBuf::from("."));
                base.join("results/local").join(format!(
                    "{}-{}-{label}",
                    shell("date -u +%Y-%m-%dT%H%M%S"),
                    host_name()
                ))
            }
        };
        if out_dir.exists() && !out_dir.is_dir() {
            return usage(format!(
                "--out {} exists and is not a directory",
                out_dir.display()
            ));
        }
        if out_dir.is_dir() && std::fs::read_dir(&out_dir).is_ok_and(|mut d| d.next().is_some()) {
            return usage(format!(
                "--out {} already exists and is not empty (it may hold an earlier \
                 comparison); choose another --out",
                out_dir.display()
            ));
        }
        if !is_root() {
            return usage("must run as root (loop devices, mkfs, mount)");
        }
        install_missing_tools()?;
        if !o.minfs.is_file() {
            return Err(Stop::Fail(format!(
                "no minfs binary at {}",
                o.minfs.display()
            )));
        }
        let mut runner = Runner {
            o,
            args,
            stop,
            out_dir,
            failures: 0,
            templates: None,
            emulator_traces: false,
        };
        if let DeviceKind::Emulated { profile } = &runner.o.kind {
            if !runner.o.hddsim.is_file() {
                return Err(Stop::Fail(format!(
                    "--device emulated: no hddsim binary at {}",
                    runner.o.hddsim.display()
                )));
            }
            if !Path::new("/dev/fuse").exists() {
                return Err(Stop::Fail(
                    "--device emulated: /dev/fuse is missing (modprobe fuse)".into(),
                ));
            }
            if let Err(e) = hddsim::profile::load(profile) {
                return usage(format!("--device emulated:{profile}: no such profile: {e}"));
            }
        }
        if runner
            .o
            .targets
            .iter()
            .any(|t| target::base(t).starts_with("minfs-fuse"))
        {
            let mut why = None;
            let has_mount = Command::new(&runner.o.minfs)
                .args(["mount", "--help"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if !has_mount {
                why = Some("this minfs has no 'mount' (built without the fuse feature)");
            }
            if !Path::new("/dev/fuse").exists() {
                why = Some("/dev/fuse is missing (modprobe fuse)");
            }
            if let Some(why) = why {
                if runner.o.targets_given {
                    return Err(Stop::Fail(format!(
                        "targets minfs-fuse, minfs-fuse-grow: {why}"
                    )));
                }
                say(&format!(
                    "leaving out targets minfs-fuse, minfs-fuse-grow: {why}"
                ));
                runner
                    .o
                    .targets
                    .retain(|t| !target::base(t).starts_with("minfs-fuse"));
            }
        }
        // The mounts made from here on are this process's own (devguard's
        // private_mount_namespace says why: another process's new mount namespace would
        // otherwise pin a target's filesystem and its device after the umount).
        if let Err(e) = devguard::private_mount_namespace() {
            say(&format!(
                "note: cannot make a mount namespace of its own ({e}); the mounts are the \
                 system's"
            ));
        }
        // From here on SIGINT and SIGTERM set the flag; the runs stop, the guards undo what
        // was made, and the report of the rounds done is written.
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            signal_hook::flag::register(sig, Arc::clone(stop))
                .map_err(|e| Stop::Fail(format!("cannot catch signal {sig}: {e}")))?;
        }
        runner.run(out, label, git_rev)
    }

    /// compare.json's `args`: the options that make this device (of `bytes`) and these
    /// settings again (`--no-trace` where the runs were not `traced`: tracing costs the host
    /// a little per request).
    fn rerun_args(&self, whole: bool, bytes: u64, traced: bool) -> Vec<String> {
        let size = |b: u64| {
            if b % (1 << 20) == 0 {
                format!("{}M", b >> 20)
            } else {
                b.to_string()
            }
        };
        let mut a = Vec::new();
        match &self.o.kind {
            DeviceKind::Emulated { profile } => {
                if profile != DEFAULT_PROFILE {
                    a.push(format!("--device=emulated:{profile}"));
                }
                a.push(if whole {
                    "--whole-drive".to_string()
                } else {
                    format!("--span={}", size(bytes))
                });
                if self.args.drive_queue {
                    a.push("--drive-queue".into());
                }
            }
            DeviceKind::Loop => {
                a.push("--device=loop".into());
                a.push(format!("--image-size={}", size(bytes)));
            }
            DeviceKind::Real(p) => a.push(format!("--device={}", p.display())),
        }
        if self.o.sector_size != 512 {
            a.push(format!("--sector-size={}", self.o.sector_size));
        }
        if self.o.content != "stream" {
            a.push(format!("--content={}", self.o.content));
        }
        if let Some(s) = self.o.seed {
            a.push(format!("--seed={s}"));
        }
        if let Some(b) = self.o.block_size {
            a.push(format!("--block-size={b}"));
        }
        if !traced {
            a.push("--no-trace".into());
        }
        a
    }

    fn interrupted(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    /// The capacity each workload needs (at the largest block size a target uses).
    fn capacities(&self) -> Result<Vec<u64>, Stop> {
        let bs = self.o.block_size.unwrap_or(4096);
        let mut caps = Vec::new();
        for (name, file) in &self.o.workloads {
            let wargs = crate::cli::WorkloadArgs {
                file: file.clone(),
                scale: self.o.scales.of(name),
                seed: self.o.seed,
                sync_every: None,
                final_sync: true,
                max_ops: crate::generate::DEFAULT_MAX_OPS,
            };
            let loaded = crate::cli::load(&wargs).map_err(|e| {
                Stop::Usage(format!("workload {} does not check: {e}", file.display()))
            })?;
            caps.push(crate::run::capacity::plan(&loaded.expansion.ops, bs).capacity);
        }
        Ok(caps)
    }

    fn setup_device(&self, need: u64, max_capacity: u64) -> Result<Device, Stop> {
        let o = &self.o;
        let disk_work = PathBuf::from(DISK_WORK);
        let work = self.args.work.as_ref().unwrap_or(&disk_work);
        match &o.kind {
            DeviceKind::Real(d) => {
                if let Some(why) = dev_refusal(d, self.args.destroy_data) {
                    return Err(Stop::Refused(format!("refusing {}: {why}", d.display())));
                }
                let dev = std::fs::canonicalize(d)?;
                let bytes: u64 = shell(&format!("blockdev --getsize64 '{}'", dev.display()))
                    .parse()
                    .map_err(|_| {
                        Stop::Fail(format!("cannot read the size of {}", dev.display()))
                    })?;
                if bytes < need {
                    return Err(Stop::Fail(format!(
                        "{} has {bytes} bytes; the workloads need about {need}",
                        dev.display()
                    )));
                }
                Ok(Device {
                    dev,
                    bytes,
                    image: None,
                    emulator: None,
                    loop_dev: None,
                    loop_cmd: String::new(),
                    zero_cmd: String::new(),
                    work: work.to_path_buf(),
                })
            }
            DeviceKind::Emulated { profile } => {
                let span = if o.whole_drive {
                    None
                } else {
                    Some(o.span.unwrap_or_else(|| default_span(need)))
                };
                if let Some(s) = span {
                    if s < need {
                        return Err(Stop::Fail(format!(
                            "--span {s} is smaller than the {need} bytes the workloads need"
                        )));
                    }
                }
                // Host space for what the runs write that is not zeros (the image is punched
                // back to holes before each target, so one run's worth): with --content zeros,
                // the Cannyls journal and the filesystems' metadata (2% of the largest
                // capacity plus 2 GiB); with the stream, the whole capacity too.
                let mut host_need = if o.content == "zeros" {
                    max_capacity / 50 + (2 << 30)
                } else {
                    need + (2 << 30)
                };
                if let Some(s) = span {
                    host_need = host_need.min(s + (64 << 20));
                }
                let work = match &self.args.work {
                    Some(w) => w.clone(),
                    None if shm_has_room(host_need + (1 << 30)) => PathBuf::from(SHM_WORK),
                    None => disk_work.clone(),
                };
                std::fs::create_dir_all(&work)?;
                let work = std::fs::canonicalize(&work)?;
                let image_path = work.join(format!("compare-{}.img", std::process::id()));
                let avail = avail_bytes(&work)?;
                if avail <= host_need {
                    let what = if o.whole_drive {
                        "--whole-drive"
                    } else {
                        "the emulated drive"
                    };
                    return Err(Stop::Refused(format!(
                        "refusing {what}: {} has {avail} bytes free; the runs need about \
                         {host_need} bytes of it for the data they write (--content {})",
                        work.display(),
                        o.content
                    )));
                }
                let image = ImageFile::new(image_path.clone(), self.args.keep_image);
                if let Some(s) = span {
                    let f = std::fs::File::create_new(&image_path)?;
                    f.set_len(s)?;
                }
                let emulator =
                    Emulator::start(&o.hddsim, profile, &image_path, span.is_none(), &work)?;
                let bytes = std::fs::metadata(&image_path)?.len();
                if bytes < need {
                    return Err(Stop::Fail(format!(
                        "the emulated drive has {bytes} bytes; the workloads need about {need}"
                    )));
                }
                let disk = emulator.disk();
                let loop_cmd =
                    devguard::command_line(&LoopDevice::attach_command(&disk, o.sector_size));
                let loop_dev = LoopDevice::over(&disk, o.sector_size)?;
                Ok(Device {
                    dev: loop_dev.path().to_path_buf(),
                    bytes,
                    image: Some(image),
                    emulator: Some(emulator),
                    loop_dev: Some(loop_dev),
                    loop_cmd,
                    zero_cmd: String::new(),
                    work: work.clone(),
                })
            }
            DeviceKind::Loop => {
                let mut bytes = o.image_size.unwrap_or(need).max(320 << 20);
                bytes = bytes.div_ceil(1 << 20) << 20;
                if bytes < need {
                    return Err(Stop::Fail(format!(
                        "--image-size is smaller than the {need} bytes the workloads need"
                    )));
                }
                std::fs::create_dir_all(work)?;
                let work = std::fs::canonicalize(work)?;
                let image_path = work.join(format!("compare-{}.img", std::process::id()));
                let avail = avail_bytes(&work)?;
                if avail <= bytes {
                    return Err(Stop::Fail(format!(
                        "{} has {avail} bytes free; the image needs {bytes}",
                        work.display()
                    )));
                }
                let image = ImageFile::new(image_path.clone(), self.args.keep_image);
                say(&format!(
                    "zero-filling {} ({} MiB) and syncing it",
                    image_path.display(),
                    bytes >> 20
                ));
                let (bs, count) = if bytes % (16 << 20) == 0 {
                    ("16M", bytes >> 24)
                } else {
                    ("1M", bytes >> 20)
                };
                let mut dd = Command::new("dd");
                dd.args(["if=/dev/zero"])
                    .arg(format!("of={}", image_path.display()))
                    .arg(format!("bs={bs}"))
                    .arg(format!("count={count}"))
                    .args(["oflag=direct", "conv=fsync", "status=none"]);
                let zero_cmd = devguard::command_line(&dd);
                let status = dd.status()?;
                if self.interrupted() {
                    return Err(Stop::Interrupted);
                }
                if !status.success() {
                    return Err(Stop::Fail(format!("`{zero_cmd}` failed ({status})")));
                }
                let _ = Command::new("sync").arg(&image_path).status();
                let loop_cmd =
                    devguard::command_line(&LoopDevice::attach_command(&image_path, o.sector_size));
                let loop_dev = LoopDevice::over(&image_path, o.sector_size)?;
                Ok(Device {
                    dev: loop_dev.path().to_path_buf(),
                    bytes,
                    image: Some(image),
                    emulator: None,
                    loop_dev: Some(loop_dev),
                    loop_cmd,
                    zero_cmd,
                    work: work.clone(),
                })
            }
        }
    }

    fn run(
        &mut self,
        out: &mut dyn Write,
        label: String,
        git_rev: Option<String>,
    ) -> Result<ExitCode, Stop> {
        let started_all = Instant::now();
        // Dropped last but one (after the mounts, before the devices): put back when this
        // run's FUSE mounts are gone.
        let capacities = self.capacities()?;
        let max_capacity = capacities.iter().copied().max().unwrap_or(0);
        let need = need_bytes(max_capacity);
        // Saved before the emulator raises it; put back after the mounts and devices are gone.
        let max_pages = MaxPagesLimit::save();
        // On a VM, its vCPUs poll before they halt while the emulated drive runs, so that its
        // server wakes at once (devguard::GuestHaltPoll); put back at the end.
        let halt_poll = matches!(self.o.kind, DeviceKind::Emulated { .. })
            .then(|| devguard::GuestHaltPoll::raise(HALT_POLL_NS));
        let mut device = self.setup_device(need, max_capacity)?;
        if let Some(l) = device.loop_dev.as_mut() {
            let mode = if self.args.drive_queue {
                QueueMode::Drive
            } else {
                QueueMode::Plain
            };
            l.set_queue(mode)?;
        }
        if self.interrupted() {
            return Err(Stop::Interrupted);
        }
        std::fs::create_dir_all(self.out_dir.join("runs"))?;
        self.out_dir = std::fs::canonicalize(&self.out_dir)?;
        let mnt_dir = tempfile::Builder::new()
            .prefix(&format!("minfs-compare-mnt.{}.", std::process::id()))
            .tempdir_in("/tmp")?
            .keep();
        let _mnt_guard = RmDir(mnt_dir.clone());
        let whole = self.o.whole_drive;
        let tracing = if self.o.trace != Some(false) {
            let devnum = trace_dev_number(&device.dev)?;
            let t = Tracing::start(
                Path::new("/tmp"),
                &format!("minfs-compare-tracefs.{}", std::process::id()),
                &format!("minfs-compare-{}", std::process::id()),
                devnum,
                if whole { 262_144 } else { 65_536 },
            )?;
            if t.is_none() && self.o.trace == Some(true) {
                return Err(Stop::Fail(
                    "--trace: no block tracepoints in tracefs".into(),
                ));
            }
            t
        } else {
            None
        };
        let emulated_profile = match &self.o.kind {
            DeviceKind::Emulated { profile } => Some(profile.clone()),
            _ => None,
        };
        let mut profiles: Vec<String> = Vec::new();
        let mut variants: Vec<String> = Vec::new();
        if tracing.is_some() {
            // The drive model's three rule sets (the shipped one first; docs/HDD-MODEL.md,
            // "Write hits"), and the same drive as 4Kn.
            variants = [
                "st1000dm003",
                "st1000dm003-write-first",
                "st1000dm003-merge",
            ]
            .map(String::from)
            .to_vec();
            profiles = variants.clone();
            profiles.push("st1000dm003-4kn".into());
            if let Some(p) = &emulated_profile {
                if !profiles.contains(p) {
                    profiles.push(p.clone());
                }
            }
        }
        let sector =
            std::fs::read_to_string(devguard::queue_dir(&device.dev).join("logical_block_size"))
                .map(|s| s.trim().parse::<u64>().unwrap_or(0))
                .unwrap_or(0);
        let desc = match (&self.o.kind, &emulated_profile) {
            (_, Some(p)) if whole => format!(
                "{label} (loop device, direct I/O, over hddsim emulate --profile {p}: the whole \
                 {}-byte drive, backed by a sparse image)",
                device.bytes
            ),
            (_, Some(p)) => format!(
                "{label} (loop device, direct I/O, over hddsim emulate --profile {p}: the first \
                 {} MiB of the drive, backed by a sparse image)",
                device.bytes >> 20
            ),
            (DeviceKind::Loop, None) => format!(
                "{label} (loop device, direct I/O, over a {} MiB zero-filled image)",
                device.bytes >> 20
            ),
            _ => label.clone(),
        };
        let mut meta = setup::MetaJson {
            workloads: self.o.workloads.iter().map(|(n, _)| n.clone()).collect(),
            targets: self.o.targets.clone(),
            runs: if self.o.order_targets {
                self.o.runs.unwrap_or(0) as usize
            } else {
                0
            },
            scale: self.o.scales.default,
            scales: self
                .o
                .workloads
                .iter()
                .map(|(n, _)| (n.clone(), self.o.scales.of(n)))
                .collect(),
            seed: self.o.seed,
            block_size: self.o.block_size,
            device: desc,
            sector_size: sector,
            content: self.o.content.clone(),
            order: if self.o.order_targets {
                "targets"
            } else {
                "runs"
            }
            .into(),
            trace: tracing.is_some(),
            profiles: profiles.clone(),
            variants: variants.clone(),
            stopping: if self.o.budget.is_some() {
                "budget"
            } else {
                "fixed"
            }
            .into(),
            budget_s: self.o.budget.map(|b| b.as_secs()),
            max_rounds: self.o.budget.map(|_| self.o.max_rounds),
            decided: BTreeMap::new(),
            seconds_per_run: BTreeMap::new(),
            args: self.rerun_args(whole, device.bytes, tracing.is_some()),
            reference: emulated_profile
                .as_deref()
                .filter(|p| *p == defaults::REFERENCE_PROFILE)
                .and_then(|_| repo())
                .map(|r| r.join(defaults::REFERENCE))
                .filter(|d| d.join("compare.json").is_file())
                .and_then(|d| compare::reference::load_if_alike(&d, defaults::REFERENCE, true)),
            final_sync: true,
        };
        meta.write(&self.out_dir)?;

        let minfs = self.o.minfs.clone();
        let dev_path = device.dev.clone();
        let mut rec = target::Recorder::new(&dev_path, &mnt_dir, &minfs);
        let maker = target::Maker {
            dev: &dev_path,
            mnt: &mnt_dir,
            minfs: &minfs,
            block_size: self.o.block_size,
            xfs_4k_sectors: emulated_profile.is_some() && self.o.sector_size == 512,
            who: WHO,
            premade: device.emulator.is_some(),
        };
        if let (Some(e), Some(_)) = (&device.emulator, &tracing) {
            // Whether this emulator writes traces: one tried and removed.
            let probe = self.out_dir.join(".trace-probe");
            self.emulator_traces = e.trace_to(&probe).and_then(|()| e.trace_off()).is_ok();
            let _ = std::fs::remove_file(&probe);
        }
        if device.emulator.is_some() {
            self.templates = Some(template::Templates::new(
                &device.work,
                device.bytes,
                self.o.sector_size,
                &self.o.targets,
            ));
        }
        say(&format!(
            "device {} ({} MiB), results in {}",
            device.dev.display(),
            device.bytes >> 20,
            self.out_dir.display()
        ));
        let loop_state = self.rounds(
            &mut meta,
            &maker,
            &mut rec,
            &device,
            tracing.as_ref(),
            &profiles,
            &capacities,
            started_all,
        );
        let interrupted = matches!(loop_state, Err(Stop::Interrupted));
        let step_failed = match &loop_state {
            Err(Stop::Fail(m)) => {
                say(&format!("error: {m}"));
                self.failures += 1;
                true
            }
            Err(Stop::Usage(m)) | Err(Stop::Refused(m)) => {
                say(&format!("error: {m}"));
                self.failures += 1;
                true
            }
            _ => false,
        };
        if interrupted {
            say("interrupted: writing the report of the rounds done");
        }
        let _ = step_failed;
        // SETUP.md, the emulator's statistics and the self-check, the report.
        let info = setup::SetupInfo {
            o_kind_loop: matches!(self.o.kind, DeviceKind::Loop),
            whole,
            emulated: emulated_profile.clone(),
            hddsim: &self.o.hddsim,
            minfs: &self.o.minfs,
            bench: &self.o.bench,
            work: &device.work,
            dev: &device.dev,
            bytes: device.bytes,
            loop_cmd: &device.loop_cmd,
            zero_cmd: &device.zero_cmd,
            emu_cmd: device
                .emulator
                .as_ref()
                .map(Emulator::command)
                .unwrap_or(""),
            max_pages_before: max_pages.before(),
            halt_poll: halt_poll.as_ref().map(|h| h.values()),
            max_capacity,
            trace: tracing.is_some(),
            profiles: &profiles,
            variants: &variants,
            git_rev: git_rev.as_deref().unwrap_or("n/a"),
            bin_dir: self
                .o
                .bin_dir_given
                .then_some(self.args.bin_dir.as_deref())
                .flatten(),
            span_why: (emulated_profile.is_some() && !whole).then(|| {
                if self.o.span.is_some() {
                    "given with --span".to_string()
                } else {
                    SPAN_WHY.to_string()
                }
            }),
            elapsed: started_all.elapsed(),
        };
        setup::write_setup(&self.out_dir, &meta, &info, &rec)?;
        if let Some(e) = &device.emulator {
            let _ = std::fs::copy(e.stats(), self.out_dir.join("emulator-stats.json"));
        }
        if let Some(p) = &emulated_profile {
            setup::emulation_check(&self.out_dir, p);
        }
        // Everything made is undone before the report is rendered (it can take a while).
        drop(tracing);
        drop(_mnt_guard);
        drop(device);
        drop(max_pages);
        drop(halt_poll);
        match compare::render_dir(&self.out_dir) {
            Ok(_) => {}
            Err(e) => {
                self.failures += 1;
                say(&format!("minfs-bench report failed: {e}"));
            }
        }
        if self.args.compress {
            setup::compress(&self.out_dir);
        }
        say(&format!(
            "done: {} ({} failures)",
            self.out_dir.join("report.md").display(),
            self.failures
        ));
        let report = self.out_dir.join("report.md");
        if let Ok(text) = std::fs::read_to_string(&report) {
            let _ = writeln!(out);
            let _ = out.write_all(setup::summary(&text).as_bytes());
            let _ = writeln!(out, "Details, tables and plots: {}", report.display());
        }
        let _ = out.flush();
        if interrupted {
            return Err(Stop::Interrupted);
        }
        Ok(if self.failures == 0 {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        })
    }

    /// The rounds: until the count (fixed), or until every comparison is decided, the next
    /// round would not fit the budget, or --max-rounds.
    #[allow(clippy::too_many_arguments)]
    fn rounds(
        &mut self,
        meta: &mut setup::MetaJson,
        maker: &target::Maker<'_>,
        rec: &mut target::Recorder,
        device: &Device,
        tracing: Option<&Tracing>,
        profiles: &[String],
        capacities: &[u64],
        started: Instant,
    ) -> Result<(), Stop> {
        let workloads: Vec<String> = self.o.workloads.iter().map(|(n, _)| n.clone()).collect();
        let targets = self.o.targets.clone();
        let baseline = targets.iter().position(|t| t == "minfs").unwrap_or(0);
        let base_name = targets[baseline].clone();
        // The comparisons still undecided, per workload.
        let mut undecided: BTreeMap<String, BTreeSet<String>> = workloads
            .iter()
            .map(|w| {
                (
                    w.clone(),
                    targets
                        .iter()
                        .filter(|t| **t != base_name)
                        .cloned()
                        .collect(),
                )
            })
            .collect();
        let total_cmp: usize = undecided.values().map(BTreeSet::len).sum();
        let mut timings = Timings::default();
        let fixed = self.o.runs;
        let budget = self.o.budget;

        if self.o.order_targets {
            let n = fixed.unwrap_or(1);
            for t in &targets {
                for (wi, w) in workloads.iter().enumerate() {
                    for k in 1..=n as usize {
                        let (d, result) = self.one_run(
                            maker,
                            rec,
                            device,
                            tracing,
                            profiles,
                            w,
                            wi,
                            t,
                            k,
                            capacities[wi],
                        )?;
                        timings.add(w, t, d);
                        say(&format!(
                            "[run {k} of {n}] {w} {t}: {result} (elapsed {})",
                            plan::human(started.elapsed())
                        ));
                    }
                }
            }
            return Ok(());
        }

        // A warm-up run, not timed, its files removed: on the emulated drive the first run
        // after the emulator starts differed from the later ones by 5–11 % in the pilots
        // (minfs's first rand-mixed-1m and rand-oldest-1m runs, whichever target ran first:
        // results/2026-11-27-vm-emulated-pilots), which round 1 would carry into a comparison.
        if device.emulator.is_some() && !workloads.is_empty() {
            let (_, result) = self.one_run(
                maker,
                rec,
                device,
                tracing,
                &[],
                &workloads[0],
                0,
                &base_name,
                0,
                capacities[0],
            )?;
            remove_run_files(
                &self
                    .out_dir
                    .join("runs")
                    .join(&workloads[0])
                    .join(&base_name),
                0,
            );
            say(&format!(
                "warm-up run ({} {base_name}, not counted): {result} (elapsed {})",
                workloads[0],
                plan::human(started.elapsed())
            ));
        }

        let mut round = 0usize;
        // Per undecided comparison, its rounds and the rounds it would need (after each round;
        // compare::allocate prices it by them), and which waited the last round.
        let mut projected: BTreeMap<(String, String), (usize, Option<usize>)> = BTreeMap::new();
        let mut waited: BTreeSet<(String, String)> = BTreeSet::new();
        loop {
            let next = round + 1;
            // A budget run gives its next round to the comparisons nearest a verdict that the
            // budget left can afford (compare::allocate); the others wait.
            let waiting: BTreeSet<(String, String)> = match (fixed, budget) {
                (None, Some(b)) if next > allocate::ALLOCATE_FROM => {
                    let open: Vec<(String, String)> = undecided
                        .iter()
                        .flat_map(|(w, ts)| ts.iter().map(move |t| (w.clone(), t.clone())))
                        .collect();
                    let items: Vec<allocate::Open> = open
                        .iter()
                        .map(|c| {
                            let (rounds, needed) = projected.get(c).copied().unwrap_or((0, None));
                            allocate::Open {
                                workload: workloads.iter().position(|x| *x == c.0).unwrap_or(0),
                                rounds,
                                needed,
                                cost: timings.estimate(&c.0, &c.1).unwrap_or_default(),
                            }
                        })
                        .collect();
                    let take = allocate::allocate(
                        &items,
                        |wi| {
                            timings
                                .estimate(&workloads[wi], &base_name)
                                .unwrap_or_default()
                        },
                        b.saturating_sub(started.elapsed()),
                    );
                    open.into_iter()
                        .zip(take)
                        .filter(|(_, t)| !t)
                        .map(|(c, _)| c)
                        .collect()
                }
                _ => BTreeSet::new(),
            };
            if waiting != waited && !waiting.is_empty() {
                say(&format!(
                    "round {next} goes to the comparisons nearest a verdict; waiting: {}",
                    waiting
                        .iter()
                        .map(|c| {
                            let (n, needed) = projected.get(c).copied().unwrap_or((0, None));
                            format!(
                                "{} {} ({n} rounds, {})",
                                c.0,
                                c.1,
                                needed.map_or_else(
                                    || "far from a verdict".to_string(),
                                    |k| format!("about {k} needed")
                                )
                            )
                        })
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            waited = waiting.clone();
            // What the next round runs: per workload, the baseline and the undecided targets
            // not waiting.
            let active: Vec<(usize, Vec<&str>)> = workloads
                .iter()
                .enumerate()
                .filter_map(|(wi, w)| {
                    let mut set: BTreeSet<&str> = undecided[w]
                        .iter()
                        .filter(|t| !waiting.contains(&(w.clone(), (*t).clone())))
                        .map(String::as_str)
                        .collect();
                    if set.is_empty() {
                        return None;
                    }
                    set.insert(&base_name);
                    Some((wi, round_order(&targets, next, &set)))
                })
                .collect();
            let plan_of = |active: &Vec<(usize, Vec<&str>)>| -> Vec<(String, String)> {
                active
                    .iter()
                    .flat_map(|(wi, ts)| ts.iter().map(|t| (workloads[*wi].clone(), t.to_string())))
                    .collect()
            };
            let mut plan = plan_of(&active);
            match (fixed, budget) {
                (Some(n), _) if next > n as usize => break,
                (None, Some(b)) => {
                    if plan.is_empty() {
                        say(&format!("every comparison is decided after {round} rounds"));
                        break;
                    }
                    if next > self.o.max_rounds as usize {
                        say(&format!("--max-rounds {} reached", self.o.max_rounds));
                        break;
                    }
                    // The round's runs that fit the budget left: all of them, or (the last
                    // round) the comparisons that still fit, each workload with its baseline.
                    // Which comparisons get another round may depend on anything seen so far
                    // without harming the confidence sequences (compare::sequential).
                    let left = b.saturating_sub(started.elapsed());
                    let fitted = allocate::fit_round(
                        &active,
                        &base_name,
                        |wi, t| timings.estimate(&workloads[wi], t),
                        left,
                    );
                    let est = timings
                        .estimate_all(plan.iter().map(|(w, t)| (w.as_str(), t.as_str())))
                        .unwrap_or_default();
                    if fitted.is_empty() {
                        say(&format!(
                            "the budget ({}) cannot fit another run of round {next} (the round: \
                             about {}; {} spent)",
                            plan::human(b),
                            plan::human(est),
                            plan::human(started.elapsed())
                        ));
                        break;
                    }
                    if fitted != active {
                        let part = plan_of(&fitted);
                        say(&format!(
                            "the budget ({}) fits part of round {next} ({} of its {} runs; the \
                             round: about {}; {} spent): {}",
                            plan::human(b),
                            part.len(),
                            plan.len(),
                            plan::human(est),
                            plan::human(started.elapsed()),
                            fitted
                                .iter()
                                .map(|(wi, ts)| format!("{} {}", workloads[*wi], ts.join(",")))
                                .collect::<Vec<_>>()
                                .join("; ")
                        ));
                        plan = part;
                    }
                }
                _ => {}
            }
            for (i, (w, t)) in plan.iter().enumerate() {
                let wi = workloads.iter().position(|x| x == w).unwrap_or(0);
                let ran = self.one_run(
                    maker,
                    rec,
                    device,
                    tracing,
                    profiles,
                    w,
                    wi,
                    t,
                    next,
                    capacities[wi],
                );
                let (d, result) = match ran {
                    Ok(r) => r,
                    Err(Stop::Interrupted) => {
                        // The round cut short is dropped whole, so that the report holds the
                        // rounds done, each with all of its pairs.
                        for (w, t) in &plan[..i] {
                            remove_run_files(&self.out_dir.join("runs").join(w).join(t), next);
                        }
                        return Err(Stop::Interrupted);
                    }
                    Err(e) => return Err(e),
                };
                timings.add(w, t, d);
                let rest = timings
                    .estimate_all(plan[i + 1..].iter().map(|(w, t)| (w.as_str(), t.as_str())))
                    .unwrap_or_default();
                let next_round = timings
                    .estimate_all(plan.iter().map(|(w, t)| (w.as_str(), t.as_str())))
                    .unwrap_or_default();
                let (more, budget_left) = match (fixed, budget) {
                    (Some(n), _) => ((n as usize).saturating_sub(next) as u32, None),
                    (None, Some(b)) => (
                        self.o.max_rounds.saturating_sub(next as u32),
                        Some(b.saturating_sub(started.elapsed())),
                    ),
                    _ => (0, None),
                };
                let left = time_left(rest, next_round, more, budget_left);
                let und: usize = undecided.values().map(BTreeSet::len).sum();
                let mut progress = format!("elapsed {}", plan::human(started.elapsed()));
                if budget.is_some() {
                    progress.push_str(&format!("; undecided {und} of {total_cmp}"));
                }
                if !left.is_zero() {
                    progress.push_str(&format!("; about {} left", plan::human(left)));
                }
                let head = match fixed {
                    Some(n) => format!("[round {next} of {n}]"),
                    None => format!("[round {next}]"),
                };
                say(&format!("{head} {w} {t}: {result} ({progress})"));
            }
            round = next;
            meta.runs = round;
            meta.seconds_per_run = timings.means();
            if budget.is_some() {
                let cmp = compare::layout::load(&self.out_dir).map_err(|e| {
                    Stop::Fail(format!("reading the runs after round {round}: {e}"))
                })?;
                let judged = compare::decide(&cmp);
                for (wi, row) in compare::projections(&cmp).iter().enumerate() {
                    for (ti, p) in row.iter().enumerate() {
                        if let Some(p) = p {
                            projected
                                .insert((cmp.workloads[wi].clone(), cmp.targets[ti].clone()), *p);
                        }
                    }
                }
                for (wi, w) in cmp.workloads.iter().enumerate() {
                    for (ti, t) in cmp.targets.iter().enumerate() {
                        let j = judged.get(wi).and_then(|r| r.get(ti)).copied().flatten();
                        if let Some(j) = j {
                            if j != Judgement::Undecided {
                                if let Some(set) = undecided.get_mut(w) {
                                    if set.remove(t) {
                                        meta.decided
                                            .entry(w.clone())
                                            .or_default()
                                            .insert(t.clone(), round);
                                    }
                                }
                            }
                        }
                    }
                }
            }
            meta.write(&self.out_dir)?;
        }
        Ok(())
    }

    /// One run of workload `w` on target `t` as run `k`: prepared, run, traced, replayed,
    /// released. Its time (all of that) and its result for the progress line.
    #[allow(clippy::too_many_arguments)]
    fn one_run(
        &mut self,
        maker: &target::Maker<'_>,
        rec: &mut target::Recorder,
        device: &Device,
        tracing: Option<&Tracing>,
        profiles: &[String],
        w: &str,
        wi: usize,
        t: &str,
        k: usize,
        capacity: u64,
    ) -> Result<(Duration, String), Stop> {
        if self.interrupted() {
            return Err(Stop::Interrupted);
        }
        let began = Instant::now();
        let dir = self.out_dir.join("runs").join(w).join(t);
        std::fs::create_dir_all(&dir)?;
        let base = dir.join(format!("run-{k}"));
        remove_run_files(&dir, k);
        let file = |ext: &str| PathBuf::from(format!("{}.{ext}", base.display()));
        if let (Some(e), Some(image)) = (&device.emulator, &device.image) {
            // As a deployment: the run starts right after the filesystem is made and mounted,
            // on a drive of zeros: the emulator's drive flushed (`sync FILE` fsyncs it), the
            // image punched back to holes, caches dropped.
            let disk = e.disk();
            let _ = Command::new("sync").arg(&disk).status();
            let punch = Command::new("fallocate")
                .args(["--punch-hole", "--offset", "0", "--length"])
                .arg(device.bytes.to_string())
                .arg(image.path())
                .status()?;
            if !punch.success() {
                return Err(Stop::Fail(format!(
                    "cannot punch {} back to holes",
                    image.path().display()
                )));
            }
            rec.record(
                t,
                &format!(
                    "sync EMULATOR/disk && fallocate --punch-hole --offset 0 --length {} IMAGE",
                    device.bytes
                ),
            );
            if let Some(tp) = self.templates.as_mut() {
                tp.restore(maker, rec, t, image.path())
                    .map_err(|e| Stop::Fail(format!("restoring {t}'s filesystem: {e}")))?;
            }
            drop_caches();
            rec.record(t, "sync && echo 3 > /proc/sys/vm/drop_caches");
        }
        let prepared = maker.prepare(rec, t, capacity);
        let prepared = match prepared {
            Ok(p) => p,
            Err(e) => {
                if self.interrupted() {
                    return Err(Stop::Interrupted);
                }
                return Err(Stop::Fail(format!("preparing {t} for {w}: {e}")));
            }
        };
        if device.emulator.is_none() {
            drop_caches();
        }
        let mut reset_refused = None;
        if let Some(e) = &device.emulator {
            // Every run from the same drive state, the one its replay starts from: once the
            // filesystem is mounted, the drive's cache is flushed and the model put back as
            // at power-on (cache empty, head at sector 0), whatever ran before. A filesystem
            // still writing in the background (ext4-defaults' lazy init) can keep the cache
            // dirty: tried five times, then the run goes ahead from the drive as it is, which
            // its emulator.json says.
            let disk = e.disk();
            for _ in 0..5 {
                let _ = Command::new("sync").arg(&disk).status();
                match e.reset() {
                    Ok(()) => {
                        reset_refused = None;
                        break;
                    }
                    Err(err) => reset_refused = Some(err.to_string()),
                }
            }
            rec.record(t, "sync EMULATOR/disk && echo reset > EMULATOR/control");
        }
        let scale = self.o.scales.of(w);
        let wfile = &self.o.workloads[wi].1;
        let mut cmd = Command::new(&self.o.bench);
        cmd.arg("run").arg("--workload").arg(wfile);
        // Every run ends with its data on the media (a final journal sync, timed): a drive's
        // write cache would otherwise leave its last 64 MB unpaid for, a tenth to a third of
        // a sequential run's data at the default's scales (docs/COMPARISON.md, "The final
        // sync").
        cmd.args(["--scale", &scale.to_string(), "--final-sync"]);
        let mut shown = format!(
            "minfs-bench run --workload bencher-workloads/workloads/W.wl --scale {scale} --final-sync"
        );
        if let Some(s) = self.o.seed {
            cmd.args(["--seed", &s.to_string()]);
            shown.push_str(&format!(" --seed {s}"));
        }
        cmd.args(["--backend", &prepared.backend]);
        shown.push_str(&format!(" --backend {}", prepared.backend));
        if let Some(bs) = prepared.block_size {
            cmd.args(["--block-size", &bs.to_string()]);
            shown.push_str(&format!(" --block-size {bs}"));
        }
        if prepared.no_journal_copy {
            cmd.arg("--no-journal-copy");
            shown.push_str(" --no-journal-copy");
        }
        cmd.args(["--content", &self.o.content]);
        cmd.arg("--json").arg(file("json"));
        cmd.arg("--op-log").arg(file("oplog"));
        cmd.arg("--no-progress");
        shown.push_str(&format!(
            " --content {} --json OUT/runs/W/{t}/run-K.json --op-log OUT/runs/W/{t}/run-K.oplog --no-progress",
            self.o.content
        ));
        if target::base(t) == "raw" {
            cmd.arg("--force");
            shown.push_str(" --force");
        }
        rec.record(t, &shown);
        // What the emulated drive did during the run alone: its statistics before and after.
        let stats_before = device
            .emulator
            .as_ref()
            .and_then(|e| runstats::read_json(&e.stats()));
        // On the emulated drive the emulator writes the trace: the block events its arrivals
        // came from, so that the replay sees what the drive saw (a second tracefs instance
        // stamps the same events up to tens of µs later, enough to move a request by a
        // revolution in the model).
        let emulator_trace = match (&device.emulator, tracing) {
            (Some(e), Some(_)) if self.emulator_traces => Some(e),
            _ => None,
        };
        if let Some(e) = emulator_trace {
            e.trace_to(&file("trace"))?;
        } else if let Some(tr) = tracing {
            tr.on()?;
        }
        let log = std::fs::File::create(file("log"))?;
        cmd.stdout(log.try_clone()?)
            .stderr(log)
            .stdin(Stdio::null());
        let run_start = Instant::now();
        let status = self.wait_child(&mut cmd);
        let secs = run_start.elapsed().as_secs_f64();
        if let Some(e) = emulator_trace {
            let _ = e.trace_off();
        } else if let Some(tr) = tracing {
            let _ = tr.off();
        }
        let status = match status {
            Ok(s) => s,
            Err(e) => {
                // Interrupted (or the child could not start): nothing of this run stays.
                drop(prepared);
                remove_run_files(&dir, k);
                return Err(e);
            }
        };
        let ok = status.success();
        if let (Some(e), Some(before)) = (&device.emulator, &stats_before) {
            if let Some(after) = runstats::read_json(&e.stats()) {
                let mut delta = runstats::emulator_run_stats(before, &after);
                if let (Some(why), Some(o)) = (&reset_refused, delta.as_object_mut()) {
                    o.insert("reset_refused".into(), why.clone().into());
                }
                std::fs::write(
                    file("emulator.json"),
                    serde_json::to_vec_pretty(&delta).unwrap_or_default(),
                )?;
            }
        }
        let result = if ok {
            format!("{secs:.1}s")
        } else {
            self.failures += 1;
            let logtext = std::fs::read_to_string(file("log")).unwrap_or_default();
            std::fs::write(
                file("error"),
                format!(
                    "minfs-bench exited with {}\n{logtext}",
                    status.code().unwrap_or(-1)
                ),
            )?;
            let _ = std::fs::remove_file(file("json"));
            format!("FAILED ({status}), see {}", file("error").display())
        };
        let _ = std::fs::remove_file(file("log"));
        if let Some(tr) = tracing {
            let overrun = if emulator_trace.is_some() {
                0
            } else {
                tr.save(&file("trace"))?
            };
            if overrun > 0 {
                std::fs::write(
                    file("trace-warning"),
                    format!("tracefs lost {overrun} events (buffer overrun)\n"),
                )?;
            }
            if ok {
                for p in profiles {
                    let mj = file(&format!("model-{p}.json"));
                    let me = file(&format!("model-{p}.error"));
                    let mut c = Command::new(&self.o.bench);
                    c.args(["hdd-replay", "--profile", p, "--run"])
                        .arg(file("json"))
                        .arg("--json")
                        .arg(&mj)
                        .arg(file("trace"))
                        .arg(file("oplog"))
                        .stdout(Stdio::null())
                        .stderr(std::fs::File::create(&me)?);
                    match self.wait_child(&mut c) {
                        Ok(s) if s.success() => {
                            let _ = std::fs::remove_file(&me);
                        }
                        Ok(_) => {
                            self.failures += 1;
                            say(&format!("hdd-replay {p} failed for {}", base.display()));
                        }
                        Err(e) => {
                            let _ = std::fs::remove_file(&mj);
                            let _ = std::fs::remove_file(&me);
                            return Err(e);
                        }
                    }
                }
            }
        }
        maker.record_release(rec, t, &prepared);
        drop(prepared);
        if let Some(e) = &device.emulator {
            // Kept after every run, so that a comparison cut short still has them.
            let _ = std::fs::copy(e.stats(), self.out_dir.join("emulator-stats.json"));
        }
        Ok((began.elapsed(), result))
    }

    /// Runs `cmd` to its end; on SIGINT or SIGTERM (the flag) kills it and returns
    /// `Interrupted`.
    fn wait_child(&self, cmd: &mut Command) -> Result<ExitStatus, Stop> {
        let mut child = cmd.spawn().map_err(|e| {
            Stop::Fail(format!("cannot start {}: {e}", devguard::command_line(cmd)))
        })?;
        loop {
            if let Some(s) = child.try_wait()? {
                if self.interrupted() {
                    return Err(Stop::Interrupted);
                }
                return Ok(s);
            }
            if self.interrupted() {
                let _ = child.kill();
                let _ = child.wait();
                return Err(Stop::Interrupted);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Removes `run-K.*` in `dir` (what an earlier or an interrupted run K left).
fn remove_run_files(dir: &Path, k: usize) {
    let prefix = format!("run-{k}.");
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with(&prefix) || name.starts_with(&format!(".{prefix}")) {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
}

fn drop_caches() {
    let _ = Command::new("sync").status();
    let _ = std::fs::write("/proc/sys/vm/drop_caches", "3");
}

/// A directory made here, removed (if empty) when dropped.
struct RmDir(PathBuf);

impl Drop for RmDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.0);
    }
}

fn install_missing_tools() -> Result<(), Stop> {
    let mut missing = Vec::new();
    for (prog, pkg) in [
        ("mkfs.ext4", "e2fsprogs"),
        ("mkfs.xfs", "xfsprogs"),
        ("losetup", "util-linux"),
        ("wipefs", "util-linux"),
    ] {
        if devguard::which(prog).is_none() && !missing.contains(&pkg) {
            missing.push(pkg);
        }
    }
    let apt = devguard::which("apt-get").is_some();
    // The report's PNGs draw their text in a system sans-serif font (the SVGs need none).
    if apt && !Path::new("/usr/share/fonts/truetype/dejavu").is_dir() {
        missing.push("fonts-dejavu-core");
    }
    if missing.is_empty() {
        return Ok(());
    }
    if !apt {
        return Err(Stop::Fail(format!(
            "missing tools: install {}",
            missing.join(" ")
        )));
    }
    say(&format!("installing {}", missing.join(" ")));
    let ok = Command::new("apt-get")
        .args(["update", "-qq"])
        .env("DEBIAN_FRONTEND", "noninteractive")
        .status()
        .is_ok_and(|s| s.success())
        && Command::new("apt-get")
            .args(["install", "-y", "-qq"])
            .args(&missing)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
    if ok {
        Ok(())
    } else {
        Err(Stop::Fail(format!(
            "installing {} failed",
            missing.join(" ")
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_with_overrides() {
        assert!(valid_profile("st1000dm003"));
        assert!(valid_profile("st1000dm003+write_hit_clean=keep,x=1.5"));
        assert!(!valid_profile("st1000dm003+"));
        assert!(!valid_profile("a b"));
        assert!(!valid_profile(""));
    }

    #[test]
    fn the_max_rounds_flag_defaults_to_the_constant() {
        use clap::Parser;
        #[derive(Parser)]
        struct Cli {
            #[command(flatten)]
            args: CompareArgs,
        }
        let cli = Cli::try_parse_from(["compare"]).unwrap();
        assert_eq!(cli.args.max_rounds, defaults::MAX_ROUNDS.to_string());
    }

    #[test]
    fn the_default_span_holds_the_workloads() {
        assert_eq!(default_span(1), 320 << 20);
        assert_eq!(default_span((400 << 20) + 1), 401 << 20);
        assert_eq!(need_bytes(100 << 20), (115 << 20) + (256 << 20));
    }
}
