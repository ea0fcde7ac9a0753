//! What the copy of the Cannyls header and journal (`cannyls_adapter::copy`) costs, on the
//! HDD model (`hddsim::model`, profile st1000dm003) rather than in real time: durable-256k
//! (a 256 KiB put, then `journal_sync`) and group-commit-256k (32 puts per `journal_sync`) on
//! `MinfsNvm` over an in-memory device that logs every request, without a copy and with one
//! catching up every N syncs; each log replayed through the model one request after the other
//! (the host's own time between operations: 0.2 ms, an estimate). Deterministic: a design
//! estimate of where the copy's cost lies, not a measurement — the measurement is
//! `minfs-bench compare --targets minfs,minfs@nocopy` on the emulated drive.
//!
//! ```sh
//! cargo run --release -p bencher-workloads --example copy_cost_model [-- PUTS]
//! ```

use std::sync::Arc;
use std::time::Duration;

use cannyls::lump::LumpId;
use cannyls_adapter::{CopyOptions, CopyPolicy, MinfsNvm};
use hddsim::model::{Drive, DriveRequest};
use hddsim::trace::ReqOp;
use minfs::device::fault::{FaultDevice, OpKind, TraceEntry};
use minfs::{BlockDevice, Filesystem, FormatOptions};

/// `None`: no copy; `Some(n)`: a copy catching up every `n` syncs.
fn run(puts: usize, per_sync: usize, copy: Option<u32>) -> (Vec<TraceEntry>, u64) {
    let capacity = (puts as u64 * (260 << 10)) * 3 / 2 + (8 << 20);
    let dev = Arc::new(FaultDevice::new(capacity + (160 << 20), 512, 4096));
    let fs = Filesystem::format(
        dev.clone() as Arc<dyn BlockDevice>,
        "model",
        &FormatOptions::default(),
    )
    .unwrap();
    let mut nvm = MinfsNvm::create_in(&fs, "lusf", capacity).unwrap();
    nvm = match copy {
        None => nvm.without_copy(),
        Some(n) => nvm.with_copy_options(CopyOptions {
            policy: CopyPolicy {
                max_age: Duration::from_secs(3600),
                max_syncs: n,
            },
            ..CopyOptions::default()
        }),
    };
    let mut storage = nvm.create_storage().unwrap();
    dev.record_trace();
    let data = vec![7u8; 256 << 10];
    for i in 0..puts {
        let d = storage.allocate_lump_data_with_bytes(&data).unwrap();
        storage.put(&LumpId::new(i as u128 + 1), &d).unwrap();
        if (i + 1) % per_sync == 0 {
            storage.journal_sync().unwrap();
        }
    }
    let trace = dev.take_trace();
    drop(storage);
    let f = fs.open_file("lusf").unwrap();
    let image = cannyls_adapter::copy::find(&f)
        .unwrap()
        .map_or(0, |t| t.image);
    let copy_at = cannyls_adapter::lumps::device_ranges(&f.extents(), image, 1)
        .first()
        .map_or(u64::MAX, |r| r.0);
    let copy_writes = trace
        .iter()
        .filter(|e| e.kind == OpKind::Write && e.offset >= copy_at)
        .count() as u64;
    (trace, copy_writes)
}

/// Modelled seconds of `trace`, each request sent when the previous completed.
fn model(trace: &[TraceEntry]) -> f64 {
    let profile = hddsim::profile::load("st1000dm003").unwrap();
    let mut drive = Drive::new(&profile);
    let mut t = 0.0;
    for e in trace {
        let op = match e.kind {
            OpKind::Read => ReqOp::Read,
            OpKind::Write => ReqOp::Write,
            OpKind::Flush => ReqOp::Flush,
        };
        t = drive.submit(&DriveRequest::new(op, e.offset / 512, e.len / 512), t);
        if e.kind == OpKind::Flush {
            t += 200_000.0; // the host's time per operation (estimate)
        }
    }
    t / 1e9
}

fn main() {
    let puts: usize = std::env::args()
        .nth(1)
        .map_or(640, |s| s.parse().expect("a number of puts"));
    for (name, per_sync) in [("durable-256k", 1usize), ("group-commit-256k", 32)] {
        let syncs = puts / per_sync;
        let (base, _) = run(puts, per_sync, None);
        let t0 = model(&base);
        println!(
            "{name}: {puts} puts, {syncs} syncs; no copy: {t0:.3} s modelled ({:.2} ms per sync)",
            t0 * 1e3 / syncs as f64
        );
        for n in [1u32, 4, 16, 64] {
            let (trace, writes) = run(puts, per_sync, Some(n));
            let t = model(&trace);
            println!(
                "  copy catching up every {n:>2} syncs: {t:.3} s ({:+.2} %), {writes} writes to \
                 the copy, {:.2} ms per catch-up",
                (t / t0 - 1.0) * 100.0,
                (t - t0) * 1e3 / (syncs as f64 / f64::from(n)).max(1.0)
            );
        }
    }
}
