#!/usr/bin/env bash
# FrugalOS on `minfs mount`: a single node whose three file devices are files on a minfs mount,
# one bucket of each kind, objects PUT, read back byte for byte, deleted, read again after a
# restart of FrugalOS and of the mount, and `minfs fsck -n` after each unmount.
#
#   scripts/frugalos-on-minfs.sh --frugalos PATH [OPTIONS]
#
# What it does (docs/FRUGALOS.md explains each setting):
#   1. `minfs mkfs --size SIZE` an image under WORK, `minfs mount` it on WORK/mnt;
#   2. `frugalos create` a one-server cluster (data dir WORK/data, on the ordinary filesystem)
#      and `frugalos start` it, RPC and HTTP on 127.0.0.1 only;
#   3. PUT three file devices WORK/mnt/file{0,1,2}.lusf with an explicit capacity, and a
#      virtual device `rack0` over them;
#   4. PUT buckets `meta` (metadata), `repl` (replicated) and `ec` (dispersed: 2 data
#      fragments + 1 parity), each with tolerable_faults 1 (three members, one per device);
#   5. PUT random objects: 300,000 B to 5,000,000 B in `repl` and `ec`; 1,000 and 50,000 B in
#      `meta` (a metadata bucket keeps objects in its Raft log as embedded Cannyls lumps, at
#      most 65,535 bytes: FrugalOS 1.2.1 aborts on a larger one, on any filesystem);
#      GET each and compare; DELETE one per bucket and check it is gone (404);
#   6. stop FrugalOS, unmount, `minfs fsck -n`, mount again, start FrugalOS, check every object
#      again (the deleted ones stay 404; each object is given up to 60 s to reach that state,
#      as FrugalOS answers before its Raft groups have replayed their logs, and the wait is
#      printed), PUT and GET one more per bucket;
#   7. stop, unmount, `minfs fsck -n`.
# Everything it started or made (FrugalOS, the mount, WORK) is removed on exit, error and
# Ctrl-C, unless --keep.
#
# Options:
#   --frugalos PATH      the frugalos binary (1.2.1; how to build it: docs/FRUGALOS.md)
#   --minfs PATH         the minfs binary (default: target/release/minfs, built when missing)
#   --work DIR           working directory, must not exist (default /var/tmp/frugalos-on-minfs)
#   --size SIZE          the minfs image (default 2G)
#   --device-capacity N  bytes of each file device (default 536870912)
#   --http-port P        FrugalOS HTTP port on 127.0.0.1 (default 13900)
#   --rpc-port P         FrugalOS RPC port on 127.0.0.1 (default 14900)
#   --timed N            also PUT then GET N objects of 1 MiB in `repl` and in `ec`, and print
#                        each phase's wall time (after the checks of step 5)
#   --devices-on DIR     put the device files in DIR instead of on the minfs mount (to compare,
#                        e.g. with a directory on ext4); the mount and its fsck still happen
#   --keep               leave WORK (image, data dir, logs) in place
#   -h, --help
#
# Needs root, /dev/fuse and curl. Exit codes: 0 every check passed, 1 a check or a step
# failed, 2 usage error, 130 interrupted.
set -euo pipefail
shopt -s inherit_errexit 2>/dev/null || true

repo=$(cd "$(dirname "$0")/.." && pwd)
prog=frugalos-on-minfs.sh
quiet=0
say() { [ "$quiet" = 1 ] || echo "$prog: $*" >&2; }
die() { echo "$prog: error: $*" >&2; exit 1; }
usage_error() { echo "$prog: error: $*" >&2; echo "(see $prog --help)" >&2; exit 2; }

frugalos=""
minfs=""
work=/var/tmp/frugalos-on-minfs
size=2G
capacity=536870912
http_port=13900
rpc_port=14900
keep=0
timed=0
devices_on=""
need_arg() { [ $# -ge 2 ] && [ -n "$2" ] || usage_error "$1 needs a value"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --frugalos) need_arg "$@"; frugalos=$2; shift 2 ;;
    --minfs) need_arg "$@"; minfs=$2; shift 2 ;;
    --work) need_arg "$@"; work=$2; shift 2 ;;
    --size) need_arg "$@"; size=$2; shift 2 ;;
    --device-capacity) need_arg "$@"; capacity=$2; shift 2 ;;
    --http-port) need_arg "$@"; http_port=$2; shift 2 ;;
    --rpc-port) need_arg "$@"; rpc_port=$2; shift 2 ;;
    --timed) need_arg "$@"; timed=$2; shift 2 ;;
    --devices-on) need_arg "$@"; devices_on=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) usage_error "unknown argument \`$1\`" ;;
  esac
done
[ -n "$frugalos" ] || usage_error "--frugalos PATH is required"
[ -x "$frugalos" ] || usage_error "--frugalos $frugalos: not an executable file"
[[ "$capacity" =~ ^[0-9]+$ ]] || usage_error "--device-capacity $capacity: not a number of bytes"
[[ "$http_port" =~ ^[0-9]+$ && "$rpc_port" =~ ^[0-9]+$ ]] || usage_error "ports must be numbers"
[[ "$timed" =~ ^[0-9]+$ ]] || usage_error "--timed $timed: not a number of objects"
if [ -n "$devices_on" ]; then
  [ -d "$devices_on" ] || usage_error "--devices-on $devices_on: not a directory"
  devices_on=$(cd "$devices_on" && pwd)
  for i in 0 1 2; do
    [ -e "$devices_on/file$i.lusf" ] && usage_error "--devices-on: $devices_on/file$i.lusf exists"
  done
fi
[ -e "$work" ] && usage_error "--work $work already exists (remove it or name another)"
[ "$(id -u)" = 0 ] || die "needs root (FUSE mount)"
command -v curl >/dev/null || die "needs curl"
if [ -z "$minfs" ]; then
  minfs=$repo/target/release/minfs
  [ -x "$minfs" ] || (cd "$repo" && cargo build --release -p minfs --bin minfs) >&2
fi
[ -x "$minfs" ] || usage_error "--minfs $minfs: not an executable file"

http=http://127.0.0.1:$http_port
img=$work/minfs.img
mnt=$work/mnt
data=$work/data
objs=$work/objects
pid=""
mounted=0
failures=0

stop_frugalos() {
  [ -n "$pid" ] || return 0
  "$frugalos" stop --rpc-addr "127.0.0.1:$rpc_port" >>"$work/frugalos-stop.log" 2>&1 || true
  for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
  if kill -0 "$pid" 2>/dev/null; then
    say "FrugalOS (pid $pid) did not stop; sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
  fi
  wait "$pid" 2>/dev/null || true
  pid=""
}
unmount() {
  [ "$mounted" = 1 ] || return 0
  "$minfs" umount "$mnt" >&2
  mounted=0
}
cleanup() {
  local status=$?
  trap - EXIT INT TERM
  stop_frugalos
  unmount || true
  if [ -n "$devices_on" ] && [ "$keep" != 1 ]; then rm -f "$devices_on"/file{0,1,2}.lusf; fi
  if [ "$keep" = 1 ]; then say "kept $work"; else rm -rf "$work"; fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

start_frugalos() { # LOGNAME
  "$frugalos" start --data-dir "$data" --http-server-bind-addr "127.0.0.1:$http_port" \
    >"$work/$1" 2>&1 &
  pid=$!
  for _ in $(seq 1 120); do
    kill -0 "$pid" 2>/dev/null || die "FrugalOS exited at start; see $work/$1 (use --keep)"
    curl -sf "$http/v1/servers" >/dev/null 2>&1 && return 0
    sleep 0.5
  done
  die "FrugalOS did not answer on $http within 60 s"
}
mount_minfs() {
  "$minfs" mount "$img" "$mnt" >&2
  mounted=1
}
fsck_minfs() {
  say "minfs fsck -n $img"
  "$minfs" fsck -n "$img" >&2 || die "minfs fsck -n reports problems"
}
put_json() { # PATH JSON
  local out
  out=$(curl -sS -f -XPUT -d "$2" "$http$1") || die "PUT $1 failed"
  say "PUT $1 -> $out"
}
put_object() { # BUCKET NAME: retried while the bucket's Raft groups elect their leaders
  local code
  for _ in $(seq 1 60); do
    code=$(curl -s -o /dev/null -w '%{http_code}' -XPUT --data-binary "@$objs/$2" \
      "$http/v1/buckets/$1/objects/$2") || code=000
    [ "$code" = 201 ] || [ "$code" = 200 ] && { say "PUT $1/$2 ($(stat -c %s "$objs/$2") B): $code"; return 0; }
    kill -0 "$pid" 2>/dev/null || die "FrugalOS exited during PUT $1/$2"
    sleep 1
  done
  die "PUT $1/$2: HTTP $code after 60 tries"
}
check_object() { # BUCKET NAME present|absent
  local code
  code=$(curl -s -o "$work/got" -w '%{http_code}' "$http/v1/buckets/$1/objects/$2") || code=000
  if [ "$3" = present ]; then
    if [ "$code" = 200 ] && cmp -s "$work/got" "$objs/$2"; then
      say "GET $1/$2: identical"
    else
      say "GET $1/$2: FAILED (HTTP $code, $(cmp "$work/got" "$objs/$2" 2>&1 | sed -n 1p))"
      failures=$((failures + 1))
    fi
  elif [ "$code" = 404 ]; then
    say "GET $1/$2: 404 (deleted)"
  else
    say "GET $1/$2: FAILED (deleted, but HTTP $code)"
    failures=$((failures + 1))
  fi
}
delete_object() { # BUCKET NAME
  local code
  code=$(curl -s -o /dev/null -w '%{http_code}' -XDELETE "$http/v1/buckets/$1/objects/$2") || code=000
  [ "$code" = 200 ] || die "DELETE $1/$2: HTTP $code"
  say "DELETE $1/$2: $code"
}

mkdir -p "$work" "$mnt" "$objs"
devdir=${devices_on:-$mnt}
"$minfs" mkfs --size "$size" --label frugalos "$img" >&2
mount_minfs
"$frugalos" create --id minfs-node --addr "127.0.0.1:$rpc_port" --data-dir "$data" \
  >"$work/frugalos-create.log" 2>&1 || die "frugalos create failed; see $work/frugalos-create.log"
start_frugalos frugalos-start-1.log

for i in 0 1 2; do
  put_json "/v1/devices/file$i" "{\"file\": {\"id\": \"file$i\", \"server\": \"minfs-node\", \
\"filepath\": \"$devdir/file$i.lusf\", \"capacity\": $capacity}}"
done
put_json /v1/devices/rack0 '{"virtual": {"id": "rack0", "children": ["file0", "file1", "file2"]}}'
put_json /v1/buckets/meta '{"metadata": {"id": "meta", "device": "rack0", "tolerable_faults": 1}}'
put_json /v1/buckets/repl '{"replicated": {"id": "repl", "device": "rack0", "tolerable_faults": 1}}'
put_json /v1/buckets/ec '{"dispersed": {"id": "ec", "device": "rack0", "tolerable_faults": 1, "data_fragment_count": 2}}'

meta_sizes=(1000 50000)
big_sizes=(300000 307201 1048576 2500000 5000000)
for s in "${meta_sizes[@]}" "${big_sizes[@]}"; do head -c "$s" /dev/urandom >"$objs/o$s"; done
head -c 1048576 /dev/urandom >"$objs/after-restart"
head -c 60000 /dev/urandom >"$objs/after-restart-meta"

for s in "${meta_sizes[@]}"; do put_object meta "o$s"; done
for b in repl ec; do for s in "${big_sizes[@]}"; do put_object "$b" "o$s"; done; done

# Every object, present or deleted, as "BUCKET NAME".
listing() {
  for s in "${meta_sizes[@]}"; do echo "meta o$s"; done
  for b in repl ec; do for s in "${big_sizes[@]}"; do echo "$b o$s"; done; done
}
deleted=" meta/o1000 repl/o307201 ec/o2500000 "
check_all() { # [after-delete [WAIT_SECONDS]]
  local b o want
  while read -r b o; do
    want=present
    if [[ "$deleted" == *" $b/$o "* ]] && [ "${1:-}" = after-delete ]; then want=absent; fi
    [ -n "${2:-}" ] && settle_object "$b" "$o" "$want" "$2"
    check_object "$b" "$o" "$want"
  done < <(listing)
}
# settle_object BUCKET NAME present|absent SECONDS: right after a start, FrugalOS answers
# before every bucket's Raft groups have elected a leader and replayed their logs (a deleted
# object may still answer 200, a present one 404, for a few seconds): wait up to SECONDS for
# the expected answer, and say how long it took. check_object then judges.
settle_object() {
  local code i
  for ((i = 0; i < $4; i++)); do
    code=$(curl -s -o "$work/got" -w '%{http_code}' "$http/v1/buckets/$1/objects/$2") || code=000
    if [ "$3" = present ]; then
      [ "$code" = 200 ] && cmp -s "$work/got" "$objs/$2" && break
    else
      [ "$code" = 404 ] && break
    fi
    sleep 1
  done
  [ "$i" = 0 ] || say "GET $1/$2: as expected after ${i} s (FrugalOS settling after its start)"
}
check_all
for x in $deleted; do delete_object "${x%/*}" "${x#*/}"; done
check_all after-delete

if [ "$timed" -gt 0 ]; then
  for i in $(seq 1 "$timed"); do head -c 1048576 /dev/urandom >"$objs/t$i"; done
  for b in repl ec; do
    quiet=1 # the timed objects' own lines; failures still print (die, and the count below)
    before=$failures
    t0=$(date +%s.%N)
    for i in $(seq 1 "$timed"); do put_object "$b" "t$i"; done
    t1=$(date +%s.%N)
    for i in $(seq 1 "$timed"); do check_object "$b" "t$i" present; done
    t2=$(date +%s.%N)
    quiet=0
    [ "$failures" = "$before" ] || say "timed $b: $((failures - before)) GET(s) not identical"
    awk -v b="$b" -v d="$devdir" -v n="$timed" -v t0="$t0" -v t1="$t1" -v t2="$t2" 'BEGIN {
      printf "timed %s on %s: %d PUTs of 1 MiB in %.2f s, %d GETs in %.2f s\n", b, d, n, t1 - t0, n, t2 - t1 }'
  done
fi

say "restart: stop FrugalOS, unmount, fsck, mount, start"
stop_frugalos
unmount
fsck_minfs
mount_minfs
start_frugalos frugalos-start-2.log
check_all after-delete 60
put_object meta after-restart-meta
check_object meta after-restart-meta present
for b in repl ec; do put_object "$b" after-restart; check_object "$b" after-restart present; done

stop_frugalos
unmount
"$minfs" ls "$img" >&2
fsck_minfs
if [ "$failures" -gt 0 ]; then
  die "$failures check(s) failed"
fi
say "all checks passed: FrugalOS with its devices in $devdir, three buckets, objects byte-identical across a restart, fsck clean"
