//! `minfs-docgen DIR`: writes the man pages and shell completions of the project's commands
//! under DIR as under `PREFIX/share` (`man/man8/minfs.8`, `bash-completion/completions/minfs`,
//! …) and prints each path. Exit codes: 0 success, 1 failure, 2 usage error.

#![deny(unsafe_code)]

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

/// Write the man pages and shell completions of minfs and minfs-bench under DIR, laid out
/// as under PREFIX/share.
#[derive(Debug, Parser)]
#[command(name = "minfs-docgen", version)]
struct Args {
    /// The directory to write into (created if missing).
    #[arg(value_name = "DIR")]
    out: PathBuf,
}

fn main() -> ExitCode {
    let args = Args::parse();
    match docgen::write_all(&args.out) {
        Ok(paths) => {
            for path in paths {
                println!("{}", path.display());
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("minfs-docgen: {e}");
            ExitCode::FAILURE
        }
    }
}
