//! Mount options (`minfs mount -o`, `mount.minfs -o`): the ones minfs honours, the ones
//! mount(8), systemd and mount.fuse(8) put there that it accepts without effect, and an error
//! naming any other.

use super::MountConfig;

/// Options that change the mount.
pub const HONOURED: [&str; 10] = [
    "ro",
    "rw",
    "noexec",
    "exec",
    "noatime",
    "atime",
    "sync",
    "async",
    "dirsync",
    "allow_other",
];

/// Options accepted without effect, and why. Matched whole, or as a prefix where they end in
/// `-` or `=`.
pub const ACCEPTED: [(&str, &str); 30] = [
    ("defaults", FOR_MOUNT),
    ("auto", FOR_MOUNT),
    ("noauto", FOR_MOUNT),
    ("nofail", FOR_MOUNT),
    ("_netdev", FOR_MOUNT),
    ("user", FOR_MOUNT),
    ("user=", FOR_MOUNT),
    ("nouser", FOR_MOUNT),
    ("users", FOR_MOUNT),
    ("nousers", FOR_MOUNT),
    ("owner", FOR_MOUNT),
    ("noowner", FOR_MOUNT),
    ("group", FOR_MOUNT),
    ("nogroup", FOR_MOUNT),
    ("x-", FOR_MOUNT),
    ("X-", FOR_MOUNT),
    ("comment=", FOR_MOUNT),
    ("dev", ALWAYS_NODEV),
    ("nodev", ALWAYS_NODEV),
    ("suid", ALWAYS_NODEV),
    ("nosuid", ALWAYS_NODEV),
    ("default_permissions", ALWAYS_NODEV),
    ("relatime", NO_ATIME),
    ("norelatime", NO_ATIME),
    ("strictatime", NO_ATIME),
    ("nostrictatime", NO_ATIME),
    ("diratime", NO_ATIME),
    ("nodiratime", NO_ATIME),
    ("lazytime", NO_ATIME),
    ("nolazytime", NO_ATIME),
];

const FOR_MOUNT: &str = "for mount(8), fstab or systemd, not the filesystem";
const ALWAYS_NODEV: &str = "a minfs mount is always nodev, nosuid and default_permissions \
    (its files are regular files of mode 0644)";
const NO_ATIME: &str = "minfs keeps no access times (times live in memory only)";

/// An option minfs does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown mount option {option:?}: minfs honours {}, and accepts without effect mount(8)'s \
     and systemd's (defaults, [no]auto, nofail, _netdev, [no]user[s], [no]owner, [no]group, \
     x-*, X-*, comment=), [no]dev, [no]suid, default_permissions and the access-time ones \
     ([no]relatime, [no]strictatime, [no]diratime, [no]lazytime)",
    HONOURED.join(", ")
)]
pub struct UnknownOption {
    /// The option, as given.
    pub option: String,
}

/// Why `option` is accepted without effect, or `None` when it is not one of [`ACCEPTED`].
pub fn accepted_without_effect(option: &str) -> Option<&'static str> {
    ACCEPTED.iter().find_map(|&(name, why)| {
        let matches = if name.ends_with('-') || name.ends_with('=') {
            option.starts_with(name)
        } else {
            option == name
        };
        matches.then_some(why)
    })
}

/// The options in `lists` (each comma-separated), in order, applied to `cfg`: later ones win
/// (`ro,rw` is read-write). An unknown option is an error, or with `sloppy` (mount -s)
/// ignored; returns the options that had no effect.
pub fn apply(
    cfg: &mut MountConfig,
    lists: &[String],
    sloppy: bool,
) -> Result<Vec<String>, UnknownOption> {
    let mut ignored = Vec::new();
    for o in lists.iter().flat_map(|s| s.split(',')) {
        match o {
            "" => {}
            "ro" => cfg.read_only = true,
            "rw" => cfg.read_only = false,
            "noexec" => cfg.noexec = true,
            "exec" => cfg.noexec = false,
            "noatime" => cfg.noatime = true,
            "atime" => cfg.noatime = false,
            "sync" => cfg.sync = true,
            "async" => cfg.sync = false,
            "dirsync" => cfg.dirsync = true,
            "allow_other" => cfg.allow_other = true,
            o if accepted_without_effect(o).is_some() || sloppy => ignored.push(o.to_string()),
            o => {
                return Err(UnknownOption {
                    option: o.to_string(),
                })
            }
        }
    }
    Ok(ignored)
}

/// Checks a `-o` value for clap: every option known.
pub fn check(s: &str) -> Result<String, String> {
    apply(&mut MountConfig::default(), &[s.to_string()], false)
        .map(|_| s.to_string())
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn honoured_ignored_and_unknown() {
        let mut cfg = MountConfig::default();
        let ignored = apply(
            &mut cfg,
            &[
                "defaults,noauto,nofail,_netdev,x-systemd.automount,ro".into(),
                "noatime,dev,suid,relatime,noexec,comment=x,user=alice".into(),
            ],
            false,
        )
        .unwrap();
        assert!(cfg.read_only && cfg.noatime && cfg.noexec && !cfg.sync);
        assert_eq!(ignored.len(), 10, "{ignored:?}");
        apply(
            &mut cfg,
            &["rw,exec,sync,dirsync,allow_other".into()],
            false,
        )
        .unwrap();
        assert!(!cfg.read_only && !cfg.noexec && cfg.sync && cfg.dirsync && cfg.allow_other);

        let e = apply(&mut cfg, &["rw,frobnicate,ro".into()], false).unwrap_err();
        assert_eq!(e.option, "frobnicate");
        let text = e.to_string();
        assert!(text.contains("\"frobnicate\""), "{text}");
        assert!(text.contains("noatime"), "{text}");
        // Nothing after the unknown option was applied (the caller stops there anyway).
        assert!(!cfg.read_only);
        // Sloppy: ignored, and said so.
        let ignored = apply(&mut cfg, &["frobnicate,ro".into()], true).unwrap();
        assert_eq!(ignored, ["frobnicate"]);
        assert!(cfg.read_only);
        // A prefix is not a match: "x" alone, "users2", "comment" without "=".
        for bad in ["x", "users2", "comment", "fsname=a", "subtype=b", "loop"] {
            assert!(check(bad).is_err(), "{bad}");
        }
    }
}
