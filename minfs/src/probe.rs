//! Recognising minfs on a device for udev (`minfs probe --export`), as libblkid's probers do
//! for the filesystems it knows: libblkid has no minfs prober, so a udev rule
//! (`64-minfs.rules`) runs this one and gets the same `ID_FS_*` properties, from which it makes
//! the /dev/disk/by-uuid and by-label links that `mount UUID=…`, `LABEL=…`, `findfs` and
//! `lsblk -f` rely on.

use std::path::Path;

use crate::device::{FileDevice, OpenMode};
use crate::format::superblock::Superblock;
use crate::format::FORMAT_VERSION;
use crate::fs::{choose_active, read_slots};

/// The active superblock of the minfs on `path`, read-only (no lock, no `O_EXCL`, nothing
/// written); `None` when `path` cannot be opened or read, or holds no valid minfs slot.
pub fn probe(path: &Path) -> Option<Superblock> {
    let dev = FileDevice::open(path, OpenMode::ReadOnly).ok()?;
    let slots = read_slots(&dev, &path.display().to_string()).ok()?;
    let id = choose_active(&slots)?;
    slots[id.index()].as_ref().ok().map(|s| s.sb.clone())
}

/// The udev properties of a minfs with superblock `sb`, as libblkid's udev builtin names them.
pub fn udev_properties(sb: &Superblock) -> Vec<(&'static str, String)> {
    let uuid = uuid::Uuid::from_bytes(sb.uuid).hyphenated().to_string();
    let mut p = vec![
        ("ID_FS_TYPE", "minfs".to_string()),
        ("ID_FS_USAGE", "filesystem".to_string()),
        ("ID_FS_VERSION", FORMAT_VERSION.to_string()),
        ("ID_FS_UUID", safe(&uuid)),
        ("ID_FS_UUID_ENC", encode(&uuid)),
    ];
    if !sb.label.is_empty() {
        p.push(("ID_FS_LABEL", safe(&sb.label)));
        p.push(("ID_FS_LABEL_ENC", encode(&sb.label)));
    }
    p
}

/// libblkid's `blkid_encode_string`, which udev uses for the `_ENC` properties and the link
/// names: every byte other than ASCII letters and digits, `#+-.:=@_` and whole multi-byte
/// UTF-8 characters becomes `\xNN` (a space `\x20`, `/` `\x2f`, `\` `\x5c`).
pub fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_ascii_alphanumeric() || "#+-.:=@_".contains(c) || !c.is_ascii() {
            out.push(c);
        } else {
            out.push_str(&format!("\\x{:02x}", c as u32));
        }
    }
    out
}

/// libblkid's `blkid_safe_string` (the plain `ID_FS_LABEL`): trailing white space removed,
/// other white space and control characters replaced by `_`.
pub fn safe(s: &str) -> String {
    s.trim_end()
        .chars()
        .map(|c| {
            if c.is_whitespace() || c.is_control() {
                '_'
            } else {
                c
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn udev_encoding_as_blkid() {
        assert_eq!(encode("my disk/1\\x"), "my\\x20disk\\x2f1\\x5cx");
        assert_eq!(encode("a-b_c.d:e=f@g#h+i"), "a-b_c.d:e=f@g#h+i");
        assert_eq!(encode("données"), "données");
        assert_eq!(encode("\"$"), "\\x22\\x24");
        assert_eq!(safe("my disk \t"), "my_disk");
        assert_eq!(safe("a\tb"), "a_b");
    }
}
