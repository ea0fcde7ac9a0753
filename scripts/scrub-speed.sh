#!/usr/bin/env bash
# How fast `minfs scrub` reads, against the device's own sequential O_DIRECT read rate over
# the same byte ranges, measured side by side (docs/RELIABILITY.md, "Scrubbing").
#
# Makes an image in /var/tmp filled with random bytes, a loop device over it (direct I/O),
# minfs on it with files in several extents; then, ROUNDS times alternately: dd reads every
# extent `minfs scrub` reads (both metadata slots and every file's extents, in device order,
# iflag=direct, 4 MiB blocks), and `minfs scrub` reads them (unthrottled, no progress bar).
# Prints each round's two rates, the medians and the ratio scrub / dd. With --emulated the
# same on a loop device over `hddsim emulate` (the ST1000DM003 in real time), smaller and
# fewer rounds by default. Needs root (loop devices; FUSE for --emulated).
#
# Usage: scripts/scrub-speed.sh [--size MIB] [--rounds N] [--emulated]
#   --size MIB   the image (default 2048; --emulated: 512)
#   --rounds N   alternations (default 5; --emulated: 3)
#   --emulated   on the emulated drive instead of a plain loop device
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=lib/emulator.sh
. scripts/lib/emulator.sh

size=""
rounds=""
emulated=0
while [ $# -gt 0 ]; do
  case "$1" in
    --size) size=${2:?--size needs MiB}; shift 2 ;;
    --rounds) rounds=${2:?--rounds needs a number}; shift 2 ;;
    --emulated) emulated=1; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
    *) echo "scrub-speed.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
if [ "$emulated" = 1 ]; then size=${size:-512}; rounds=${rounds:-3}; else size=${size:-2048}; rounds=${rounds:-5}; fi
case "$size$rounds" in *[!0-9]*) echo "scrub-speed.sh: --size and --rounds take whole numbers" >&2; exit 2 ;; esac
[ "$(id -u)" = 0 ] || { echo "scrub-speed.sh: needs root (loop devices)" >&2; exit 1; }
command -v jq >/dev/null || { echo "scrub-speed.sh: needs jq" >&2; exit 1; }

cargo build -q --release -p minfs --bin minfs -p hddsim --bin hddsim
minfs=$PWD/target/release/minfs
hddsim=$PWD/target/release/hddsim

work=$(mktemp -d /var/tmp/scrub-speed.XXXXXX)
loopdev=""
mnt=""
cleanup() {
  [ -n "$loopdev" ] && losetup -d "$loopdev" 2>/dev/null || true
  [ -n "$mnt" ] && stop_emulator "$hddsim" "$mnt" || true
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

img=$work/disk.img
if [ "$emulated" = 1 ]; then
  truncate -s "${size}M" "$img"
  mnt=$work/mnt
  mkdir -p "$mnt"
  "$hddsim" emulate --profile st1000dm003 --backing "$img" "$mnt" >/dev/null
  target=$mnt/disk
else
  target=$img
fi
# Random bytes, so that every read reaches the media (no holes read as zeros).
dd if=/dev/urandom of="$target" bs=4M count=$((size / 4)) oflag=direct conv=notrunc status=none
loopdev=$(losetup --find --show --direct-io=on "$target")
"$minfs" mkfs "$loopdev" >/dev/null
# Files in several extents: interleaved grows.
part=$((size / 16))
for f in a b c; do "$minfs" create --size "${part}M" "$loopdev" "$f" >/dev/null; done
for f in a b c; do "$minfs" grow --size "$((part * 4))M" "$loopdev" "$f" >/dev/null; done

# The ranges scrub reads: the two 64 KiB slots, then every extent, in device order.
ranges=$( { echo "0 65536"; echo "65536 65536"; "$minfs" ls --json "$loopdev" |
  jq -r '.[].extents[] | "\(.offset) \(.length)"'; } | sort -n)
total=$(awk '{s += $2} END {print s}' <<<"$ranges")
echo "device: $loopdev ($([ "$emulated" = 1 ] && echo "loop over hddsim emulate st1000dm003" || echo "loop over $img")); ranges: $(wc -l <<<"$ranges"), $total bytes"

dd_pass() {
  local off len
  while read -r off len; do
    dd if="$loopdev" of=/dev/null bs=4M iflag=direct,skip_bytes,count_bytes \
      skip="$off" count="$len" status=none
  done <<<"$ranges"
}

now() { date +%s.%N; }
dd_rates=()
scrub_rates=()
for ((r = 1; r <= rounds; r++)); do
  t0=$(now); dd_pass; t1=$(now)
  dd_rate=$(awk -v b="$total" -v a="$t0" -v z="$t1" 'BEGIN {printf "%.1f", b / (z - a) / 1e6}')
  out=$("$minfs" scrub --json --no-progress "$loopdev")
  [ "$(jq -r .bytes_read <<<"$out")" = "$total" ] || { echo "scrub read $(jq .bytes_read <<<"$out") bytes, not $total" >&2; exit 1; }
  scrub_rate=$(jq -r '.rate_mb_per_s * 10 | round / 10' <<<"$out")
  echo "round $r: dd $dd_rate MB/s, scrub $scrub_rate MB/s"
  dd_rates+=("$dd_rate")
  scrub_rates+=("$scrub_rate")
done
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
md=$(median "${dd_rates[@]}")
ms=$(median "${scrub_rates[@]}")
echo "median over $rounds rounds: dd $md MB/s, scrub $ms MB/s, ratio scrub/dd $(awk -v s="$ms" -v d="$md" 'BEGIN {printf "%.3f", s / d}')"
