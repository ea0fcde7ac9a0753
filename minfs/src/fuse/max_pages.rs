//! The largest FUSE request: `max_pages` and the kernel's `fs.fuse.max_pages_limit`.
//!
//! The kernel splits a read or write bigger than the connection's `max_pages` pages into
//! requests of at most that many, sent one after the other for a synchronous read: a 1 MiB
//! Cannyls lump read with its trailer (1 MiB + 512 bytes) is then two requests, and on a disk
//! the second piece waits a revolution. A server asks for `max_pages` in its reply to INIT
//! (fuser derives it from `max_write`); since Linux 6.13 the kernel caps the answer at the
//! sysctl `fs.fuse.max_pages_limit` (default 256 pages, 1 MiB; at most 65535), read when a
//! connection is made, i.e. at mount. Older kernels cap it at 256 and have no sysctl.
//!
//! `minfs mount` and `hddsim emulate` ask for [`MAX_REQUEST_BYTES`] (8 MiB: a 4 MiB lump and
//! its trailer, with room) and, as root, raise the sysctl to [`PAGES_WANTED`] before mounting
//! when it is lower, saying so; `--keep-max-pages-limit` leaves it alone. The sysctl is global
//! and stays raised after unmounting (it only allows larger requests; other FUSE servers still
//! get what they ask for).

use std::path::Path;

/// The largest request `minfs mount` and `hddsim emulate` ask for.
pub const MAX_REQUEST_BYTES: u32 = 8 << 20;
/// [`MAX_REQUEST_BYTES`] in 4 KiB pages.
pub const PAGES_WANTED: u32 = MAX_REQUEST_BYTES / 4096;
/// The sysctl `fs.fuse.max_pages_limit`.
pub const LIMIT_PATH: &str = "/proc/sys/fs/fuse/max_pages_limit";

/// What [`ensure_limit`] found and did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LimitOutcome {
    /// The limit was at least `PAGES_WANTED` already.
    Enough(u32),
    /// Raised from `from` to `to`.
    Raised { from: u32, to: u32 },
    /// Lower, and left alone as asked.
    Kept(u32),
    /// Lower, and not raised: not root, or the write failed (the reason).
    CannotRaise { limit: u32, why: String },
    /// No such sysctl (a kernel before 6.13): requests are at most 256 pages.
    NoSysctl,
}

impl LimitOutcome {
    /// A line for the user, or `None` when nothing is worth saying.
    pub fn message(&self) -> Option<String> {
        let mib = |pages: u32| f64::from(pages) * 4096.0 / f64::from(1u32 << 20);
        match self {
            LimitOutcome::Enough(_) => None,
            LimitOutcome::Raised { from, to } => Some(format!(
                "raised fs.fuse.max_pages_limit from {from} to {to} ({LIMIT_PATH}), so a \
                 request of up to {} MiB (a Cannyls lump read with its trailer) is one FUSE \
                 request; it stays raised (--keep-max-pages-limit leaves it alone)",
                mib(*to)
            )),
            LimitOutcome::Kept(l) => Some(format!(
                "fs.fuse.max_pages_limit is {l} ({LIMIT_PATH}), left alone as asked: requests \
                 over {} MiB are split",
                mib(*l)
            )),
            LimitOutcome::CannotRaise { limit, why } => Some(format!(
                "fs.fuse.max_pages_limit is {limit} and could not be raised to \
                 {PAGES_WANTED} ({why}): requests over {} MiB are split (as root: \
                 sysctl fs.fuse.max_pages_limit={PAGES_WANTED})",
                mib(*limit)
            )),
            LimitOutcome::NoSysctl => Some(format!(
                "this kernel has no {LIMIT_PATH} (Linux < 6.13): FUSE requests are split at \
                 1 MiB"
            )),
        }
    }
}

/// Raises `fs.fuse.max_pages_limit` to [`PAGES_WANTED`] when it is lower, unless `keep`;
/// never lowers it. Call before mounting: the kernel reads it when the connection is made.
pub fn ensure_limit(keep: bool) -> LimitOutcome {
    ensure_limit_at(Path::new(LIMIT_PATH), PAGES_WANTED, keep)
}

/// [`ensure_limit`] on the file `path` (tests).
pub fn ensure_limit_at(path: &Path, wanted: u32, keep: bool) -> LimitOutcome {
    let limit = match std::fs::read_to_string(path) {
        Ok(s) => match s.trim().parse::<u32>() {
            Ok(v) => v,
            Err(_) => {
                return LimitOutcome::CannotRaise {
                    limit: 0,
                    why: format!("{} holds {:?}, not a number", path.display(), s.trim()),
                }
            }
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return LimitOutcome::NoSysctl,
        Err(e) => {
            return LimitOutcome::CannotRaise {
                limit: 0,
                why: format!("reading {}: {e}", path.display()),
            }
        }
    };
    if limit >= wanted {
        return LimitOutcome::Enough(limit);
    }
    if keep {
        return LimitOutcome::Kept(limit);
    }
    match std::fs::write(path, format!("{wanted}\n")) {
        Ok(()) => LimitOutcome::Raised {
            from: limit,
            to: wanted,
        },
        Err(e) => LimitOutcome::CannotRaise {
            limit,
            why: if e.kind() == std::io::ErrorKind::PermissionDenied {
                "only root can".into()
            } else {
                format!("writing {}: {e}", path.display())
            },
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raises_a_lower_limit_and_never_lowers_one() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("max_pages_limit");
        std::fs::write(&p, "256\n").unwrap();
        assert_eq!(ensure_limit_at(&p, 2048, true), LimitOutcome::Kept(256));
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "256\n");
        assert_eq!(
            ensure_limit_at(&p, 2048, false),
            LimitOutcome::Raised {
                from: 256,
                to: 2048
            }
        );
        assert_eq!(std::fs::read_to_string(&p).unwrap().trim(), "2048");
        std::fs::write(&p, "65535\n").unwrap();
        assert_eq!(
            ensure_limit_at(&p, 2048, false),
            LimitOutcome::Enough(65535)
        );
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "65535\n");
        assert_eq!(
            ensure_limit_at(&dir.path().join("absent"), 2048, false),
            LimitOutcome::NoSysctl
        );
        std::fs::write(&p, "lots\n").unwrap();
        assert!(matches!(
            ensure_limit_at(&p, 2048, false),
            LimitOutcome::CannotRaise { .. }
        ));
    }
}
