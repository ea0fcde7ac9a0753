//! Journal recovery on open and the journal write order (see `src/recovery.rs` and "Write
//! order" in the crate docs), one case each; `tests/crash.rs` checks them at every crash point.

use std::sync::Arc;

use cannyls::lump::{LumpData, LumpId};
use cannyls::storage::StorageBuilder;
use cannyls_adapter::recovery::{self, Inspection, Unreadable};
use cannyls_adapter::{Error, MinfsNvm};
use common::{poke, storage_with_one_lump, FILE, TORN_PUT};
use minfs::device::fault::FaultDevice;
use minfs::{Filesystem, FormatOptions, OpenMode};

mod common;

#[test]
fn torn_journal_tail_is_cut_on_open_and_reported() {
    for block_size in [4096u16, 512] {
        let (img, tail) = storage_with_one_lump(block_size);
        let ring_start = 2 * u64::from(block_size);
        poke(&img.path, ring_start + tail, &TORN_PUT);

        let nvm = MinfsNvm::open(&img.path, FILE).unwrap();
        let report = nvm.recovery().expect("a repair is reported").clone();
        assert_eq!(report.cut.at, tail, "cut where the torn record starts");
        assert_eq!(report.file_offset, ring_start + tail);
        assert_eq!(report.cut.records, 1);
        assert!(matches!(
            report.cut.found,
            Unreadable::Checksum {
                tag: 3,
                stored: 0xdead_beef,
                ..
            }
        ));
        assert!(report.to_string().contains("repaired"), "{report}");
        let mut storage = StorageBuilder::new()
            .open(nvm)
            .expect("opens after the repair");
        let got = storage.get(&LumpId::new(1)).unwrap().expect("lump 1 kept");
        assert_eq!(got.as_bytes(), b"acknowledged");
        drop(storage);

        // Repaired for good: the next open finds a clean journal.
        let nvm = MinfsNvm::open(&img.path, FILE).unwrap();
        assert!(nvm.recovery().is_none());
        common::assert_fsck_clean(&img.path);
    }
}

#[test]
fn unreadable_journal_head_is_refused_with_an_error_that_says_so() {
    let (img, _) = storage_with_one_lump(4096);
    // The record at the head (ring position 0) is garbage: nothing shows where the journal ends.
    poke(&img.path, 2 * 4096, &TORN_PUT);
    let fs = Filesystem::open(&img.path, OpenMode::ReadOnly).unwrap();
    let f = fs.open_file(FILE).unwrap();
    assert!(matches!(
        recovery::inspect(&f, 0, f.size()).unwrap(),
        Inspection::Unrepairable { head: 0, at: 0, .. }
    ));
    drop((f, fs));
    let e = MinfsNvm::open(&img.path, FILE).expect_err("refused");
    assert!(
        matches!(e, Error::JournalUnrepairable { head: 0, at: 0, .. }),
        "{e}"
    );
    assert!(
        e.to_string().contains("cannot be repaired with certainty"),
        "{e}"
    );
    assert_eq!(
        *cannyls::Error::from(e).kind(),
        cannyls::ErrorKind::StorageCorrupted
    );
}

/// Cannyls' journal GC writes (and syncs) a journal header whose head has moved past records
/// it relocated to the tail, while the relocated copies are still in its memory buffer: a
/// crash then loses acknowledged lumps. `MinfsNvm` holds the header write until the ring's
/// next sync. Here the media's durable state after every put is opened.
#[test]
fn gc_header_update_does_not_outrun_the_relocated_records() {
    const DEVICE: u64 = 12 << 20;
    let dev = Arc::new(FaultDevice::new(DEVICE, 512, 4096));
    let fs = Filesystem::format(dev.clone(), "fault", &FormatOptions::default()).unwrap();
    let nvm = MinfsNvm::create_in(&fs, FILE, 8 << 20).unwrap();
    let mut storage = nvm
        .storage_builder()
        .journal_region_ratio(0.01)
        .journal_gc_queue_size(8)
        .create(nvm)
        .unwrap();
    let mut acknowledged = Vec::new();
    let mut pending = Vec::new();
    for id in 1..=160u128 {
        let data = LumpData::new_embedded(common::pattern(id as u64, 300)).unwrap();
        storage.put(&LumpId::new(id), &data).unwrap();
        pending.push(id);
        if id % 16 == 0 {
            // A few lumps deleted (gone or there until the sync), so the GC has garbage too.
            for victim in acknowledged.drain(..4.min(acknowledged.len())) {
                storage.delete(&LumpId::new(victim)).unwrap();
            }
            storage.journal_sync().unwrap();
            acknowledged.append(&mut pending);
        }
        // A crash now: what is durable must hold every acknowledged lump.
        let crashed = Arc::new(FaultDevice::from_bytes(dev.durable_image(), 512, 4096));
        let fs2 = Filesystem::open_device(crashed, "crash").unwrap();
        let nvm = MinfsNvm::from_filesystem(&fs2, FILE).unwrap();
        let mut s = StorageBuilder::new().open(nvm).unwrap();
        for &a in &acknowledged {
            let got = s.get(&LumpId::new(a)).unwrap();
            assert_eq!(
                got.map(|d| d.as_bytes().to_vec()),
                Some(common::pattern(a as u64, 300)),
                "after put {id}: acknowledged lump {a}"
            );
        }
    }
}
