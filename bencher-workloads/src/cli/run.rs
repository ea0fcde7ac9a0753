//! `minfs-bench run --workload FILE --backend SPEC [options]`: run a workload on a Cannyls
//! storage and report the time of every kind of operation.
//!
//! Exit codes: 0 success; 1 the run failed (the backend could not be made ready, Cannyls
//! returned an error such as `StorageFull`, `--verify` found a wrong lump, an output file could
//! not be written); 2 usage error (including a malformed `--backend` spec) or a refused
//! workload (parse error, expansion over `--max-ops`).

use std::fs::File;
use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::{load, WorkloadArgs};
use crate::run::backend::{self, BackendSpec, Setup};
use crate::run::capacity;
use crate::run::content::Content;
use crate::run::oplog::OpLog;
use crate::run::report::{RunInfo, RunReport};
use crate::run::{progress_bar, ExecOptions, Hooks};

/// Arguments of `run`.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// Which workload (`--workload FILE`), and how to expand it.
    #[command(flatten)]
    pub workload: WorkloadArgs,
    /// Where the storage lives (a [`BackendSpec`]).
    #[arg(
        long,
        value_name = "SPEC",
        value_parser = parse_backend,
        help = "Where the storage lives: minfs:TARGET[:FILE], file:PATH, file-prealloc:PATH, \
                existing-file:PATH, raw:BLOCKDEV or memory"
    )]
    pub backend: BackendSpec,
    /// Bytes given to Cannyls (K, M, G, T or KiB, MiB, … = powers of 1024; KB, MB, GB, TB =
    /// powers of 1000; rounded down to the block size).
    /// Default: 1.5 × the workload's peak of live bytes, plus the journal and the header,
    /// rounded up to a MiB.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub capacity: Option<u64>,
    /// The storage's block size, 512 or 4096. Default: the backend's — 4096 on `minfs:`
    /// (`MinfsNvm`'s default: whole physical sectors on 512e disks), 512 elsewhere (Cannyls'
    /// `FileNvm` and `MemoryNvm`).
    #[arg(long, value_name = "BYTES", value_parser = parse_block_size)]
    pub block_size: Option<u32>,
    /// Cannyls' journal_region_ratio (0 < R < 1). Default: 0.01, or more where the workload's
    /// embedded lumps need it.
    #[arg(long, value_name = "R", value_parser = parse_ratio)]
    pub journal_ratio: Option<f64>,
    /// Check every lump read (content, length, presence) and every delete, put and
    /// delete_range result; a wrong lump fails the run with its id.
    #[arg(long)]
    pub verify: bool,
    /// What the lumps hold: `stream`, each lump's own deterministic bytes (checkable by
    /// `--verify`), or `zeros` (for timing runs on an emulated drive whose backing stores
    /// zeros as holes; `--verify` then only checks the bytes are zero).
    #[arg(long, value_enum, default_value = "stream")]
    pub content: Content,
    /// Write the report as JSON to FILE (`-`: to stdout, instead of the text).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write one line per operation to FILE: kind, id, bytes, start and end in
    /// CLOCK_MONOTONIC nanoseconds.
    #[arg(long, value_name = "FILE")]
    pub op_log: Option<PathBuf>,
    /// No progress bar (it is shown only when stderr is a terminal anyway).
    #[arg(long)]
    pub no_progress: bool,
    /// raw: run even on a device that holds a filesystem or partition table (destroys it).
    #[arg(long)]
    pub force: bool,
    /// minfs: give the storage no copy of its header and journal (MinfsNvm makes one by
    /// default: cannyls-adapter's copy module), to measure what the copy costs
    /// (`minfs-bench compare --targets minfs,minfs@nocopy`).
    #[arg(long)]
    pub no_journal_copy: bool,
}

fn parse_backend(s: &str) -> Result<BackendSpec, String> {
    s.parse()
}

/// Parses a size such as `4096`, `64M`, `1GiB`, `500MB` with minfs's units
/// ([`minfs::size`]: K, M, G, T, P, E and KiB, … are powers of 1024; KB, MB, … powers of
/// 1000).
pub fn parse_size(s: &str) -> Result<u64, String> {
    minfs::size::parse_size(s).map_err(|e| e.to_string())
}

fn parse_block_size(s: &str) -> Result<u32, String> {
    match s {
        "512" => Ok(512),
        "4096" => Ok(4096),
        _ => Err(format!("`{s}`: the block size is 512 or 4096")),
    }
}

fn parse_ratio(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(r) if r > 0.0 && r < 1.0 => Ok(r),
        _ => Err(format!("`{s}` is not a number between 0 and 1")),
    }
}

/// Runs `run`.
pub fn run(args: &RunArgs, out: &mut dyn Write, err: &mut dyn Write) -> anyhow::Result<ExitCode> {
    let loaded = match load(&args.workload) {
        Ok(loaded) => loaded,
        Err(e) => {
            e.report(err)?;
            return Ok(e.exit_code());
        }
    };
    let fail = |err: &mut dyn Write, msg: &str| -> anyhow::Result<ExitCode> {
        writeln!(err, "minfs-bench: error: {msg}")?;
        Ok(ExitCode::FAILURE)
    };
    let ops = &loaded.expansion.ops;
    let block_size = args
        .block_size
        .unwrap_or_else(|| args.backend.default_block_size());
    let plan = capacity::plan(ops, block_size);
    // Cannyls works in whole blocks: an explicit capacity is rounded down to the block size
    // (so that a storage file it made is recognized at the same size next time).
    let block = u64::from(block_size);
    let setup = Setup {
        capacity: args.capacity.map(|c| c / block * block),
        planned: plan.capacity,
        journal_bytes: plan.journal_bytes,
        journal_ratio: args.journal_ratio,
        block_size,
        force: args.force,
        journal_copy: !args.no_journal_copy,
    };

    let mut hooks = Hooks::default();
    if let Some(path) = &args.op_log {
        match OpLog::create(path) {
            Ok(log) => hooks.op_log = Some(log),
            Err(e) => {
                return fail(
                    err,
                    &format!("cannot create the op-log {}: {e}", path.display()),
                )
            }
        }
    }
    // Written to a temporary file next to it (created up front, so that a directory that
    // cannot be written fails before the run) and renamed over it once whole: a run that
    // fails or is killed never leaves a partial or empty report under the name.
    let mut json_out = match &args.json {
        Some(path) if path.as_os_str() != "-" => {
            let tmp = partial_path(path);
            match File::create(&tmp) {
                Ok(f) => Some(JsonFile {
                    file: Some(f),
                    path: path.clone(),
                    tmp,
                    keep: false,
                }),
                // Named by the path asked for (the temporary file beside it is a detail).
                Err(e) => return fail(err, &format!("cannot create {}: {e}", path.display())),
            }
        }
        _ => None,
    };

    let mut opened = match backend::open(&args.backend, &setup) {
        Ok(opened) => opened,
        Err(e) => return fail(err, &e.to_string()),
    };
    for note in &opened.notes {
        writeln!(err, "minfs-bench: note: {note}")?;
    }
    if !args.no_progress {
        hooks.progress = progress_bar(ops.len() as u64);
    }
    let outcome = match opened.storage.execute(
        ops,
        ExecOptions {
            verify: args.verify,
            content: args.content,
        },
        &mut hooks,
    ) {
        Ok(outcome) => outcome,
        Err(e) => {
            let mut msg = format!("{}: {e}", args.backend);
            if e.is_storage_full() {
                msg.push_str(&format!(
                    "\n  the Cannyls storage is full: capacity {} bytes, journal ratio {} (the \
                     plan for this workload: {} bytes, journal {} bytes); give a larger \
                     --capacity{}",
                    opened.capacity,
                    opened.journal_ratio,
                    plan.capacity,
                    plan.journal_bytes,
                    if args.journal_ratio.is_some() {
                        " or --journal-ratio"
                    } else {
                        ""
                    }
                ));
            }
            return fail(err, &msg);
        }
    };
    let header = opened.storage.header();
    let info = RunInfo {
        workload: loaded.file.clone(),
        backend: args.backend.to_string(),
        capacity: opened.capacity,
        block_size: u32::from(header.block_size.as_u16()),
        journal_ratio: opened.journal_ratio,
        journal_region_bytes: header.journal_region_size,
        data_region_bytes: header.data_region_size,
        seed: loaded.expansion.seed,
        scale: args.workload.scale,
        sync_every: args.workload.sync_every.map(|n| n.get()),
        verify: args.verify,
        content: args.content,
    };
    drop(opened);
    let report = RunReport::new(info, &outcome);

    let to_stdout = args.json.as_ref().is_some_and(|p| p.as_os_str() == "-");
    if to_stdout {
        serde_json::to_writer_pretty(&mut *out, &report)?;
        writeln!(out)?;
    } else {
        report.write_text(out)?;
    }
    out.flush()?;
    if let Some(json) = json_out.as_mut() {
        let mut file = json.file.take().expect("the JSON file is written once");
        let written = serde_json::to_writer_pretty(&mut file, &report)
            .map_err(io::Error::from)
            .and_then(|()| writeln!(file))
            .and_then(|()| file.flush())
            .and_then(|()| file.sync_all())
            .and_then(|()| std::fs::rename(&json.tmp, &json.path));
        if let Err(e) = written {
            return fail(err, &format!("cannot write {}: {e}", json.path.display()));
        }
        json.keep = true;
    }
    Ok(ExitCode::SUCCESS)
}

/// The `--json` file being written: its temporary file, removed when dropped before the
/// report is in it and renamed.
struct JsonFile {
    file: Option<File>,
    path: PathBuf,
    tmp: PathBuf,
    keep: bool,
}

impl Drop for JsonFile {
    fn drop(&mut self) {
        if !self.keep {
            drop(self.file.take());
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// Where `--json PATH` is written before it is whole: `.NAME.partial` in PATH's directory (a
/// name `minfs-bench report` does not read).
pub fn partial_path(path: &std::path::Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.partial"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("64M"), Ok(64 << 20));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert_eq!(parse_size("2k"), Ok(2048));
        assert_eq!(parse_size("3T"), Ok(3 << 40));
        // Decimal units are powers of 1000, as the report's MB.
        assert_eq!(parse_size("64MB"), Ok(64_000_000));
        assert_eq!(parse_size("1GB"), Ok(1_000_000_000));
        for bad in ["", "M", "0.1K", "-1", "1X", "1 G x"] {
            let e = parse_size(bad).unwrap_err();
            assert!(
                e.contains("KB, MB, GB, TB, PB, EB (powers of 1000)"),
                "{bad}: {e}"
            );
        }
        assert!(parse_size("99999999999T")
            .unwrap_err()
            .contains("more than 2^64 - 1 bytes"));
    }

    #[test]
    fn block_sizes_and_ratios() {
        assert_eq!(parse_block_size("4096"), Ok(4096));
        assert!(parse_block_size("1024").is_err());
        assert_eq!(parse_ratio("0.05"), Ok(0.05));
        assert!(parse_ratio("1").is_err() && parse_ratio("0").is_err());
    }
}
