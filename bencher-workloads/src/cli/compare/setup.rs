//! What `compare` writes besides the runs: compare.json, SETUP.md, emulation-check.md, the
//! compressed op-logs and traces, and the summary it prints.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde::Serialize;

/// How each run on the emulated drive starts and how the drive's replies are timed
/// (SETUP.md's device row, after the span).
const EMULATED_RUN: &str = "Before each run the drive is flushed and its image punched back to \
     holes (`sync EMULATOR/disk; fallocate --punch-hole --offset 0 --length SIZE IMAGE`); the \
     target's filesystem, made once per comparison on a sparse image of the drive's size (its \
     template, see Commands), is written onto the image outside the drive's model, as a disk \
     whose mkfs is long done; caches are dropped; the filesystem is mounted (ext4: every \
     group's bitmaps loaded, `cat /proc/fs/ext4/DEV/mb_groups`, as a long-mounted ext4 has \
     them); then the drive's cache is flushed and the model put back as at power-on (`echo \
     reset > EMULATOR/control`: cache empty, head at sector 0), so that every run starts from \
     the same drive state, the one its replay starts from. During the run each request \
     arrives at the model when the loop device issued it (its `block_rq_issue`), and its \
     reply is sent early by the host's reply path, measured online per operation and size \
     (`emulator-stats.json`'s `reply_path`), so that the loop device completes it at its \
     modelled completion; the emulator's serving threads run at SCHED_FIFO 10 \
     (docs/HDD-MODEL.md, \"The emulator's timing\"). The block trace of each run is the \
     emulator's own (`trace PATH` to EMULATOR/control): the events its arrivals came from. \
     What the drive did in each run alone: `runs/W/T/run-K.emulator.json`; at the end: \
     `emulator-stats.json`";

use super::target::Recorder;

/// compare.json.
#[derive(Debug, Clone, Serialize)]
pub struct MetaJson {
    pub workloads: Vec<String>,
    pub targets: Vec<String>,
    /// The rounds done (rewritten after every round).
    pub runs: usize,
    /// The default scale given with --scale (null: each workload's own, in `scales`).
    pub scale: Option<f64>,
    /// Each workload's scale.
    pub scales: BTreeMap<String, f64>,
    pub seed: Option<u64>,
    pub block_size: Option<u32>,
    pub device: String,
    pub sector_size: u64,
    pub content: String,
    pub order: String,
    pub trace: bool,
    pub profiles: Vec<String>,
    pub variants: Vec<String>,
    /// `budget` or `fixed`.
    pub stopping: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget_s: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_rounds: Option<u32>,
    /// Per workload and target, the round after which its comparison was decided.
    pub decided: BTreeMap<String, BTreeMap<String, usize>>,
    /// Per workload and target, the mean time of one of its runs so far in seconds: the
    /// preparation (filesystem made and mounted, caches dropped), the run and its replays, as
    /// the runner prices a round (rewritten after every round). The report sizes "To decide
    /// the rest" from it.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub seconds_per_run: BTreeMap<String, BTreeMap<String, f64>>,
    /// The options that make this run's device and settings again — `--device`, `--span` or
    /// `--whole-drive` or `--image-size`, and `--drive-queue`, `--sector-size`, `--content`,
    /// `--seed`, `--block-size`, `--no-trace` where not the default — for a later run of the same kind (the
    /// report's command for the comparisons a budget left undecided).
    pub args: Vec<String>,
    /// The full-scale run the comparison is held against, with its ratios (on the emulated
    /// drive, where the repository has it: `compare::defaults::REFERENCE`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reference: Option<crate::compare::reference::Reference>,
    /// Every run ended with a journal sync, timed (`minfs-bench run --final-sync`; since
    /// 2026-11-29).
    pub final_sync: bool,
}

impl MetaJson {
    /// Writes `DIR/compare.json` (a temporary file renamed over it).
    pub fn write(&self, dir: &Path) -> io::Result<()> {
        let mut text = serde_json::to_string_pretty(self).map_err(io::Error::other)?;
        text.push('\n');
        write_atomic(&dir.join("compare.json"), text.as_bytes())
    }
}

/// Writes `path` whole or not at all: a temporary file in its directory, renamed over it.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.tmp"));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}

/// What SETUP.md says beyond compare.json.
pub struct SetupInfo<'a> {
    pub o_kind_loop: bool,
    pub whole: bool,
    pub emulated: Option<String>,
    pub hddsim: &'a Path,
    pub minfs: &'a Path,
    pub bench: &'a Path,
    pub work: &'a Path,
    pub dev: &'a Path,
    pub bytes: u64,
    pub loop_cmd: &'a str,
    pub zero_cmd: &'a str,
    pub emu_cmd: &'a str,
    pub max_pages_before: Option<&'a str>,
    /// The guest halt polling limit before and as set (`devguard::GuestHaltPoll`), on the
    /// emulated drive.
    pub halt_poll: Option<(Option<&'a str>, Option<&'a str>)>,
    pub max_capacity: u64,
    pub trace: bool,
    pub profiles: &'a [String],
    pub variants: &'a [String],
    pub git_rev: &'a str,
    pub bin_dir: Option<&'a Path>,
    pub span_why: Option<String>,
    pub elapsed: Duration,
}

fn sh(cmd: &str) -> String {
    Command::new("sh")
        .args(["-c", cmd])
        .stderr(Stdio::null())
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

fn out_of(prog: &Path, args: &[&str]) -> String {
    Command::new(prog)
        .args(args)
        .stderr(Stdio::null())
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

fn sysval(p: &Path) -> String {
    std::fs::read_to_string(p)
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "n/a".into())
}

fn q(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Writes `DIR/SETUP.md`.
pub fn write_setup(
    dir: &Path,
    meta: &MetaJson,
    i: &SetupInfo<'_>,
    rec: &Recorder,
) -> io::Result<()> {
    let mut s = String::new();
    let queue = devguard::queue_dir(i.dev);
    let devname = queue
        .parent()
        .and_then(|p| p.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let dev = i.dev.display();
    let work = q(&i.work.display().to_string());
    let host_fs = sh(&format!("findmnt -no SOURCE,FSTYPE -T {work} | tr -s ' '"));
    let _ = writeln!(s, "# Setup of this comparison\n");
    let _ = writeln!(
        s,
        "Written by `minfs-bench compare` (`scripts/compare.sh`); `report.md` is rendered from \
         the runs by `minfs-bench report`.\n"
    );
    let _ = writeln!(s, "| | |\n| --- | --- |");
    let row = |s: &mut String, k: &str, v: &str| {
        let _ = writeln!(s, "| {k} | {v} |");
    };
    row(&mut s, "date (UTC)", &sh("date -u '+%Y-%m-%d %H:%M'"));
    row(&mut s, "host", &sh("hostname -s 2>/dev/null || hostname"));
    row(&mut s, "kernel", &sh("uname -srvm"));
    row(
        &mut s,
        "CPU",
        &format!(
            "{}, {} online CPUs",
            sh("lscpu | sed -n 's/^Model name: *//p' | sed -n 1p"),
            sh("nproc")
        ),
    );
    row(
        &mut s,
        "RAM",
        &sh("awk '/^MemTotal/ { printf \"%.1f GiB\", $2 / 1048576 }' /proc/meminfo"),
    );
    // What `hddsim validate` names the profile by (without running its checks).
    let validate = |p: &str| {
        hddsim::profile::load(p)
            .map(|p| format!("{} ({})", p.stem, p.name))
            .unwrap_or_else(|e| e.to_string())
            .replace('|', "\\|")
    };
    let dio = sysval(
        &Path::new("/sys/class/block")
            .join(&devname)
            .join("loop/dio"),
    );
    if let Some(p) = &i.emulated {
        let version = out_of(i.hddsim, &["--version"]);
        if i.whole {
            row(
                &mut s,
                "device",
                &format!(
                    "`{dev}`, a loop device (`{}`) over the file of an emulated drive of the \
                     profile's whole capacity, {} bytes: `{}` ({version}), profile `{p}` ({}), \
                     backed by a sparse image on {host_fs} (zeros are stored as holes). Every \
                     filesystem spans the whole drive, as on the real one: ext4's groups across it, \
                     XFS's log in its middle. {RUN}",
                    i.loop_cmd,
                    i.bytes,
                    i.emu_cmd,
                    validate(p),
                    RUN = EMULATED_RUN.replace("SIZE", &i.bytes.to_string())
                ),
            );
        } else {
            row(
                &mut s,
                "device",
                &format!(
                    "`{dev}`, a loop device (`{}`) over the file of an emulated drive, its first \
                     {} bytes ({} MiB): `{}` ({version}), profile `{p}` ({}), backed by a sparse \
                     image on {host_fs} (zeros are stored as holes). {RUN}",
                    i.loop_cmd,
                    i.bytes,
                    i.bytes >> 20,
                    i.emu_cmd,
                    validate(p),
                    RUN = EMULATED_RUN.replace("SIZE", &i.bytes.to_string())
                ),
            );
            if let Some(why) = &i.span_why {
                row(
                    &mut s,
                    "span of the emulated drive",
                    &format!("{} bytes: {why}", i.bytes),
                );
            }
        }
        row(
            &mut s,
            "XFS sector size",
            "`mkfs.xfs -s size=4096`: the real ST1000DM003 reports 4096-byte physical sectors \
             (512e), from which mkfs.xfs takes a 4096-byte sector size (its log writes are then \
             whole physical sectors); a loop device over a file reports 512-byte physical \
             sectors, so it is given explicitly",
        );
        row(&mut s, "loop direct I/O", &dio);
    } else if i.o_kind_loop {
        row(
            &mut s,
            "device",
            &format!(
                "`{dev}`, a loop device (`{}`) over a {} MiB image on {host_fs} ({}), \
                 zero-filled and synced before the first run: `{}`",
                i.loop_cmd,
                i.bytes >> 20,
                sh(&format!("findmnt -no OPTIONS -T {work}")),
                i.zero_cmd
            ),
        );
        let src = sh(&format!("findmnt -no SOURCE -T {work}"));
        let mut disk = sh(&format!(
            "lsblk -no PKNAME {} 2>/dev/null | sed -n 1p",
            q(&src)
        ));
        if disk.is_empty() {
            disk = Path::new(&src)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
        }
        let mut hd = sh(&format!(
            "lsblk -dno NAME,SIZE,ROTA,MODEL /dev/{disk} 2>/dev/null | tr -s ' '"
        ));
        if hd.is_empty() {
            hd = "n/a".into();
        }
        row(
            &mut s,
            "image's host disk",
            &format!("{hd} (name, size, rotational, model as lsblk reports)"),
        );
        row(&mut s, "loop direct I/O", &dio);
    } else {
        row(
            &mut s,
            "device",
            &format!(
                "`{dev}`, {}",
                sh(&format!(
                    "lsblk -dno SIZE,MODEL {} | tr -s ' '",
                    q(&dev.to_string())
                ))
            ),
        );
    }
    for f in [
        "rotational",
        "logical_block_size",
        "physical_block_size",
        "scheduler",
        "write_cache",
        "max_sectors_kb",
        "nr_requests",
    ] {
        row(&mut s, &format!("queue/{f}"), &sysval(&queue.join(f)));
    }
    row(
        &mut s,
        "queue/max_segments, max_segment_size",
        &format!(
            "{}, {} (a request of more scattered pages than max_segments is split: a 1 MiB \
             buffer of 4 KiB pages is 256)",
            sysval(&queue.join("max_segments")),
            sysval(&queue.join("max_segment_size"))
        ),
    );
    row(
        &mut s,
        "fs.fuse.max_pages_limit",
        &format!(
            "{} before the run; `hddsim emulate` and `minfs mount` raise it for their mounts (a \
             Cannyls lump is then one FUSE request); put back to {} when the run ends",
            i.max_pages_before.unwrap_or("absent"),
            i.max_pages_before.unwrap_or("it")
        ),
    );
    if let Some((before, set)) = i.halt_poll {
        let text = match (before, set) {
            (None, _) => "no haltpoll cpuidle driver here (not a KVM guest with it): nothing \
                          changed"
                .to_string(),
            (Some(b), Some(n)) => format!(
                "raised from {b} to {n} ns while the emulated drive ran, put back at the end: \
                 an idle vCPU polls before it halts, so the emulator's threads wake at once \
                 (docs/HDD-MODEL.md, \"The emulator's timing\")"
            ),
            (Some(b), None) => {
                format!("{b} ns, left as it was (no lower than the comparison asks)")
            }
        };
        row(&mut s, "guest halt polling (guest_halt_poll_ns)", &text);
    }
    row(
        &mut s,
        "transparent huge pages",
        &format!(
            "{} (`minfs mount` keeps its buffers on huge pages unless `never`; Cannyls' own \
             buffers are the allocator's 4 KiB pages)",
            sysval(Path::new("/sys/kernel/mm/transparent_hugepage/enabled"))
        ),
    );
    row(&mut s, "workloads", &meta.workloads.join(" "));
    row(&mut s, "targets", &meta.targets.join(" "));
    let per: Vec<String> = meta
        .scales
        .iter()
        .map(|(w, v)| format!("{w} {v}"))
        .collect();
    let scale = match meta.scale {
        Some(d) if meta.scales.values().all(|v| *v == d) => {
            format!("{d} (every count in the workload files × {d})")
        }
        _ => format!(
            "per workload (every count in the workload file × its scale): {}",
            per.join(", ")
        ),
    };
    row(&mut s, "scale", &scale);
    row(
        &mut s,
        "seed",
        &meta.seed.map_or_else(
            || "each workload file's own `Seed:` (0 where it has none)".to_string(),
            |v| v.to_string(),
        ),
    );
    let caches = "caches dropped (`sync; echo 3 > /proc/sys/vm/drop_caches`) before each run";
    if meta.order == "targets" {
        row(
            &mut s,
            "runs",
            &format!(
                "{} per workload and target; target by target (`--order targets`: every \
                 workload of one target before the next); {caches}",
                meta.runs
            ),
        );
    } else {
        row(
            &mut s,
            "runs",
            &format!(
                "{} rounds done; in each, per workload, minfs and the targets run in turn, the \
                 order rotated each round; {caches}",
                meta.runs
            ),
        );
    }
    let stopping = match (meta.stopping.as_str(), meta.budget_s) {
        ("budget", Some(b)) => format!(
            "a time budget of {} (`--budget`; the first release build apart), at most {} rounds: \
             each round runs minfs and only the targets whose comparison with it on that \
             workload is still undecided — after the first {first} rounds, of those, the ones nearest a verdict \
             that the budget left can afford (each priced by the rounds its confidence sequence \
             would still need at its mean and spread so far, times its run time and minfs's; \
             the others wait and are priced again after the next round: \
             `bencher-workloads/src/compare/allocate.rs`); a workload whose comparisons are all \
             decided stops; \
             the runs end when every comparison is decided or the next round (estimated from \
             the mean time of each workload and target so far, preparation and replays \
             included) would not fit. Took {}; the round each comparison was decided in: \
             compare.json's `decided`",
            super::plan::human(Duration::from_secs(b)),
            meta.max_rounds.unwrap_or(0),
            super::plan::human(i.elapsed),
            first = crate::compare::allocate::ALLOCATE_FROM,
        ),
        _ => format!(
            "a fixed count of rounds (`--runs`); took {}",
            super::plan::human(i.elapsed)
        ),
    };
    row(&mut s, "stopping", &stopping);
    row(
        &mut s,
        "lump content",
        if meta.content == "zeros" {
            "zeros (`--content zeros`: the model never looks at the bytes; the emulator stores \
             zeros as holes)"
        } else {
            "each lump's deterministic stream (`--content stream`)"
        },
    );
    match meta.block_size {
        Some(b) => row(
            &mut s,
            "Cannyls block size",
            &format!("{b} (minfs-512: 512)"),
        ),
        None => row(
            &mut s,
            "Cannyls block size",
            "each target's default: minfs 4096 (MinfsNvm's), minfs-512 512, the FileNvm targets \
             512; TARGET@N at N (each run's JSON records its block_size)",
        ),
    }
    row(
        &mut s,
        "capacity",
        &format!(
            "minfs-bench's default per workload and block size (1.5 × peak live data + \
             journal; a target at 4096 gets more than one at 512 where lumps round up); largest \
             {} MiB",
            i.max_capacity >> 20
        ),
    );
    let devnum = devguard::trace_dev_number(i.dev).unwrap_or(0);
    row(
        &mut s,
        "block trace",
        &if i.trace {
            format!(
                "on (tracefs instance, trace_clock mono, block_rq_issue/complete filtered to dev \
                 {devnum})"
            )
        } else {
            "off".to_string()
        },
    );
    let none = |v: &[String]| {
        if v.is_empty() {
            "none".to_string()
        } else {
            v.join(" ")
        }
    };
    row(
        &mut s,
        "HDD model profiles",
        &format!(
            "{} (the rule sets of one drive, shipped first: {})",
            none(i.profiles),
            none(i.variants)
        ),
    );
    row(
        &mut s,
        "git revision",
        &format!(
            "{} when the run started{}",
            i.git_rev,
            i.bin_dir.map_or(String::new(), |d| format!(
                " (binaries from `{}`: `minfs-bench --version` below)",
                d.display()
            ))
        ),
    );
    let _ = writeln!(s, "\n## Tools\n\n```");
    let _ = writeln!(s, "{}", out_of(i.minfs, &["--version"]));
    let _ = writeln!(s, "{}", out_of(i.bench, &["--version"]));
    let _ = writeln!(s, "cannyls {}", cannyls_version());
    for cmd in [
        "rustc --version",
        "mkfs.ext4 -V 2>&1 | sed -n 1p",
        "mkfs.xfs -V 2>&1 | sed -n 1p",
        "losetup --version",
    ] {
        let v = sh(cmd);
        if !v.is_empty() {
            let _ = writeln!(s, "{v}");
        }
    }
    let _ = writeln!(s, "```\n\n## Commands\n");
    let _ = writeln!(
        s,
        "DEV is the device above, MNT a fresh mount point, OUT this directory, W the workload, \
         K the\nrun. Before every run of every workload the device is prepared anew for its \
         target with\nthese commands, in this order (an umount comes after the run)."
    );
    for t in &meta.targets {
        let _ = writeln!(s, "\n### {t}\n\n```");
        for l in rec.commands.get(t).into_iter().flatten() {
            let _ = writeln!(s, "{l}");
        }
        let _ = writeln!(s, "```");
    }
    for (fs, title) in [
        ("ext4", "## `tune2fs -l DEV` after mkfs.ext4"),
        (
            "ext4-defaults",
            "## `tune2fs -l DEV` after mkfs.ext4 with its defaults (ext4-defaults)",
        ),
        ("xfs", "## `xfs_info MNT` after mkfs.xfs"),
        ("minfs", "## `minfs info DEV` after minfs mkfs"),
    ] {
        if let Some(text) = rec.fs_info.get(fs) {
            let _ = writeln!(s, "\n{title}\n\n```\n{}\n```", rec.clean(text.trim_end()));
        }
    }
    std::fs::write(dir.join("SETUP.md"), s)
}

/// The cannyls version this binary was built with (from the checkout's Cargo.lock).
fn cannyls_version() -> String {
    let lock = Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.lock");
    let text = std::fs::read_to_string(lock).unwrap_or_default();
    let mut lines = text.lines();
    while let Some(l) = lines.next() {
        if l == "name = \"cannyls\"" {
            if let Some(v) = lines.next() {
                return v
                    .trim_start_matches("version = ")
                    .trim_matches('"')
                    .to_string();
            }
        }
    }
    "0.10".into()
}

/// How far a run's replay may be from its emulated time before the check flags it (the
/// ratio outside 0.98–1.02).
pub const EMULATION_TOLERANCE: f64 = 0.02;

/// One run in the emulation check.
struct CheckRow {
    workload: String,
    target: String,
    run: String,
    measured_s: f64,
    replayed_s: f64,
    /// From the run's `run-K.emulator.json`, where written: requests the host completed late
    /// (over 0.5 ms after the modelled completion) and their total lateness (ms), requests
    /// that reached the drive out of issue order, and a refused reset.
    late: Option<(u64, f64)>,
    out_of_order: Option<u64>,
    reset_refused: Option<String>,
}

impl CheckRow {
    fn ratio(&self) -> f64 {
        if self.measured_s > 0.0 {
            self.replayed_s / self.measured_s
        } else {
            0.0
        }
    }

    fn flagged(&self) -> bool {
        (self.ratio() - 1.0).abs() > EMULATION_TOLERANCE
    }

    /// Why a flagged run is off, from what the emulator recorded of it.
    fn why(&self) -> String {
        let mut why = Vec::new();
        if let Some(r) = &self.reset_refused {
            why.push(format!("the drive was not reset before it ({r})"));
        }
        if let Some((n, ms)) = self.late {
            // Late by more than 1 % of the run: the host, not the model.
            if ms > self.measured_s * 10.0 {
                why.push(format!(
                    "the host completed {n} requests over 0.5 ms late, {ms:.0} ms in all"
                ));
            }
        }
        if let Some(n) = self.out_of_order.filter(|&n| n > 0) {
            why.push(format!(
                "{n} requests reached the drive out of issue order (served as they came; the \
                 replay serves them in issue order)"
            ));
        }
        if why.is_empty() {
            if self.late.is_none() {
                "no emulator statistics for this run".into()
            } else {
                "no host delay, reordering or skipped reset recorded: the model took another \
                 path on the same requests (a rotational position or a cache state tipped by \
                 less than the timestamps' microsecond)"
                    .into()
            }
        } else {
            why.join("; ")
        }
    }
}

/// The profile of the emulated drive a comparison directory's runs were made on, from its
/// `compare.json`'s device ([`crate::compare::layout::emulated_profile`]); `None`
/// for another device.
pub fn emulated_profile(dir: &Path) -> Option<String> {
    let meta = super::runstats::read_json(&dir.join("compare.json"))?;
    crate::compare::layout::emulated_profile(meta["device"].as_str()?).map(str::to_string)
}

/// The emulated drive against its own model: each run's total operation time as measured
/// (emulated) against its block trace replayed through the same profile, and, for a run off
/// by more than [`EMULATION_TOLERANCE`], why, from what the emulator recorded of it
/// (`run-K.emulator.json`). Writes `DIR/emulation-check.md` and prints the per-run ratios and
/// the summary to stderr; nothing without modelled runs of `profile`.
pub fn emulation_check(dir: &Path, profile: &str) {
    let mut rows: Vec<CheckRow> = Vec::new();
    let runs = dir.join("runs");
    let mut files: Vec<PathBuf> = Vec::new();
    for w in read_dirs(&runs) {
        for t in read_dirs(&w) {
            if let Ok(entries) = std::fs::read_dir(&t) {
                for e in entries.flatten() {
                    let n = e.file_name().to_string_lossy().into_owned();
                    if n.starts_with("run-") && n.ends_with(&format!(".model-{profile}.json")) {
                        files.push(e.path());
                    }
                }
            }
        }
    }
    files.sort();
    for f in files {
        let Some(v) = super::runstats::read_json(&f) else {
            continue;
        };
        let find = |key: &str| find_u64(&v, key);
        let (Some(meas), Some(model)) = (
            find("measured_total_elapsed_ns"),
            find("modelled_total_elapsed_ns"),
        ) else {
            continue;
        };
        let rel = f.strip_prefix(&runs).unwrap_or(&f);
        let parts: Vec<String> = rel
            .iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect();
        if parts.len() != 3 {
            continue;
        }
        let k = parts[2]
            .trim_start_matches("run-")
            .split('.')
            .next()
            .unwrap_or("")
            .to_string();
        let emu = super::runstats::read_json(&f.with_file_name(format!("run-{k}.emulator.json")));
        let late = emu.as_ref().and_then(|e| {
            let rp = e.get("reply_path")?;
            Some((
                rp.get("late")?.as_u64()?,
                rp.get("late_ns")?.as_u64()? as f64 / 1e6,
            ))
        });
        rows.push(CheckRow {
            workload: parts[0].clone(),
            target: parts[1].clone(),
            run: k,
            measured_s: meas as f64 / 1e9,
            replayed_s: model as f64 / 1e9,
            late,
            out_of_order: emu
                .as_ref()
                .and_then(|e| e["requests"]["out_of_order"].as_u64()),
            reset_refused: emu
                .as_ref()
                .and_then(|e| e["reset_refused"].as_str().map(str::to_string)),
        });
    }
    if rows.is_empty() {
        return;
    }
    let mut sorted: Vec<(f64, &CheckRow)> = rows.iter().map(|r| (r.ratio(), r)).collect();
    sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
    let n = sorted.len();
    let med = if n % 2 == 1 {
        sorted[n / 2].0
    } else {
        (sorted[n / 2 - 1].0 + sorted[n / 2].0) / 2.0
    };
    let off: Vec<String> = sorted
        .iter()
        .filter(|(_, r)| r.flagged())
        .map(|(v, r)| format!("{} {} run {} ({v:.3})", r.workload, r.target, r.run))
        .collect();
    let (lo, hi) = (1.0 - EMULATION_TOLERANCE, 1.0 + EMULATION_TOLERANCE);
    let summary = format!(
        "{n} run{}: replayed / measured min {:.3}, median {med:.3}, max {:.3}; {} outside \
         {lo:.2}–{hi:.2}{}",
        if n == 1 { "" } else { "s" },
        sorted[0].0,
        sorted[n - 1].0,
        off.len(),
        if off.is_empty() {
            String::new()
        } else {
            format!(": {}", off.join(", "))
        }
    );
    let mut md = String::new();
    let _ = writeln!(md, "# Emulated vs replayed\n");
    let _ = writeln!(
        md,
        "Each run on the emulated drive (`hddsim emulate --profile {profile}`) against the \
         replay of\nits block trace through the same profile (`minfs-bench hdd-replay`): total \
         operation time. The trace is the emulator's own where it wrote one (the block events \
         its arrivals came from), so the two see the same requests at the same times; a run \
         off by more than {:.0} % is flagged with what the emulator recorded of it: requests \
         the host completed late (over 0.5 ms after the modelled completion), requests that \
         reached the drive out of issue order, a reset it could not make \
         (docs/HDD-MODEL.md, \"The emulator's timing\").\n",
        EMULATION_TOLERANCE * 100.0
    );
    let _ = writeln!(
        md,
        "| workload | target | run | measured (emulated) s | replayed s | replayed / measured | \
         late completions (ms) | out of order | off by over {:.0} %: why |",
        EMULATION_TOLERANCE * 100.0
    );
    let _ = writeln!(
        md,
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
    );
    let mut err =
        String::from("minfs-bench compare: emulated vs replayed (replayed / measured, per run):\n");
    for r in &rows {
        let late = r
            .late
            .map_or("—".to_string(), |(n, ms)| format!("{n} ({ms:.1})"));
        let ooo = r.out_of_order.map_or("—".to_string(), |n| n.to_string());
        let why = if r.flagged() { r.why() } else { String::new() };
        let _ = writeln!(
            md,
            "| {} | {} | {} | {:.3} | {:.3} | {:.3} | {late} | {ooo} | {why} |",
            r.workload,
            r.target,
            r.run,
            r.measured_s,
            r.replayed_s,
            r.ratio()
        );
        let _ = writeln!(
            err,
            "  {} {} run {}: {:.3}{}",
            r.workload,
            r.target,
            r.run,
            r.ratio(),
            if r.flagged() {
                format!(" ({})", r.why())
            } else {
                String::new()
            }
        );
    }
    let _ = writeln!(md, "\n{summary}.");
    let _ = writeln!(err, "minfs-bench compare: emulated vs replayed: {summary}.");
    if std::fs::write(dir.join("emulation-check.md"), md).is_ok() {
        eprint!("{err}");
    }
}

fn find_u64(v: &serde_json::Value, key: &str) -> Option<u64> {
    match v {
        serde_json::Value::Object(m) => {
            if let Some(x) = m.get(key).and_then(serde_json::Value::as_u64) {
                return Some(x);
            }
            m.values().find_map(|x| find_u64(x, key))
        }
        _ => None,
    }
}

fn read_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| p.is_dir())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// gzip -9n every op-log and trace under `DIR/runs`.
pub fn compress(dir: &Path) {
    let mut files = Vec::new();
    for w in read_dirs(&dir.join("runs")) {
        for t in read_dirs(&w) {
            if let Ok(entries) = std::fs::read_dir(&t) {
                for e in entries.flatten() {
                    let n = e.file_name().to_string_lossy().into_owned();
                    if n.ends_with(".oplog") || n.ends_with(".trace") {
                        files.push(e.path());
                    }
                }
            }
        }
    }
    if !files.is_empty() {
        let _ = Command::new("gzip")
            .args(["-9", "-n", "-f"])
            .args(&files)
            .status();
    }
}

/// The report's first screen (report.md up to its first `## ` section: the verdicts' table)
/// for the terminal: without its title, images and bold marks, runs of blank lines squeezed.
pub fn summary(report: &str) -> String {
    let mut out = String::new();
    let mut blank = true;
    for l in report.lines() {
        if l.starts_with("## ") {
            break;
        }
        if l.starts_with("# ") || l.starts_with("![") {
            continue;
        }
        let l = l.replace("**", "");
        if l.trim().is_empty() {
            if blank {
                continue;
            }
            blank = true;
        } else {
            blank = false;
        }
        out.push_str(&l);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(dir: &Path, w: &str, t: &str, measured: u64, modelled: u64, emu: Option<&str>) {
        let d = dir.join("runs").join(w).join(t);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(
            d.join("run-1.model-st1000dm003.json"),
            format!(
                r#"{{"model": {{"measured_total_elapsed_ns": {measured}, "modelled_total_elapsed_ns": {modelled}}}}}"#
            ),
        )
        .unwrap();
        if let Some(e) = emu {
            std::fs::write(d.join("run-1.emulator.json"), e).unwrap();
        }
    }

    #[test]
    fn a_run_off_its_replay_by_over_2_percent_is_flagged_with_why() {
        let dir = tempfile::tempdir().unwrap();
        let quiet = r#"{"reply_path": {"late": 0, "late_ns": 0}, "requests": {"out_of_order": 0}}"#;
        // Within 2 %: not flagged.
        run(
            dir.path(),
            "seq-4m",
            "minfs",
            10_000_000_000,
            10_150_000_000,
            Some(quiet),
        );
        // 5 % slower emulated, 400 ms of late completions in a 10 s run: the host.
        run(
            dir.path(),
            "seq-4m",
            "ext4",
            10_000_000_000,
            9_500_000_000,
            Some(
                r#"{"reply_path": {"late": 80, "late_ns": 400000000}, "requests": {"out_of_order": 3}}"#,
            ),
        );
        // 3 % off with nothing recorded: the model's own divergence, said as such.
        run(
            dir.path(),
            "seq-4m",
            "xfs",
            10_000_000_000,
            10_300_000_000,
            Some(quiet),
        );
        // No emulator statistics (an older directory).
        run(
            dir.path(),
            "seq-256k",
            "xfs",
            10_000_000_000,
            9_000_000_000,
            None,
        );
        emulation_check(dir.path(), "st1000dm003");
        let md = std::fs::read_to_string(dir.path().join("emulation-check.md")).unwrap();
        let line = |t: &str, w: &str| {
            md.lines()
                .find(|l| l.starts_with(&format!("| {w} | {t} | 1 |")))
                .unwrap_or_else(|| panic!("no row for {w} {t}: {md}"))
                .to_string()
        };
        assert!(
            line("minfs", "seq-4m").ends_with("| 0 (0.0) | 0 |  |"),
            "{md}"
        );
        let ext4 = line("ext4", "seq-4m");
        assert!(
            ext4.contains("the host completed 80 requests over 0.5 ms late, 400 ms in all")
                && ext4.contains("3 requests reached the drive out of issue order"),
            "{ext4}"
        );
        assert!(
            line("xfs", "seq-4m").contains("the model took another path"),
            "{md}"
        );
        assert!(
            line("xfs", "seq-256k").contains("no emulator statistics"),
            "{md}"
        );
        assert!(md.contains("4 runs: replayed / measured min 0.900"), "{md}");
        assert!(md.contains("3 outside 0.98–1.02"), "{md}");
    }

    #[test]
    fn the_summary_is_the_first_screen_without_images() {
        let r = "# R\n\n**a** b\n\n\n![x](y.svg)\n\nc\n## Next\nd\n";
        assert_eq!(summary(r), "a b\n\nc\n");
    }

    #[test]
    fn compare_json_is_written_whole() {
        let dir = tempfile::tempdir().unwrap();
        write_atomic(&dir.path().join("compare.json"), b"{}\n").unwrap();
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(names, ["compare.json"]);
    }
}
