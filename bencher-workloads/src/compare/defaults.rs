//! The defaults of `minfs-bench compare` (and so of `scripts/compare.sh`), in one place: the
//! runner takes them from here, and `tests/verdict_stats.rs` checks the verdict's rule at
//! exactly this size. How they were chosen: docs/COMPARISON.md, "How the default run is sized".

/// The six reference workloads (bencher-workloads/workloads/NAME.wl).
pub const WORKLOADS: [&str; 6] = [
    "seq-256k",
    "seq-4m",
    "rand-mixed-1m",
    "rand-oldest-1m",
    "durable-256k",
    "group-commit-256k",
];

/// The targets: minfs, ext4 and XFS at Cannyls' default block size (512, as published) — 12
/// comparisons. Until 2026-11-29 ext4 and XFS at 4096 too (24 comparisons, so that the report
/// could tell the file system's part of a gap from the block size's; `--targets
/// minfs,ext4,xfs,ext4@4096,xfs@4096` still does): on the whole emulated drive a round of 24
/// took about 4 minutes and the 15-minute budget decided a 15 % difference in 87.6 % of
/// simulated runs, short of the 90 % aimed at; at 12, in 994 of 1000 (with the verdict's
/// resolution, `stats::RESOLUTION`; `tests/verdict_stats.rs`, docs/COMPARISON.md "How the
/// default run is sized").
pub const TARGETS: [&str; 3] = ["minfs", "ext4", "xfs"];

/// Per workload, the scale of the default on the emulated drive, from the pilots
/// (results/2026-11-27-vm-emulated-pilots): each workload's runs take 2–9 s of the drive's time
/// (minfs 2–4 s), long enough that a round's log-ratio varies by about 1 % (rand-mixed-1m at
/// 0.005 and rand-oldest-1m at 0.01 ran 1 s and varied by 6–10 %; at 0.02 and 0.04 see
/// docs/COMPARISON.md), short enough that a round of all six fits about 3 minutes.
/// rand-oldest-1m at 0.04 re-reads a working set about the size of what the drive's cache
/// keeps, so its runs take one of two states; at 0.1 they do not, but a round then takes
/// about 3 min 35 s and the budget decides far less (results/2026-11-28-vm-emulated-rand-oldest-0.1:
/// 12 of 24): docs/COMPARISON.md, "Why rand-oldest-1m is two-state". At 0.06 ext4's runs no
/// longer take the cached state but XFS's still do, and neither that scale nor a 25- or
/// 30-minute budget let the default decide all 24 (results/2026-11-28-vm-emulated-default-9
/// to -12; docs/COMPARISON.md, "A larger scale and budget, tried").
pub const SCALES: [(&str, f64); 6] = [
    ("seq-256k", 0.02),
    ("seq-4m", 0.025),
    ("rand-mixed-1m", 0.02),
    ("rand-oldest-1m", 0.04),
    ("durable-256k", 0.008),
    ("group-commit-256k", 0.15),
];

/// The full-scale reference a comparison on the emulated drive (profile `st1000dm003`) is held
/// against ([`super::reference`]): the four reference workloads on the whole emulated 1 TB
/// drive at scale 1, one run each of minfs, minfs-512, ext4 and XFS
/// (results/2026-11-29-vm-emulated-whole-drive/README.md says how it was made). A path in the
/// repository.
pub const REFERENCE: &str = "results/2026-11-29-vm-emulated-whole-drive";

/// The profile the reference was run with.
pub const REFERENCE_PROFILE: &str = "st1000dm003";

/// The wall-time budget, seconds.
pub const BUDGET_S: f64 = 15.0 * 60.0;

/// The most rounds a budget run takes (`--max-rounds`).
pub const MAX_ROUNDS: u32 = 50;

/// The comparisons a default report plans: every workload × every target but minfs.
pub fn comparisons() -> usize {
    WORKLOADS.len() * (TARGETS.len() - 1)
}

/// The default scale of `workload` (`None`: not a reference workload).
pub fn scale(workload: &str) -> Option<f64> {
    SCALES.iter().find(|(w, _)| *w == workload).map(|x| x.1)
}
