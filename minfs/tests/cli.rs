//! The `minfs` command on image files: every subcommand, its output, and its exit codes.

mod common;

use std::path::PathBuf;

use common::{cat, corrupt_slots_and_check, json, minfs, one_commit_survives_either_slot_hit};
use predicates::prelude::*;

struct Scratch {
    dir: tempfile::TempDir,
}

impl Scratch {
    fn new() -> Scratch {
        Scratch {
            dir: tempfile::Builder::new()
                .prefix("minfs-cli-")
                .tempdir_in(testutil::scratch_dir())
                .unwrap(),
        }
    }
    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
    /// A fresh 64 MiB filesystem image.
    fn image(&self) -> PathBuf {
        let img = self.path("disk.img");
        minfs()
            .args(["mkfs", "-s", "64M", "-L", "test"])
            .arg(&img)
            .assert()
            .success();
        img
    }
}

#[test]
fn mkfs_creates_a_preallocated_image_of_the_given_size() {
    let s = Scratch::new();
    let img = s.path("disk.img");
    minfs()
        .args(["mkfs", "--size", "32M"])
        .arg(&img)
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "created an image of 33554432 bytes",
        ));
    let meta = std::fs::metadata(&img).unwrap();
    assert_eq!(meta.len(), 32 << 20);
    use std::os::unix::fs::MetadataExt;
    assert!(
        meta.blocks() * 512 >= 32 << 20,
        "image is sparse: {} blocks",
        meta.blocks()
    );
}

#[test]
fn mkfs_dry_run_writes_nothing() {
    let s = Scratch::new();
    let img = s.path("disk.img");
    minfs()
        .args(["mkfs", "-n", "-s", "32M"])
        .arg(&img)
        .assert()
        .success()
        .stdout(predicate::str::contains("nothing was written"));
    assert!(!img.exists());
}

#[test]
fn mkfs_keeps_the_size_of_an_existing_image() {
    let s = Scratch::new();
    let img = s.path("disk.img");
    std::fs::File::create(&img)
        .unwrap()
        .set_len(8 << 20)
        .unwrap();
    minfs().arg("mkfs").arg(&img).assert().success();
    assert_eq!(std::fs::metadata(&img).unwrap().len(), 8 << 20);
    assert_eq!(json(&["info", "--json"], &img)["total_bytes"], 8u64 << 20);
    // A different --size for an existing image is refused, and the image is left alone.
    minfs()
        .args(["mkfs", "-f", "-s", "16M"])
        .arg(&img)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("keeps its size"));
    assert_eq!(std::fs::metadata(&img).unwrap().len(), 8 << 20);
}

#[test]
fn mkfs_refuses_an_existing_minfs_without_force() {
    let s = Scratch::new();
    let img = s.image();
    let before = json(&["info", "--json"], &img)["uuid"].clone();
    minfs().arg("mkfs").arg(&img).assert().code(1).stderr(
        predicate::str::contains("holds a minfs filesystem")
            .and(predicate::str::contains("--force")),
    );
    assert_eq!(json(&["info", "--json"], &img)["uuid"], before);
    minfs().args(["mkfs", "-f"]).arg(&img).assert().success();
    assert_ne!(json(&["info", "--json"], &img)["uuid"], before);
}

#[test]
fn info_json_has_the_documented_fields() {
    let s = Scratch::new();
    let img = s.image();
    minfs()
        .args(["create"])
        .arg(&img)
        .args(["data", "--size", "1M"])
        .assert()
        .success();
    let v = json(&["info", "--json"], &img);
    for key in [
        "uuid",
        "label",
        "generation",
        "block_size",
        "logical_sector_size",
        "physical_sector_size",
        "total_bytes",
        "free_bytes",
        "superblock_offsets",
        "files",
    ] {
        assert!(v.get(key).is_some(), "info --json lacks {key}: {v}");
    }
    assert_eq!(v["label"], "test");
    assert_eq!(v["block_size"], 4096);
    assert_eq!(v["superblock_offsets"], serde_json::json!([0, 65536]));
    assert_eq!(v["files"][0]["name"], "data");
    assert_eq!(v["files"][0]["size"], 1 << 20);
    assert_eq!(v["files"][0]["extents"][0]["offset"], 1 << 20);
    assert_eq!(v["files"][0]["extents"][0]["length"], 1 << 20);
    assert_eq!(v["free_bytes"], (64u64 << 20) - (1 << 20) - (1 << 20));
    minfs().arg("info").arg(&img).assert().success().stdout(
        predicate::str::contains("Filesystem UUID:").and(predicate::str::contains(
            "Superblock offsets:       0, 65536",
        )),
    );
}

#[test]
fn create_ls_write_cat_grow_rm() {
    let s = Scratch::new();
    let img = s.image();
    minfs()
        .arg("create")
        .arg(&img)
        .args(["a", "--size", "10000"])
        .assert()
        .success();
    minfs()
        .arg("create")
        .arg(&img)
        .args(["b", "-s", "2M"])
        .assert()
        .success();
    minfs()
        .arg("ls")
        .arg(&img)
        .assert()
        .success()
        .stdout("a\nb\n");
    minfs()
        .args(["ls", "-l"])
        .arg(&img)
        .assert()
        .success()
        .stdout(predicate::str::contains("10000").and(predicate::str::contains("2097152")));
    let files = json(&["ls", "--json"], &img);
    assert_eq!(files.as_array().unwrap().len(), 2);

    let data: Vec<u8> = (0..7777u32).map(|i| (i * 31 % 251) as u8).collect();
    minfs()
        .arg("write")
        .arg(&img)
        .arg("a")
        .write_stdin(data.clone())
        .assert()
        .success();
    let out = cat(&img, "a");
    assert_eq!(out.len(), 10000);
    assert_eq!(&out[..data.len()], &data[..]);
    assert!(out[data.len()..].iter().all(|&b| b == 0));

    // A write at an offset keeps the bytes around it (read-modify-write of the last sector).
    minfs()
        .arg("write")
        .arg(&img)
        .args(["a", "--offset", "512"])
        .write_stdin("XY")
        .assert()
        .success();
    let out = cat(&img, "a");
    assert_eq!(&out[512..514], b"XY");
    assert_eq!(&out[..512], &data[..512]);
    assert_eq!(&out[514..data.len()], &data[514..]);

    minfs()
        .arg("grow")
        .arg(&img)
        .args(["a", "-s", "20000"])
        .assert()
        .success();
    let out = cat(&img, "a");
    assert_eq!(out.len(), 20000);
    assert_eq!(&out[514..data.len()], &data[514..]);
    minfs()
        .arg("grow")
        .arg(&img)
        .args(["a", "-s", "100"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("never shrink"));

    minfs().arg("rm").arg(&img).arg("a").assert().success();
    minfs().arg("ls").arg(&img).assert().success().stdout("b\n");
    minfs().arg("fsck").arg(&img).assert().code(0);
}

/// Every size option takes binary (K, KiB, …: powers of 1024) and decimal (KB, MB, …: powers
/// of 1000) units with one meaning each (issue 31: `MB` was 2^20 bytes).
#[test]
fn sizes_take_binary_and_decimal_units() {
    let s = Scratch::new();
    let img = s.path("disk.img");
    minfs()
        .args(["mkfs", "-s", "8192KB"])
        .arg(&img)
        .assert()
        .success();
    assert_eq!(std::fs::metadata(&img).unwrap().len(), 8_192_000);
    for (name, size) in [
        ("dec", "1MB"),
        ("bin", "1M"),
        ("bin2", "1MiB"),
        ("k", "3kB"),
    ] {
        minfs()
            .arg("create")
            .arg(&img)
            .args([name, "-s", size])
            .assert()
            .success();
    }
    minfs()
        .arg("grow")
        .arg(&img)
        .args(["dec", "-s", "1.5MB"])
        .assert()
        .success();
    let files = json(&["ls", "--json"], &img);
    let size = |n: &str| {
        files
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["name"] == n)
            .unwrap()["size"]
            .as_u64()
            .unwrap()
    };
    assert_eq!(size("dec"), 1_500_000);
    assert_eq!(size("bin"), 1 << 20);
    assert_eq!(size("bin2"), 1 << 20);
    assert_eq!(size("k"), 3000);
    // write --offset: 1KB is 1000 bytes, not a multiple of the 512-byte sector.
    minfs()
        .arg("write")
        .arg(&img)
        .args(["bin", "--offset", "1KB"])
        .write_stdin("x")
        .assert()
        .code(1)
        .stderr(predicate::str::contains("1000"));
    minfs()
        .arg("write")
        .arg(&img)
        .args(["bin", "--offset", "1K"])
        .write_stdin("x")
        .assert()
        .success();
    assert_eq!(cat(&img, "bin")[1024], b'x');
}

#[test]
fn errors_name_the_target_and_the_problem() {
    let s = Scratch::new();
    let img = s.image();
    let t = img.display().to_string();
    minfs()
        .arg("create")
        .arg(&img)
        .args(["a", "-s", "1M"])
        .assert()
        .success();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec![
                "create".into(),
                t.clone(),
                "a".into(),
                "-s".into(),
                "1M".into(),
            ],
            "already exists",
        ),
        (
            vec![
                "create".into(),
                t.clone(),
                "x".repeat(65),
                "-s".into(),
                "1M".into(),
            ],
            "longer than 64 bytes",
        ),
        (
            vec![
                "create".into(),
                t.clone(),
                "big".into(),
                "-s".into(),
                "1G".into(),
            ],
            "no space",
        ),
        (vec!["rm".into(), t.clone(), "nope".into()], "no file named"),
        (
            vec!["cat".into(), t.clone(), "nope".into()],
            "no file named",
        ),
        (
            vec![
                "write".into(),
                t.clone(),
                "a".into(),
                "--offset".into(),
                "100".into(),
            ],
            "not a multiple",
        ),
    ];
    for (args, want) in cases {
        minfs()
            .args(&args)
            .write_stdin("")
            .assert()
            .code(1)
            .stderr(predicate::str::contains(want).and(predicate::str::contains(&t)));
    }
}

#[test]
fn non_minfs_targets_are_named_as_such() {
    let s = Scratch::new();
    let plain = s.path("zeros.img");
    std::fs::write(&plain, vec![0u8; 1 << 20]).unwrap();
    for cmd in ["info", "ls"] {
        minfs()
            .arg(cmd)
            .arg(&plain)
            .assert()
            .code(1)
            .stderr(predicate::str::contains("not a minfs filesystem"));
    }
    minfs().arg("fsck").arg(&plain).assert().code(8);
    minfs()
        .arg("info")
        .arg(s.dir.path())
        .assert()
        .code(1)
        .stderr(predicate::str::contains("is a directory"));
    minfs()
        .arg("info")
        .arg(s.path("missing.img"))
        .assert()
        .code(1)
        .stderr(predicate::str::contains("missing.img"));
}

#[test]
fn usage_errors_exit_2_and_fsck_usage_errors_exit_16() {
    minfs().assert().code(2);
    minfs().arg("frobnicate").assert().code(2);
    minfs().args(["create", "x.img", "name"]).assert().code(2); // --size missing
    minfs()
        .args(["mkfs", "-s", "ten", "x.img"])
        .assert()
        .code(2);
    minfs()
        .args(["fsck", "-n", "-y", "x.img"])
        .assert()
        .code(16);
    minfs().args(["fsck"]).assert().code(16);
    minfs().arg("--help").assert().code(0);
    minfs().arg("--version").assert().code(0);
}

#[test]
fn mkfs_bad_sizes_are_refused_without_leaving_files() {
    let s = Scratch::new();
    let img = s.path("x.img");
    minfs()
        .args(["mkfs", "-s", "1M"])
        .arg(&img)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("too small"));
    minfs()
        .args(["mkfs", "-s", "1000000"])
        .arg(&img)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("not a multiple of 4096"));
    minfs()
        .args(["mkfs", "-s", "8E"])
        .arg(&img)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("x.img"));
    assert!(!img.exists(), "a failed mkfs left {img:?} behind");
    minfs()
        .arg("mkfs")
        .arg(&img)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("give --size"));
}

#[test]
fn corrupted_slot_is_survived_and_repaired_on_an_image() {
    let s = Scratch::new();
    let img = s.image();
    minfs()
        .arg("create")
        .arg(&img)
        .args(["keep", "-s", "1M"])
        .assert()
        .success();
    corrupt_slots_and_check(&img);
}

/// The only commit after mkfs (one file), written to both slots, survives 64 random bytes over
/// the start of either slot of a 256 MiB image.
#[test]
fn one_commit_survives_garbage_over_either_slot_on_an_image() {
    let s = Scratch::new();
    one_commit_survives_either_slot_hit(&s.path("d.img"), &["-s", "256M"]);
}

/// `minfs write` of an input longer than the room left in the file exits 1 and changes nothing:
/// piped (held before writing) and from a regular file (its length checked first).
#[test]
fn failed_write_leaves_the_file_byte_identical() {
    let s = Scratch::new();
    let img = s.image();
    minfs()
        .arg("create")
        .arg(&img)
        .args(["z", "-s", "1536K"])
        .assert()
        .success();
    let before: Vec<u8> = (0..1536u32 << 10).map(|i| (i % 253) as u8).collect();
    minfs()
        .arg("write")
        .arg(&img)
        .arg("z")
        .write_stdin(before.clone())
        .assert()
        .success();
    let input = vec![0xEEu8; 2 << 20];
    minfs()
        .arg("write")
        .arg(&img)
        .arg("z")
        .write_stdin(input.clone())
        .assert()
        .code(1)
        .stderr(
            predicate::str::contains("does not fit in \"z\" at offset 0")
                .and(predicate::str::contains("nothing was written")),
        );
    assert!(cat(&img, "z") == before, "a failed piped write changed z");

    // Stdin a regular file (`< input`): its length is known before anything is written.
    let file = s.path("input");
    std::fs::write(&file, &input).unwrap();
    let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("minfs"))
        .arg("write")
        .arg(&img)
        .args(["z", "--offset", "1M"])
        .stdin(std::fs::File::open(&file).unwrap())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("the input (2097152 bytes) does not fit")
            && stderr.contains("524288 of them from the offset on")
            && stderr.contains("nothing was written"),
        "{stderr}"
    );
    assert!(
        cat(&img, "z") == before,
        "a failed write from a file changed z"
    );
}

/// `minfs umount` of a path that does not exist says so (not "not mounted"); of an existing
/// directory with nothing mounted, that nothing is mounted there.
#[test]
fn umount_of_a_missing_path_says_it_does_not_exist() {
    let s = Scratch::new();
    let missing = s.path("no-such-dir");
    for path in [missing.clone(), missing.join("below")] {
        minfs().arg("umount").arg(&path).assert().code(1).stderr(
            predicate::str::contains(format!("{}: does not exist", path.display()))
                .and(predicate::str::contains("not mounted").not()),
        );
    }
    minfs()
        .arg("umount")
        .arg(s.path(""))
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "not mounted (nothing is mounted there)",
        ));
}

/// `minfs info` shows an empty label as `<none>` (as tune2fs -l does), a set one as it is.
#[test]
fn info_shows_an_empty_label_as_none() {
    let s = Scratch::new();
    let img = s.path("nolabel.img");
    minfs()
        .args(["mkfs", "-s", "8M"])
        .arg(&img)
        .assert()
        .success();
    minfs()
        .arg("info")
        .arg(&img)
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "Filesystem label:         <none>\n",
        ));
    assert_eq!(json(&["info", "--json"], &img)["label"], "");
    minfs()
        .arg("info")
        .arg(s.image())
        .assert()
        .success()
        .stdout(predicate::str::contains("Filesystem label:         test\n"));
}

/// fsck's summary counts "1 file", "2 files"; create and grow "1 extent", "2 extents".
#[test]
fn fsck_counts_files_in_the_right_number() {
    let s = Scratch::new();
    let img = s.image();
    for (name, want) in [("a", "1 file,"), ("b", "2 files,")] {
        minfs()
            .arg("create")
            .arg(&img)
            .args([name, "-s", "4K"])
            .assert()
            .success()
            .stdout(predicate::str::contains(
                "4096 bytes in 1 extent, first at byte",
            ));
        minfs()
            .arg("fsck")
            .arg(&img)
            .assert()
            .code(0)
            .stdout(predicate::str::contains(format!(": {want} ")));
    }
    // "a" grows around "b": a second extent.
    minfs()
        .arg("grow")
        .arg(&img)
        .args(["a", "-s", "8K"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "8192 bytes in 2 extents, first at byte",
        ));
}

/// An existing image of random bytes (no signature) is someone's data: mkfs refuses it without
/// -f, naming its size and where the first non-zero byte is, and leaves it byte-identical.
#[test]
fn mkfs_refuses_unknown_data_without_force() {
    let s = Scratch::new();
    let img = s.path("precious.bin");
    let mut rng = testutil::XorShift(0x5eed);
    let data: Vec<u8> = (0..(16 << 20) / 8)
        .flat_map(|_| rng.next().to_le_bytes())
        .collect();
    std::fs::write(&img, &data).unwrap();
    minfs()
        .arg("mkfs")
        .arg(&img)
        .assert()
        .failure()
        .stderr(predicate::str::contains(
            "holds data minfs does not recognise: a non-zero byte at byte 0 of its 16777216 bytes",
        ))
        .stderr(predicate::str::contains("--force"));
    assert!(
        std::fs::read(&img).unwrap() == data,
        "the refusal changed the image"
    );
    minfs().args(["mkfs", "-f"]).arg(&img).assert().success();
}

/// Data only in the middle of a large sparse image is found (its extent, through SEEK_DATA),
/// and named by its offset.
#[test]
fn mkfs_finds_data_in_the_middle_of_a_sparse_image() {
    use std::os::unix::fs::FileExt;
    let s = Scratch::new();
    let img = s.path("sparse.img");
    let f = std::fs::File::create(&img).unwrap();
    f.set_len(64 << 30).unwrap();
    let at = (32 << 30) + 5 * 4096 + 100;
    f.write_all_at(b"not zero", at).unwrap();
    drop(f);
    minfs()
        .args(["mkfs", "-n"])
        .arg(&img)
        .assert()
        .failure()
        .stderr(predicate::str::contains(format!(
            "a non-zero byte at byte {at} of its {} bytes",
            64u64 << 30
        )));
}

/// All-zero (written), sparse and fallocated images are not data: mkfs takes them.
#[test]
fn mkfs_takes_zeroed_sparse_and_fallocated_images() {
    let s = Scratch::new();
    let zeroed = s.path("zeroed.img");
    std::fs::write(&zeroed, vec![0u8; 8 << 20]).unwrap();
    let sparse = s.path("sparse.img");
    std::fs::File::create(&sparse)
        .unwrap()
        .set_len(8 << 20)
        .unwrap();
    let falloc = s.path("falloc.img");
    let f = std::fs::File::create(&falloc).unwrap();
    nix::fcntl::fallocate(
        std::os::fd::AsRawFd::as_raw_fd(&f),
        nix::fcntl::FallocateFlags::empty(),
        0,
        8 << 20,
    )
    .unwrap();
    drop(f);
    for img in [zeroed, sparse, falloc] {
        minfs().arg("mkfs").arg(&img).assert().success();
    }
}

/// `ls` and `info` open read-only and do not repair: when they read the mirror slot because
/// the other is invalid they say so, with the reason and the repair; on a healthy image they
/// say nothing on stderr (issue 37).
#[test]
fn ls_and_info_say_when_they_read_the_mirror_slot() {
    use std::os::unix::fs::FileExt;
    let s = Scratch::new();
    let img = s.image();
    for cmd in ["ls", "info"] {
        minfs()
            .arg(cmd)
            .arg(&img)
            .assert()
            .success()
            .stderr(predicate::str::is_empty());
    }
    let f = std::fs::OpenOptions::new().write(true).open(&img).unwrap();
    f.write_all_at(&[0xff], 20).unwrap();
    drop(f);
    for cmd in ["ls", "info"] {
        minfs()
            .arg(cmd)
            .arg(&img)
            .assert()
            .success()
            .stderr(predicate::str::contains(
                "slot A is invalid (superblock checksum mismatch",
            ))
            .stderr(predicate::str::contains("read from its mirror, slot B"))
            .stderr(predicate::str::contains("minfs fsck -y"));
    }
}
