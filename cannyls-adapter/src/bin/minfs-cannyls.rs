//! The `minfs-cannyls` command. All logic lives in `cannyls_adapter::cli`.

/// Cannyls' buffers of 256 KiB and more on huge pages, as every in-process Cannyls client of
/// this project has them (see [`cannyls_adapter::minfs::HugeAlloc`], docs/BUFFERS.md).
#[global_allocator]
static ALLOC: cannyls_adapter::minfs::HugeAlloc = cannyls_adapter::minfs::HugeAlloc::for_lumps();

fn main() -> std::process::ExitCode {
    cannyls_adapter::cli::main()
}
