#!/usr/bin/env bash
# Peak memory (VmHWM) of `hddsim emulate` on the whole drive (a sparse image of the profile's
# capacity) against a 1 GiB image, under the same I/O: the emulator keeps no per-sector state,
# so its memory should not grow with the drive.
#
#   scripts/emulator-memory.sh [--bin-dir DIR] [--work DIR] [--profile NAME]
#
# Each variant: `hddsim emulate --clock virtual` (replies at once, so the I/O runs at host
# speed), a loop device (--direct-io=on) over its file, mkfs.ext4 (defaults, no journal),
# mount, 256 MiB written with dd (oflag=direct,dsync: each write flushed, so the emulator's
# write-behind buffers, up to 256 MiB whatever the drive's size, stay small) and read back,
# umount, then the server's VmHWM from /proc/PID/status. Four runs of each, in the order
# whole, 1 GiB, 1 GiB, whole (ABBA, twice); prints each run and the medians' ratio. Needs root and /dev/fuse. Exit codes: 0 done, 1 a step
# failed, 2 usage error.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=lib/emulator.sh
source "$repo/scripts/lib/emulator.sh"
prog=emulator-memory.sh
bin_dir=""
work=/var/tmp/minfs-emulator-memory
profile=st1000dm003
while [ $# -gt 0 ]; do
  case "$1" in
    --bin-dir) bin_dir=${2:?--bin-dir needs a value}; shift 2 ;;
    --work) work=${2:?--work needs a value}; shift 2 ;;
    --profile) profile=${2:?--profile needs a value}; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "$prog: error: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" = 0 ] || { echo "$prog: error: must run as root (loop devices, mount)" >&2; exit 2; }
if [ -z "$bin_dir" ]; then
  (cd "$repo" && cargo build --release -q -p hddsim)
  bin_dir=$(cd "$repo" && cargo metadata --format-version 1 --no-deps \
    | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')/release
fi
hddsim=$bin_dir/hddsim
[ -x "$hddsim" ] || { echo "$prog: error: no hddsim at $hddsim" >&2; exit 1; }

mkdir -p "$work"
dir=$(mktemp -d "$work/run.XXXXXX")
emu="" loop="" mnt=""
cleanup() {
  set +e
  [ -n "$mnt" ] && mountpoint -q "$mnt" && umount "$mnt"
  [ -n "$loop" ] && losetup -d "$loop"
  [ -n "$emu" ] && stop_emulator "$hddsim" "$emu"
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# one VARIANT: prints the emulator's peak RSS in KiB.
one() {
  local variant=$1 img=$dir/img pid hwm
  rm -f "$img"
  emu=$(mktemp -d "$dir/emu.XXXXXX")
  if [ "$variant" = whole ]; then
    "$hddsim" emulate --profile "$profile" --clock virtual --create-sparse --backing "$img" "$emu" >/dev/null
  else
    truncate -s 1G "$img"
    "$hddsim" emulate --profile "$profile" --clock virtual --backing "$img" "$emu" >/dev/null
  fi
  pid=$(pgrep -f -n -- "--backing $img" | sed -n 1p)
  loop=$(losetup --find --show --direct-io=on "$emu/disk")
  mkfs.ext4 -F -q -O ^has_journal "$loop" >/dev/null
  mnt=$(mktemp -d "$dir/mnt.XXXXXX")
  mount "$loop" "$mnt"
  dd if=/dev/urandom of="$dir/data" bs=1M count=256 status=none
  dd if="$dir/data" of="$mnt/f" bs=1M oflag=direct,dsync status=none
  dd if="$mnt/f" of=/dev/null bs=1M iflag=direct status=none
  rm -f "$dir/data"
  umount "$mnt"; rmdir "$mnt"; mnt=""
  losetup -d "$loop"; loop=""
  hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$pid/status")
  stop_emulator "$hddsim" "$emu" || true
  emu=""
  rm -f "$img"
  echo "$hwm"
}

declare -A peaks=([whole]="" [1g]="")
for v in whole 1g 1g whole whole 1g 1g whole; do
  kib=$(one "$v")
  echo "$prog: $v: peak RSS $kib KiB" >&2
  peaks[$v]+="$kib "
done
med() { tr ' ' '\n' | grep . | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
w=$(med <<<"${peaks[whole]}")
g=$(med <<<"${peaks[1g]}")
awk -v w="$w" -v g="$g" -v p="$profile" 'BEGIN {
  printf "peak RSS, median of 4: whole %s drive %d KiB, 1 GiB image %d KiB; whole / 1 GiB = %.2f\n", p, w, g, w / g }'
