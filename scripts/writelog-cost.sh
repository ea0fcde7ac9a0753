#!/usr/bin/env bash
# What the write log costs: the same workload on the emulated drive (real clock) with and
# without `hddsim emulate --write-log`, alternated A B B A per round so that drift of a shared
# machine falls on both, for each target. Prints one line per run and the medians and ratio.
#
#   scripts/writelog-cost.sh --bin-dir DIR [--workload NAME:SCALE] [--targets minfs,ext4]
#                            [--rounds N] [--work DIR] [--out FILE]
#
# Default: durable-256k:0.02, minfs and ext4 (no journal), 2 rounds (4 runs per variant and
# target). --out FILE also writes the lines as TSV. Exit codes: 0 done, 1 a run failed,
# 2 usage error. Everything mounted or attached is released on exit.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=lib/emulator.sh
source "$repo/scripts/lib/emulator.sh"
prog=writelog-cost.sh
usage_error() { echo "$prog: error: $*" >&2; exit 2; }
workload=durable-256k:0.02; targets=minfs,ext4; rounds=2; work=/var/tmp; bin_dir=""; out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --bin-dir) bin_dir=$2; shift 2 ;;
    --workload) workload=$2; shift 2 ;;
    --targets) targets=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) usage_error "unknown argument '$1'" ;;
  esac
done
[ -n "$bin_dir" ] || usage_error "--bin-dir is required"
[ "$(id -u)" = 0 ] || usage_error "must run as root"
[[ $rounds =~ ^[1-9][0-9]*$ ]] || usage_error "--rounds '$rounds' is not a positive integer"
w=${workload%%:*}; scale=${workload#*:}
wf=$repo/bencher-workloads/workloads/$w.wl
[ -f "$wf" ] || usage_error "no workload $w"
d=$(mktemp -d "$work/writelog-cost.XXXXXX")
loop=""; emu=""; mnt=""
cleanup() {
  set +e
  [ -n "$mnt" ] && mountpoint -q "$mnt" && umount "$mnt"
  [ -n "$loop" ] && losetup -d "$loop"
  [ -n "$emu" ] && stop_emulator "$bin_dir/hddsim" "$emu"
  rm -rf "$d"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
cap=$("$bin_dir/minfs-bench" check --json --scale "$scale" --block-size 4096 "$wf" | sed -n 's/.*"capacity":\([0-9]*\).*/\1/p')
bytes=$(( (cap + cap * 15 / 100 + (256 << 20)) >> 20 << 20 ))
[ "$bytes" -ge $((320 << 20)) ] || bytes=$((320 << 20))

one() { # TARGET LOG(0|1) -> prints total_elapsed_ns
  local t=$1 withlog=$2 args=()
  rm -f "$d/backing.img" "$d/write.log"
  truncate -s "$bytes" "$d/backing.img"
  loop=$(losetup --find --show --direct-io=on "$d/backing.img")
  case $t in
    minfs) "$bin_dir/minfs" mkfs -f "$loop" >/dev/null ;;
    ext4) mkfs.ext4 -F -q -O ^has_journal -E lazy_itable_init=0,lazy_journal_init=0,nodiscard "$loop" ;;
    *) usage_error "target $t: only minfs and ext4" ;;
  esac
  losetup -d "$loop"; loop=""
  [ "$withlog" = 1 ] && args=(--write-log "$d/write.log")
  emu=$d/emu; mkdir -p "$emu"
  "$bin_dir/hddsim" emulate --profile st1000dm003 --backing "$d/backing.img" "${args[@]}" "$emu" >/dev/null
  loop=$(losetup --find --show --direct-io=on "$emu/disk")
  if [ "$t" = ext4 ]; then
    mnt=$d/mnt; mkdir -p "$mnt"; mount "$loop" "$mnt"; backend="file:$mnt/cannyls.lusf"
  else
    backend="minfs:$loop"
  fi
  "$bin_dir/minfs-bench" run --workload "$wf" --scale "$scale" --backend "$backend" \
    --json "$d/run.json" --no-progress >/dev/null 2>&1
  [ -n "$mnt" ] && { umount "$mnt"; mnt=""; }
  losetup -d "$loop"; loop=""
  stop_emulator "$bin_dir/hddsim" "$emu"; emu=""
  sed -n 's/.*"total_elapsed_ns": *\([0-9]*\).*/\1/p' "$d/run.json" | sed -n 1p
}

IFS=, read -r -a tl <<<"$targets"
[ -z "$out" ] || printf 'target\tround\twrite_log\ttotal_elapsed_ns\n' >"$out"
for t in "${tl[@]}"; do
  with=(); without=()
  for ((r = 1; r <= rounds; r++)); do
    for v in 0 1 1 0; do
      ns=$(one "$t" "$v")
      [ -n "$ns" ] || { echo "$prog: $t run failed" >&2; exit 1; }
      echo "$prog: $t round $r write-log=$v: $(awk -v n="$ns" 'BEGIN { printf "%.2f s", n / 1e9 }')" >&2
      [ -z "$out" ] || printf '%s\t%s\t%s\t%s\n' "$t" "$r" "$v" "$ns" >>"$out"
      if [ "$v" = 1 ]; then with+=("$ns"); else without+=("$ns"); fi
    done
  done
  med() { printf '%s\n' "$@" | sort -n | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
  mw=$(med "${with[@]}"); mo=$(med "${without[@]}")
  awk -v t="$t" -v a="$mw" -v b="$mo" -v n="${#with[@]}" 'BEGIN { printf "%s: median total elapsed with the write log %.2f s, without %.2f s (%d runs each): ratio %.3f\n", t, a / 1e9, b / 1e9, n, a / b }'
done
