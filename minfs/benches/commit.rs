//! What a commit costs now that it is written to both slots (2 slot writes and 3 flushes)
//! against the older protocol (the inactive slot only: 1 write and 2 flushes),
//! side by side in one run, with criterion.
//!
//! Targets: a 256 MiB image file (`FileDevice`: O_DIRECT, `fdatasync`) in `MINFS_TEST_DIR`
//! (default `/var/tmp`), and, as root, a loop device (`--direct-io=on`, 512-byte sectors) over
//! a 256 MiB image there; without root the loop device is skipped with the reason printed.
//! Operations, each one commit, timed alone: `create` (a 4 KiB file; removed untimed),
//! `grow` (a file by 4 KiB; recreated untimed every 32 grows) and `rm` (of a file created
//! untimed). The baseline is `Filesystem::set_single_slot_commits_for_bench`. The two
//! protocols take turns commit by commit (ABBA order) on the same filesystem, so drifting
//! noise (this VM shares its disk) hits both alike; criterion times each pair.
//!
//! Besides criterion's estimates it prints, per target and operation, each protocol's median
//! commit time, the ratio of the medians (both slots / one slot), and the device writes and
//! flushes per commit counted by a wrapper around the device.
//!
//! Run as `cargo bench -p minfs --bench commit`.

use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion};
use minfs::{BlockDevice, FileDevice, Filesystem, FormatOptions, OpenMode};

const SIZE: u64 = 256 << 20;

/// Counts the writes and flushes that reach the device.
#[derive(Debug)]
struct Counting {
    inner: FileDevice,
    writes: AtomicU64,
    flushes: AtomicU64,
}

impl BlockDevice for Counting {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.inner.read_at(buf, offset)
    }
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.writes.fetch_add(1, Ordering::Relaxed);
        self.inner.write_at(buf, offset)
    }
    fn flush(&self) -> io::Result<()> {
        self.flushes.fetch_add(1, Ordering::Relaxed);
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

/// Per (target, operation, protocol): commit times and (writes, flushes) per commit.
type Samples = Mutex<
    Vec<(
        String,
        &'static str,
        &'static str,
        Vec<Duration>,
        (u64, u64, u64),
    )>,
>;

fn record(
    samples: &Samples,
    key: (&str, &'static str, &'static str),
    d: Duration,
    ops: (u64, u64),
) {
    let mut s = samples.lock().unwrap();
    let at = match s
        .iter()
        .position(|e| e.0 == key.0 && e.1 == key.1 && e.2 == key.2)
    {
        Some(i) => i,
        None => {
            s.push((key.0.to_string(), key.1, key.2, Vec::new(), (0, 0, 0)));
            s.len() - 1
        }
    };
    s[at].3.push(d);
    s[at].4 .0 += 1;
    s[at].4 .1 += ops.0;
    s[at].4 .2 += ops.1;
}

/// Formats `path` and returns the filesystem on a counting device.
fn filesystem(path: &Path) -> (Filesystem, Arc<Counting>) {
    let dev = Arc::new(Counting {
        inner: FileDevice::open(path, OpenMode::ReadWrite).expect("open the target"),
        writes: AtomicU64::new(0),
        flushes: AtomicU64::new(0),
    });
    let opts = FormatOptions {
        force: true,
        ..Default::default()
    };
    let fs = Filesystem::format(dev.clone(), path.display().to_string(), &opts).expect("format");
    (fs, dev)
}

fn bench_target(c: &mut Criterion, samples: &Samples, name: &str, path: &Path) {
    let (fs, dev) = filesystem(path);
    let mut group = c.benchmark_group(format!("commit/{name}"));
    group
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    for op in ["create", "grow", "rm"] {
        let mut n = 0u64;
        // One iteration: one commit with each protocol, in ABBA order, each timed alone; the
        // pair is what criterion times, the summary reports each side and the pair ratios.
        group.bench_function(BenchmarkId::new(op, "both-slots+one-slot"), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    n += 1;
                    let order = if n % 2 == 0 {
                        [("both-slots", false), ("one-slot", true)]
                    } else {
                        [("one-slot", true), ("both-slots", false)]
                    };
                    for (protocol, single) in order {
                        fs.set_single_slot_commits_for_bench(single);
                        total += one_commit(&fs, &dev, op, n, |d, ops| {
                            record(samples, (name, op, protocol), d, ops)
                        });
                    }
                }
                total
            })
        });
        let _ = fs.remove("g");
    }
    group.finish();
}

/// Sets up `op` untimed, then times exactly one commit of it; `seen` gets the time and the
/// device writes and flushes of that commit.
fn one_commit(
    fs: &Filesystem,
    dev: &Counting,
    op: &str,
    n: u64,
    seen: impl FnOnce(Duration, (u64, u64)),
) -> Duration {
    match op {
        "create" => {}
        "grow" => {
            if n % 32 == 1 || fs.stat("g").is_err() {
                let _ = fs.remove("g");
                fs.create("g", 4096).unwrap();
            }
        }
        _ => drop(fs.create("r", 4096).unwrap()),
    }
    let (w0, f0) = (
        dev.writes.load(Ordering::Relaxed),
        dev.flushes.load(Ordering::Relaxed),
    );
    let t = Instant::now();
    match op {
        "create" => drop(fs.create("c", 4096).unwrap()),
        "grow" => {
            let size = fs.stat("g").unwrap().size + 4096;
            drop(fs.grow("g", size).unwrap())
        }
        _ => fs.remove("r").unwrap(),
    }
    let d = t.elapsed();
    seen(
        d,
        (
            dev.writes.load(Ordering::Relaxed) - w0,
            dev.flushes.load(Ordering::Relaxed) - f0,
        ),
    );
    if op == "create" {
        fs.remove("c").unwrap();
    }
    d
}

fn median(v: &mut [Duration]) -> Duration {
    v.sort_unstable();
    v[v.len() / 2]
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    let samples: Samples = Mutex::new(Vec::new());
    let base = std::env::var_os("MINFS_TEST_DIR").map_or_else(
        || std::path::PathBuf::from("/var/tmp"),
        std::path::PathBuf::from,
    );
    let dir = tempfile::Builder::new()
        .prefix("minfs-commit-bench-")
        .tempdir_in(&base)
        .expect("scratch directory");
    let img = dir.path().join("commit.img");
    minfs::mkfs::mkfs(
        &img,
        &FormatOptions {
            size: Some(SIZE),
            ..Default::default()
        },
        false,
    )
    .expect("make the image");
    bench_target(&mut c, &samples, "image", &img);
    match testutil::loop_unavailable() {
        Some(reason) => println!("commit: loop device skipped: {reason}"),
        None => {
            let dev = testutil::LoopDevice::new(SIZE, 512).expect("loop device");
            bench_target(&mut c, &samples, "loop", dev.path());
        }
    }
    c.final_summary();

    let mut s = samples.into_inner().unwrap();
    // In commit order (pairs line up by index), before the medians sort them.
    let pairs: Vec<_> = s
        .iter()
        .map(|e| (e.0.clone(), e.1, e.2, e.3.clone()))
        .collect();
    println!("\nper commit: median time, device writes and flushes (counted on the device)");
    let rows: Vec<_> = s
        .iter_mut()
        .map(|(t, op, p, d, (n, w, f))| {
            let m = median(d);
            println!(
                "{t:6} {op:6} {p:10}: median {:8.1} µs over {:5} commits, {:.2} writes, {:.2} flushes",
                m.as_secs_f64() * 1e6,
                *n,
                *w as f64 / *n as f64,
                *f as f64 / *n as f64
            );
            (t.clone(), *op, *p, m)
        })
        .collect();
    println!(
        "\nboth slots / one slot: ratio of the medians; median and range of the per-pair ratios"
    );
    for (t, op, p, m) in &rows {
        if *p != "both-slots" {
            continue;
        }
        let side = |protocol: &str| {
            pairs
                .iter()
                .find(|r| r.0 == *t && r.1 == *op && r.2 == protocol)
                .map(|r| r.3.clone())
                .unwrap_or_default()
        };
        let (both, one) = (side("both-slots"), side("one-slot"));
        let mut ratios: Vec<f64> = both
            .iter()
            .zip(&one)
            .map(|(b, o)| b.as_secs_f64() / o.as_secs_f64())
            .collect();
        ratios.sort_by(f64::total_cmp);
        if let Some((_, _, _, base)) = rows
            .iter()
            .find(|r| r.0 == *t && r.1 == *op && r.2 == "one-slot")
        {
            println!(
                "{t:6} {op:6}: {:.2}x ({:.1} µs vs {:.1} µs); per pair: median {:.2}x, {:.2}–{:.2}x over {} pairs",
                m.as_secs_f64() / base.as_secs_f64(),
                m.as_secs_f64() * 1e6,
                base.as_secs_f64() * 1e6,
                ratios[ratios.len() / 2],
                ratios[0],
                ratios[ratios.len() - 1],
                ratios.len()
            );
        }
    }
}
