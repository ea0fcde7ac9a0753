#!/usr/bin/env bash
# The emulated drive against its own model: for every run of a comparison made on an emulated
# drive, the run's total operation time as measured (emulated) against its block trace replayed
# through the same profile (`run-K.model-PROFILE.json`, written by compare.sh or remodel.sh).
# About 1 when the emulation kept up; slower emulated than replayed where the emulator fell
# behind (the host's load, FUSE's and the loop device's own time per request).
#
#   scripts/emulation-check.sh DIR PROFILE > DIR/emulation-check.md
#
# Prints the Markdown table and a summary line (min, median, max, runs outside 0.95–1.05) to
# stdout, the summary also to stderr. Exit codes: 0; 1 no modelled run of PROFILE in DIR;
# 2 usage error.
set -euo pipefail
if [ $# -ne 2 ] || [ ! -d "$1/runs" ]; then
  echo "usage: scripts/emulation-check.sh DIR PROFILE   (DIR holds runs/)" >&2
  exit 2
fi
out=$1 profile=$2
rows=$(
  for mj in "$out"/runs/*/*/run-*.model-"$profile".json; do
    [ -e "$mj" ] || continue
    meas=$(sed -n 's/.*"measured_total_elapsed_ns": *\([0-9]*\).*/\1/p' "$mj" | sed -n 1p)
    mod=$(sed -n 's/.*"modelled_total_elapsed_ns": *\([0-9]*\).*/\1/p' "$mj" | sed -n 1p)
    [ -n "$meas" ] && [ -n "$mod" ] || continue
    rel=${mj#"$out"/runs/}
    IFS=/ read -r w t r <<<"$rel"
    r=${r%%.model-*}
    awk -v w="$w" -v t="$t" -v r="${r#run-}" -v a="$meas" -v b="$mod" \
      'BEGIN { printf "| %s | %s | %s | %.3f | %.3f | %.3f |\n", w, t, r, a / 1e9, b / 1e9, (a > 0 ? b / a : 0) }'
  done
)
if [ -z "$rows" ]; then
  echo "emulation-check.sh: no run-*.model-$profile.json with totals under $out/runs" >&2
  exit 1
fi
summary=$(awk -F' *[|] *' '{ printf "%s\t%s %s run %s\n", $7, $2, $3, $4 }' <<<"$rows" |
  sort -g | awk -F'\t' '
    { v[NR] = $1 + 0; if (v[NR] < 0.95 || v[NR] > 1.05) { n++; off = off (n > 1 ? ", " : "") $2 " (" $1 ")" } }
    END {
      med = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
      printf "%d run%s: replayed / measured min %.3f, median %.3f, max %.3f; %d outside 0.95–1.05%s",
        NR, (NR == 1 ? "" : "s"), v[1], med, v[NR], n, (n ? ": " off : "")
    }')
echo "# Emulated vs replayed"
echo
echo "Each run on the emulated drive (\`hddsim emulate --profile $profile\`) against the replay of"
echo "its block trace through the same profile (\`minfs-bench hdd-replay\`): total operation time."
echo
echo "| workload | target | run | measured (emulated) s | replayed s | replayed / measured |"
echo "| --- | --- | --- | --- | --- | --- |"
echo "$rows"
echo
echo "$summary."
echo "emulation-check.sh: $summary" >&2
