//! The `minfs-cannyls` command. All logic lives in `cannyls_adapter::cli`.
fn main() -> std::process::ExitCode {
    cannyls_adapter::cli::main()
}
