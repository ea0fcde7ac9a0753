#!/usr/bin/env bash
# The project's test command (README.md; CI runs it through .ci/run):
# formatting, clippy with warnings as errors, and every test of the workspace.
# Loop-device tests need root; without it they are skipped with a printed reason
# (MINFS_REQUIRE_LOOP=1 turns those skips into failures, as CI does).
#
# The reliability suites (README "Reliability": minfs/tests/crash_sweep.rs, io_errors.rs,
# cannyls-adapter/tests/crash.rs) run once, inside `cargo test --workspace`, at their default
# counts; the crash suites also in a 512e read-modify-write mode (`*_512e`) and the Cannyls one
# at block size 512 too (`cannyls_crash_512*`). cargo test hides a passing test's output, so each suite also leaves its counts line
# in <target>/tmp/reliability-<suite>.txt; they are printed at the end, so that CI's log shows
# them. scripts/reliability.sh runs the suites alone with larger counts (nightly).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" = 0 ]; then
  missing=()
  command -v mkfs.ext4 >/dev/null || missing+=(e2fsprogs)
  command -v mkfs.xfs >/dev/null || missing+=(xfsprogs)
  command -v losetup >/dev/null || missing+=(util-linux)
  # docgen's man-page test renders every page with `man -l`.
  command -v man >/dev/null || missing+=(man-db)
  command -v groff >/dev/null || missing+=(groff-base)
  if [ ${#missing[@]} -gt 0 ]; then
    echo "test.sh: installing ${missing[*]}"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
  fi
fi

target_dir=$(cargo metadata --format-version 1 --no-deps |
  sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
counts_dir="${target_dir:-target}/tmp"

cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings
rm -f "$counts_dir"/reliability-*.txt
cargo test --workspace

echo
echo "Reliability suites (counts at CI defaults; nightly: scripts/reliability.sh --crash-seeds 100000):"
status=0
suites=(crash_sweep crash_sweep_512e cannyls_crash cannyls_crash_512 cannyls_crash_512e
  cannyls_crash_512e_512 io_errors)
for suite in "${suites[@]}"; do
  if [ -f "$counts_dir/reliability-$suite.txt" ]; then
    cat "$counts_dir/reliability-$suite.txt"
  else
    echo "$suite: no counts (did the suite run?)"
    status=1
  fi
done
# Counts left by other suites following the same convention.
for f in "$counts_dir"/reliability-*.txt; do
  [ -e "$f" ] || continue
  name=$(basename "$f" .txt)
  case " ${suites[*]} " in
    *" ${name#reliability-} "*) ;;
    *) cat "$f" ;;
  esac
done
exit "$status"
