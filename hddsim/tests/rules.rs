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
fn the_same_with_a_flush_between_costs_a_read_modify_write() {
    let p = drive512();
    let mut d = Drive::new(&p);
    let t = d.submit(&w(0, 513), 0.0);
    let f0 = t;
    let t = d.submit(&flush(), f0);
    // The flush must make the partial sector durable: read the physical sector, merge,
    // write it back — `rmw_revolutions` (two, HP's figure) more.
    let rmw = p.rmw_revolutions * p.revolution_ns();
    assert_eq!(d.stats().rmw_penalties, 1);
    assert_eq!(d.stats().rmw_ns, rmw);
    assert!(t - f0 > rmw, "flush took {} ns", t - f0);
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

// ---- Write hits and large commands ("Write hits", "Large commands" in docs/HDD-MODEL.md) ----

/// The ST1000DM003 under the second revision's destage (a track per operation, each held
/// sector read-modify-written on its own, one revolution) with its write-hit rules set to
/// `clean` and `dirty`.
fn variant(clean: &str, dirty: &str) -> Profile {
    hddsim::profile::load(&format!(
        "st1000dm003-write-first+write_hit_clean={clean},write_hit_dirty={dirty}"
    ))
    .unwrap()
}

/// The shipped ST1000DM003 with `overrides` (`PARAM=VALUE,…`; empty for none).
fn shipped_with(overrides: &str) -> Profile {
    let spec = if overrides.is_empty() {
        "st1000dm003".to_string()
    } else {
        format!("st1000dm003+{overrides}")
    };
    hddsim::profile::load(&spec).unwrap()
}

const VARIANTS: [(&str, &str); 4] = [
    ("clear-segment", "write-first"),
    ("clear-segment", "merge"),
    ("keep", "write-first"),
    ("keep", "merge"),
];

#[test]
fn a_partial_write_into_a_destaged_sector_costs_a_revolution_only_when_the_segment_is_cleared() {
    for (clean, cost) in [("clear-segment", 1u64), ("keep", 0)] {
        let p = variant(clean, "write-first");
        let mut d = Drive::new(&p);
        // ext4's put: 513 sectors padded to a 4 KiB boundary; a second later it is on the
        // media and clean in the cache.
        let t = d.submit(&w(0, 520), 0.0);
        let t = d.submit(&r(0, 8), t + SECOND);
        assert_eq!(d.dirty_sectors(), 0);
        // The next put begins inside the last physical sector [512, 520).
        let t = d.submit(&w(513, 527), t);
        assert_eq!(d.stats().reopened_clean, 1, "{clean}");
        assert_eq!(d.stats().write_first_waits, 0, "nothing dirty overlapped");
        let f0 = t + SECOND;
        let f = d.submit(&flush(), f0);
        let s = d.stats();
        assert_eq!(s.rmw_penalties, cost, "{clean}");
        assert_eq!(s.rmw_of_reopened_clean, cost, "{clean}");
        assert_eq!(s.rmw_for_flush, cost, "{clean}");
        assert_eq!(s.segments_cleared, cost, "{clean}");
        assert_eq!(s.cleared_sectors, 513 * cost, "{clean}");
        assert_eq!(s.rmw_ns, cost as f64 * p.revolution_ns());
        // The held piece [513, 520) is what the flush writes: with the read pass, more than a
        // revolution; without, less.
        let took = f - f0;
        if cost == 1 {
            assert!(took > p.revolution_ns(), "{took}");
        } else {
            assert!(took < p.revolution_ns() + p.seek_full_stroke_ns, "{took}");
        }
    }
}

#[test]
fn a_write_overlapping_dirty_data_waits_for_it_under_write_first() {
    for (dirty, waits) in [("write-first", true), ("merge", false)] {
        let p = variant("keep", dirty);
        let mut d = Drive::new(&p);
        // 4 MiB dirty, then a write overlapping its last physical sector at once.
        let t = d.submit(&w(0, 8192), 0.0);
        assert_eq!(d.stats().reopened_dirty, 0);
        let t2 = d.submit(&w(8185, 527), t);
        let s = d.stats();
        assert_eq!(s.reopened_dirty, 1);
        let iface = 527.0 * 512.0 / 600e6 * 1e9;
        let took = t2 - t;
        if waits {
            assert_eq!(s.write_first_waits, 1);
            // The 4 MiB reach the media first (at the outer edge, about 20 ms).
            assert!(took >= d.stream_ns(0, 8192), "{took}");
            assert!(
                (took - p.command_overhead_ns - s.write_first_wait_ns - iface).abs() < 1.0,
                "{took} vs {}",
                s.write_first_wait_ns
            );
        } else {
            assert_eq!(s.write_first_waits, 0);
            assert!((took - p.command_overhead_ns - iface).abs() < 1.0, "{took}");
        }
        // Under keep no read-modify-write follows either way: the overlap's sector is in the
        // cache, clean or dirty.
        d.submit(&flush(), t2);
        assert_eq!(d.stats().rmw_penalties, 0, "{dirty}");
    }
    // With clear-segment as well, the sector written first is cleared again by the write:
    // a read-modify-write at the flush, counted as caused by the flush, of a re-opened sector.
    let mut d = Drive::new(&variant("clear-segment", "write-first"));
    let t = d.submit(&w(0, 8192), 0.0);
    let t2 = d.submit(&w(8185, 527), t);
    d.submit(&flush(), t2);
    let s = d.stats();
    assert_eq!((s.write_first_waits, s.rmw_penalties), (1, 1));
    assert_eq!((s.rmw_for_flush, s.rmw_of_reopened_clean), (1, 1));
}

#[test]
fn write_first_on_a_held_partial_sector_forces_its_read_modify_write() {
    let p = variant("keep", "write-first");
    let mut d = Drive::new(&p);
    // A misaligned put: a second later [512, 513) is held in the cache.
    let t = d.submit(&w(0, 513), 0.0);
    let t = d.submit(&r(0, 8), t + SECOND);
    assert_eq!(d.dirty_sectors(), 1);
    // A write over the held sector must wait for it, which needs the read-modify-write.
    let t2 = d.submit(&w(512, 8), t);
    let s = d.stats();
    assert_eq!((s.write_first_waits, s.rmw_for_write_first), (1, 1));
    assert!(t2 - t > p.revolution_ns());
}

#[test]
fn exact_appends_cost_nothing_under_any_rule() {
    let mut profiles: Vec<(String, Profile)> = VARIANTS
        .iter()
        .map(|&(clean, dirty)| (format!("{clean}/{dirty}"), variant(clean, dirty)))
        .collect();
    for clean in ["clear-segment", "keep"] {
        for dirty in [
            "write-first",
            "merge",
            "overwrite-unless-writing",
            "wait-if-writing",
        ] {
            for unit in ["segment", "track"] {
                for grouping in ["track", "each"] {
                    let o = format!(
                        "write_hit_clean={clean},write_hit_dirty={dirty},destage_unit={unit},\
                         rmw_grouping={grouping}"
                    );
                    profiles.push((o.clone(), shipped_with(&o)));
                }
            }
        }
    }
    for (clean, p) in profiles {
        let dirty = "";
        for gap in [0.0, SECOND] {
            for read_between in [false, true] {
                let mut d = Drive::new(&p);
                let mut t = 0.0;
                // minfs-512 and raw: 513-sector puts, each starting where the last ended.
                for i in 0..8u64 {
                    t = d.submit(&w(i * 513, 513), t + gap);
                    if read_between {
                        // A 1 MiB read elsewhere.
                        t = d.submit(&r(10_000_000 + i * 2048, 2048), t);
                    }
                }
                // (8 × 513 sectors end on a physical-sector boundary.)
                d.submit(&flush(), t);
                let s = d.stats();
                let what = format!("{clean}{dirty} gap {gap} read {read_between}");
                assert_eq!(s.rmw_penalties, 0, "{what}");
                assert_eq!(s.write_first_waits, 0, "{what}");
                assert_eq!(s.reopened_clean + s.reopened_dirty, 0, "{what}");
                assert_eq!(s.segments_cleared, 0, "{what}");
                assert_eq!(s.writing_collisions + s.dirty_overwrites, 0, "{what}");
                assert_eq!(s.rewritten_sectors, 0, "{what}");
                assert_eq!(s.destaged_sectors, 8 * 513, "{what}");
            }
        }
    }
}

// ---- Revision 3: dirty overlaps, the destage unit, grouped read-modify-writes ----

/// The interface time of `n` sectors (ns).
fn iface(n: u64) -> f64 {
    n as f64 * 512.0 / 600e6 * 1e9
}

/// A drive whose destage is busy far away (a 40,000-sector run at the middle of the stroke,
/// in progress), then ext4's put A = [0, 520) (dirty, not being written), then B = [513,
/// 1032) overlapping A's last physical sector at once. Returns B's latency and the drive.
fn overlap_while_busy_elsewhere(p: &Profile) -> (f64, Drive) {
    let mut d = Drive::new(p);
    let far = d.sector_at_stroke(0.5) / 8 * 8;
    let t = d.submit(&w(far, 40_000), 0.0);
    let t = d.submit(&w(0, 520), t);
    let t2 = d.submit(&w(513, 519), t);
    (t2 - t, d)
}

#[test]
fn overwrite_unless_writing_overwrites_dirty_data_not_being_written_without_waiting() {
    for (dirty, waits) in [
        ("overwrite-unless-writing", false),
        ("wait-if-writing", false),
        ("merge", false),
        ("write-first", true),
    ] {
        let p = shipped_with(&format!("write_hit_dirty={dirty}"));
        let (took, mut d) = overlap_while_busy_elsewhere(&p);
        let s = d.stats().clone();
        assert_eq!(s.reopened_dirty, 1, "{dirty}");
        if waits {
            assert_eq!(s.write_first_waits, 1, "{dirty}");
            assert!(took > p.revolution_ns(), "{dirty}: {took}");
        } else {
            // B is in the cache at the interface rate: no wait, no collision.
            assert!(
                (took - p.command_overhead_ns - iface(519)).abs() < 1.0,
                "{dirty}: {took}"
            );
            assert_eq!(s.writing_collisions, 0, "{dirty}");
            assert_eq!(s.dirty_overwrites, 1, "{dirty}");
        }
        // [513, 520) reaches the media once: A's and B's sectors, 520 + 512 in all (and the
        // far run), no read-modify-write.
        let f = d.submit(&flush(), took + 1e9);
        assert!(f.is_finite());
        let s = d.stats();
        if !waits {
            assert_eq!(s.destaged_sectors, 40_000 + 1032, "{dirty}");
            assert_eq!(s.rewritten_sectors, 0, "{dirty}");
            assert_eq!(s.rmw_penalties, 0, "{dirty}");
        }
    }
}

/// ext4's put A = [0, 520) alone (the destage starts writing it at once), then B = [513,
/// 1032) at once, while A is being written. Returns B's latency, when A's run ends, and the
/// drive.
fn overlap_while_being_written(p: &Profile) -> (f64, Drive) {
    let mut d = Drive::new(p);
    let t = d.submit(&w(0, 520), 0.0);
    let t2 = d.submit(&w(513, 519), t);
    (t2 - t, d)
}

#[test]
fn overwrite_unless_writing_puts_data_being_written_into_another_segment() {
    let p = shipped_with("");
    let (took, mut d) = overlap_while_being_written(&p);
    // No wait: B is accepted at once.
    assert!(
        (took - p.command_overhead_ns - iface(519)).abs() < 1.0,
        "{took}"
    );
    assert_eq!(d.stats().writing_collisions, 1);
    assert_eq!(d.stats().dirty_overwrites, 0);
    d.submit(&flush(), took + 1e9);
    let s = d.stats();
    // A's run writes [513, 520)'s old copy; they stay dirty and are written again with B.
    assert_eq!(s.rewritten_sectors, 7);
    assert_eq!(s.destaged_sectors, 520 + 519);
    assert_eq!(s.rmw_penalties, 0, "[512, 513) is in the cache, clean");
    // Under merge the run in progress writes B's copy: once.
    let (_, mut m) = overlap_while_being_written(&shipped_with("write_hit_dirty=merge"));
    m.submit(&flush(), 1e9);
    assert_eq!(m.stats().rewritten_sectors, 0);
    assert_eq!(m.stats().destaged_sectors, 1032);
}

#[test]
fn wait_if_writing_waits_for_the_destage_to_write_the_overlap() {
    let p = shipped_with("write_hit_dirty=wait-if-writing");
    let (took, d) = overlap_while_being_written(&p);
    let s = d.stats();
    assert_eq!(s.writing_collisions, 1);
    assert!(s.writing_collision_wait_ns > 0.0);
    assert!(
        (took - p.command_overhead_ns - iface(519) - s.writing_collision_wait_ns).abs() < 1.0,
        "{took}"
    );
    // At least until A's last physical sector passed under the head: A's transfer.
    assert!(took > d.stream_ns(0, 520), "{took}");
}

#[test]
fn the_destage_unit_decides_what_is_being_written() {
    // A 40,000-sector run (about 12 revolutions at the outer edge); a write overlapping its
    // last sectors while the destage writes its first revolution.
    for (unit, collides) in [("segment", true), ("track", false)] {
        let p = shipped_with(&format!("destage_unit={unit}"));
        let mut d = Drive::new(&p);
        let t = d.submit(&w(0, 40_000), 0.0);
        assert!(d.dirty_sectors() == 40_000);
        let t2 = d.submit(&w(39_993, 519), t + 2e6);
        let s = d.stats();
        assert_eq!(s.writing_collisions, u64::from(collides), "{unit}");
        assert_eq!(s.dirty_overwrites, u64::from(!collides), "{unit}");
        assert!(
            t2 - t - 2e6 < p.command_overhead_ns + iface(519) + 1.0,
            "no wait: {unit}"
        );
        // Sectors the run has already written are not being written: no collision.
        let mut d = Drive::new(&p);
        let t = d.submit(&w(0, 40_000), 0.0);
        d.submit(&w(0, 8), t + 2.0 * p.revolution_ns());
        assert_eq!(
            d.stats().writing_collisions,
            0,
            "[0, 8) already written: {unit}"
        );
        // Sectors of the revolution in progress are being written under either unit.
        let mut d = Drive::new(&p);
        let t = d.submit(&w(0, 40_000), 0.0);
        d.submit(&w(2000, 8), t + 1e6);
        assert_eq!(
            d.stats().writing_collisions,
            1,
            "in the first revolution: {unit}"
        );
    }
}

#[test]
fn an_exact_append_joins_the_segment_being_written() {
    let p = shipped_with("");
    let mut d = Drive::new(&p);
    let t = d.submit(&w(0, 40_000), 0.0);
    // Appended exactly while the run is written: part of the segment, so a write into it
    // collides under `segment`.
    let t = d.submit(&w(40_000, 1000), t + 1e6);
    d.submit(&w(40_500, 8), t + 1e6);
    assert_eq!(d.stats().writing_collisions, 1);
    // Not so for data beyond the segment that did not append exactly (a gap).
    let mut d = Drive::new(&p);
    let t = d.submit(&w(0, 40_000), 0.0);
    let t = d.submit(&w(40_008, 1000), t + 1e6);
    d.submit(&w(40_500, 8), t + 1e6);
    assert_eq!(d.stats().writing_collisions, 0);
}

/// `n` one-sector writes, each in its own physical sector 64 physical sectors apart (within
/// one revolution at the outer edge), held in the cache, then a flush: the flush's time and
/// the drive.
fn held_then_flush(p: &Profile, n: u64) -> (f64, Drive) {
    let mut d = Drive::new(p);
    let mut t = 0.0;
    for i in 0..n {
        t = d.submit(&w(i * 512 + 1, 1), t);
    }
    let t = t + 1e9;
    let f = d.submit(&flush(), t);
    (f - t, d)
}

#[test]
fn held_sectors_within_a_revolution_are_read_modify_written_in_one_pass() {
    let track = shipped_with("rmw_grouping=track");
    let each = shipped_with("rmw_grouping=each");
    let (t_group, d) = held_then_flush(&track, 6);
    let s = d.stats();
    assert_eq!((s.rmw_penalties, s.rmw_sectors), (1, 12));
    assert_eq!(s.rmw_for_flush, 1);
    // One pass: a seek, a rotational wait, the read-modify-write and the transfer past the
    // six, less than two revolutions beyond the read-modify-write.
    assert!(
        t_group < track.rmw_revolutions * track.revolution_ns() + 2.0 * track.revolution_ns(),
        "{t_group}"
    );
    let (t_each, d) = held_then_flush(&each, 6);
    assert_eq!((d.stats().rmw_penalties, d.stats().rmw_sectors), (6, 12));
    assert!(
        t_each > 6.0 * each.rmw_revolutions * each.revolution_ns(),
        "{t_each}"
    );
    // Held sectors more than a revolution apart take a pass each group: 4,000 sectors apart
    // is beyond the outer edge's ~3,400 per revolution.
    let mut d = Drive::new(&track);
    let t = d.submit(&w(1, 1), 0.0);
    let t = d.submit(&w(4001, 1), t);
    d.submit(&flush(), t + 1e9);
    assert_eq!(d.stats().rmw_penalties, 2);
}

#[test]
fn a_read_modify_write_costs_rmw_revolutions() {
    for revs in [1.0, 2.0, 3.5] {
        let p = shipped_with(&format!("rmw_revolutions={revs}"));
        let mut d = Drive::new(&p);
        let t = d.submit(&w(0, 513), 0.0);
        let f = d.submit(&flush(), t);
        assert_eq!(d.stats().rmw_penalties, 1);
        assert_eq!(d.stats().rmw_ns, revs * p.revolution_ns());
        assert!(f - t > revs * p.revolution_ns(), "{revs}: {}", f - t);
    }
}

#[test]
fn a_command_larger_than_a_segment_completes_when_all_but_a_segment_is_on_the_media() {
    let seg = 1u64 << 20;
    let small = hddsim::profile::load(&format!("st1000dm003+write_segment_bytes={seg}")).unwrap();
    let big = drive512();
    // One 4 MiB command.
    let mut d = Drive::new(&small);
    let done = d.submit(&w(0, 8192), 0.0);
    // 3 MiB of it on the media first: at least their transfer, at most a seek and a
    // revolution more (and the interface time of the last segment).
    let media = d.stream_ns(0, 6144);
    assert!(done > media, "{done} vs {media}");
    assert!(
        done < media + p_bound(&small) + 2048.0 * 512.0 / 600e6 * 1e9,
        "{done}"
    );
    assert!(d.stats().segment_full_waits > 0);
    assert!(d.dirty_sectors() <= seg / 512);
    // With a 64 MiB segment it is cached whole: the interface time only.
    let mut d = Drive::new(&big);
    let done_big = d.submit(&w(0, 8192), 0.0);
    assert!((done_big - big.command_overhead_ns - 4194304.0 / 0.6).abs() < 1.0);
    assert_eq!(d.stats().segment_full_waits, 0);
    // A stream of 512 KiB commands fills the segment the same way: the eighth completes
    // once 3 MiB are on the media.
    let mut d = Drive::new(&small);
    let mut t = 0.0;
    for i in 0..8u64 {
        t = d.submit(&w(i * 1024, 1024), t);
    }
    assert!(t > media, "{t} vs {media}");
    assert!(
        t < media + p_bound(&small) + 8.0 * small.command_overhead_ns + 2e6,
        "{t}"
    );
    // A stream elsewhere does not count against this one's segment.
    let mut d = Drive::new(&small);
    let t = d.submit(&w(0, 2048), 0.0);
    let t2 = d.submit(&w(1_000_000, 2048), t);
    assert_eq!(d.stats().segment_full_waits, 0);
    assert!((t2 - t - small.command_overhead_ns - 1048576.0 / 0.6).abs() < 1.0);
}

/// A seek and a revolution: the most a destage waits before its first sector.
fn p_bound(p: &Profile) -> f64 {
    p.seek_full_stroke_ns + p.revolution_ns()
}
