//! `minfs-bench`. All logic lives in `bencher_workloads::cli`.

use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    match bencher_workloads::cli::run() {
        Ok(code) => code,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "minfs-bench: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
