//! `minfs-bench hdd-replay --profile PROFILE TRACE OPLOG [--run RUN.json] [--json OUT|-]
//! [--oplog-out FILE] [--dev MAJOR,MINOR]`: replay a block trace through the HDD model
//! ([`crate::hdd`]) and report the modelled latencies of the op-log's operations.
//!
//! Exit codes: 0 success; 1 an input could not be read or used (profile, trace, op-log, run
//! report — the message names the file, and the line where there is one) or an output could
//! not be written; 2 usage error.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use crate::hdd::{self, profile, replay, trace};
use crate::run::report::RunReport;

/// Arguments of `hdd-replay`.
#[derive(Debug, Clone, Args)]
pub struct HddReplayArgs {
    /// The drive profile: a file, or a name in hddsim/profiles (`st1000dm003`,
    /// `st1000dm003-merge`, `st1000dm003-4kn`), optionally with overrides:
    /// `PROFILE+PARAM=VALUE[,PARAM=VALUE…]` (e.g. `st1000dm003+write_hit_clean=keep`).
    #[arg(long, value_name = "PROFILE")]
    pub profile: String,
    /// The block trace (tracefs `trace` text with block_rq_issue/block_rq_complete, trace_clock
    /// mono).
    pub trace: PathBuf,
    /// The op-log of the run (`minfs-bench run --op-log`).
    pub oplog: PathBuf,
    /// The run's JSON report (`minfs-bench run --json`): its workload and storage fields are
    /// copied into the report.
    #[arg(long, value_name = "RUN.json")]
    pub run: Option<PathBuf>,
    /// Write the report as JSON to FILE (`-`: to stdout, instead of the text).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write the op-log with modelled start and end times to FILE.
    #[arg(long, value_name = "FILE")]
    pub oplog_out: Option<PathBuf>,
    /// The device to model when the trace holds several (MAJOR,MINOR).
    #[arg(long, value_name = "MAJOR,MINOR", value_parser = parse_dev)]
    pub dev: Option<(u32, u32)>,
}

use hddsim::cli::{parse_dev, read_text};

/// Runs `hdd-replay`.
pub fn hdd_replay(
    args: &HddReplayArgs,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<ExitCode> {
    match replay_files(args, out) {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(msg) => {
            writeln!(err, "minfs-bench: error: {msg}")?;
            Ok(ExitCode::FAILURE)
        }
    }
}

fn replay_files(args: &HddReplayArgs, out: &mut dyn Write) -> Result<(), String> {
    let profile = profile::load(&args.profile).map_err(|e| e.to_string())?;
    let trace_text = read_text(&args.trace, "trace")?;
    let trace = trace::parse(&trace_text, args.dev)
        .map_err(|e| format!("{}: {e}", args.trace.display()))?;
    drop(trace_text);
    let oplog_text = read_text(&args.oplog, "op-log")?;
    let ops =
        replay::parse_oplog(&oplog_text).map_err(|e| format!("{}: {e}", args.oplog.display()))?;
    let run: Option<RunReport> = match &args.run {
        Some(path) => {
            let text = read_text(path, "run report")?;
            Some(serde_json::from_str(&text).map_err(|e| {
                format!("{}: not a minfs-bench run JSON report: {e}", path.display())
            })?)
        }
        None => None,
    };
    let trace_label = args.trace.display().to_string();
    let oplog_label = args.oplog.display().to_string();
    let output = hdd::model_run(&hdd::Inputs {
        profile: &profile,
        trace: &trace,
        ops: &ops,
        run: run.as_ref(),
        trace_label: &trace_label,
        oplog_label: &oplog_label,
    })
    .map_err(|e| {
        if e.line > 0 {
            format!("{}: {e}", args.trace.display())
        } else {
            e.to_string()
        }
    })?;

    if let Some(path) = &args.oplog_out {
        let write = || -> std::io::Result<()> {
            let mut w = BufWriter::new(File::create(path)?);
            hdd::write_modelled_oplog(&mut w, &ops, &output.modelled_ops)?;
            w.flush()
        };
        write().map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    let report = &output.report;
    let to_stdout = args.json.as_ref().is_some_and(|p| p.as_os_str() == "-");
    if to_stdout {
        serde_json::to_writer_pretty(&mut *out, report).map_err(|e| e.to_string())?;
        writeln!(out).map_err(|e| e.to_string())?;
    } else {
        report.write_text(out).map_err(|e| e.to_string())?;
        if let Some(path) = &args.json {
            let write = || -> std::io::Result<()> {
                let mut w = BufWriter::new(File::create(path)?);
                serde_json::to_writer_pretty(&mut w, report)?;
                writeln!(w)?;
                w.flush()
            };
            write().map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        }
    }
    out.flush().map_err(|e| e.to_string())?;
    Ok(())
}
