//! Man pages and shell completions of the project's commands, generated from their clap
//! definitions (`clap_mangen`, `clap_complete`). `scripts/install.sh` runs `minfs-docgen`
//! at install time; the tests check that the pages render and the completions load.
//!
//! Every command is one [`Program`] in [`PROGRAMS`]. A new binary needs an entry there (its
//! crate exposing the clap `Command`, its crate a dependency of this one; exit statuses from
//! the crate or [`common_exit_statuses`]) and its name and package in `scripts/install.sh`'s
//! `BINS` and `PACKAGES`. Each program gets a page, `NAME.SECTION`, and one per
//! subcommand, `NAME-SUB.SECTION` (as `git-commit(1)`), with an EXIT STATUS section taken
//! from the program's own exit-status table.
//!
//! The helpers util-linux runs (`mkfs.minfs`, `fsck.minfs`, `mount.minfs`,
//! `umount.fuse.minfs`: [`minfs::cli::HELPERS`], names of the `minfs` binary) get a page each
//! in section 8, and each of their aliases (`mount.fuse.minfs`, `fsck.fuse.minfs`) a page
//! that sources it (`.so`); they get no completions (bash-completion completes mount, fsck and
//! mkfs itself).

#![deny(unsafe_code)]
#![warn(missing_docs)]

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use clap_complete::Shell;
use clap_mangen::roff::{bold, roman, Roff};
use clap_mangen::Man;

/// One command-line program.
#[derive(Debug, Clone, Copy)]
pub struct Program {
    /// The binary's name.
    pub name: &'static str,
    /// The workspace package that builds it.
    pub package: &'static str,
    /// Its manual section: "8" for system administration, "1" for user commands.
    pub section: &'static str,
    /// Its clap definition.
    pub command: fn() -> clap::Command,
    /// Its exit statuses, (status, meaning), for the program (`None`) or a subcommand.
    pub exit_statuses: fn(Option<&str>) -> Vec<(u8, &'static str)>,
}

/// The programs `scripts/install.sh` installs (its `BINS` and `PACKAGES` list them too;
/// `tests/install.rs` checks that they agree).
pub const PROGRAMS: &[Program] = &[
    Program {
        name: "minfs",
        package: "minfs",
        section: "8",
        command: minfs::cli::command,
        exit_statuses: minfs::cli::exit_statuses,
    },
    Program {
        name: "minfs-bench",
        package: "bencher-workloads",
        section: "1",
        command: bencher_workloads::cli::command,
        exit_statuses: bencher_workloads::cli::exit_statuses,
    },
    Program {
        name: "minfs-cannyls",
        package: "cannyls-adapter",
        section: "8",
        command: cannyls_adapter::cli::command,
        exit_statuses: cannyls_adapter::cli::exit_statuses,
    },
    Program {
        name: "hddsim",
        package: "hddsim",
        section: "1",
        command: hddsim::cli::command,
        exit_statuses: common_exit_statuses,
    },
];

/// The exit statuses of a command without special ones: 0 success, 1 failure, 2 usage error
/// (clap's).
pub fn common_exit_statuses(_subcommand: Option<&str>) -> Vec<(u8, &'static str)> {
    vec![(0, "success"), (1, "failure"), (2, "usage error")]
}

/// The shells completions are generated for.
pub const SHELLS: [Shell; 3] = [Shell::Bash, Shell::Zsh, Shell::Fish];

/// One generated file: its path relative to `PREFIX/share` and its contents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct File {
    /// Where it goes under `PREFIX/share`, e.g. `man/man8/minfs-fsck.8`.
    pub path: PathBuf,
    /// Its contents.
    pub contents: Vec<u8>,
}

impl Program {
    /// The program's clap command, built (subcommands know their full names), without
    /// clap's implicit `help` subcommand (it has no page).
    fn built(&self) -> clap::Command {
        let mut cmd = (self.command)().disable_help_subcommand(true);
        cmd.build();
        cmd
    }

    /// The man pages: the program's, then one per visible subcommand.
    pub fn man_pages(&self) -> io::Result<Vec<File>> {
        let cmd = self.built();
        let mut pages = vec![self.page(&cmd, None)?];
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            pages.push(self.page(sub, Some(sub.get_name()))?);
        }
        Ok(pages)
    }

    /// One page: clap_mangen's sections, then EXIT STATUS, SEE ALSO and VERSION.
    ///
    /// clap's after-help text is left out: the only one (`minfs`'s) lists the exit codes,
    /// which EXIT STATUS gives in full.
    fn page(&self, cmd: &clap::Command, sub: Option<&str>) -> io::Result<File> {
        let version = self.built().get_version().unwrap_or_default().to_string();
        render_page(
            cmd,
            cmd.get_display_name().unwrap_or(self.name),
            self.name,
            self.section,
            &version,
            &(self.exit_statuses)(sub),
            &self.see_also(sub),
        )
    }

    /// A subcommand's page points at its program's; a program's at the other programs' (and
    /// `minfs`'s at its helpers').
    fn see_also(&self, sub: Option<&str>) -> Vec<String> {
        match sub {
            Some(_) => vec![format!("{}({})", self.name, self.section)],
            None => {
                let mut refs: Vec<String> = PROGRAMS
                    .iter()
                    .filter(|p| p.name != self.name)
                    .map(|p| format!("{}({})", p.name, p.section))
                    .collect();
                if self.name == "minfs" {
                    refs.extend(minfs::cli::HELPERS.iter().map(|h| format!("{}(8)", h.name)));
                }
                refs
            }
        }
    }

    /// The completion script for `shell`.
    pub fn completion(&self, shell: Shell) -> File {
        let script =
            bencher_workloads::cli::completions::script(shell, &mut (self.command)(), self.name);
        // Where each shell looks for a command's completion (loaded on first use).
        let path = match shell {
            Shell::Bash => format!("bash-completion/completions/{}", self.name),
            Shell::Zsh => format!("zsh/site-functions/_{}", self.name),
            Shell::Fish => format!("fish/vendor_completions.d/{}.fish", self.name),
            other => format!("{other}/{}", self.name),
        };
        File {
            path: PathBuf::from(path),
            contents: script,
        }
    }
}

/// The page `name` of `cmd` (the program `program`'s, one of its subcommands' or a helper's):
/// clap_mangen's sections, then EXIT STATUS (`statuses`), SEE ALSO (`see_also`) and VERSION.
fn render_page(
    cmd: &clap::Command,
    name: &str,
    program: &str,
    section: &str,
    version: &str,
    statuses: &[(u8, &str)],
    see_also: &[String],
) -> io::Result<File> {
    // The section also goes into the SUBCOMMANDS list's references (`minfs-mkfs(8)`).
    let man = Man::new(cmd.clone()).section(section);
    let mut out = Vec::new();
    // `.TH NAME SECTION DATE SOURCE MANUAL`. Written here rather than by clap_mangen,
    // whose roff drops an empty DATE and so shifts SOURCE and MANUAL one place left.
    // No date: the pages are the same whenever they are generated.
    let source = format!("{program} {version}");
    let manual = match section {
        "8" => "System Administration",
        _ => "User Commands",
    };
    Roff::new()
        .control("TH", [name, section, "\"\"", &source, manual])
        .to_writer(&mut out)?;
    man.render_name_section(&mut out)?;
    man.render_synopsis_section(&mut out)?;
    man.render_description_section(&mut out)?;
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(&mut out)?;
    }
    if cmd.get_subcommands().any(|s| !s.is_hide_set()) {
        man.render_subcommands_section(&mut out)?;
    }
    let mut roff = Roff::new();
    roff.control("SH", ["EXIT STATUS"]);
    for (status, meaning) in statuses {
        roff.control("TP", []);
        roff.text([bold(status.to_string())]);
        roff.text([roman(*meaning)]);
    }
    roff.control("SH", ["SEE ALSO"]);
    roff.text([roman(see_also.join(", "))]);
    roff.control("SH", ["VERSION"]);
    roff.text([roman(version)]);
    roff.to_writer(&mut out)?;
    Ok(File {
        path: Path::new("man")
            .join(format!("man{section}"))
            .join(format!("{name}.{section}")),
        contents: out,
    })
}

/// What each helper's page points to: the `minfs` command it is, and util-linux's command
/// that runs it.
fn helper_see_also(name: &str) -> Vec<String> {
    let (minfs_page, runner) = match name.split('.').next() {
        Some("mkfs") => ("minfs-mkfs(8)", "mkfs(8)"),
        Some("fsck") => ("minfs-fsck(8)", "fsck(8)"),
        Some("mount") => ("minfs-mount(8)", "mount(8), mount.fuse(8), fstab(5)"),
        _ => ("minfs-umount(8)", "umount(8)"),
    };
    vec![
        "minfs(8)".to_string(),
        minfs_page.to_string(),
        runner.to_string(),
    ]
}

/// The helpers' pages (section 8): each helper's, and for each alias a page sourcing it.
pub fn helper_pages() -> io::Result<Vec<File>> {
    let version = (PROGRAMS[0].command)()
        .get_version()
        .unwrap_or_default()
        .to_string();
    let mut files = Vec::new();
    for helper in minfs::cli::HELPERS {
        let mut cmd = (helper.command)();
        cmd.build();
        files.push(render_page(
            &cmd,
            helper.name,
            "minfs",
            "8",
            &version,
            &(helper.exit_statuses)(),
            &helper_see_also(helper.name),
        )?);
        for alias in helper.aliases {
            files.push(File {
                path: Path::new("man/man8").join(format!("{alias}.8")),
                contents: format!(".so man8/{}.8\n", helper.name).into_bytes(),
            });
        }
    }
    Ok(files)
}

/// Every man page and completion script of every program, and the helpers' pages.
pub fn all_files() -> io::Result<Vec<File>> {
    let mut files = Vec::new();
    for program in PROGRAMS {
        files.extend(program.man_pages()?);
        files.extend(SHELLS.iter().map(|&shell| program.completion(shell)));
    }
    files.extend(helper_pages()?);
    Ok(files)
}

/// Writes [`all_files`] under `share` (a `PREFIX/share`-like directory), creating
/// directories; returns the paths written.
pub fn write_all(share: &Path) -> io::Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    for file in all_files()? {
        let path = share.join(&file.path);
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir)
                .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", dir.display())))?;
        }
        fs::write(&path, &file.contents)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        written.push(path);
    }
    Ok(written)
}
