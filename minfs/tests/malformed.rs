//! Malformed metadata never panics: open returns a `Corrupted`/`NoValidSlot`/`NotMinfs` error or
//! a filesystem whose files are sane. Mutations are also re-sealed with valid checksums, so
//! they reach the geometry and record validation behind the CRCs.

use std::sync::Arc;

use minfs::format::{superblock, BLOCK_SIZE, FILE_TABLE_OFFSET, FILE_TABLE_SIZE, SLOT_SIZE};
use minfs::{Error, Filesystem, FormatOptions, MemDevice};
use proptest::prelude::*;

const LEN: u64 = 8 << 20;

fn base_image() -> Vec<u8> {
    let dev = Arc::new(MemDevice::new(LEN, 512, 4096));
    let fs = Filesystem::format(dev.clone(), "base", &FormatOptions::default()).unwrap();
    fs.create("a", 100_000).unwrap();
    fs.create("b", 5).unwrap();
    fs.grow("a", 300_000).unwrap();
    fs.create("c", 1 << 20).unwrap();
    drop(fs);
    dev.snapshot()
}

/// Recomputes the file table CRC, the superblock's copy of it, and the superblock CRC.
fn reseal(img: &mut [u8], slot: usize) {
    let s = slot * SLOT_SIZE as usize;
    let ft = s + FILE_TABLE_OFFSET;
    let crc = crc32c::crc32c(&img[ft..ft + FILE_TABLE_SIZE - 4]);
    img[ft + FILE_TABLE_SIZE - 4..ft + FILE_TABLE_SIZE].copy_from_slice(&crc.to_le_bytes());
    let r = superblock::field::FILE_TABLE_CRC;
    img[s + r.start..s + r.end].copy_from_slice(&crc.to_le_bytes());
    let crc = crc32c::crc32c(&img[s..s + 4092]);
    img[s + 4092..s + 4096].copy_from_slice(&crc.to_le_bytes());
}

/// Opens the image; panics only if the outcome is not one of the allowed ones.
fn open_checked(img: Vec<u8>) {
    let dev = Arc::new(MemDevice::from_bytes(img, 512, 4096));
    match Filesystem::open_device(dev, "fuzz") {
        Ok(fs) => {
            let info = fs.info();
            let mut ext: Vec<(u64, u64)> = Vec::new();
            for f in &info.files {
                assert_eq!(f.allocated, f.size.div_ceil(BLOCK_SIZE) * BLOCK_SIZE);
                for e in &f.extents {
                    assert!(e.offset >= info.data_start && e.offset + e.length <= info.total_bytes);
                    ext.push((e.offset, e.offset + e.length));
                }
            }
            ext.sort();
            assert!(
                ext.windows(2).all(|w| w[0].1 <= w[1].0),
                "overlap in {:?}",
                info.files
            );
            assert!(info.total_bytes <= LEN);
        }
        Err(Error::Corrupted { .. } | Error::NoValidSlot { .. } | Error::NotMinfs { .. }) => {}
        Err(e) => panic!("unexpected error kind: {e}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_in_both_slots(seed in any::<u64>(), fill in prop::collection::vec(any::<u8>(), 64..2048)) {
        let mut img = base_image();
        for (i, b) in img[..2 * SLOT_SIZE as usize].iter_mut().enumerate() {
            *b = fill[(i + seed as usize) % fill.len()] ^ (i as u8);
        }
        open_checked(img);
    }

    #[test]
    fn resealed_mutations_of_both_slots(
        edits in prop::collection::vec((0usize..2, 0usize..(SLOT_SIZE as usize), any::<u8>()), 1..8),
    ) {
        let mut img = base_image();
        for &(slot, at, v) in &edits {
            // Bias towards the interesting bytes: the superblock's fields and the records.
            let at = if at % 2 == 0 { at % 160 } else { FILE_TABLE_OFFSET + at % 400 };
            img[slot * SLOT_SIZE as usize + at] = v;
        }
        reseal(&mut img, 0);
        reseal(&mut img, 1);
        open_checked(img);
    }

    #[test]
    fn resealed_wide_integer_values(slot in 0usize..2, field in 0usize..superblock::LAYOUT.len(), v in prop_oneof![Just(u64::MAX), Just(0u64), Just(1u64 << 63), any::<u64>()]) {
        let mut img = base_image();
        let (_, r) = &superblock::LAYOUT[field];
        let s = slot * SLOT_SIZE as usize;
        let bytes = v.to_le_bytes();
        for (i, at) in r.clone().enumerate().take(8) {
            img[s + at] = bytes[i % 8];
        }
        reseal(&mut img, slot);
        open_checked(img);
    }
}
