//! `minfs-bench report DIR`: render a comparison directory (written by
//! `scripts/compare.sh`) into `DIR/report.md` and SVG plots in `DIR/plots/`, and print the
//! path of `report.md`.
//!
//! Exit codes: 0 success; 1 the directory could not be read or rendered (no `compare.json`,
//! a JSON file or op-log that does not parse, a file that cannot be read or written — the
//! message names the file); 2 usage error.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use crate::compare;

/// Arguments of `report`.
#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    /// The comparison directory (holding compare.json and runs/).
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
}

/// Runs `report`.
pub fn report(
    args: &ReportArgs,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<ExitCode> {
    match compare::render_dir(&args.dir) {
        Ok(written) => {
            writeln!(out, "{}", written.report.display())?;
            out.flush()?;
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            writeln!(err, "minfs-bench: error: {e}")?;
            Ok(ExitCode::FAILURE)
        }
    }
}
