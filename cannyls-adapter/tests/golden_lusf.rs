//! Golden lusf: the bytes of a small Cannyls storage made by fixed operations, compared with
//! `tests/golden/lusf-0.10.hex`. `src/recovery.rs` reads and repairs Cannyls 0.10's journal
//! format itself, so a Cannyls release that changes the format must fail here (regenerate
//! with `CANNYLS_BLESS=1` only after checking `recovery.rs` against the new format).

use std::sync::Arc;

use cannyls::lump::{LumpData, LumpId};
use cannyls_adapter::recovery::{self, Inspection};
use cannyls_adapter::MinfsNvm;
use minfs::device::MemDevice;
use minfs::{AlignedBuf, Filesystem, FormatOptions};

/// The storage's bytes as hex rows of 32 (rows of zeros left out), the instance UUID zeroed.
fn golden_text() -> (String, Inspection) {
    let dev = Arc::new(MemDevice::new(4 << 20, 512, 512));
    let fs = Filesystem::format(dev, "golden", &FormatOptions::default()).unwrap();
    // Block size 512 (Cannyls' own), pinned, and no copy of the journal: the golden bytes are
    // about Cannyls' format, not about the adapter's default block size or its copy (whose
    // trailer `tests/format_doc.rs` checks).
    let nvm = MinfsNvm::create_in(&fs, "lusf", 1 << 20)
        .unwrap()
        .without_copy()
        .with_block_size(cannyls::block::BlockSize::new(512).unwrap())
        .unwrap();
    let mut storage = nvm.storage_builder().create(nvm).unwrap();
    let embedded = LumpData::new_embedded(b"golden embedded".to_vec()).unwrap();
    storage.put(&LumpId::new(1), &embedded).unwrap();
    let data = storage.allocate_lump_data_with_bytes(&[0x5a; 600]).unwrap();
    storage.put(&LumpId::new(2), &data).unwrap();
    storage.put(&LumpId::new(3), &embedded).unwrap();
    storage.delete(&LumpId::new(3)).unwrap();
    storage
        .delete_range(LumpId::new(10)..LumpId::new(20))
        .unwrap();
    storage.journal_sync().unwrap();
    drop(storage);

    let file = fs.open_file("lusf").unwrap();
    let inspection = recovery::inspect(&file, 0, file.size()).unwrap();
    let mut bytes = AlignedBuf::zeroed(file.size() as usize, 512);
    file.read_at(&mut bytes, 0).unwrap();
    bytes[12..28].fill(0); // the random instance UUID
    let mut out = String::new();
    for (i, row) in bytes.chunks(32).enumerate() {
        if row.iter().any(|&b| b != 0) {
            let hex: String = row.iter().map(|b| format!("{b:02x}")).collect();
            out.push_str(&format!("{:06x}: {hex}\n", i * 32));
        }
    }
    (out, inspection)
}

#[test]
fn golden_lusf_is_unchanged() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/lusf-0.10.hex");
    let (now, inspection) = golden_text();
    if std::env::var_os("CANNYLS_BLESS").is_some() {
        std::fs::write(path, &now).unwrap();
    }
    let want = std::fs::read_to_string(path)
        .expect("golden file missing: run with CANNYLS_BLESS=1 once, review and commit it");
    assert!(
        now == want,
        "Cannyls' on-disk format changed: check src/recovery.rs against it, then bless a new \
         golden file (CANNYLS_BLESS=1)"
    );
    // And recovery.rs reads it: 5 records (2 puts, 1 put + its delete, 1 range delete), then
    // the EndOfRecords.
    match inspection {
        Inspection::Clean {
            layout,
            head: 0,
            records: 5,
            ..
        } => assert_eq!(layout.block_size, 512),
        other => panic!("recovery.rs does not read the golden storage: {other:?}"),
    }
}
