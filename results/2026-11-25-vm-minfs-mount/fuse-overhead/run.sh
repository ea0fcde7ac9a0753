#!/bin/bash
# Where the time of Cannyls through `minfs mount` goes on a loop device: alternated runs of
# rand-mixed-1m (scale 0.05) with MinfsNvm in-process, FileNvm on a growing file on the mount,
# FileNvm on a preallocated file on the mount, (when NEW_BIN_DIR holds a second minfs build,
# e.g. one with the patches here) FileNvm on a growing file on that build's mount, and (when
# NEW_BENCH_DIR holds a second minfs-bench build) MinfsNvm in-process with that client. Prints
# one line per run (total seconds, put/get p50 µs, the server's CPU ticks) and the median
# ratios to the first.
#
#   sudo results/2026-11-25-vm-minfs-mount/fuse-overhead/run.sh BIN_DIR [ROUNDS] [NEW_BIN_DIR|-] [NEW_BENCH_DIR]
set -euo pipefail
bin=$(realpath "${1:?usage: run.sh BIN_DIR [ROUNDS] [NEW_BIN_DIR|-] [NEW_BENCH_DIR]}")
rounds=${2:-8}
new=${3:-}
[ "$new" = - ] && new=
new=${new:+$(realpath "$new")}
newbench=${4:+$(realpath "$4")}
repo=$(cd "$(dirname "$0")/../../.." && pwd)
wl=$repo/bencher-workloads/workloads/rand-mixed-1m.wl
work=$(mktemp -d /var/tmp/fuse-overhead.XXXXXX)
loop=
cleanup() {
  mountpoint -q "$work/mnt" && { "$bin/minfs" umount "$work/mnt" >/dev/null || umount -l "$work/mnt"; }
  [ -n "$loop" ] && losetup -d "$loop"
  rm -rf "$work"
}
trap cleanup EXIT INT TERM
mkdir "$work/mnt"
truncate -s 4G "$work/img"
loop=$(losetup --find --show --direct-io=on --sector-size 512 "$work/img")
# Allocate the image on the host (dd stops at the end of the device).
dd if=/dev/zero of="$loop" bs=4M oflag=direct status=none 2>/dev/null || true

one() { # name minfs-bin backend-kind [minfs-bench-bin]
  local name=$1 mb=$2 kind=$3 bench=${4:-$bin/minfs-bench} be pid= c0=0 c1=0
  "$bin/minfs" mkfs -f -L fo "$loop" >/dev/null
  case $kind in
    inproc) be=minfs:$loop ;;
    grow|pre)
      "$mb/minfs" mount "$loop" "$work/mnt" >/dev/null
      pid=$(pgrep -o -f "minfs mount --daemon-child -- $loop")
      be=file:$work/mnt/c.lusf
      [ "$kind" = pre ] && { truncate -s 2G "$work/mnt/c.lusf"; be=existing-file:$work/mnt/c.lusf; } ;;
  esac
  [ -n "$pid" ] && c0=$(awk '{print $14+$15}' "/proc/$pid/stat")
  local io0 io1; io0=$(awk '{print $1, $5}' "/sys/block/${loop#/dev/}/stat")
  "$bench" run --workload "$wl" --scale 0.05 --backend "$be" --json "$work/r.json" --no-progress >/dev/null 2>&1
  [ -n "$pid" ] && c1=$(awk '{print $14+$15}' "/proc/$pid/stat")
  io1=$(awk '{print $1, $5}' "/sys/block/${loop#/dev/}/stat")
  [ -n "$pid" ] && "$mb/minfs" umount "$work/mnt" >/dev/null
  # Requests the loop device completed during the run (reads, writes): a 1 MiB buffer of
  # scattered 4 KiB pages is more segments than the loop device takes (max_segments 128), so
  # the block layer splits it.
  local ios; ios=$(echo "$io0 $io1" | awk '{print $3-$1 "/" $4-$2}')
  python3 - "$work/r.json" "$name" $((c1 - c0)) "$ios" <<'P'
import json, sys
d = json.load(open(sys.argv[1]))
p = {k['kind'][:3]: k['percentiles_ns']['50.0'] // 1000 for k in d['kinds']}
print(f"{sys.argv[2]} {d['total_elapsed_ns']/1e9:.3f} put_p50_us={p['Put']} get_p50_us={p['Get']} server_cpu_ticks={sys.argv[3]} device_reads/writes={sys.argv[4]}")
P
}

out=$work/runs.txt
for r in $(seq "$rounds"); do
  one inproc "$bin" inproc; one fuse-grow "$bin" grow; one fuse-pre "$bin" pre
  [ -n "$new" ] && one fuse-grow-new "$new" grow
  [ -n "$newbench" ] && one inproc-new "$bin" inproc "$newbench/minfs-bench"
  true
done | tee "$out"
python3 - "$out" <<'P'
import collections, statistics as s, sys
d = collections.defaultdict(list)
for l in open(sys.argv[1]):
    f = l.split(); d[f[0]].append(float(f[1]))
base = s.median(d['inproc'])
for k, v in d.items():
    pairs = [x / y for x, y in zip(v, d['inproc'])]
    print(f"{k}: median {s.median(v):.3f} s, ratio of medians {s.median(v)/base:.3f}, per-round ratio median {s.median(pairs):.3f} ({min(pairs):.2f}-{max(pairs):.2f})")
P
