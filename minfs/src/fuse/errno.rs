//! The one mapping from [`crate::Error`] to the errno a FUSE reply carries.

use libc::c_int;

use crate::Error;

/// The errno for `e`, as an application sees it from the syscall that failed.
pub fn errno(e: &Error) -> c_int {
    match e {
        Error::FileNotFound { .. } => libc::ENOENT,
        Error::FileExists { .. } => libc::EEXIST,
        Error::InvalidName { name, .. } if name.len() > crate::format::MAX_NAME_LEN => {
            libc::ENAMETOOLONG
        }
        Error::InvalidName { .. } => libc::EINVAL,
        Error::NoSpace { .. } | Error::TooManyFiles { .. } | Error::FileTableFull { .. } => {
            libc::ENOSPC
        }
        Error::FileBusy { .. } | Error::Locked { .. } | Error::Busy { .. } => libc::EBUSY,
        Error::Shrink { .. } => libc::EPERM,
        Error::ReadOnly { .. } => libc::EROFS,
        Error::Unaligned { .. }
        | Error::OutOfRange { .. }
        | Error::InvalidArgument { .. }
        | Error::BadSize { .. }
        | Error::NotATarget { .. }
        | Error::DirectIoUnsupported { .. } => libc::EINVAL,
        Error::TooSmall { .. } => libc::ENOSPC,
        Error::ExistingSignature { .. } | Error::UnknownData { .. } => libc::EEXIST,
        // The device's own errno where it is one an application can act on.
        Error::Io { source, .. } => match source.raw_os_error() {
            Some(code @ (libc::ENOSPC | libc::EDQUOT | libc::EROFS)) => code,
            _ => libc::EIO,
        },
        Error::Poisoned { .. }
        | Error::NotMinfs { .. }
        | Error::Corrupted { .. }
        | Error::NoValidSlot { .. }
        | Error::Fallocate { .. }
        | Error::Wipe { .. } => libc::EIO,
    }
}

/// Whether `e`, from an operation that writes (data or metadata), leaves the filesystem in
/// an unknown state: after it the server refuses everything with `EIO`, as the library's
/// handles do (no retried fsync can report success for data already lost).
pub fn poisons(e: &Error) -> bool {
    matches!(e, Error::Io { .. } | Error::Poisoned { .. })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mapping() {
        let t = || "t".to_string();
        let cases: Vec<(Error, c_int)> = vec![
            (
                Error::FileNotFound {
                    target: t(),
                    name: "a".into(),
                },
                libc::ENOENT,
            ),
            (
                Error::FileBusy {
                    target: t(),
                    name: "a".into(),
                },
                libc::EBUSY,
            ),
            (
                Error::InvalidName {
                    target: t(),
                    name: "x".repeat(65),
                    reason: "too long",
                },
                libc::ENAMETOOLONG,
            ),
            (
                Error::InvalidName {
                    target: t(),
                    name: ".".into(),
                    reason: "reserved",
                },
                libc::EINVAL,
            ),
            (
                Error::NoSpace {
                    target: t(),
                    name: "a".into(),
                    needed_blocks: 2,
                    free_blocks: 1,
                },
                libc::ENOSPC,
            ),
            (Error::ReadOnly { target: t() }, libc::EROFS),
            (Error::Poisoned { target: t() }, libc::EIO),
            (
                Error::Io {
                    target: t(),
                    context: "c".into(),
                    source: std::io::Error::from_raw_os_error(libc::ENOSPC),
                },
                libc::ENOSPC,
            ),
            (
                Error::Io {
                    target: t(),
                    context: "c".into(),
                    source: std::io::Error::from_raw_os_error(libc::EBADMSG),
                },
                libc::EIO,
            ),
        ];
        for (e, want) in cases {
            assert_eq!(errno(&e), want, "{e}");
        }
        assert!(poisons(&Error::Poisoned { target: t() }));
        assert!(!poisons(&Error::ReadOnly { target: t() }));
    }
}
