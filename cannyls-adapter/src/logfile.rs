//! The log of `minfs-cannyls mount`'s server: the warnings of this crate and of minfs (sectors
//! served from the copy, a journal cut, a file served plainly), one line each with its time,
//! appended to a file (the server runs in the background with no terminal). The file is opened
//! for each line (warnings are rare), so the server's closing of inherited descriptors when it
//! detaches (`minfs::fuse::daemon`) leaves it working. Other crates' lines (fuser's own
//! complaint when the kernel has already ended the mount it unmounts at exit) are left out.

use std::fs::OpenOptions;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

struct FileLog(PathBuf);

impl log::Log for FileLog {
    fn enabled(&self, m: &log::Metadata<'_>) -> bool {
        let ours = ["cannyls_adapter", "minfs"]
            .iter()
            .any(|c| m.target() == *c || m.target().starts_with(&format!("{c}::")));
        ours && m.level() <= log::Level::Warn
    }

    fn log(&self, r: &log::Record<'_>) {
        if !self.enabled(r.metadata()) {
            return;
        }
        let t = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let line = format!(
            "{}.{:03} {} {}: {}\n",
            t.as_secs(),
            t.subsec_millis(),
            r.level(),
            r.target(),
            r.args()
        );
        // One write per line (O_APPEND); a failed log write has nowhere else to go.
        if let Ok(mut f) = OpenOptions::new().create(true).append(true).open(&self.0) {
            let _ = f.write_all(line.as_bytes());
        }
    }

    fn flush(&self) {}
}

/// Sends warnings and errors to `path` (appended; created now when missing, so that a path
/// that cannot be written is refused at once). Times are seconds since the epoch.
pub fn init(path: &Path) -> io::Result<()> {
    OpenOptions::new().create(true).append(true).open(path)?;
    log::set_boxed_logger(Box::new(FileLog(path.to_path_buf())))
        .map_err(|e| io::Error::other(e.to_string()))?;
    log::set_max_level(log::LevelFilter::Warn);
    Ok(())
}
