//! What minfs' metadata operations cost against the size of the device and against the number of
//! extents (the first should not matter): open, create, grow, remove and fsck on a sparse in-memory
//! device ([`SparseMemDevice`], storing only the pages written) of 1 GiB, 1 TiB, 20 TB and 1 PiB,
//! and on a 1 TiB device holding 1 to 1,900 extents with as many free runs between them (the most
//! fragmented state the file table allows: it holds 3,836 extents, and a hole needs an extent after
//! it). No root needed: `cargo bench -p minfs --bench large_disk`.
//!
//! The device costs no I/O time (memory), so this measures minfs' own work: decoding, the
//! free-space map, encoding and checksumming a slot. Targets: the cost at 1 PiB within 1.5× of
//! the cost at 1 GiB; open ≤ 20 ms. Each commit (create, grow, remove) writes one 64 KiB slot.

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use minfs::format::BLOCK_SIZE;
use minfs::{fsck, BlockDevice, Filesystem, FormatOptions, SparseMemDevice};

const GIB: u64 = 1 << 30;
const TIB: u64 = 1 << 40;
const PIB: u64 = 1 << 50;

/// 20 TB (decimal, as disks are sold), rounded down to 4 KiB.
const TB20: u64 = 20_000_000_000_000 / BLOCK_SIZE * BLOCK_SIZE;

const SIZES: [(&str, u64); 4] = [("1GiB", GIB), ("1TiB", TIB), ("20TB", TB20), ("1PiB", PIB)];

/// Extents held by the fragmented file (with as many free runs between them).
const EXTENTS: [u64; 5] = [1, 10, 100, 1000, 1900];

fn device(len: u64) -> Arc<SparseMemDevice> {
    Arc::new(SparseMemDevice::new(len, 512, 4096))
}

/// A formatted device with eight files of 64 MiB.
fn with_files(len: u64) -> Arc<SparseMemDevice> {
    let dev = device(len);
    let fs = Filesystem::format(dev.clone(), "bench", &FormatOptions::default()).unwrap();
    for i in 0..8 {
        fs.create(&format!("file-{i}"), 64 << 20).unwrap();
    }
    dev
}

/// A 1 TiB device where file "x" holds `n` one-block extents with a free block after each
/// (x and y grown a block at a time in turns, then y removed).
fn fragmented(n: u64) -> Arc<SparseMemDevice> {
    let dev = device(TIB);
    let fs = Filesystem::format(dev.clone(), "bench", &FormatOptions::default()).unwrap();
    fs.create("x", BLOCK_SIZE).unwrap();
    fs.create("y", BLOCK_SIZE).unwrap();
    for i in 1..n {
        fs.grow("x", (i + 1) * BLOCK_SIZE).unwrap();
        fs.grow("y", (i + 1) * BLOCK_SIZE).unwrap();
    }
    fs.remove("y").unwrap();
    assert_eq!(fs.stat("x").unwrap().extents.len() as u64, n);
    dev
}

fn open(dev: &Arc<SparseMemDevice>) -> Filesystem {
    Filesystem::open_device(dev.clone() as Arc<dyn BlockDevice>, "bench").unwrap()
}

/// Times `op` only; `undo` (untimed) puts the filesystem back.
fn timed(
    iters: u64,
    fs: &Filesystem,
    op: impl Fn(&Filesystem),
    undo: impl Fn(&Filesystem),
) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let t = Instant::now();
        op(fs);
        total += t.elapsed();
        undo(fs);
    }
    total
}

/// The five operations on `dev`, under `group/<op>/<label>`. A new file needs 2 blocks: on a
/// fragmented device no hole holds it, so the first fit scans every free run.
fn operations(c: &mut Criterion, group: &str, label: &str, dev: &Arc<SparseMemDevice>) {
    let mut g = c.benchmark_group(group);
    g.bench_with_input(BenchmarkId::new("open", label), dev, |b, dev| {
        b.iter(|| open(dev))
    });
    let fs = open(dev);
    g.bench_function(BenchmarkId::new("create", label), |b| {
        b.iter_custom(|n| {
            timed(
                n,
                &fs,
                |fs| drop(fs.create("new", 2 * BLOCK_SIZE).unwrap()),
                |fs| fs.remove("new").unwrap(),
            )
        })
    });
    fs.create("new", 2 * BLOCK_SIZE).unwrap();
    g.bench_function(BenchmarkId::new("remove", label), |b| {
        b.iter_custom(|n| {
            timed(
                n,
                &fs,
                |fs| fs.remove("new").unwrap(),
                |fs| drop(fs.create("new", 2 * BLOCK_SIZE).unwrap()),
            )
        })
    });
    fs.remove("new").unwrap();
    fs.create("g", BLOCK_SIZE).unwrap();
    g.bench_function(BenchmarkId::new("grow", label), |b| {
        b.iter_custom(|n| {
            timed(
                n,
                &fs,
                |fs| drop(fs.grow("g", 3 * BLOCK_SIZE).unwrap()),
                |fs| drop(fs.set_size("g", BLOCK_SIZE).unwrap()),
            )
        })
    });
    fs.remove("g").unwrap();
    drop(fs);
    g.bench_with_input(BenchmarkId::new("fsck", label), dev, |b, dev| {
        b.iter(|| {
            let r = fsck::check_device(dev.as_ref(), "bench").unwrap();
            assert!(r.is_clean());
        })
    });
    g.finish();
}

fn by_device_size(c: &mut Criterion) {
    for (label, len) in SIZES {
        operations(c, "size", label, &with_files(len));
    }
}

fn by_extent_count(c: &mut Criterion) {
    for n in EXTENTS {
        operations(c, "extents", &n.to_string(), &fragmented(n));
    }
}

/// The device-size target measured side by side: each operation alternately on 1 GiB and on
/// 1 PiB (and 20 TB), one call at a time, so that the load of the machine hits all sizes alike;
/// prints the medians and the ratios to 1 GiB. (Criterion's groups above run one size after
/// the other, minutes apart, on a shared machine.)
fn side_by_side(_: &mut Criterion) {
    const ROUNDS: usize = 400;
    let sizes = [("1GiB", GIB), ("20TB", TB20), ("1PiB", PIB)];
    let devs: Vec<_> = sizes.iter().map(|(_, len)| with_files(*len)).collect();
    let fss: Vec<Filesystem> = devs.iter().map(open).collect();
    type Op<'a> = Box<dyn Fn(usize) -> Duration + 'a>;
    let time = |f: &dyn Fn()| {
        let t = Instant::now();
        f();
        t.elapsed()
    };
    let ops: Vec<(&str, Op)> = vec![
        ("open", Box::new(|i| time(&|| drop(open(&devs[i]))))),
        (
            "create",
            Box::new(|i| {
                let d = time(&|| drop(fss[i].create("new", 2 * BLOCK_SIZE).unwrap()));
                fss[i].remove("new").unwrap();
                d
            }),
        ),
        (
            "remove",
            Box::new(|i| {
                fss[i].create("new", 2 * BLOCK_SIZE).unwrap();
                time(&|| fss[i].remove("new").unwrap())
            }),
        ),
        (
            "grow",
            Box::new(|i| {
                fss[i].create("g", BLOCK_SIZE).unwrap();
                let d = time(&|| drop(fss[i].grow("g", 3 * BLOCK_SIZE).unwrap()));
                fss[i].remove("g").unwrap();
                d
            }),
        ),
        (
            "fsck",
            Box::new(|i| {
                time(&|| {
                    assert!(fsck::check_device(devs[i].as_ref(), "b")
                        .unwrap()
                        .is_clean())
                })
            }),
        ),
    ];
    println!("side by side, {ROUNDS} rounds, median per call (ratio to 1GiB):");
    for (name, op) in &ops {
        let mut samples = vec![Vec::with_capacity(ROUNDS); sizes.len()];
        for _ in 0..ROUNDS {
            for (i, s) in samples.iter_mut().enumerate() {
                s.push(op(i));
            }
        }
        let medians: Vec<Duration> = samples
            .iter_mut()
            .map(|s| {
                s.sort();
                s[s.len() / 2]
            })
            .collect();
        let cells: Vec<String> = sizes
            .iter()
            .zip(&medians)
            .map(|((label, _), m)| {
                format!(
                    "{label} {:8.1} µs ({:.2}×)",
                    m.as_secs_f64() * 1e6,
                    m.as_secs_f64() / medians[0].as_secs_f64()
                )
            })
            .collect();
        println!("  {name:<7} {}", cells.join("   "));
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(30)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2));
    targets = side_by_side, by_device_size, by_extent_count
}
criterion_main!(benches);
