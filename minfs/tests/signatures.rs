//! What `minfs mkfs` does to what a target held, checked with the real tools that made it and
//! with libblkid (util-linux `wipefs`): each format made on a loop device by its own Debian
//! tool is refused without `-f`, named; after `mkfs -f`, `wipefs --no-act` lists nothing (the
//! backup GPT in the last sector, RAID superblocks at the end, ... are wiped, each printed).
//! Root and loop devices needed: skipped with a printed reason otherwise (a failure under
//! MINFS_REQUIRE_LOOP=1, except where this kernel cannot run a tool: said in the skip line).

use std::path::Path;
use std::process::{Command, Output};

use testutil::output_text as text;

fn minfs() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_minfs"));
    c.env("LC_ALL", "C");
    c
}

fn run(c: &mut Command) -> Output {
    c.output().unwrap_or_else(|e| panic!("{c:?}: {e}"))
}

fn ready(test: &str) -> Option<testutil::LoopDevice> {
    if let Some(reason) = testutil::loop_unavailable() {
        if std::env::var_os("MINFS_REQUIRE_LOOP").is_some_and(|v| v == "1") {
            panic!("MINFS_REQUIRE_LOOP=1 but {reason}");
        }
        testutil::print_skip(test, &reason);
        return None;
    }
    if !testutil::require_program(test, "wipefs", "util-linux") {
        return None;
    }
    Some(testutil::LoopDevice::new(320 << 20, 512).expect("loop device"))
}

/// `wipefs --no-act DEV`'s table (empty when libblkid finds nothing).
fn wipefs(dev: &Path) -> String {
    let out = run(Command::new("wipefs").arg("--no-act").arg(dev));
    assert!(out.status.success(), "wipefs: {}", text(&out));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Makes `format` on a fresh loop device with `make`, then checks that minfs refuses it
/// without -f naming `named`, and that after `mkfs -f` libblkid finds nothing. Prints the
/// wipe table's rows for this format.
fn check_format(test: &str, format: &str, named: &str, make: &dyn Fn(&Path) -> Output) {
    let Some(dev) = ready(test) else { return };
    let made = make(dev.path());
    assert!(made.status.success(), "making {format}: {}", text(&made));
    let before = wipefs(dev.path());
    assert!(
        !before.is_empty(),
        "{format}: libblkid finds nothing after making it"
    );
    let out = run(minfs().arg("mkfs").arg(dev.path()));
    assert!(!out.status.success(), "{format}: mkfs without -f succeeded");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(named) && err.contains("--force"),
        "{format}: refusal does not name {named:?}: {err}"
    );
    assert_eq!(
        wipefs(dev.path()),
        before,
        "{format}: the refusal changed the target"
    );
    let out = run(minfs().args(["mkfs", "-f"]).arg(dev.path()));
    assert!(out.status.success(), "{format}: mkfs -f: {}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let after = wipefs(dev.path());
    assert_eq!(
        after, "",
        "{format}: libblkid still finds signatures after mkfs -f"
    );
    let fsck = run(minfs().args(["fsck", "-n"]).arg(dev.path()));
    assert!(fsck.status.success(), "{format}: fsck -n: {}", text(&fsck));
    println!("wipe table, {format}: libblkid found before:");
    for l in before.lines() {
        println!("  {l}");
    }
    println!("  minfs mkfs -f printed:");
    for l in stdout
        .lines()
        .filter(|l| l.contains("overwrote") || l.contains("wiped"))
    {
        println!("  {l}");
    }
    println!("  wipefs --no-act after: (nothing)");
}

fn tool(test: &str, prog: &str, package: &str) -> bool {
    testutil::loop_unavailable().is_none() && testutil::require_program(test, prog, package)
}

fn sh(script: String) -> Output {
    run(Command::new("sh").arg("-c").arg(script))
}

#[test]
fn gpt_with_its_backup_header_is_refused_then_wiped() {
    let t = "gpt_with_its_backup_header_is_refused_then_wiped";
    if tool(t, "sfdisk", "fdisk") {
        check_format(t, "gpt (sfdisk)", "GPT partition table", &|d| {
            sh(format!("echo 'label: gpt' | sfdisk -q {}", d.display()))
        });
    }
}

#[test]
fn mbr_is_refused_then_wiped() {
    let t = "mbr_is_refused_then_wiped";
    if tool(t, "sfdisk", "fdisk") {
        check_format(t, "dos (sfdisk)", "MBR partition table", &|d| {
            sh(format!("echo 'label: dos' | sfdisk -q {}", d.display()))
        });
    }
}

#[test]
fn ext4_is_refused_then_wiped() {
    let t = "ext4_is_refused_then_wiped";
    if tool(t, "mkfs.ext4", "e2fsprogs") {
        check_format(t, "ext4 (mkfs.ext4)", "ext2/ext3/ext4", &|d| {
            run(Command::new("mkfs.ext4").args(["-q", "-F"]).arg(d))
        });
    }
}

#[test]
fn xfs_is_refused_then_wiped() {
    let t = "xfs_is_refused_then_wiped";
    if tool(t, "mkfs.xfs", "xfsprogs") {
        check_format(t, "xfs (mkfs.xfs)", "XFS filesystem", &|d| {
            run(Command::new("mkfs.xfs").args(["-q", "-f"]).arg(d))
        });
    }
}

#[test]
fn btrfs_is_refused_then_wiped() {
    let t = "btrfs_is_refused_then_wiped";
    if tool(t, "mkfs.btrfs", "btrfs-progs") {
        check_format(t, "btrfs (mkfs.btrfs)", "btrfs filesystem", &|d| {
            run(Command::new("mkfs.btrfs").args(["-q", "-f"]).arg(d))
        });
    }
}

#[test]
fn swap_is_refused_then_wiped() {
    let t = "swap_is_refused_then_wiped";
    if tool(t, "mkswap", "util-linux") {
        check_format(t, "swap (mkswap)", "swap space", &|d| {
            run(Command::new("mkswap").arg("-q").arg(d))
        });
    }
}

#[test]
fn lvm2_physical_volume_is_refused_then_wiped() {
    let t = "lvm2_physical_volume_is_refused_then_wiped";
    if tool(t, "pvcreate", "lvm2") {
        // No udev database in a container: list devices by scanning /dev.
        check_format(t, "LVM2 (pvcreate)", "LVM2 physical volume", &|d| {
            run(Command::new("pvcreate")
                .args(["-ff", "-y", "--config"])
                .arg("devices { obtain_device_list_from_udev = 0 }")
                .arg(d))
        });
    }
}

#[test]
fn bcache_is_refused_then_wiped() {
    let t = "bcache_is_refused_then_wiped";
    if tool(t, "make-bcache", "bcache-tools") {
        check_format(t, "bcache (make-bcache)", "bcache device", &|d| {
            run(Command::new("make-bcache").arg("-B").arg(d))
        });
    }
}

/// An MD RAID superblock of `version` (0.90, 1.0, 1.1, 1.2) written into a device of `len`
/// bytes as the md driver lays it out (`struct mdp_superblock_s` / `mdp_superblock_1`, with
/// the version-1 checksum), for kernels without md where `mdadm --create` cannot run: returns
/// (offset, bytes).
fn md_superblock(version: &str, len: u64) -> (u64, Vec<u8>) {
    const MAGIC: u32 = 0xa92b_4efc;
    let mut b = vec![0u8; 4096];
    let put32 =
        |b: &mut Vec<u8>, at: usize, v: u32| b[at..at + 4].copy_from_slice(&v.to_le_bytes());
    let put64 =
        |b: &mut Vec<u8>, at: usize, v: u64| b[at..at + 8].copy_from_slice(&v.to_le_bytes());
    if version == "0.90" {
        // At the last 64 KiB boundary minus 64 KiB; version 0.90.0; a set UUID.
        let off = (len & !0xffff) - 0x10000;
        put32(&mut b, 0, MAGIC);
        put32(&mut b, 4, 0);
        put32(&mut b, 8, 90);
        for (i, w) in [5u32, 20, 13, 37].iter().enumerate() {
            put32(&mut b, [20, 52, 56, 60][i], *w);
        }
        return (off, b);
    }
    let off = match version {
        "1.0" => (len - 8192) & !4095,
        "1.1" => 0,
        _ => 4096,
    };
    put32(&mut b, 0, MAGIC);
    put32(&mut b, 4, 1); // major_version
    b[16..32].copy_from_slice(&[0x11; 16]); // set_uuid
    b[32..44].copy_from_slice(b"minfs-test:0");
    put32(&mut b, 72, 1); // level
    put32(&mut b, 92, 1); // raid_disks
    put64(&mut b, 144, off >> 9); // super_offset, in sectors
    b[168..184].copy_from_slice(&[0x22; 16]); // device_uuid
    put32(&mut b, 220, 0); // max_dev: no dev_roles
                           // sb_csum: the 32-bit words of the first 256 bytes (sb_csum 0) summed, folded to 32 bits.
    let sum: u64 = b[..256]
        .chunks(4)
        .map(|w| u64::from(u32::from_le_bytes(w.try_into().unwrap())))
        .sum();
    put32(&mut b, 216, ((sum & 0xffff_ffff) + (sum >> 32)) as u32);
    (off, b)
}

/// MD RAID superblocks in each metadata version, made by `mdadm --create` where the kernel has
/// the md driver (it starts the array); without it (`/proc/mdstat` absent) written by the
/// test itself as md lays them out ([`md_superblock`]), saying so; libblkid must find each.
#[test]
fn md_raid_superblocks_are_refused_then_wiped() {
    let t = "md_raid_superblocks_are_refused_then_wiped";
    let md = Path::new("/proc/mdstat").exists();
    if md && !tool(t, "mdadm", "mdadm") {
        return;
    }
    if !md {
        println!(
            "{t}: this kernel has no md driver (/proc/mdstat absent), so mdadm --create cannot \
             run: the superblocks are written by the test, as md lays them out"
        );
    }
    for (version, named) in [
        ("0.90", "linux_raid_member"),
        ("1.0", "linux_raid_member"),
        ("1.1", "MD RAID member"),
        ("1.2", "MD RAID member"),
    ] {
        let name = format!("minfs-test-{}", std::process::id());
        check_format(t, &format!("md {version}"), named, &|d| {
            if md {
                return sh(format!(
                    "mdadm --create /dev/md/{name} --run --force --level=1 --raid-devices=1 \
                     --metadata={version} {} && mdadm --stop /dev/md/{name}",
                    d.display()
                ));
            }
            use std::os::unix::fs::FileExt;
            let f = std::fs::OpenOptions::new().write(true).open(d).unwrap();
            // A block device's size: its end, by seeking.
            let size = std::io::Seek::seek(&mut &f, std::io::SeekFrom::End(0)).unwrap();
            let (off, bytes) = md_superblock(version, size);
            f.write_all_at(&bytes, off).unwrap();
            f.sync_all().unwrap();
            drop(f);
            sh("true".into())
        });
    }
}
