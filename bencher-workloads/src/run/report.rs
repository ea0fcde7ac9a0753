//! What `minfs-bench run` prints (text) and writes with `--json FILE`.

use std::io::{self, Write};

use serde::{Deserialize, Serialize};

use super::exec::Outcome;
use super::stats::KindReport;

/// The report of one run. All times are nanoseconds; bandwidths are bytes per second.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunReport {
    /// Where and how the run was made (flattened: its fields are top-level keys in the JSON).
    #[serde(flatten)]
    pub info: RunInfo,
    /// Operations run.
    pub ops: u64,
    /// Payload bytes of `New` and `OverWrite` puts.
    pub put_bytes: u64,
    /// Payload bytes of `Embed` puts.
    pub embed_bytes: u64,
    /// Payload bytes read by gets.
    pub get_bytes: u64,
    /// "Total elapsed by commands": the sum of the operation times.
    pub total_elapsed_ns: u64,
    /// The wall time of the run, from before the first operation to after the last
    /// (including preparing data, checks and the op-log).
    pub wall_ns: u64,
    /// (put + embed + get bytes) / total elapsed.
    pub bw_bytes_per_sec: f64,
    /// (put + embed + get bytes) / wall time.
    pub wall_bw_bytes_per_sec: f64,
    /// Per kind: Put by size, Embed by size, Get by size, Delete, DeleteRange, Sync.
    pub kinds: Vec<KindReport>,
    /// Over all operations (`kind` = `overall`).
    pub overall: KindReport,
    /// The peak of the data region's usage, as Cannyls' allocator counts it (allocated −
    /// released bytes, sampled after every operation): what the block size costs in space.
    /// Absent in replays and in reports of older versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_usage_peak_bytes: Option<u64>,
}

/// Where and how a run was made, for [`RunReport::new`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    /// The workload file as given.
    pub workload: String,
    /// The backend spec.
    pub backend: String,
    /// Bytes given to Cannyls.
    pub capacity: u64,
    /// The storage's block size.
    pub block_size: u32,
    /// Cannyls' `journal_region_ratio`.
    pub journal_ratio: f64,
    /// The journal region's bytes.
    pub journal_region_bytes: u64,
    /// The data region's bytes.
    pub data_region_bytes: u64,
    /// The generator's seed.
    pub seed: u64,
    /// `--scale`.
    pub scale: f64,
    /// `--sync-every`.
    pub sync_every: Option<u64>,
    /// `--verify`.
    pub verify: bool,
    /// `--content`: what the lumps held (absent in reports made before the option: the
    /// stream).
    #[serde(default)]
    pub content: crate::run::content::Content,
}

fn per_sec(bytes: u64, ns: u64) -> f64 {
    if ns == 0 {
        0.0
    } else {
        bytes as f64 * 1e9 / ns as f64
    }
}

impl RunReport {
    /// The report of `outcome`.
    pub fn new(info: RunInfo, outcome: &Outcome) -> RunReport {
        let (kinds, overall) = outcome.recorder.reports();
        let moved = outcome.put_bytes + outcome.embed_bytes + outcome.get_bytes;
        let total = outcome.recorder.overall().total_ns();
        RunReport {
            info,
            ops: outcome.ops,
            put_bytes: outcome.put_bytes,
            embed_bytes: outcome.embed_bytes,
            get_bytes: outcome.get_bytes,
            total_elapsed_ns: total,
            wall_ns: outcome.wall_ns,
            bw_bytes_per_sec: per_sec(moved, total),
            wall_bw_bytes_per_sec: per_sec(moved, outcome.wall_ns),
            kinds,
            overall,
            data_usage_peak_bytes: outcome.data_usage_peak_bytes,
        }
    }

    /// The report for people:
    ///
    /// ```text
    /// workload  workloads/seq-256k.wl (seed 0, scale 0.01): 1000 operations
    /// backend   memory: capacity 402653184 bytes, block size 512, journal ratio 0.01
    /// kind = Put(262144), count = 1000, 50% = …, 90% = …, 95% = …, 99% = …, 99.9% = …, max = …, mean = …
    /// [Overall 1000] 50% = …, 90% = …, 95% = …, 99% = …, 99.9% = …, max = …, mean = …
    /// Total elapsed by commands = 1.2s (the sum of the operation times)
    /// Wall time = 1.5s
    /// Bytes = 262144000 (put 262144000, embed 0, get 0)
    /// MB/s = 218.5 over the total elapsed by commands, 174.8 over the wall time (MB = 10^6 bytes)
    /// Data region peak usage = 263168000 bytes (Cannyls' allocator: allocated − released)
    /// ```
    pub fn write_text(&self, out: &mut dyn Write) -> io::Result<()> {
        let mut how = format!("seed {}, scale {}", self.info.seed, self.info.scale);
        if let Some(n) = self.info.sync_every {
            how.push_str(&format!(", sync every {n}"));
        }
        if self.info.verify {
            how.push_str(", verified");
        }
        writeln!(
            out,
            "workload  {} ({how}): {} operations",
            self.info.workload, self.ops
        )?;
        writeln!(
            out,
            "backend   {}: capacity {} bytes, block size {}, journal ratio {} (journal {} bytes, \
             data region {} bytes)",
            self.info.backend,
            self.info.capacity,
            self.info.block_size,
            self.info.journal_ratio,
            self.info.journal_region_bytes,
            self.info.data_region_bytes
        )?;
        for k in &self.kinds {
            writeln!(
                out,
                "kind = {}, count = {}, {}",
                k.kind,
                k.count,
                k.times_text()
            )?;
        }
        writeln!(
            out,
            "[Overall {}] {}",
            self.overall.count,
            self.overall.times_text()
        )?;
        writeln!(
            out,
            "Total elapsed by commands = {} (the sum of the operation times)",
            super::stats::human_ns(self.total_elapsed_ns)
        )?;
        writeln!(out, "Wall time = {}", super::stats::human_ns(self.wall_ns))?;
        writeln!(
            out,
            "Bytes = {} (put {}, embed {}, get {})",
            self.put_bytes + self.embed_bytes + self.get_bytes,
            self.put_bytes,
            self.embed_bytes,
            self.get_bytes
        )?;
        writeln!(
            out,
            "MB/s = {:.1} over the total elapsed by commands, {:.1} over the wall time (MB = \
             10^6 bytes)",
            self.bw_bytes_per_sec / 1e6,
            self.wall_bw_bytes_per_sec / 1e6
        )?;
        if let Some(peak) = self.data_usage_peak_bytes {
            writeln!(
                out,
                "Data region peak usage = {peak} bytes (Cannyls' allocator: allocated − released)"
            )?;
        }
        Ok(())
    }
}
