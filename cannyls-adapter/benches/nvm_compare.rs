//! Cannyls `put`/`get` throughput on one loop device, by non-volatile memory:
//!
//! - `minfs`:        `MinfsNvm` (default block size = 512) on minfs made on the device;
//! - `minfs-bs4096`: the same with block size 4096 (4 KiB-aligned writes);
//! - `bare`:         Cannyls' own `FileNvm` on the bare device (`create_if_absent`: `create`
//!   refuses an existing path);
//! - `ext4`, `xfs`:  `FileNvm` on a file in ext4 (no journal) / XFS made on the device.
//!
//! Each round runs every configuration once (reformatting the device; order rotated per
//! round): `put` of 256 KiB lumps, `put` of 1 MiB lumps, `get` of those 1 MiB lumps, with
//! lump data pre-allocated (`allocate_lump_data_with_bytes`) outside the timed part. Every
//! operation is timed. Prints per configuration the lump size divided by the median latency of
//! all its operations (robust against the host's stalls) and the median over rounds of each
//! phase's throughput, in MiB/s; then the ratios to `bare`: of the operation medians, and the
//! median [min-max] of the per-round phase ratios (target for `minfs`: >= 0.98x).
//!
//! Needs root (loop devices); otherwise prints why and exits 0. Environment:
//! `CANNYLS_BENCH_ROUNDS` (default 25), `CANNYLS_BENCH_MIB` (MiB written per put phase,
//! default 192), `CANNYLS_BENCH_CONFIGS` (comma-separated subset of the names above).

use std::path::Path;
use std::time::{Duration, Instant};

use cannyls::block::BlockSize;
use cannyls::lump::{LumpData, LumpId};
use cannyls::nvm::{FileNvm, NonVolatileMemory};
use cannyls::storage::{Storage, StorageBuilder};
use cannyls_adapter::MinfsNvm;
use minfs::FormatOptions;
use testutil::{LoopDevice, Mount};

const MIB: u64 = 1 << 20;
const DEVICE_SIZE: u64 = 768 * MIB;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Config {
    Minfs,
    Minfs4k,
    Bare,
    Ext4,
    Xfs,
}

impl Config {
    const ALL: [Config; 5] = [
        Config::Minfs,
        Config::Minfs4k,
        Config::Bare,
        Config::Ext4,
        Config::Xfs,
    ];

    fn name(self) -> &'static str {
        match self {
            Config::Minfs => "minfs",
            Config::Minfs4k => "minfs-bs4096",
            Config::Bare => "bare",
            Config::Ext4 => "ext4",
            Config::Xfs => "xfs",
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Config::Minfs => "MinfsNvm, block size 512, minfs on the device",
            Config::Minfs4k => "MinfsNvm, block size 4096, minfs on the device",
            Config::Bare => "FileNvm on the bare device",
            Config::Ext4 => "FileNvm on a file in ext4 (no journal) on the device",
            Config::Xfs => "FileNvm on a file in XFS on the device",
        }
    }
}

/// One configuration in one round: per-operation latencies and per-phase throughput.
#[derive(Debug, Clone, Default)]
struct Sample {
    /// Latencies of the 256 KiB puts, 1 MiB puts, 1 MiB gets.
    ops: [Vec<Duration>; 3],
    /// MiB/s of each phase as a whole.
    phase: [f64; 3],
}

const PHASES: [&str; 3] = ["put 256 KiB", "put 1 MiB", "get 1 MiB"];
const PHASE_BYTES: [u64; 3] = [256 << 10, 1 << 20, 1 << 20];

struct Params {
    rounds: usize,
    n256: usize,
    n1m: usize,
    capacity: u64,
}

fn env_usize(name: &str, default: usize) -> usize {
    match std::env::var(name) {
        Ok(v) => v.parse().unwrap_or_else(|_| {
            eprintln!("ignoring {name}={v:?}: not a number");
            default
        }),
        Err(_) => default,
    }
}

fn mib_per_s(bytes: u64, t: Duration) -> f64 {
    bytes as f64 / MIB as f64 / t.as_secs_f64()
}

/// The timed workload on a fresh storage.
fn workload<N: NonVolatileMemory>(storage: &mut Storage<N>, p: &Params) -> Sample {
    let fill = |len: usize, seed: u8| -> Vec<u8> {
        (0..len)
            .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
            .collect()
    };
    let d256 = storage
        .allocate_lump_data_with_bytes(&fill(256 << 10, 1))
        .expect("allocate");
    let d1m: LumpData = storage
        .allocate_lump_data_with_bytes(&fill(1 << 20, 2))
        .expect("allocate");

    let mut sample = Sample::default();
    let mut timed = |phase: usize, n: usize, op: &mut dyn FnMut(usize)| {
        let start = Instant::now();
        for i in 0..n {
            let t = Instant::now();
            op(i);
            sample.ops[phase].push(t.elapsed());
        }
        sample.phase[phase] = mib_per_s(n as u64 * PHASE_BYTES[phase], start.elapsed());
    };
    timed(0, p.n256, &mut |i| {
        storage
            .put(&LumpId::new(i as u128), &d256)
            .expect("put 256 KiB");
    });
    let base = 1_000_000u128;
    timed(1, p.n1m, &mut |i| {
        storage
            .put(&LumpId::new(base + i as u128), &d1m)
            .expect("put 1 MiB");
    });
    storage.journal_sync().expect("journal_sync");
    timed(2, p.n1m, &mut |i| {
        let got = storage
            .get(&LumpId::new(base + i as u128))
            .expect("get")
            .expect("lump present");
        assert_eq!(got.as_bytes().len(), 1 << 20);
    });
    // One full check per round, outside the timing.
    let got = storage.get(&LumpId::new(base)).unwrap().unwrap();
    assert!(got.as_bytes() == d1m.as_bytes(), "1 MiB lump roundtrip");
    sample
}

fn run_minfs(dev: &Path, p: &Params, block_size: Option<u16>) -> Sample {
    let opts = FormatOptions {
        force: true,
        ..Default::default()
    };
    minfs::mkfs::mkfs(dev, &opts, false).expect("mkfs minfs");
    let mut nvm = MinfsNvm::create(dev, "lusf", p.capacity).expect("MinfsNvm::create");
    if let Some(bs) = block_size {
        nvm = nvm
            .with_block_size(BlockSize::new(bs).unwrap())
            .expect("block size");
    }
    let mut storage = nvm.storage_builder().create(nvm).expect("storage");
    workload(&mut storage, p)
}

fn run_file_nvm(path: &Path, p: &Params) -> Sample {
    let (nvm, _created) = FileNvm::create_if_absent(path, p.capacity).expect("FileNvm");
    let mut storage = StorageBuilder::new().create(nvm).expect("storage");
    workload(&mut storage, p)
}

fn run_on_fs(dev: &Path, p: &Params, mkfs: fn(&Path) -> std::io::Result<()>) -> Sample {
    mkfs(dev).expect("mkfs");
    let mount = Mount::new(dev).expect("mount");
    let sample = run_file_nvm(&mount.path().join("lusf"), p);
    drop(mount);
    sample
}

fn run(config: Config, dev: &Path, p: &Params) -> Sample {
    match config {
        Config::Minfs => run_minfs(dev, p, None),
        Config::Minfs4k => run_minfs(dev, p, Some(4096)),
        Config::Bare => run_file_nvm(dev, p),
        Config::Ext4 => run_on_fs(dev, p, testutil::mkfs_ext4),
        Config::Xfs => run_on_fs(dev, p, testutil::mkfs_xfs),
    }
}

/// Writes the whole device once, so every block of the (sparse) backing image is allocated:
/// otherwise whichever configuration first touches a region pays the host filesystem's
/// allocation and the comparison measures that instead.
fn prefill(dev: &Path, size: u64) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(dev)
        .expect("open the loop device");
    let chunk = vec![0u8; 8 << 20];
    let mut left = size;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        f.write_all(&chunk[..n]).expect("prefill");
        left -= n as u64;
    }
    f.sync_all().expect("prefill sync");
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn main() {
    if let Some(reason) = testutil::loop_unavailable() {
        println!("nvm_compare: SKIPPED: {reason}");
        return;
    }
    let mib = env_usize("CANNYLS_BENCH_MIB", 192).max(1);
    let p = Params {
        rounds: env_usize("CANNYLS_BENCH_ROUNDS", 25).max(1),
        n256: mib * 4,
        n1m: mib,
        capacity: (2 * mib as u64 + 16) * MIB + 2 * mib as u64 * MIB / 10,
    };
    let mut configs: Vec<Config> = match std::env::var("CANNYLS_BENCH_CONFIGS") {
        Ok(list) => Config::ALL
            .into_iter()
            .filter(|c| list.split(',').any(|n| n.trim() == c.name()))
            .collect(),
        Err(_) => Config::ALL.to_vec(),
    };
    for (c, tool) in [(Config::Ext4, "mkfs.ext4"), (Config::Xfs, "mkfs.xfs")] {
        if configs.contains(&c) && testutil::which(tool).is_none() {
            println!(
                "nvm_compare: skipping {}: {tool} is not installed",
                c.name()
            );
            configs.retain(|&x| x != c);
        }
    }
    let device_size = DEVICE_SIZE.max(p.capacity + p.capacity / 4 + 64 * MIB);
    let dev = LoopDevice::new(device_size, 512).expect("loop device");
    prefill(dev.path(), device_size);
    println!(
        "nvm_compare: loop device {} ({} MiB, 512-byte logical sectors, --direct-io=on, backing \
         file in {}), {} rounds; per round and configuration: {} puts of 256 KiB, {} puts of \
         1 MiB, {} gets of 1 MiB; storage capacity {} MiB",
        dev.path().display(),
        device_size / MIB,
        testutil::scratch_dir().display(),
        p.rounds,
        p.n256,
        p.n1m,
        p.n1m,
        p.capacity / MIB
    );
    for c in &configs {
        println!("  {:<13} {}", c.name(), c.describe());
    }

    let started = Instant::now();
    let mut samples: Vec<Vec<Sample>> = vec![Vec::new(); configs.len()];
    for round in 0..p.rounds {
        for k in 0..configs.len() {
            let i = (k + round) % configs.len();
            let s = run(configs[i], dev.path(), &p);
            println!(
                "  round {} {:<13} {} {:7.1} MiB/s   {} {:7.1} MiB/s   {} {:7.1} MiB/s",
                round + 1,
                configs[i].name(),
                PHASES[0],
                s.phase[0],
                PHASES[1],
                s.phase[1],
                PHASES[2],
                s.phase[2]
            );
            samples[i].push(s);
        }
    }

    println!(
        "nvm_compare: {:.0} s in all. MiB/s per configuration: op = lump size / median latency \
         of all its operations over all rounds; phase = median over rounds of each phase's \
         throughput",
        started.elapsed().as_secs_f64()
    );
    println!(
        "  {:<13} {:>18} {:>18} {:>18}",
        "config", "put 256 KiB", "put 1 MiB", "get 1 MiB"
    );
    println!(
        "  {:<13} {:>9}{:>9} {:>9}{:>9} {:>9}{:>9}",
        "", "op", "phase", "op", "phase", "op", "phase"
    );
    // Per configuration: [op, phase] MiB/s for each phase.
    let mut results: Vec<(Config, [[f64; 2]; 3])> = Vec::new();
    for (c, s) in configs.iter().zip(&samples) {
        let mut r = [[0.0; 2]; 3];
        for (ph, slot) in r.iter_mut().enumerate() {
            let lat: Vec<f64> = s
                .iter()
                .flat_map(|x| x.ops[ph].iter().map(|d| d.as_secs_f64()))
                .collect();
            slot[0] = PHASE_BYTES[ph] as f64 / MIB as f64 / median(lat);
            slot[1] = median(s.iter().map(|x| x.phase[ph]).collect());
        }
        println!(
            "  {:<13} {:>9.1}{:>9.1} {:>9.1}{:>9.1} {:>9.1}{:>9.1}",
            c.name(),
            r[0][0],
            r[0][1],
            r[1][0],
            r[1][1],
            r[2][0],
            r[2][1]
        );
        results.push((*c, r));
    }
    let find = |c: Config| results.iter().find(|(x, _)| *x == c).map(|(_, r)| *r);
    let Some(bare) = find(Config::Bare) else {
        return;
    };
    for c in [Config::Minfs, Config::Minfs4k, Config::Ext4, Config::Xfs] {
        let Some(r) = find(c) else { continue };
        let ratio = |ph: usize, k: usize| r[ph][k] / bare[ph][k];
        let worst_op = (0..3).map(|ph| ratio(ph, 0)).fold(f64::INFINITY, f64::min);
        let verdict = match c {
            Config::Minfs if worst_op >= 0.98 => "  (target >= 0.98x on op medians: met)",
            Config::Minfs => "  (target >= 0.98x on op medians: NOT met)",
            _ => "",
        };
        // Per round, this configuration's phase throughput over bare's in the same round
        // (cancels drift between rounds).
        let ci = configs.iter().position(|&x| x == c).expect("config");
        let bi = configs
            .iter()
            .position(|&x| x == Config::Bare)
            .expect("bare");
        let paired = |ph: usize| {
            let v: Vec<f64> = samples[ci]
                .iter()
                .zip(&samples[bi])
                .map(|(a, b)| a.phase[ph] / b.phase[ph])
                .collect();
            let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = v.iter().copied().fold(0.0, f64::max);
            format!("{:.3}x [{:.2}-{:.2}]", median(v), lo, hi)
        };
        println!(
            "  ratio {} / bare: op medians: {} {:.3}x, {} {:.3}x, {} {:.3}x{}",
            c.name(),
            PHASES[0],
            ratio(0, 0),
            PHASES[1],
            ratio(1, 0),
            PHASES[2],
            ratio(2, 0),
            verdict
        );
        println!(
            "  {:>w$}  per-round phase ratios, median [min-max]: {} {}, {} {}, {} {}",
            "",
            PHASES[0],
            paired(0),
            PHASES[1],
            paired(1),
            PHASES[2],
            paired(2),
            w = c.name().len() + 12
        );
    }
}
