//! `minfs tune -L/-U`: the label and UUID changed after mkfs, in one crash-atomic commit;
//! refused on a target in use; bad labels and UUIDs refused by name.

mod common;

use std::sync::Arc;

use common::{json, minfs};
use minfs::device::fault::{FaultDevice, MediaState};
use minfs::{Filesystem, FormatOptions};
use predicates::prelude::*;

fn scratch() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("minfs-tune-")
        .tempdir_in(testutil::scratch_dir())
        .unwrap()
}

/// A crash at every device operation of the commit that changes label and UUID, with every
/// fate of the unflushed writes (lost, kept, torn at each sector): each crash image opens with
/// the old pair or the new pair, never the new label with the old UUID or the other way round.
#[test]
fn label_and_uuid_change_together_or_not_at_all_at_every_crash_point() {
    const LEN: u64 = 4 << 20;
    let dev = Arc::new(FaultDevice::new(LEN, 512, 4096));
    dev.record_trace();
    let old_uuid = [1u8; 16];
    let fs = Filesystem::format(
        dev.clone(),
        "crash",
        &FormatOptions {
            label: "old".into(),
            uuid: Some(old_uuid),
            ..Default::default()
        },
    )
    .unwrap();
    fs.flush().unwrap();
    let before = dev.take_trace();
    let new_uuid = [7u8; 16];
    fs.set_label_and_uuid(Some("a new label"), Some(new_uuid))
        .unwrap();
    let trace = dev.take_trace();
    assert!(!trace.is_empty());
    let mut media = MediaState::new(vec![0; LEN as usize], 512);
    for e in &before {
        media.apply(e);
    }
    let (mut old_seen, mut new_seen, mut images) = (0, 0, 0);
    for k in 0..=trace.len() {
        if k > 0 {
            media.apply(&trace[k - 1]);
        }
        for fates in media.variants(256, 4096, k as u64) {
            images += 1;
            let crashed = Arc::new(media.crash_device(&fates, 4096));
            let fs = Filesystem::open_device(crashed, "crash image")
                .unwrap_or_else(|e| panic!("crash point {k}: {e}"));
            let sb = fs.superblock();
            match (sb.label.as_str(), sb.uuid) {
                ("old", u) if u == old_uuid => old_seen += 1,
                ("a new label", u) if u == new_uuid => new_seen += 1,
                (l, u) => panic!("crash point {k}: label {l:?} with UUID {u:02x?}"),
            }
        }
    }
    println!("tune crash images: {images} (old pair {old_seen}, new pair {new_seen})");
    assert!(old_seen > 0 && new_seen > 0);
}

#[test]
fn tune_changes_label_and_uuid_and_fsck_stays_clean() {
    let d = scratch();
    let img = d.path().join("disk.img");
    minfs()
        .args(["mkfs", "-q", "-s", "8M", "-L", "first"])
        .arg(&img)
        .assert()
        .success();
    let before = json(&["info", "--json"], &img);
    minfs()
        .args([
            "tune",
            "-L",
            "second",
            "-U",
            "0b5d6ea8-2d4c-4a4e-9d1e-3b8f6d7a9c10",
        ])
        .arg(&img)
        .assert()
        .success()
        .stdout(predicate::str::contains("label \"first\" -> \"second\""))
        .stdout(predicate::str::contains(
            "-> 0b5d6ea8-2d4c-4a4e-9d1e-3b8f6d7a9c10",
        ));
    let after = json(&["info", "--json"], &img);
    assert_eq!(after["label"], "second");
    assert_eq!(after["uuid"], "0b5d6ea8-2d4c-4a4e-9d1e-3b8f6d7a9c10");
    assert_eq!(
        after["generation"],
        before["generation"].as_u64().unwrap() + 1
    );
    minfs().args(["fsck", "-n"]).arg(&img).assert().code(0);
    for (arg, version) in [("random", 4), ("time", 7)] {
        minfs()
            .args(["tune", "-U", arg])
            .arg(&img)
            .assert()
            .success();
        let u = json(&["info", "--json"], &img)["uuid"]
            .as_str()
            .unwrap()
            .to_string();
        let parsed = uuid::Uuid::parse_str(&u).unwrap();
        assert_eq!(parsed.get_version_num(), version, "-U {arg} gave {u}");
        assert_eq!(json(&["info", "--json"], &img)["label"], "second");
    }
    minfs()
        .args(["tune", "-L", ""])
        .arg(&img)
        .assert()
        .success();
    minfs().args(["fsck", "-n"]).arg(&img).assert().code(0);
}

#[test]
fn tune_refuses_bad_labels_and_uuids_by_name_and_writes_nothing() {
    let d = scratch();
    let img = d.path().join("disk.img");
    minfs()
        .args(["mkfs", "-q", "-s", "8M", "-L", "kept"])
        .arg(&img)
        .assert()
        .success();
    let bytes = std::fs::read(&img).unwrap();
    let long = "x".repeat(33);
    minfs()
        .args(["tune", "-L", &long])
        .arg(&img)
        .assert()
        .code(1)
        .stderr(predicate::str::contains(format!(
            "label \"{long}\" is 33 bytes: longer than 32 bytes"
        )));
    minfs()
        .args(["tune", "-U", "not-a-uuid"])
        .arg(&img)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("\"not-a-uuid\" is not a UUID"));
    minfs()
        .args(["tune", "-U", "00000000-0000-0000-0000-000000000000"])
        .arg(&img)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("nil UUID"));
    minfs()
        .arg("tune")
        .arg(&img)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--label"));
    assert!(std::fs::read(&img).unwrap() == bytes, "a refusal wrote");
}

/// A target open read-write elsewhere (here: this process holds its lock, as a mount's
/// server does) is refused, naming the holder.
#[test]
fn tune_refuses_a_target_in_use() {
    let d = scratch();
    let img = d.path().join("disk.img");
    minfs()
        .args(["mkfs", "-q", "-s", "8M"])
        .arg(&img)
        .assert()
        .success();
    let held = Filesystem::open(&img, minfs::OpenMode::ReadWrite).unwrap();
    minfs()
        .args(["tune", "-L", "x"])
        .arg(&img)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("locked by process"));
    drop(held);
    minfs()
        .args(["tune", "-L", "x"])
        .arg(&img)
        .assert()
        .success();
}
