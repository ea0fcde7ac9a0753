#!/usr/bin/env bash
# The emulated drive against its own model, for a comparison directory made on the emulated
# drive: each run's total operation time as measured (emulated) against its block trace
# replayed through the same profile, a run off by more than 2 % flagged with why. A thin entry:
# `minfs-bench report DIR` writes DIR/emulation-check.md (and report.md) as `compare` does.
#
#   scripts/emulation-check.sh DIR
#
# Exit codes: those of `minfs-bench report` (0; 1 the directory cannot be read; 2 usage).
set -euo pipefail
if [ $# -ne 1 ] || [ ! -d "$1/runs" ]; then
  echo "usage: scripts/emulation-check.sh DIR   (a comparison directory holding runs/)" >&2
  exit 2
fi
repo=$(cd "$(dirname "$0")/.." && pwd)
bench=${MINFS_BENCH:-$repo/target/release/minfs-bench}
[ -x "$bench" ] || (cd "$repo" && cargo build --release -q -p bencher-workloads)
"$bench" report "$1" >/dev/null
cat "$1/emulation-check.md"
