#!/usr/bin/env bash
# The comparison: Cannyls on minfs vs on a file in ext4 (no journal) and XFS vs the bare
# device, all on one device (by default the emulated 512e drive, `hddsim emulate`), each
# target freshly prepared before every run, round after round until every comparison is
# decided or the time budget (default 15 minutes) is spent.
#
#   scripts/compare.sh [OPTIONS]
#
# A thin wrapper: builds the release binaries (cargo build --release -p minfs -p
# bencher-workloads -p hddsim; not with --bin-dir DIR, which names where they are) and runs
# `minfs-bench compare --bin-dir DIR OPTIONS`, which does everything else: the options, the
# device, the rounds, the report. `scripts/compare.sh --help` prints its options;
# docs/COMPARISON.md says what it runs and writes.
#
# Exit codes: 0 all runs succeeded; 1 a run or step failed (the report marks it), or the
# build failed; 2 usage error, an --out that is not empty, or a refused device; 130
# interrupted. Mounts, loop devices, the emulator and tracefs instances it made are removed on
# exit, error, Ctrl-C and SIGTERM.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
bin_dir=""
prev=""
for a in "$@"; do
  [ "$prev" = --bin-dir ] && bin_dir=$a
  case $a in --bin-dir=*) bin_dir=${a#--bin-dir=} ;; esac
  prev=$a
done

if [ -n "$bin_dir" ]; then
  exec "$bin_dir/minfs-bench" compare "$@"
fi
echo "compare.sh: building release binaries" >&2
(cd "$repo" && cargo build --release -q -p minfs -p bencher-workloads -p hddsim) || {
  echo "compare.sh: error: building the release binaries failed" >&2
  exit 1
}
target_dir=$(cd "$repo" && cargo metadata --format-version 1 --no-deps |
  sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
bin_dir=$target_dir/release
# exec: minfs-bench takes this process's id (its mount points and tracefs instance are named
# after it) and gets Ctrl-C and SIGTERM itself.
exec "$bin_dir/minfs-bench" compare --bin-dir "$bin_dir" "$@"
