//! Drive profiles: every parameter of the HDD model in one TOML file, each with its source.
//!
//! ```toml
//! name = "Seagate Barracuda 7200.14 ST1000DM003 (1 TB, 7200 rpm, 512e)"
//!
//! [rpm]
//! value = 7200
//! source = "Seagate Barracuda 7200.14 product manual: spindle speed 7200 RPM"
//! ```
//!
//! Every parameter is a table `{ value, source }`; `source` says where the figure comes from
//! (a data sheet, or "estimate"). The parameters, their units and what they mean are listed
//! in [`Profile`] and in `profiles/README.md`. A profile is validated when it is read: every
//! value positive and finite (the read look-ahead may be 0, which turns it off), the sector
//! sizes powers of two of at least 512 bytes with physical ≥ logical, the capacity a whole
//! number of physical sectors, the inner/outer rate ratio at most 1, and the seek figures such
//! that the seek curve is increasing (see [`SeekCurve::solve`]). An error names the file, the
//! field and the value.
//!
//! # Finding a profile by name
//! [`load`] takes a file (a path to an existing file: an edited or new profile), or a name
//! (`st1000dm003`, or `st1000dm003.toml`):
//!
//! 1. a name of a profile built into the program ([`BUILT_IN`]: every `profiles/*.toml` at
//!    build time) is that profile, whatever files of the same name lie around — so a program
//!    models with the rules it was built with, not with a checkout's files edited since
//!    (the bug this order fixes: a binary built before a profile gained a setting read the
//!    newer file and failed every replay of a run);
//! 2. another name is looked up in the directories of [`profile_dirs`]: `hddsim/profiles` of
//!    the checkout the program was built from (while it exists), `./profiles`,
//!    `./hddsim/profiles`, and `PREFIX/share/hddsim/profiles` next to the installed program
//!    (`PREFIX/bin/hddsim`; `scripts/install.sh` puts the profiles there).

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// A validated drive profile. Times are nanoseconds, rates bytes per second.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    /// The file stem the profile was read from (`st1000dm003`), or what the caller named it.
    pub stem: String,
    /// A name for people (`name = "…"`).
    pub name: String,
    /// Bytes the drive holds (`capacity_bytes`).
    pub capacity_bytes: u64,
    /// Logical sector size in bytes (`logical_sector_bytes`): the unit of addressing.
    pub logical_sector_bytes: u32,
    /// Physical sector size in bytes (`physical_sector_bytes`): the unit the media writes.
    pub physical_sector_bytes: u32,
    /// Spindle speed (`rpm`).
    pub rpm: f64,
    /// Media transfer rate at the outer edge (`outer_rate_mb_per_s`, MB = 10^6 bytes).
    pub outer_rate_bytes_per_sec: f64,
    /// Inner-edge rate as a fraction of the outer one (`inner_outer_rate_ratio`, k).
    pub inner_outer_rate_ratio: f64,
    /// Track-to-track seek, read (`seek_track_to_track_ms`).
    pub seek_track_to_track_ns: f64,
    /// Track-to-track seek, write (`seek_track_to_track_write_ms`).
    pub seek_track_to_track_write_ns: f64,
    /// Full-stroke seek (`seek_full_stroke_ms`).
    pub seek_full_stroke_ns: f64,
    /// Average read seek over all pairs of positions (`seek_average_read_ms`).
    pub seek_average_read_ns: f64,
    /// Average write seek over all pairs of positions (`seek_average_write_ms`).
    pub seek_average_write_ns: f64,
    /// Drive cache (`cache_bytes`), used as a write-back cache that also keeps clean data.
    pub cache_bytes: u64,
    /// Controller time per command (`command_overhead_ms`).
    pub command_overhead_ns: f64,
    /// Host interface rate (`interface_mb_per_s`, MB = 10^6 bytes).
    pub interface_bytes_per_sec: f64,
    /// How far the drive reads ahead of the last read while it is idle (`readahead_bytes`;
    /// 0 = no read look-ahead).
    pub readahead_bytes: u64,
    /// What a write does to a clean cached copy of blocks it writes (`write_hit_clean`).
    pub write_hit_clean: WriteHitClean,
    /// What a write does when it overlaps data still dirty in the cache (`write_hit_dirty`).
    pub write_hit_dirty: WriteHitDirty,
    /// The most dirty data one sequential write stream may hold in the cache
    /// (`write_segment_bytes`): the large-command rule.
    pub write_segment_bytes: u64,
    /// What the destage writes as one unit, and so what a write finds "being written at
    /// that moment" (`destage_unit`).
    pub destage_unit: DestageUnit,
    /// How held partial physical sectors are read-modify-written when a flush or cache
    /// pressure forces them out (`rmw_grouping`).
    pub rmw_grouping: RmwGrouping,
    /// What a read-modify-write pass costs beyond the write, in revolutions
    /// (`rmw_revolutions`).
    pub rmw_revolutions: f64,
    /// How long the drive tries to read a sector it cannot read before it reports the error
    /// (`read_error_recovery_ms`): a desktop drive without error recovery control (ERC/TLER)
    /// retries for a long time. Used by `hddsim emulate`'s latent sector errors.
    pub read_error_recovery_ns: f64,
    /// Every parameter's source as written (or "set on the command line" for an override),
    /// by parameter name.
    pub sources: BTreeMap<String, String>,
}

/// What a write does to a clean cached copy (destaged, read or read ahead) of blocks it
/// writes (profile setting `write_hit_clean`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteHitClean {
    /// `clear-segment`: the cache segments holding clean copies of any block written are
    /// cleared whole (Seagate's "cache operation" text; DiskSim 4.0 empties clean segments a
    /// write overlaps). The rest of a physical sector the write covers only in part is then
    /// no longer cached: writing that sector needs a read-modify-write.
    ClearSegment,
    /// `keep`: the clean data stays; the write replaces only its own blocks (the model's
    /// first revision).
    Keep,
}

/// What a write does when it overlaps data still dirty in the cache (profile setting
/// `write_hit_dirty`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteHitDirty {
    /// `write-first`: the dirty copy is written to the media before the new data is
    /// accepted (Ruemmler & Wilkes 1994; the model's second revision).
    WriteFirst,
    /// `merge`: the new data replaces the dirty copy in the cache, no wait, also where the
    /// destage is writing it (the model's first revision).
    Merge,
    /// `overwrite-unless-writing`: dirty data that is not being written at that moment (see
    /// [`DestageUnit`]) is overwritten in the cache; where it is being written, the new data
    /// goes into another segment: the write is accepted at once, the destage in progress
    /// writes the old copy, and the sectors stay dirty to be written again (the comment on
    /// `BUFFER_COLLISION` in DiskSim 4.0's `disksim_diskcache.c`, Western Digital's
    /// repository: "WCE: if segment not currently being written to disk the overwrite data
    /// in buffer else create another segment").
    OverwriteUnlessWriting,
    /// `wait-if-writing`: as `overwrite-unless-writing`, but where the data is being written
    /// the write waits until the destage has written it, then overwrites it in the cache.
    WaitIfWriting,
}

/// What the background destage writes as one unit (profile setting `destage_unit`): what a
/// write overlapping dirty data finds "being written at that moment".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DestageUnit {
    /// `track`: the operation of one revolution in progress (a dirty run is written a track
    /// at a time from its first sector; ublk-disksim's ARCHITECTURE.md: a write-back "moves
    /// at most one track").
    Track,
    /// `segment`: the whole dirty run whose destage has begun, from its seek until its last
    /// sector is on the media (DiskSim 4.0: a cache segment is `BUFFER_WRITING` as a whole
    /// while its data goes to the media; appends join it, "Combine seq writes").
    Segment,
}

/// How held partial physical sectors are read-modify-written when a flush or cache pressure
/// forces them out (profile setting `rmw_grouping`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RmwGrouping {
    /// `each`: every dirty run with a held partial sector at an end pays its own read pass
    /// (one revolution) before it is written (the model's first two revisions).
    Each,
    /// `track`: the dirty runs within one revolution of the first are read-modify-written
    /// together: one read pass over them all, then one write pass (Western Digital, US
    /// 8,832,366: nearby unaligned writes coalesced, read in one revolution and written in
    /// one; Hitachi IPCOM000216045: the pre-read sized so that it causes no extra revolution).
    Track,
}

impl WriteHitClean {
    /// The name in a profile.
    pub fn as_str(self) -> &'static str {
        match self {
            WriteHitClean::ClearSegment => "clear-segment",
            WriteHitClean::Keep => "keep",
        }
    }

    fn parse(s: &str) -> Option<WriteHitClean> {
        match s {
            "clear-segment" => Some(WriteHitClean::ClearSegment),
            "keep" => Some(WriteHitClean::Keep),
            _ => None,
        }
    }
}

impl WriteHitDirty {
    /// The name in a profile.
    pub fn as_str(self) -> &'static str {
        match self {
            WriteHitDirty::WriteFirst => "write-first",
            WriteHitDirty::Merge => "merge",
            WriteHitDirty::OverwriteUnlessWriting => "overwrite-unless-writing",
            WriteHitDirty::WaitIfWriting => "wait-if-writing",
        }
    }

    /// Every value, in the order the error message lists them.
    pub const ALL: [WriteHitDirty; 4] = [
        WriteHitDirty::WriteFirst,
        WriteHitDirty::Merge,
        WriteHitDirty::OverwriteUnlessWriting,
        WriteHitDirty::WaitIfWriting,
    ];

    fn parse(s: &str) -> Option<WriteHitDirty> {
        WriteHitDirty::ALL.into_iter().find(|v| v.as_str() == s)
    }
}

impl DestageUnit {
    /// The name in a profile.
    pub fn as_str(self) -> &'static str {
        match self {
            DestageUnit::Track => "track",
            DestageUnit::Segment => "segment",
        }
    }

    fn parse(s: &str) -> Option<DestageUnit> {
        [DestageUnit::Track, DestageUnit::Segment]
            .into_iter()
            .find(|v| v.as_str() == s)
    }
}

impl RmwGrouping {
    /// The name in a profile.
    pub fn as_str(self) -> &'static str {
        match self {
            RmwGrouping::Each => "each",
            RmwGrouping::Track => "track",
        }
    }

    fn parse(s: &str) -> Option<RmwGrouping> {
        [RmwGrouping::Each, RmwGrouping::Track]
            .into_iter()
            .find(|v| v.as_str() == s)
    }
}

/// The source recorded for a parameter set by a `PROFILE+PARAM=VALUE` override.
pub const OVERRIDE_SOURCE: &str = "set on the command line";

/// Why a profile could not be used.
#[derive(Debug)]
#[non_exhaustive]
pub enum ProfileError {
    /// The file could not be read.
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// It is not valid TOML or lacks a field (the message says which, with the line).
    Toml {
        /// Where it came from.
        origin: String,
        /// The `toml` crate's message.
        message: String,
    },
    /// A value is out of range.
    Invalid {
        /// Where it came from.
        origin: String,
        /// The field.
        field: &'static str,
        /// Its value as written.
        value: String,
        /// What is wrong.
        why: String,
    },
    /// A profile name that is neither a file nor found in the profile directories.
    NotFound {
        /// The name given.
        name: String,
        /// The places looked in.
        looked: Vec<PathBuf>,
        /// The profiles that do exist there, and the built-in ones.
        available: Vec<String>,
    },
    /// A `PROFILE+PARAM=VALUE[,…]` override that cannot be applied.
    Override {
        /// The whole profile argument.
        spec: String,
        /// What is wrong (names the parameter or the piece).
        why: String,
    },
}

impl fmt::Display for ProfileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProfileError::Read { path, source } => {
                write!(f, "cannot read the profile {}: {source}", path.display())
            }
            ProfileError::Toml { origin, message } => {
                write!(f, "profile {origin}: {}", message.trim_end())
            }
            ProfileError::Invalid {
                origin,
                field,
                value,
                why,
            } => write!(f, "profile {origin}: {field} = {value}: {why}"),
            ProfileError::NotFound {
                name,
                looked,
                available,
            } => {
                write!(f, "no profile `{name}`: not a file, and not found in ")?;
                let dirs: Vec<String> = looked.iter().map(|p| p.display().to_string()).collect();
                write!(f, "{}", dirs.join(", "))?;
                if !looked.is_empty() {
                    write!(f, " or among the built-in profiles")?;
                }
                if available.is_empty() {
                    write!(f, " (no profiles there)")
                } else {
                    write!(f, " (available: {})", available.join(", "))
                }
            }
            ProfileError::Override { spec, why } => {
                write!(
                    f,
                    "profile `{spec}`: {why} (an override is PROFILE+PARAM=VALUE[,PARAM=VALUE…])"
                )
            }
        }
    }
}

impl std::error::Error for ProfileError {}

/// One parameter as written: its value and where it comes from.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Param<T> {
    value: T,
    source: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProfile {
    name: String,
    #[serde(default)]
    #[allow(dead_code)]
    description: Option<String>,
    capacity_bytes: Param<u64>,
    logical_sector_bytes: Param<u64>,
    physical_sector_bytes: Param<u64>,
    rpm: Param<f64>,
    outer_rate_mb_per_s: Param<f64>,
    inner_outer_rate_ratio: Param<f64>,
    seek_track_to_track_ms: Param<f64>,
    seek_track_to_track_write_ms: Param<f64>,
    seek_full_stroke_ms: Param<f64>,
    seek_average_read_ms: Param<f64>,
    seek_average_write_ms: Param<f64>,
    cache_bytes: Param<u64>,
    command_overhead_ms: Param<f64>,
    interface_mb_per_s: Param<f64>,
    readahead_bytes: Param<u64>,
    write_hit_clean: Param<String>,
    write_hit_dirty: Param<String>,
    write_segment_bytes: Param<u64>,
    destage_unit: Param<String>,
    rmw_grouping: Param<String>,
    rmw_revolutions: Param<f64>,
    read_error_recovery_ms: Param<f64>,
}

/// The parameters of a profile (every key but `name` and `description`), as written.
pub const PARAMETERS: [&str; 22] = [
    "capacity_bytes",
    "logical_sector_bytes",
    "physical_sector_bytes",
    "rpm",
    "outer_rate_mb_per_s",
    "inner_outer_rate_ratio",
    "seek_track_to_track_ms",
    "seek_track_to_track_write_ms",
    "seek_full_stroke_ms",
    "seek_average_read_ms",
    "seek_average_write_ms",
    "cache_bytes",
    "command_overhead_ms",
    "interface_mb_per_s",
    "readahead_bytes",
    "write_hit_clean",
    "write_hit_dirty",
    "write_segment_bytes",
    "destage_unit",
    "rmw_grouping",
    "rmw_revolutions",
    "read_error_recovery_ms",
];

/// A seek curve t(x) = t0 + A·x + B·√x for a distance x > 0 (a fraction of the full stroke),
/// and 0 for no movement. Times in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SeekCurve {
    /// t0: the track-to-track seek.
    pub t0: f64,
    /// A: the linear (coast) term.
    pub a: f64,
    /// B: the square-root (acceleration) term.
    pub b: f64,
}

impl SeekCurve {
    /// Solves A and B from the track-to-track (`t0`), full-stroke (`full`) and average
    /// (`avg`) seek times, the average taken over all pairs of positions uniform over the
    /// stroke: E|x−y| = 1/3 and E√|x−y| = 8/15, so
    ///
    /// ```text
    /// t(1)  = t0 + A + B                = full
    /// E t   = t0 + A/3 + 8B/15          = avg
    /// ⇒ B = 5·(avg − t0) − 5·(full − t0)/3,   A = (full − t0) − B
    /// ```
    ///
    /// Refused (with the reason) unless A ≥ 0 and B ≥ 0, i.e. unless the curve increases
    /// with distance: (full − t0)/3 ≤ avg − t0 ≤ 8·(full − t0)/15.
    pub fn solve(t0: f64, full: f64, avg: f64) -> Result<SeekCurve, String> {
        let d = full - t0;
        let m = avg - t0;
        if d <= 0.0 {
            return Err("the full-stroke seek must be longer than the track-to-track seek".into());
        }
        let b = 5.0 * m - 5.0 * d / 3.0;
        let a = d - b;
        // A little slack for rounding in the figures.
        let eps = 1e-9 * d;
        if b < -eps || a < -eps {
            return Err(format!(
                "no increasing seek curve t(x) = t0 + A·x + B·√x fits: the average must lie \
                 between t0 + (full − t0)/3 = {:.3} ms and t0 + 8·(full − t0)/15 = {:.3} ms",
                (t0 + d / 3.0) / 1e6,
                (t0 + 8.0 * d / 15.0) / 1e6
            ));
        }
        Ok(SeekCurve {
            t0,
            a: a.max(0.0),
            b: b.max(0.0),
        })
    }

    /// The seek time over a fraction `x` (0–1) of the full stroke; 0 for `x` = 0.
    pub fn time(&self, x: f64) -> f64 {
        if x <= 0.0 {
            0.0
        } else {
            self.t0 + self.a * x + self.b * x.sqrt()
        }
    }
}

impl Profile {
    /// The read seek curve.
    pub fn read_seek(&self) -> SeekCurve {
        SeekCurve::solve(
            self.seek_track_to_track_ns,
            self.seek_full_stroke_ns,
            self.seek_average_read_ns,
        )
        .expect("validated when the profile was made")
    }

    /// The write seek curve.
    pub fn write_seek(&self) -> SeekCurve {
        SeekCurve::solve(
            self.seek_track_to_track_write_ns,
            self.seek_full_stroke_ns,
            self.seek_average_write_ns,
        )
        .expect("validated when the profile was made")
    }

    /// One revolution in nanoseconds.
    pub fn revolution_ns(&self) -> f64 {
        60e9 / self.rpm
    }

    /// Reads and validates the profile at `path` (its stem becomes [`Profile::stem`]).
    pub fn load(path: &Path) -> Result<Profile, ProfileError> {
        let (text, origin, stem) = read_file(path)?;
        Profile::from_toml(&text, &origin, &stem)
    }

    /// Parses and validates a profile; `origin` names it in errors.
    pub fn from_toml(text: &str, origin: &str, stem: &str) -> Result<Profile, ProfileError> {
        let raw: RawProfile = toml::from_str(text).map_err(|e| ProfileError::Toml {
            origin: origin.to_string(),
            message: e.to_string(),
        })?;
        Profile::from_raw(raw, origin, stem)
    }

    fn from_raw(raw: RawProfile, origin: &str, stem: &str) -> Result<Profile, ProfileError> {
        let invalid = |field: &'static str, value: String, why: &str| ProfileError::Invalid {
            origin: origin.to_string(),
            field,
            value,
            why: why.to_string(),
        };
        // Every parameter needs a source.
        let sources: [(&'static str, &str); 22] = [
            ("capacity_bytes", &raw.capacity_bytes.source),
            ("logical_sector_bytes", &raw.logical_sector_bytes.source),
            ("physical_sector_bytes", &raw.physical_sector_bytes.source),
            ("rpm", &raw.rpm.source),
            ("outer_rate_mb_per_s", &raw.outer_rate_mb_per_s.source),
            ("inner_outer_rate_ratio", &raw.inner_outer_rate_ratio.source),
            ("seek_track_to_track_ms", &raw.seek_track_to_track_ms.source),
            (
                "seek_track_to_track_write_ms",
                &raw.seek_track_to_track_write_ms.source,
            ),
            ("seek_full_stroke_ms", &raw.seek_full_stroke_ms.source),
            ("seek_average_read_ms", &raw.seek_average_read_ms.source),
            ("seek_average_write_ms", &raw.seek_average_write_ms.source),
            ("cache_bytes", &raw.cache_bytes.source),
            ("command_overhead_ms", &raw.command_overhead_ms.source),
            ("interface_mb_per_s", &raw.interface_mb_per_s.source),
            ("readahead_bytes", &raw.readahead_bytes.source),
            ("write_hit_clean", &raw.write_hit_clean.source),
            ("write_hit_dirty", &raw.write_hit_dirty.source),
            ("write_segment_bytes", &raw.write_segment_bytes.source),
            ("destage_unit", &raw.destage_unit.source),
            ("rmw_grouping", &raw.rmw_grouping.source),
            ("rmw_revolutions", &raw.rmw_revolutions.source),
            ("read_error_recovery_ms", &raw.read_error_recovery_ms.source),
        ];
        debug_assert!(sources.iter().map(|s| s.0).eq(PARAMETERS));
        for (field, source) in sources {
            if source.trim().is_empty() {
                return Err(invalid(
                    field,
                    "{ source = \"\" }".into(),
                    "every parameter needs a source (a data sheet, or \"estimate\")",
                ));
            }
        }
        if raw.name.trim().is_empty() {
            return Err(invalid("name", "\"\"".into(), "the profile needs a name"));
        }

        let positive_f = |field: &'static str, v: f64| -> Result<f64, ProfileError> {
            if v.is_finite() && v > 0.0 {
                Ok(v)
            } else {
                Err(invalid(
                    field,
                    v.to_string(),
                    "must be a positive finite number",
                ))
            }
        };
        let positive_u = |field: &'static str, v: u64| -> Result<u64, ProfileError> {
            if v > 0 {
                Ok(v)
            } else {
                Err(invalid(field, v.to_string(), "must be positive"))
            }
        };
        let sector = |field: &'static str, v: u64| -> Result<u32, ProfileError> {
            if (512..=1 << 20).contains(&v) && v.is_power_of_two() {
                Ok(v as u32)
            } else {
                Err(invalid(
                    field,
                    v.to_string(),
                    "must be a power of two between 512 and 1048576 bytes",
                ))
            }
        };

        let capacity_bytes = positive_u("capacity_bytes", raw.capacity_bytes.value)?;
        let logical = sector("logical_sector_bytes", raw.logical_sector_bytes.value)?;
        let physical = sector("physical_sector_bytes", raw.physical_sector_bytes.value)?;
        if physical < logical {
            return Err(invalid(
                "physical_sector_bytes",
                physical.to_string(),
                &format!("must be at least logical_sector_bytes ({logical})"),
            ));
        }
        if capacity_bytes % u64::from(physical) != 0 {
            return Err(invalid(
                "capacity_bytes",
                capacity_bytes.to_string(),
                &format!("must be a whole number of physical sectors ({physical} bytes)"),
            ));
        }
        let rpm = positive_f("rpm", raw.rpm.value)?;
        let outer = positive_f("outer_rate_mb_per_s", raw.outer_rate_mb_per_s.value)?;
        let ratio = positive_f("inner_outer_rate_ratio", raw.inner_outer_rate_ratio.value)?;
        if ratio > 1.0 {
            return Err(invalid(
                "inner_outer_rate_ratio",
                ratio.to_string(),
                "must be at most 1 (the inner edge is not faster than the outer)",
            ));
        }
        let t2t = positive_f("seek_track_to_track_ms", raw.seek_track_to_track_ms.value)?;
        let t2t_w = positive_f(
            "seek_track_to_track_write_ms",
            raw.seek_track_to_track_write_ms.value,
        )?;
        let full = positive_f("seek_full_stroke_ms", raw.seek_full_stroke_ms.value)?;
        let avg_r = positive_f("seek_average_read_ms", raw.seek_average_read_ms.value)?;
        let avg_w = positive_f("seek_average_write_ms", raw.seek_average_write_ms.value)?;
        if full <= t2t.max(t2t_w) {
            return Err(invalid(
                "seek_full_stroke_ms",
                full.to_string(),
                &format!(
                    "must be longer than seek_track_to_track_ms ({t2t}) and \
                     seek_track_to_track_write_ms ({t2t_w})"
                ),
            ));
        }
        for (field, t0, avg) in [
            ("seek_average_read_ms", t2t, avg_r),
            ("seek_average_write_ms", t2t_w, avg_w),
        ] {
            SeekCurve::solve(t0 * 1e6, full * 1e6, avg * 1e6)
                .map_err(|why| invalid(field, avg.to_string(), &why))?;
        }
        let cache_bytes = positive_u("cache_bytes", raw.cache_bytes.value)?;
        if cache_bytes % 512 != 0 {
            return Err(invalid(
                "cache_bytes",
                cache_bytes.to_string(),
                "must be a multiple of 512 bytes",
            ));
        }
        let overhead = positive_f("command_overhead_ms", raw.command_overhead_ms.value)?;
        let iface = positive_f("interface_mb_per_s", raw.interface_mb_per_s.value)?;
        let readahead = raw.readahead_bytes.value;
        if readahead % 512 != 0 {
            return Err(invalid(
                "readahead_bytes",
                readahead.to_string(),
                "must be a multiple of 512 bytes (0 turns read look-ahead off)",
            ));
        }
        let write_hit_clean =
            WriteHitClean::parse(&raw.write_hit_clean.value).ok_or_else(|| {
                invalid(
                    "write_hit_clean",
                    format!("{:?}", raw.write_hit_clean.value),
                    "must be \"clear-segment\" or \"keep\"",
                )
            })?;
        let write_hit_dirty =
            WriteHitDirty::parse(&raw.write_hit_dirty.value).ok_or_else(|| {
                invalid(
                    "write_hit_dirty",
                    format!("{:?}", raw.write_hit_dirty.value),
                    "must be \"write-first\", \"merge\", \"overwrite-unless-writing\" or \
                     \"wait-if-writing\"",
                )
            })?;
        let destage_unit = DestageUnit::parse(&raw.destage_unit.value).ok_or_else(|| {
            invalid(
                "destage_unit",
                format!("{:?}", raw.destage_unit.value),
                "must be \"track\" or \"segment\"",
            )
        })?;
        let rmw_grouping = RmwGrouping::parse(&raw.rmw_grouping.value).ok_or_else(|| {
            invalid(
                "rmw_grouping",
                format!("{:?}", raw.rmw_grouping.value),
                "must be \"each\" or \"track\"",
            )
        })?;
        let rmw_revolutions = positive_f("rmw_revolutions", raw.rmw_revolutions.value)?;
        let recovery = positive_f("read_error_recovery_ms", raw.read_error_recovery_ms.value)?;
        let segment = raw.write_segment_bytes.value;
        if segment % u64::from(physical) != 0 || segment == 0 || segment > cache_bytes {
            return Err(invalid(
                "write_segment_bytes",
                segment.to_string(),
                &format!(
                    "must be a positive multiple of physical_sector_bytes ({physical}) \
                     and at most cache_bytes ({cache_bytes})"
                ),
            ));
        }
        let sources = sources
            .iter()
            .map(|&(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Ok(Profile {
            stem: stem.to_string(),
            name: raw.name,
            capacity_bytes,
            logical_sector_bytes: logical,
            physical_sector_bytes: physical,
            rpm,
            outer_rate_bytes_per_sec: outer * 1e6,
            inner_outer_rate_ratio: ratio,
            seek_track_to_track_ns: t2t * 1e6,
            seek_track_to_track_write_ns: t2t_w * 1e6,
            seek_full_stroke_ns: full * 1e6,
            seek_average_read_ns: avg_r * 1e6,
            seek_average_write_ns: avg_w * 1e6,
            cache_bytes,
            command_overhead_ns: overhead * 1e6,
            interface_bytes_per_sec: iface * 1e6,
            readahead_bytes: readahead,
            write_hit_clean,
            write_hit_dirty,
            write_segment_bytes: segment,
            destage_unit,
            rmw_grouping,
            rmw_revolutions,
            read_error_recovery_ns: recovery * 1e6,
            sources,
        })
    }

    /// Parses a profile and applies `overrides` (parameter, value as typed) first: each
    /// replaces that parameter's value, and its source becomes [`OVERRIDE_SOURCE`]. `spec`
    /// names the whole argument in errors.
    pub fn from_toml_with(
        text: &str,
        origin: &str,
        stem: &str,
        spec: &str,
        overrides: &[(String, String)],
    ) -> Result<Profile, ProfileError> {
        if overrides.is_empty() {
            return Profile::from_toml(text, origin, stem);
        }
        let mut table: toml::Table =
            text.parse()
                .map_err(|e: toml::de::Error| ProfileError::Toml {
                    origin: origin.to_string(),
                    message: e.to_string(),
                })?;
        for (param, value) in overrides {
            if !PARAMETERS.contains(&param.as_str()) {
                return Err(ProfileError::Override {
                    spec: spec.to_string(),
                    why: format!(
                        "no parameter `{param}` (parameters: {})",
                        PARAMETERS.join(", ")
                    ),
                });
            }
            let mut entry = toml::Table::new();
            entry.insert("value".into(), override_value(value));
            entry.insert("source".into(), OVERRIDE_SOURCE.into());
            table.insert(param.clone(), toml::Value::Table(entry));
        }
        let origin = format!("{origin} with `{spec}`");
        let raw: RawProfile =
            toml::Value::Table(table)
                .try_into()
                .map_err(|e: toml::de::Error| ProfileError::Toml {
                    origin: origin.clone(),
                    message: e.to_string(),
                })?;
        Profile::from_raw(raw, &origin, stem)
    }
}

/// A value typed on the command line as TOML: an integer, a float, else a string.
fn override_value(v: &str) -> toml::Value {
    if let Ok(i) = v.parse::<i64>() {
        toml::Value::Integer(i)
    } else if let Ok(f) = v.parse::<f64>() {
        toml::Value::Float(f)
    } else {
        toml::Value::String(v.to_string())
    }
}

/// Parameter overrides: (parameter, value as typed), in the order given.
pub type Overrides = Vec<(String, String)>;

/// Splits `PROFILE+PARAM=VALUE[,PARAM=VALUE…]` into the profile and its overrides (none
/// without a `+`).
pub fn split_overrides(spec: &str) -> Result<(&str, Overrides), ProfileError> {
    let Some((base, list)) = spec.split_once('+') else {
        return Ok((spec, Vec::new()));
    };
    let bad = |why: String| ProfileError::Override {
        spec: spec.to_string(),
        why,
    };
    if base.is_empty() {
        return Err(bad("no profile before `+`".into()));
    }
    let mut out: Overrides = Vec::new();
    for item in list.split(',') {
        let Some((k, v)) = item.split_once('=') else {
            return Err(bad(format!("`{item}` is not PARAM=VALUE")));
        };
        let (k, v) = (k.trim(), v.trim());
        if k.is_empty() || v.is_empty() {
            return Err(bad(format!("`{item}` is not PARAM=VALUE")));
        }
        if out.iter().any(|(p, _)| p == k) {
            return Err(bad(format!("`{k}` is set twice")));
        }
        out.push((k.to_string(), v.to_string()));
    }
    Ok((base, out))
}

/// The profiles built into the program: every `profiles/*.toml` when it was built, as (name,
/// TOML text), by name (generated by `build.rs`).
pub const BUILT_IN: &[(&str, &str)] = include!(concat!(env!("OUT_DIR"), "/built_in_profiles.rs"));

/// The built-in profile `name` (`NAME` or `NAME.toml`), if there is one.
pub fn built_in(name: &str) -> Option<&'static str> {
    let name = name.strip_suffix(".toml").unwrap_or(name);
    BUILT_IN
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, text)| *text)
}

/// The directories a profile name is looked up in, in order: this crate's `profiles/`
/// (`hddsim/profiles`, where it was built), `./profiles`, `./hddsim/profiles`, and
/// `../share/hddsim/profiles` from the running program's directory (where
/// `scripts/install.sh` puts them). After these come the [`BUILT_IN`] profiles.
pub fn profile_dirs() -> Vec<PathBuf> {
    let mut dirs = vec![
        Path::new(env!("CARGO_MANIFEST_DIR")).join("profiles"),
        PathBuf::from("profiles"),
        PathBuf::from("hddsim").join("profiles"),
    ];
    let exe = std::env::current_exe().ok();
    if let Some(prefix) = exe.as_deref().and_then(Path::parent).and_then(Path::parent) {
        dirs.push(prefix.join("share").join("hddsim").join("profiles"));
    }
    dirs
}

/// Finds the file of the profile `spec` names: an existing file as is, else `NAME` or
/// `NAME.toml` in [`profile_dirs`]. A name found only among the [`BUILT_IN`] profiles is
/// [`ProfileError::NotFound`] here; [`load`] takes it from there.
pub fn resolve(spec: &str) -> Result<PathBuf, ProfileError> {
    resolve_in(spec, profile_dirs())
}

/// [`resolve`] in `dirs`.
fn resolve_in(spec: &str, dirs: Vec<PathBuf>) -> Result<PathBuf, ProfileError> {
    let direct = Path::new(spec);
    if direct.is_file() {
        return Ok(direct.to_path_buf());
    }
    let plain = !spec.contains('/') && !spec.is_empty();
    if plain {
        let file = if spec.ends_with(".toml") {
            spec.to_string()
        } else {
            format!("{spec}.toml")
        };
        for dir in &dirs {
            let candidate = dir.join(&file);
            if candidate.is_file() {
                return Ok(candidate);
            }
        }
    }
    let mut available: Vec<String> = dirs
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flatten()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .collect();
    available.extend(BUILT_IN.iter().map(|(name, _)| name.to_string()));
    available.sort();
    available.dedup();
    Err(ProfileError::NotFound {
        name: spec.to_string(),
        looked: if plain { dirs } else { Vec::new() },
        available,
    })
}

/// The text of the profile file at `path`, its name for errors (the path) and its stem.
fn read_file(path: &Path) -> Result<(String, String, String), ProfileError> {
    let text = std::fs::read_to_string(path).map_err(|source| ProfileError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    Ok((text, path.display().to_string(), stem))
}

/// Loads the profile `spec` names: a file, or a name (see the [module docs](self): a built-in
/// profile's name is the built-in profile, other names are looked up in [`profile_dirs`]),
/// optionally followed by
/// overrides, `PROFILE+PARAM=VALUE[,PARAM=VALUE…]` (e.g.
/// `st1000dm003+write_hit_clean=keep,write_hit_dirty=merge`). An overridden profile's
/// [`Profile::stem`] is the whole `spec` minus any directory and `.toml`, so a report names
/// the variant.
pub fn load(spec: &str) -> Result<Profile, ProfileError> {
    load_in(spec, profile_dirs())
}

/// [`load`], looking names up in `dirs`.
fn load_in(spec: &str, dirs: Vec<PathBuf>) -> Result<Profile, ProfileError> {
    if Path::new(spec).is_file() {
        return Profile::load(Path::new(spec));
    }
    let (base, overrides) = split_overrides(spec)?;
    // The profile's text, where it came from (for errors), and its stem: a built-in one first.
    let plain = !base.contains('/') && !Path::new(base).is_file();
    let (text, origin, base_stem) = match built_in(base) {
        Some(text) if plain => {
            let stem = base.strip_suffix(".toml").unwrap_or(base);
            (
                text.to_string(),
                format!("{stem} (built in)"),
                stem.to_string(),
            )
        }
        _ => read_file(&resolve_in(base, dirs)?)?,
    };
    if overrides.is_empty() {
        return Profile::from_toml(&text, &origin, &base_stem);
    }
    let list = &spec[spec.find('+').expect("has overrides") + 1..];
    Profile::from_toml_with(
        &text,
        &origin,
        &format!("{base_stem}+{list}"),
        spec,
        &overrides,
    )
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A profile shipped in `hddsim/profiles` (also for the model's unit tests).
    pub(crate) fn shipped(name: &str) -> Profile {
        Profile::load(
            &Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("profiles")
                .join(format!("{name}.toml")),
        )
        .unwrap()
    }

    #[test]
    fn shipped_profiles() {
        let p = shipped("st1000dm003");
        assert_eq!(p.stem, "st1000dm003");
        assert_eq!(p.capacity_bytes, 1_000_204_886_016);
        assert_eq!(
            (p.logical_sector_bytes, p.physical_sector_bytes),
            (512, 4096)
        );
        assert_eq!(p.rpm, 7200.0);
        assert_eq!(p.cache_bytes, 64 << 20);
        assert!((p.revolution_ns() - 8_333_333.33).abs() < 0.01);
        let k = shipped("st1000dm003-4kn");
        assert_eq!(
            (k.logical_sector_bytes, k.physical_sector_bytes),
            (4096, 4096)
        );
        // The same drive otherwise.
        assert_eq!(
            Profile {
                stem: p.stem.clone(),
                name: p.name.clone(),
                logical_sector_bytes: 512,
                sources: p.sources.clone(),
                ..k.clone()
            },
            p
        );
        // The third revision's write-back rules (docs/HDD-MODEL.md, "Write hits").
        let rules = |p: &Profile| {
            (
                p.write_hit_clean,
                p.write_hit_dirty,
                p.destage_unit,
                p.rmw_grouping,
                p.rmw_revolutions,
            )
        };
        assert_eq!(
            rules(&p),
            (
                WriteHitClean::ClearSegment,
                WriteHitDirty::OverwriteUnlessWriting,
                DestageUnit::Segment,
                RmwGrouping::Track,
                2.0
            )
        );
        assert_eq!(p.write_segment_bytes, 64 << 20);
        assert_eq!(rules(&k), rules(&p));
        // st1000dm003-write-first and -merge: the second and first revisions' rules, the
        // same drive otherwise (only those settings, their sources and the names differ).
        for (stem, want) in [
            (
                "st1000dm003-write-first",
                (
                    WriteHitClean::ClearSegment,
                    WriteHitDirty::WriteFirst,
                    DestageUnit::Track,
                    RmwGrouping::Each,
                    1.0,
                ),
            ),
            (
                "st1000dm003-merge",
                (
                    WriteHitClean::Keep,
                    WriteHitDirty::Merge,
                    DestageUnit::Track,
                    RmwGrouping::Each,
                    1.0,
                ),
            ),
        ] {
            let m = shipped(stem);
            assert_eq!(rules(&m), want, "{stem}");
            assert_eq!(
                Profile {
                    stem: p.stem.clone(),
                    name: p.name.clone(),
                    sources: p.sources.clone(),
                    write_hit_clean: p.write_hit_clean,
                    write_hit_dirty: p.write_hit_dirty,
                    destage_unit: p.destage_unit,
                    rmw_grouping: p.rmw_grouping,
                    rmw_revolutions: p.rmw_revolutions,
                    ..m.clone()
                },
                p,
                "{stem}"
            );
            let differing: Vec<&String> = p
                .sources
                .keys()
                .filter(|k| p.sources[*k] != m.sources[*k])
                .collect();
            let settings = [
                "destage_unit",
                "rmw_grouping",
                "rmw_revolutions",
                "write_hit_clean",
                "write_hit_dirty",
            ];
            assert!(
                differing.iter().all(|d| settings.contains(&d.as_str())),
                "{stem}: {differing:?}"
            );
        }
    }

    #[test]
    fn seek_curves_hit_the_figures() {
        let p = shipped("st1000dm003");
        for (curve, avg, t0) in [
            (
                p.read_seek(),
                p.seek_average_read_ns,
                p.seek_track_to_track_ns,
            ),
            (
                p.write_seek(),
                p.seek_average_write_ns,
                p.seek_track_to_track_write_ns,
            ),
        ] {
            assert!(curve.a >= 0.0 && curve.b >= 0.0, "{curve:?}");
            assert!((curve.time(1.0) - p.seek_full_stroke_ns).abs() < 1e-3);
            assert!((curve.time(1e-15) - t0).abs() < 1.0);
            assert_eq!(curve.time(0.0), 0.0);
            // The average over all pairs (numerically, midpoint rule over |x − y|, whose
            // density on [0, 1] is 2(1 − d)).
            let n = 200_000;
            let mut sum = 0.0;
            for i in 0..n {
                let d = (i as f64 + 0.5) / n as f64;
                sum += curve.time(d) * 2.0 * (1.0 - d) / n as f64;
            }
            assert!((sum - avg).abs() < 1e3, "average {sum} vs {avg}");
        }
        // The read curve: B = 5·7.5 − 5·16/3 = 10.8333 ms, A = 5.1667 ms.
        let r = p.read_seek();
        assert!((r.b - 10_833_333.3).abs() < 1.0 && (r.a - 5_166_666.7).abs() < 1.0);
    }

    const GOOD: &str = r#"
name = "test drive"
capacity_bytes = { value = 1000204886016, source = "s" }
logical_sector_bytes = { value = 512, source = "s" }
physical_sector_bytes = { value = 4096, source = "s" }
rpm = { value = 7200, source = "s" }
outer_rate_mb_per_s = { value = 210, source = "s" }
inner_outer_rate_ratio = { value = 0.5, source = "s" }
seek_track_to_track_ms = { value = 1.0, source = "s" }
seek_track_to_track_write_ms = { value = 1.2, source = "s" }
seek_full_stroke_ms = { value = 17.0, source = "s" }
seek_average_read_ms = { value = 8.5, source = "s" }
seek_average_write_ms = { value = 9.5, source = "s" }
cache_bytes = { value = 67108864, source = "s" }
command_overhead_ms = { value = 0.1, source = "s" }
interface_mb_per_s = { value = 600, source = "s" }
readahead_bytes = { value = 1048576, source = "s" }
write_hit_clean = { value = "clear-segment", source = "s" }
write_hit_dirty = { value = "write-first", source = "s" }
write_segment_bytes = { value = 67108864, source = "s" }
destage_unit = { value = "segment", source = "s" }
rmw_grouping = { value = "track", source = "s" }
rmw_revolutions = { value = 2.0, source = "s" }
read_error_recovery_ms = { value = 120000.0, source = "s" }
"#;

    fn with(field: &str, value: &str) -> String {
        GOOD.lines()
            .map(|l| {
                if l.starts_with(&format!("{field} =")) {
                    format!("{field} = {{ value = {value}, source = \"s\" }}")
                } else {
                    l.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn err(text: &str) -> String {
        Profile::from_toml(text, "t.toml", "t")
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn validation_names_field_and_value() {
        Profile::from_toml(GOOD, "t.toml", "t").unwrap();
        for (field, value, expect) in [
            (
                "rpm",
                "-7200",
                "rpm = -7200: must be a positive finite number",
            ),
            ("rpm", "nan", "rpm = NaN: must be a positive finite number"),
            ("outer_rate_mb_per_s", "inf", "outer_rate_mb_per_s = inf"),
            (
                "logical_sector_bytes",
                "1000",
                "logical_sector_bytes = 1000: must be a power of two",
            ),
            (
                "physical_sector_bytes",
                "256",
                "physical_sector_bytes = 256",
            ),
            (
                "logical_sector_bytes",
                "8192",
                "physical_sector_bytes = 4096: must be at least logical_sector_bytes (8192)",
            ),
            (
                "capacity_bytes",
                "0",
                "capacity_bytes = 0: must be positive",
            ),
            (
                "capacity_bytes",
                "1000",
                "capacity_bytes = 1000: must be a whole number of physical sectors",
            ),
            (
                "inner_outer_rate_ratio",
                "1.5",
                "inner_outer_rate_ratio = 1.5: must be at most 1",
            ),
            (
                "seek_full_stroke_ms",
                "0.5",
                "seek_full_stroke_ms = 0.5: must be longer",
            ),
            (
                "seek_average_read_ms",
                "3",
                "seek_average_read_ms = 3: no increasing seek curve",
            ),
            (
                "seek_average_write_ms",
                "12",
                "seek_average_write_ms = 12: no increasing seek curve",
            ),
            (
                "cache_bytes",
                "1000",
                "cache_bytes = 1000: must be a multiple of 512",
            ),
            (
                "command_overhead_ms",
                "0",
                "command_overhead_ms = 0: must be a positive",
            ),
            ("readahead_bytes", "100", "readahead_bytes = 100"),
        ] {
            let e = err(&with(field, value));
            assert!(e.contains(expect), "{field} = {value}: {e}");
            assert!(e.starts_with("profile t.toml: "), "{e}");
        }
        for (field, value, expect) in [
            (
                "write_hit_clean",
                "\"merge\"",
                "write_hit_clean = \"merge\": must be \"clear-segment\" or \"keep\"",
            ),
            (
                "write_hit_dirty",
                "\"keep\"",
                "write_hit_dirty = \"keep\": must be \"write-first\", \"merge\", \
                 \"overwrite-unless-writing\" or \"wait-if-writing\"",
            ),
            (
                "destage_unit",
                "\"run\"",
                "destage_unit = \"run\": must be \"track\" or \"segment\"",
            ),
            (
                "rmw_grouping",
                "\"all\"",
                "rmw_grouping = \"all\": must be \"each\" or \"track\"",
            ),
            (
                "rmw_revolutions",
                "0",
                "rmw_revolutions = 0: must be a positive finite number",
            ),
            (
                "write_segment_bytes",
                "1000",
                "write_segment_bytes = 1000: must be a positive multiple of physical_sector_bytes",
            ),
            (
                "write_segment_bytes",
                "134217728",
                "at most cache_bytes (67108864)",
            ),
        ] {
            let e = err(&with(field, value));
            assert!(e.contains(expect), "{field} = {value}: {e}");
        }
        // Read look-ahead may be off.
        Profile::from_toml(&with("readahead_bytes", "0"), "t.toml", "t").unwrap();
        // A negative integer where an unsigned one is wanted, a missing field, an unknown one,
        // a missing source: the toml crate names the key.
        assert!(err(&with("cache_bytes", "-1")).contains("cache_bytes"));
        let missing = GOOD.replace("rpm = { value = 7200, source = \"s\" }\n", "");
        assert!(err(&missing).contains("rpm"), "{}", err(&missing));
        assert!(err(&format!("{GOOD}\nspeed = 3\n")).contains("speed"));
        let no_source = GOOD.replace(
            "rpm = { value = 7200, source = \"s\" }",
            "rpm = { value = 7200 }",
        );
        assert!(err(&no_source).contains("source"), "{}", err(&no_source));
        let empty_source = GOOD.replace(
            "rpm = { value = 7200, source = \"s\" }",
            "rpm = { value = 7200, source = \" \" }",
        );
        assert!(
            err(&empty_source).contains("rpm = { source = \"\" }: every parameter needs a source")
        );
    }

    #[test]
    fn overrides() {
        let p = load("st1000dm003+write_hit_clean=keep,write_hit_dirty=merge").unwrap();
        assert_eq!(
            p.stem,
            "st1000dm003+write_hit_clean=keep,write_hit_dirty=merge"
        );
        assert_eq!(
            (p.write_hit_clean, p.write_hit_dirty),
            (WriteHitClean::Keep, WriteHitDirty::Merge)
        );
        assert_eq!(p.sources["write_hit_clean"], OVERRIDE_SOURCE);
        assert_eq!(p.sources["write_hit_dirty"], OVERRIDE_SOURCE);
        assert_ne!(p.sources["rpm"], OVERRIDE_SOURCE);
        // With the other first-revision settings, equal to the shipped -merge profile but
        // for names and sources.
        let p = load(
            "st1000dm003+write_hit_clean=keep,write_hit_dirty=merge,destage_unit=track,\
             rmw_grouping=each,rmw_revolutions=1",
        )
        .unwrap();
        let m = shipped("st1000dm003-merge");
        assert_eq!(
            Profile {
                stem: m.stem.clone(),
                name: m.name.clone(),
                sources: m.sources.clone(),
                ..p
            },
            m
        );
        // Numbers: an integer and a float.
        let q = load("st1000dm003+write_segment_bytes=4194304,rpm=5400.5").unwrap();
        assert_eq!((q.write_segment_bytes, q.rpm), (4 << 20, 5400.5));
        // Errors name what is wrong.
        for (spec, expect) in [
            ("st1000dm003+speed=3", "no parameter `speed`"),
            (
                "st1000dm003+write_hit_clean",
                "`write_hit_clean` is not PARAM=VALUE",
            ),
            ("st1000dm003+rpm=", "`rpm=` is not PARAM=VALUE"),
            ("st1000dm003+", "`` is not PARAM=VALUE"),
            ("st1000dm003+rpm=1,rpm=2", "`rpm` is set twice"),
            ("+rpm=1", "no profile before `+`"),
            (
                "st1000dm003+write_hit_dirty=both",
                "write_hit_dirty = \"both\": must be \"write-first\", \"merge\"",
            ),
            ("st1000dm003+rpm=fast", "rpm"),
            ("nosuchdrive+rpm=1", "no profile `nosuchdrive`"),
        ] {
            let e = load(spec).unwrap_err().to_string();
            assert!(e.contains(expect), "{spec}: {e}");
        }
    }

    #[test]
    fn resolving_names() {
        let p = resolve("st1000dm003").unwrap();
        assert!(p.ends_with("profiles/st1000dm003.toml"));
        assert_eq!(
            resolve("st1000dm003-4kn.toml")
                .unwrap()
                .file_name()
                .unwrap(),
            "st1000dm003-4kn.toml"
        );
        let e = resolve("nosuchdrive").unwrap_err().to_string();
        assert!(
            e.contains("no profile `nosuchdrive`") && e.contains("st1000dm003-4kn"),
            "{e}"
        );
        assert!(e.contains("or among the built-in profiles"), "{e}");
        let e = resolve("/nonexistent/x.toml").unwrap_err().to_string();
        assert!(e.contains("not a file"), "{e}");
    }

    /// Bug: a program read a profile file of a built-in profile's name from its build
    /// checkout, where the file had since gained a setting the program did not know: every
    /// replay of a run failed ("unknown field `destage_unit`"). A built-in profile's name is
    /// now the built-in profile; a file is read when named by its path.
    #[test]
    fn a_file_of_a_built_in_profiles_name_does_not_shadow_it() {
        let dir = tempfile::tempdir().unwrap();
        let text = BUILT_IN
            .iter()
            .find(|(n, _)| *n == "st1000dm003")
            .unwrap()
            .1
            .replace("value = 7200\n", "value = 5400\n");
        let file = dir.path().join("st1000dm003.toml");
        std::fs::write(&file, &text).unwrap();
        let dirs = || vec![dir.path().to_path_buf()];
        // In a directory the lookup searches, the name still means the built-in profile.
        assert_eq!(load_in("st1000dm003", dirs()).unwrap().rpm, 7200.0);
        assert_eq!(load_in("st1000dm003.toml", dirs()).unwrap().rpm, 7200.0);
        // The file by its path.
        assert_eq!(load_in(file.to_str().unwrap(), dirs()).unwrap().rpm, 5400.0);
        // A name that is not built in is found there.
        std::fs::write(dir.path().join("slow.toml"), &text).unwrap();
        let slow = load_in("slow+rpm=4200", dirs()).unwrap();
        assert_eq!((slow.rpm, slow.stem.as_str()), (4200.0, "slow+rpm=4200"));
    }

    /// Every `profiles/*.toml` is built in, as it is on disk, and loads; a built-in profile is
    /// named as such.
    #[test]
    fn every_shipped_profile_is_built_in() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("profiles");
        let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "toml"))
            .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
            .collect();
        on_disk.sort();
        let names: Vec<&str> = BUILT_IN.iter().map(|(name, _)| *name).collect();
        assert_eq!(names, on_disk);
        for (name, text) in BUILT_IN {
            let file = std::fs::read_to_string(dir.join(format!("{name}.toml"))).unwrap();
            assert_eq!(*text, file, "{name}");
            let p = Profile::from_toml(text, name, name).unwrap();
            assert_eq!(p.stem, *name);
        }
        assert!(names.contains(&"st1000dm003") && names.contains(&"st1000dm003-4kn"));
        assert_eq!(built_in("st1000dm003.toml"), built_in("st1000dm003"));
        assert!(built_in("nosuchdrive").is_none());
    }
}
