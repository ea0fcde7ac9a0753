//! The `minfs` command. All logic lives in `minfs::cli`.
fn main() -> std::process::ExitCode {
    minfs::cli::main()
}
