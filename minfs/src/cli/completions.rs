//! `minfs completions SHELL`: a completion script for the shell, on stdout.

use std::process::ExitCode;

use clap_complete::Shell;

/// Arguments of `completions`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The shell to complete for.
    #[arg(value_name = "SHELL")]
    shell: Shell,
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    let mut script = Vec::new();
    clap_complete::generate(a.shell, &mut super::command(), "minfs", &mut script);
    super::out(&script)?;
    Ok(ExitCode::SUCCESS)
}
