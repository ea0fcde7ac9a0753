//! `hddsim validate`: synthetic request streams through the model, printed next to the
//! drive's published figures and to fio measurements of a sister drive — reported side by
//! side, never fitted (no parameter of a profile is derived from these references).
//!
//! References:
//! - the ST1000DM003 product manual / data sheet (Seagate Barracuda 7200.14): average seek
//!   8.5 ms read, 9.5 ms write; track-to-track 1.0 ms read, 1.2 ms write; 210 MB/s maximum
//!   sustained rate (outer diameter); 156 MB/s average;
//! - ublk-disksim's VALIDATION.md §3 and §5: fio through NTFS on one real ST2000DM006
//!   (Barracuda 2 TB, 7200 rpm, 64 MB cache; a sister drive, 90–98% full): 4 KiB random read
//!   QD1 17.5 ms, QD32 94 IOPS (1.7× QD1: "barely reorders its queue"), sequential 143 MB/s
//!   read / 132 MB/s write, a flush after 8 / 64 scattered 4 KiB writes 127 / 630 ms
//!   (about 28 + 10 × N ms).
//!
//! Every stream runs on a fresh drive; positions come from a fixed pseudo-random sequence,
//! so the figures are the same on every run and machine.

use std::fmt::Write as _;

use serde::Serialize;

use crate::model::{Drive, DriveRequest};
use crate::profile::{DestageUnit, Profile, RmwGrouping, WriteHitClean, WriteHitDirty};
use crate::trace::ReqOp;

/// One line of the validation table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Check {
    /// What was run.
    pub figure: String,
    /// The model's figure.
    pub model: f64,
    /// Its unit (`ms`, `MB/s`, `IOPS`).
    pub unit: &'static str,
    /// The published figure for this drive, if there is one.
    pub manual: Option<f64>,
    /// The sister drive's measured figure (ublk-disksim VALIDATION.md), if there is one.
    pub sister: Option<f64>,
}

/// A fixed pseudo-random sequence (xorshift64*), for positions.
struct Rng(u64);

impl Rng {
    fn next_f64(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn req(op: ReqOp, sector: u64, sectors: u64, queued: bool) -> DriveRequest {
    DriveRequest {
        queued,
        ..DriveRequest::new(op, sector, sectors)
    }
}

/// A 4 KiB-aligned sector uniform over the stroke.
fn random_sector(d: &Drive, rng: &mut Rng) -> u64 {
    d.sector_at_stroke(rng.next_f64()) / 8 * 8
}

/// MB/s of `bytes` read (or written, then flushed) from `start` in 512 KiB commands, the
/// kernel's split of a large request: all sent at once (queued), each after the previous.
/// The clock starts when the first command completes (its seek and rotational wait are
/// positioning, not streaming), so the figure is the rate of the rest.
fn stream_mb_s(p: &Profile, op: ReqOp, start: u64, bytes: u64) -> f64 {
    let mut d = Drive::new(p);
    let piece = 1024;
    let n = bytes / 512 / piece;
    let first = d.submit(&req(op, start, piece, false), 0.0);
    let mut t = first;
    for i in 1..n {
        t = d.submit(&req(op, start + i * piece, piece, true), t);
    }
    if op == ReqOp::Write {
        t = d.submit(&req(ReqOp::Flush, 0, 0, false), t);
    }
    ((n - 1) * piece * 512) as f64 / (t - first) * 1e3
}

/// Mean response time (ms) of `n` random 4 KiB reads, one at a time (QD1). With a deeper
/// queue the model serves the requests in arrival order (no reordering), so QD32 gives the
/// same service time per request.
fn random_reads_ms(p: &Profile, n: u32) -> f64 {
    let mut d = Drive::new(p);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut t = 0.0;
    for _ in 0..n {
        let s = random_sector(&d, &mut rng);
        t = d.submit(&req(ReqOp::Read, s, 8, false), t);
    }
    t / f64::from(n) / 1e6
}

/// The time (ms) of a flush after `n` scattered 4 KiB writes into an idle drive's cache.
fn scattered_flush_ms(p: &Profile, n: u32) -> f64 {
    let mut d = Drive::new(p);
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut t = 0.0;
    // The writes arrive back to back (the destage starts with the first); the flush follows.
    for _ in 0..n {
        let s = random_sector(&d, &mut rng);
        t = d.submit(&req(ReqOp::Write, s, 8, false), t);
    }
    let start = t;
    d.submit(&req(ReqOp::Flush, 0, 0, false), t) / 1e6 - start / 1e6
}

/// The model's average seek over `n` pairs of positions uniform over the stroke (ms).
fn average_seek_ms(p: &Profile, write: bool, n: u32) -> f64 {
    let c = if write { p.write_seek() } else { p.read_seek() };
    let mut rng = Rng(0x1234_5678_9abc_def1);
    let sum: f64 = (0..n)
        .map(|_| c.time((rng.next_f64() - rng.next_f64()).abs()))
        .sum();
    sum / f64::from(n) / 1e6
}

/// Runs every synthetic stream on `p`.
pub fn run(p: &Profile) -> Vec<Check> {
    let d = Drive::new(p);
    let cap = d.capacity_sectors();
    let mb64 = 64 << 20;
    let od_read = stream_mb_s(p, ReqOp::Read, 0, mb64);
    let od_write = stream_mb_s(p, ReqOp::Write, 0, 256 << 20);
    // The whole-disk average: 16 MiB streams at ten places, time-weighted.
    let places = 10u64;
    let per = 16u64 << 20;
    let avg_read = {
        let total_ns: f64 = (0..places)
            .map(|i| {
                let start = cap / places * i + cap / places / 2;
                per as f64 / stream_mb_s(p, ReqOp::Read, start / 8 * 8, per) * 1e3
            })
            .sum();
        (per * places) as f64 / total_ns * 1e3
    };
    let one_track = 1.0 / d.tracks();
    let qd1 = random_reads_ms(p, 2000);
    vec![
        Check {
            figure: "sequential read at the outer edge, 512 KiB commands".into(),
            model: od_read,
            unit: "MB/s",
            manual: Some(210.0),
            sister: None,
        },
        Check {
            figure: "sequential read, whole-disk average".into(),
            model: avg_read,
            unit: "MB/s",
            manual: Some(156.0),
            sister: Some(143.0),
        },
        Check {
            figure: "sequential write at the outer edge (256 MiB, then a flush)".into(),
            model: od_write,
            unit: "MB/s",
            manual: Some(210.0),
            sister: Some(132.0),
        },
        Check {
            figure: "average seek, read (seek curve over uniform pairs)".into(),
            model: average_seek_ms(p, false, 200_000),
            unit: "ms",
            manual: Some(8.5),
            sister: None,
        },
        Check {
            figure: "average seek, write".into(),
            model: average_seek_ms(p, true, 200_000),
            unit: "ms",
            manual: Some(9.5),
            sister: None,
        },
        Check {
            figure: "track-to-track seek, read".into(),
            model: p.read_seek().time(one_track) / 1e6,
            unit: "ms",
            manual: Some(1.0),
            sister: None,
        },
        Check {
            figure: "track-to-track seek, write".into(),
            model: p.write_seek().time(one_track) / 1e6,
            unit: "ms",
            manual: Some(1.2),
            sister: None,
        },
        Check {
            figure: "random 4 KiB reads, QD1: mean response".into(),
            model: qd1,
            unit: "ms",
            manual: Some(
                (p.seek_average_read_ns + p.revolution_ns() / 2.0 + p.command_overhead_ns) / 1e6,
            ),
            sister: Some(17.5),
        },
        Check {
            figure: "random 4 KiB reads, QD32 (served in arrival order)".into(),
            model: 1e3 / qd1,
            unit: "IOPS",
            manual: None,
            sister: Some(94.0),
        },
        Check {
            figure: "flush after 8 scattered 4 KiB writes".into(),
            model: scattered_flush_ms(p, 8),
            unit: "ms",
            manual: None,
            sister: Some(127.0),
        },
        Check {
            figure: "flush after 64 scattered 4 KiB writes".into(),
            model: scattered_flush_ms(p, 64),
            unit: "ms",
            manual: None,
            sister: Some(630.0),
        },
    ]
}

/// What `hddsim validate` finds: the checks against the references, and the streams that
/// isolate the write-hit and large-command rules.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Validation {
    /// The figures next to the references.
    pub checks: Vec<Check>,
    /// The rule streams.
    pub rule_streams: RuleStreams,
}

/// Streams that isolate one rule each, run under every variant of the rules.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RuleStreams {
    /// The variants, in column order (`own: clear-segment, …`, then one change each).
    pub variants: Vec<String>,
    /// One row per stream.
    pub streams: Vec<RuleStream>,
    /// The patterns of published measurements on Advanced Format drives: the model's
    /// misaligned / aligned time per variant, next to the published ratio.
    pub patterns: Vec<PatternRatio>,
}

/// A published misaligned / aligned ratio, measured on another Advanced Format drive (a
/// check of the rules' shape, not a figure to fit).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Published {
    /// The lowest ratio the source's figures give.
    pub low: f64,
    /// The highest.
    pub high: f64,
    /// Where it comes from: the source, the drive, the figures.
    pub source: &'static str,
}

/// One published pattern under every variant.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PatternRatio {
    /// What the pattern does, and which times are divided.
    pub pattern: String,
    /// The model's ratio, per variant.
    pub ratio: Vec<f64>,
    /// The published ratio, where there is one.
    pub published: Option<Published>,
}

/// One stream under every variant.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RuleStream {
    /// What the stream does.
    pub stream: String,
    /// The rate of the data it moves (puts and reads), MB/s (10^6 bytes), per variant.
    pub mb_per_s: Vec<f64>,
}

/// The write-back rules of `p` in a few words, for a column heading.
pub fn rules_label(p: &Profile) -> String {
    format!(
        "{}, {}, unit {}, rmw {} ×{}",
        p.write_hit_clean.as_str(),
        p.write_hit_dirty.as_str(),
        p.destage_unit.as_str(),
        p.rmw_grouping.as_str(),
        p.rmw_revolutions
    )
}

/// The rule variants of `p`, in column order: its own rules; each of its write-back
/// settings changed alone (the other dirty-overlap rule of the third revision, the other
/// destage unit, the other grouping, one revolution per read-modify-write, `merge`); the
/// model's second and first revisions (as `st1000dm003-write-first` and
/// `st1000dm003-merge` take them); its own rules with 4 MiB segments.
pub fn rule_variants(p: &Profile) -> Vec<(String, Profile)> {
    let mut out = vec![("own".to_string(), p.clone())];
    let other_dirty = if p.write_hit_dirty == WriteHitDirty::WaitIfWriting {
        WriteHitDirty::OverwriteUnlessWriting
    } else {
        WriteHitDirty::WaitIfWriting
    };
    let other_unit = match p.destage_unit {
        DestageUnit::Segment => DestageUnit::Track,
        DestageUnit::Track => DestageUnit::Segment,
    };
    let other_grouping = match p.rmw_grouping {
        RmwGrouping::Track => RmwGrouping::Each,
        RmwGrouping::Each => RmwGrouping::Track,
    };
    for (what, v) in [
        (
            format!("dirty overlap {}", other_dirty.as_str()),
            Profile {
                write_hit_dirty: other_dirty,
                ..p.clone()
            },
        ),
        (
            format!("unit {}", other_unit.as_str()),
            Profile {
                destage_unit: other_unit,
                ..p.clone()
            },
        ),
        (
            format!("rmw {}", other_grouping.as_str()),
            Profile {
                rmw_grouping: other_grouping,
                ..p.clone()
            },
        ),
        (
            format!("rmw ×{}", if p.rmw_revolutions == 1.0 { 2 } else { 1 }),
            Profile {
                rmw_revolutions: if p.rmw_revolutions == 1.0 { 2.0 } else { 1.0 },
                ..p.clone()
            },
        ),
        (
            "dirty overlap merge".to_string(),
            Profile {
                write_hit_dirty: WriteHitDirty::Merge,
                ..p.clone()
            },
        ),
        (
            "second revision".to_string(),
            Profile {
                write_hit_clean: WriteHitClean::ClearSegment,
                write_hit_dirty: WriteHitDirty::WriteFirst,
                destage_unit: DestageUnit::Track,
                rmw_grouping: RmwGrouping::Each,
                rmw_revolutions: 1.0,
                ..p.clone()
            },
        ),
        (
            "first revision".to_string(),
            Profile {
                write_hit_clean: WriteHitClean::Keep,
                write_hit_dirty: WriteHitDirty::Merge,
                destage_unit: DestageUnit::Track,
                rmw_grouping: RmwGrouping::Each,
                rmw_revolutions: 1.0,
                ..p.clone()
            },
        ),
        (
            "4 MiB segments".to_string(),
            Profile {
                write_segment_bytes: (4u64 << 20).min(p.cache_bytes),
                ..p.clone()
            },
        ),
    ] {
        out.push((what, v));
    }
    out.into_iter()
        .map(|(what, v)| (format!("{what}: {}", rules_label(&v)), v))
        .collect()
}

/// A stream of puts appended one after another at the outer edge, each as `pieces` commands
/// of equal size (the last takes the rest), then a flush; with `read_between`, a 1 MiB read
/// from a stream elsewhere (at the middle of the stroke) after each put. `sectors` is a put's
/// data; `pad` rounds each put's write up to a 4 KiB boundary (ext4's zeroed block tail), so
/// the next put starts inside it. Returns the time (ns) and the bytes moved (puts and reads).
fn put_stream(
    p: &Profile,
    puts: u64,
    sectors: u64,
    pieces: u64,
    pad: bool,
    read_between: bool,
) -> (f64, u64) {
    let mut d = Drive::new(p);
    let far = d.sector_at_stroke(0.5) / 8 * 8;
    let mut t = 0.0;
    let mut moved = 0u64;
    for i in 0..puts {
        let start = i * sectors;
        let len = if pad {
            (start + sectors).next_multiple_of(8) - start
        } else {
            sectors
        };
        let piece = len.div_ceil(pieces);
        let mut pos = start;
        let mut first = true;
        while pos < start + len {
            let n = piece.min(start + len - pos);
            t = d.submit(&req(ReqOp::Write, pos, n, !first), t);
            first = false;
            pos += n;
        }
        moved += len * 512;
        if read_between {
            t = d.submit(&req(ReqOp::Read, far + i * 2048, 2048, false), t);
            moved += 1 << 20;
        }
    }
    t = d.submit(&req(ReqOp::Flush, 0, 0, false), t);
    (t, moved)
}

/// [`put_stream`] as MB/s of the data moved over the whole time, the flush included.
fn put_stream_mb_s(
    p: &Profile,
    puts: u64,
    sectors: u64,
    pieces: u64,
    pad: bool,
    read_between: bool,
) -> f64 {
    let (t, moved) = put_stream(p, puts, sectors, pieces, pad, read_between);
    moved as f64 / t * 1e3
}

/// The time (ns) of `n` writes of 8 sectors at random 4 KiB-aligned places over the stroke,
/// moved `off` sectors up, each followed by a flush (a write with O_SYNC).
fn synced_random_writes_ns(p: &Profile, n: u32, off: u64) -> f64 {
    let mut d = Drive::new(p);
    let mut rng = Rng(0x0123_4567_89ab_cdef);
    let mut t = 0.0;
    for _ in 0..n {
        let s = (random_sector(&d, &mut rng) + off).min(d.capacity_sectors() - 16);
        t = d.submit(&req(ReqOp::Write, s, 8, false), t);
        t = d.submit(&req(ReqOp::Flush, 0, 0, false), t);
    }
    t
}

/// The time (ns) of `n` writes of `len` sectors every `stride` sectors from `off`, one
/// after another as the host sends them, then a flush.
fn strided_writes_ns(p: &Profile, n: u64, len: u64, stride: u64, off: u64) -> f64 {
    let mut d = Drive::new(p);
    let mut t = 0.0;
    for i in 0..n {
        t = d.submit(&req(ReqOp::Write, off + i * stride, len, false), t);
    }
    d.submit(&req(ReqOp::Flush, 0, 0, false), t)
}

/// Runs the rule streams under every variant of `p` ([`rule_variants`]).
pub fn rule_streams(p: &Profile) -> RuleStreams {
    let variants = rule_variants(p);
    type Stream = (&'static str, fn(&Profile) -> f64);
    let streams: [Stream; 9] = [
        (
            "513-sector puts padded to 4 KiB, the next starting inside the pad",
            |p| put_stream_mb_s(p, 256, 513, 1, true, false),
        ),
        ("the same with a 1 MiB read elsewhere after each put", |p| {
            put_stream_mb_s(p, 256, 513, 1, true, true)
        }),
        ("513-sector puts appended exactly", |p| {
            put_stream_mb_s(p, 256, 513, 1, false, false)
        }),
        ("the same with a 1 MiB read elsewhere after each put", |p| {
            put_stream_mb_s(p, 256, 513, 1, false, true)
        }),
        (
            "8193-sector puts padded, 8 commands each, the next inside the pad",
            |p| put_stream_mb_s(p, 32, 8193, 8, true, false),
        ),
        ("8193-sector puts appended exactly, 8 commands each", |p| {
            put_stream_mb_s(p, 32, 8193, 8, false, false)
        }),
        ("4 MiB puts as 8 commands of 512 KiB", |p| {
            put_stream_mb_s(p, 32, 8192, 8, false, false)
        }),
        ("4 MiB puts as one command each", |p| {
            put_stream_mb_s(p, 32, 8192, 1, false, false)
        }),
        (
            "one 8193-sector (4 MiB + 512 B) command on an idle drive, no flush",
            |p| {
                let mut d = Drive::new(p);
                let done = d.submit(&req(ReqOp::Write, 0, 8193, false), 0.0);
                8193.0 * 512.0 / done * 1e3
            },
        ),
    ];
    type Pattern = (&'static str, fn(&Profile) -> f64, Option<Published>);
    let patterns: [Pattern; 5] = [
        (
            "1000 random 4 KiB writes, each synced: 512 B off / aligned",
            |p| synced_random_writes_ns(p, 1000, 1) / synced_random_writes_ns(p, 1000, 0),
            Some(Published {
                low: 22.0 / 8.0,
                high: 24.0 / 7.0,
                source: "OSNews, Feb 2010: WD Caviar Green, 1000 random 4K O_SYNC writes, \
                         aligned 7-8 s, 512 B off 22-24 s",
            }),
        ),
        (
            "32768 writes of 4 KiB at 16 KiB stride, then a flush: 512 B off / aligned",
            |p| strided_writes_ns(p, 32768, 8, 32, 1) / strided_writes_ns(p, 32768, 8, 32, 0),
            Some(Published {
                low: 73_164.0 / 28_094.0,
                high: 1_216_537.0 / 19_503.0,
                source: "blog.des.no, Aug 2010: WD20EARS, 128 MB of 4 KiB writes at 16 KiB \
                         stride, aligned 19,503 ms vs 512 B off 1,216,537 ms (the author later \
                         flagged a bug in his benchmark); his 'Off by one' post (drive not \
                         named): 28,094 ms vs 73,164-79,880 ms",
            }),
        ),
        (
            "sequential 1 KiB writes (8 MiB), then a flush: 512 B off / aligned",
            |p| strided_writes_ns(p, 8192, 2, 2, 1) / strided_writes_ns(p, 8192, 2, 2, 0),
            None,
        ),
        (
            "256 513-sector puts: padded, next inside the pad / appended exactly",
            |p| {
                put_stream(p, 256, 513, 1, true, false).0
                    / put_stream(p, 256, 513, 1, false, false).0
            },
            None,
        ),
        (
            "the same with a 1 MiB read elsewhere after each put",
            |p| {
                put_stream(p, 256, 513, 1, true, true).0 / put_stream(p, 256, 513, 1, false, true).0
            },
            None,
        ),
    ];
    RuleStreams {
        variants: variants.iter().map(|(name, _)| name.clone()).collect(),
        streams: streams
            .iter()
            .map(|&(name, f)| RuleStream {
                stream: name.to_string(),
                mb_per_s: variants.iter().map(|(_, v)| f(v)).collect(),
            })
            .collect(),
        patterns: patterns
            .iter()
            .map(|&(name, f, published)| PatternRatio {
                pattern: name.to_string(),
                ratio: variants.iter().map(|(_, v)| f(v)).collect(),
                published,
            })
            .collect(),
    }
}

/// Everything `hddsim validate` runs on `p`.
pub fn validation(p: &Profile) -> Validation {
    Validation {
        checks: run(p),
        rule_streams: rule_streams(p),
    }
}

/// The rule-stream tables for people.
pub fn render_rule_streams(r: &RuleStreams) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\nrule streams (MB/s of the data moved, the final flush included), per variant:"
    );
    for (i, v) in r.variants.iter().enumerate() {
        let _ = writeln!(s, "  [{}] {v}", i + 1);
    }
    let _ = write!(s, "{:<68}", "stream");
    for i in 0..r.variants.len() {
        let _ = write!(s, " {:>7}", format!("[{}]", i + 1));
    }
    s.push('\n');
    for row in &r.streams {
        let _ = write!(s, "{:<68}", row.stream);
        for v in &row.mb_per_s {
            let _ = write!(s, " {v:>7.1}");
        }
        s.push('\n');
    }
    let _ = writeln!(
        s,
        "\npublished patterns (time ratio), per variant, and the published ratio on another \
         drive (a check of shape, not fitted):"
    );
    let _ = write!(s, "{:<68}", "pattern");
    for i in 0..r.variants.len() {
        let _ = write!(s, " {:>7}", format!("[{}]", i + 1));
    }
    let _ = writeln!(s, "  published");
    let mut sources = Vec::new();
    for row in &r.patterns {
        let _ = write!(s, "{:<68}", row.pattern);
        for v in &row.ratio {
            let _ = write!(s, " {v:>7.2}");
        }
        match row.published {
            Some(p) => {
                sources.push(p.source);
                let _ = writeln!(s, "  {:.2}-{:.2} ({})", p.low, p.high, sources.len());
            }
            None => s.push_str("  -\n"),
        }
    }
    for (i, src) in sources.iter().enumerate() {
        let _ = writeln!(s, "  ({}) {src}", i + 1);
    }
    s
}

/// The table for people.
pub fn render(p: &Profile, checks: &[Check]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "hddsim validate: {} ({})", p.stem, p.name);
    let _ = writeln!(
        s,
        "manual: ST1000DM003 product manual / data sheet (the QD1 line: average seek + half a \
         revolution + command overhead);\nsister: one ST2000DM006 measured with fio through \
         NTFS (ublk-disksim's VALIDATION.md); reported, not fitted\n"
    );
    let _ = writeln!(
        s,
        "{:<62} {:>10} {:>10} {:>10}  unit",
        "figure", "model", "manual", "sister"
    );
    let opt = |v: Option<f64>| v.map_or_else(|| "-".to_string(), |v| format!("{v:.1}"));
    for c in checks {
        let _ = writeln!(
            s,
            "{:<62} {:>10.1} {:>10} {:>10}  {}",
            c.figure,
            c.model,
            opt(c.manual),
            opt(c.sister),
            c.unit
        );
    }
    s
}
