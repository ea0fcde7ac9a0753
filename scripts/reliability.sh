#!/usr/bin/env bash
# The reliability suites (docs/RELIABILITY.md), with larger counts for nightly runs:
#   1. minfs crash_sweep    crash images after every device operation + random crash seeds
#   2. cannyls crash        a Cannyls storage on minfs, crashed at every device operation
#                           (block size 4096 and 512; plain and 512e media: 1 and 2 both run a
#                           512e read-modify-write mode too, docs/RELIABILITY.md)
#   3. minfs io_errors      a read/write/flush failing once or for good at every operation
#   4. minfs malformed_bitflips, bencher-workloads bad_input   malformed metadata and input
#   5. minfs cli_bad_input  the CLI on bad input
#   6. powercut             power cuts of the whole stack on the emulated drive, every target
#                           (scripts/powercut.sh: minfs, minfs-512, ext4, ext4-journal, xfs, raw,
#                           raw-4096; crash states from the drive's write log; needs root,
#                           loop devices and /dev/fuse, skipped with the reason otherwise)
# (4 and 5 run when their test files exist.) Each suite prints its counts lines, one per mode
# ("crash points: N, ..., panics: 0"); a summary of them all ends the output, and the script
# exits non-zero when any suite fails.
#
# Usage: scripts/reliability.sh [--crash-seeds N] [--release] [--no-powercut]
#   --crash-seeds N  random crash images of suite 1 (suite 2 takes a quarter as many);
#                    default 4000 (CI, through scripts/test.sh, runs each suite's own
#                    default: 8000 for suite 1, 4000 for suite 2). Nightly: --crash-seeds
#                    100000. The checks that a suite did not pass vacuously (e.g. that 512e
#                    media ruined data) hold at any N, 0 included.
#   --release        build optimized (faster for large counts).
#   --no-powercut    leave out suite 6 (it takes about an hour on a shared 2-CPU machine).
#
# CI does not call this script: scripts/test.sh runs every suite once inside
# `cargo test --workspace` at the default counts and prints the counts lines the suites leave
# in <target>/tmp/reliability-*.txt, so nothing runs twice.
set -euo pipefail
cd "$(dirname "$0")/.."

seeds=4000
profile=()
powercut=1
while [ $# -gt 0 ]; do
  case "$1" in
    --crash-seeds)
      [ $# -ge 2 ] || { echo "reliability.sh: --crash-seeds needs a number" >&2; exit 2; }
      seeds=$2
      shift 2
      ;;
    --crash-seeds=*) seeds=${1#*=}; shift ;;
    --release) profile=(--release); shift ;;
    --no-powercut) powercut=0; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
    *) echo "reliability.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
case "$seeds" in
  ''|*[!0-9]*) echo "reliability.sh: --crash-seeds wants a whole number, not '$seeds'" >&2; exit 2 ;;
esac
export MINFS_CRASH_SEEDS=$seeds

# name | package | test target | file that must exist
suites=(
  "crash_sweep|minfs|crash_sweep|minfs/tests/crash_sweep.rs"
  "cannyls_crash|cannyls-adapter|crash|cannyls-adapter/tests/crash.rs"
  "io_errors|minfs|io_errors|minfs/tests/io_errors.rs"
  "malformed_bitflips|minfs|malformed_bitflips|minfs/tests/malformed_bitflips.rs"
  "cli_bad_input|minfs|cli_bad_input|minfs/tests/cli_bad_input.rs"
  "bad_input|bencher-workloads|bad_input|bencher-workloads/tests/bad_input.rs"
)

logdir=$(mktemp -d "${TMPDIR:-/tmp}/minfs-reliability.XXXXXX")
trap 'rm -rf "$logdir"' EXIT
summary=()
failed=0
for entry in "${suites[@]}"; do
  IFS='|' read -r name pkg target file <<<"$entry"
  if [ ! -f "$file" ]; then
    summary+=("$name: not present ($file), skipped")
    continue
  fi
  echo "=== $name (cargo test -p $pkg --test $target, MINFS_CRASH_SEEDS=$seeds) ==="
  start=$(date +%s)
  status=ok
  if ! cargo test "${profile[@]}" -p "$pkg" --test "$target" -- --nocapture --test-threads=1 \
      2>&1 | tee "$logdir/$name.log"; then
    status=FAILED
    failed=1
  fi
  secs=$(( $(date +%s) - start ))
  # The counts line: "label: N, label: N, ..." (the last such line the suite printed).
  # (libtest prints "test NAME ... " before a test's first output: drop it.)
  counts=$(sed -E 's/^test [^ ]+ \.\.\. //' "$logdir/$name.log" |
    grep -E '^[a-z][^:]*: [0-9]+, .*: [0-9]+$' || true)
  # A suite may run in several modes (e.g. cannyls crash at block size 4096 and 512, on plain
  # and 512e media): one line per counts line.
  if [ -z "$counts" ]; then
    summary+=("$name [$status, ${secs}s]: no counts line printed")
  else
    while IFS= read -r line; do
      summary+=("$name [$status, ${secs}s]: $line")
    done <<<"$counts"
  fi
done

if [ "$powercut" = 1 ]; then
  why=""
  [ "$(id -u)" = 0 ] || why="not root"
  [ -e /dev/fuse ] || why="${why:+$why, }/dev/fuse is missing"
  if [ -n "$why" ]; then
    summary+=("powercut: skipped ($why)")
  else
    echo "=== powercut (scripts/powercut.sh, the full matrix) ==="
    start=$(date +%s)
    status=ok
    scripts/powercut.sh --out "$logdir/powercut" 2>&1 | tee "$logdir/powercut.log" || { status=FAILED; failed=1; }
    secs=$(( $(date +%s) - start ))
    if [ -f "$logdir/powercut/SUMMARY.md" ]; then
      while IFS= read -r line; do
        summary+=("powercut [$status, ${secs}s]: $line")
      done < <(grep '^| [a-z]' "$logdir/powercut/SUMMARY.md" | grep -v '^| workload')
    else
      summary+=("powercut [$status, ${secs}s]: no SUMMARY.md written")
    fi
  fi
fi

echo
echo "=== reliability summary (MINFS_CRASH_SEEDS=$seeds) ==="
printf '%s\n' "${summary[@]}"
exit "$failed"
