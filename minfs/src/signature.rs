//! Recognising what a target already holds, so mkfs does not overwrite it by accident.

use std::io;

use crate::device::BlockDevice;
use crate::format::{SLOT_OFFSETS, SUPERBLOCK_MAGIC};
use crate::sys::AlignedBuf;

/// A recognised on-disk signature.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature {
    /// What it is, e.g. "an ext2/ext3/ext4 filesystem".
    pub kind: &'static str,
    /// Byte offset of the magic number.
    pub offset: u64,
}

/// How many bytes from the start of the target are probed.
pub const PROBE_LEN: u64 = 128 * 1024;

/// Looks for minfs, XFS, ext2/3/4, btrfs, swap, GPT and MBR signatures in the first 128 KiB.
pub fn probe(dev: &dyn BlockDevice) -> io::Result<Option<Signature>> {
    let lss = u64::from(dev.logical_sector_size());
    let len = PROBE_LEN.min(dev.len()) / lss * lss;
    let mut buf = AlignedBuf::zeroed(len as usize, 4096);
    dev.read_at(&mut buf, 0)?;
    Ok(probe_bytes(&buf))
}

/// [`probe`] on bytes already read from the start of a target.
pub fn probe_bytes(b: &[u8]) -> Option<Signature> {
    let at = |off: usize, magic: &[u8]| {
        b.len() >= off + magic.len() && &b[off..off + magic.len()] == magic
    };
    let sig = |kind, offset: usize| {
        Some(Signature {
            kind,
            offset: offset as u64,
        })
    };
    for off in SLOT_OFFSETS {
        if at(off as usize, &SUPERBLOCK_MAGIC) {
            return sig("a minfs filesystem", off as usize);
        }
    }
    // Linux MD RAID superblocks 1.1 (at 0) and 1.2 (at 4 KiB): magic 0xa92b4efc.
    for off in [0usize, 4096] {
        if at(off, &[0xfc, 0x4e, 0x2b, 0xa9]) {
            return sig("a Linux MD RAID member (superblock 1.x)", off);
        }
    }
    // LVM2 physical volume: the label "LABELONE" in one of the first four sectors, "LVM2 001"
    // 24 bytes after it.
    for sector in 0..4usize {
        if at(sector * 512, b"LABELONE") && at(sector * 512 + 24, b"LVM2 001") {
            return sig("an LVM2 physical volume", sector * 512);
        }
    }
    // bcache: its magic 24 bytes into the superblock at 4 KiB.
    if at(
        4096 + 24,
        &[
            0xc6, 0x85, 0x73, 0xf6, 0x4e, 0x1a, 0x45, 0xca, 0x82, 0x65, 0xf5, 0x7f, 0x48, 0xba,
            0x6d, 0x81,
        ],
    ) {
        return sig("a bcache device", 4096 + 24);
    }
    if at(0, b"XFSB") {
        return sig("an XFS filesystem", 0);
    }
    // ext2/3/4: s_magic 0xEF53 at 1024 + 56, with a plausible s_log_block_size (1024 + 24).
    if at(1080, &[0x53, 0xEF]) && b.len() >= 1032 {
        let log_bs = u32::from_le_bytes(b[1048..1052].try_into().expect("4 bytes"));
        if log_bs <= 6 {
            return sig("an ext2/ext3/ext4 filesystem", 1080);
        }
    }
    if at(0x10040, b"_BHRfS_M") {
        return sig("a btrfs filesystem", 0x10040);
    }
    for page in [4096usize, 8192, 16384, 65536] {
        for magic in [&b"SWAPSPACE2"[..], &b"SWAP-SPACE"[..]] {
            if at(page - 10, magic) {
                return sig("swap space", page - 10);
            }
        }
    }
    for off in [512usize, 4096] {
        if at(off, b"EFI PART") {
            return sig("a GPT partition table", off);
        }
    }
    if at(510, &[0x55, 0xAA]) {
        return sig("an MBR partition table or boot sector", 510);
    }
    None
}

/// A signature libblkid finds, as `wipefs --no-act` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Foreign {
    /// libblkid's name for it: `gpt`, `ext4`, `linux_raid_member`, `LVM2_member`, ...
    pub kind: String,
    /// Byte offset of its magic.
    pub offset: u64,
    /// Length of its magic in bytes.
    pub len: u64,
}

/// The signatures libblkid finds on `path`, through util-linux's `wipefs --no-act --json`
/// (libblkid has no minfs prober, so on a minfs target every one it lists is foreign).
/// `Ok(None)` when `wipefs` is not installed; an error when it ran and failed.
pub fn blkid_signatures(path: &std::path::Path) -> Result<Option<Vec<Foreign>>, String> {
    let out = match std::process::Command::new("wipefs")
        .args(["--no-act", "--json", "--output", "OFFSET,LENGTH,TYPE", "--"])
        .arg(path)
        .stdin(std::process::Stdio::null())
        .output()
    {
        Ok(o) => o,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("running wipefs: {e}")),
    };
    if !out.status.success() {
        return Err(format!(
            "wipefs --no-act failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    parse_wipefs_json(&String::from_utf8_lossy(&out.stdout)).map(Some)
}

/// Parses `wipefs --json --output OFFSET,LENGTH,TYPE` (empty output: no signatures).
pub fn parse_wipefs_json(text: &str) -> Result<Vec<Foreign>, String> {
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    let v: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("wipefs printed bad JSON: {e}"))?;
    let Some(list) = v.get("signatures").and_then(|s| s.as_array()) else {
        return Err("wipefs printed JSON without \"signatures\"".into());
    };
    let num = |x: Option<&serde_json::Value>, what: &str| -> Result<u64, String> {
        match x {
            Some(serde_json::Value::Number(n)) => {
                n.as_u64().ok_or_else(|| format!("wipefs: bad {what} {n}"))
            }
            Some(serde_json::Value::String(s)) => {
                let r = match s.strip_prefix("0x") {
                    Some(h) => u64::from_str_radix(h, 16),
                    None => s.parse(),
                };
                r.map_err(|_| format!("wipefs: bad {what} {s:?}"))
            }
            other => Err(format!("wipefs: no {what} ({other:?})")),
        }
    };
    list.iter()
        .map(|e| {
            Ok(Foreign {
                kind: e
                    .get("type")
                    .and_then(|t| t.as_str())
                    .unwrap_or("unknown")
                    .to_string(),
                offset: num(e.get("offset"), "offset")?,
                len: num(e.get("length"), "length")?,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn wipefs_json() {
        let t = r#"{"signatures": [ {"offset":"0x438", "length":2, "type":"ext4"},
            {"offset":"0xffffe00", "length":"8", "type":"gpt"} ]}"#;
        let v = parse_wipefs_json(t).unwrap();
        assert_eq!(v.len(), 2);
        assert_eq!(
            (v[0].offset, v[0].len, v[0].kind.as_str()),
            (0x438, 2, "ext4")
        );
        assert_eq!((v[1].offset, v[1].len), (0xffffe00, 8));
        assert_eq!(parse_wipefs_json("").unwrap(), vec![]);
        assert!(parse_wipefs_json("{").is_err());
        assert!(parse_wipefs_json(r#"{"signatures":[{"type":"x"}]}"#).is_err());
    }

    use super::*;

    fn with(off: usize, magic: &[u8]) -> Vec<u8> {
        let mut b = vec![0u8; PROBE_LEN as usize];
        b[off..off + magic.len()].copy_from_slice(magic);
        b
    }

    #[test]
    fn recognises_each_signature() {
        assert_eq!(probe_bytes(&vec![0u8; PROBE_LEN as usize]), None);
        assert_eq!(
            probe_bytes(&with(0, b"XFSB")).unwrap().kind,
            "an XFS filesystem"
        );
        assert_eq!(
            probe_bytes(&with(1080, &[0x53, 0xEF])).unwrap().offset,
            1080
        );
        assert_eq!(
            probe_bytes(&with(0x10040, b"_BHRfS_M")).unwrap().kind,
            "a btrfs filesystem"
        );
        assert_eq!(
            probe_bytes(&with(4086, b"SWAPSPACE2")).unwrap().kind,
            "swap space"
        );
        assert_eq!(
            probe_bytes(&with(512, b"EFI PART")).unwrap().kind,
            "a GPT partition table"
        );
        assert_eq!(
            probe_bytes(&with(65536, b"MINFS-SB")).unwrap().kind,
            "a minfs filesystem"
        );
        assert!(probe_bytes(&with(510, &[0x55, 0xAA])).is_some());
        assert_eq!(
            probe_bytes(&with(4096, &[0xfc, 0x4e, 0x2b, 0xa9]))
                .unwrap()
                .offset,
            4096
        );
        let mut lvm = with(512, b"LABELONE");
        lvm[536..544].copy_from_slice(b"LVM2 001");
        assert_eq!(probe_bytes(&lvm).unwrap().kind, "an LVM2 physical volume");
        // Short buffers do not panic.
        assert_eq!(probe_bytes(&[0u8; 10]), None);
    }
}
