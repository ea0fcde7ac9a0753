#!/usr/bin/env bash
# The project's test command (README.md; CI runs it through .ci/run):
# formatting, clippy with warnings as errors, and every test of the workspace.
# Loop-device tests need root; without it they are skipped with a printed reason
# (MINFS_REQUIRE_LOOP=1 turns those skips into failures, as CI does).
#
# The reliability suites (docs/RELIABILITY.md: minfs/tests/crash_sweep.rs, io_errors.rs,
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
  # The system tests (minfs/tests/system.rs, docgen/tests/deb.rs): mount.fuse, the systemd
  # fstab generator and systemd-fsck, and what cargo-deb runs.
  [ -x /sbin/mount.fuse3 ] || missing+=(fuse3)
  [ -x /usr/lib/systemd/system-generators/systemd-fstab-generator ] ||
    [ -x /lib/systemd/system-generators/systemd-fstab-generator ] || missing+=(systemd)
  command -v dpkg-shlibdeps >/dev/null || missing+=(dpkg-dev)
  command -v strip >/dev/null || missing+=(binutils)
  # docgen's completions test parses the zsh and fish scripts with the shells themselves.
  command -v zsh >/dev/null || missing+=(zsh)
  command -v fish >/dev/null || missing+=(fish)
  # The reports' PNG plots (resvg) draw their text with a system font.
  [ -d /usr/share/fonts/truetype/dejavu ] || missing+=(fonts-dejavu-core)
  # mkfs's refusals and wipes, each format made by its own tool (minfs/tests/signatures.rs),
  # and the udev rule run by the real systemd-udevd (minfs/tests/udev.rs).
  command -v sfdisk >/dev/null || missing+=(fdisk)
  command -v mkfs.btrfs >/dev/null || missing+=(btrfs-progs)
  command -v pvcreate >/dev/null || missing+=(lvm2)
  command -v mdadm >/dev/null || missing+=(mdadm)
  command -v make-bcache >/dev/null || missing+=(bcache-tools)
  [ -x /lib/systemd/systemd-udevd ] || [ -x /usr/lib/systemd/systemd-udevd ] || missing+=(udev)
  if [ ${#missing[@]} -gt 0 ]; then
    echo "test.sh: installing ${missing[*]}"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
  fi
  if ! cargo deb --version >/dev/null 2>&1; then
    echo "test.sh: installing cargo-deb (cargo install cargo-deb --locked --version 3.7.0)"
    cargo install cargo-deb --locked --version 3.7.0
  fi
fi

target_dir=$(cargo metadata --format-version 1 --no-deps |
  sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
counts_dir="${target_dir:-target}/tmp"

# Every step runs, whatever an earlier one gave: a formatting or clippy failure does not hide
# the tests, and `--no-fail-fast` runs every test binary even when one fails. The last line
# says what happened: "test.sh: N passed, 0 failed (all N tests passed ...)" or "test.sh: N
# passed, M failed: WHAT; ..." (exit status 1). Tests that skipped at run time (they print
# testutil::print_skip's "SKIPPED" notice; cargo counts them as passed) are counted apart and
# named after the passed ones: "N passed, S skipped (BINARY::TEST, ...), 0 failed ...".
failed=()
log=$(mktemp "${TMPDIR:-/tmp}/minfs-test.XXXXXX")
trap 'rm -f "$log"' EXIT

cargo fmt --all -- --check || failed+=("cargo fmt --check")
cargo clippy --workspace --all-targets -- -D warnings || failed+=("clippy -D warnings")
# minfs as its dependents build it: cannyls-adapter and minfs-bench without its default
# features, hddsim with `fuse` only (a workspace build unifies the features, which hides
# warnings and missing items of these builds). Only where the workspace has minfs.
if [ -f minfs/Cargo.toml ]; then
  for features in "" fuse cli; do
    cargo clippy -p minfs --no-default-features ${features:+--features "$features"} \
      --all-targets -- -D warnings ||
      failed+=("clippy -p minfs --no-default-features${features:+ --features $features} -D warnings")
  done
  cargo clippy -p cannyls-adapter --all-targets -- -D warnings ||
    failed+=("clippy -p cannyls-adapter (minfs without default features) -D warnings")
fi
# The publishable crates package and build from their packages alone (cargo package verifies
# each; the workspace's crates it depends on come from a local registry of the packages just
# made; no upload and no credentials). From cargo's cache first, so that it works offline once
# the workspace has been built; from crates.io's index where the cache lacks a dependency.
# docgen/tests/package.rs checks their metadata.
# cargo extracts each package it verifies against into its registry cache, in a directory per
# local registry (registry/src/-HASH/NAME-VERSION), and treats that source and what it built
# from it as published, never changing: a crate changed since an earlier run of the same
# version would be verified against its old build. So the packages are verified in a target
# directory of their own (its first run builds the dependencies once), where the workspace's
# crates are built only from those extractions, and both go first.
package_target=target/package-check
for crate in minfs minfs-devguard hddsim cannyls-adapter bencher-workloads; do
  rm -rf "${CARGO_HOME:-$HOME/.cargo}"/registry/src/-*/"$crate"-[0-9]* \
    "$package_target"/debug/.fingerprint/"$crate"-*
done
package=(env CARGO_TARGET_DIR="$package_target" cargo package --allow-dirty -p minfs
  -p minfs-devguard -p hddsim -p cannyls-adapter -p bencher-workloads)
if [ -f minfs/Cargo.toml ]; then
  "${package[@]}" --offline || "${package[@]}" || failed+=("cargo package (the publishable crates)")
fi
rm -f "$counts_dir"/reliability-*.txt
before_tests=${#failed[@]}
set +e
cargo test --workspace --no-fail-fast 2>&1 | tee "$log"
test_status=${PIPESTATUS[0]}
set -e

# Counts, failures and skipped tests (scripts/lib/test-summary.awk): "P F I S", then
# "failed: WHAT" and "skipped: BINARY::TEST" lines.
summary=$(awk -f scripts/lib/test-summary.awk "$log")
read -r n_passed _ n_ignored _ <<<"$(sed -n 1p <<<"$summary")"
skipped=()
while IFS= read -r line; do
  case $line in
    "failed: "*) failed+=("${line#failed: }") ;;
    "skipped: "*) skipped+=("${line#skipped: }") ;;
  esac
done < <(sed 1d <<<"$summary")
if [ "$test_status" != 0 ] && [ ${#failed[@]} = "$before_tests" ]; then
  failed+=("cargo test exited with $test_status (a build error? see above)")
fi

echo
echo "Reliability suites (counts at CI defaults; nightly: scripts/reliability.sh --crash-seeds 100000):"
suites=(crash_sweep crash_sweep_512e cannyls_crash cannyls_crash_512 cannyls_crash_512e
  cannyls_crash_512e_512 io_errors)
for suite in "${suites[@]}"; do
  if [ -f "$counts_dir/reliability-$suite.txt" ]; then
    cat "$counts_dir/reliability-$suite.txt"
  else
    echo "$suite: no counts (did the suite run?)"
    failed+=("reliability suite $suite left no counts")
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
# Which non-zero losses above are the documented outcome, and why (docs/RELIABILITY.md).
echo "Expected losses: only cannyls_crash_512e_512 (Cannyls at block size 512 on 512e media"
echo "  without power-loss protection) loses acknowledged lumps: its puts and journal appends"
echo "  share 4 KiB physical sectors with acknowledged data, and a torn read-modify-write ruins"
echo "  them; the suite asserts that it happens (docs/RELIABILITY.md, \"512e drives\"), which is"
echo "  why MinfsNvm's default block size is 4096 (0 lost in cannyls_crash_512e). Every other"
echo "  lost/failure count must be 0. powercut's \"wrong-bound lost\", where it ran, is the checker's"
echo "  self-test: a deliberately wrong acknowledgement bound must report lost lumps (> 0)."

echo
ignored_note=""
[ "$n_ignored" = 0 ] || ignored_note=", $n_ignored ignored"
skipped_note=""
if [ ${#skipped[@]} != 0 ]; then
  names=$(printf '%s, ' "${skipped[@]}")
  skipped_note=", ${#skipped[@]} skipped (${names%, })"
fi
if [ ${#failed[@]} = 0 ]; then
  echo "test.sh: $n_passed passed$skipped_note, 0 failed$ignored_note (all $n_passed tests passed; cargo fmt --check and clippy -D warnings clean)"
  exit 0
fi
list=$(printf '%s; ' "${failed[@]}")
echo "test.sh: $n_passed passed$skipped_note, ${#failed[@]} failed$ignored_note: ${list%; }"
exit 1
