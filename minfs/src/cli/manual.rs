//! What the man pages say beyond the clap definitions (`docgen` renders them): the clap
//! command itself and each subcommand's exit statuses, taken from the constants the
//! subcommands return.

use clap::CommandFactory;

use super::{fsck, scrub, Cli, EXIT_FAILURE, EXIT_USAGE};

/// The `minfs` command line as clap defines it (for man pages and completions).
pub fn command() -> clap::Command {
    Cli::command()
}

/// The exit statuses of `minfs` (`subcommand` `None`) or of `minfs SUBCOMMAND`, as
/// (status, meaning), in increasing order of status.
pub fn exit_statuses(subcommand: Option<&str>) -> Vec<(u8, &'static str)> {
    match subcommand {
        Some("fsck") => vec![
            (fsck::EXIT_CLEAN, "no errors"),
            (
                fsck::EXIT_CORRECTED,
                "errors were found and corrected (-y, or -p/-a)",
            ),
            (
                fsck::EXIT_UNCORRECTED,
                "errors were left uncorrected (-n; with -p/-a: damage not safe to repair \
                 unattended, and nothing was written)",
            ),
            (
                fsck::EXIT_OPERATIONAL,
                "operational error (cannot open the target, not minfs, I/O error)",
            ),
            (fsck::EXIT_USAGE, "usage error"),
        ],
        Some("scrub") => vec![
            (
                scrub::EXIT_CLEAN,
                "clean: metadata clean, every sector read could be read",
            ),
            (
                scrub::EXIT_METADATA,
                "bit: the metadata checks of fsck -n found problems",
            ),
            (
                scrub::EXIT_BAD_SECTORS,
                "bit: unreadable sectors were found (each printed with its file and byte range)",
            ),
            (
                scrub::EXIT_INCOMPLETE,
                "bit: interrupted before the end (resume with --from the offset printed)",
            ),
            (
                scrub::EXIT_OPERATIONAL,
                "operational error (cannot open the target, not minfs, a read failed other than with EIO)",
            ),
            (scrub::EXIT_USAGE, "usage error"),
        ],
        Some(_) => vec![
            (0, "success"),
            (
                EXIT_FAILURE,
                "failure (the message names the target and what is wrong)",
            ),
            (EXIT_USAGE, "usage error"),
        ],
        None => vec![
            (0, "success (fsck: no errors)"),
            (
                EXIT_FAILURE,
                "failure (fsck: errors were found and corrected)",
            ),
            (EXIT_USAGE, "usage error"),
            (
                fsck::EXIT_UNCORRECTED,
                "fsck only: errors left uncorrected (fsck follows e2fsck: see minfs-fsck(8))",
            ),
            (fsck::EXIT_OPERATIONAL, "fsck only: operational error"),
            (fsck::EXIT_USAGE, "fsck only: usage error"),
        ],
    }
}
