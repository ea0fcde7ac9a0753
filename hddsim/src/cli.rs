//! The `hddsim` command.
//!
//! ```text
//! hddsim replay --profile PROFILE [--json FILE|-] [--oplog-out FILE] [--dev MAJOR,MINOR] TRACE OPLOG
//! hddsim demerit MODEL REFERENCE      (each a RunReport JSON or an op-log; .gz read too)
//! hddsim validate --profile PROFILE [--json FILE|-]
//! hddsim emulate --profile PROFILE --backing IMAGE [--clock real|virtual] [--log FILE]
//!                [--stats FILE] [--sync-backing] [--foreground] MOUNTPOINT
//! hddsim umount [--lazy] MOUNTPOINT
//! ```
//!
//! Exit codes: 0 success; 1 an input could not be read or used (the message names the file,
//! and the line where there is one) or an output could not be written; 2 usage error.

use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use serde::Serialize;

use crate::demerit::{self, RunDistributions};
use crate::summary::{self, ModelSummary};
use crate::{human_ns, profile, replay, trace, validate};

/// A service-time model of a 512e desktop hard disk, driven by block traces.
#[derive(Debug, Parser)]
#[command(name = "hddsim", version)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The clap definition of `hddsim` (for man pages and completions: `docgen`).
pub fn command() -> clap::Command {
    <Cli as clap::CommandFactory>::command()
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Replay a block trace through the model and charge the op-log's operations.
    Replay {
        /// The drive profile: a file, or a name in hddsim/profiles (`st1000dm003`,
        /// `st1000dm003-merge`, `st1000dm003-4kn`), optionally with overrides:
        /// `PROFILE+PARAM=VALUE[,PARAM=VALUE…]` (e.g. `st1000dm003+write_hit_clean=keep`).
        #[arg(long, value_name = "PROFILE")]
        profile: String,
        /// Write the summary and the modelled latencies as JSON to FILE (`-`: stdout).
        #[arg(long, value_name = "FILE")]
        json: Option<PathBuf>,
        /// Write the op-log with modelled start and end times to FILE.
        #[arg(long, value_name = "FILE")]
        oplog_out: Option<PathBuf>,
        /// The device to model when the trace holds several (MAJOR,MINOR).
        #[arg(long, value_name = "MAJOR,MINOR", value_parser = parse_dev)]
        dev: Option<(u32, u32)>,
        /// The block trace (tracefs text, trace_clock mono; `.gz` read too).
        trace: PathBuf,
        /// The op-log of the run (`.gz` read too).
        oplog: PathBuf,
    },
    /// DiskSim's demerit figure: RMS horizontal distance between the response-time
    /// distributions of two runs, per operation kind.
    Demerit {
        /// The modelled run: a RunReport JSON or an op-log.
        model: PathBuf,
        /// The reference run: a RunReport JSON or an op-log.
        reference: PathBuf,
        /// Write the figures as JSON to FILE (`-`: stdout).
        #[arg(long, value_name = "FILE")]
        json: Option<PathBuf>,
    },
    /// Serve a drive file through FUSE with the model's timing (a loop device over it is an
    /// emulated disk).
    Emulate(crate::emulate::cli::EmulateArgs),
    /// Unmount an emulator; returns once it has exited and released its backing image.
    Umount(crate::emulate::cli::UmountArgs),
    /// Synthetic request streams against the drive's published figures.
    Validate {
        /// The drive profile: a file, or a name in hddsim/profiles (`st1000dm003`,
        /// `st1000dm003-merge`, `st1000dm003-4kn`), optionally with overrides:
        /// `PROFILE+PARAM=VALUE[,PARAM=VALUE…]` (e.g. `st1000dm003+write_hit_clean=keep`).
        #[arg(long, value_name = "PROFILE")]
        profile: String,
        /// Write the figures as JSON to FILE (`-`: stdout).
        #[arg(long, value_name = "FILE")]
        json: Option<PathBuf>,
    },
}

/// Parses `MAJOR,MINOR`.
pub fn parse_dev(s: &str) -> Result<(u32, u32), String> {
    s.split_once(',')
        .and_then(|(a, b)| Some((a.trim().parse().ok()?, b.trim().parse().ok()?)))
        .ok_or_else(|| format!("`{s}` is not MAJOR,MINOR (e.g. 7,0)"))
}

/// Largest input read (a guard against reading a device or /dev/zero).
const MAX_INPUT: u64 = 4 << 30;

/// Reads a text input (gzip-compressed when its name ends in `.gz`), naming it in errors.
pub fn read_text(path: &Path, what: &str) -> Result<String, String> {
    let meta = std::fs::metadata(path)
        .map_err(|e| format!("cannot read the {what} {}: {e}", path.display()))?;
    if !meta.is_file() {
        return Err(format!(
            "the {what} {} is not a regular file",
            path.display()
        ));
    }
    if meta.len() > MAX_INPUT {
        return Err(format!(
            "the {what} {} is larger than 4 GiB",
            path.display()
        ));
    }
    let file =
        File::open(path).map_err(|e| format!("cannot read the {what} {}: {e}", path.display()))?;
    let mut text = String::new();
    let res = if path.extension().is_some_and(|x| x == "gz") {
        flate2::read::GzDecoder::new(file)
            .take(MAX_INPUT)
            .read_to_string(&mut text)
    } else {
        file.take(MAX_INPUT).read_to_string(&mut text)
    };
    res.map_err(|e| format!("cannot read the {what} {}: {e}", path.display()))?;
    Ok(text)
}

/// What `hddsim replay --json` writes.
#[derive(Debug, Serialize)]
struct ReplayJson<'a> {
    model: &'a ModelSummary,
    demerit_note: &'static str,
    ops: Vec<OpJson<'a>>,
}

#[derive(Debug, Serialize)]
struct OpJson<'a> {
    seq: u64,
    kind: &'a str,
    bytes: u64,
    measured_ns: u64,
    modelled_start_ns: u64,
    modelled_ns: u64,
}

fn write_json<T: Serialize>(path: &Path, value: &T, out: &mut dyn Write) -> Result<(), String> {
    if path.as_os_str() == "-" {
        serde_json::to_writer_pretty(&mut *out, value).map_err(|e| e.to_string())?;
        writeln!(out).map_err(|e| e.to_string())
    } else {
        let write = || -> std::io::Result<()> {
            let mut w = BufWriter::new(File::create(path)?);
            serde_json::to_writer_pretty(&mut w, value)?;
            writeln!(w)?;
            w.flush()
        };
        write().map_err(|e| format!("cannot write {}: {e}", path.display()))
    }
}

fn replay_cmd(
    profile_spec: &str,
    trace_path: &Path,
    oplog_path: &Path,
    dev: Option<(u32, u32)>,
    json: Option<&Path>,
    oplog_out: Option<&Path>,
    out: &mut dyn Write,
) -> Result<(), String> {
    let profile = profile::load(profile_spec).map_err(|e| e.to_string())?;
    let text = read_text(trace_path, "trace")?;
    let trace = trace::parse(&text, dev).map_err(|e| format!("{}: {e}", trace_path.display()))?;
    drop(text);
    let ops = replay::parse_oplog(&read_text(oplog_path, "op-log")?)
        .map_err(|e| format!("{}: {e}", oplog_path.display()))?;
    let m = summary::model_run(&profile, &trace, &ops).map_err(|e| {
        if e.line > 0 {
            format!("{}: {e}", trace_path.display())
        } else {
            e.to_string()
        }
    })?;
    let modelled = m.modelled_ops();
    if let Some(path) = oplog_out {
        let write = || -> std::io::Result<()> {
            let mut w = BufWriter::new(File::create(path)?);
            summary::write_modelled_oplog(&mut w, &ops, &modelled)?;
            w.flush()
        };
        write().map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    let stdout_json = json.is_some_and(|p| p.as_os_str() == "-");
    if !stdout_json {
        m.summary.write_text(out).map_err(|e| e.to_string())?;
    }
    if let Some(path) = json {
        let value = ReplayJson {
            model: &m.summary,
            demerit_note: "compare with a reference run: hddsim demerit MODELLED.oplog REFERENCE",
            ops: ops
                .iter()
                .zip(&modelled)
                .map(|(op, &(start, lat))| OpJson {
                    seq: op.seq,
                    kind: &op.kind,
                    bytes: op.bytes,
                    measured_ns: op.end_ns - op.start_ns,
                    modelled_start_ns: start,
                    modelled_ns: lat,
                })
                .collect(),
        };
        write_json(path, &value, out)?;
    }
    Ok(())
}

fn demerit_cmd(
    model: &Path,
    reference: &Path,
    json: Option<&Path>,
    out: &mut dyn Write,
) -> Result<(), String> {
    let load = |p: &Path| {
        RunDistributions::from_text(&read_text(p, "run")?)
            .map_err(|e| format!("{}: {e}", p.display()))
    };
    let (m, r) = (load(model)?, load(reference)?);
    let figures = demerit::compare(&m, &r);
    if figures.is_empty() {
        return Err(format!(
            "{} and {} have no operation kind in common",
            model.display(),
            reference.display()
        ));
    }
    if let Some(path) = json {
        write_json(path, &figures, out)?;
        if path.as_os_str() == "-" {
            return Ok(());
        }
    }
    let mut text = format!(
        "{:<20} {:>12} {:>12} {:>12} {:>9}  distributions\n",
        "kind", "model mean", "ref. mean", "demerit", "% of ref."
    );
    for f in &figures {
        text.push_str(&format!(
            "{:<20} {:>12} {:>12} {:>12} {:>8.1}%  {}\n",
            f.kind,
            human_ns(f.model_mean_ns.round() as u64),
            human_ns(f.reference_mean_ns.round() as u64),
            human_ns(f.demerit_ns.round() as u64),
            f.demerit_percent,
            if f.exact {
                "exact (op-logs)"
            } else {
                "interpolated between percentiles"
            }
        ));
    }
    out.write_all(text.as_bytes()).map_err(|e| e.to_string())
}

fn validate_cmd(
    profile_spec: &str,
    json: Option<&Path>,
    out: &mut dyn Write,
) -> Result<(), String> {
    let p = profile::load(profile_spec).map_err(|e| e.to_string())?;
    let v = validate::validation(&p);
    if let Some(path) = json {
        write_json(path, &v, out)?;
        if path.as_os_str() == "-" {
            return Ok(());
        }
    }
    let text = validate::render(&p, &v.checks) + &validate::render_rule_streams(&v.rule_streams);
    out.write_all(text.as_bytes()).map_err(|e| e.to_string())
}

/// Runs one parsed command, writing to `out`; an error is the message for stderr.
pub fn execute(cli: &Cli, out: &mut dyn Write) -> Result<(), String> {
    let r = match &cli.command {
        Command::Replay {
            profile,
            json,
            oplog_out,
            dev,
            trace,
            oplog,
        } => replay_cmd(
            profile,
            trace,
            oplog,
            *dev,
            json.as_deref(),
            oplog_out.as_deref(),
            out,
        ),
        Command::Demerit {
            model,
            reference,
            json,
        } => demerit_cmd(model, reference, json.as_deref(), out),
        Command::Validate { profile, json } => validate_cmd(profile, json.as_deref(), out),
        Command::Emulate(a) => crate::emulate::cli::emulate(a, out),
        Command::Umount(a) => crate::emulate::cli::umount(a, out),
    };
    r?;
    out.flush().map_err(|e| e.to_string())
}

/// The whole program: parses the arguments, runs, and maps the outcome to the exit code
/// (0 success, 1 failure, 2 usage error).
pub fn run() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match execute(&cli, &mut out) {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            let _ = writeln!(std::io::stderr(), "hddsim: error: {msg}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices() {
        assert_eq!(parse_dev("7,0"), Ok((7, 0)));
        assert_eq!(parse_dev("259, 3"), Ok((259, 3)));
        assert!(parse_dev("7").is_err() && parse_dev("a,b").is_err());
    }
}
