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

#[cfg(test)]
mod tests {
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
        // Short buffers do not panic.
        assert_eq!(probe_bytes(&[0u8; 10]), None);
    }
}
