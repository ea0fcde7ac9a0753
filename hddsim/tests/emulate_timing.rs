//! The emulated drive's timing as the host sees it: at queue depth 1, through a loop device
//! over the drive's file (as every comparison uses it), each O_DIRECT request takes the time
//! the model gives it, within 50 µs as the kernel sees it — from the loop device's issue of
//! the operation's first request to its completion of the last, the median of 25 of each kind —
//! and within 100 µs as the program sees it (its system call adds its own submission and
//! completion work, as it would on a real drive: 10–80 µs here). That is the emulator's
//! contract (docs/HDD-MODEL.md, "The emulator's timing"): the request arrives at the model when
//! the loop device issues it, and its reply is sent early by the reply path's lag, so that the
//! kernel sees it complete at the modelled completion. With the reply sent at the modelled
//! completion instead (`--reply-at-completion`), a 1 MiB read is seen 0.2–0.4 ms late on the
//! 2-vCPU VM. Needs root, /dev/fuse and FUSE's and the block layer's tracepoints: skipped with
//! a printed reason otherwise (a failure with MINFS_REQUIRE_LOOP=1).
//!
//! A timed test, unlike the rest: what it checks is a timing, the emulator's fidelity, which
//! no modelled figure can show. The tolerance is the issue's (50 µs); the host's load shows
//! in the figures it prints.

use std::ffi::OsStr;
use std::fs::OpenOptions;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;
use std::time::{Duration, Instant};

use hddsim::emulate::parse_log;
use hddsim::ReqOp;
use minfs::AlignedBuf;
use testutil::{print_skip, require_loop, Emulator, GuestHaltPoll, LoopDevice, XorShift};

const WARM_UP: usize = 15;
const MEASURED: usize = 25;
/// The kernel's view (the loop device's issue to its completion) against the model.
const TOLERANCE: Duration = Duration::from_micros(50);
/// The program's (its system call's) against the model.
const PROGRAM_TOLERANCE: Duration = Duration::from_micros(100);

/// Whether this kernel's tracefs has what the emulator times replies by.
fn tracepoints() -> bool {
    let root = Path::new("/sys/kernel/tracing/events");
    let root = if root.is_dir() {
        root.to_path_buf()
    } else {
        Path::new("/sys/kernel/debug/tracing/events").to_path_buf()
    };
    [
        "fuse/fuse_request_send",
        "fuse/fuse_request_end",
        "block/block_rq_issue",
        "block/block_rq_complete",
    ]
    .iter()
    .all(|e| root.join(e).is_dir())
        || hddsim::emulate::kstamp::KernelStamps::start(&std::env::temp_dir())
            .ok()
            .flatten()
            .is_some_and(|k| k.reply_path().is_some())
}

/// /dev/shm where it is a tmpfs, else the tests' scratch directory.
fn image_dir() -> std::path::PathBuf {
    if testutil::shm_is_tmpfs() {
        std::path::PathBuf::from("/dev/shm")
    } else {
        testutil::scratch_dir()
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Read(usize),
    Write(usize),
    Flush,
}

impl Kind {
    fn name(self) -> String {
        match self {
            Kind::Read(n) => format!("read {} KiB", n >> 10),
            Kind::Write(n) => format!("write {} KiB", n >> 10),
            Kind::Flush => "flush".into(),
        }
    }
}

#[test]
fn at_queue_depth_1_each_request_takes_its_modelled_time_within_50_us() {
    require_loop!();
    if !Path::new("/dev/fuse").exists() {
        if std::env::var_os("MINFS_REQUIRE_LOOP").is_some_and(|v| v == "1") {
            panic!("MINFS_REQUIRE_LOOP=1 but /dev/fuse is missing");
        }
        return print_skip(module_path!(), "/dev/fuse is missing");
    }
    if !tracepoints() {
        return print_skip(
            module_path!(),
            "tracefs lacks fuse_request_send/end or block_rq_issue/complete here",
        );
    }
    // On a VM, as `minfs-bench compare` does: vCPUs that poll before halting, so that the
    // emulator's threads wake at once (put back when dropped).
    let _poll = GuestHaltPoll::raise(200_000);
    // The drive's image where `minfs-bench compare` puts it: in memory where /dev/shm is a
    // tmpfs. On the host's disk a write's copy into the image can wait behind the disk's own
    // journal (after the suite's mkfs tests: 1 MiB writes a median 194 µs late).
    let dir = tempfile::Builder::new()
        .prefix("hddsim-timing-")
        .tempdir_in(image_dir())
        .unwrap();
    let image = dir.path().join("drive.img");
    std::fs::File::create(&image)
        .unwrap()
        .set_len(2 << 30)
        .unwrap();
    let log = dir.path().join("requests.log");
    let emu = Emulator::start_with(
        Path::new(env!("CARGO_BIN_EXE_hddsim")),
        "st1000dm003",
        &image,
        false,
        dir.path(),
        &[OsStr::new("--log"), log.as_os_str()],
    )
    .unwrap();
    let dev = LoopDevice::over(&emu.disk(), 512).unwrap();
    // The loop device's block events, as the emulator read them (the kernel's view).
    let trace = dir.path().join("block.trace");
    let control = |cmd: &str| {
        std::fs::write(emu.path().join("control"), format!("{cmd}\n"))
            .unwrap_or_else(|e| panic!("{cmd}: {e}"))
    };
    control(&format!("trace {}", trace.display()));
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(dev.path())
        .unwrap();
    let mut buf = AlignedBuf::zeroed(1 << 20, 4096);
    let mut rng = XorShift(29);
    for c in buf.chunks_mut(8) {
        c.copy_from_slice(&rng.next().to_le_bytes());
    }
    let kinds = [
        Kind::Read(4096),
        Kind::Read(1 << 20),
        Kind::Write(4096),
        Kind::Write(1 << 20),
        Kind::Flush,
    ];
    // (kind, byte offset, elapsed), in order.
    let mut ops = Vec::new();
    for kind in kinds {
        for i in 0..WARM_UP + MEASURED {
            // Far apart, so that no read is served from the cache another one filled.
            let at = (rng.next() % 2000) << 20;
            let t0 = Instant::now();
            match kind {
                Kind::Read(n) => f.read_exact_at(&mut buf[..n], at).unwrap(),
                Kind::Write(n) => f.write_all_at(&buf[..n], at).unwrap(),
                Kind::Flush => f.sync_data().unwrap(),
            }
            let elapsed = t0.elapsed();
            ops.push((kind, at, elapsed, i >= WARM_UP));
        }
    }
    control("trace off");
    let stats = std::fs::read_to_string(emu.stats()).unwrap();
    drop(f);
    drop(dev);
    drop(emu);
    // The model's times of each operation's requests (a 1 MiB one is two requests of the
    // loop device): from the first's arrival to the last's completion.
    let lines = parse_log(&std::fs::read_to_string(&log).unwrap()).unwrap();
    let traced = hddsim::trace::parse(&std::fs::read_to_string(&trace).unwrap(), None)
        .unwrap()
        .requests;
    // A logged request's block issue and completion (the flush's by order).
    let block = |l: &hddsim::emulate::LogLine, nth_flush: usize| -> (u64, u64) {
        let r = if l.op == ReqOp::Flush {
            traced
                .iter()
                .filter(|r| r.rwbs.op == ReqOp::Flush)
                .nth(nth_flush)
        } else {
            traced
                .iter()
                .find(|r| r.rwbs.op == l.op && r.sector == l.sector && r.sectors == l.sectors)
        };
        let r = r.unwrap_or_else(|| panic!("{l:?} not in the block trace"));
        (r.issue_ns, r.complete_ns)
    };
    let mut flushes = 0;
    let mut next = 0;
    let mut report = String::new();
    let mut failed = Vec::new();
    for kind in kinds {
        let mut diffs = Vec::new();
        let mut kernel = Vec::new();
        for &(k, at, elapsed, measured) in ops.iter().filter(|o| o.0 == kind) {
            let (op, sector, sectors) = match k {
                Kind::Read(n) => (ReqOp::Read, at / 512, n as u64 / 512),
                Kind::Write(n) => (ReqOp::Write, at / 512, n as u64 / 512),
                Kind::Flush => (ReqOp::Flush, 0, 0),
            };
            let within = |l: &hddsim::emulate::LogLine| {
                l.op == op
                    && (op == ReqOp::Flush
                        || (l.sector >= sector && l.sector + l.sectors <= sector + sectors))
            };
            let first = next
                + lines[next..]
                    .iter()
                    .position(within)
                    .unwrap_or_else(|| panic!("{} at {at}: not in the request log", k.name()));
            let mut last = first;
            let mut covered = lines[first].sectors;
            while covered < sectors && last + 1 < lines.len() && within(&lines[last + 1]) {
                last += 1;
                covered += lines[last].sectors;
            }
            next = last + 1;
            let nth = flushes;
            if op == ReqOp::Flush {
                flushes += 1;
            }
            if !measured {
                continue;
            }
            let modelled = lines[last].times.end - lines[first].times.arrival;
            diffs.push(elapsed.as_nanos() as f64 - modelled);
            let (issue, _) = block(&lines[first], nth);
            let (_, complete) = block(&lines[last], nth);
            kernel.push((complete - issue) as f64 - modelled);
        }
        let median = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let (k_med, p_med) = (median(&mut kernel), median(&mut diffs));
        report.push_str(&format!(
            "{}: the kernel's time − modelled median {:+.0} µs (range {:+.0} to {:+.0}); the \
             program's {:+.0} µs (range {:+.0} to {:+.0}); {} ops\n",
            kind.name(),
            k_med / 1e3,
            kernel[0] / 1e3,
            kernel[kernel.len() - 1] / 1e3,
            p_med / 1e3,
            diffs[0] / 1e3,
            diffs[diffs.len() - 1] / 1e3,
            diffs.len()
        ));
        if k_med.abs() > TOLERANCE.as_nanos() as f64
            || p_med.abs() > PROGRAM_TOLERANCE.as_nanos() as f64
        {
            failed.push(kind.name());
        }
    }
    println!("{report}stats.json's reply_path: {stats}");
    assert!(
        failed.is_empty(),
        "not within {TOLERANCE:?} (the kernel's view) or {PROGRAM_TOLERANCE:?} (the program's) of \
         the model: {failed:?}\n{report}"
    );
}
