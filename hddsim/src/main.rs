//! `hddsim`. All logic lives in `hddsim::cli`; exit codes are documented there.

use std::process::ExitCode;

fn main() -> ExitCode {
    hddsim::cli::run()
}
