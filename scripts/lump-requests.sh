#!/usr/bin/env bash
# How many device requests a Cannyls operation costs, in-process and through `minfs mount`:
# `minfs-bench run` of WORKLOAD on a loop device (512-byte sectors, --direct-io=on) for each
# target and each BIN_DIR (a directory holding `minfs` and `minfs-bench`, e.g. main's build and
# a branch's), alternated round by round, counting the reads and writes the loop device
# completed during each run (/sys/block/loopN/stat, fields 1 and 5).
#
# Prints one line per run, then per target and BIN_DIR the median reads and writes per run,
# per get and per put, and the median total time with its ratio to the first BIN_DIR's. The
# request counts do not depend on the machine's load; the times do (say how loaded it was).
#
# Targets (as scripts/compare.sh makes them):
#   minfs       MinfsNvm in-process on the loop device (`minfs:DEV`, block size 4096)
#   ext4        Cannyls' FileNvm on a file of ext4 (no journal) on the loop device
#   raw         FileNvm on the bare loop device
#   minfs-fuse  FileNvm on a preallocated file of `minfs mount` (that BIN_DIR's minfs)
#   memory      MemoryNvm, no device (0 requests): what the lump buffers cost the CPU
#
#   scripts/lump-requests.sh [--rounds N] [--scale S] [--workload FILE] [--targets LIST] BIN_DIR...
#
# As root (a loop device, mkfs, mount). Everything it makes (image, loop device, mounts) is
# under a fresh directory in /var/tmp and removed at exit, whatever happens.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
rounds=3
scale=0.02
workload=$repo/bencher-workloads/workloads/rand-mixed-1m.wl
targets=minfs,ext4,raw,minfs-fuse
usage() { sed -n 's/^#   \(scripts\/lump-requests.sh .*\)/usage: \1/p' "$0" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) rounds=${2:?}; shift 2 ;;
    --scale) scale=${2:?}; shift 2 ;;
    --workload) workload=$(realpath "${2:?}"); shift 2 ;;
    --targets) targets=${2:?}; shift 2 ;;
    -h|--help) usage ;;
    -*) echo "lump-requests.sh: unknown option $1" >&2; usage ;;
    *) break ;;
  esac
done
[ $# -ge 1 ] || usage
bins=()
for b in "$@"; do
  for exe in minfs minfs-bench; do
    [ -x "$b/$exe" ] || { echo "lump-requests.sh: no $exe in $b" >&2; exit 2; }
  done
  bins+=("$(realpath "$b")")
done
IFS=, read -r -a target_list <<<"$targets"
for t in "${target_list[@]}"; do
  case $t in minfs|ext4|raw|minfs-fuse|memory) ;; *) echo "lump-requests.sh: unknown target $t" >&2; exit 2 ;; esac
done
[ "$(id -u)" = 0 ] || { echo "lump-requests.sh: needs root (loop devices, mkfs, mount)" >&2; exit 1; }
command -v python3 >/dev/null || { echo "lump-requests.sh: needs python3 (reads the JSON reports)" >&2; exit 1; }

work=$(mktemp -d /var/tmp/lump-requests.XXXXXX)
loop=
fuse_bin=
cleanup() {
  if mountpoint -q "$work/mnt"; then
    if [ -n "$fuse_bin" ]; then "$fuse_bin/minfs" umount "$work/mnt" >/dev/null || umount -l "$work/mnt"
    else umount "$work/mnt" || umount -l "$work/mnt"; fi
  fi
  [ -n "$loop" ] && losetup -d "$loop"
  rm -rf "$work"
}
trap cleanup EXIT INT TERM
mkdir "$work/mnt"
truncate -s 3G "$work/img"
loop=$(losetup --find --show --direct-io=on --sector-size 512 "$work/img")
# Allocate the image on the host, so that no run pays for holes being filled (dd stops at the
# end of the device).
dd if=/dev/zero of="$loop" bs=4M oflag=direct status=none 2>/dev/null || true
stat_file=/sys/block/${loop#/dev/}/stat

# one TARGET BIN_DIR: prepare the device, run, print "TARGET BIN seconds puts gets reads writes".
one() {
  local t=$1 bin=$2 be extra=() io0 io1
  case $t in
    minfs) "$bin/minfs" mkfs -f -L lumps "$loop" >/dev/null; be=minfs:$loop ;;
    ext4)
      mkfs.ext4 -F -q -O ^has_journal -E lazy_itable_init=0,lazy_journal_init=0,nodiscard "$loop"
      mount "$loop" "$work/mnt"; be=file:$work/mnt/c.lusf ;;
    raw) wipefs -a -q "$loop"; be=raw:$loop; extra=(--force) ;;
    memory) be=memory ;;
    minfs-fuse)
      "$bin/minfs" mkfs -f -L lumps "$loop" >/dev/null
      "$bin/minfs" mount "$loop" "$work/mnt" >/dev/null; fuse_bin=$bin
      truncate -s 2G "$work/mnt/c.lusf"; be=existing-file:$work/mnt/c.lusf ;;
  esac
  io0=$(awk '{print $1, $5}' "$stat_file")
  "$bin/minfs-bench" run --workload "$workload" --scale "$scale" --backend "$be" "${extra[@]}" \
    --json "$work/r.json" --no-progress >"$work/run.log" 2>&1 ||
    { echo "lump-requests.sh: $t with $bin failed:" >&2; cat "$work/run.log" >&2; exit 1; }
  io1=$(awk '{print $1, $5}' "$stat_file")
  case $t in
    ext4) umount "$work/mnt" ;;
    minfs-fuse) "$bin/minfs" umount "$work/mnt" >/dev/null; fuse_bin= ;;
  esac
  python3 - "$work/r.json" "$t" "$bin" "$io0 $io1" <<'P'
import json, sys
d = json.load(open(sys.argv[1]))
n = {}
for k in d['kinds']:
    n[k['kind'][:3]] = n.get(k['kind'][:3], 0) + k['count']
r0, w0, r1, w1 = map(int, sys.argv[4].split())
print(sys.argv[2], sys.argv[3], f"{d['total_elapsed_ns'] / 1e9:.3f}", n.get('Put', 0), n.get('Get', 0),
      r1 - r0, w1 - w0)
P
}

echo "lump-requests.sh: $(basename "$workload") at scale $scale, $rounds rounds, targets $targets, loop device $loop; load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "target bin seconds puts gets device_reads device_writes"
out=$work/runs.txt
for _ in $(seq "$rounds"); do
  for t in "${target_list[@]}"; do
    for b in "${bins[@]}"; do one "$t" "$b"; done
  done
done | tee "$out"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$out" "${bins[@]}" <<'P'
import collections, statistics as st, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    t, b, secs, puts, gets, reads, writes = line.split()
    runs[(t, b)].append((float(secs), int(puts), int(gets), int(reads), int(writes)))
bins = sys.argv[2:]
print()
print("| target | bin | reads/run | writes/run | reads/get | writes/put | median time | time ratio to the first bin |")
print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
for t in dict.fromkeys(k[0] for k in runs):
    base = st.median(r[0] for r in runs[(t, bins[0])])
    for b in bins:
        r = runs[(t, b)]
        med = lambda i: st.median(x[i] for x in r)
        per = lambda i, n: f"{med(i) / med(n):.2f}" if med(n) else "–"
        print(f"| {t} | {b} | {med(3):.0f} | {med(4):.0f} | {per(3, 2)} | {per(4, 1)} | "
              f"{med(0):.3f} s | {med(0) / base:.3f} |")
P
