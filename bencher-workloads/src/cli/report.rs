//! `minfs-bench report DIR`: render a comparison directory (written by
//! `scripts/compare.sh`) into `DIR/report.md` and SVG plots in `DIR/plots/`, and print the
//! path of `report.md`. A comparison made on the emulated drive also gets its
//! `emulation-check.md` written anew (each run against its replay, as `compare` writes it).
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
            if let Some(p) = super::compare::setup::emulated_profile(&args.dir) {
                super::compare::setup::emulation_check(&args.dir, &p);
            }
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
