//! The write-back rules of `docs/HDD-MODEL.md` ("Partial physical sectors", "Reads against a
//! dirty cache"), one test each, on the shipped ST1000DM003 (512e) profile.

mod common;

use common::{drive512, flush, r, w};
use hddsim::model::Drive;
use hddsim::profile::Profile;

const SECOND: f64 = 1e9;

#[test]
fn a_partial_sector_completed_by_the_next_write_costs_no_revolution() {
    let p = drive512();
    let mut d = Drive::new(&p);
    // 513 sectors: 64 whole physical sectors and one logical sector of the 65th.
    let t = d.submit(&w(0, 513), 0.0);
    // A second later the whole sectors are on the media; the partial one is still held (a
    // cached read lets the drive catch up with its background work).
    let t = d.submit(&r(0, 8), t + SECOND);
    assert_eq!(d.dirty_sectors(), 1, "the partial physical sector is held");
    assert_eq!(d.stats().rmw_penalties, 0);
    // The next put completes it; the flush writes whole physical sectors only.
    let t = d.submit(&w(513, 511), t);
    let f0 = t;
    let f = d.submit(&flush(), f0);
    assert_eq!(d.dirty_sectors(), 0);
    assert_eq!(d.stats().rmw_penalties, 0);
    assert_eq!(d.stats().rmw_ns, 0.0);
    // The flush: at most a seek, a revolution of waiting and the transfer, no second pass.
    let bound =
        p.command_overhead_ns + p.seek_full_stroke_ns + p.revolution_ns() + d.stream_ns(512, 1024);
    assert!(f - f0 < bound, "flush took {} ns", f - f0);
}

#[test]
fn the_same_with_a_flush_between_costs_one_revolution() {
    let p = drive512();
    let mut d = Drive::new(&p);
    let t = d.submit(&w(0, 513), 0.0);
    let f0 = t;
    let t = d.submit(&flush(), f0);
    // The flush must make the partial sector durable: read the physical sector, merge,
    // write it back — one extra revolution.
    assert_eq!(d.stats().rmw_penalties, 1);
    assert_eq!(d.stats().rmw_ns, p.revolution_ns());
    assert!(t - f0 > p.revolution_ns(), "flush took {} ns", t - f0);
    // The next put begins in that physical sector, whose first part is now in the cache: no
    // second penalty.
    let t = d.submit(&w(513, 511), t);
    d.submit(&flush(), t);
    assert_eq!(d.stats().rmw_penalties, 1);
}

/// A drive with `dirty` sectors written at sector 0, and a read of a far sector sent
/// `after` ns once they are in the cache: the read's completion minus its start, and the
/// drive.
fn read_behind(dirty: u64, after: f64) -> (f64, f64, Drive) {
    let p = drive512();
    let mut d = Drive::new(&p);
    let t = d.submit(&w(0, dirty), 0.0) + after;
    let done = d.submit(&r(1_000_000_000, 8), t);
    (t, done, d)
}

#[test]
fn a_read_behind_dirty_data_waits_for_the_destage_operation_in_progress() {
    let p = drive512();
    let rev = p.revolution_ns();
    // 20 MB dirty: a destage run of about 12 revolutions, in progress when the read comes.
    let (t, done, d) = read_behind(40_000, 20e6);
    let s = d.stats();
    assert_eq!(s.reads_behind_destage, 1);
    assert_eq!(s.read_write_back_turns, 0, "the cache is not 3/4 full");
    // It waits for the end of the revolution the destage is writing, no longer.
    assert!(
        s.read_destage_wait_ns > 0.0 && s.read_destage_wait_ns <= rev,
        "waited {} ns",
        s.read_destage_wait_ns
    );
    // And then seeks and waits for its sector like any read.
    assert!(done - t >= p.command_overhead_ns + s.read_destage_wait_ns + s.read_seek_ns);
    assert!(d.dirty_sectors() > 0, "the rest of the run stays dirty");
    // With the cache at least 3/4 full of dirty data (54 MiB of 64), one more destage
    // operation goes first.
    let (_, _, d) = read_behind(110_000, 5e6);
    let s = d.stats();
    assert_eq!(s.read_write_back_turns, 1);
    assert!(
        s.read_destage_wait_ns > rev,
        "waited {} ns",
        s.read_destage_wait_ns
    );
    assert!(s.read_destage_wait_ns <= 2.0 * rev + p.seek_full_stroke_ns);
    // Nothing dirty: no wait.
    let (_, _, d) = read_behind(40_000, 10.0 * SECOND);
    assert_eq!(d.stats().reads_behind_destage, 0);
}

#[test]
fn cache_pressure_forces_a_held_partial_sector_out() {
    // The same drive with a 16-sector (8 KiB) cache.
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("profiles/st1000dm003.toml");
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("value = 67108864", "value = 8192");
    let p = Profile::from_toml(&text, "small-cache.toml", "small-cache").unwrap();
    assert_eq!(p.cache_bytes, 8192);
    let mut d = Drive::new(&p);
    // Two misaligned writes far apart: after a second each leaves one held sector.
    let t = d.submit(&w(0, 9), 0.0);
    let t = d.submit(&w(1000, 9), t + SECOND);
    let t = d.submit(&r(0, 8), t + SECOND);
    assert_eq!(d.dirty_sectors(), 2);
    assert_eq!(d.stats().rmw_penalties, 0);
    // A write that needs 15 of the 16 sectors: nothing but held pieces can make room, so one
    // is read-modified-written although no flush asked for it.
    d.submit(&w(2000, 15), t);
    assert_eq!(d.stats().cache_full_waits, 1);
    assert_eq!(d.stats().rmw_penalties, 1);
}
