//! Naming the lumps an unreadable sector hits: Cannyls on minfs over the fault-injecting
//! device, lumps put (data-region and embedded), a latent sector error injected under one
//! lump's bytes — found by searching the device for that lump's own bytes, not from the map
//! under test — and the scrub's range mapped to exactly that lump; one in the journal ring
//! mapped to the journal and to the embedded lump there; a rewrite clears it. Then the same
//! through `minfs-cannyls scrub` on an image (clean: exit 0, JSON) and its bad input.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use assert_cmd::cargo::CommandCargoExt;
use cannyls::lump::{LumpData, LumpId};
use cannyls::storage::StorageBuilder;
use cannyls_adapter::lumps::{LumpMap, Region};
use cannyls_adapter::MinfsNvm;
use minfs::device::FaultDevice;
use minfs::scrub::{self, Options, Owner};
use minfs::{BlockDevice, Filesystem, FormatOptions};

/// A byte pattern unique to lump `n` (its id in every 8 bytes, salted).
fn bytes_of(n: u64, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| ((n.wrapping_mul(0x9E37_79B9) >> ((i % 8) * 8)) as u8) ^ (i / 8) as u8)
        .collect()
}

/// Where `needle` lies on the device (its first occurrence).
fn find(dev: &FaultDevice, needle: &[u8]) -> u64 {
    let img = dev.volatile_image();
    img.windows(needle.len())
        .position(|w| w == needle)
        .expect("the lump's bytes are on the device") as u64
}

/// `minfs scrub --file lusf` of `dev`, run to its end.
fn scrub_lusf(dev: &FaultDevice) -> scrub::Report {
    scrub::scrub_device(
        dev,
        "fault",
        &Options {
            file: Some("lusf".into()),
            ..Options::default()
        },
        &AtomicBool::new(false),
        &mut |_| {},
    )
    .unwrap()
}

#[test]
fn a_bad_sector_under_a_lump_is_named_with_that_lump() {
    let dev = Arc::new(FaultDevice::new(64 << 20, 512, 4096));
    let fs = Filesystem::format(
        dev.clone() as Arc<dyn BlockDevice>,
        "fault",
        &FormatOptions::default(),
    )
    .unwrap();
    // Another file first, so that the storage's file does not start at the data area.
    fs.create("other", 1 << 20).unwrap();
    let nvm = MinfsNvm::create_in(&fs, "lusf", 32 << 20).unwrap();
    let mut storage = nvm.create_storage().unwrap();
    for n in 1..=20u64 {
        let data = storage
            .allocate_lump_data_with_bytes(&bytes_of(n, 40_000))
            .unwrap();
        storage.put(&LumpId::new(u128::from(n)), &data).unwrap();
    }
    // Two embedded lumps (in the journal), and one deleted lump.
    for n in [100u64, 101] {
        let data = LumpData::new_embedded(bytes_of(n, 200)).unwrap();
        storage.put(&LumpId::new(u128::from(n)), &data).unwrap();
    }
    storage.delete(&LumpId::new(7)).unwrap();
    storage.journal_sync().unwrap();
    drop(storage);

    let file = fs.open_file("lusf").unwrap();
    let map = LumpMap::read(&file, 0, file.size()).unwrap().unwrap();
    assert_eq!(map.lumps.len(), 21, "20 put, 2 embedded, 1 deleted");
    assert!(!map.lumps.contains_key(&7));
    let extents = fs.stat("lusf").unwrap().extents;
    let file_offset_of = |device: u64| -> u64 {
        let mut fo = 0;
        for e in &extents {
            if (e.offset..e.offset + e.length).contains(&device) {
                return fo + device - e.offset;
            }
            fo += e.length;
        }
        panic!("{device} is not in the file");
    };

    // Every lump's place is where its bytes are (found by content).
    for n in (1..=20u64).filter(|&n| n != 7) {
        let start = file_offset_of(find(&dev, &bytes_of(n, 40_000)));
        assert_eq!(
            map.lumps[&u128::from(n)],
            cannyls_adapter::lumps::Place::Data { start, len: 40_960 },
            "lump {n}"
        );
    }
    for n in [100u64, 101] {
        let start = file_offset_of(find(&dev, &bytes_of(n, 200)));
        assert_eq!(
            map.lumps[&u128::from(n)],
            cannyls_adapter::lumps::Place::Journal { start, len: 200 },
            "lump {n}"
        );
    }
    // Lump 13's bytes, found by content; a sector 5000 bytes into them made unreadable.
    let at = find(&dev, &bytes_of(13, 40_000)) + 5000;
    let sector = at / 512 * 512;
    dev.make_unreadable(sector, 512);
    // The embedded lump 101's bytes: in the journal ring.
    let emb = find(&dev, &bytes_of(101, 200));
    dev.make_unreadable(emb / 512 * 512, 512);

    let r = scrub_lusf(&dev);
    assert_eq!(r.bad.len(), 2, "{:?}", r.bad);
    let named: Vec<(Vec<Region>, Vec<LumpId>)> = r
        .bad
        .iter()
        .map(|b| {
            let Owner::File {
                name, file_offset, ..
            } = &b.owner
            else {
                panic!("{b}")
            };
            assert_eq!(name, "lusf");
            assert_eq!(*file_offset, file_offset_of(b.device_offset));
            (
                map.regions(*file_offset, b.length),
                map.lumps_in(*file_offset, b.length),
            )
        })
        .collect();
    let journal = named
        .iter()
        .find(|n| n.0 == vec![Region::Journal])
        .expect("one in the journal");
    // The sector holds lump 101's bytes (and maybe 100's, its neighbour record).
    assert!(journal.1.contains(&LumpId::new(101)), "{journal:?}");
    assert!(journal.1.iter().all(|l| [100, 101].contains(&l.as_u128())));
    let data = named
        .iter()
        .find(|n| n.0 == vec![Region::Data])
        .expect("one in the data region");
    assert_eq!(data.1, vec![LumpId::new(13)], "exactly the lump under it");

    // The storage header and the region past the data are named too.
    assert_eq!(map.regions(0, 512), vec![Region::StorageHeader]);
    let l = map.layout;
    assert_eq!(
        map.regions(l.journal_start, 512),
        vec![Region::JournalHeader]
    );
    assert!(map.lumps_in(0, 4096).is_empty());

    // An unreadable journal sector no longer keeps the storage from opening: the journal walk
    // on open reads it, serves it from the copy of the journal and rewrites it in place.
    let js = emb / 512 * 512;
    let nvm =
        MinfsNvm::from_filesystem(&fs, "lusf").expect("opens over an unreadable journal sector");
    let rewritten = &nvm.opened().unwrap().rewritten;
    assert!(!rewritten.is_empty(), "served from the copy");
    drop(nvm);
    assert!(
        !dev.unreadable_sectors().contains(&js),
        "the journal sector was rewritten from the copy"
    );
    // Cannyls rewrites lump 13 (what an operator's repair does: delete, sync, put the bytes
    // from a replica). The new copy lies elsewhere: the bad sector is now in blocks Cannyls
    // holds free, named with no lump, until a later put writes them (which clears it).
    let nvm = MinfsNvm::from_filesystem(&fs, "lusf").unwrap();
    let mut storage = StorageBuilder::new().open(nvm).unwrap();
    storage.delete(&LumpId::new(13)).unwrap();
    storage.journal_sync().unwrap();
    let data = storage
        .allocate_lump_data_with_bytes(&bytes_of(13, 40_000))
        .unwrap();
    storage.put(&LumpId::new(13), &data).unwrap();
    storage.journal_sync().unwrap();
    assert_eq!(
        storage.get(&LumpId::new(13)).unwrap().unwrap().as_bytes(),
        &bytes_of(13, 40_000)[..]
    );
    drop(storage);
    let again = scrub_lusf(&dev);
    let map = LumpMap::read(&file, 0, file.size()).unwrap().unwrap();
    assert_eq!(map.lumps.len(), 21);
    for b in &again.bad {
        let fo = file_offset_of(b.device_offset);
        assert_eq!(map.regions(fo, b.length), vec![Region::Data]);
        assert!(map.lumps_in(fo, b.length).is_empty(), "{b}");
    }
    // Writing those blocks (the next put there would) clears them: the scrub is clean.
    for b in &again.bad {
        dev.write_at(
            &minfs::AlignedBuf::zeroed(b.length as usize, 4096),
            b.device_offset,
        )
        .unwrap();
    }
    let clean = scrub_lusf(&dev);
    assert!(clean.bad.is_empty());
}

#[test]
fn cli_scrub_of_a_clean_storage_and_bad_input() {
    let dir = tempfile::Builder::new().tempdir_in("/var/tmp").unwrap();
    let img = dir.path().join("c.img");
    minfs::mkfs::mkfs(
        &img,
        &FormatOptions {
            size: Some(64 << 20),
            ..Default::default()
        },
        false,
    )
    .unwrap();
    {
        let mut storage = MinfsNvm::create(&img, "cannyls.lusf", 32 << 20)
            .unwrap()
            .create_storage()
            .unwrap();
        for n in 1..=5u64 {
            let data = storage
                .allocate_lump_data_with_bytes(&bytes_of(n, 10_000))
                .unwrap();
            storage.put(&LumpId::new(u128::from(n)), &data).unwrap();
        }
        storage.journal_sync().unwrap();
    }
    let bin = || std::process::Command::cargo_bin("minfs-cannyls").unwrap();
    let out = bin().args(["scrub", "--json"]).arg(&img).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        testutil::output_text(&out)
    );
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["index"]["lumps"], 5);
    assert_eq!(j["index"]["journal_clean"], true);
    // The whole file: the storage and its copy.
    let size = minfs::Filesystem::open(&img, minfs::OpenMode::ReadOnly)
        .unwrap()
        .stat("cannyls.lusf")
        .unwrap()
        .size;
    assert!(size > 32 << 20, "the file holds the copy too");
    assert_eq!(j["bytes_read"], size);
    assert_eq!(j["bad_ranges"].as_array().unwrap().len(), 0);
    let out = bin().arg("scrub").arg(&img).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("5 lumps in its journal"), "{text}");
    // A file that is not there, a file with no storage, a bad rate.
    let out = bin().arg("scrub").arg(&img).arg("nope").output().unwrap();
    assert_eq!(out.status.code(), Some(8));
    assert!(testutil::output_text(&out).contains("no file named \"nope\""));
    minfs::Filesystem::open(&img, minfs::OpenMode::ReadWrite)
        .unwrap()
        .create("empty", 1 << 20)
        .unwrap();
    let out = bin().arg("scrub").arg(&img).arg("empty").output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        testutil::output_text(&out)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("index cannot be read"));
    let out = bin()
        .args(["scrub", "--rate", "0"])
        .arg(&img)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(16));
}
