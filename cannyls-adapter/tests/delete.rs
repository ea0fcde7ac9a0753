//! `minfs-cannyls delete` and `minfs-cannyls lumps` on real minfs images holding real Cannyls
//! storages: one lump of several deleted (the others byte-identical after a reopen); absent
//! and malformed ids named with nothing changed; a target another process holds refused; the
//! listing's device ranges holding the lumps' own bytes.

use assert_cmd::Command;
use cannyls::lump::{LumpData, LumpId};
use cannyls::nvm::NonVolatileMemory;
use cannyls::storage::{Storage, StorageBuilder};
use cannyls_adapter::MinfsNvm;
use minfs::{Filesystem, OpenMode};
use predicates::prelude::*;
use predicates::str::contains;

mod common;

use common::{assert_fsck_clean, image, pattern, Image, FILE};

/// The lumps put: data-region lumps 1..=5 of various sizes, embedded lumps 6 and 7.
const LUMPS: [(u128, usize, bool); 7] = [
    (1, 4096, false),
    (2, 100_000, false),
    (3, 1 << 20, false),
    (4, 1, false),
    (5, 513, false),
    (6, 300, true),
    (7, 0, true),
];

/// The id of lump `n` as `minfs-cannyls` prints it (32 hex digits).
fn hex(n: u128) -> String {
    LumpId::new(n).to_string()
}

/// Puts LUMPS into `s` (embedded or not, as listed) and syncs its journal.
fn put_lumps<N: NonVolatileMemory>(s: &mut Storage<N>) {
    for (n, len, embedded) in LUMPS {
        let bytes = pattern(n as u64, len);
        let data = if embedded {
            LumpData::new_embedded(bytes).unwrap()
        } else {
            s.allocate_lump_data_with_bytes(&bytes).unwrap()
        };
        s.put(&LumpId::new(n), &data).unwrap();
    }
    s.journal_sync().unwrap();
}

/// An image with another file first (so the storage's file does not start the data area) and
/// a storage in FILE holding LUMPS, synced.
fn storage() -> Image {
    let img = image(32 << 20);
    let fs = Filesystem::open(&img.path, OpenMode::ReadWrite).unwrap();
    fs.create("other", 1 << 20).unwrap();
    let nvm = MinfsNvm::create_in(&fs, FILE, 8 << 20).unwrap();
    let mut s = nvm.create_storage().unwrap();
    put_lumps(&mut s);
    drop(s);
    drop(fs);
    img
}

/// Opens the storage again and checks: the lumps in `gone` are absent, every other one of
/// LUMPS holds its bytes.
fn check_storage(img: &Image, gone: &[u128]) {
    let mut s = StorageBuilder::new()
        .open(MinfsNvm::open(&img.path, FILE).unwrap())
        .unwrap();
    for (n, len, _) in LUMPS {
        let got = s.get(&LumpId::new(n)).unwrap();
        if gone.contains(&n) {
            assert!(got.is_none(), "lump {n} should be gone");
        } else {
            let got = got.unwrap_or_else(|| panic!("lump {n} is missing"));
            assert_eq!(got.as_bytes(), &pattern(n as u64, len)[..], "lump {n}");
        }
    }
    drop(s);
    assert_fsck_clean(&img.path);
}

fn cli(args: &[&str]) -> assert_cmd::assert::Assert {
    Command::cargo_bin("minfs-cannyls")
        .unwrap()
        .args(args)
        .assert()
}

fn image_bytes(img: &Image) -> Vec<u8> {
    std::fs::read(&img.path).unwrap()
}

#[test]
fn deleting_one_of_several_lumps_leaves_the_others_byte_identical() {
    let img = storage();
    let t = img.path.to_str().unwrap();
    // Without --yes: what would be deleted, and nothing changes.
    let before = image_bytes(&img);
    cli(&["delete", t, FILE, "3"])
        .code(0)
        .stdout(contains(format!("would delete lump {}", hex(3))))
        .stdout(contains("nothing deleted"));
    assert!(image_bytes(&img) == before, "a dry run changed the image");
    check_storage(&img, &[]);

    cli(&["delete", "--yes", t, FILE, &hex(3)])
        .code(0)
        .stdout(contains(format!("deleted lump {} (", hex(3))))
        .stdout(contains("1 lump deleted, journal synced"));
    check_storage(&img, &[3]);
    // The listing (the on-media index) agrees.
    cli(&["lumps", t, FILE])
        .code(0)
        .stdout(contains("6 lumps in its journal"))
        .stdout(contains(hex(3)).not());

    // An embedded lump and a data lump at once, one of them named twice.
    cli(&["delete", "--yes", t, FILE, "6", "1", "06"])
        .code(0)
        .stdout(contains("2 lumps deleted"));
    check_storage(&img, &[1, 3, 6]);
}

#[test]
fn an_absent_or_malformed_lump_id_is_named_and_nothing_changes() {
    let img = storage();
    let t = img.path.to_str().unwrap();
    let before = image_bytes(&img);
    // Lump 3 exists, ff does not: refused as a whole.
    for yes in [true, false] {
        let mut args = vec!["delete"];
        if yes {
            args.push("--yes");
        }
        args.extend([t, FILE, "3", "ff"]);
        cli(&args)
            .code(4)
            .stdout(contains("deleted").not())
            .stderr(contains(format!("no such lump: {}", hex(0xff))))
            .stderr(contains("nothing"));
        assert!(
            image_bytes(&img) == before,
            "refused delete (--yes {yes}) changed the image"
        );
    }
    // Malformed ids: usage errors naming the text.
    let long = "a".repeat(33);
    for (bad, why) in [
        ("12g4", "'g' is not a hexadecimal digit"),
        ("0x12", "'x' is not a hexadecimal digit"),
        ("+3", "'+' is not a hexadecimal digit"),
        (&long[..], "33 digits"),
    ] {
        cli(&["delete", "--yes", t, FILE, "3", bad])
            .code(16)
            .stderr(contains(format!("{bad:?}")))
            .stderr(contains(why));
    }
    cli(&["delete", "--yes", t, FILE]).code(16);
    // No such file, a file with no storage, no such target: operational errors.
    cli(&["delete", "--yes", t, "nothing", "3"])
        .code(8)
        .stderr(contains("nothing"));
    cli(&["delete", "--yes", t, "other", "3"])
        .code(8)
        .stderr(contains("holds no Cannyls storage"));
    cli(&["delete", "--yes", "/nonexistent/minfs.img", FILE, "3"]).code(8);
    assert!(
        image_bytes(&img) == before,
        "a refused delete changed the image"
    );
    check_storage(&img, &[]);
}

#[test]
fn a_storage_in_use_is_refused() {
    let img = storage();
    let t = img.path.to_str().unwrap();
    // This process holds the target read-write (as `minfs mount` or a running Cannyls client
    // would); the command is another process.
    let held = Filesystem::open(&img.path, OpenMode::ReadWrite).unwrap();
    cli(&["delete", "--yes", t, FILE, "3"])
        .code(8)
        .stderr(contains("nothing deleted: stop the process that holds it"))
        .stdout(contains("deleted").not());
    // Reading (the dry run, the listing) works beside it.
    cli(&["delete", t, FILE, "3"])
        .code(0)
        .stdout(contains("would delete"));
    drop(held);
    check_storage(&img, &[]);
}

#[test]
fn the_listing_places_each_lump_where_its_bytes_are_on_the_device() {
    let img = storage();
    let t = img.path.to_str().unwrap();
    let out = cli(&["lumps", "--json", t, FILE]).code(0);
    let v: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let lumps = v["lumps"].as_array().unwrap();
    assert_eq!(lumps.len(), LUMPS.len(), "{v}");
    let device = image_bytes(&img);
    for (n, len, embedded) in LUMPS {
        let l = lumps
            .iter()
            .find(|l| l["id"] == hex(n))
            .unwrap_or_else(|| panic!("lump {n} not listed: {v}"));
        assert_eq!(
            l["region"],
            if embedded { "journal" } else { "data" },
            "{l}"
        );
        // The device ranges, concatenated, start with the lump's bytes.
        let mut got = Vec::new();
        for r in l["device_ranges"].as_array().unwrap() {
            let (o, rl) = (r["offset"].as_u64().unwrap(), r["length"].as_u64().unwrap());
            got.extend_from_slice(&device[o as usize..(o + rl) as usize]);
        }
        assert_eq!(got.len() as u64, l["length"].as_u64().unwrap(), "{l}");
        assert!(got.len() >= len, "{l}");
        assert_eq!(&got[..len], &pattern(n as u64, len)[..], "lump {n}: {l}");
    }
    // The journal's live records, [head, end) of the ring: on the device where the file holds
    // them (what frugalos-cluster.sh --journal-bad-sector puts a bad sector in).
    let j = &v["index"]["journal"];
    let (ring, head, end) = (
        j["ring_file_offset"].as_u64().unwrap(),
        j["head"].as_u64().unwrap(),
        j["end"].as_u64().unwrap(),
    );
    assert!(end > head, "{j}");
    let mut live = Vec::new();
    for r in j["live_device_ranges"].as_array().unwrap() {
        let (o, rl) = (r["offset"].as_u64().unwrap(), r["length"].as_u64().unwrap());
        live.extend_from_slice(&device[o as usize..(o + rl) as usize]);
    }
    assert_eq!(live.len() as u64, end - head, "{j}");
    let fs = Filesystem::open(&img.path, OpenMode::ReadOnly).unwrap();
    let file = fs.open_file(FILE).unwrap();
    let (a0, a1) = ((ring + head) / 512 * 512, (ring + end).div_ceil(512) * 512);
    let mut buf = minfs::AlignedBuf::zeroed((a1 - a0) as usize, 4096);
    file.read_at(&mut buf, a0).unwrap();
    let from = (ring + head - a0) as usize;
    assert!(
        buf[from..from + live.len()] == live[..],
        "the live records' device bytes differ from the file's: {j}"
    );
    // The ring's head block holds the first live record.
    let bs = v["index"]["block_size"].as_u64().unwrap();
    let live_start = j["live_device_ranges"][0]["offset"].as_u64().unwrap();
    assert_eq!(
        j["head_block_device_offset"].as_u64().unwrap(),
        live_start - head % bs,
        "{j}"
    );
    // A file that holds no storage: the index cannot be read, exit 1.
    cli(&["lumps", t, "other"])
        .code(1)
        .stdout(contains("cannot be read"));
}

/// A storage as FrugalOS' file devices have it: made by Cannyls' own `FileNvm`, whose file
/// starts empty and grows as the storage writes, so it is shorter than the storage's header
/// says (the data region runs past its end). Its bytes copied into a minfs file of the same
/// length: `lumps` lists it, `delete` deletes from it, the others stay byte-identical.
#[test]
fn a_storage_in_a_file_shorter_than_the_storage_as_filenvm_leaves_it() {
    use cannyls::nvm::FileNvm;
    let host = tempfile::Builder::new()
        .prefix("cannyls-adapter-filenvm-")
        .tempdir_in(testutil::scratch_dir())
        .unwrap();
    let lusf = host.path().join("dev.lusf");
    let (nvm, created) = FileNvm::create_if_absent(&lusf, 256 << 20).unwrap();
    assert!(created);
    let mut s = StorageBuilder::new()
        .journal_region_ratio(0.01)
        .create(nvm)
        .unwrap();
    put_lumps(&mut s);
    drop(s);
    let bytes = std::fs::read(&lusf).unwrap();
    assert!(
        (bytes.len() as u64) < 128 << 20,
        "FileNvm's file is {} bytes: not shorter than its storage",
        bytes.len()
    );
    let img = image(64 << 20);
    let len = (bytes.len() as u64).div_ceil(4096) * 4096;
    let fs = Filesystem::open(&img.path, OpenMode::ReadWrite).unwrap();
    fs.create(FILE, len).unwrap();
    let f = fs.open_file(FILE).unwrap();
    let mut buf = minfs::AlignedBuf::zeroed(len as usize, 4096);
    buf[..bytes.len()].copy_from_slice(&bytes);
    f.write_at(&buf, 0).unwrap();
    f.flush().unwrap();
    drop(f);
    drop(fs);

    let t = img.path.to_str().unwrap();
    cli(&["lumps", t, FILE])
        .code(0)
        .stdout(contains("block size 512: 7 lumps in its journal"));
    cli(&["delete", "--yes", t, FILE, "2"])
        .code(0)
        .stdout(contains(format!("deleted lump {}", hex(2))));
    check_storage(&img, &[2]);
}
