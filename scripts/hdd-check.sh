#!/usr/bin/env bash
# fio against an emulated drive (`hddsim emulate`), side by side with the profile's figures.
#
#   scripts/hdd-check.sh [OPTIONS]
#
# Makes a sparse backing image of the profile's whole capacity (so random offsets span the
# full stroke, as the published figures do), starts `hddsim emulate` on it, attaches a loop
# device (--direct-io=on) over the emulator's file and runs fio on that device (O_DIRECT):
#
#   sequential 1 MiB reads and writes (QD1, from the start of the disk: the outer edge),
#   random 4 KiB reads at QD1 and QD32 over the whole disk,
#   fsync latency after every 8 scattered 4 KiB writes.
#
# Each figure is printed next to what `hddsim validate` computes from the model for the same
# pattern and the profile's published (manual) and sister-drive figures. Everything it made
# (emulator, loop device, image) is removed on exit, error and Ctrl-C.
#
# Options:
#   --profile P       drive profile (default st1000dm003)
#   --work DIR        where the sparse image lives (default /var/tmp/hdd-check)
#   --runtime S       seconds for each random-I/O and flush job (default 20)
#   --seq-size SIZE   bytes for each sequential job (fio size; default 512M)
#   --bin-dir DIR     use the hddsim binary in DIR instead of building release
#   --out FILE        also write the table (markdown) to FILE
#   -h, --help
#
# Needs root, /dev/fuse, fio and jq (installed with apt-get when missing). Exit codes: 0 done,
# 1 a step failed, 2 usage error, 130 interrupted.
set -euo pipefail
shopt -s inherit_errexit 2>/dev/null || true

repo=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=lib/emulator.sh
source "$repo/scripts/lib/emulator.sh"
prog=hdd-check.sh
die() { echo "$prog: error: $*" >&2; exit 1; }
usage_error() { echo "$prog: error: $*" >&2; echo "(see $prog --help)" >&2; exit 2; }
say() { echo "$prog: $*" >&2; }

profile=st1000dm003
work=/var/tmp/hdd-check
runtime=20
seq_size=512M
bin_dir=""
out=""
need_arg() { [ $# -ge 2 ] && [ -n "$2" ] || usage_error "$1 needs a value"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --profile) need_arg "$@"; profile=$2; shift 2 ;;
    --work) need_arg "$@"; work=$2; shift 2 ;;
    --runtime) need_arg "$@"; runtime=$2; shift 2 ;;
    --seq-size) need_arg "$@"; seq_size=$2; shift 2 ;;
    --bin-dir) need_arg "$@"; bin_dir=$2; shift 2 ;;
    --out) need_arg "$@"; out=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) usage_error "unknown argument '$1'" ;;
  esac
done
[[ $runtime =~ ^[1-9][0-9]*$ ]] || usage_error "--runtime '$runtime' is not a positive integer"
[[ ${seq_size^^} =~ ^[1-9][0-9]*[KMG]?$ ]] || usage_error "--seq-size '$seq_size' is not like 512M"

[ "$(id -u)" = 0 ] || usage_error "must run as root (loop devices, FUSE mounts)"
[ -e /dev/fuse ] || die "/dev/fuse is missing (modprobe fuse)"
missing=()
command -v fio >/dev/null || missing+=(fio)
command -v jq >/dev/null || missing+=(jq)
if [ ${#missing[@]} -gt 0 ]; then
  command -v apt-get >/dev/null || die "missing tools: install ${missing[*]}"
  say "installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if [ -n "$bin_dir" ]; then
  hddsim=$(cd "$bin_dir" && pwd)/hddsim
else
  say "building hddsim (release)"
  (cd "$repo" && cargo build --release -q -p hddsim)
  target_dir=$(cd "$repo" && cargo metadata --format-version 1 --no-deps \
    | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
  hddsim=$target_dir/release/hddsim
fi
[ -x "$hddsim" ] || die "no hddsim binary at $hddsim"
validate=$("$hddsim" validate --profile "$profile" --json -) \
  || usage_error "hddsim has no profile '$profile' (see above)"
profile_file=$profile
[ -f "$profile_file" ] || profile_file=$repo/hddsim/profiles/$profile.toml
capacity=$(awk '/^\[capacity_bytes\]/ { f = 1; next } f && /^value/ { print $3; exit }' "$profile_file")
[[ $capacity =~ ^[0-9]+$ ]] || die "no capacity_bytes in $profile_file"

emu_mnt=""
loop=""
image=""
interrupted=0
cleanup() {
  local rc=$?
  set +e
  trap - EXIT INT TERM
  [ -n "$loop" ] && losetup -d "$loop"
  [ -n "$emu_mnt" ] && stop_emulator "$hddsim" "$emu_mnt"
  [ -n "$image" ] && rm -f "$image"
  if [ "$interrupted" = 1 ]; then say "interrupted; cleaned up"; exit 130; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'interrupted=1; exit 130' INT TERM

mkdir -p "$work"
work=$(cd "$work" && pwd)
image=$work/hdd-check-$$.img
truncate -s "$capacity" "$image"
emu_mnt=$(mktemp -d "$work/emulator.XXXXXX")
"$hddsim" emulate --profile "$profile" --backing "$image" "$emu_mnt" >/dev/null
loop=$(losetup --find --show --direct-io=on "$emu_mnt/disk")
say "$profile emulated on $loop ($((capacity >> 30)) GiB, sparse image $image)"

# fio_job NAME ARGS...: runs one fio job on the device, JSON to $work/NAME.json.
fio_job() {
  local name=$1
  shift
  say "fio: $name"
  fio --name="$name" --filename="$loop" --direct=1 --output-format=json "$@" >"$work/$name.json"
}
fio_job seq-read --rw=read --bs=1M --size="$seq_size" --ioengine=psync
fio_job seq-write --rw=write --bs=1M --size="$seq_size" --ioengine=psync --end_fsync=1
fio_job rand-read-qd1 --randseed=1 --rw=randread --bs=4k --ioengine=psync --runtime="$runtime" --time_based
fio_job rand-read-qd32 --randseed=2 --rw=randread --bs=4k --ioengine=libaio --iodepth=32 --runtime="$runtime" --time_based
fio_job flush-after-8 --randseed=3 --rw=randwrite --bs=4k --ioengine=psync --fsync=8 --runtime="$runtime" --time_based
stats=$(cat "$emu_mnt/stats.json")

j() { jq -r "$1" "$work/$2.json"; }
model() { jq -r --arg f "$1" '.[] | select(.figure == $f) | [.model, (.manual // "-"), (.sister // "-")] | map(if type == "number" then (. * 10 | round / 10 | tostring) else . end) | join(" | ")' <<<"$validate"; }
mbps() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1e6 }'; }
{
  echo "| figure | fio on the emulated drive | model (hddsim validate) | manual | sister | unit |"
  echo "| --- | --- | --- | --- | --- | --- |"
  echo "| sequential 1 MiB reads (QD1, outer edge) | $(mbps "$(j '.jobs[0].read.bw_bytes' seq-read)") | $(model "sequential read at the outer edge, 512 KiB commands") | MB/s |"
  echo "| sequential 1 MiB writes (QD1, outer edge, then fsync) | $(mbps "$(j '.jobs[0].write.bw_bytes' seq-write)") | $(model "sequential write at the outer edge (256 MiB, then a flush)") | MB/s |"
  echo "| random 4 KiB reads, QD1: mean response | $(awk -v n="$(j '.jobs[0].read.clat_ns.mean' rand-read-qd1)" 'BEGIN { printf "%.1f", n / 1e6 }') | $(model "random 4 KiB reads, QD1: mean response") | ms |"
  echo "| random 4 KiB reads, QD1 | $(awk -v n="$(j '.jobs[0].read.iops' rand-read-qd1)" 'BEGIN { printf "%.1f", n }') | $(awk -v m="$(jq -r '.[] | select(.figure == "random 4 KiB reads, QD1: mean response") | .model' <<<"$validate")" 'BEGIN { printf "%.1f", 1000 / m }') | - | - | IOPS |"
  echo "| random 4 KiB reads, QD32 | $(awk -v n="$(j '.jobs[0].read.iops' rand-read-qd32)" 'BEGIN { printf "%.1f", n }') | $(model "random 4 KiB reads, QD32 (served in arrival order)") | IOPS |"
  echo "| fsync after 8 scattered 4 KiB writes: mean | $(awk -v n="$(j '.jobs[0].sync.lat_ns.mean' flush-after-8)" 'BEGIN { printf "%.1f", n / 1e6 }') | $(model "flush after 8 scattered 4 KiB writes") | ms |"
  echo
  echo "Requests the model saw (emulator stats): $(jq -c '{reads: .requests.reads, writes: .requests.writes, flushes: .requests.flushes, read_sizes: .requests.read_sizes, write_sizes: .requests.write_sizes, max_outstanding, late_replies}' <<<"$stats")"
  echo
  echo "hddsim $("$hddsim" --version | awk '{ print $2 }'), profile $profile, fio $(fio --version | sed 's/^fio-//'), kernel $(uname -r); fio jobs: O_DIRECT on a loop device (--direct-io=on) over the emulator's file; random jobs $runtime s each, sequential ones $seq_size."
} | tee "${out:-/dev/null}"
