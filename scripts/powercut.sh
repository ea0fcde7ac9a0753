#!/usr/bin/env bash
# Power cuts of the whole stack, every target: each workload runs once per target on the
# emulated drive (hddsim emulate, real clock, with --write-log), then crashcheck builds crash
# states from the image as prepared (mkfs done) and the write log — at a sample of the
# flushes: none / random subsets / one torn write / a ruined 512e physical sector of the
# writes in flight — recovers each state as the target's user would and checks every Cannyls
# lump against the op-log (crashcheck/src/lib.rs; docs/WRITELOG.md).
#
#   scripts/powercut.sh [OPTIONS]
#
# Options:
#   --workloads LIST  comma-separated NAME:SCALE (bencher-workloads/workloads/NAME.wl at that
#                     scale); default durable-256k:0.02,group-commit-256k:0.15,churn-sync-256k:0.3
#   --targets LIST    from: minfs minfs-512 ext4 ext4-journal xfs raw raw-4096 (default: all).
#                     ext4: no journal (as compare.sh), e2fsck -fy then mount; ext4-journal:
#                     mkfs.ext4's defaults (journal on), mount (replay); xfs: mount, xfs_repair
#                     where that fails; raw: FileNvm on the device (raw-4096 at block size 4096)
#   --points N        crash points sampled per run, spread over its flushes (default 30)
#   --subsets N       random subsets per crash point (default 2)
#   --wrong-bound     also check each run with a deliberately wrong acknowledgement bound
#                     (wrongbound-*.json): shows the checker reports losses
#   --work DIR        where the scratch XFS image (reflinks) lives (default /var/tmp)
#   --scratch-size S  its size (sparse; default 24G)
#   --bin-dir DIR     minfs, minfs-bench, minfs-cannyls, hddsim, crashcheck from DIR (default:
#                     cargo build --release)
#   --out DIR         results (default results/<date>-<host>-powercut)
#   -h, --help
#
# Writes OUT/check-<workload>-<target>.json (crashcheck's counts), OUT/run-<workload>-
# <target>.json (minfs-bench's report of the recorded run: its time on the emulated drive),
# OUT/SUMMARY.md and OUT/SETUP.md. Images, write logs and op-logs are removed after each run.
# Exit codes: 0 done; 1 a step failed; 2 usage error; 130 interrupted. Everything it mounted
# or attached is released on exit, error and Ctrl-C.
set -euo pipefail
shopt -s inherit_errexit 2>/dev/null || true

repo=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=lib/emulator.sh
source "$repo/scripts/lib/emulator.sh"
prog=powercut.sh
die() { echo "$prog: error: $*" >&2; exit 1; }
usage_error() { echo "$prog: error: $*" >&2; echo "(see $prog --help)" >&2; exit 2; }
say() { echo "$prog: $(date +%H:%M:%S) $*" >&2; }

workloads="durable-256k:0.02,group-commit-256k:0.15,churn-sync-256k:0.3"
targets="minfs,minfs-512,ext4,ext4-journal,xfs,raw,raw-4096"
points=30
subsets=2
wrong_bound=0
work=/var/tmp
scratch_size=24G
bin_dir=""
out=""
need_arg() { [ $# -ge 2 ] && [ -n "$2" ] || usage_error "$1 needs a value"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --workloads) need_arg "$@"; workloads=$2; shift 2 ;;
    --targets) need_arg "$@"; targets=$2; shift 2 ;;
    --points) need_arg "$@"; points=$2; shift 2 ;;
    --subsets) need_arg "$@"; subsets=$2; shift 2 ;;
    --wrong-bound) wrong_bound=1; shift ;;
    --work) need_arg "$@"; work=$2; shift 2 ;;
    --scratch-size) need_arg "$@"; scratch_size=$2; shift 2 ;;
    --bin-dir) need_arg "$@"; bin_dir=$2; shift 2 ;;
    --out) need_arg "$@"; out=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) usage_error "unknown argument '$1'" ;;
  esac
done
[[ $points =~ ^[1-9][0-9]*$ ]] || usage_error "--points '$points' is not a positive integer"
[[ $subsets =~ ^[0-9]+$ ]] || usage_error "--subsets '$subsets' is not a number"
all_targets="minfs minfs-512 ext4 ext4-journal xfs raw raw-4096"
IFS=, read -r -a target_list <<<"$targets"
for t in "${target_list[@]}"; do
  [[ " $all_targets " == *" $t "* ]] || usage_error "unknown target '$t' (known: $all_targets)"
done
IFS=, read -r -a wl_list <<<"$workloads"
for ws in "${wl_list[@]}"; do
  [[ $ws =~ ^[A-Za-z0-9._-]+:([0-9]*\.?[0-9]+)$ ]] || usage_error "workload '$ws' is not NAME:SCALE"
  [ -f "$repo/bencher-workloads/workloads/${ws%%:*}.wl" ] || usage_error "no workload ${ws%%:*}"
done

[ "$(id -u)" = 0 ] || usage_error "must run as root (loop devices, mkfs, mount)"
[ -e /dev/fuse ] || die "/dev/fuse is missing (modprobe fuse): the emulated drive needs FUSE"
for tool in mkfs.ext4 e2fsck mkfs.xfs xfs_repair losetup wipefs; do
  command -v "$tool" >/dev/null || die "missing $tool (apt-get install e2fsprogs xfsprogs util-linux)"
done

if [ -z "$bin_dir" ]; then
  say "building release binaries"
  (cd "$repo" && cargo build --release -q -p minfs -p bencher-workloads -p hddsim -p cannyls-adapter -p crashcheck)
  bin_dir=$(cd "$repo" && cargo metadata --format-version 1 --no-deps \
    | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')/release
fi
bin_dir=$(cd "$bin_dir" && pwd)
for b in minfs minfs-bench minfs-cannyls hddsim crashcheck; do
  [ -x "$bin_dir/$b" ] || die "no $b in $bin_dir"
done

host=$(hostname -s 2>/dev/null || hostname)
[ -n "$out" ] || out=$repo/results/$(date -u +%Y-%m-%d)-$host-powercut
mkdir -p "$out"
out=$(cd "$out" && pwd)

# ---------------------------------------------------------------- cleanup
scratch_img=""; scratch_loop=""; scratch=""; loop=""; emu=""; mnt=""; interrupted=0
cleanup() {
  local rc=$?
  set +e
  trap - EXIT INT TERM
  [ -n "$mnt" ] && mountpoint -q "$mnt" && { umount "$mnt" || umount -l "$mnt"; }
  [ -n "$loop" ] && losetup -d "$loop"
  [ -n "$emu" ] && { stop_emulator "$bin_dir/hddsim" "$emu" || say "emulator detached lazily"; }
  [ -n "$scratch" ] && mountpoint -q "$scratch" && { umount "$scratch" || umount -l "$scratch"; }
  [ -n "$scratch_loop" ] && losetup -d "$scratch_loop"
  [ -n "$scratch" ] && rm -rf "$scratch"
  [ -n "$scratch_img" ] && rm -f "$scratch_img"
  if [ "$interrupted" = 1 ]; then say "interrupted; cleaned up"; exit 130; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'interrupted=1; exit 130' INT TERM

# attach ARGS...: losetup --find --show ARGS, retried: with other jobs attaching loop devices,
# the free device losetup picks can be taken (or its node not yet made) before it binds it.
attach() {
  local dev k
  for k in 1 2 3 4 5 6 7 8 9 10; do
    if dev=$(losetup --find --show "$@" 2>/dev/null); then echo "$dev"; return 0; fi
    sleep 0.$k
  done
  losetup --find --show "$@"
}

# ---------------------------------------------------------------- scratch XFS (reflinks)
mkdir -p "$work"
scratch_img=$(mktemp "$work/powercut-scratch.XXXXXX.img")
truncate -s "$scratch_size" "$scratch_img"
mkfs.xfs -q -f -m reflink=1 "$scratch_img"
# Buffered (no direct I/O): the host page cache serves the states' shared blocks again.
scratch_loop=$(attach "$scratch_img")
scratch=$(mktemp -d "$work/powercut-scratch.XXXXXX")
mount "$scratch_loop" "$scratch"
say "scratch XFS with reflinks on $scratch ($scratch_loop over $scratch_img, $scratch_size sparse)"

# ---------------------------------------------------------------- per run
mkfs_of() { # TARGET DEV: what the target's user runs before Cannyls
  case $1 in
    minfs|minfs-512) "$bin_dir/minfs" mkfs -f -L powercut "$2" >/dev/null ;;
    ext4) mkfs.ext4 -F -q -O ^has_journal -E lazy_itable_init=0,lazy_journal_init=0,nodiscard "$2" ;;
    ext4-journal) mkfs.ext4 -F -q -E lazy_itable_init=0,lazy_journal_init=0,nodiscard "$2" ;;
    xfs) mkfs.xfs -f -q -K "$2" ;;
    raw|raw-4096) wipefs -a -q "$2" ;;
  esac
}

failures=0
total=$(( ${#wl_list[@]} * ${#target_list[@]} ))
n=0
started=$(date +%s)
for ws in "${wl_list[@]}"; do
  w=${ws%%:*}; scale=${ws#*:}
  wf=$repo/bencher-workloads/workloads/$w.wl
  cap=$("$bin_dir/minfs-bench" check --json --scale "$scale" --block-size 4096 "$wf" \
    | sed -n 's/.*"capacity":\([0-9]*\).*/\1/p')
  [ -n "$cap" ] || die "minfs-bench check printed no capacity for $w"
  img_bytes=$(( cap + cap * 15 / 100 + (256 << 20) ))
  [ "$img_bytes" -ge $((320 << 20)) ] || img_bytes=$((320 << 20))
  img_bytes=$(( (img_bytes + (1 << 20) - 1) >> 20 << 20 ))
  for t in "${target_list[@]}"; do
    n=$((n + 1))
    d=$scratch/run-$w-$t
    mkdir -p "$d/emu" "$d/mnt"
    truncate -s "$img_bytes" "$d/backing.img"
    # Prepared on a plain loop device: the initial image is the target after mkfs.
    loop=$(attach --direct-io=on "$d/backing.img")
    mkfs_of "$t" "$loop"
    losetup -d "$loop"; loop=""
    cp --reflink=always "$d/backing.img" "$d/initial.img"
    emu=$d/emu
    "$bin_dir/hddsim" emulate --profile st1000dm003 --backing "$d/backing.img" \
      --write-log "$d/write.log" "$emu" >/dev/null
    loop=$(attach --direct-io=on "$emu/disk")
    mnt=$d/mnt
    bs=(); force=()
    case $t in
      minfs) backend="minfs:$loop" ;;
      minfs-512) backend="minfs:$loop"; bs=(--block-size 512) ;;
      ext4|ext4-journal|xfs) mount "$loop" "$mnt"; backend="file:$mnt/cannyls.lusf" ;;
      raw) backend="raw:$loop"; force=(--force) ;;
      raw-4096) backend="raw:$loop"; bs=(--block-size 4096); force=(--force) ;;
    esac
    rc=0
    "$bin_dir/minfs-bench" run --workload "$wf" --scale "$scale" --backend "$backend" "${bs[@]}" \
      "${force[@]}" --json "$out/run-$w-$t.json" --op-log "$d/op.log" --no-progress \
      >"$d/bench.out" 2>&1 || rc=$?
    mountpoint -q "$mnt" && umount "$mnt"
    mnt=""
    losetup -d "$loop"; loop=""
    stop_emulator "$bin_dir/hddsim" "$emu" || say "emulator detached lazily"
    emu=""
    if [ "$rc" != 0 ]; then
      failures=$((failures + 1))
      say "[$n/$total] $w $t: minfs-bench failed (exit $rc): $(tail -3 "$d/bench.out")"
      rm -rf "$d"
      continue
    fi
    say "[$n/$total] $w $t: recorded ($(du -h "$d/write.log" | cut -f1) write log); checking"
    checks=(check)
    [ "$wrong_bound" = 1 ] && checks+=(wrongbound)
    for kind in "${checks[@]}"; do
      extra=()
      [ "$kind" = wrongbound ] && extra=(--wrong-bound)
      if nice -n 10 "$bin_dir/crashcheck" check --target "$t" --initial "$d/initial.img" \
          --write-log "$d/write.log" --op-log "$d/op.log" --workdir "$d" \
          --minfs "$bin_dir/minfs" --minfs-cannyls "$bin_dir/minfs-cannyls" \
          --points "$points" --subsets "$subsets" --workload "$w" "${extra[@]}" \
          --json "$out/$kind-$w-$t.json" >/dev/null 2>"$d/check.err"; then
        say "[$n/$total] $w $t: $kind: $(tr -d ' \n' <"$out/$kind-$w-$t.json" | grep -o '"counts":{[^}]*}')"
      else
        failures=$((failures + 1))
        say "[$n/$total] $w $t: $kind failed: $(tail -3 "$d/check.err")"
      fi
    done
    rm -rf "$d"
  done
done
secs=$(( $(date +%s) - started ))

"$bin_dir/crashcheck" summary "$out" >"$out/SUMMARY.md.table"
{
  echo "# Power cuts of the whole stack: counts"
  echo
  echo "Written by \`scripts/powercut.sh\` ($(date -u '+%Y-%m-%d %H:%M') UTC, ${secs} s). Per workload and"
  echo "target: the recorded run's flushes, the crash points sampled from them, the crash states"
  echo "checked, and what was found (crashcheck's check-*.json hold the same, per variant)."
  echo
  cat "$out/SUMMARY.md.table"
} >"$out/SUMMARY.md"
rm -f "$out/SUMMARY.md.table"
{
  echo "# Setup"
  echo
  echo "| | |"
  echo "| --- | --- |"
  echo "| command | \`scripts/powercut.sh --workloads $workloads --targets $targets --points $points --subsets $subsets$([ "$wrong_bound" = 1 ] && echo ' --wrong-bound')\` |"
  echo "| date (UTC) | $(date -u '+%Y-%m-%d %H:%M') |"
  echo "| host | $host, $(uname -sr), $(nproc) CPUs, shared with other jobs (load $(cut -d' ' -f1-3 /proc/loadavg)) |"
  echo "| drive | \`hddsim emulate --profile st1000dm003 --write-log LOG\` (real clock), a loop device (\`losetup --direct-io=on\`, 512-byte sectors) over its file; 512e (4 KiB physical sectors) |"
  echo "| images | per workload: Cannyls' planned capacity at block size 4096 + 15% + 256 MiB (min 320 MiB); sparse files on a scratch XFS (\`mkfs.xfs -m reflink=1\`) on a loop device; removed after each run |"
  echo "| preparation | on a plain loop device before the emulator starts: minfs \`minfs mkfs -f\`; ext4 \`mkfs.ext4 -F -q -O ^has_journal -E lazy_itable_init=0,lazy_journal_init=0,nodiscard\`; ext4-journal the same with the journal; xfs \`mkfs.xfs -f -q -K\`; raw \`wipefs -a\`. That image is the initial image |"
  echo "| run | \`minfs-bench run --workload W --scale S --backend B [--block-size] --op-log ...\`: minfs \`minfs:DEV\` (block size 4096), minfs-512 \`--block-size 512\`, ext4/ext4-journal/xfs \`file:MNT/cannyls.lusf\` (512), raw \`raw:DEV --force\` (512), raw-4096 \`--block-size 4096\`; the run's report is run-W-T.json |"
  echo "| crash states | \`crashcheck check --points $points --subsets $subsets\`: $points crash points spread evenly over each run's flushes (all when fewer); at each, the image with every write before that flush plus, of the writes after it (before the next flush): none, $subsets random subsets, one torn write (a random prefix of its sectors, with a random subset of the others), and on this 512e drive a write covering part of a 4 KiB physical sector with that whole sector filled with garbage (a random subset of the others kept). Reflink copies of a base image kept up to date in one pass |"
  echo "| recovery | minfs: \`minfs fsck -n\`, \`minfs-cannyls fsck -n\`, \`MinfsNvm::open\` + \`StorageBuilder::open\`, \`minfs fsck -n\` again; ext4: \`e2fsck -fy\`, mount; ext4-journal: mount (journal replay), \`e2fsck -fy\` where it fails; xfs: mount (log replay), \`xfs_repair\` (\`-L\` if needed) where it fails; raw: nothing. Then \`FileNvm::open\` + \`StorageBuilder::open\` and every lump read |"
  echo "| acknowledged | an operation is acknowledged by the last flush the drive accepted before the \`journal_sync\` after it returned (write-log accept time ≤ op-log end, both CLOCK_MONOTONIC): required in every state at that flush or later |"
  echo "| raw data | not kept (images and write logs are GBs); rerun the command above |"
} >"$out/SETUP.md"
say "done in ${secs}s: $out/SUMMARY.md ($failures failures)"
[ "$failures" = 0 ]
