#!/usr/bin/env bash
# Builds the release binaries and installs them with their man pages and shell completions.
# Run with --help for the options. Exit codes: 0 installed, 1 failure, 2 usage error.
set -euo pipefail

# The installed programs, and the packages that build them (plus docgen, which writes the
# man pages and completions from their clap definitions: docgen/src/lib.rs, PROGRAMS).
BINS=(minfs minfs-bench minfs-cannyls hddsim)
PACKAGES=(minfs bencher-workloads cannyls-adapter hddsim docgen)
# The helpers mkfs(8), fsck(8), mount(8) and umount(8) run for type minfs (and fuse.minfs):
# names of the minfs binary (minfs/src/cli/helpers.rs, HELPERS), installed as links to it.
HELPERS=(mkfs.minfs fsck.minfs fsck.fuse.minfs mount.minfs mount.fuse.minfs umount.fuse.minfs)

usage() {
  cat <<'EOF'
Usage: scripts/install.sh [--prefix DIR] [--destdir DIR] [--bin-dir DIR] [--sbin-dir DIR]

Builds minfs, minfs-bench, minfs-cannyls and hddsim (cargo build --release) and installs:
  PREFIX/bin/                                    minfs, minfs-bench, minfs-cannyls, hddsim
  SBIN/                                          mkfs.minfs, fsck.minfs, fsck.fuse.minfs,
                                                 mount.minfs, mount.fuse.minfs,
                                                 umount.fuse.minfs: links to PREFIX/bin/minfs,
                                                 the helpers mkfs(8), fsck(8), mount(8) and
                                                 umount(8) run for type minfs (docs/SYSTEM.md)
  PREFIX/share/man/man8/, man1/                  minfs(8), minfs-SUBCOMMAND(8),
                                                 minfs-cannyls(8), minfs-cannyls-SUBCOMMAND(8),
                                                 minfs-bench(1), minfs-bench-SUBCOMMAND(1),
                                                 hddsim(1), hddsim-SUBCOMMAND(1)
  PREFIX/share/hddsim/profiles/                  the drive profiles (hddsim, minfs-bench
                                                 hdd-replay; also built into the programs)
  PREFIX/share/minfs-bench/workloads/            the shipped workloads (*.wl)
  PREFIX/share/bash-completion/completions/      bash completions
  PREFIX/share/zsh/site-functions/               zsh completions
  PREFIX/share/fish/vendor_completions.d/        fish completions
  PREFIX/lib/udev/rules.d/64-minfs.rules         the udev rule that makes /dev/disk/by-uuid
                                                 and by-label links for minfs block devices
                                                 (running PREFIX/bin/minfs probe)
and prints every file it installed, then how to reach the man pages when PREFIX/share/man is
not on man's search path.

Options:
  --prefix DIR    where to install, an absolute path (default /usr/local)
  --destdir DIR   stage the files under DIR/PREFIX instead of PREFIX (for packaging;
                  the DESTDIR environment variable does the same)
  --bin-dir DIR   install the binaries already built in DIR (minfs, minfs-bench,
                  minfs-cannyls, hddsim and minfs-docgen) instead of building them, e.g.
                  target/release after cargo build --release -p minfs -p bencher-workloads
                  -p cannyls-adapter -p hddsim -p docgen
  --sbin-dir DIR  where the helper links go, an absolute path (SBIN; default /sbin for
                  --prefix /usr or /usr/local: mount(8) and umount(8) look for helpers in
                  /sbin, /sbin/fs.d and /sbin/fs only; else PREFIX/sbin, which mount(8) does
                  not search). A helper already there that is not a link to PREFIX/bin/minfs
                  (the Debian package's) is refused, never replaced.
  -h, --help      this help

Exit codes: 0 installed, 1 failure, 2 usage error.
EOF
}

die_usage() {
  echo "install.sh: $*" >&2
  echo "Try 'scripts/install.sh --help'." >&2
  exit 2
}

prefix=/usr/local
destdir=${DESTDIR:-}
bin_dir=
sbin_dir=
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --prefix|--destdir|--bin-dir|--sbin-dir)
      [ $# -ge 2 ] && [ -n "$2" ] || die_usage "$1 needs a directory"
      case "$1" in
        --prefix) prefix=$2 ;;
        --destdir) destdir=$2 ;;
        --bin-dir) bin_dir=$2 ;;
        --sbin-dir) sbin_dir=$2 ;;
      esac
      shift 2 ;;
    --prefix=*|--destdir=*|--bin-dir=*|--sbin-dir=*)
      value=${1#*=}
      [ -n "$value" ] || die_usage "${1%%=*} needs a directory"
      case "$1" in
        --prefix=*) prefix=$value ;;
        --destdir=*) destdir=$value ;;
        --bin-dir=*) bin_dir=$value ;;
        --sbin-dir=*) sbin_dir=$value ;;
      esac
      shift ;;
    *) die_usage "unknown argument '$1'" ;;
  esac
done
case "$prefix" in
  /*) ;;
  *) die_usage "--prefix must be an absolute path, not '$prefix'" ;;
esac
prefix=${prefix%/}
[ -n "$prefix" ] || prefix=/
if [ -z "$sbin_dir" ]; then
  case "$prefix" in
    /usr|/usr/local) sbin_dir=/sbin ;;
    *) sbin_dir=$prefix/sbin ;;
  esac
fi
case "$sbin_dir" in
  /*) ;;
  *) die_usage "--sbin-dir must be an absolute path, not '$sbin_dir'" ;;
esac
if [ -n "$bin_dir" ] && [ ! -d "$bin_dir" ]; then
  die_usage "--bin-dir '$bin_dir' is not a directory"
fi

cd "$(dirname "$0")/.."

if [ -z "$bin_dir" ]; then
  package_args=()
  for p in "${PACKAGES[@]}"; do package_args+=(-p "$p"); done
  if ! command -v cargo >/dev/null; then
    echo "install.sh: cargo is not on PATH: build first (cargo build --release ${package_args[*]}) and install with --bin-dir target/release" >&2
    exit 1
  fi
  echo "install.sh: cargo build --release ${package_args[*]}"
  cargo build --release --bins "${package_args[@]}"
  target_dir=$(cargo metadata --format-version 1 --no-deps |
    sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
  bin_dir="${target_dir:-target}/release"
fi
for b in "${BINS[@]}" minfs-docgen; do
  if [ ! -x "$bin_dir/$b" ]; then
    echo "install.sh: no executable $bin_dir/$b" >&2
    exit 1
  fi
done

stage=$(mktemp -d "${TMPDIR:-/tmp}/minfs-install.XXXXXX")
trap 'rm -rf "$stage"' EXIT
"$bin_dir/minfs-docgen" "$stage" >/dev/null

root="${destdir%/}$prefix"
sbin_root="${destdir%/}$sbin_dir"
# The helper links first: refuse, before anything is installed, to replace a helper that is
# not ours (the Debian package's, or another program's).
for h in "${HELPERS[@]}"; do
  link="$sbin_root/$h"
  if [ -e "$link" ] || [ -L "$link" ]; then
    if [ "$(readlink "$link" || true)" != "$prefix/bin/minfs" ]; then
      echo "install.sh: $link exists and is not a link to $prefix/bin/minfs (installed from elsewhere, e.g. the Debian package: dpkg -r minfs); not replacing it" >&2
      exit 1
    fi
  fi
done
count=0
for b in "${BINS[@]}"; do
  install -D -m 0755 "$bin_dir/$b" "$root/bin/$b"
  echo "installed $root/bin/$b"
  count=$((count + 1))
done
while IFS= read -r rel; do
  install -D -m 0644 "$stage/$rel" "$root/share/$rel"
  echo "installed $root/share/$rel"
  count=$((count + 1))
done < <(cd "$stage" && find . -type f | sed 's|^\./||' | LC_ALL=C sort)
for f in hddsim/profiles/*.toml hddsim/profiles/README.md; do
  install -D -m 0644 "$f" "$root/share/$f"
  echo "installed $root/share/$f"
  count=$((count + 1))
done
for f in bencher-workloads/workloads/*.wl; do
  dest="$root/share/minfs-bench/workloads/${f##*/}"
  install -D -m 0644 "$f" "$dest"
  echo "installed $dest"
  count=$((count + 1))
done
# The udev rule, calling this PREFIX's minfs.
rules="$root/lib/udev/rules.d/64-minfs.rules"
sed "s|/usr/bin/minfs probe|$prefix/bin/minfs probe|" minfs/udev/64-minfs.rules >"$stage/64-minfs.rules"
install -D -m 0644 "$stage/64-minfs.rules" "$rules"
echo "installed $rules"
count=$((count + 1))
mkdir -p "$sbin_root"
for h in "${HELPERS[@]}"; do
  ln -sfn "$prefix/bin/minfs" "$sbin_root/$h"
  echo "installed $sbin_root/$h -> $prefix/bin/minfs"
  count=$((count + 1))
done
echo "install.sh: $count files installed under $root and $sbin_root"
case "$sbin_dir" in
  /sbin|/usr/sbin|/sbin/fs.d|/sbin/fs) ;;
  *)
    echo "install.sh: mount(8) and umount(8) look for their helpers in /sbin only: for mount -t minfs"
    echo "  and fstab lines, link them there too: ln -s $prefix/bin/minfs /sbin/mount.minfs (and umount.fuse.minfs)" ;;
esac
case "$prefix" in
  /usr|/usr/local) ;;
  *)
    echo "install.sh: udev reads rules from /etc/udev/rules.d, /usr/lib/udev/rules.d and /usr/local/lib/udev/rules.d:"
    echo "  for the /dev/disk/by-uuid and by-label links of minfs devices, copy $prefix/lib/udev/rules.d/64-minfs.rules to /etc/udev/rules.d" ;;
esac
# /usr and /usr/local are on man's default search path; elsewhere say how to reach the pages.
# (man-db also finds PREFIX/share/man by itself once PREFIX/bin is on PATH.)
case "$prefix" in
  /usr|/usr/|/usr/local|/usr/local/) ;;
  *)
    echo "install.sh: the man pages are in $prefix/share/man: put $prefix/bin on PATH, or"
    echo "  export MANPATH=\"$prefix/share/man:\$MANPATH\"   (a trailing ':' keeps man's default path)"
    echo "  or read one with: man -M $prefix/share/man minfs" ;;
esac
