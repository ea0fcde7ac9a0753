#!/usr/bin/env bash
# A short tour of minfs on an image file, no root needed: mkfs, create, write, cat, ls, info,
# fsck. It builds the `minfs` binary (release) first, which takes most of its minute.
#
# Usage: scripts/demo.sh [--bin-dir DIR] [WORKDIR]
#   WORKDIR     where the image goes (default: work-tmp/demo of this checkout, which git
#               ignores); nothing outside it is written but cargo's target/
#   --bin-dir   use DIR/minfs instead of building it
# Exit status: 0 the tour ran; 1 a step failed; 2 usage error.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { sed -n '5,9s/^# \{0,1\}//p' "$0"; }
bin_dir=""
work=""
while [ $# -gt 0 ]; do
  case $1 in
    --bin-dir) [ $# -ge 2 ] || { echo "demo.sh: --bin-dir needs a directory" >&2; exit 2; }
      bin_dir=$2; shift 2 ;;
    --bin-dir=*) bin_dir=${1#--bin-dir=}; shift ;;
    -h|--help) usage; exit 0 ;;
    -*) echo "demo.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
    *) [ -z "$work" ] || { echo "demo.sh: one WORKDIR only (got $work and $1)" >&2; exit 2; }
      work=$1; shift ;;
  esac
done
work=${work:-work-tmp/demo}

if [ -n "$bin_dir" ]; then
  minfs=$bin_dir/minfs
  [ -x "$minfs" ] || { echo "demo.sh: no minfs binary in $bin_dir" >&2; exit 2; }
else
  command -v cargo >/dev/null || {
    echo "demo.sh: cargo not found: install Rust (https://rustup.rs), or give --bin-dir" >&2
    exit 1
  }
  echo "+ cargo build --release -p minfs"
  cargo build --release -q -p minfs
  minfs=target/release/minfs
fi

mkdir -p "$work"
img="$work/disk.img"
rm -f "$img"
run() { echo "+ minfs $*"; "$minfs" "$@"; echo; }

run mkfs --size 1G -L demo "$img"
run create "$img" cannyls.lusf --size 512M
run create "$img" notes --size 4K
echo "+ echo 'hello from minfs' | minfs write $img notes"
echo 'hello from minfs' | "$minfs" write "$img" notes
echo
echo "+ minfs cat $img notes | tr -d '\\0'    # a 4 KiB file: the rest of it is zeros"
"$minfs" cat "$img" notes | tr -d '\0'
echo
run ls -l "$img"
run info "$img"
run fsck -n "$img"
echo "demo image left at $img (rm it, or run the demo again to start over)"
