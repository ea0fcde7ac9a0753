//! `minfs-bench`. All logic lives in `bencher_workloads::cli`.

use std::io::Write;
use std::process::ExitCode;

/// Cannyls' lump buffers on huge pages, for every target alike (MinfsNvm and Cannyls' own
/// FileNvm): a 1 MiB lump reaches the device as one request, as through `minfs mount`, whose
/// server has its buffers on huge pages too (see [`minfs::HugeAlloc`], docs/BUFFERS.md).
#[global_allocator]
static ALLOC: minfs::HugeAlloc = minfs::HugeAlloc::for_lumps();

fn main() -> ExitCode {
    match bencher_workloads::cli::run() {
        Ok(code) => code,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "minfs-bench: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
