//! minfs file I/O against plain O_DIRECT `pread`/`pwrite` on the bare device, side by side on
//! one loop device in one run. Target: minfs ≥ 0.98× the bare device's throughput.
//!
//! Workloads, the same on both sides over regions of equal size:
//! - `seq-write-256k`: 256 KiB sequential writes across the whole region, then a flush (minfs
//!   `FileHandle::flush`, bare `fdatasync`; both are one `fdatasync` of the device), the flush
//!   counted in the time; `MINFS_BENCH_SEG_MB` makes it a flush every that many MiB instead;
//! - `rand-read-1m`: 1 MiB reads at 1 MiB-aligned offsets from a fixed seeded sequence (the
//!   same offsets, relative to the region start, on both sides).
//!
//! Layout on the device: minfs's reserved first MiB, the minfs file `bench` (one extent of the
//! region size), then the bare side's region of the same size right after that extent. The
//! whole device is written once before anything is timed, so neither side pays first-touch
//! allocation in the host filesystem holding the loop device's image.
//!
//! Interleaving: machines are noisy (here, above all, other I/O on the same host disk), and
//! most of that noise lasts longer than one 256 KiB or 1 MiB request. So the two sides take
//! turns request by request in ABBA order (A B, B A, A B, ...; the other side starts in every
//! other round), each request timed on its own, and a side's time is the sum of its own
//! requests' times (flushes included). Each side still issues a purely sequential (or the same
//! random) stream within its own region; the device sees the two streams interleaved, which
//! costs both sides alike. The regions are disjoint, so neither side reads what the host may
//! have just cached for the other. (On a busy 2-CPU VM, A/A runs — `MINFS_BENCH_CONTROL=1` —
//! gave per-round ratios of 0.28–1.96 with one whole pass per side per turn, but mostly within
//! ±8% (rare outliers) request by request; their 21-round medians stayed within ±1.6% of 1.)
//!
//! A round is one full pass of each workload on each side; one untimed warm-up round comes
//! first. Reported per workload: each side's median MB/s (1 MB = 10^6 bytes), the ratio of
//! those medians, and the median and min–max of the per-round ratios; the final line per
//! workload gives the median per-round ratio.
//!
//! Needs root (loop device); prints `device_io: skipped: ...` and exits 0 otherwise.
//! Environment: `MINFS_BENCH_SECTOR` (512 or 4096, default 512), `MINFS_BENCH_MB` (region size
//! per side in MiB, default 512), `MINFS_BENCH_ROUNDS` (default 21), `MINFS_BENCH_READS` (random
//! reads per side and round, default 512), `MINFS_BENCH_SEG_MB` (MiB written between flushes,
//! default the whole region), `MINFS_BENCH_BURST` (requests per turn, default 1),
//! `MINFS_BENCH_CONTROL=1` (an A/A run: the minfs side is replaced by plain O_DIRECT I/O on the
//! minfs file's extent, to show the noise floor and any effect of where the regions lie),
//! `MINFS_TEST_DIR` (where the image goes, default `/var/tmp`).
//!
//! Run as `cargo bench -p minfs --bench device_io`. Without `--bench` on the command line (as
//! under `cargo test --benches`) it does a small smoke run whose numbers mean nothing.

use std::error::Error;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;
use std::time::{Duration, Instant};
use testutil::{env_num, XorShift};

use minfs::{AlignedBuf, FileHandle, Filesystem, FormatOptions, OpenMode};
use testutil::LoopDevice;

type BoxResult<T> = Result<T, Box<dyn Error>>;

const MIB: u64 = 1 << 20;
const WRITE_CHUNK: usize = 256 * 1024;
const READ_CHUNK: usize = 1 << 20;
const ALIGN: usize = 4096;
const TARGET: f64 = 0.98;
const SEED: u64 = 0x9E37_79B9_7F4A_7C15;
/// Byte written over the whole device before timing; rounds write other values.
const PREFILL: u8 = 0x5A;

struct Config {
    sector: u32,
    /// Bytes per side; a multiple of 1 MiB.
    region: u64,
    /// Bytes written between flushes; a multiple of 1 MiB.
    segment: u64,
    rounds: usize,
    reads: usize,
    /// Requests a side issues per turn.
    burst: usize,
    /// Replace minfs by plain O_DIRECT I/O on the minfs file's extent (an A/A run).
    control: bool,
    smoke: bool,
}

impl Config {
    fn from_env() -> BoxResult<Config> {
        let smoke = !std::env::args().any(|a| a == "--bench");
        let (mb, rounds, reads) = if smoke { (16, 1, 16) } else { (512, 21, 512) };
        let sector = env_num("MINFS_BENCH_SECTOR", 512)?;
        if sector != 512 && sector != 4096 {
            return Err(format!("MINFS_BENCH_SECTOR must be 512 or 4096, not {sector}").into());
        }
        let mb = env_num("MINFS_BENCH_MB", mb)?;
        let seg_mb = env_num("MINFS_BENCH_SEG_MB", mb)?;
        let rounds = env_num("MINFS_BENCH_ROUNDS", rounds)?;
        let reads = env_num("MINFS_BENCH_READS", reads)?;
        let burst = env_num("MINFS_BENCH_BURST", 1)?;
        if mb == 0 || seg_mb == 0 || rounds == 0 || reads == 0 || burst == 0 {
            return Err("MINFS_BENCH_MB, _SEG_MB, _ROUNDS, _READS and _BURST must be > 0".into());
        }
        Ok(Config {
            sector: sector as u32,
            region: mb * MIB,
            segment: seg_mb.min(mb) * MIB,
            rounds: rounds as usize,
            reads: reads as usize,
            burst: burst as usize,
            control: env_num("MINFS_BENCH_CONTROL", 0)? == 1,
            smoke,
        })
    }
}

/// One side of the comparison; offsets are relative to the side's region.
struct Side {
    name: &'static str,
    io: Io,
}

enum Io {
    /// Plain `pread`/`pwrite` on an O_DIRECT descriptor of the device, from `base`.
    Bare { file: File, base: u64 },
    /// minfs file I/O.
    Minfs(FileHandle),
}

impl Side {
    fn write_at(&self, buf: &[u8], off: u64) -> BoxResult<()> {
        match &self.io {
            Io::Bare { file, base } => file.write_all_at(buf, base + off)?,
            Io::Minfs(h) => h.write_at(buf, off)?,
        }
        Ok(())
    }

    fn read_at(&self, buf: &mut [u8], off: u64) -> BoxResult<()> {
        match &self.io {
            Io::Bare { file, base } => file.read_exact_at(buf, base + off)?,
            Io::Minfs(h) => h.read_at(buf, off)?,
        }
        Ok(())
    }

    fn flush(&self) -> BoxResult<()> {
        match &self.io {
            Io::Bare { file, .. } => file.sync_data()?,
            Io::Minfs(h) => h.flush()?,
        }
        Ok(())
    }
}

/// The order of the two sides for unit `k` of round `round`: ABBA ABBA ..., starting with the
/// other side in every other round.
fn order(k: usize, round: usize) -> [usize; 2] {
    if (k + round) % 2 == 0 {
        [0, 1]
    } else {
        [1, 0]
    }
}

fn mb_per_s(bytes: u64, d: Duration) -> f64 {
    bytes as f64 / d.as_secs_f64() / 1e6
}

/// One round of `seq-write-256k` on both sides, taking turns every `burst` writes; MB/s per
/// side.
fn seq_write(
    sides: &[Side; 2],
    buf: &AlignedBuf,
    region: u64,
    segment: u64,
    burst: usize,
    round: usize,
) -> BoxResult<[f64; 2]> {
    let mut time = [Duration::ZERO; 2];
    let step = buf.len() as u64;
    let mut off = 0;
    for turn in 0.. {
        if off >= region {
            break;
        }
        let to = (off + burst as u64 * step).min(region);
        for i in order(turn, round) {
            let start = Instant::now();
            for o in (off..to).step_by(step as usize) {
                sides[i].write_at(buf, o)?;
            }
            time[i] += start.elapsed();
        }
        if to / segment != off / segment || to >= region {
            for i in order(to.div_ceil(segment) as usize, round) {
                let start = Instant::now();
                sides[i].flush()?;
                time[i] += start.elapsed();
            }
        }
        off = to;
    }
    Ok(time.map(|t| mb_per_s(region, t)))
}

/// One round of `rand-read-1m` on both sides, taking turns every `burst` reads; MB/s per side.
/// Checks afterwards (untimed) that each side reads back `expect`.
fn rand_read(
    sides: &[Side; 2],
    buf: &mut AlignedBuf,
    offsets: &[u64],
    expect: u8,
    burst: usize,
    round: usize,
) -> BoxResult<[f64; 2]> {
    let mut time = [Duration::ZERO; 2];
    for (turn, offs) in offsets.chunks(burst).enumerate() {
        for i in order(turn, round) {
            let start = Instant::now();
            for &off in offs {
                sides[i].read_at(buf, off)?;
            }
            time[i] += start.elapsed();
        }
    }
    for side in sides {
        side.read_at(buf, offsets[0])?;
        if let Some(bad) = buf.iter().position(|&b| b != expect) {
            return Err(format!(
                "{}: read back byte {:#04x} at {bad} of the 1 MiB at {}, expected {expect:#04x}",
                side.name, buf[bad], offsets[0]
            )
            .into());
        }
    }
    let bytes = buf.len() as u64 * offsets.len() as u64;
    Ok(time.map(|t| mb_per_s(bytes, t)))
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

/// Per-round MB/s of the two sides: `[bare, minfs (or the control)]`.
#[derive(Default)]
struct Series([Vec<f64>; 2]);

impl Series {
    fn push(&mut self, v: [f64; 2]) {
        self.0[0].push(v[0]);
        self.0[1].push(v[1]);
    }

    fn ratios(&self) -> Vec<f64> {
        self.0[1]
            .iter()
            .zip(&self.0[0])
            .map(|(m, b)| m / b)
            .collect()
    }
}

fn main() {
    if let Some(reason) = testutil::loop_unavailable() {
        println!("device_io: skipped: {reason}");
        return;
    }
    let result = Config::from_env().and_then(|cfg| run(&cfg));
    // Everything run() attached is detached by now (its guard drops on return or unwinding).
    if let Err(e) = result {
        eprintln!("device_io: error: {e}");
        std::process::exit(1);
    }
}

fn run(cfg: &Config) -> BoxResult<()> {
    let region = cfg.region;
    // Reserved MiB + minfs file + bare region + 1 MiB slack.
    let dev_size = 2 * region + 2 * MIB;
    let loopdev = LoopDevice::new(dev_size, cfg.sector)?;
    let dev = loopdev.path().to_path_buf();
    if cfg.smoke {
        println!("device_io: smoke run (no --bench argument): tiny sizes, numbers mean nothing");
    }
    println!(
        "device_io: {} over {} ({} MiB image, {}-byte logical sectors, --direct-io=on)",
        dev.display(),
        loopdev.image().display(),
        dev_size / MIB,
        cfg.sector,
    );
    println!(
        "device_io: {} MiB per side, a flush every {} MiB written, {} random 1 MiB reads per \
         side; {} rounds + 1 warm-up",
        region / MIB,
        cfg.segment / MIB,
        cfg.reads,
        cfg.rounds,
    );

    // Bare side: a plain O_DIRECT descriptor (no O_EXCL, so minfs's exclusive open coexists).
    let bare_file = open_direct(&dev)?;
    prefill(&bare_file, dev_size)?;

    minfs::mkfs::mkfs(&dev, &FormatOptions::default(), false)?;
    let fs = Filesystem::open(&dev, OpenMode::ReadWrite)?;
    let stat = fs.create("bench", region)?;
    let [ext] = stat.extents[..] else {
        return Err(format!("minfs file has {} extents, expected 1", stat.extents.len()).into());
    };
    let bare_base = ext.offset + ext.length;
    if ext.length != region || bare_base + region > dev_size {
        return Err(format!(
            "unexpected layout: file extent {} bytes at {}, device {dev_size} bytes",
            ext.length, ext.offset
        )
        .into());
    }
    let handle = fs.open_file("bench")?;
    if handle.sector_size() != cfg.sector {
        return Err(format!(
            "device reports {}-byte logical sectors, asked for {}",
            handle.sector_size(),
            cfg.sector
        )
        .into());
    }
    let other = if cfg.control {
        println!(
            "device_io: CONTROL RUN: the second side is plain O_DIRECT I/O on the minfs file's \
             extent, not minfs"
        );
        Side {
            name: "ctrl",
            io: Io::Bare {
                file: open_direct(&dev)?,
                base: ext.offset,
            },
        }
    } else {
        Side {
            name: "minfs",
            io: Io::Minfs(handle),
        }
    };
    let on = other.name;
    println!(
        "layout: {on} = device bytes [{}, {}), bare = [{bare_base}, {})",
        ext.offset,
        ext.offset + ext.length,
        bare_base + region
    );
    let sides = [
        Side {
            name: "bare",
            io: Io::Bare {
                file: bare_file,
                base: bare_base,
            },
        },
        other,
    ];

    let mut rng = XorShift(SEED);
    let slots = region / READ_CHUNK as u64;
    let offsets: Vec<u64> = (0..cfg.reads)
        .map(|_| rng.next() % slots * READ_CHUNK as u64)
        .collect();
    let mut wbuf = AlignedBuf::zeroed(WRITE_CHUNK, ALIGN);
    let mut rbuf = AlignedBuf::zeroed(READ_CHUNK, ALIGN);

    let mut writes = Series::default();
    let mut reads = Series::default();
    for round in 0..=cfg.rounds {
        // A different byte each round, so the read check sees this round's writes.
        let pattern = 0x10u8.wrapping_add(round as u8);
        wbuf.fill(pattern);
        let w = seq_write(&sides, &wbuf, region, cfg.segment, cfg.burst, round)?;
        let r = rand_read(&sides, &mut rbuf, &offsets, pattern, cfg.burst, round)?;
        let label = if round == 0 {
            "warm-up".to_string()
        } else {
            format!("round {round}")
        };
        println!(
            "{label:>8}: seq-write-256k bare {:7.1} {on} {:7.1} MB/s ratio {:.3} | \
             rand-read-1m bare {:7.1} {on} {:7.1} MB/s ratio {:.3}",
            w[0],
            w[1],
            w[1] / w[0],
            r[0],
            r[1],
            r[1] / r[0]
        );
        if round > 0 {
            writes.push(w);
            reads.push(r);
        }
    }
    drop(sides);
    drop(fs);

    println!();
    let results = [("seq-write-256k", &writes), ("rand-read-1m", &reads)];
    for (name, s) in results {
        let (mb, mo) = (median(&s.0[0]), median(&s.0[1]));
        let ratios = s.ratios();
        let lo = ratios.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = ratios.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        println!(
            "{name}: median bare {mb:.1} MB/s, median {on} {mo:.1} MB/s, ratio of medians {:.3}; \
             per-round ratios median {:.3}, min {lo:.3}, max {hi:.3}",
            mo / mb,
            median(&ratios)
        );
    }
    println!();
    for (name, s) in results {
        let ratio = median(&s.ratios());
        let verdict = if cfg.smoke {
            "smoke run, not judged"
        } else if cfg.control {
            "control run, not judged"
        } else if ratio >= TARGET {
            "meets target >= 0.98"
        } else {
            "BELOW target 0.98"
        };
        println!(
            "{name}: {on}/bare = {ratio:.3} (median of {} rounds; bare {:.1} MB/s, {on} {:.1} MB/s) [{verdict}]",
            s.0[0].len(),
            median(&s.0[0]),
            median(&s.0[1])
        );
    }
    drop(loopdev);
    Ok(())
}

fn open_direct(dev: &Path) -> BoxResult<File> {
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(dev)
        .map_err(|e| format!("opening {} with O_DIRECT: {e}", dev.display()))?;
    Ok(f)
}

/// Writes the whole device once (non-zero bytes, so nothing below can treat it as a hole) and
/// flushes, so the timed passes only overwrite blocks the host image already has.
fn prefill(file: &File, len: u64) -> BoxResult<()> {
    let start = Instant::now();
    let mut buf = AlignedBuf::zeroed(MIB as usize, ALIGN);
    buf.fill(PREFILL);
    let mut off = 0;
    while off < len {
        file.write_all_at(&buf, off)?;
        off += MIB;
    }
    file.sync_data()?;
    println!(
        "prefill: wrote all {} MiB in {:.1} s",
        len / MIB,
        start.elapsed().as_secs_f64()
    );
    Ok(())
}
