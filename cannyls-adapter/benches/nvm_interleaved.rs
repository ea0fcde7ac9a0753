//! Cannyls `put`/`get` on `MinfsNvm` against Cannyls' own `FileNvm` on a bare loop device,
//! interleaved one operation at a time, so that the host's noise (other I/O on the same disk,
//! CPU contention) falls on both sides alike. Target: MinfsNvm >= 0.98x FileNvm on the bare
//! device.
//!
//! Setup: one image file in `testutil::scratch_dir()` (`MINFS_TEST_DIR`, default `/var/tmp`)
//! of `2 x region + 4 MiB`, written once with non-zero bytes and fsynced (so neither side pays
//! the host filesystem's first-write allocation), and two loop devices over it
//! (`--direct-io=on`, 512-byte sectors): window A over the first `region` bytes, window B over
//! the next `region` bytes. Both are windows of ONE image on ONE host disk.
//!
//! - side `minfs`: minfs made on its window (`mkfs`, `force` since the window holds the previous
//!   storage), a minfs file `lusf` of `capacity` bytes, `MinfsNvm` over it (block size 512),
//!   storage from `nvm.storage_builder()`;
//! - side `bare`: `FileNvm::create_if_absent(window, capacity)` (`FileNvm::create` refuses an
//!   existing path), storage from `StorageBuilder::new()` (block size 512).
//!
//! Both storages have the same capacity and builder settings, so Cannyls issues the same
//! requests at the same storage offsets on both.
//!
//! Crossover: A/A runs with fixed windows (one side always on A) showed a bias fixed for a whole
//! run but different from run to run — medians of paired per-op ratios of 0.982 in one run and
//! 1.022 in another, each with thousands of pairs — i.e. one window of the image was a little
//! faster than the other for the whole run (on this VM the image itself is nearly contiguous,
//! so the difference comes from below the guest). Interleaving ops cannot cancel that. So a
//! round is two half-rounds on freshly made storages, one with `minfs` on A and `bare` on B, one
//! swapped (the first layout alternating per round); every per-round ratio covers both layouts.
//! Fresh storages per half-round also mean every half-round starts from an empty storage
//! (Cannyls' allocator hands out the same places), so nothing has to be deleted and the
//! capacity only needs to hold one half-round (~N/2 MiB plus Cannyls' journal and per-lump
//! trailer). Making them (`mkfs`, `Storage::create`) is untimed.
//!
//! Per half-round, three phases, each op timed on its own (`Instant` around `Storage::put`/`get`
//! only; lump data is prepared with `allocate_lump_data_with_bytes` before the timer starts):
//! 1. `put-256k`: N puts of 256 KiB lumps (default N = 512);
//! 2. `put-1m`: N/4 puts of 1 MiB lumps;
//! 3. `get-1m`: gets of those N/4 lumps, in a seeded random order (the same on both sides).
//!
//! The sides alternate op by op in ABBA order (M B, B M, M B, ...), the first side flipping
//! every half-round. Every get's bytes are compared with what was put (untimed), so the bench
//! cannot silently measure failures. After each put phase both storages `journal_sync`
//! (untimed).
//!
//! One warm-up round first, not counted. Reported per phase: the median op latency per side
//! over all ops of all rounds and their ratio (bare latency / minfs latency = minfs throughput /
//! bare throughput); the median of the paired per-op ratios (bare op / minfs op of each
//! back-to-back pair), overall and per layout; and the median and min-max of the per-round
//! ratios (sum of bare op times / sum of minfs op times in that round, both half-rounds). The
//! final line per phase judges the median per-round ratio against 0.98.
//!
//! `CANNYLS_IL_CONTROL=1`: the `minfs` side is also `FileNvm` (named `ctrl`), an A/A run showing
//! the noise floor.
//!
//! Environment: `CANNYLS_IL_MIB` (region per side in MiB, default 320), `CANNYLS_IL_ROUNDS`
//! (default 15), `CANNYLS_IL_OPS` (N, default 512), `CANNYLS_IL_CONTROL`, `MINFS_TEST_DIR`.
//! Needs root (loop devices); prints `nvm_interleaved: skipped: ...` and exits 0 otherwise.
//! Run as `cargo bench -p cannyls-adapter --bench nvm_interleaved`; without `--bench` on the
//! command line (as under `cargo test --all-targets`) it does a tiny smoke run whose numbers
//! mean nothing.

use std::error::Error;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use testutil::{env_num, XorShift};

use cannyls::lump::{LumpData, LumpId};
use cannyls::nvm::{FileNvm, NonVolatileMemory};
use cannyls::storage::{Storage, StorageBuilder};
use cannyls_adapter::MinfsNvm;
use minfs::FormatOptions;

type BoxResult<T> = Result<T, Box<dyn Error>>;

const MIB: u64 = 1 << 20;
const TARGET: f64 = 0.98;
const SEED: u64 = 0x9E37_79B9_7F4A_7C15;
/// Byte the whole image is written with before anything is attached.
const PREFILL: u8 = 0x5A;
const PHASES: [&str; 3] = ["put-256k", "put-1m", "get-1m"];
const LUMP_SIZES: [usize; 3] = [256 << 10, 1 << 20, 1 << 20];
/// First lump id of the 1 MiB lumps (the 256 KiB ones start at 0).
const BASE_1M: u128 = 1_000_000;

struct Config {
    /// Bytes per loop device (window of the image); a multiple of 1 MiB.
    region: u64,
    /// Capacity of both Cannyls storages.
    capacity: u64,
    rounds: usize,
    /// 256 KiB puts per half-round and side; a quarter as many 1 MiB puts and gets.
    ops: usize,
    control: bool,
    smoke: bool,
}

impl Config {
    fn from_env() -> BoxResult<Config> {
        let smoke = !std::env::args().any(|a| a == "--bench");
        let (mib, rounds, ops) = if smoke { (48, 1, 16) } else { (320, 15, 512) };
        let mib = env_num("CANNYLS_IL_MIB", mib)?;
        let rounds = env_num("CANNYLS_IL_ROUNDS", rounds)? as usize;
        let ops = env_num("CANNYLS_IL_OPS", ops)? as usize;
        if mib == 0 || rounds == 0 || ops < 4 {
            return Err("CANNYLS_IL_MIB and _ROUNDS must be > 0, CANNYLS_IL_OPS >= 4".into());
        }
        let region = mib * MIB;
        // Leave room for minfs's own metadata in front of its file; whole MiB.
        let capacity = region.saturating_sub(8 * MIB) / MIB * MIB;
        // One half-round's lumps: each takes its size plus one 512-byte block (Cannyls' trailer);
        // the journal takes 1% of the capacity, the header a little more. Keep 5% slack.
        let per_round = ops as u64 * ((256 << 10) + 512) + (ops / 4) as u64 * ((1 << 20) + 512);
        if (per_round as f64) > capacity as f64 * 0.94 {
            return Err(format!(
                "CANNYLS_IL_MIB={mib} is too small for CANNYLS_IL_OPS={ops}: one half-round \
                 puts {} MiB, the storages hold {} MiB; use CANNYLS_IL_MIB >= {}",
                per_round / MIB,
                capacity / MIB,
                (per_round as f64 / 0.94) as u64 / MIB + 10
            )
            .into());
        }
        Ok(Config {
            region,
            capacity,
            rounds,
            ops,
            control: env_num("CANNYLS_IL_CONTROL", 0)? == 1,
            smoke,
        })
    }
}

/// A loop device over a window of an existing image; dropping it detaches the device
/// (retrying for up to 5 s while it is still busy).
struct LoopWindow {
    dev: PathBuf,
}

impl LoopWindow {
    fn attach(image: &Path, offset: u64, size: u64) -> BoxResult<LoopWindow> {
        let out = testutil::run(
            Command::new("losetup")
                .args(["--find", "--show", "--direct-io=on", "--sector-size", "512"])
                .arg("--offset")
                .arg(offset.to_string())
                .arg("--sizelimit")
                .arg(size.to_string())
                .arg(image),
        )?;
        Ok(LoopWindow {
            dev: PathBuf::from(out.trim()),
        })
    }

    fn path(&self) -> &Path {
        &self.dev
    }
}

impl Drop for LoopWindow {
    fn drop(&mut self) {
        testutil::retry_args("losetup", &["-d".as_ref(), self.dev.as_os_str()]);
    }
}

/// What the bench needs of a Cannyls storage, whatever its memory.
trait Side {
    fn alloc(&self, bytes: &[u8]) -> BoxResult<LumpData>;
    fn put(&mut self, id: u128, data: &LumpData) -> BoxResult<()>;
    fn get(&mut self, id: u128) -> BoxResult<Option<LumpData>>;
    fn journal_sync(&mut self) -> BoxResult<()>;
}

impl<N: NonVolatileMemory> Side for Storage<N> {
    fn alloc(&self, bytes: &[u8]) -> BoxResult<LumpData> {
        Ok(self.allocate_lump_data_with_bytes(bytes)?)
    }

    fn put(&mut self, id: u128, data: &LumpData) -> BoxResult<()> {
        Storage::put(self, &LumpId::new(id), data)?;
        Ok(())
    }

    fn get(&mut self, id: u128) -> BoxResult<Option<LumpData>> {
        Ok(Storage::get(self, &LumpId::new(id))?)
    }

    fn journal_sync(&mut self) -> BoxResult<()> {
        Storage::journal_sync(self)?;
        Ok(())
    }
}

/// A fresh storage of `capacity` bytes on `dev`: `MinfsNvm` in a new minfs (`minfs`) or
/// `FileNvm` on the bare device (otherwise). Prints the minfs file's layout when `verbose`.
fn make_side(minfs: bool, dev: &Path, capacity: u64, verbose: bool) -> BoxResult<Box<dyn Side>> {
    if !minfs {
        // `create_if_absent`: `FileNvm::create` refuses an existing path. A block device's
        // metadata length is 0, so this always initializes a new storage.
        let (nvm, _) = FileNvm::create_if_absent(dev, capacity)?;
        return Ok(Box::new(StorageBuilder::new().create(nvm)?));
    }
    // `force`: the window holds the previous half-round's storage.
    let opts = FormatOptions {
        force: true,
        ..Default::default()
    };
    minfs::mkfs::mkfs(dev, &opts, false)?;
    let nvm = MinfsNvm::create(dev, "lusf", capacity)?;
    if verbose {
        let extents = nvm.file_handle().extents();
        println!(
            "nvm_interleaved: minfs file `lusf`: {} MiB in {} extent(s), the first at byte {} \
             of its window; block size {}",
            capacity / MIB,
            extents.len(),
            extents.first().map_or(0, |e| e.byte_offset()),
            nvm.block_size().as_u16()
        );
    }
    Ok(Box::new(nvm.storage_builder().create(nvm)?))
}

/// The order of the sides (0 = minfs or control, 1 = bare) for op `k` of half-round `turn`:
/// ABBA ABBA ..., the other side first in every other half-round.
fn order(k: usize, turn: usize) -> [usize; 2] {
    if (k + turn) % 2 == 0 {
        [0, 1]
    } else {
        [1, 0]
    }
}

/// The content of lump `id` in half-round `turn`: `base` with the id and turn stamped at the
/// start and end, so a get of the wrong lump or a stale one fails the check.
fn content(base: &[u8], len: usize, id: u128, turn: usize) -> Vec<u8> {
    let mut v = base[..len].to_vec();
    v[..16].copy_from_slice(&id.to_le_bytes());
    v[len - 8..].copy_from_slice(&(turn as u64).to_le_bytes());
    v
}

/// Op latencies of one half-round: `[phase][side]`, sides as in [`order`].
type Times = [[Vec<Duration>; 2]; 3];

/// One half-round on fresh storages: the three phases, op by op in ABBA order.
fn half_round(
    sides: &mut [Box<dyn Side>; 2],
    names: [&str; 2],
    base: &[u8],
    cfg: &Config,
    turn: usize,
) -> BoxResult<Times> {
    let mut t: Times = Default::default();
    let n1m = cfg.ops / 4;
    // Phases 1 and 2: puts.
    for (phase, count, first_id) in [(0, cfg.ops, 0u128), (1, n1m, BASE_1M)] {
        for k in 0..count {
            let id = first_id + k as u128;
            let bytes = content(base, LUMP_SIZES[phase], id, turn);
            for s in order(k, turn) {
                let data = sides[s].alloc(&bytes)?;
                let start = Instant::now();
                let put = sides[s].put(id, &data);
                t[phase][s].push(start.elapsed());
                put.map_err(|e| format!("{}: {} of lump {id}: {e}", names[s], PHASES[phase]))?;
            }
        }
        for side in sides.iter_mut() {
            side.journal_sync()?;
        }
    }
    // Phase 3: gets of the 1 MiB lumps, in a seeded random order, every one checked (untimed).
    let mut ids: Vec<u128> = (0..n1m).map(|k| BASE_1M + k as u128).collect();
    let mut rng = XorShift(SEED ^ (turn as u64 + 1).wrapping_mul(0x1234_5678_9ABC_DEF1));
    for i in (1..ids.len()).rev() {
        let j = (rng.next() % (i as u64 + 1)) as usize;
        ids.swap(i, j);
    }
    for (k, &id) in ids.iter().enumerate() {
        let expect = content(base, LUMP_SIZES[2], id, turn);
        for s in order(k, turn) {
            let start = Instant::now();
            let got = sides[s].get(id);
            t[2][s].push(start.elapsed());
            let got = got?.ok_or_else(|| format!("{}: lump {id} is missing", names[s]))?;
            if got.as_bytes() != &expect[..] {
                return Err(format!(
                    "{}: get of lump {id} in half-round {turn} returned other bytes ({} bytes)",
                    names[s],
                    got.as_bytes().len()
                )
                .into());
            }
        }
    }
    Ok(t)
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

fn sum_secs(v: &[Duration]) -> f64 {
    v.iter().map(Duration::as_secs_f64).sum()
}

fn main() {
    if let Some(reason) = testutil::loop_unavailable() {
        println!("nvm_interleaved: skipped: {reason}");
        return;
    }
    let result = Config::from_env().and_then(|cfg| run(&cfg));
    // Everything run() attached is detached by now (its guards drop on return or unwinding).
    if let Err(e) = result {
        eprintln!("nvm_interleaved: error: {e}");
        std::process::exit(1);
    }
}

/// Writes the whole image with non-zero bytes and fsyncs it.
fn prefill(image: &Path, len: u64) -> BoxResult<()> {
    let start = Instant::now();
    let mut f = std::fs::File::create(image)?;
    let chunk = vec![PREFILL; 8 << 20];
    let mut left = len;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        f.write_all(&chunk[..n])?;
        left -= n as u64;
    }
    f.sync_all()?;
    println!(
        "prefill: wrote all {} MiB of the image in {:.1} s",
        len / MIB,
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

fn run(cfg: &Config) -> BoxResult<()> {
    // Declared first so they drop last: the image's directory, then the loop devices (the
    // storages, made and dropped inside the loop, hold them open only while they live).
    let dir = tempfile::Builder::new()
        .prefix("nvm-interleaved-")
        .tempdir_in(testutil::scratch_dir())?;
    let image = dir.path().join("image");
    let image_size = 2 * cfg.region + 4 * MIB;
    if cfg.smoke {
        println!(
            "nvm_interleaved: smoke run (no --bench argument): tiny sizes, numbers mean nothing"
        );
    }
    prefill(&image, image_size)?;
    let loops = [
        LoopWindow::attach(&image, 0, cfg.region)?,
        LoopWindow::attach(&image, cfg.region, cfg.region)?,
    ];
    let on = if cfg.control { "ctrl" } else { "minfs" };
    let names = [on, "bare"];
    println!(
        "nvm_interleaved: image {} ({} MiB); window A {} = image bytes [0, {} MiB), window B {} \
         = [{} MiB, {} MiB); both --direct-io=on, 512-byte sectors. Both are windows of ONE \
         image on ONE host disk.",
        image.display(),
        image_size / MIB,
        loops[0].path().display(),
        cfg.region / MIB,
        loops[1].path().display(),
        cfg.region / MIB,
        2 * cfg.region / MIB,
    );
    for l in &loops {
        // `losetup --list` takes one device at a time.
        match testutil::run(
            Command::new("losetup")
                .args([
                    "--list",
                    "--noheadings",
                    "-O",
                    "NAME,DIO,LOG-SEC,OFFSET,SIZELIMIT",
                ])
                .arg(l.path()),
        ) {
            Ok(list) => println!(
                "  losetup (NAME DIO LOG-SEC OFFSET SIZELIMIT): {}",
                list.trim()
            ),
            Err(e) => println!("  losetup --list: {e}"),
        }
    }
    if cfg.control {
        println!(
            "nvm_interleaved: CONTROL RUN: side `ctrl` is FileNvm on the bare window, not \
             MinfsNvm (bare vs bare, to show the noise floor)"
        );
    }
    println!(
        "nvm_interleaved: each round = two half-rounds on freshly made storages, one with \
         {on} on window A and bare on B, one swapped (crossover: a fixed speed difference \
         between the windows cancels within each round). Per half-round and side: {} puts of \
         256 KiB, {} puts of 1 MiB, {} gets of 1 MiB (random order, all checked); ops \
         interleaved one at a time, ABBA. Storage capacity {} MiB each, block size 512 both. \
         {} rounds + 1 warm-up round.",
        cfg.ops,
        cfg.ops / 4,
        cfg.ops / 4,
        cfg.capacity / MIB,
        cfg.rounds
    );

    let mut base = vec![0u8; 1 << 20];
    let mut rng = XorShift(SEED);
    for chunk in base.chunks_mut(8) {
        chunk.copy_from_slice(&rng.next().to_le_bytes());
    }

    let started = Instant::now();
    // all[phase][side]: every op latency of the counted rounds.
    let mut all: [[Vec<f64>; 2]; 3] = Default::default();
    // per_round[phase]: bare time / other time over the whole round (both half-rounds).
    let mut per_round: [Vec<f64>; 3] = Default::default();
    // paired[layout][phase]: bare op time / other op time of each back-to-back pair; layout 0
    // = the other side on window A.
    let mut paired: [[Vec<f64>; 3]; 2] = Default::default();
    for round in 0..=cfg.rounds {
        let mut sums = [[0.0f64; 2]; 3];
        let mut bytes = [0u64; 3];
        for half in 0..2 {
            let turn = 2 * round + half;
            // Which window the other side (minfs or ctrl) gets: alternates every half-round,
            // starting with the other one every round.
            let layout = (round + half) % 2;
            let mut sides: [Box<dyn Side>; 2] = [
                make_side(
                    !cfg.control,
                    loops[layout].path(),
                    cfg.capacity,
                    turn == 0 && !cfg.control,
                )?,
                make_side(false, loops[1 - layout].path(), cfg.capacity, false)?,
            ];
            let t = half_round(&mut sides, names, &base, cfg, turn)?;
            drop(sides);
            for phase in 0..3 {
                bytes[phase] += (t[phase][0].len() * LUMP_SIZES[phase]) as u64;
                for s in 0..2 {
                    sums[phase][s] += sum_secs(&t[phase][s]);
                }
                if round > 0 {
                    for s in 0..2 {
                        all[phase][s].extend(t[phase][s].iter().map(Duration::as_secs_f64));
                    }
                    paired[layout][phase].extend(
                        t[phase][1]
                            .iter()
                            .zip(&t[phase][0])
                            .map(|(b, m)| b.as_secs_f64() / m.as_secs_f64()),
                    );
                }
            }
        }
        let label = if round == 0 {
            "warm-up".to_string()
        } else {
            format!("round {round}")
        };
        let mut line = format!("{label:>8}:");
        for phase in 0..3 {
            let [m, b] = sums[phase];
            let mb = |s: f64| bytes[phase] as f64 / MIB as f64 / s;
            line += &format!(
                " {} bare {:6.1} {on} {:6.1} MiB/s r {:.3} |",
                PHASES[phase],
                mb(b),
                mb(m),
                b / m
            );
            if round > 0 {
                per_round[phase].push(b / m);
            }
        }
        println!("{}", line.trim_end_matches(" |"));
    }
    println!(
        "nvm_interleaved: {:.0} s for the rounds; every ratio is {on}/bare throughput = bare \
         time / {on} time",
        started.elapsed().as_secs_f64()
    );
    println!(
        "nvm_interleaved: median of the paired per-op ratios (bare op / {on} op of each \
         back-to-back pair; robust to stalls that hit one op), all / {on} on window A / {on} on \
         window B (A vs B differing shows the windows' own speed difference, which the \
         crossover cancels):"
    );
    for phase in 0..3 {
        let both: Vec<f64> = paired[0][phase]
            .iter()
            .chain(&paired[1][phase])
            .copied()
            .collect();
        println!(
            "  {}: {:.3} / {:.3} / {:.3} ({} pairs)",
            PHASES[phase],
            median(&both),
            median(&paired[0][phase]),
            median(&paired[1][phase]),
            both.len()
        );
    }
    println!();
    for phase in 0..3 {
        let ratios = &per_round[phase];
        let r = median(ratios);
        let lo = ratios.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = ratios.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let (lat_m, lat_b) = (median(&all[phase][0]), median(&all[phase][1]));
        let verdict = if cfg.smoke {
            "smoke run, not judged".to_string()
        } else if cfg.control {
            "control run, not judged".to_string()
        } else if r >= TARGET {
            format!("meets target >= {TARGET}")
        } else {
            format!("BELOW target {TARGET}")
        };
        println!(
            "{}: {on}/bare = {r:.3} (median of {} per-round ratios, min {lo:.3}, max {hi:.3}; \
             median op latency bare {:.3} ms, {on} {:.3} ms, ratio {:.3}) [{verdict}]",
            PHASES[phase],
            ratios.len(),
            lat_b * 1e3,
            lat_m * 1e3,
            lat_b / lat_m
        );
    }
    drop(loops);
    drop(dir);
    Ok(())
}
