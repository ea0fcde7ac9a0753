//! The syntax tree of a workload file (see `docs/DSL.md`).
//!
//! [`Display`](std::fmt::Display) prints a tree back as workload text that parses to the
//! same tree (one command per line, canonical spelling, no comments).

use std::fmt;

/// Largest size of `New(n)` / `OverWrite(n)`: Cannyls' lump limit, 0xFFFF × 512 − 2 bytes.
pub const MAX_PUT_SIZE: u32 = 0xFFFF * 512 - 2;

/// Largest size of `Embed(n)`: Cannyls' embedded-lump limit.
pub const MAX_EMBED_SIZE: u32 = 0xFFFF;

/// A parsed workload file: an optional `Seed: S;` and one or more sections.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workload {
    /// The `Seed:` of the file; the generator uses 0 when absent.
    pub seed: Option<u64>,
    /// The sections, in file order (never empty for a parsed file).
    pub sections: Vec<Section>,
}

/// One top-level section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Section {
    /// `Command { c1; c2; … }`: the commands in order.
    Command(Vec<Command>),
    /// `Ordered[N] { <p%> s; … }`: ⌊N·p/100⌋ copies of each item, item after item.
    Ordered {
        /// N.
        count: u64,
        /// The weighted items, in file order.
        items: Vec<Weighted>,
    },
    /// `Unordered[N] { <p%> s; … }`: the same multiset of copies, shuffled.
    Unordered {
        /// N.
        count: u64,
        /// The weighted items, in file order.
        items: Vec<Weighted>,
    },
}

/// `<p%> command;` or `<p%> { c1; c2; … };` inside `Ordered`/`Unordered`.
///
/// A braced item is one unit: its copies are shuffled as wholes, never interleaved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Weighted {
    /// p, 0–100.
    pub percent: u8,
    /// The command(s) of one copy.
    pub body: Vec<Command>,
    /// Whether it was written with braces (`<p%> { … };`). It does not change the meaning
    /// (a braced single command is the same as an unbraced one); kept for printing.
    pub braced: bool,
}

/// One command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// `New(n)`: a new lump of n bytes.
    New(u32),
    /// `OverWrite(n)`: put n bytes under a uniformly chosen live id.
    OverWrite(u32),
    /// `Embed(n)`: a new embedded lump of n bytes.
    Embed(u32),
    /// `Get`: read a live lump chosen as `Get(0, 100)` chooses (cannyls_bencher's meaning).
    Get,
    /// `Get(l, r)`: read a lump chosen by position among the live ones (l ≤ r, both 0–100).
    GetAt(u8, u8),
    /// `Delete`: delete a live lump chosen as `Delete(0, 100)` chooses (cannyls_bencher's meaning).
    Delete,
    /// `Delete(l, r)`: delete a lump chosen by position (l ≤ r, both 0–100).
    DeleteAt(u8, u8),
    /// `DeleteRange(l, r)`: one `delete_range` over a span of positions (l ≤ r, both 0–100).
    DeleteRange(u8, u8),
    /// `Sync`: Cannyls' `journal_sync()`.
    Sync,
    /// `N.times { … }`: the body N times.
    Times {
        /// N.
        count: u64,
        /// The repeated commands.
        body: Vec<Command>,
    },
}

impl fmt::Display for Workload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(seed) = self.seed {
            writeln!(f, "Seed: {seed};")?;
        }
        for section in &self.sections {
            match section {
                Section::Command(commands) => {
                    writeln!(f, "Command {{")?;
                    write_commands(f, commands, 1)?;
                    writeln!(f, "}}")?;
                }
                Section::Ordered { count, items } | Section::Unordered { count, items } => {
                    let name = if matches!(section, Section::Ordered { .. }) {
                        "Ordered"
                    } else {
                        "Unordered"
                    };
                    writeln!(f, "{name}[{count}] {{")?;
                    for item in items {
                        write!(f, "  <{}%> ", item.percent)?;
                        match (item.braced, item.body.as_slice()) {
                            (false, [single]) => {
                                write_command(f, single, 1)?;
                                writeln!(f, ";")?;
                            }
                            (_, body) => {
                                writeln!(f, "{{")?;
                                write_commands(f, body, 2)?;
                                writeln!(f, "  }};")?;
                            }
                        }
                    }
                    writeln!(f, "}}")?;
                }
            }
        }
        Ok(())
    }
}

fn write_commands(f: &mut fmt::Formatter<'_>, commands: &[Command], depth: usize) -> fmt::Result {
    for command in commands {
        write!(f, "{:width$}", "", width = depth * 2)?;
        write_command(f, command, depth)?;
        writeln!(f, ";")?;
    }
    Ok(())
}

fn write_command(f: &mut fmt::Formatter<'_>, command: &Command, depth: usize) -> fmt::Result {
    match command {
        Command::New(n) => write!(f, "New({n})"),
        Command::OverWrite(n) => write!(f, "OverWrite({n})"),
        Command::Embed(n) => write!(f, "Embed({n})"),
        Command::Get => write!(f, "Get"),
        Command::GetAt(l, r) => write!(f, "Get({l}, {r})"),
        Command::Delete => write!(f, "Delete"),
        Command::DeleteAt(l, r) => write!(f, "Delete({l}, {r})"),
        Command::DeleteRange(l, r) => write!(f, "DeleteRange({l}, {r})"),
        Command::Sync => write!(f, "Sync"),
        Command::Times { count, body } => {
            writeln!(f, "{count}.times {{")?;
            write_commands(f, body, depth + 1)?;
            write!(f, "{:width$}}}", "", width = depth * 2)
        }
    }
}
