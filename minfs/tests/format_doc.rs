//! The format document and the code agree: the constants table, the field tables, and a golden
//! image of a small filesystem made with fixed UUID and time.

use std::collections::HashMap;
use std::sync::Arc;

use minfs::format::{self, file_table, superblock};
use minfs::{Filesystem, FormatOptions, MemDevice};

fn doc() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/FORMAT.md");
    std::fs::read_to_string(path).expect("docs/FORMAT.md is readable")
}

/// The rows of the first table after `heading`, as cells.
fn table_after(doc: &str, heading: &str) -> Vec<Vec<String>> {
    testutil::markdown_table_after(doc, heading)
}

#[test]
fn constants_table_matches_the_code() {
    let rows = table_after(&doc(), "## Constants");
    let doc: HashMap<String, u64> = rows
        .iter()
        .map(|r| (r[0].clone(), r[1].parse().expect("a number")))
        .collect();
    let code: &[(&str, u64)] = &[
        ("BLOCK_SIZE", format::BLOCK_SIZE),
        ("SLOT_SIZE", format::SLOT_SIZE),
        ("SLOT_A_OFFSET", format::SLOT_OFFSETS[0]),
        ("SLOT_B_OFFSET", format::SLOT_OFFSETS[1]),
        ("DATA_START", format::DATA_START),
        ("FORMAT_VERSION", format::FORMAT_VERSION.into()),
        ("SUPERBLOCK_SIZE", format::SUPERBLOCK_SIZE as u64),
        ("FILE_TABLE_SIZE", format::FILE_TABLE_SIZE as u64),
        ("FILE_TABLE_HEADER_SIZE", file_table::HEADER_SIZE as u64),
        ("RECORD_HEADER_SIZE", file_table::RECORD_HEADER_SIZE as u64),
        ("EXTENT_SIZE", file_table::EXTENT_SIZE as u64),
        ("MAX_FILES", format::MAX_FILES as u64),
        ("MAX_NAME_LEN", format::MAX_NAME_LEN as u64),
        ("LABEL_SIZE", format::LABEL_SIZE as u64),
        ("MIN_SIZE", format::MIN_SIZE),
        ("MAX_SIZE", format::MAX_SIZE),
    ];
    assert_eq!(
        doc.len(),
        code.len(),
        "FORMAT.md lists other constants than the code"
    );
    for (name, value) in code {
        assert_eq!(doc.get(*name), Some(value), "constant {name}");
    }
    assert!(doc_text_has(&format!(
        "`{}`",
        std::str::from_utf8(&format::SUPERBLOCK_MAGIC).unwrap()
    )));
    assert!(doc_text_has(&format!(
        "`{}`",
        std::str::from_utf8(&format::FILE_TABLE_MAGIC).unwrap()
    )));
}

/// The limits table names the values the code enforces; the extent limit is what the largest
/// table that encodes holds (and one more does not encode).
#[test]
fn limits_table_matches_the_code() {
    let rows = table_after(&doc(), "## Limits");
    let doc: HashMap<String, u64> = rows
        .iter()
        .map(|r| (r[0].clone(), r[1].parse().expect("a number")))
        .collect();
    let code: &[(&str, u64)] = &[
        ("files", format::MAX_FILES as u64),
        ("file name", format::MAX_NAME_LEN as u64),
        ("label", format::LABEL_SIZE as u64),
        ("extents in total", file_table::MAX_EXTENTS as u64),
        ("smallest filesystem", format::MIN_SIZE),
        ("largest filesystem", format::MAX_SIZE),
    ];
    assert_eq!(doc.len(), code.len(), "FORMAT.md lists other limits");
    for (name, value) in code {
        assert_eq!(doc.get(*name), Some(value), "limit {name}");
    }
    let table = |extents: usize| {
        let f = format::FileEntry {
            name: "x".into(),
            size: extents as u64 * 4096,
            extents: (0..extents as u64)
                .map(|i| format::Extent {
                    start: 1000 + 2 * i,
                    len: 1,
                })
                .collect(),
        };
        file_table::encode(&[f], 1)
    };
    assert!(table(file_table::MAX_EXTENTS).is_ok());
    assert!(table(file_table::MAX_EXTENTS + 1).is_err());
    assert!(doc_text_has(&format!(
        "(61404 − 12 − 1) / 16 = {}",
        file_table::MAX_EXTENTS
    )));
    assert_eq!(file_table::PAYLOAD_CAPACITY, 61404);
}

fn doc_text_has(s: &str) -> bool {
    doc().contains(s)
}

fn check_fields(heading: &str, layout: &[(&str, std::ops::Range<usize>)]) {
    let rows = table_after(&doc(), heading);
    let doc: Vec<(usize, usize, String)> = rows
        .iter()
        .map(|r| (r[0].parse().unwrap(), r[1].parse().unwrap(), r[2].clone()))
        .collect();
    let code: Vec<(usize, usize, String)> = layout
        .iter()
        .map(|(n, r)| (r.start, r.len(), n.to_string()))
        .collect();
    assert_eq!(
        doc, code,
        "the {heading} table of FORMAT.md differs from the code"
    );
}

#[test]
fn superblock_table_matches_the_code() {
    check_fields("## Superblock", superblock::LAYOUT);
}

#[test]
fn file_table_header_matches_the_code() {
    check_fields("## File table", file_table::LAYOUT);
}

/// A small filesystem with fixed UUID and time: mkfs and five commits, the metadata area (both
/// slots).
fn golden_image() -> Vec<u8> {
    let dev = Arc::new(MemDevice::new(4 << 20, 512, 4096));
    let opts = FormatOptions {
        label: "golden".into(),
        uuid: Some(*b"minfs-golden-v1!"),
        time: Some(1_790_000_000),
        ..Default::default()
    };
    let fs = Filesystem::format(dev.clone(), "golden", &opts).unwrap();
    fs.create("cannyls.lusf", 100_000).unwrap();
    fs.create("b", 3 * 4096).unwrap();
    fs.grow("cannyls.lusf", 200_000).unwrap();
    fs.remove("b").unwrap();
    fs.create("c", 1).unwrap();
    dev.snapshot()[..2 * format::SLOT_SIZE as usize].to_vec()
}

/// The golden image as text: one line per non-zero 32-byte row of the metadata area.
fn golden_text() -> String {
    let bytes = golden_image();
    let mut out = String::new();
    for (i, row) in bytes.chunks(32).enumerate() {
        if row.iter().any(|&b| b != 0) {
            let hex: String = row.iter().map(|b| format!("{b:02x}")).collect();
            out.push_str(&format!("{:06x}: {hex}\n", i * 32));
        }
    }
    out
}

#[test]
fn golden_image_is_unchanged() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/format-v1.hex");
    let now = golden_text();
    if std::env::var_os("MINFS_BLESS").is_some() {
        std::fs::write(path, &now).unwrap();
    }
    let want = std::fs::read_to_string(path)
        .expect("golden file missing: run with MINFS_BLESS=1 once, review and commit it");
    assert!(
        now == want,
        "the on-disk format changed: bump FORMAT_VERSION, update FORMAT.md's version log, and bless a new golden file"
    );
}

/// "A completed commit lives in both slots": the golden image's two slots hold the same state
/// and differ only in the slot's own index, its offset and the superblock CRC (the file table,
/// generation included, is byte-identical).
#[test]
fn golden_image_has_the_last_commit_in_both_slots() {
    let bytes = golden_image();
    let (a, b) = bytes.split_at(format::SLOT_SIZE as usize);
    let allowed = [
        superblock::field::SLOT,
        superblock::field::SLOT_OFFSET,
        superblock::field::CRC,
    ];
    let differing: Vec<usize> = (0..a.len()).filter(|&i| a[i] != b[i]).collect();
    assert!(
        !differing.is_empty(),
        "the slots must carry their own index"
    );
    for i in differing {
        assert!(
            allowed.iter().any(|r| r.contains(&i)),
            "slots A and B differ at byte {i}, outside the slot index, offset and CRC"
        );
    }
    let len = 4 << 20;
    let sa = format::slot::decode(a, minfs::SlotId::A, len).unwrap();
    let sb = format::slot::decode(b, minfs::SlotId::B, len).unwrap();
    assert_eq!(sa.sb.generation, 6, "mkfs (generation 1) and five commits");
    assert_eq!(sb.sb.generation, sa.sb.generation);
    assert_eq!(sa.files, sb.files);
}

/// The device operations of mkfs and of one commit, counted on a [`FaultDevice`], are what
/// FORMAT.md's commit protocol says.
#[test]
fn commit_io_counts_match_the_doc() {
    use minfs::device::fault::{FaultDevice, OpCounts};
    let dev = Arc::new(FaultDevice::new(8 << 20, 512, 4096));
    let delta = |before: OpCounts| {
        let now = dev.counts();
        (
            now.reads - before.reads,
            now.writes - before.writes,
            now.flushes - before.flushes,
        )
    };
    let c0 = dev.counts();
    let fs = Filesystem::format(dev.clone(), "count", &FormatOptions::default()).unwrap();
    let mkfs = delta(c0);
    let mut per_commit = Vec::new();
    for op in 0..3 {
        let c = dev.counts();
        match op {
            0 => drop(fs.create("f", 4096).unwrap()),
            1 => drop(fs.grow("f", 3 * 4096).unwrap()),
            _ => fs.remove("f").unwrap(),
        }
        per_commit.push(delta(c));
    }
    // (reads, writes, flushes); the create also zeroes the new file's first block (one write,
    // FORMAT.md "Stale bytes in a new file").
    assert_eq!(
        per_commit,
        vec![(0, 3, 3), (0, 2, 3), (0, 2, 3)],
        "create, grow, remove"
    );
    // mkfs: the signature probe's reads, the zeroing write, then one commit.
    assert_eq!((mkfs.1, mkfs.2), (3, 3), "mkfs writes and flushes");
    let doc = doc();
    for sentence in [
        "a commit is 2 slot writes and 3 flushes",
        "mkfs is 3 writes and 3 flushes",
        "The cost is one 4 KiB write per new file",
    ] {
        assert!(doc.contains(sentence), "FORMAT.md should say {sentence:?}");
    }
    // A read-write open of a healthy target writes nothing; one slot stale: one write, one flush.
    drop(fs);
    let c = dev.counts();
    drop(Filesystem::open_device(dev.clone(), "count").unwrap());
    assert_eq!(delta(c), (2, 0, 0), "open of a healthy target");
}
