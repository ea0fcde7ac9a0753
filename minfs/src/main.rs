//! The `minfs` command. All logic lives in `minfs::cli`.

/// Large buffers on huge pages: `minfs mount`'s request buffers (see [`minfs::HugeAlloc`]).
#[global_allocator]
static ALLOC: minfs::HugeAlloc = minfs::HugeAlloc::new();

fn main() -> std::process::ExitCode {
    minfs::cli::main()
}
