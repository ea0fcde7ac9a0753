#!/usr/bin/env bash
# The comparison: Cannyls on minfs vs on a file in ext4 (no journal) and XFS vs the bare
# device, all on the same device, each target freshly prepared before every workload.
#
#   scripts/compare.sh [OPTIONS]
#
# Default device: a loop device (--direct-io=on) over an image under --work, zero-filled and
# synced once before the first run (so no target pays the host filesystem's allocation).
# Writes DIR (--out) with compare.json, SETUP.md, runs/<workload>/<target>/run-<k>.{json,oplog}
# (and .trace with --trace), then `minfs-bench report DIR` renders report.md and plots/, and
# prints the report's verdict. Each run's line shows the time elapsed and an estimate of the
# time left.
#
# How long, and why: the default (6 workloads x 5 targets x 18 rounds = 540 runs at scale 0.5)
# is sized so that its verdict can tell a 5 % difference from none on a 2-vCPU VM: at scale
# 0.5 a comparison's per-round noise was 5.2 % (median over the 24; 2.3–15 %), and with 18
# rounds the verdict's intervals, held to 95 % together over the 24 comparisons, are ±4.7 %
# (median) and call an equal target different in 4.5 % of simulated reports
# (bencher-workloads/tests/verdict_stats.rs; docs/COMPARISON.md, "How the default run is
# sized"). Its measured time is in README.md. Run time grows about in proportion to --scale,
# --runs and the targets; fewer than 10 rounds judge nothing at the default's 24 comparisons;
# a quicker, coarser look: --scale 0.1 --runs 10 (intervals several times wider).
#
# Options:
#   --device DEV        use this block device instead of a loop device. Refused when it is
#                       mounted or in use (always), or holds a filesystem or partition table
#                       (unless --destroy-data). EVERYTHING ON IT IS DESTROYED.
#   --device emulated[:PROFILE]
#                       an emulated drive (default profile st1000dm003): the zero-filled image
#                       is the backing of `hddsim emulate` (the HDD model in real time, FUSE)
#                       and the loop device (--direct-io=on) is over the emulator's file, so
#                       every run is timed by the modelled drive. Runs take a real drive's
#                       time. With tracing, prints each run's modelled/measured ratio (the
#                       replay of its trace against the emulation: about 1 when consistent)
#                       and a summary (min, median, max, runs off by over 5%), and writes
#                       them to emulation-check.md
#   --whole-drive       with --device emulated: the emulated drive is the profile's whole
#                       capacity (1,000,204,886,016 bytes for st1000dm003), backed by a sparse
#                       image (`hddsim emulate --create-sparse`: zeros are stored as holes, so
#                       it takes host space only for nonzero data); the loop device spans it and
#                       every filesystem is made over all of it, as on the real drive. XFS is
#                       made with `-s size=4096` (the 4096-byte physical sectors the real 512e
#                       drive reports, which a loop device cannot); each run starts right after
#                       its mount (caches dropped and the image punched back to holes before
#                       the mkfs), so ext4's lazy inode-table init and XFS's mid-disk log act
#                       as on the real drive. Refused unless --work's host has room for the
#                       data the runs write (see --content)
#   --drive-queue       with --device emulated: the loop device's queue set as Linux sets a
#                       SATA HDD's: queue/rotational 1 and queue/scheduler mq-deadline (losetup
#                       leaves rotational 0 and no scheduler). Recorded in SETUP.md. Without
#                       it a loop device made here gets scheduler none, whatever an earlier
#                       user left on it (a loop device's scheduler outlives its detach); the
#                       old setting is put back on exit
#   --content stream|zeros
#                       what the lumps hold (`minfs-bench run --content`): `stream` (default),
#                       each lump's own checkable bytes; `zeros`, for timing runs on a
#                       --whole-drive (the model never looks at the bytes; the emulator stores
#                       zeros as holes, so host space is needed only for metadata and the
#                       Cannyls journal)
#   --order runs|targets
#                       `runs` (default): run by run, each workload, every target (the target
#                       order rotated from run to run); `targets`: every run of every workload
#                       of one target before the next target, so a comparison cut short holds
#                       whole targets
#   --destroy-data      allow --device to be a device that holds data
#   --work DIR          where the default image lives (default /var/tmp/minfs-compare)
#   --image-size SIZE   size of the default image (e.g. 8G; default: the largest capacity the
#                       workloads need at --scale, plus 15% and 256 MiB for filesystem overhead)
#   --sector-size N     logical sector size of the default loop device: 512 or 4096 (default 512)
#   --keep-image        leave the image in --work afterwards
#   --workloads LIST    comma-separated workload names (bencher-workloads/workloads/NAME.wl) or
#                       paths (default: the six reference workloads)
#   --targets LIST      comma-separated, from: minfs ext4 ext4-prealloc xfs xfs-prealloc raw
#                       ext4-defaults (mkfs.ext4's defaults, lazy inode-table init on, no
#                       journal) minfs-512 (minfs at block size 512; 512-byte sectors only)
#                       minfs-fuse (Cannyls' FileNvm on
#                       a file of a FUSE-mounted minfs: `minfs mount`, the file sized first)
#                       minfs-fuse-grow (the same, but FileNvm creates the file and it grows
#                       as Cannyls writes, as FrugalOS's file devices do); `all` for every one
#                       (default: minfs,minfs-fuse,ext4,xfs,raw; the minfs-fuse targets are
#                       left out with a note where /dev/fuse is missing).
#                       TARGET@N runs TARGET at Cannyls block size N (512 or 4096), e.g.
#                       ext4@4096, xfs@4096: a list can hold one filesystem at both sizes
#   --scale F           multiply every workload count by F (default 0.5)
#   --runs N            rounds: runs per workload and target; each round runs every target
#                       once (with --order runs), and the verdict pairs a target's run with
#                       minfs's of the same round (default 18)
#   --block-size N      Cannyls block size of every target but minfs-512 (default: each
#                       target's own: minfs 4096, MinfsNvm's default; the FileNvm targets
#                       (ext4*, xfs*, raw, minfs-fuse*) 512; minfs-512 always 512)
#   --seed S            generator seed (default: each workload's own)
#   --trace / --no-trace  record the device's block requests (tracefs) for every run
#                       (default: on when root and tracefs is available)
#   --compress          gzip (-9n) every op-log and trace once the report is rendered (the
#                       report reads run-K.oplog.gz as well); for committing results
#   --bin-dir DIR       use the minfs, minfs-bench (and hddsim) binaries in DIR instead of
#                       building release
#   --out DIR           results directory (default results/local/<date>T<time>-<host>-<device>/,
#                       which git ignores; write a run to commit with --out results/NAME).
#                       Refused, before anything is built or made, when it exists and is not
#                       empty
#   -h, --help
#
# mkfs.ext4, mkfs.xfs, minfs mkfs, wipefs and mount are retried for up to 30 s when the
# device is momentarily busy (EBUSY: another process has it open for a moment).
#
# Exit codes: 0 all runs succeeded; 1 a run or step failed (the report marks it); 2 usage
# error, an --out that is not empty, or a refused device; 130 interrupted. Mounts, loop
# devices and tracefs instances it made are removed on exit, error and Ctrl-C.
set -euo pipefail
shopt -s inherit_errexit 2>/dev/null || true

repo=$(cd "$(dirname "$0")/.." && pwd)
# The checkout's revision when the run starts (SETUP.md is written at the end, and the
# checkout may move meanwhile).
git_rev="$(git -C "$repo" rev-parse HEAD 2>/dev/null || echo n/a)$(git -C "$repo" diff --quiet HEAD 2>/dev/null || echo ' (with uncommitted changes)')"
# shellcheck source=lib/emulator.sh
source "$repo/scripts/lib/emulator.sh"
# shellcheck source=lib/retry.sh
source "$repo/scripts/lib/retry.sh"
prog=compare.sh

die() { echo "$prog: error: $*" >&2; exit 1; }
usage_error() { echo "$prog: error: $*" >&2; echo "(see $prog --help)" >&2; exit 2; }
say() { echo "$prog: $*" >&2; }

# ---------------------------------------------------------------- options
device=""
destroy_data=0
work=/var/tmp/minfs-compare
image_size=""
sector_size=512
keep_image=0
workloads="seq-256k,seq-4m,rand-mixed-1m,rand-oldest-1m,durable-256k,group-commit-256k"
all_targets="minfs,minfs-512,minfs-fuse,minfs-fuse-grow,ext4,ext4-prealloc,ext4-defaults,xfs,xfs-prealloc,raw"
targets="minfs,minfs-fuse,ext4,xfs,raw"
targets_given=0
scale=0.5
runs=18
block_size=""
seed=""
trace=auto
bin_dir=""
out=""
compress=0
whole_drive=0
drive_queue=0
content=stream
order=runs

need_arg() { [ $# -ge 2 ] && [ -n "$2" ] || usage_error "$1 needs a value"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --device) need_arg "$@"; device=$2; shift 2 ;;
    --destroy-data) destroy_data=1; shift ;;
    --whole-drive) whole_drive=1; shift ;;
    --drive-queue) drive_queue=1; shift ;;
    --content) need_arg "$@"; content=$2; shift 2 ;;
    --order) need_arg "$@"; order=$2; shift 2 ;;
    --work) need_arg "$@"; work=$2; shift 2 ;;
    --image-size) need_arg "$@"; image_size=$2; shift 2 ;;
    --sector-size) need_arg "$@"; sector_size=$2; shift 2 ;;
    --keep-image) keep_image=1; shift ;;
    --workloads) need_arg "$@"; workloads=$2; shift 2 ;;
    --targets) need_arg "$@"; targets=$2; targets_given=1; [ "$targets" = all ] && targets=$all_targets; shift 2 ;;
    --scale) need_arg "$@"; scale=$2; shift 2 ;;
    --runs) need_arg "$@"; runs=$2; shift 2 ;;
    --block-size) need_arg "$@"; block_size=$2; shift 2 ;;
    --seed) need_arg "$@"; seed=$2; shift 2 ;;
    --trace) trace=on; shift ;;
    --no-trace) trace=off; shift ;;
    --compress) compress=1; shift ;;
    --bin-dir) need_arg "$@"; bin_dir=$2; shift 2 ;;
    --out) need_arg "$@"; out=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) usage_error "unknown argument '$1'" ;;
  esac
done

[[ $runs =~ ^[1-9][0-9]*$ ]] || usage_error "--runs '$runs' is not a positive integer"
[ -z "$block_size" ] || { [[ $block_size =~ ^[1-9][0-9]*$ ]] && [ $((block_size % 512)) = 0 ]; } \
  || usage_error "--block-size '$block_size' is not a positive multiple of 512"
[ "$sector_size" = 512 ] || [ "$sector_size" = 4096 ] \
  || usage_error "--sector-size '$sector_size' is not 512 or 4096"
[[ $scale =~ ^([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$ ]] \
  && awk -v s="$scale" 'BEGIN { exit !(s > 0) }' \
  || usage_error "--scale '$scale' is not a number greater than 0"
[ -z "$seed" ] || [[ $seed =~ ^[0-9]+$ ]] || usage_error "--seed '$seed' is not a number"
[ "$content" = stream ] || [ "$content" = zeros ] || usage_error "--content '$content' is not stream or zeros"
[ "$order" = runs ] || [ "$order" = targets ] || usage_error "--order '$order' is not runs or targets"
emulated=""
case $device in
  emulated) emulated=st1000dm003; device="" ;;
  emulated:*) emulated=${device#emulated:}; device=""
    [[ $emulated =~ ^[A-Za-z0-9._-]+(\+[A-Za-z0-9_]+=[A-Za-z0-9._-]+(,[A-Za-z0-9_]+=[A-Za-z0-9._-]+)*)?$ ]] \
      || usage_error "--device emulated:PROFILE: bad profile '$emulated' (a name, or NAME+PARAM=VALUE[,PARAM=VALUE…])" ;;
esac
[ "$drive_queue" = 0 ] || [ -n "$emulated" ] || usage_error "--drive-queue needs --device emulated[:PROFILE]"
if [ "$whole_drive" = 1 ]; then
  [ -n "$emulated" ] || usage_error "--whole-drive needs --device emulated[:PROFILE]"
  [ -z "$image_size" ] || usage_error "--whole-drive and --image-size exclude each other (the drive's capacity is the image's size)"
  [ "$sector_size" = 512 ] || usage_error "--whole-drive: the drive's logical sectors are 512 bytes (--sector-size 4096 is not the modelled drive)"
fi

known_targets=${all_targets//,/ }
IFS=, read -r -a target_list <<<"$targets"
[ ${#target_list[@]} -gt 0 ] || usage_error "--targets is empty"
for t in "${target_list[@]}"; do
  base=${t%%@*}
  [[ " $known_targets " == *" $base "* ]] || usage_error "unknown target '$base' (known: $known_targets)"
  if [[ $t == *@* ]]; then
    [ "${t#*@}" = 512 ] || [ "${t#*@}" = 4096 ] \
      || usage_error "target '$t': the block size after @ is 512 or 4096"
    [ "$base" != minfs-512 ] || usage_error "target '$t': minfs-512 is minfs at 512; use minfs@N"
  fi
done
seen=" "
for t in "${target_list[@]}"; do
  [[ $seen != *" $t "* ]] || usage_error "target '$t' is listed twice"
  seen+="$t "
done

IFS=, read -r -a workload_args <<<"$workloads"
[ ${#workload_args[@]} -gt 0 ] || usage_error "--workloads is empty"
workload_files=()
workload_names=()
for w in "${workload_args[@]}"; do
  if [ -f "$w" ]; then f=$w
  elif [ -f "$repo/bencher-workloads/workloads/$w.wl" ]; then f=$repo/bencher-workloads/workloads/$w.wl
  else usage_error "no workload '$w' (not a file, not bencher-workloads/workloads/$w.wl)"
  fi
  workload_files+=("$(cd "$(dirname "$f")" && pwd)/$(basename "$f")")
  workload_names+=("$(basename "$f" .wl)")
done

uses_fs() { [[ " ${target_list[*]} " == *" $1"* ]]; }

# ---------------------------------------------------------------- the results directory
# Checked before anything is built, zero-filled or attached. The default goes under
# results/local/ (ignored by git), so a run of the default command leaves the checkout clean;
# a run to commit is written with an explicit --out results/NAME.
if [ -n "$device" ]; then device_label=$(basename "$(readlink -f "$device")")
elif [ -n "$emulated" ] && [ "$whole_drive" = 1 ]; then device_label=emulated-$emulated-whole
elif [ -n "$emulated" ]; then device_label=emulated-$emulated
else device_label=loop-$sector_size
fi
host=$(hostname -s 2>/dev/null || hostname)
[ -n "$out" ] || out=$repo/results/local/$(date -u +%Y-%m-%dT%H%M%S)-$host-$device_label
if [ -e "$out" ] && ! [ -d "$out" ]; then usage_error "--out $out exists and is not a directory"; fi
if [ -d "$out" ] && [ -n "$(ls -A "$out")" ]; then
  usage_error "--out $out already exists and is not empty (it may hold an earlier comparison); choose another --out"
fi

# ---------------------------------------------------------------- tools
[ "$(id -u)" = 0 ] || usage_error "must run as root (loop devices, mkfs, mount)"
missing=()
command -v mkfs.ext4 >/dev/null || missing+=(e2fsprogs)
command -v mkfs.xfs >/dev/null || missing+=(xfsprogs)
command -v losetup >/dev/null || missing+=(util-linux)
command -v wipefs >/dev/null || missing+=(util-linux)
# The report's PNGs draw their text in a system sans-serif font (the SVGs need none).
[ -d /usr/share/fonts/truetype/dejavu ] || ! command -v apt-get >/dev/null || missing+=(fonts-dejavu-core)
if [ ${#missing[@]} -gt 0 ]; then
  if command -v apt-get >/dev/null; then
    say "installing ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    die "missing tools: install ${missing[*]}"
  fi
fi

if [ -n "$bin_dir" ]; then
  minfs=$(cd "$bin_dir" && pwd)/minfs
  bench=$(cd "$bin_dir" && pwd)/minfs-bench
  hddsim=$(cd "$bin_dir" && pwd)/hddsim
else
  say "building release binaries"
  (cd "$repo" && cargo build --release -q -p minfs -p bencher-workloads -p hddsim)
  target_dir=$(cd "$repo" && cargo metadata --format-version 1 --no-deps \
    | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
  minfs=$target_dir/release/minfs
  bench=$target_dir/release/minfs-bench
  hddsim=$target_dir/release/hddsim
fi
[ -x "$minfs" ] || die "no minfs binary at $minfs"
[ -x "$bench" ] || die "no minfs-bench binary at $bench"
if [ -n "$emulated" ]; then
  [ -x "$hddsim" ] || die "--device emulated: no hddsim binary at $hddsim"
  [ -e /dev/fuse ] || die "--device emulated: /dev/fuse is missing (modprobe fuse)"
  "$hddsim" validate --profile "$emulated" >/dev/null \
    || usage_error "--device emulated:$emulated: hddsim has no such profile (see above)"
fi
if [[ " ${target_list[*]} " == *" minfs-fuse"* ]]; then
  why=""
  "$minfs" mount --help >/dev/null 2>&1 || why="this minfs has no 'mount' (built without the fuse feature)"
  [ -e /dev/fuse ] || why="/dev/fuse is missing (modprobe fuse)"
  if [ -n "$why" ]; then
    [ "$targets_given" = 1 ] && die "targets minfs-fuse, minfs-fuse-grow: $why"
    say "leaving out targets minfs-fuse, minfs-fuse-grow: $why"
    kept=()
    for t in "${target_list[@]}"; do [[ ${t%%@*} == minfs-fuse* ]] || kept+=("$t"); done
    target_list=("${kept[@]}")
  fi
fi

# ---------------------------------------------------------------- cleanup
mnt=""
loop=""
loop_sched=""
image=""
trace_inst=""
tracefs_mounted=0
fuse_mounted=0
emu_mnt=""
interrupted=0

cleanup() {
  local rc=$?
  set +e
  trap - EXIT INT TERM
  restore_max_pages
  if [ -n "$mnt" ] && mountpoint -q "$mnt"; then
    if [ "$fuse_mounted" = 1 ]; then "$minfs" umount "$mnt" || umount -l "$mnt"; else umount "$mnt" || umount -l "$mnt"; fi
  fi
  [ -n "$mnt" ] && rmdir "$mnt" 2>/dev/null
  if [ -n "$trace_inst" ] && [ -d "$trace_inst" ]; then
    echo 0 >"$trace_inst/tracing_on"
    echo 0 >"$trace_inst/events/block/block_rq_issue/enable"
    echo 0 >"$trace_inst/events/block/block_rq_complete/enable"
    rmdir "$trace_inst" || say "could not remove tracefs instance $trace_inst"
  fi
  if [ "$tracefs_mounted" = 1 ]; then umount "$tracefs" || umount -l "$tracefs"; fi
  [ "$tracefs_mounted" = 1 ] && rmdir "$tracefs" 2>/dev/null
  if [ -n "$loop" ]; then
    # A loop device's scheduler outlives its detach: put back what it had.
    [ -n "$loop_sched" ] && echo "$loop_sched" >"$queue/scheduler"
    losetup -d "$loop"
  fi
  if [ -n "$emu_mnt" ]; then
    stop_emulator "$hddsim" "$emu_mnt" || say "emulator was still busy; detached it lazily"
  fi
  if [ -n "$image" ] && [ "$keep_image" = 0 ]; then rm -f "$image"; fi
  if [ "$interrupted" = 1 ]; then say "interrupted; cleaned up"; exit 130; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'interrupted=1; exit 130' INT TERM

# fs.fuse.max_pages_limit: `hddsim emulate` and `minfs mount` raise it (so that a Cannyls lump
# is one FUSE request); it is read when a FUSE connection starts, so once this run's mounts
# are gone it is put back to what it was before the run.
max_pages_path=/proc/sys/fs/fuse/max_pages_limit
max_pages_before=$(cat "$max_pages_path" 2>/dev/null || true)
restore_max_pages() {
  [ -n "$max_pages_before" ] && [ -w "$max_pages_path" ] || return 0
  local now
  now=$(cat "$max_pages_path" 2>/dev/null || true)
  if [ -n "$now" ] && [ "$now" != "$max_pages_before" ]; then
    echo "$max_pages_before" >"$max_pages_path" \
      && say "put fs.fuse.max_pages_limit back from $now to $max_pages_before"
  fi
}

# ---------------------------------------------------------------- the device
size_bytes() { # "8G" → bytes: K, M, G, T and KiB … TiB powers of 1024; KB … TB powers of 1000
  local v=$1 n unit mult
  [[ $v =~ ^([0-9]+)([KMGT]?|[KMGT]iB|[KMGT]B)$ ]] \
    || usage_error "size '$1': a number with no unit (bytes) or one of K, M, G, T, KiB, MiB, GiB, TiB (powers of 1024) or KB, MB, GB, TB (powers of 1000)"
  n=${BASH_REMATCH[1]} unit=${BASH_REMATCH[2]}
  case $unit in
    "") mult=1 ;;
    K|KiB) mult=$((1 << 10)) ;; M|MiB) mult=$((1 << 20)) ;; G|GiB) mult=$((1 << 30)) ;; T|TiB) mult=$((1 << 40)) ;;
    KB) mult=1000 ;; MB) mult=1000000 ;; GB) mult=1000000000 ;; TB) mult=1000000000000 ;;
  esac
  echo $((n * mult))
}

# The largest capacity the workloads need (what minfs-bench run gives Cannyls by default).
seed_args=()
[ -n "$seed" ] && seed_args=(--seed "$seed")
max_capacity=0
capacities=()
for f in "${workload_files[@]}"; do
  # Planned at the largest block size any target uses (4096 unless --block-size): its lumps
  # round up the most, so the image holds every target's storage.
  json=$("$bench" check --json --scale "$scale" --block-size "${block_size:-4096}" "${seed_args[@]}" "$f") \
    || usage_error "workload $f does not check (see above)"
  cap=$(sed -n 's/.*"capacity":\([0-9]*\).*/\1/p' <<<"$json")
  [ -n "$cap" ] || die "minfs-bench check printed no capacity for $f"
  capacities+=("$cap")
  [ "$cap" -gt "$max_capacity" ] && max_capacity=$cap
done
need_bytes=$(( max_capacity + max_capacity * 15 / 100 + (256 << 20) ))

dev_refusal() { # why DEV must not be used, or nothing
  local dev=$1 name holders sig
  [ -b "$dev" ] || { echo "$dev is not a block device"; return; }
  if findmnt -rno TARGET -S "$dev" >/dev/null 2>&1; then
    echo "$dev is mounted on $(findmnt -rno TARGET -S "$dev" | paste -sd, -)"; return
  fi
  name=$(basename "$(readlink -f "$dev")")
  for part in /sys/class/block/"$name"/"$name"*; do
    [ -e "$part/partition" ] || continue
    if findmnt -rno TARGET -S "/dev/$(basename "$part")" >/dev/null 2>&1; then
      echo "partition /dev/$(basename "$part") of $dev is mounted"; return
    fi
  done
  holders=$(ls "/sys/class/block/$name/holders" 2>/dev/null | paste -sd, -)
  [ -z "$holders" ] || { echo "$dev is in use by $holders"; return; }
  if [ "$destroy_data" = 0 ]; then
    sig=$(wipefs -n -O TYPE --noheadings "$dev" 2>/dev/null | sort -u | paste -sd, -)
    [ -z "$sig" ] || { echo "$dev holds $sig (use --destroy-data to overwrite it)"; return; }
  fi
}

if [ -n "$device" ]; then
  why=$(dev_refusal "$device")
  if [ -n "$why" ]; then echo "$prog: refusing $device: $why" >&2; exit 2; fi
  dev=$(readlink -f "$device")
  dev_bytes=$(blockdev --getsize64 "$dev")
  [ "$dev_bytes" -ge "$need_bytes" ] \
    || die "$dev has $dev_bytes bytes; the workloads at scale $scale need about $need_bytes"
elif [ "$whole_drive" = 1 ]; then
  mkdir -p "$work"
  work=$(cd "$work" && pwd)
  image=$work/compare-$$.img
  # Host space for what the runs write that is not zeros (the image is punched back to holes
  # between runs, so one run's worth): with --content zeros, the Cannyls journal and the
  # filesystems' metadata (estimated as 2% of the largest capacity plus 2 GiB); with the
  # stream, the whole capacity too.
  if [ "$content" = zeros ]; then
    host_need=$(( max_capacity / 50 + (2 << 30) ))
  else
    host_need=$(( need_bytes + (2 << 30) ))
  fi
  avail=$(df -B1 --output=avail "$work" | tail -1)
  if [ "$avail" -le "$host_need" ]; then
    echo "$prog: refusing --whole-drive: $work has $avail bytes free; the runs need about $host_need bytes of it for the data they write (--content $content, scale $scale)" >&2
    exit 2
  fi
  emu_mnt=$(mktemp -d "$work/emulator.XXXXXX")
  emu_cmd="hddsim emulate --profile $emulated --backing $image --create-sparse $emu_mnt"
  "$hddsim" emulate --profile "$emulated" --backing "$image" --create-sparse "$emu_mnt" >/dev/null
  img_bytes=$(stat -c %s "$image")
  [ "$img_bytes" -ge "$need_bytes" ] \
    || die "the emulated drive has $img_bytes bytes; the workloads at scale $scale need about $need_bytes"
  zero_cmd=""
  loop_cmd="losetup --find --show --direct-io=on --sector-size $sector_size $emu_mnt/disk"
  loop=$($loop_cmd)
  dev=$loop
  dev_bytes=$img_bytes
else
  if [ -n "$image_size" ]; then img_bytes=$(size_bytes "$image_size"); else img_bytes=$need_bytes; fi
  min_bytes=$(( 320 << 20 )) # mkfs.xfs needs 300 MiB
  [ "$img_bytes" -ge "$min_bytes" ] || img_bytes=$min_bytes
  img_bytes=$(( (img_bytes + (1 << 20) - 1) >> 20 << 20 ))
  [ "$img_bytes" -ge "$need_bytes" ] \
    || die "--image-size $image_size is smaller than the $need_bytes bytes the workloads need"
  mkdir -p "$work"
  work=$(cd "$work" && pwd)
  image=$work/compare-$$.img
  avail=$(df -B1 --output=avail "$work" | tail -1)
  [ "$avail" -gt "$img_bytes" ] || die "$work has $avail bytes free; the image needs $img_bytes"
  say "zero-filling $image ($((img_bytes >> 20)) MiB) and syncing it"
  zero_cmd="dd if=/dev/zero of=$image bs=16M count=$((img_bytes >> 24)) oflag=direct conv=fsync status=none"
  if [ $((img_bytes % (16 << 20))) = 0 ]; then
    $zero_cmd
  else
    zero_cmd="dd if=/dev/zero of=$image bs=1M count=$((img_bytes >> 20)) oflag=direct conv=fsync status=none"
    $zero_cmd
  fi
  sync "$image"
  if [ -n "$emulated" ]; then
    emu_mnt=$(mktemp -d "$work/emulator.XXXXXX")
    emu_cmd="hddsim emulate --profile $emulated --backing $image $emu_mnt"
    "$hddsim" emulate --profile "$emulated" --backing "$image" "$emu_mnt" >/dev/null
    loop_cmd="losetup --find --show --direct-io=on --sector-size $sector_size $emu_mnt/disk"
  else
    loop_cmd="losetup --find --show --direct-io=on --sector-size $sector_size $image"
  fi
  loop=$($loop_cmd)
  dev=$loop
  dev_bytes=$img_bytes
fi
devname=$(basename "$dev")
queue=/sys/class/block/$devname/queue
if [ -n "$loop" ]; then
  # The loop device made here gets a known queue: a scheduler set on it by an earlier user
  # outlives losetup -d (the old one is put back on exit). --drive-queue: a SATA HDD's.
  loop_sched=$(sed -n 's/.*\[\(.*\)\].*/\1/p' "$queue/scheduler")
  if [ "$drive_queue" = 1 ]; then
    echo 1 >"$queue/rotational" || die "cannot set $queue/rotational to 1"
    echo mq-deadline >"$queue/scheduler" || die "cannot set $queue/scheduler to mq-deadline (is the mq-deadline scheduler built?)"
  else
    echo none >"$queue/scheduler" || die "cannot set $queue/scheduler to none"
  fi
fi

mkdir -p "$out/runs"
out=$(cd "$out" && pwd)
mnt=$(mktemp -d "/tmp/minfs-compare-mnt.$$.XXXXXX")

# ---------------------------------------------------------------- tracing
# tracefs mounted on a directory of this run's own (unmounted on exit): a mount at
# /sys/kernel/tracing may be unmounted by another program while this run uses it (an earlier
# compare.sh did that when it had mounted it itself), which ended a long run. Every mount of
# tracefs shows the same instances.
tracefs=/sys/kernel/tracing
if [ "$trace" != off ] && grep -qw tracefs /proc/filesystems; then
  tracefs=$(mktemp -d "/tmp/minfs-compare-tracefs.$$.XXXXXX")
  tracefs_mounted=1
  if ! mount -t tracefs nodev "$tracefs"; then
    rmdir "$tracefs"
    tracefs_mounted=0
    tracefs=/sys/kernel/tracing
  fi
fi
if [ "$trace" = auto ]; then
  if [ -w "$tracefs/instances" ] && [ -d "$tracefs/events/block/block_rq_issue" ]; then trace=on; else trace=off; fi
fi
if [ "$trace" = on ]; then
  [ -d "$tracefs/events/block/block_rq_issue" ] || die "--trace: no block tracepoints in $tracefs"
  trace_inst=$tracefs/instances/minfs-compare-$$
  mkdir "$trace_inst"
  echo 0 >"$trace_inst/tracing_on"
  echo mono >"$trace_inst/trace_clock"
  # Per CPU; a whole drive's full-scale runs (and ext4's lazy init) make more requests.
  if [ "$whole_drive" = 1 ]; then echo 262144 >"$trace_inst/buffer_size_kb"; else echo 65536 >"$trace_inst/buffer_size_kb"; fi
  read -r maj min < <(stat -L -c '%t %T' "$dev")
  devnum=$(( (16#$maj << 20) | 16#$min ))
  for ev in block_rq_issue block_rq_complete; do
    echo "dev == $devnum" >"$trace_inst/events/block/$ev/filter"
    echo 1 >"$trace_inst/events/block/$ev/enable"
  done
fi
hdd_profiles=()
hdd_variants=()
if [ "$trace" = on ] && "$bench" hdd-replay --help >/dev/null 2>&1; then
  # The drive model's three rule sets (the shipped one first; docs/HDD-MODEL.md, "Write
  # hits"), and the same drive as 4Kn.
  hdd_variants=(st1000dm003 st1000dm003-write-first st1000dm003-merge)
  hdd_profiles=("${hdd_variants[@]}" st1000dm003-4kn)
  if [ -n "$emulated" ] && [[ " ${hdd_profiles[*]} " != *" $emulated "* ]]; then
    hdd_profiles+=("$emulated")
  fi
fi

# ---------------------------------------------------------------- compare.json
json_list() { local first=1; printf '['; for x in "$@"; do [ $first = 1 ] || printf ', '; first=0; printf '"%s"' "$x"; done; printf ']'; }
{
  printf '{\n'
  printf '  "workloads": %s,\n' "$(json_list "${workload_names[@]}")"
  printf '  "targets": %s,\n' "$(json_list "${target_list[@]}")"
  printf '  "runs": %s,\n' "$runs"
  printf '  "scale": %s,\n' "$scale"
  printf '  "seed": %s,\n' "${seed:-null}"
  printf '  "block_size": %s,\n' "${block_size:-null}"
  if [ "$whole_drive" = 1 ]; then
    printf '  "device": "%s (loop device, direct I/O, over hddsim emulate --profile %s: the whole %d-byte drive, backed by a sparse image)",\n' "$device_label" "$emulated" "$dev_bytes"
  elif [ -n "$emulated" ]; then
    printf '  "device": "%s (loop device, direct I/O, over hddsim emulate --profile %s backed by a %d MiB zero-filled image)",\n' "$device_label" "$emulated" $((dev_bytes >> 20))
  elif [ -n "$image" ]; then
    printf '  "device": "%s (loop device, direct I/O, over a %d MiB zero-filled image)",\n' "$device_label" $((dev_bytes >> 20))
  else
    printf '  "device": "%s",\n' "$device_label"
  fi
  printf '  "sector_size": %s,\n' "$(cat "$queue/logical_block_size")"
  printf '  "content": "%s",\n' "$content"
  printf '  "order": "%s",\n' "$order"
  printf '  "trace": %s,\n' "$([ "$trace" = on ] && echo true || echo false)"
  printf '  "profiles": %s,\n' "$(json_list "${hdd_profiles[@]}")"
  printf '  "variants": %s\n' "$(json_list "${hdd_variants[@]}")"
  printf '}\n'
} >"$out/compare.json"

# ---------------------------------------------------------------- targets
declare -A target_cmds=()
# record TARGET CMD...: remember a command TARGET's preparation or run uses, for SETUP.md.
record() {
  local t=$1 line
  shift
  line="$*"
  line=${line//$dev/DEV}; line=${line//$mnt/MNT}; line=${line//$minfs/minfs}
  if [[ $'\n'"${target_cmds[$t]:-}" != *$'\n'"$line"$'\n'* ]]; then
    target_cmds[$t]+="$line"$'\n'
  fi
}
declare -A fs_info=()
ext4_mkfs=(mkfs.ext4 -F -q -O ^has_journal -E lazy_itable_init=0,lazy_journal_init=0,nodiscard)
# A typical deployment: mkfs.ext4's defaults (lazy inode-table init: ext4lazyinit zeroes the
# inode tables in the background after mount), without the journal.
ext4_defaults_mkfs=(mkfs.ext4 -F -q -O ^has_journal)
xfs_mkfs=(mkfs.xfs -f -q -K)
# On the whole emulated drive: the 4096-byte sectors mkfs.xfs takes on the real 512e drive
# (from its physical sector size, which a loop device over a file reports as 512), so its log
# writes are whole physical sectors as there.
[ "$whole_drive" = 1 ] && xfs_mkfs+=(-s size=4096)

# prepare TARGET: make the device ready for TARGET; sets backend and target_bs.
prepare() {
  local t=$1
  target_bs=$block_size
  [[ $t == *@* ]] && target_bs=${t#*@}
  case ${t%%@*} in
    minfs|minfs-512)
      [ "$t" = minfs-512 ] && target_bs=512
      record "$t" "$minfs" mkfs -f -L compare "$dev"
      retry_busy "$minfs" mkfs -f -L compare "$dev" >/dev/null
      [ -n "${fs_info[minfs]:-}" ] || fs_info[minfs]=$("$minfs" info "$dev")
      backend="minfs:$dev"
      ;;
    minfs-fuse)
      record "$t" "$minfs" mkfs -f -L compare "$dev"
      retry_busy "$minfs" mkfs -f -L compare "$dev" >/dev/null
      record "$t" "$minfs" mount "$dev" "$mnt"
      "$minfs" mount "$dev" "$mnt" >/dev/null
      fuse_mounted=1
      # FileNvm opens an existing file only when it holds a Cannyls header, so the storage
      # file is sized first (a minfs file of one extent) and taken by `existing-file:`.
      record "$t" truncate -s CAPACITY "$mnt/cannyls.lusf"
      truncate -s "$cur_capacity" "$mnt/cannyls.lusf"
      backend="existing-file:$mnt/cannyls.lusf"
      ;;
    minfs-fuse-grow)
      record "$t" "$minfs" mkfs -f -L compare "$dev"
      retry_busy "$minfs" mkfs -f -L compare "$dev" >/dev/null
      record "$t" "$minfs" mount "$dev" "$mnt"
      "$minfs" mount "$dev" "$mnt" >/dev/null
      fuse_mounted=1
      # FileNvm::create_if_absent makes the file; it grows as Cannyls writes past its end
      # (minfs allocates ahead and commits the size at fsync, close and unmount).
      backend="file:$mnt/cannyls.lusf"
      ;;
    ext4|ext4-prealloc)
      record "$t" "${ext4_mkfs[@]}" "$dev"
      retry_busy "${ext4_mkfs[@]}" "$dev" >/dev/null
      record "$t" mount "$dev" "$mnt"
      retry_busy mount "$dev" "$mnt"
      [ -n "${fs_info[ext4]:-}" ] || fs_info[ext4]=$(tune2fs -l "$dev")
      if [ "${t%%@*}" = ext4 ]; then backend="file:$mnt/cannyls.lusf"; else backend="file-prealloc:$mnt/cannyls.lusf"; fi
      ;;
    ext4-defaults)
      record "$t" "${ext4_defaults_mkfs[@]}" "$dev"
      retry_busy "${ext4_defaults_mkfs[@]}" "$dev" >/dev/null
      record "$t" mount "$dev" "$mnt"
      retry_busy mount "$dev" "$mnt"
      [ -n "${fs_info[ext4-defaults]:-}" ] || fs_info[ext4-defaults]=$(tune2fs -l "$dev")
      backend="file:$mnt/cannyls.lusf"
      ;;
    xfs|xfs-prealloc)
      record "$t" "${xfs_mkfs[@]}" "$dev"
      retry_busy "${xfs_mkfs[@]}" "$dev" >/dev/null
      record "$t" mount "$dev" "$mnt"
      retry_busy mount "$dev" "$mnt"
      [ -n "${fs_info[xfs]:-}" ] || fs_info[xfs]=$(xfs_info "$mnt")
      if [ "${t%%@*}" = xfs ]; then backend="file:$mnt/cannyls.lusf"; else backend="file-prealloc:$mnt/cannyls.lusf"; fi
      ;;
    raw)
      record "$t" wipefs -a -q "$dev"
      retry_busy wipefs -a -q "$dev"
      backend="raw:$dev"
      ;;
  esac
}

# release TARGET: unmount what prepare mounted.
release() {
  case ${1%%@*} in
    minfs-fuse|minfs-fuse-grow)
      "$minfs" umount "$mnt" >/dev/null; fuse_mounted=0
      record "$1" "$minfs" umount "$mnt" ;;
    ext4*|xfs*)
      umount "$mnt"
      record "$1" umount "$mnt" ;;
  esac
}

drop_caches() {
  sync
  [ -w /proc/sys/vm/drop_caches ] && echo 3 >/proc/sys/vm/drop_caches || true
}

# reset_drive: on the whole drive, the backing image back to holes (all zeros) before a
# target is made: a flush of the emulator's drive first (`sync FILE` fsyncs it: the emulator
# writes out what it still holds, and the modelled cache is drained), then one punch.
reset_drive() {
  sync "$emu_mnt/disk"
  fallocate --punch-hole --offset 0 --length "$dev_bytes" "$image"
}

# ---------------------------------------------------------------- the runs
failures=0
nt=${#target_list[@]}
total=$(( runs * ${#workload_names[@]} * nt ))
n=0

# Progress: the time since the first run began, and an estimate of the time left. Each
# remaining run is estimated by the mean time (preparation, run, replays) of its workload and
# target so far, else of its workload on the other targets, else of all runs so far.
declare -A cell_ms=() cell_n=()
now_ms() { date +%s%3N; }
human() { # milliseconds → "1h02m", "12m03s", "45s"
  local s=$(( $1 / 1000 ))
  if [ "$s" -ge 3600 ]; then printf '%dh%02dm' $((s / 3600)) $((s % 3600 / 60))
  elif [ "$s" -ge 60 ]; then printf '%dm%02ds' $((s / 60)) $((s % 60))
  else printf '%ds' "$s"
  fi
}
# left_ms DONE: the estimated time of the runs of the plan (below) after the first DONE.
left_ms() {
  local done=$1 sum=0 all_ms=0 all_n=0 c i step wi t w wsum wn t2 est
  local -A wmean=()
  for c in "${!cell_ms[@]}"; do all_ms=$((all_ms + cell_ms[$c])); all_n=$((all_n + cell_n[$c])); done
  [ "$all_n" -gt 0 ] || { echo 0; return; }
  for w in "${workload_names[@]}"; do
    wsum=0 wn=0
    for t2 in "${target_list[@]}"; do
      [ -n "${cell_n[$w/$t2]:-}" ] || continue
      wsum=$((wsum + cell_ms[$w/$t2])); wn=$((wn + cell_n[$w/$t2]))
    done
    [ "$wn" = 0 ] || wmean[$w]=$((wsum / wn))
  done
  for ((i = done; i < ${#plan[@]}; i++)); do
    step=${plan[$i]#* }  # "WI TARGET"
    wi=${step%% *} t=${step#* }
    w=${workload_names[$wi]}
    if [ -n "${cell_n[$w/$t]:-}" ]; then est=$((cell_ms[$w/$t] / cell_n[$w/$t]))
    elif [ -n "${wmean[$w]:-}" ]; then est=${wmean[$w]}
    else est=$((all_ms / all_n))
    fi
    sum=$((sum + est))
  done
  echo "$sum"
}

say "device $dev ($((dev_bytes >> 20)) MiB), results in $out"
# The runs in order: (run, workload index, target).
plan=()
if [ "$order" = targets ]; then
  for t in "${target_list[@]}"; do
    for wi in "${!workload_names[@]}"; do
      for ((k = 1; k <= runs; k++)); do plan+=("$k $wi $t"); done
    done
  done
else
  for ((k = 1; k <= runs; k++)); do
    for wi in "${!workload_names[@]}"; do
      # Rotate the target order from run to run so no target always goes first.
      for ((j = 0; j < nt; j++)); do plan+=("$k $wi ${target_list[$(( (j + k - 1) % nt ))]}"); done
    done
  done
fi
first_ms=$(now_ms)
for step in "${plan[@]}"; do
  read -r k wi t <<<"$step"
  w=${workload_names[$wi]}
  wf=${workload_files[$wi]}
  cur_capacity=${capacities[$wi]}
  n=$((n + 1))
  iter_ms=$(now_ms)
  dir=$out/runs/$w/$t
  mkdir -p "$dir"
  base=$dir/run-$k
  rm -f "$base".*
  if [ "$whole_drive" = 1 ]; then
    # As a deployment: the run starts right after the filesystem is made and mounted.
    reset_drive
    record "$t" sync EMULATOR/disk "&&" fallocate --punch-hole --offset 0 --length "$dev_bytes" IMAGE
    drop_caches
    record "$t" sync "&&" echo 3 ">" /proc/sys/vm/drop_caches
    prepare "$t"
  else
    prepare "$t"
    drop_caches
  fi
  bs_args=()
  [ -n "$target_bs" ] && bs_args=(--block-size "$target_bs")
  run_args=(run --workload "$wf" --scale "$scale" "${seed_args[@]}" --backend "$backend"
    "${bs_args[@]}" --content "$content" --json "$base.json" --op-log "$base.oplog" --no-progress)
  [ "${t%%@*}" = raw ] && run_args+=(--force)
  rel_wf=${wf#"$repo"/}
  record "$t" minfs-bench run --workload bencher-workloads/workloads/W.wl --scale "$scale" \
    "${seed_args[@]}" --backend "$backend" "${bs_args[@]}" --content "$content" \
    --json OUT/runs/W/$t/run-K.json --op-log OUT/runs/W/$t/run-K.oplog --no-progress \
    $([ "${t%%@*}" = raw ] && echo --force)
  [ -n "$trace_inst" ] && { echo >"$trace_inst/trace"; echo 1 >"$trace_inst/tracing_on"; }
  start=$(date +%s.%N)
  set +e
  "$bench" "${run_args[@]}" >"$base.log" 2>&1
  rc=$?
  set -e
  [ -n "$trace_inst" ] && echo 0 >"$trace_inst/tracing_on"
  secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  if [ "$rc" != 0 ]; then
    failures=$((failures + 1))
    { echo "minfs-bench exited with $rc"; cat "$base.log"; } >"$base.error"
    rm -f "$base.json"
    result="FAILED (exit $rc), see $base.error"
  else
    result="${secs}s"
  fi
  rm -f "$base.log"
  if [ -n "$trace_inst" ]; then
    grep -v '^#' "$trace_inst/trace" >"$base.trace" || true
    overrun=$(awk '/^overrun:/ { s += $2 } END { print s + 0 }' "$trace_inst"/per_cpu/cpu*/stats)
    [ "$overrun" = 0 ] || echo "tracefs lost $overrun events (buffer overrun)" >"$base.trace-warning"
    if [ "$rc" = 0 ]; then
      for p in "${hdd_profiles[@]}"; do
        "$bench" hdd-replay --profile "$p" --run "$base.json" --json "$base.model-$p.json" \
          "$base.trace" "$base.oplog" >/dev/null 2>"$base.model-$p.error" \
          && rm -f "$base.model-$p.error" \
          || { failures=$((failures + 1)); say "hdd-replay $p failed for $base"; }
      done
    fi
  fi
  release "$t"
  # Kept after every run, so that a comparison cut short still has them.
  [ -z "$emulated" ] || cp "$emu_mnt/stats.json" "$out/emulator-stats.json"
  end_ms=$(now_ms)
  cell_ms[$w/$t]=$(( ${cell_ms[$w/$t]:-0} + end_ms - iter_ms ))
  cell_n[$w/$t]=$(( ${cell_n[$w/$t]:-0} + 1 ))
  progress="elapsed $(human $((end_ms - first_ms)))"
  [ "$n" = "$total" ] || progress+=", about $(human "$(left_ms "$n")") left"
  say "[$n/$total] run $k $w $t: $result ($progress)"
done

# ---------------------------------------------------------------- SETUP.md
sysval() { cat "$1" 2>/dev/null || echo "n/a"; }
{
  echo "# Setup of this comparison"
  echo
  echo "Written by \`scripts/compare.sh\`; \`report.md\` is rendered from the runs by \`minfs-bench report\`."
  echo
  echo "| | |"
  echo "| --- | --- |"
  echo "| date (UTC) | $(date -u '+%Y-%m-%d %H:%M') |"
  echo "| host | $host |"
  echo "| kernel | $(uname -srvm) |"
  echo "| CPU | $(lscpu | sed -n 's/^Model name: *//p' | sed -n 1p), $(nproc) online CPUs |"
  echo "| RAM | $(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo) |"
  if [ "$whole_drive" = 1 ]; then
    echo "| device | \`$dev\`, a loop device (\`$loop_cmd\`) over the file of an emulated drive of the profile's whole capacity, $dev_bytes bytes: \`$emu_cmd\` ($("$hddsim" --version)), profile \`$emulated\` ($("$hddsim" validate --profile "$emulated" | sed -n '1s/^hddsim validate: //p' | sed 's/|/\\|/g')), backed by a sparse image on $(findmnt -no SOURCE,FSTYPE -T "$work" | tr -s ' ') (zeros are stored as holes). Before each target is made the drive is flushed and the image punched back to holes (\`sync $emu_mnt/disk; fallocate --punch-hole --offset 0 --length $dev_bytes IMAGE\`), caches are dropped, and the run starts right after the mkfs and mount, as in a deployment: ext4's lazy inode-table init (ext4-defaults) and XFS's log in the middle of the drive act as on the real drive. Replies wait for the modelled completion; the emulator's statistics at the end: \`emulator-stats.json\` |"
    echo "| XFS sector size | \`mkfs.xfs -s size=4096\`: the real ST1000DM003 reports 4096-byte physical sectors (512e), from which mkfs.xfs takes a 4096-byte sector size (its log writes are then whole physical sectors); a loop device over a file reports 512-byte physical sectors, so it is given explicitly |"
    echo "| loop direct I/O | $(sysval "/sys/class/block/$devname/loop/dio") |"
  elif [ -n "$emulated" ]; then
    echo "| device | \`$dev\`, a loop device (\`$loop_cmd\`) over the file of an emulated drive: \`$emu_cmd\` ($("$hddsim" --version)), profile \`$emulated\` ($("$hddsim" validate --profile "$emulated" | sed -n '1s/^hddsim validate: //p' | sed 's/|/\\|/g')), backed by a $((dev_bytes >> 20)) MiB image on $(findmnt -no SOURCE,FSTYPE -T "$work" | tr -s ' '), zero-filled and synced before the first run: \`$zero_cmd\`. Replies wait for the modelled completion; the emulator's statistics at the end: \`emulator-stats.json\` |"
    echo "| loop direct I/O | $(sysval "/sys/class/block/$devname/loop/dio") |"
  elif [ -n "$image" ]; then
    echo "| device | \`$dev\`, a loop device (\`$loop_cmd\`) over a $((dev_bytes >> 20)) MiB image on $(findmnt -no SOURCE,FSTYPE -T "$work" | tr -s ' ') ($(findmnt -no OPTIONS -T "$work")), zero-filled and synced before the first run: \`$zero_cmd\` |"
    host_src=$(findmnt -no SOURCE -T "$work")
    host_disk=$(lsblk -no PKNAME "$host_src" 2>/dev/null | sed -n 1p)
    [ -n "$host_disk" ] || host_disk=$(basename "$host_src")
    echo "| image's host disk | $(lsblk -dno NAME,SIZE,ROTA,MODEL "/dev/$host_disk" 2>/dev/null | tr -s ' ' || echo n/a) (name, size, rotational, model as lsblk reports) |"
    echo "| loop direct I/O | $(sysval "/sys/class/block/$devname/loop/dio") |"
  else
    echo "| device | \`$dev\`, $(lsblk -dno SIZE,MODEL "$dev" | tr -s ' ') |"
  fi
  echo "| queue/rotational | $(sysval "$queue/rotational") |"
  echo "| queue/logical_block_size | $(sysval "$queue/logical_block_size") |"
  echo "| queue/physical_block_size | $(sysval "$queue/physical_block_size") |"
  echo "| queue/scheduler | $(sysval "$queue/scheduler") |"
  echo "| queue/write_cache | $(sysval "$queue/write_cache") |"
  echo "| queue/max_sectors_kb | $(sysval "$queue/max_sectors_kb") |"
  echo "| queue/nr_requests | $(sysval "$queue/nr_requests") |"
  echo "| queue/max_segments, max_segment_size | $(sysval "$queue/max_segments"), $(sysval "$queue/max_segment_size") (a request of more scattered pages than max_segments is split: a 1 MiB buffer of 4 KiB pages is 256) |"
  echo "| fs.fuse.max_pages_limit | ${max_pages_before:-absent} before the run; \`hddsim emulate\` and \`minfs mount\` raise it for their mounts (a Cannyls lump is then one FUSE request); put back to ${max_pages_before:-it} when the run ends |"
  echo "| transparent huge pages | $(sysval /sys/kernel/mm/transparent_hugepage/enabled) (\`minfs mount\` keeps its buffers on huge pages unless \`never\`; Cannyls' own buffers are the allocator's 4 KiB pages) |"
  echo "| workloads | ${workload_names[*]} |"
  echo "| targets | ${target_list[*]} |"
  echo "| scale | $scale (every count in the workload files × $scale) |"
  seed_text="each workload file's own \`Seed:\` (0 where it has none)"
  [ -z "$seed" ] || seed_text=$seed
  echo "| seed | $seed_text |"
  if [ "$order" = targets ]; then
    echo "| runs | $runs per workload and target; target by target (\`--order targets\`: every workload of one target before the next); caches dropped (\`sync; echo 3 > /proc/sys/vm/drop_caches\`) before each run |"
  else
    echo "| runs | $runs per workload and target; targets interleaved run by run, the order rotated each run; caches dropped (\`sync; echo 3 > /proc/sys/vm/drop_caches\`) before each run |"
  fi
  if [ "$content" = zeros ]; then
    echo "| lump content | zeros (\`--content zeros\`: the model never looks at the bytes; the emulator stores zeros as holes) |"
  else
    echo "| lump content | each lump's deterministic stream (\`--content stream\`) |"
  fi
  if [ -n "$block_size" ]; then
    echo "| Cannyls block size | $block_size (minfs-512: 512) |"
  else
    echo "| Cannyls block size | each target's default: minfs 4096 (MinfsNvm's), minfs-512 512, the FileNvm targets 512; TARGET@N at N (each run's JSON records its block_size) |"
  fi
  echo "| capacity | minfs-bench's default per workload and block size (1.5 × peak live data + journal; a target at 4096 gets more than one at 512 where lumps round up); largest $((max_capacity >> 20)) MiB |"
  echo "| block trace | $trace$([ "$trace" = on ] && echo " (tracefs instance, trace_clock mono, block_rq_issue/complete filtered to dev $devnum)") |"
  echo "| HDD model profiles | ${hdd_profiles[*]:-none} (the rule sets of one drive, shipped first: ${hdd_variants[*]:-none}) |"
  echo "| git revision | $git_rev when the run started$([ -n "$bin_dir" ] && echo " (binaries from \`$bin_dir\`, built elsewhere: \`minfs-bench --version\` below)") |"
  echo
  echo "## Tools"
  echo
  echo '```'
  "$minfs" --version
  "$bench" --version
  echo "cannyls $(awk '/^name = "cannyls"$/ { getline; print $3 }' "$repo/Cargo.lock" | tr -d '"')"
  rustc --version 2>/dev/null || true
  mkfs.ext4 -V 2>&1 | sed -n 1p
  mkfs.xfs -V 2>&1 | sed -n 1p
  losetup --version
  echo '```'
  echo
  echo "## Commands"
  echo
  echo "DEV is the device above, MNT a fresh mount point, OUT this directory, W the workload, K the"
  echo "run. Before every run of every workload the device is prepared anew for its target with"
  echo "these commands, in this order (an umount comes after the run)."
  for t in "${target_list[@]}"; do
    echo
    echo "### $t"
    echo
    echo '```'
    printf '%s' "${target_cmds[$t]:-}"
    echo '```'
  done
  for fs in ext4 ext4-defaults xfs minfs; do
    [ -n "${fs_info[$fs]:-}" ] || continue
    case $fs in
      ext4) echo; echo "## \`tune2fs -l DEV\` after mkfs.ext4" ;;
      ext4-defaults) echo; echo "## \`tune2fs -l DEV\` after mkfs.ext4 with its defaults (ext4-defaults)" ;;
      xfs) echo; echo "## \`xfs_info MNT\` after mkfs.xfs" ;;
      minfs) echo; echo "## \`minfs info DEV\` after minfs mkfs" ;;
    esac
    echo
    echo '```'
    echo "${fs_info[$fs]}" | sed "s#$dev#DEV#g; s#$mnt#MNT#g"
    echo '```'
  done
} >"$out/SETUP.md"

if [ -n "$emulated" ]; then
  cp "$emu_mnt/stats.json" "$out/emulator-stats.json"
  # Self-consistency: each run's trace replayed through the same profile against what the
  # emulator made of it (measured). About 1 when the emulation and the replay agree.
  if "$repo/scripts/emulation-check.sh" "$out" "$emulated" >"$out/emulation-check.md" 2>/dev/null; then
    say "emulated vs replayed (replayed / measured, per run):"
    grep '^| ' "$out/emulation-check.md" | tail -n +3 |
      awk -F' *[|] *' '{ printf "  %s %s run %s: %s\n", $2, $3, $4, $7 }' >&2
    say "emulated vs replayed: $(tail -1 "$out/emulation-check.md")"
  else
    rm -f "$out/emulation-check.md"
  fi
fi
"$bench" report "$out" || { failures=$((failures + 1)); say "minfs-bench report failed"; }
if [ "$compress" = 1 ]; then
  find "$out/runs" -type f \( -name '*.oplog' -o -name '*.trace' \) -exec gzip -9 -n {} +
fi
say "done: $out/report.md ($failures failures)"
if [ -f "$out/report.md" ]; then
  # The report's summary: the verdict measured on this device and, where traced, the modelled
  # drive's, each with what it measures (report.md's first section).
  echo
  awk '/^## Summary$/ { on = 1; next } on && /^## / { exit } on && !/^!\[/ { gsub(/\*\*/, ""); print }' "$out/report.md" |
    cat -s
  echo "Details, tables and plots: $out/report.md"
fi
[ "$failures" = 0 ] || exit 1
