#!/usr/bin/env bash
# Builds the Debian package of minfs with cargo-deb (cargo install cargo-deb --locked): the
# four programs, the helpers mkfs(8), fsck(8), mount(8) and umount(8) run (links in
# /usr/sbin), man pages, completions, hddsim's profiles and minfs-bench's workloads. The
# package's contents are listed in minfs/Cargo.toml, [package.metadata.deb].
# Run with --help for the options. Exit codes: 0 built, 1 failure, 2 usage error.
set -euo pipefail

usage() {
  cat <<'USAGE'
Usage: scripts/deb.sh [--profile PROFILE] [--no-build] [--output DIR]

Builds minfs, minfs-bench, minfs-cannyls, hddsim and minfs-docgen (cargo build --profile
PROFILE), writes the man pages and completions (minfs-docgen) into
TARGET/PROFILE-DIR/minfs-share, and runs cargo deb -p minfs --no-build. Prints the path of the
.deb on the last line. Install it with dpkg -i (as root); remove it with dpkg -r minfs.

Options:
  --profile PROFILE  the cargo profile (default release; dev packages the debug build)
  --no-build         package the binaries already built for PROFILE
  --output DIR       where the .deb goes (default TARGET/debian)
  -h, --help         this help

Exit codes: 0 built, 1 failure, 2 usage error.
USAGE
}

die_usage() {
  echo "deb.sh: $*" >&2
  echo "Try 'scripts/deb.sh --help'." >&2
  exit 2
}

profile=release
build=1
output=
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --no-build) build=0; shift ;;
    --profile|--output)
      [ $# -ge 2 ] && [ -n "$2" ] || die_usage "$1 needs a value"
      case "$1" in
        --profile) profile=$2 ;;
        --output) output=$2 ;;
      esac
      shift 2 ;;
    *) die_usage "unknown argument '$1'" ;;
  esac
done

cd "$(dirname "$0")/.."
if ! cargo deb --version >/dev/null 2>&1; then
  echo "deb.sh: cargo-deb is not installed: cargo install cargo-deb --locked" >&2
  exit 1
fi
target_dir=$(cargo metadata --format-version 1 --no-deps |
  sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
target_dir=${target_dir:-target}
case "$profile" in
  dev|test) profile_dir=debug ;;
  bench) profile_dir=release ;;
  *) profile_dir=$profile ;;
esac
bins="$target_dir/$profile_dir"
if [ "$build" = 1 ]; then
  echo "deb.sh: cargo build --profile $profile"
  cargo build --profile "$profile" --bins -p minfs -p bencher-workloads -p cannyls-adapter \
    -p hddsim -p docgen
fi
for b in minfs minfs-bench minfs-cannyls hddsim minfs-docgen; do
  if [ ! -x "$bins/$b" ]; then
    echo "deb.sh: no executable $bins/$b (build it, or drop --no-build)" >&2
    exit 1
  fi
done
rm -rf "$bins/minfs-share"
"$bins/minfs-docgen" "$bins/minfs-share" >/dev/null
# Man pages compressed, as Debian policy wants (cargo-deb compresses only files it does not
# take from the target directory).
gzip -9n "$bins"/minfs-share/man/man*/*
deb_args=(-p minfs --no-build --strip --profile "$profile")
[ -n "$output" ] && deb_args+=(--output "$output")
deb=$(cargo deb "${deb_args[@]}" | tail -n 1)
if [ ! -f "$deb" ]; then
  echo "deb.sh: cargo deb made no package (it printed '$deb')" >&2
  exit 1
fi
echo "$deb"
