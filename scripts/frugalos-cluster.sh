#!/usr/bin/env bash
# A FrugalOS cluster of three nodes on this host, each with its own disks (a filesystem per
# disk, a FrugalOS file device on each), through a lost node and a replaced disk, every object
# checked byte for byte against what was PUT.
#
#   scripts/frugalos-cluster.sh --frugalos PATH [OPTIONS]              the scenario
#   scripts/frugalos-cluster.sh --frugalos PATH --timed N [OPTIONS]    the timed phase
#   scripts/frugalos-cluster.sh --frugalos PATH --scrub-repair [OPTIONS] a bad sector: scrub,
#                                                                       delete, repair
#   scripts/frugalos-cluster.sh --frugalos PATH --journal-bad-sector [OPTIONS] a bad sector in
#                                                                       a device's journal
#
# Setup (both modes): each disk is a loop device (`losetup --direct-io=on`) over a sparse
# image, or with --device emulated over the file of an emulated drive (`hddsim emulate`, one
# per disk); on it `minfs mkfs` + `minfs mount` (or, with --devices-on ext4, mkfs.ext4 +
# mount). Three FrugalOS servers node0..node2, each with its own data directory (on the
# ordinary filesystem), RPC and HTTP ports on 127.0.0.1: `frugalos create` node0, start it,
# then `frugalos join --contact-server node0` and start node1, node2 (as FrugalOS' own
# scripts/setup_debug_cluster.sh does). Devices: a file device per disk, DISK/dev.lusf with an
# explicit capacity; a virtual device per node over its disks, `rack` over the three nodes;
# buckets `repl` (replicated, tolerable_faults 1) and `ec` (dispersed, 2 data fragments,
# tolerable_faults 1): three members per segment, one per node.
#
# The scenario (each GET compared byte for byte with what was PUT, or expected 404):
#   1. PUT N objects per bucket (0 B, 1 B, 300,000 B, 5,000,000 B, the rest random sizes in
#      between); GET each through every node; HEAD .../fragments of each `ec` object (3 found).
#   2. SIGKILL node1's FrugalOS (its mounts stay). GET every object through node0 and node2;
#      PUT 4 new objects per bucket and DELETE 2 per bucket through them; GET again.
#   3. Unmount node1's disks, fsck -n each (`minfs fsck -n`, or `e2fsck -fn`), mount again,
#      start node1. Wait until it has synchronised: FrugalOS repairs only when told to
#      (`frugalos set-repair-config --repair-idleness-threshold S --repair-concurrency-limit
#      1`, sent to the node every poll, as FrugalOS' it/testsuites/repair.sh does); the node
#      counts as synchronised when every live `ec` object has 3 fragments found (HEAD
#      .../fragments), its /metrics show the repair_prep and repair queues empty (enqueued =
#      dequeued: an item put back to wait is enqueued again), at least as many successful
#      repairs as `ec` objects PUT while it was down, and these figures are the same two polls
#      (3 s) in a row. A repair starts no earlier than put_content_timeout (60 s by default)
#      after the PUT was applied on the node. Then `frugalos stop` node0 and GET everything
#      through node1 and node2; start node0 again and GET everything through it.
#   4. Replace node2's first disk: PUT /v1/devices/DEV/state {"state":"stopped"} (FrugalOS'
#      device stop; retried while the configuration's Raft answers "Unstable cluster"),
#      unmount the disk's filesystem and GET everything through every node, the disk gone (if
#      FrugalOS still holds the device file, `frugalos stop` node2 first instead), remove the
#      disk (loop device, emulator, image) and make a new one in its place (new image, `minfs
#      mkfs` or mkfs.ext4, mounted at the same path).
#      FrugalOS 1.2.1 has no device start (state "started" changes nothing), so node2 is
#      restarted (`frugalos stop` if still running, then start): its file device, absent on
#      the new disk, is created empty at the same path, and its Raft members and fragments
#      come back from the other nodes (Raft log transfer, then repair), as FrugalOS issue #157
#      describes for a deleted .lusf file. Wait for synchronisation as in step 3 (at least as
#      many successful repairs as live `ec` objects, with one disk per node; at least one with
#      more), print the device file on the new disk and the data each device holds,
#      then with node0 stopped GET everything through node1 and node2, start node0, and with
#      node1 stopped GET everything through node0 and node2; start node1.
#   5. `frugalos stop` every node, unmount every disk, fsck -n each: must be clean.
# A GET right after a node was killed, stopped or started may fail while Raft elects leaders:
# each GET is given up to --settle seconds to answer as expected, and any wait is printed.
# Where FrugalOS itself fails a step the failure is printed and counted, and the scenario goes
# on where it can; exit status 1.
#
# The timed phase (--timed N): ROUNDS rounds of each filesystem, alternated (minfs, ext4,
# ext4, minfs, ...), each on a fresh cluster (the same disks, a new mkfs each round): 64
# warm-up PUTs of 1 KiB per bucket (so that every segment's Raft group has elected its
# leader), then N PUTs of 1 MiB objects, then N GETs (checked afterwards), in `repl` then
# `ec`, all through node0; wall time of each phase (with --device emulated also what the
# emulated drives were asked during each phase, from their stats.json); at the end the
# medians per filesystem and their ratio (minfs / ext4).
#
# The scrub-and-repair mode (--scrub-repair; disks on minfs): node1's disk is a loop device over
# `hddsim emulate --profile st1000dm003+read_error_recovery_ms=MS` (the other two over
# images). Objects are PUT to `repl` and `ec`, and `ec/ec-target` of 12,000,000 bytes, and
# checked through every node; node1 is stopped and its disk unmounted; `minfs-cannyls lumps
# --json` lists the lumps of its device with their device bytes; the largest object content
# lump (id 01...) is ec-target's fragment (half of it: every other object is at most 5,000,000
# bytes), checked against its ETag (the lump id's low 64 bits are the object's version;
# versions are numbered per segment, so a version alone names no object), and the emulator
# restarted on the same image with `--bad-sectors` over one 4 KiB physical sector in the
# middle of that lump. Then, with node1 running again: `minfs scrub` names dev.lusf and
# `minfs-cannyls scrub --json` names exactly that lump (checked); node1 is stopped, its disk
# unmounted, `minfs-cannyls delete --yes` deletes the lump (the listing no longer has it;
# HEAD .../fragments through node0 printed, with node1 down); the disk mounted
# and node1 started, repair enabled (set-repair-config, as in step 3) until it has
# synchronised (at least one successful repair). Then node1 stopped and unmounted again: the
# listing has the lump back (where), `minfs-cannyls scrub` says what now lies over the bad
# sector; mounted, started; node0 stopped and every object GET through node1 and node2 (an
# `ec` object needs node1's fragment then) and compared with what was PUT; node0 started;
# everything stopped, fsck -n. Each step prints its evidence and how long it took.
#
# The journal mode (--journal-bad-sector; disks on minfs): every disk is mounted with
# `minfs-cannyls mount` (minfs mount serving each Cannyls storage file through MinfsNvm, which
# keeps a copy of the storage's header and journal; its warnings in WORK/logs/mount-DISK.log),
# node1's disk on `hddsim emulate --profile st1000dm003+read_error_recovery_ms=MS` as in
# --scrub-repair. Objects are PUT to `repl` and `ec` and checked through every node, and node1
# synchronised (an `ec` PUT returns before every fragment is written, so node1 repairs what it
# lacks first); node1 is stopped and its disk unmounted; `minfs-cannyls fsck -n` shows the copy level with the
# primary, `minfs-cannyls lumps --json` lists the lumps and where the journal's live records
# lie on the device, and the emulator is restarted with `--bad-sectors` over one 4 KiB physical
# sector inside them (every open of the device reads it). First, the control: the disk mounted
# with plain `minfs mount` and node1 started — its device must fail to open (FrugalOS'
# log says why; the emulated drive's failed reads are counted); node1 stopped, the disk
# unmounted. Then the disk mounted with `minfs-cannyls mount` and node1 started with repair
# enabled until it has synchronised: the mount's log must name the sector served from the copy
# and rewritten (the drive's failed reads counted again), every `ec` object has 3 fragments
# found, and node1's repair metrics must show no repair (nothing to repair); with node0
# stopped, everything is GET through node1 and node2 and compared; node1 stopped, its object
# content lumps (ids 01...) listed again — the same ids and lengths as before the bad sector —
# and `minfs-cannyls scrub` run (no bad range left); everything stopped, fsck -n.
#
# Everything it started or made (FrugalOS servers, mounts, emulators, loop devices, images,
# WORK) is removed on exit, error and Ctrl-C, unless --keep (then WORK stays, with the
# FrugalOS logs, and the rest is still removed).
#
# Options:
#   --frugalos PATH      the frugalos binary (1.2.1; how to build it: docs/FRUGALOS.md)
#   --minfs PATH         the minfs binary (default: target/release/minfs, built when missing)
#   --hddsim PATH        the hddsim binary, for --device emulated (default:
#                        target/release/hddsim, built when missing)
#   --devices-on FS      minfs (default) or ext4: the filesystem on each disk (scenario mode)
#   --device KIND        loop (default: a loop device over a sparse image) or
#                        emulated[:PROFILE] (a loop device over `hddsim emulate --profile
#                        PROFILE` backed by a sparse image; default profile st1000dm003)
#   --disks-per-node D   disks (filesystems, file devices) per node (default 1)
#   --disk-size SIZE     each disk (default 2G)
#   --device-capacity N  bytes of each FrugalOS file device (default 1073741824)
#   --objects N          objects per bucket in step 1 (default 12, at least 4)
#   --settle S           seconds a GET may take to answer as expected after a node's
#                        kill, stop or start (default 60)
#   --repair-idleness S  --repair-idleness-threshold sent to a node that must synchronise
#                        (default 0.5, as FrugalOS' it/testsuites/repair.sh)
#   --sync-timeout S     seconds to wait for a node to synchronise (default 900)
#   --timed N            the timed phase instead of the scenario: N objects of 1 MiB per
#                        bucket
#   --scrub-repair       the scrub-and-repair mode instead of the scenario
#   --minfs-cannyls PATH the minfs-cannyls binary, for --scrub-repair and --journal-bad-sector (default:
#                        target/release/minfs-cannyls, built when missing)
#   --journal-bad-sector the journal mode instead of the scenario
#   --recovery-ms MS     --scrub-repair, --journal-bad-sector: how long the emulated drive takes to fail a read of
#                        the bad sector (default 7000: a TLER drive's 7 s, Western Digital FAQ
#                        1397; the profile's own 120000 is a desktop drive's "up to 2 minutes")
#   --rounds R           timed rounds per filesystem (default 3)
#   --http-port P        HTTP ports P, P+1, P+2 on 127.0.0.1 (default 13910)
#   --rpc-port P         RPC ports P, P+1, P+2 on 127.0.0.1 (default 14910)
#   --work DIR           working directory, must not exist (default /var/tmp/frugalos-cluster)
#   --keep               leave WORK (logs, data directories; images are removed)
#   -h, --help
#
# Needs root, /dev/fuse, losetup, curl (mkfs.ext4 and e2fsck for ext4, jq for a timed phase on
# emulated drives). Exit codes: 0 every check passed, 1 a check or a step failed, 2 usage
# error, 130 interrupted.
set -euo pipefail
shopt -s inherit_errexit 2>/dev/null || true

repo=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=lib/emulator.sh
source "$repo/scripts/lib/emulator.sh"
# shellcheck source=lib/retry.sh
source "$repo/scripts/lib/retry.sh"
prog="frugalos-cluster.sh"
say() { echo "$prog: $*" >&2; }
die() { echo "$prog: error: $*" >&2; exit 1; }
usage_error() { echo "$prog: error: $*" >&2; echo "(see $prog --help)" >&2; exit 2; }

frugalos=""
minfs=""
hddsim=""
fs=minfs
device=loop
disks_per_node=1
disk_size=2G
capacity=1073741824
nobjects=12
settle=60
idleness=0.5
sync_timeout=900
timed=0
scrub_repair=0
journal_bad=0
minfs_cannyls=""
recovery_ms=7000
rounds=3
http_base=13910
rpc_base=14910
work=/var/tmp/frugalos-cluster
keep=0
need_arg() { if [ $# -lt 2 ] || [ -z "$2" ]; then usage_error "$1 needs a value"; fi; }
while [ $# -gt 0 ]; do
  case "$1" in
    --frugalos) need_arg "$@"; frugalos=$2; shift 2 ;;
    --minfs) need_arg "$@"; minfs=$2; shift 2 ;;
    --hddsim) need_arg "$@"; hddsim=$2; shift 2 ;;
    --devices-on) need_arg "$@"; fs=$2; shift 2 ;;
    --device) need_arg "$@"; device=$2; shift 2 ;;
    --disks-per-node) need_arg "$@"; disks_per_node=$2; shift 2 ;;
    --disk-size) need_arg "$@"; disk_size=$2; shift 2 ;;
    --device-capacity) need_arg "$@"; capacity=$2; shift 2 ;;
    --objects) need_arg "$@"; nobjects=$2; shift 2 ;;
    --settle) need_arg "$@"; settle=$2; shift 2 ;;
    --repair-idleness) need_arg "$@"; idleness=$2; shift 2 ;;
    --sync-timeout) need_arg "$@"; sync_timeout=$2; shift 2 ;;
    --timed) need_arg "$@"; timed=$2; shift 2 ;;
    --scrub-repair) scrub_repair=1; shift ;;
    --journal-bad-sector) journal_bad=1; shift ;;
    --minfs-cannyls) need_arg "$@"; minfs_cannyls=$2; shift 2 ;;
    --recovery-ms) need_arg "$@"; recovery_ms=$2; shift 2 ;;
    --rounds) need_arg "$@"; rounds=$2; shift 2 ;;
    --http-port) need_arg "$@"; http_base=$2; shift 2 ;;
    --rpc-port) need_arg "$@"; rpc_base=$2; shift 2 ;;
    --work) need_arg "$@"; work=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) usage_error "unknown argument \`$1\`" ;;
  esac
done
number() { [[ "$2" =~ ^[0-9]+$ ]] || usage_error "$1 $2: not a whole number"; }
[ -n "$frugalos" ] || usage_error "--frugalos PATH is required"
[ -x "$frugalos" ] || usage_error "--frugalos $frugalos: not an executable file"
case "$fs" in minfs|ext4) ;; *) usage_error "--devices-on $fs: minfs or ext4" ;; esac
profile=""
case "$device" in
  loop) ;;
  emulated) profile=st1000dm003 ;;
  emulated:*) profile=${device#emulated:}
    [[ $profile =~ ^[A-Za-z0-9._-]+$ ]] || usage_error "--device $device: bad profile name" ;;
  *) usage_error "--device $device: loop or emulated[:PROFILE]" ;;
esac
number --disks-per-node "$disks_per_node"
[ "$disks_per_node" -ge 1 ] || usage_error "--disks-per-node must be at least 1"
[[ "$disk_size" =~ ^[0-9]+[KMGT]?$ ]] || usage_error "--disk-size $disk_size: e.g. 2G"
number --device-capacity "$capacity"
number --objects "$nobjects"
[ "$nobjects" -ge 4 ] || usage_error "--objects must be at least 4 (0 B, 1 B, 300,000 B, 5,000,000 B)"
number --settle "$settle"
[[ "$idleness" =~ ^[0-9]+(\.[0-9]+)?$ ]] || usage_error "--repair-idleness $idleness: seconds"
number --sync-timeout "$sync_timeout"
number --timed "$timed"
number --rounds "$rounds"
number --recovery-ms "$recovery_ms"
if [ "$scrub_repair" = 1 ]; then
  [ "$timed" = 0 ] || usage_error "--scrub-repair and --timed are two modes: name one"
  [ "$fs" = minfs ] || usage_error "--scrub-repair needs the disks on minfs"
  [ "$disks_per_node" = 1 ] || usage_error "--scrub-repair runs with one disk per node"
  [ "$device" = loop ] || usage_error "--scrub-repair puts node1's disk on an emulated drive itself (leave --device out)"
fi
if [ "$journal_bad" = 1 ]; then
  [ "$timed" = 0 ] && [ "$scrub_repair" = 0 ] || usage_error "--journal-bad-sector, --scrub-repair and --timed are modes: name one"
  [ "$fs" = minfs ] || usage_error "--journal-bad-sector needs the disks on minfs"
  [ "$disks_per_node" = 1 ] || usage_error "--journal-bad-sector runs with one disk per node"
  [ "$device" = loop ] || usage_error "--journal-bad-sector puts node1's disk on an emulated drive itself (leave --device out)"
fi
[ "$rounds" -ge 1 ] || usage_error "--rounds must be at least 1"
number --http-port "$http_base"
number --rpc-port "$rpc_base"
[ -e "$work" ] && usage_error "--work $work already exists (remove it or name another)"
[ "$(id -u)" = 0 ] || die "needs root (loop devices, mounts)"
[ -e /dev/fuse ] || die "needs /dev/fuse"
for c in curl losetup cmp; do command -v "$c" >/dev/null || die "needs $c"; done
if [ "$scrub_repair" = 1 ] || [ "$journal_bad" = 1 ]; then command -v jq >/dev/null || die "needs jq (minfs-cannyls --json)"; fi
if [ -n "$profile" ] && [ "$timed" -gt 0 ]; then command -v jq >/dev/null || die "needs jq (the emulated drives' statistics)"; fi
if [ "$fs" = ext4 ] || [ "$timed" -gt 0 ]; then
  for c in mkfs.ext4 e2fsck; do command -v "$c" >/dev/null || die "needs $c"; done
fi
target_dir=$(cd "$repo" && cargo metadata --format-version 1 --no-deps 2>/dev/null |
  sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
target_dir=${target_dir:-$repo/target}
if [ -z "$minfs" ]; then
  minfs=$target_dir/release/minfs
  [ -x "$minfs" ] || (cd "$repo" && cargo build --release -q -p minfs --bin minfs) >&2
fi
[ -x "$minfs" ] || usage_error "--minfs $minfs: not an executable file"
if [ "$scrub_repair" = 1 ] || [ "$journal_bad" = 1 ]; then
  if [ -z "$minfs_cannyls" ]; then
    minfs_cannyls=$target_dir/release/minfs-cannyls
    [ -x "$minfs_cannyls" ] || (cd "$repo" && cargo build --release -q -p cannyls-adapter --bin minfs-cannyls) >&2
  fi
  [ -x "$minfs_cannyls" ] || usage_error "--minfs-cannyls $minfs_cannyls: not an executable file"
fi
if [ -n "$profile" ] || [ "$scrub_repair" = 1 ] || [ "$journal_bad" = 1 ]; then
  if [ -z "$hddsim" ]; then
    hddsim=$target_dir/release/hddsim
    [ -x "$hddsim" ] || (cd "$repo" && cargo build --release -q -p hddsim) >&2
  fi
  [ -x "$hddsim" ] || usage_error "--hddsim $hddsim: not an executable file"
  [ -z "$profile" ] || "$hddsim" validate --profile "$profile" >/dev/null \
    || usage_error "--device $device: hddsim has no profile $profile"
fi
nodes=3
for ((i = 0; i < nodes; i++)); do
  for p in $((http_base + i)) $((rpc_base + i)); do
    if [ -n "$(ss -Hltn "sport = :$p" 2>/dev/null || true)" ]; then
      die "port $p on this host is in use (--http-port/--rpc-port name others)"
    fi
  done
done

mkdir -p "$work"
work=$(cd "$work" && pwd)
mkdir -p "$work/logs" "$work/objects" "$work/disks"
http=() rpc=() data=() fpid=()
for ((i = 0; i < nodes; i++)); do
  http[i]=$((http_base + i))
  rpc[i]=$((rpc_base + i))
  data[i]=$work/data$i
  fpid[i]=""
done
# Disks: key "NODE.DISK"; img, emu (the emulator's mountpoint), loop, mnt, mfs (the
# filesystem mounted there, or "").
declare -A img=() emu=() emupid=() loop=() mnt=() mfs=() used=()
# --scrub-repair: a disk's own emulator profile, and the LBAs its emulator makes unreadable.
declare -A disk_profile=() disk_bad=()
disks() { local i d; for ((i = 0; i < nodes; i++)); do for ((d = 0; d < disks_per_node; d++)); do echo "$i.$d"; done; done; }
node_disks() { local d; for ((d = 0; d < disks_per_node; d++)); do echo "$1.$d"; done; }
other_nodes() { local i; for ((i = 0; i < nodes; i++)); do [ "$i" = "$1" ] || echo "$i"; done; }
devid() { echo "n${1%.*}d${1#*.}"; }

failures=0
fail() { failures=$((failures + 1)); say "FAILED: $*"; }
starts=0

# --- FrugalOS servers -------------------------------------------------------------------------

start_node() { # NODE
  local i=$1 log
  starts=$((starts + 1))
  log=$work/logs/node$i-start$starts.log
  "$frugalos" start --data-dir "${data[i]}" --http-server-bind-addr "127.0.0.1:${http[i]}" \
    >"$log" 2>&1 &
  fpid[i]=$!
  for _ in $(seq 1 120); do
    kill -0 "${fpid[i]}" 2>/dev/null || { fpid[i]=""; die "node$i exited at start; see $log (use --keep)"; }
    curl -sf "http://127.0.0.1:${http[i]}/v1/servers" >/dev/null 2>&1 && { say "node$i started (pid ${fpid[i]}, HTTP ${http[i]}, RPC ${rpc[i]})"; return 0; }
    sleep 0.5
  done
  die "node$i did not answer on HTTP ${http[i]} within 60 s"
}
stop_node() { # NODE: `frugalos stop`, SIGKILL after 60 s
  local i=$1
  [ -n "${fpid[i]}" ] || return 0
  "$frugalos" stop --rpc-addr "127.0.0.1:${rpc[i]}" >>"$work/logs/node$i-stop.log" 2>&1 || true
  for _ in $(seq 1 120); do kill -0 "${fpid[i]}" 2>/dev/null || break; sleep 0.5; done
  if kill -0 "${fpid[i]}" 2>/dev/null; then
    say "node$i (pid ${fpid[i]}) did not stop within 60 s of \`frugalos stop\`; sending SIGKILL"
    kill -KILL "${fpid[i]}" 2>/dev/null || true
  fi
  wait "${fpid[i]}" 2>/dev/null || true
  fpid[i]=""
}
kill_node() { # NODE: SIGKILL
  local i=$1
  kill -KILL "${fpid[i]}"
  wait "${fpid[i]}" 2>/dev/null || true
  say "node$i: SIGKILL sent to FrugalOS (pid ${fpid[i]}); it is gone"
  fpid[i]=""
}
running() { local i; for ((i = 0; i < nodes; i++)); do [ -z "${fpid[i]}" ] || echo "$i"; done; }

# --- Disks ------------------------------------------------------------------------------------

make_disk() { # KEY: a new, empty disk (image, emulator, loop device)
  local k=$1
  img[$k]=$work/disks/disk$k.img
  truncate -s "$disk_size" "${img[$k]}"
  attach_disk "$k"
}
attach_disk() { # KEY: the emulator (if any) over the disk's image, and the loop device
  local k=$1 file=${img[$1]} out prof=${disk_profile[$1]:-$profile} bad=()
  if [ -n "$prof" ]; then
    [ -z "${disk_bad[$k]:-}" ] || bad=(--bad-sectors "${disk_bad[$k]}")
    emu[$k]=$(mktemp -d "$work/disks/emulator$k.XXXXXX")
    out=$("$hddsim" emulate --profile "$prof" "${bad[@]}" --backing "${img[$k]}" "${emu[$k]}")
    emupid[$k]=$(sed -n 's/.*(server pid \([0-9]*\)).*/\1/p' <<<"$out")
    say "disk $k: hddsim emulate --profile $prof${bad[*]:+ ${bad[*]}}: $out"
    file=${emu[$k]}/disk
  fi
  loop[$k]=$(losetup --find --show --direct-io=on "$file")
  used[$k]=0
  mnt[$k]=$work/mnt$k
  mkdir -p "${mnt[$k]}"
}
detach_disk() { # KEY: the loop device and the emulator (the image stays)
  local k=$1
  if [ -n "${loop[$k]:-}" ]; then losetup -d "${loop[$k]}" || say "losetup -d ${loop[$k]} failed"; loop[$k]=""; fi
  if [ -n "${emupid[$k]:-}" ]; then
    say "disk $k: the emulator's peak RSS: $(sed -n 's/^VmHWM: *//p' "/proc/${emupid[$k]}/status" 2>/dev/null)"
    emupid[$k]=""
  fi
  if [ -n "${emu[$k]:-}" ]; then stop_emulator "$hddsim" "${emu[$k]}" || say "emulator of disk $k was still busy; detached lazily"; emu[$k]=""; fi
}
remove_disk() { # KEY
  local k=$1
  unmount_disk "$k" || true
  detach_disk "$k"
  if [ -n "${img[$k]:-}" ]; then rm -f "${img[$k]}"; img[$k]=""; fi
}
mkfs_disk() { # KEY FS
  local k=$1 force=()
  if [ "$2" = minfs ]; then
    [ "${used[$k]}" = 1 ] && force=(--force) # this script's own disk, made for an earlier round
    "$minfs" mkfs "${force[@]}" --label "frugalos-$k" "${loop[$k]}" >"$work/logs/mkfs-$k.log"
  else
    retry_busy mkfs.ext4 -qF -L "frugalos-$k" "${loop[$k]}"
  fi
  used[$k]=1
}
# How minfs disks are mounted: `minfs mount`, or with --journal-bad-sector `minfs-cannyls
# mount` (mount_with=cannyls; a disk's own choice in disk_mount[KEY] wins).
mount_with=minfs
declare -A disk_mount=()
mount_disk() { # KEY FS
  local k=$1 out
  if [ "$2" = minfs ] && [ "${disk_mount[$k]:-$mount_with}" = cannyls ]; then
    out=$("$minfs_cannyls" mount --log "$work/logs/mount-$k.log" "${loop[$k]}" "${mnt[$k]}")
    say "disk $k: minfs-cannyls mount: $out"
  elif [ "$2" = minfs ]; then
    out=$("$minfs" mount "${loop[$k]}" "${mnt[$k]}")
    say "disk $k: $out"
  else
    mount "${loop[$k]}" "${mnt[$k]}"
    say "disk $k: ext4 on ${loop[$k]} mounted on ${mnt[$k]}"
  fi
  mfs[$k]=$2
}
unmount_disk() { # KEY
  local k=$1
  case "${mfs[$k]:-}" in
    minfs) "$minfs" umount "${mnt[$k]}" >/dev/null || return 1 ;;
    ext4) umount "${mnt[$k]}" || return 1 ;;
    *) return 0 ;;
  esac
  mfs[$k]=""
}
fsck_disk() { # KEY FS: prints the output, counts a failure when not clean
  local k=$1 rc=0 out line
  if [ "$2" = minfs ]; then
    out=$("$minfs" fsck -n "${loop[$k]}" 2>&1) || rc=$?
  else
    out=$(e2fsck -fn "${loop[$k]}" 2>&1) || rc=$?
  fi
  while IFS= read -r line; do echo "  $line" >&2; done <<<"$out"
  if [ "$rc" = 0 ]; then
    say "disk $k ($2 on ${loop[$k]}): fsck -n clean"
  else
    fail "disk $k ($2 on ${loop[$k]}): fsck -n exited $rc"
  fi
}

cleanup() {
  local status=$? i k
  trap - EXIT INT TERM
  set +e
  for ((i = 0; i < nodes; i++)); do stop_node "$i"; done
  for k in "${!loop[@]}"; do
    if ! unmount_disk "$k"; then
      say "disk $k: unmount failed; detaching lazily"
      umount -l "${mnt[$k]}"
      mfs[$k]=""
    fi
    remove_disk "$k"
  done
  if [ "$keep" = 1 ]; then say "kept $work"; else rm -rf "$work"; fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- HTTP -------------------------------------------------------------------------------------

put_json() { # NODE PATH JSON
  local out
  out=$(curl -sS -f -XPUT -d "$3" "http://127.0.0.1:${http[$1]}$2") || die "PUT $2 failed"
  say "PUT $2 -> $out"
}
sizeof() { stat -c %s "$work/objects/$1"; }
# put_object NODE BUCKET NAME: retried (up to 60 s) while the bucket's Raft groups elect leaders.
put_object() {
  local code t
  for ((t = 0; t < 60; t++)); do
    code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 60 -XPUT \
      --data-binary "@$work/objects/$3" "http://127.0.0.1:${http[$1]}/v1/buckets/$2/objects/$3") || code=000
    if [ "$code" = 201 ] || [ "$code" = 200 ]; then
      [ "$quiet" = 1 ] || say "PUT $2/$3 ($(sizeof "$3") B) via node$1: $code$([ "$t" = 0 ] || echo " after $t retries")"
      return 0
    fi
    sleep 1
  done
  fail "PUT $2/$3 via node$1: HTTP $code after 60 tries"
  return 1
}
delete_object() { # NODE BUCKET NAME
  local code t
  for ((t = 0; t < 60; t++)); do
    code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 60 -XDELETE \
      "http://127.0.0.1:${http[$1]}/v1/buckets/$2/objects/$3") || code=000
    if [ "$code" = 200 ] || { [ "$code" = 404 ] && [ "$t" -gt 0 ]; }; then
      say "DELETE $2/$3 via node$1: $code$([ "$t" -gt 0 ] && echo " after $t retries")"
      return 0
    fi
    sleep 1
  done
  fail "DELETE $2/$3 via node$1: HTTP $code after 60 tries"
  return 1
}
quiet=0
checked_gets=0 checked_bytes=0 checked_absent=0 max_wait=0
# get_object NODE BUCKET NAME present|absent: GET through NODE and compare with what was PUT
# (or expect 404), retrying for up to --settle seconds.
get_object() {
  local code t ok=0 got=$work/got
  for ((t = 0; ; t++)); do
    code=$(curl -s -o "$got" -w '%{http_code}' --max-time 60 \
      "http://127.0.0.1:${http[$1]}/v1/buckets/$2/objects/$3") || code=000
    if [ "$4" = present ]; then
      [ "$code" = 200 ] && cmp -s "$got" "$work/objects/$3" && ok=1
    else
      [ "$code" = 404 ] && ok=1
    fi
    [ "$ok" = 1 ] || [ "$t" -ge "$settle" ] && break
    sleep 1
  done
  if [ "$ok" = 1 ]; then
    if [ "$4" = present ]; then
      checked_gets=$((checked_gets + 1)); checked_bytes=$((checked_bytes + $(sizeof "$3")))
    else
      checked_absent=$((checked_absent + 1))
    fi
    [ "$t" -le "$max_wait" ] || max_wait=$t
    [ "$t" = 0 ] || say "GET $2/$3 via node$1: as expected ($4) after $t s"
  else
    fail "GET $2/$3 via node$1: HTTP $code, expected $4$([ "$4" = present ] && [ "$code" = 200 ] && echo ", bytes differ: $(cmp "$got" "$work/objects/$3" 2>&1 | sed -n 1p)")"
  fi
}
# The objects: "BUCKET NAME" lines in $work/live and $work/deleted.
check_all() { # NODE...: every live object present and every deleted one 404, through each NODE
  local n b o
  checked_gets=0 checked_bytes=0 checked_absent=0 max_wait=0
  local before=$failures
  for n in "$@"; do
    while read -r b o; do get_object "$n" "$b" "$o" present; done <"$work/live"
    while read -r b o; do get_object "$n" "$b" "$o" absent; done <"$work/deleted"
  done
  local names="$*"
  say "checked through node${names// /, node}: $checked_gets GETs byte-identical ($checked_bytes bytes), $checked_absent deleted objects 404, $((failures - before)) failed; longest wait for an expected answer ${max_wait} s"
}
# fragments NODE: HEAD .../fragments of every live `ec` object; prints how many have 3 found,
# 0 lost.
fragments() {
  local b o h found lost whole=0
  while read -r b o; do
    [ "$b" = ec ] || continue
    h=$(curl -s -I --max-time 30 "http://127.0.0.1:${http[$1]}/v1/buckets/ec/objects/$o/fragments" | tr -d '\r')
    found=$(sed -n 's/^frugalos-fragments-found-total: *//Ip' <<<"$h")
    lost=$(sed -n 's/^frugalos-fragments-lost-total: *//Ip' <<<"$h")
    [ "$found" = 3 ] && [ "$lost" = 0 ] && whole=$((whole + 1))
  done <"$work/live"
  echo "$whole"
}
live_count() { grep -c "^$1 " "$work/live" || true; }
# metric NODE NAME{LABELS}: the sum of the samples of that metric (one per segment) on NODE's
# /metrics.
metric() {
  curl -s --max-time 30 "http://127.0.0.1:${http[$1]}/metrics" |
    awk -v m="$2" 'substr($0, 1, 1) != "#" && index($1, m) == 1 { s += $2 } END { printf "%d\n", s }'
}
sync_figures() { # NODE: "prep_enq prep_deq rep_enq rep_deq success failure unnecessary"
  local p=frugalos_synchronizer_ m out=""
  for m in 'enqueued_items{type="repair_prep"}' 'dequeued_items{type="repair_prep"}' \
    'enqueued_items{type="repair"}' 'dequeued_items{type="repair"}' \
    'repairs_success_total{type="repair"}' 'repairs_failure_total{type="repair"}' \
    'repairs_unnecessary_total{type="repair"}'; do
    out="$out $(metric "$1" "$p$m")"
  done
  echo "${out# }"
}
# usage: the bytes each running node's Cannyls devices hold in their data regions
# (cannyls_data_allocator_allocated_bytes_total - released_bytes_total on its /metrics).
usage() {
  local i k dev out=""
  for i in $(running); do
    for k in $(node_disks "$i"); do
      dev=$(devid "$k")
      out="$out${out:+, }$dev $(curl -s --max-time 30 "http://127.0.0.1:${http[i]}/metrics" | awk -v d="device=\"$dev\"" '
        substr($0, 1, 1) != "#" && index($1, d) && index($1, "cannyls_data_allocator_allocated_bytes_total") == 1 { a += $2 }
        substr($0, 1, 1) != "#" && index($1, d) && index($1, "cannyls_data_allocator_released_bytes_total") == 1 { r += $2 }
        END { printf "%d", a - r }') B"
    done
  done
  say "data held by each running node's devices: $out"
}
# wait_synced NODE MIN_SUCCESS: see the header (step 3).
wait_synced() {
  local i=$1 min=$2 t0 now prev="" cur whole ec pe pd re rd su fa un
  ec=$(live_count ec)
  t0=$(date +%s)
  while true; do
    "$frugalos" set-repair-config --rpc-addr "127.0.0.1:${rpc[i]}" \
      --repair-idleness-threshold "$idleness" --repair-concurrency-limit 1 \
      >>"$work/logs/set-repair-config.log" 2>&1 || true
    read -r pe pd re rd su fa un <<<"$(sync_figures "$i")"
    whole=$(fragments "$i")
    cur="$pe $pd $re $rd $su $fa $un $whole"
    now=$(date +%s)
    if [ "$pe" = "$pd" ] && [ "$re" = "$rd" ] && [ "$su" -ge "$min" ] && [ "$whole" = "$ec" ] &&
      [ "$cur" = "$prev" ]; then
      say "node$i synchronised after $((now - t0)) s (the same figures 3 s apart): repair_prep enqueued $pe = dequeued $pd, repair enqueued $re = dequeued $rd (both queues empty), repairs: success $su (wanted >= $min), failure $fa, unnecessary $un; $whole of $ec ec objects with 3 fragments found, 0 lost"
      return 0
    fi
    if [ $((now - t0)) -ge "$sync_timeout" ]; then
      fail "node$i not synchronised after $sync_timeout s: repair_prep $pe/$pd, repair $re/$rd, success $su failure $fa unnecessary $un (wanted success >= $min); $whole of $ec ec objects with 3 fragments"
      return 1
    fi
    [ "$cur" = "$prev" ] || say "node$i after $((now - t0)) s: repair_prep enqueued/dequeued $pe/$pd, repair $re/$rd, success $su failure $fa unnecessary $un; ec objects with 3 fragments: $whole of $ec"
    prev=$cur
    sleep 3
  done
}

# --- The cluster --------------------------------------------------------------------------------

form_cluster() { # FS: disks made; mkfs, mount, create/join/start, devices, buckets
  local fs=$1 k i d children
  for k in $(disks); do mkfs_disk "$k" "$fs"; mount_disk "$k" "$fs"; done
  rm -rf "${data[@]}"
  "$frugalos" create --id node0 --addr "127.0.0.1:${rpc[0]}" --data-dir "${data[0]}" \
    >"$work/logs/node0-create.log" 2>&1 || die "frugalos create failed; see $work/logs/node0-create.log"
  say "frugalos create --id node0 --addr 127.0.0.1:${rpc[0]}: done"
  start_node 0
  for ((i = 1; i < nodes; i++)); do
    "$frugalos" join --id "node$i" --addr "127.0.0.1:${rpc[i]}" --data-dir "${data[i]}" \
      --contact-server "127.0.0.1:${rpc[0]}" >"$work/logs/node$i-join.log" 2>&1 \
      || die "frugalos join of node$i failed; see $work/logs/node$i-join.log"
    say "frugalos join --id node$i --addr 127.0.0.1:${rpc[i]} --contact-server 127.0.0.1:${rpc[0]}: done"
    start_node "$i"
  done
  say "servers: $(curl -s "http://127.0.0.1:${http[0]}/v1/servers")"
  for ((i = 0; i < nodes; i++)); do
    children=""
    for k in $(node_disks "$i"); do
      put_json 0 "/v1/devices/$(devid "$k")" "{\"file\": {\"id\": \"$(devid "$k")\", \"server\": \"node$i\", \"filepath\": \"${mnt[$k]}/dev.lusf\", \"capacity\": $capacity}}"
      children="$children${children:+, }\"$(devid "$k")\""
    done
    put_json 0 "/v1/devices/node$i" "{\"virtual\": {\"id\": \"node$i\", \"children\": [$children]}}"
  done
  put_json 0 /v1/devices/rack '{"virtual": {"id": "rack", "children": ["node0", "node1", "node2"]}}'
  put_json 0 /v1/buckets/repl '{"replicated": {"id": "repl", "device": "rack", "tolerable_faults": 1}}'
  put_json 0 /v1/buckets/ec '{"dispersed": {"id": "ec", "device": "rack", "tolerable_faults": 1, "data_fragment_count": 2}}'
  d=$(curl -s "http://127.0.0.1:${http[0]}/v1/buckets")
  say "buckets: $d"
}
stop_cluster() { # FS: stop every node, unmount, fsck -n every disk
  local i k
  for ((i = 0; i < nodes; i++)); do stop_node "$i"; done
  for k in $(disks); do unmount_disk "$k" || fail "disk $k: unmount failed"; done
  for k in $(disks); do fsck_disk "$k" "$1"; done
}

new_object() { # NAME SIZE
  head -c "$2" /dev/urandom >"$work/objects/$1"
}
random_size() { shuf -i 300000-5000000 -n 1; }
# put_objects: $nobjects objects per bucket (sizes 0, 1, 300000, 5000000, then random), each PUT
# through the nodes in turn; the live list restarted with them, the deleted list empty.
put_objects() {
  local b j s o
  : >"$work/live"
  : >"$work/deleted"
  for b in repl ec; do
    for ((j = 1; j <= nobjects; j++)); do
      case $j in 1) s=0 ;; 2) s=1 ;; 3) s=300000 ;; 4) s=5000000 ;; *) s=$(random_size) ;; esac
      o=$b-$(printf '%02d' "$j")
      new_object "$o" "$s"
      put_object $(((j - 1) % nodes)) "$b" "$o" && echo "$b $o" >>"$work/live"
    done
  done
}

# --- The timed phase ----------------------------------------------------------------------------

# emu_snapshot FILE: the emulated drives' stats.json (a snapshot at each open), summed: reads,
# writes, flushes, media reads and the request sizes, as one JSON object.
emu_snapshot() {
  local k files=()
  for k in $(disks); do [ -z "${emu[$k]:-}" ] || files+=("${emu[$k]}/stats.json"); done
  jq -cs 'reduce .[] as $s ({reads: 0, writes: 0, flushes: 0, media_reads: 0, read_sizes: {}, write_sizes: {}};
      .reads += $s.requests.reads | .writes += $s.requests.writes | .flushes += $s.requests.flushes
      | .media_reads += $s.drive.media_reads
      | reduce ($s.requests.read_sizes | to_entries[]) as $e (.; .read_sizes[$e.key] += $e.value)
      | reduce ($s.requests.write_sizes | to_entries[]) as $e (.; .write_sizes[$e.key] += $e.value))' \
    "${files[@]}" >"$1"
}
# emu_delta BEFORE AFTER: what the emulated drives were asked between the two snapshots.
emu_delta() {
  jq -rn --slurpfile a "$1" --slurpfile b "$2" '$a[0] as $a | $b[0] as $b
    | def sizes(k): [$b[k] | to_entries[] | {key, value: (.value - ($a[k][.key] // 0))} | select(.value > 0)]
        | sort_by(.key | tonumber) | map("\(.value) × \(.key | tonumber / 1024) KiB") | join(", ");
    "\($b.reads - $a.reads) reads (\(sizes("read_sizes"))), \($b.media_reads - $a.media_reads) of them from the media; \($b.writes - $a.writes) writes (\(sizes("write_sizes"))), \($b.flushes - $a.flushes) flushes"'
}

if [ "$timed" -gt 0 ]; then
  say "timed phase: $rounds rounds per filesystem, $timed objects of 1 MiB per bucket, disks: $device"
  for k in $(disks); do make_disk "$k"; done
  for ((j = 1; j <= timed; j++)); do new_object "t$j" 1048576; done
  for ((j = 1; j <= 64; j++)); do new_object "w$j" 1024; done
  results=$work/timed.tsv
  : >"$results"
  order=()
  for ((r = 1; r <= rounds; r++)); do
    if [ $((r % 2)) = 1 ]; then order+=(minfs ext4); else order+=(ext4 minfs); fi
  done
  round=0
  for rfs in "${order[@]}"; do
    round=$((round + 1))
    say "round $round: devices on $rfs (load average $(cut -d' ' -f1-3 /proc/loadavg))"
    form_cluster "$rfs"
    for b in repl ec; do
      quiet=1
      for ((j = 1; j <= 64; j++)); do put_object 0 "$b" "w$j" || die "round $round: a warm-up PUT to $b failed"; done
      [ -z "$profile" ] || emu_snapshot "$work/emu0.json"
      t0=$(date +%s.%N)
      for ((j = 1; j <= timed; j++)); do put_object 0 "$b" "t$j" || true; done
      t1=$(date +%s.%N)
      [ -z "$profile" ] || emu_snapshot "$work/emu1.json"
      for ((j = 1; j <= timed; j++)); do
        curl -s -o "$work/got-t$j" --max-time 60 "http://127.0.0.1:${http[0]}/v1/buckets/$b/objects/t$j" || true
      done
      t2=$(date +%s.%N)
      quiet=0
      if [ -n "$profile" ]; then
        emu_snapshot "$work/emu2.json"
        say "round $round, $rfs, $b: the emulated drives during the PUTs: $(emu_delta "$work/emu0.json" "$work/emu1.json")"
        say "round $round, $rfs, $b: the emulated drives during the GETs: $(emu_delta "$work/emu1.json" "$work/emu2.json")"
      fi
      bad=0
      for ((j = 1; j <= timed; j++)); do
        cmp -s "$work/got-t$j" "$work/objects/t$j" || bad=$((bad + 1))
        rm -f "$work/got-t$j"
      done
      [ "$bad" = 0 ] || fail "round $round ($rfs): $bad of $timed GETs from $b not identical"
      awk -v r="$round" -v f="$rfs" -v b="$b" -v t0="$t0" -v t1="$t1" -v t2="$t2" \
        'BEGIN { printf "%d\t%s\t%s\t%.3f\t%.3f\n", r, f, b, t1 - t0, t2 - t1 }' >>"$results"
      say "round $round, $rfs, $b: $(tail -1 "$results" | awk -F'\t' '{ printf "PUT x'"$timed"' %s s, GET x'"$timed"' %s s", $4, $5 }')"
    done
    stop_cluster "$rfs"
  done
  say "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "| bucket | phase | minfs: rounds (s) | minfs median | ext4: rounds (s) | ext4 median | minfs / ext4 |"
  echo "| --- | --- | --- | --- | --- | --- | --- |"
  for b in repl ec; do
    for ph in PUT GET; do
      col=4; [ "$ph" = GET ] && col=5
      line="| \`$b\` | $ph ×$timed |"
      declare -A med=()
      for f in minfs ext4; do
        vals=$(awk -F'\t' -v f="$f" -v b="$b" -v c="$col" '$2 == f && $3 == b { print $c }' "$results")
        m=$(sort -n <<<"$vals" | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else printf "%.3f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }')
        line="$line $(echo "$vals" | paste -sd/ | sed 's#/# / #g') | $m |"
        med[$f]=$m
      done
      line="$line $(awk -v a="${med[minfs]}" -v b="${med[ext4]}" 'BEGIN { printf "%.2f", a / b }') |"
      echo "$line"
    done
  done
  [ "$failures" = 0 ] || die "$failures check(s) failed"
  say "timed phase done, every GET identical, every fsck clean"
  exit 0
fi

# --- The scrub-and-repair mode -----------------------------------------------------------------

# step TEXT: a step's heading in the scrub-and-repair and journal modes, with the seconds since
# the start and since the last step (step_t, set where a mode's steps begin).
step() { say "=== [${SECONDS} s, the last step took $((SECONDS - step_t)) s] $*"; step_t=$SECONDS; }

if [ "$scrub_repair" = 1 ]; then
  sick=1 # the node whose disk gets the bad sector
  k=$sick.0
  disk_profile[$k]="st1000dm003+read_error_recovery_ms=$recovery_ms"
  say "scrub-and-repair: disks on minfs; node$sick's disk on hddsim emulate (${disk_profile[$k]}), the others on loop devices over images; $nobjects objects per bucket"
  for d in $(disks); do make_disk "$d"; done
  form_cluster minfs
  # head_fragments OBJECT: the status and FrugalOS-Fragments-* headers of HEAD
  # ec/OBJECT/fragments through node0.
  head_fragments() {
    local h
    h=$(curl -s -I --max-time 30 "http://127.0.0.1:${http[0]}/v1/buckets/ec/objects/$1/fragments" | tr -d '\r' || true)
    echo "$(sed -n '1p' <<<"$h")$(grep -i '^frugalos-fragments' <<<"$h" | sed 's/^/; /' | tr -d '\n' || true)"
  }
  step_t=$SECONDS
  step "step 1: PUT $nobjects objects per bucket, GET each through every node"
  put_objects
  # The object whose fragment gets the bad sector: larger than any other, so that its fragment
  # (half of it) is the largest content lump on every node: object versions are numbered per
  # segment, and which segment (and Raft member, whose local id is in the lump id) holds an
  # object FrugalOS 1.2.1's HTTP API does not say.
  target_obj=ec-target
  new_object "$target_obj" 12000000
  put_object 0 ec "$target_obj" && echo "ec $target_obj" >>"$work/live"
  check_all 0 1 2
  say "ec objects with 3 fragments found, 0 lost (HEAD .../fragments): $(fragments 0) of $(live_count ec)"
  version=$(curl -s -I --max-time 30 "http://127.0.0.1:${http[0]}/v1/buckets/ec/objects/$target_obj" | tr -d '\r' |
    sed -n 's/^etag: *"\([0-9a-f]*\)".*/\1/Ip')
  [ -n "$version" ] || die "HEAD ec/$target_obj: no ETag"

  step "step 2: stop node$sick, unmount its disk, list its device's lumps, find ec/$target_obj's fragment, restart its drive with a bad sector under it"
  stop_node "$sick"
  unmount_disk "$k"
  "$minfs_cannyls" lumps --json "${loop[$k]}" dev.lusf >"$work/lumps-before.json" \
    || die "minfs-cannyls lumps ${loop[$k]} dev.lusf failed: $(cat "$work/lumps-before.json")"
  say "minfs-cannyls lumps ${loop[$k]} dev.lusf: $(jq '.lumps | length' "$work/lumps-before.json") lumps, $(jq '[.lumps[] | select(.id | startswith("01"))] | length' "$work/lumps-before.json") of them object content (id 01...), $(jq '[.lumps[] | select(.region == "journal")] | length' "$work/lumps-before.json") embedded in the journal; journal clean: $(jq .index.journal_clean "$work/lumps-before.json"), block size $(jq .index.block_size "$work/lumps-before.json")"
  # The largest content lump in the data region: a fragment of ec/$target_obj is half its
  # 12,000,000 bytes (and a header), every other object is at most 5,000,000 bytes.
  read -r lump lump_len < <(jq -r '[.lumps[] | select(.region == "data" and (.id | startswith("01")))] | max_by(.length) | "\(.id) \(.length)"' "$work/lumps-before.json")
  [ -n "$lump" ] && [ "$lump" != null ] || die "no object content lump in the data region of node$sick's device"
  lump_version=$(sed 's/^0*//' <<<"${lump:16}")
  if [ "$lump_len" -lt 6000000 ] || [ "$lump_len" -gt 6100000 ] || [ "${lump_version:-0}" != "$version" ]; then
    die "the largest content lump on node$sick, $lump ($lump_len bytes, version ${lump_version:-0}), is not ec/$target_obj's fragment (6,000,000 bytes and a header, version $version)"
  fi
  ranges=$(jq -r --arg id "$lump" '[.lumps[] | select(.id == $id) | .device_ranges[] | "\(.offset)+\(.length)"] | join(", ")' "$work/lumps-before.json")
  read -r lump_dev first_len < <(jq -r --arg id "$lump" '.lumps[] | select(.id == $id) | "\(.device_ranges[0].offset) \(.device_ranges[0].length)"' "$work/lumps-before.json")
  # One 4 KiB physical sector (8 LBAs) in the middle of the lump's first device range.
  bad_lba=$(((lump_dev + first_len / 2) / 4096 * 8))
  say "chosen: lump $lump, the fragment of ec/$target_obj (12000000 B PUT, version $version = the lump id's low 64 bits) on node$sick: $lump_len bytes of dev.lusf, device bytes $ranges; bad sector: LBAs $bad_lba-$((bad_lba + 7)) (device bytes $((bad_lba * 512))..$(((bad_lba + 8) * 512)))"
  detach_disk "$k"
  disk_bad[$k]="$bad_lba-$((bad_lba + 7))"
  attach_disk "$k"
  mount_disk "$k" minfs
  start_node "$sick"

  step "step 3: scrub node$sick's disk beside the running node: minfs scrub, then minfs-cannyls scrub"
  rc=0
  "$minfs" scrub --no-progress "${loop[$k]}" >"$work/scrub-minfs.txt" 2>&1 || rc=$?
  sed 's/^/  /' "$work/scrub-minfs.txt" >&2
  say "minfs scrub ${loop[$k]}: exit $rc ($((SECONDS - step_t)) s so far)"
  [ "$rc" = 2 ] || fail "minfs scrub exited $rc, wanted 2 (unreadable sectors, metadata clean)"
  grep -q 'dev.lusf' "$work/scrub-minfs.txt" || fail "minfs scrub did not name dev.lusf"
  rc=0
  "$minfs_cannyls" scrub --json "${loop[$k]}" dev.lusf >"$work/scrub-cannyls.json" 2>"$work/scrub-cannyls.err" || rc=$?
  say "minfs-cannyls scrub --json ${loop[$k]} dev.lusf: exit $rc; bad ranges $(jq -c '[.bad_ranges[] | {device_offset, file_offset, length, regions, lumps}]' "$work/scrub-cannyls.json"); lumps hit $(jq -c .lumps_hit "$work/scrub-cannyls.json"); $(jq .duration_s "$work/scrub-cannyls.json") s"
  [ "$rc" = 2 ] || fail "minfs-cannyls scrub exited $rc, wanted 2"
  [ "$(jq -c .lumps_hit "$work/scrub-cannyls.json")" = "[\"$lump\"]" ] || fail "minfs-cannyls scrub named $(jq -c .lumps_hit "$work/scrub-cannyls.json"), wanted [$lump]"

  step "step 4: stop node$sick, unmount, minfs-cannyls delete the lump"
  stop_node "$sick"
  unmount_disk "$k"
  "$minfs_cannyls" delete "${loop[$k]}" dev.lusf "$lump" 2>&1 | sed 's/^/  /' >&2 || true
  rc=0
  out=$("$minfs_cannyls" delete --yes "${loop[$k]}" dev.lusf "$lump" 2>&1) || rc=$?
  sed 's/^/  /' <<<"$out" >&2
  [ "$rc" = 0 ] || die "minfs-cannyls delete exited $rc"
  "$minfs_cannyls" lumps --json "${loop[$k]}" dev.lusf >"$work/lumps-deleted.json"
  if jq -e --arg id "$lump" '.lumps[] | select(.id == $id)' "$work/lumps-deleted.json" >/dev/null; then
    fail "lump $lump still listed after the delete"
  else
    say "minfs-cannyls lumps: $(jq '.lumps | length' "$work/lumps-deleted.json") lumps, $lump not among them"
  fi
  mount_disk "$k" minfs
  say "HEAD ec/$target_obj/fragments via node0 (node$sick down, so its fragment counts as lost whether deleted or not): $(head_fragments "$target_obj")"

  step "step 5: start node$sick with repair enabled until it has synchronised"
  start_node "$sick"
  wait_synced "$sick" 1 || true
  say "HEAD ec/$target_obj/fragments via node0: $(head_fragments "$target_obj")"

  step "step 6: stop node$sick, unmount: is the lump back on its device? scrub again"
  stop_node "$sick"
  unmount_disk "$k"
  "$minfs_cannyls" lumps --json "${loop[$k]}" dev.lusf >"$work/lumps-after.json"
  if jq -e --arg id "$lump" '.lumps[] | select(.id == $id)' "$work/lumps-after.json" >/dev/null; then
    say "lump $lump is back on node$sick's device: $(jq -r --arg id "$lump" '.lumps[] | select(.id == $id) | "\(.length) bytes, file bytes \(.file_offset)..\(.file_offset + .length), device bytes " + ([.device_ranges[] | "\(.offset)+\(.length)"] | join(", "))' "$work/lumps-after.json") (before: device bytes $ranges)"
  else
    fail "lump $lump is not on node$sick's device after the repair"
  fi
  rc=0
  "$minfs_cannyls" scrub --json "${loop[$k]}" dev.lusf >"$work/scrub-after.json" 2>&1 || rc=$?
  say "minfs-cannyls scrub after the repair: exit $rc; bad ranges $(jq -c '[.bad_ranges[] | {device_offset, length, regions, lumps}]' "$work/scrub-after.json"); lumps hit $(jq -c .lumps_hit "$work/scrub-after.json")"
  [ "$(jq -c .lumps_hit "$work/scrub-after.json")" = "[]" ] || fail "after the repair the scrub still names lumps: $(jq -c .lumps_hit "$work/scrub-after.json")"
  mount_disk "$k" minfs
  start_node "$sick"

  step "step 7: stop node0; GET everything through node$sick and node2 (each ec object needs node$sick's fragment), compare"
  stop_node 0
  check_all "$sick" 2
  get_object "$sick" ec "$target_obj" present
  say "GET ec/$target_obj via node$sick with node0 stopped: $(cmp "$work/got" "$work/objects/$target_obj" && echo "byte-identical to what was PUT ($(sizeof "$target_obj") B)")"
  start_node 0
  check_all 0

  step "step 8: stop everything, unmount, fsck -n every disk"
  stop_cluster minfs
  say "the scrub-and-repair run took $SECONDS s; load average $(cut -d' ' -f1-3 /proc/loadavg)"
  [ "$failures" = 0 ] || die "$failures check(s) failed"
  say "all checks passed: a bad sector under lump $lump (ec/$target_obj) found by both scrubs, the lump deleted, FrugalOS repaired it on node$sick, every object byte-identical, every fsck clean"
  exit 0
fi

# --- The journal mode ---------------------------------------------------------------------------

if [ "$journal_bad" = 1 ]; then
  sick=1 # the node whose device's journal gets the bad sector
  k=$sick.0
  disk_profile[$k]="st1000dm003+read_error_recovery_ms=$recovery_ms"
  mount_with=cannyls
  say "journal mode: disks on minfs, mounted with minfs-cannyls mount; node$sick's disk on hddsim emulate (${disk_profile[$k]}), the others on loop devices over images; $nobjects objects per bucket"
  for d in $(disks); do make_disk "$d"; done
  form_cluster minfs
  step_t=$SECONDS
  step "step 1: PUT $nobjects objects per bucket, GET each through every node; node$sick synchronised (it holds everything it should)"
  put_objects
  check_all 0 1 2
  # An ec PUT returns before every fragment is written: node$sick may lack some until it
  # repairs them. Synchronised first, so that a repair after the bad sector would be a loss.
  wait_synced "$sick" 0 || true
  say "ec objects with 3 fragments found, 0 lost (HEAD .../fragments): $(fragments 0) of $(live_count ec)"

  step "step 2: stop node$sick, unmount its disk: its device's copy, its lumps, where its journal's live records lie; restart its drive with a bad sector among them"
  stop_node "$sick"
  unmount_disk "$k"
  out=$("$minfs_cannyls" fsck -n "${loop[$k]}" dev.lusf 2>&1) || die "minfs-cannyls fsck -n ${loop[$k]} dev.lusf failed: $out"
  sed 's/^/  /' <<<"$out" >&2
  grep -qi 'copy' <<<"$out" || fail "minfs-cannyls fsck does not mention the copy of dev.lusf"
  "$minfs_cannyls" lumps --json "${loop[$k]}" dev.lusf >"$work/lumps-before.json" \
    || die "minfs-cannyls lumps ${loop[$k]} dev.lusf failed: $(cat "$work/lumps-before.json")"
  say "minfs-cannyls lumps: $(jq '.lumps | length' "$work/lumps-before.json") lumps ($(jq '[.lumps[] | select(.region == "journal")] | length' "$work/lumps-before.json") embedded in the journal); journal clean: $(jq .index.journal_clean "$work/lumps-before.json"); journal: $(jq -c '.index.journal | {head, "end": .end, live_device_ranges}' "$work/lumps-before.json")"
  # One 4 KiB physical sector wholly inside the live records (an open reads all of them): the
  # first 4 KiB-aligned one of the first device range that holds one, else the head block's.
  bad_dev=$(jq -r '[.index.journal.live_device_ranges[] | {a: (((.offset + 4095) / 4096 | floor) * 4096), e: (.offset + .length)} | select(.a + 4096 <= .e) | .a] | first // empty' "$work/lumps-before.json")
  if [ -z "$bad_dev" ]; then
    bad_dev=$(jq -r '(.index.journal.head_block_device_offset / 4096 | floor) * 4096' "$work/lumps-before.json")
    say "the live records hold no whole 4 KiB sector; the bad sector is the one holding the ring's head block"
  fi
  bad_lba=$((bad_dev / 512))
  # Object content (ids 01...): what a bad sector must not cost. The others are FrugalOS'
  # Raft state (ballots, log entries), which changes at every start.
  jq -S '[.lumps[] | select(.id | startswith("01")) | {id, length}]' "$work/lumps-before.json" >"$work/lump-ids-before.json"
  say "bad sector: LBAs $bad_lba-$((bad_lba + 7)) (device bytes $bad_dev..$((bad_dev + 4096))), inside the journal's live records of node$sick's device"
  detach_disk "$k"
  disk_bad[$k]="$bad_lba-$((bad_lba + 7))"
  attach_disk "$k"

  step "step 3, the control: node$sick's disk on plain minfs mount (no copy served): its device must not open"
  disk_mount[$k]=minfs
  mount_disk "$k" minfs
  log=$work/logs/node$sick-control.log
  "$frugalos" start --data-dir "${data[sick]}" --http-server-bind-addr "127.0.0.1:${http[sick]}" >"$log" 2>&1 &
  fpid[sick]=$!
  for _ in $(seq 1 60); do kill -0 "${fpid[sick]}" 2>/dev/null || break; sleep 1; done
  read_errors_control=$(jq .requests.read_errors "${emu[$k]}/stats.json")
  if kill -0 "${fpid[sick]}" 2>/dev/null; then
    say "control: node$sick still runs after 60 s; $(fragments 0) of $(live_count ec) ec objects have 3 fragments found through node0"
    stop_node "$sick"
  else
    wait "${fpid[sick]}" 2>/dev/null || true
    fpid[sick]=""
    say "control: node$sick's FrugalOS exited"
  fi
  why=$(grep -m1 -iE 'os error 5|Input/output|StorageCorrupted|cannyls' "$log" | cut -c1-400 || true)
  if [ -n "$why" ]; then
    say "control: node$sick's device did not open on plain minfs mount: $why"
  else
    fail "control: node$sick's log names no failed open of its device on plain minfs mount (see $log)"
  fi
  unmount_disk "$k"
  unset 'disk_mount[$k]'

  step "step 4: node$sick's disk on minfs-cannyls mount; start node$sick with repair enabled; it must open its device and have nothing to repair"
  read_errors0=$(jq .requests.read_errors "${emu[$k]}/stats.json")
  say "control: the emulated drive failed $read_errors_control read(s) of the bad sector while node$sick tried to open its device"
  mount_disk "$k" minfs
  start_node "$sick"
  wait_synced "$sick" 0 || true
  read_errors1=$(jq .requests.read_errors "${emu[$k]}/stats.json")
  say "the emulated drive failed $((read_errors1 - read_errors0)) read(s) of the bad sector while node$sick opened its device through minfs-cannyls mount"
  read -r pe pd re rd su fa un <<<"$(sync_figures "$sick")"
  if [ "$su" = 0 ] && [ "$fa" = 0 ]; then
    say "node$sick: nothing repaired (repairs: success $su, failure $fa, unnecessary $un; repair queue enqueued $re)"
  else
    fail "node$sick repaired: success $su, failure $fa (wanted 0 and 0)"
  fi
  served=$(grep -c 'served from the copy' "$work/logs/mount-$k.log" || true)
  say "minfs-cannyls mount's log of disk $k: $(grep 'served from the copy' "$work/logs/mount-$k.log" | sed -n 1,2p | cut -c1-400 | tr '\n' ' ')"
  [ "$served" -ge 1 ] || fail "minfs-cannyls mount's log names no sector served from the copy"

  step "step 5: stop node0; GET everything through node$sick and node2 (each ec object needs node$sick's fragment), compare"
  stop_node 0
  check_all "$sick" 2
  start_node 0
  check_all 0

  step "step 6: stop node$sick, unmount: the same lumps as before the bad sector? scrub"
  stop_node "$sick"
  unmount_disk "$k"
  "$minfs_cannyls" lumps --json "${loop[$k]}" dev.lusf >"$work/lumps-after.json" \
    || die "minfs-cannyls lumps after: $(cat "$work/lumps-after.json")"
  jq -S '[.lumps[] | select(.id | startswith("01")) | {id, length}]' "$work/lumps-after.json" >"$work/lump-ids-after.json"
  missing=$(jq -n --slurpfile a "$work/lump-ids-before.json" --slurpfile b "$work/lump-ids-after.json" '[$a[0][] | select(. as $x | $b[0] | index([$x]) | not)] | length')
  if [ "$missing" = 0 ] && cmp -s "$work/lump-ids-before.json" "$work/lump-ids-after.json"; then
    say "node$sick's device holds the same $(jq length "$work/lump-ids-before.json") object content lumps (ids and lengths) as before the bad sector; all lumps: $(jq '.lumps | length' "$work/lumps-before.json") before, $(jq '.lumps | length' "$work/lumps-after.json") now (FrugalOS' Raft state changes at each start)"
  else
    fail "object content lumps before the bad sector: $missing gone or changed; $(jq length "$work/lump-ids-before.json") before, $(jq length "$work/lump-ids-after.json") now"
  fi
  rc=0
  "$minfs_cannyls" scrub --json "${loop[$k]}" dev.lusf >"$work/scrub-after.json" 2>&1 || rc=$?
  say "minfs-cannyls scrub: exit $rc; bad ranges $(jq -c '[.bad_ranges[] | {device_offset, length, regions, lumps}]' "$work/scrub-after.json" 2>/dev/null); lumps hit $(jq -c .lumps_hit "$work/scrub-after.json" 2>/dev/null)"
  [ "$(jq -c .lumps_hit "$work/scrub-after.json")" = "[]" ] || fail "the scrub names lumps: $(jq -c .lumps_hit "$work/scrub-after.json")"
  out=$("$minfs_cannyls" fsck -n "${loop[$k]}" dev.lusf 2>&1) || fail "minfs-cannyls fsck -n after: exit $?"
  sed 's/^/  /' <<<"$out" >&2
  mount_disk "$k" minfs
  start_node "$sick"
  check_all "$sick"

  step "step 7: stop everything, unmount, fsck -n every disk"
  stop_cluster minfs
  say "the journal run took $SECONDS s; load average $(cut -d' ' -f1-3 /proc/loadavg)"
  [ "$failures" = 0 ] || die "$failures check(s) failed"
  say "all checks passed: a bad sector in node$sick's journal, the device did not open on plain minfs mount and opened on minfs-cannyls mount from the copy, nothing to repair, every object byte-identical, every fsck clean"
  exit 0
fi

# --- The scenario ------------------------------------------------------------------------------

victim=1     # step 2: killed
other=0      # step 3: stopped after node1 synchronised
replaced=2   # step 4: its first disk replaced
say "scenario: devices on $fs, disks: $device, $disks_per_node disk(s) per node of $disk_size, file devices of $capacity bytes, $nobjects objects per bucket"
for k in $(disks); do make_disk "$k"; done
form_cluster "$fs"

say "=== [${SECONDS} s] step 1: PUT $nobjects objects per bucket, GET each through every node"
put_objects
check_all 0 1 2
say "ec objects with 3 fragments found, 0 lost (HEAD .../fragments): $(fragments 0) of $(live_count ec)"
usage

say "=== [${SECONDS} s] step 2: SIGKILL node$victim; GET everything through the two left; PUT and DELETE while it is down"
kill_node "$victim"
mapfile -t left < <(other_nodes "$victim")
check_all "${left[@]}"
down_ec=0
for b in repl ec; do
  for j in 1 2 3 4; do
    o=$b-down-$j
    if [ "$j" = 1 ]; then s=1; else s=$(random_size); fi
    new_object "$o" "$s"
    if put_object "${left[$((j % 2))]}" "$b" "$o"; then
      echo "$b $o" >>"$work/live"
      [ "$b" = ec ] && down_ec=$((down_ec + 1))
    fi
  done
  for o in "$b-02" "$b-05"; do
    if delete_object "${left[0]}" "$b" "$o"; then
      grep -v "^$b $o\$" "$work/live" >"$work/live.new" || true
      mv "$work/live.new" "$work/live"
      echo "$b $o" >>"$work/deleted"
    fi
  done
done
check_all "${left[@]}"

say "=== [${SECONDS} s] step 3: node$victim back on the same disks: fsck -n first, then start, synchronise; then stop node$other and GET everything"
for k in $(node_disks "$victim"); do
  unmount_disk "$k" || fail "disk $k: unmount after the kill failed"
  fsck_disk "$k" "$fs"
  mount_disk "$k" "$fs"
done
start_node "$victim"
wait_synced "$victim" "$down_ec" || true
usage
stop_node "$other"
say "node$other stopped (frugalos stop)"
mapfile -t left < <(other_nodes "$other")
check_all "${left[@]}"
start_node "$other"
check_all "$other"

say "=== [${SECONDS} s] step 4: replace node$replaced's disk $replaced.0: a new disk in its place, FrugalOS repairs it"
k=$replaced.0
dev=$(devid "$k")
# Right after a node's start the configuration's Raft may answer "Unstable cluster": retried.
for ((t = 0; t < 60; t++)); do
  code=$(curl -s -o "$work/state" -w '%{http_code}' --max-time 30 -XPUT -d '{"state": "stopped"}' \
    "http://127.0.0.1:${http[replaced]}/v1/devices/$dev/state") || code=000
  [ "$code" = 200 ] && break
  sleep 1
done
say "PUT /v1/devices/$dev/state {\"state\": \"stopped\"} -> HTTP $code$([ "$t" = 0 ] || echo " after $t retries"): $(head -c 300 "$work/state"); GET state -> $(curl -s "http://127.0.0.1:${http[replaced]}/v1/devices/$dev/state")"
[ "$code" = 200 ] || fail "FrugalOS did not stop device $dev"
before=$(stat -c %s "${mnt[$k]}/dev.lusf")
say "device file ${mnt[$k]}/dev.lusf before the replacement: $before bytes"
if unmount_disk "$k" 2>"$work/umount.err"; then
  say "disk $k unmounted with node$replaced still running (the stopped device released its file); GET everything through every node, the disk gone"
  check_all 0 1 2
else
  say "disk $k did not unmount while node$replaced runs ($(head -1 "$work/umount.err")): FrugalOS still holds the device file after the device stop; stopping node$replaced first"
  stop_node "$replaced"
  unmount_disk "$k" || die "disk $k: unmount failed after node$replaced stopped"
fi
old_loop=${loop[$k]}
remove_disk "$k"
make_disk "$k"
mkfs_disk "$k" "$fs"
mount_disk "$k" "$fs"
say "disk $k replaced: $old_loop and its image removed; a new $disk_size image on ${loop[$k]}, $fs made, mounted on ${mnt[$k]} (empty: $(find "${mnt[$k]}" -mindepth 1 ! -name lost+found | wc -l) files besides lost+found)"
stop_node "$replaced"
start_node "$replaced"
sleep 2
if [ -e "${mnt[$k]}/dev.lusf" ]; then
  say "node$replaced re-created its device file on the new disk: ${mnt[$k]}/dev.lusf, $(stat -c %s "${mnt[$k]}/dev.lusf") bytes"
else
  fail "node$replaced did not create ${mnt[$k]}/dev.lusf on the new disk"
fi
# With one disk per node every live `ec` object has a fragment on the new disk; with more,
# only those of the segments that have a member there (FrugalOS does not say which): then
# at least one repair, and every `ec` object with 3 fragments.
if [ "$disks_per_node" = 1 ]; then min=$(live_count ec); else min=1; fi
wait_synced "$replaced" "$min" || true
say "device file on the new disk after synchronisation: $(stat -c %s "${mnt[$k]}/dev.lusf") bytes (the old one had $before)"
usage
for s in 0 1; do
  stop_node "$s"
  say "node$s stopped (frugalos stop)"
  mapfile -t left < <(other_nodes "$s")
  check_all "${left[@]}"
  start_node "$s"
  check_all "$s"
done

say "=== [${SECONDS} s] step 5: stop everything, unmount, fsck -n every disk"
stop_cluster "$fs"
if [ "$fs" = minfs ]; then
  for k in $(disks); do say "minfs ls ${loop[$k]}: $("$minfs" ls "${loop[$k]}" 2>&1 | tr '\n' ';' | sed 's/;$//; s/;/; /g')"; done
fi
say "objects at the end: $(live_count repl) in repl and $(live_count ec) in ec, $(wc -l <"$work/deleted") deleted; the scenario took $SECONDS s; load average $(cut -d' ' -f1-3 /proc/loadavg)"
[ "$failures" = 0 ] || die "$failures check(s) failed"
say "all checks passed: three FrugalOS nodes with their devices on $fs, a node killed and back, a disk replaced, every object byte-identical, every fsck clean"
