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
    let script = script(args.shell, &mut command(), "minfs-bench");
    match out.write_all(&script).and_then(|()| out.flush()) {
        // `minfs-bench completions bash | head` ends the output quietly.
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(ExitCode::SUCCESS),
    }
}

/// The completion script of `cmd`, installed as `bin`, for `shell` (clap_complete's, with
/// its bash script repaired for a `bin` with a hyphen).
///
/// clap_complete 4.6's bash script tracks the subcommand typed so far in a variable, and
/// spells `minfs-bench run` there as `minfs__bench__subcmd__run` but in the `case` arm that
/// lists `run`'s options as `minfs__subcmd__bench__subcmd__run`: for a binary with a hyphen
/// in its name no subcommand's options ever complete (clap-rs/clap#6421, open). The arms are
/// respelled the way the variable is.
pub fn script(shell: Shell, cmd: &mut clap::Command, bin: &str) -> Vec<u8> {
    // Generated into memory first: clap_complete panics on a failed write.
    let mut script = Vec::new();
    clap_complete::generate(shell, cmd, bin, &mut script);
    if shell != Shell::Bash || !bin.contains('-') {
        return script;
    }
    let wrong = format!("{}__subcmd__", bin.replace('-', "__subcmd__"));
    let right = format!("{}__subcmd__", bin.replace('-', "__"));
    let text = String::from_utf8_lossy(&script);
    let mut fixed = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let arm = line.trim_start();
        match arm.strip_prefix(wrong.as_str()) {
            Some(rest) if arm.trim_end().ends_with(')') => {
                fixed.push_str(&line[..line.len() - arm.len()]);
                fixed.push_str(&right);
                fixed.push_str(rest);
            }
            _ => fixed.push_str(line),
        }
    }
    fixed.into_bytes()
}

/// The `minfs-bench` command line as clap defines it (for man pages and completions).
pub fn command() -> clap::Command {
    Cli::command()
}

/// The exit statuses of `minfs-bench` and of each of its subcommands (the same but for
/// `compare`'s), as (status, meaning).
pub fn exit_statuses(subcommand: Option<&str>) -> Vec<(u8, &'static str)> {
    if subcommand == Some("compare") {
        return vec![
            (0, "every run succeeded"),
            (1, "a run or step failed (the report marks it)"),
            (
                EXIT_USAGE,
                "usage error, an --out that is not empty, or a refused device",
            ),
            (
                130,
                "interrupted (SIGINT or SIGTERM): what was made is undone and the report of \
                 the rounds done is written",
            ),
        ];
    }
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
