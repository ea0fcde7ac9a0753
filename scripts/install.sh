#!/usr/bin/env bash
# Builds the release binaries and installs them with their man pages and shell completions.
# Run with --help for the options. Exit codes: 0 installed, 1 failure, 2 usage error.
set -euo pipefail

# The installed programs, and the packages that build them (plus docgen, which writes the
# man pages and completions from their clap definitions: docgen/src/lib.rs, PROGRAMS).
BINS=(minfs minfs-bench minfs-cannyls hddsim)
PACKAGES=(minfs bencher-workloads cannyls-adapter hddsim docgen)

usage() {
  cat <<'EOF'
Usage: scripts/install.sh [--prefix DIR] [--destdir DIR] [--bin-dir DIR]

Builds minfs, minfs-bench, minfs-cannyls and hddsim (cargo build --release) and installs:
  PREFIX/bin/                                    minfs, minfs-bench, minfs-cannyls, hddsim
  PREFIX/share/man/man8/, man1/                  minfs(8), minfs-SUBCOMMAND(8),
                                                 minfs-cannyls(8), minfs-cannyls-SUBCOMMAND(8),
                                                 minfs-bench(1), minfs-bench-SUBCOMMAND(1),
                                                 hddsim(1), hddsim-SUBCOMMAND(1)
  PREFIX/share/hddsim/profiles/                  the drive profiles (hddsim, minfs-bench
                                                 hdd-replay; also built into the programs)
  PREFIX/share/bash-completion/completions/      bash completions
  PREFIX/share/zsh/site-functions/               zsh completions
  PREFIX/share/fish/vendor_completions.d/        fish completions
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
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --prefix|--destdir|--bin-dir)
      [ $# -ge 2 ] && [ -n "$2" ] || die_usage "$1 needs a directory"
      case "$1" in
        --prefix) prefix=$2 ;;
        --destdir) destdir=$2 ;;
        --bin-dir) bin_dir=$2 ;;
      esac
      shift 2 ;;
    --prefix=*|--destdir=*|--bin-dir=*)
      value=${1#*=}
      [ -n "$value" ] || die_usage "${1%%=*} needs a directory"
      case "$1" in
        --prefix=*) prefix=$value ;;
        --destdir=*) destdir=$value ;;
        --bin-dir=*) bin_dir=$value ;;
      esac
      shift ;;
    *) die_usage "unknown argument '$1'" ;;
  esac
done
case "$prefix" in
  /*) ;;
  *) die_usage "--prefix must be an absolute path, not '$prefix'" ;;
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
echo "install.sh: $count files installed under $root"
# /usr and /usr/local are on man's default search path; elsewhere say how to reach the pages.
# (man-db also finds PREFIX/share/man by itself once PREFIX/bin is on PATH.)
case "$prefix" in
  /usr|/usr/|/usr/local|/usr/local/) ;;
  *)
    echo "install.sh: the man pages are in $prefix/share/man: put $prefix/bin on PATH, or"
    echo "  export MANPATH=\"$prefix/share/man:\$MANPATH\"   (a trailing ':' keeps man's default path)"
    echo "  or read one with: man -M $prefix/share/man minfs" ;;
esac
