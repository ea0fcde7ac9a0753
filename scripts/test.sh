#!/usr/bin/env bash
# The project's test command (README.md; CI runs it through .ci/run):
# formatting, clippy with warnings as errors, and every test of the workspace.
# Loop-device tests need root; without it they are skipped with a printed reason
# (MINFS_REQUIRE_LOOP=1 turns those skips into failures, as CI does).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" = 0 ]; then
  missing=()
  command -v mkfs.ext4 >/dev/null || missing+=(e2fsprogs)
  command -v mkfs.xfs >/dev/null || missing+=(xfsprogs)
  command -v losetup >/dev/null || missing+=(util-linux)
  if [ ${#missing[@]} -gt 0 ]; then
    echo "test.sh: installing ${missing[*]}"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
  fi
fi

cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings
cargo test --workspace
