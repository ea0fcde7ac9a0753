#!/usr/bin/env bash
# Re-models a committed comparison directory with the current HDD model: for every run that has
# a trace, `minfs-bench hdd-replay` over its (possibly compressed) trace and op-log for each
# profile of compare.json, rewriting run-K.model-<profile>.json; then `minfs-bench report DIR`
# re-renders report.md and the plots. The measured files are not touched. Where compare.json
# names st1000dm003, st1000dm003-write-first and st1000dm003-merge (the same drive under the
# model's second- and first-revision rules) are modelled too, so the report shows the range
# of the three rule sets; REMODEL_PROFILES (space-separated) replaces the list.
#
#   scripts/remodel.sh results/2026-11-22-vm-loop-512
#
# Exit codes: 0 success; 1 a replay or the report failed; 2 usage error.
set -euo pipefail

if [ $# -ne 1 ] || [ ! -f "$1/compare.json" ]; then
  echo "usage: scripts/remodel.sh DIR   (DIR holds compare.json and runs/)" >&2
  exit 2
fi
dir=$1
root=$(cd "$(dirname "$0")/.." && pwd)
cargo build --release --quiet --manifest-path "$root/Cargo.toml" -p bencher-workloads
bench=$root/target/release/minfs-bench
profiles=${REMODEL_PROFILES:-$(python3 -c '
import json, sys
p = json.load(open(sys.argv[1])).get("profiles", [])
for extra in ["st1000dm003-merge", "st1000dm003-write-first"]:
    if "st1000dm003" in p and extra not in p:
        p.insert(p.index("st1000dm003") + 1, extra)
print(" ".join(p))' "$dir/compare.json")}
failures=0
for json in "$dir"/runs/*/*/run-*.json; do
  case $json in *.model-*.json) continue ;; esac
  base=${json%.json}
  trace=$(ls "$base".trace "$base".trace.gz 2>/dev/null | sed -n 1p || true)
  oplog=$(ls "$base".oplog "$base".oplog.gz 2>/dev/null | sed -n 1p || true)
  [ -n "$trace" ] && [ -n "$oplog" ] || continue
  for p in $profiles; do
    if ! "$bench" hdd-replay --profile "$p" --run "$json" --json "$base.model-$p.json" \
      "$trace" "$oplog" >/dev/null; then
      echo "hdd-replay $p failed for $base" >&2
      failures=$((failures + 1))
    fi
  done
done
"$bench" report "$dir"
[ "$failures" = 0 ] || { echo "$failures replays failed" >&2; exit 1; }
