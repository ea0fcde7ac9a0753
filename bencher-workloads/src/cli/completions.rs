//! `minfs-bench completions SHELL`: a completion script for the shell, on stdout; and what
//! the man pages say beyond the clap definitions (`docgen` renders them).

use std::io::Write;
use std::process::ExitCode;

use clap::{Args, CommandFactory};
use clap_complete::Shell;

use super::{Cli, EXIT_USAGE};

/// Arguments of `completions`.
#[derive(Debug, Clone, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_name = "SHELL")]
    pub shell: Shell,
}

/// Runs `completions`.
pub fn completions(args: &CompletionsArgs, out: &mut dyn Write) -> anyhow::Result<ExitCode> {
    // Generated into memory first: clap_complete panics on a failed write.
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command(), "minfs-bench", &mut script);
    match out.write_all(&script).and_then(|()| out.flush()) {
        // `minfs-bench completions bash | head` ends the output quietly.
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(ExitCode::SUCCESS),
    }
}

/// The `minfs-bench` command line as clap defines it (for man pages and completions).
pub fn command() -> clap::Command {
    Cli::command()
}

/// The exit statuses of `minfs-bench` and of each of its subcommands (they are the same), as
/// (status, meaning).
pub fn exit_statuses(_subcommand: Option<&str>) -> Vec<(u8, &'static str)> {
    vec![
        (0, "success"),
        (
            1,
            "failure (a file cannot be read or written, a backend or a run fails)",
        ),
        (
            EXIT_USAGE,
            "usage error, or a workload that is refused (it does not parse, or expands past \
             --max-ops)",
        ),
    ]
}
