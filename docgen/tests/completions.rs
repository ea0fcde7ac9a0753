//! The shell completions: the bash script loads in bash and completes subcommands and
//! options; the zsh and fish scripts parse, where those shells are installed.

use std::process::Command;

use clap_complete::Shell;
use docgen::PROGRAMS;

fn script(program: &str, shell: Shell) -> Vec<u8> {
    PROGRAMS
        .iter()
        .find(|p| p.name == program)
        .unwrap()
        .completion(shell)
        .contents
}

/// COMPREPLY after sourcing the bash completion of `program` and completing the last word
/// of `words` (the function `complete -p` registered for it).
fn bash_complete(program: &str, words: &[&str]) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(program);
    std::fs::write(&path, script(program, Shell::Bash)).unwrap();
    let words_quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let cword = words.len() - 1;
    let code = format!(
        r#"set -e
source "$1"
spec=$(complete -p {program})
func=$(sed -n 's/.* -F \([^ ]*\) .*/\1/p' <<<"$spec")
[ -n "$func" ] || {{ echo "no completion function: $spec" >&2; exit 3; }}
COMP_WORDS=({words})
COMP_CWORD={cword}
COMP_LINE="${{COMP_WORDS[*]}}"
COMP_POINT=${{#COMP_LINE}}
"$func" {program} "${{COMP_WORDS[COMP_CWORD]}}" "${{COMP_WORDS[COMP_CWORD-1]}}"
printf '%s\n' "${{COMPREPLY[@]}}""#,
        words = words_quoted.join(" ")
    );
    let out = Command::new("bash")
        .args(["--norc", "--noprofile", "-c", &code, "bash"])
        .arg(&path)
        .output()
        .expect("bash runs");
    assert!(
        out.status.success(),
        "bash: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

#[test]
fn bash_completes_subcommands_and_options() {
    assert_eq!(bash_complete("minfs", &["minfs", "mk"]), ["mkfs"]);
    let all = bash_complete("minfs", &["minfs", ""]);
    for sub in ["mkfs", "fsck", "info", "mount", "umount", "completions"] {
        assert!(all.iter().any(|w| w == sub), "{sub} in {all:?}");
    }
    let fsck = bash_complete("minfs", &["minfs", "fsck", "-"]);
    assert!(fsck.iter().any(|w| w == "-y"), "{fsck:?}");
    assert!(!fsck.iter().any(|w| w == "--size"), "{fsck:?}");
    assert_eq!(
        bash_complete("minfs-bench", &["minfs-bench", "ch"]),
        ["check"]
    );
}

/// Regression: clap_complete's bash script completed nothing after a subcommand of a binary
/// with a hyphen in its name (`minfs-bench run --<TAB>`; clap-rs/clap#6421).
#[test]
fn bash_completes_options_of_a_subcommand_of_a_hyphenated_binary() {
    let run = bash_complete("minfs-bench", &["minfs-bench", "run", "--wo"]);
    assert_eq!(run, ["--workload"]);
    let replay = bash_complete("minfs-bench", &["minfs-bench", "hdd-replay", "--pro"]);
    assert_eq!(replay, ["--profile"]);
    let help = bash_complete("minfs-bench", &["minfs-bench", "help", "ch"]);
    assert_eq!(help, ["check"]);
}

/// The completion a user gets from `minfs completions bash` is the installed one.
#[test]
fn minfs_completions_prints_the_installed_script() {
    let mut out = Vec::new();
    let status = bencher_workloads::cli::run_with(
        ["minfs-bench", "completions", "bash"],
        &mut out,
        &mut Vec::new(),
    )
    .unwrap();
    assert_eq!(status, std::process::ExitCode::SUCCESS);
    assert_eq!(out, script("minfs-bench", Shell::Bash));
}

#[test]
fn zsh_and_fish_scripts_parse() {
    for (shell, prog, check) in [
        (Shell::Zsh, "zsh", "-n"),
        (Shell::Fish, "fish", "--no-execute"),
    ] {
        if testutil::which(prog).is_none() {
            // Not installed in CI either: the bash test is the one that must run.
            testutil::print_skip(
                "zsh_and_fish_scripts_parse",
                &format!("{prog} is not installed"),
            );
            continue;
        }
        for program in PROGRAMS {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join(program.name);
            std::fs::write(&path, program.completion(shell).contents).unwrap();
            let out = Command::new(prog).arg(check).arg(&path).output().unwrap();
            assert!(
                out.status.success(),
                "{prog} {check} {}: {}",
                program.name,
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}
