#!/usr/bin/env bash
# A short tour of minfs on an image file: mkfs, create, write, cat, ls, info, fsck.
# Usage: scripts/demo.sh [WORKDIR]   (default: ./work-tmp/demo; nothing outside it is touched)
set -euo pipefail
cd "$(dirname "$0")/.."
work=${1:-work-tmp/demo}
mkdir -p "$work"
img="$work/disk.img"
rm -f "$img"

cargo build --release -q -p minfs
minfs=target/release/minfs
run() { echo "+ minfs $*"; "$minfs" "$@"; echo; }

run mkfs --size 1G -L demo "$img"
run create "$img" cannyls.lusf --size 512M
run create "$img" notes --size 4K
echo "+ echo 'hello from minfs' | minfs write $img notes"
echo 'hello from minfs' | "$minfs" write "$img" notes; echo
run cat "$img" notes
run ls -l "$img"
run info "$img"
run fsck -n "$img"
echo "demo image left at $img"
