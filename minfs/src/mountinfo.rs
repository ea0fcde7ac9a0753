//! The mount table (`/proc/self/mountinfo`): used by the FUSE mount code and to name the
//! minfs mount that holds a target's lock.

use std::io;
use std::path::PathBuf;

/// The filesystem type of a minfs FUSE mount in the mount table.
pub(crate) const MINFS_FSTYPE: &str = "fuse.minfs";

/// One line of `/proc/self/mountinfo`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountEntry {
    /// Where it is mounted.
    pub mountpoint: PathBuf,
    /// `fuse.minfs` for a minfs mount.
    pub fstype: String,
    /// The mount source: for minfs, the target's canonical path.
    pub source: String,
    /// The `st_dev` of files on it, `(major, minor)`; for a FUSE mount the minor is the
    /// FUSE connection's number (`/sys/fs/fuse/connections/MINOR`).
    pub dev: (u32, u32),
}

/// Undoes mountinfo's octal escapes (`\040` for a space, `\011`, `\012`, `\134`).
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let octal = i + 3 < b.len()
            && b[i + 1] <= b'3'
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c));
        if b[i] == b'\\' && octal {
            let v = (b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0');
            out.push(v);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Parses mountinfo text.
pub fn parse_mountinfo(text: &str) -> Vec<MountEntry> {
    let mut out = Vec::new();
    for line in text.lines() {
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let left: Vec<&str> = left.split(' ').collect();
        let right: Vec<&str> = right.split(' ').collect();
        if left.len() < 5 || right.len() < 2 {
            continue;
        }
        let dev = left[2]
            .split_once(':')
            .and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)))
            .unwrap_or((0, 0));
        out.push(MountEntry {
            dev,
            mountpoint: PathBuf::from(unescape(left[4])),
            fstype: unescape(right[0]),
            source: unescape(right[1]),
        });
    }
    out
}

/// The mounts this process sees.
pub fn mounts() -> io::Result<Vec<MountEntry>> {
    Ok(parse_mountinfo(&std::fs::read_to_string(
        "/proc/self/mountinfo",
    )?))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn mountinfo_lines() {
        let text = "22 1 0:21 / /proc rw,nosuid - proc proc rw\n\
                    90 30 0:50 / /var/tmp/m\\040x rw,nosuid,nodev,relatime - fuse.minfs /var/tmp/a\\040b.img rw,user_id=0\n\
                    garbage\n";
        let m = parse_mountinfo(text);
        assert_eq!(m.len(), 2);
        assert_eq!(m[1].mountpoint, Path::new("/var/tmp/m x"));
        assert_eq!(m[1].fstype, "fuse.minfs");
        assert_eq!(m[1].source, "/var/tmp/a b.img");
        assert_eq!(m[1].dev, (0, 50));
        assert_eq!(unescape("a\\134b\\0"), "a\\b\\0");
    }
}
