# Summarises the output of `cargo test` (stdout and stderr together) for scripts/test.sh.
#
# Prints "PASSED FAILED IGNORED SKIPPED" on its first line, PASSED not counting the skipped
# tests, then a line "failed: WHAT" per failure and "skipped: BINARY::TEST" per skipped test.
#
# Per test binary ("Running …", "Doc-tests …"): its "test result:" counts and the tests it
# reported FAILED; cargo follows a failed binary with "error: … failed, to rerun pass `ARGS`",
# which names it (a binary that ended without a result line crashed).
#
# A test skips at run time (no root, no loop devices, THP off, …) by printing
# testutil::print_skip's notice to stderr, past the harness's capture: "SKIPPED NAME (WHAT):
# REASON", NAME being the harness's name for the test (the thread it runs on). cargo counts
# such a test as passed; here it is counted as skipped, once however many notices it printed,
# unless it failed. A notice from a thread of no test ("SKIPPED WHAT: REASON") names no test
# and is not counted. With one test thread the notice can land in the middle of the harness's
# "test NAME ... ok" line, so it is looked for anywhere in a line.
function binary_label(line,   s) {
  if (line ~ /^ *Doc-tests /) { s = line; sub(/^ *Doc-tests /, "", s); return s }
  # "Running tests/mount.rs (target/debug/deps/mount-0123abcd)" -> "mount"
  s = line; sub(/.*\(/, "", s); sub(/\).*/, "", s); sub(/.*\//, "", s); sub(/-[0-9a-f]+$/, "", s)
  return s
}
/^ *(Running|Doc-tests) / {
  pending = 1; tests = ""; nskip = 0; started = ""; bin = binary_label($0); next
}
match($0, /SKIPPED [A-Za-z0-9_:]+ \(/) {
  name = substr($0, RSTART + 8, RLENGTH - 10)
  if (!((bin, name) in seen)) { seen[bin, name] = 1; skip[++nskip] = name }
  # One test thread: "test NAME ... SKIPPED …", its result alone on the next line.
  if ($0 ~ /^test [^ ]+ \.\.\. SKIPPED /) { started = $2 }
  next
}
/^test .* \.\.\. FAILED$/ {
  t = $0; sub(/^test /, "", t); sub(/ \.\.\. FAILED$/, "", t); tests = tests t "\n"; next
}
/^FAILED$/ && started != "" { tests = tests started "\n"; started = ""; next }
/^test result: / {
  pending = 0
  for (i = 1; i < NF; i++) {
    if ($(i + 1) ~ /^passed;?$/) passed += $i
    if ($(i + 1) ~ /^failed;?$/) failed += $i
    if ($(i + 1) ~ /^ignored;?$/) ignored += $i
  }
  for (i = 1; i <= nskip; i++) {
    if (index("\n" tests, "\n" skip[i] "\n") == 0) { skipped_n++; skipped = skipped "skipped: " bin "::" skip[i] "\n" }
  }
  nskip = 0
  next
}
/^error: .*failed, to rerun pass `/ {
  args = $0; sub(/^[^`]*`/, "", args); sub(/`.*$/, "", args)
  n = split(tests, arr, "\n")
  for (i = 1; i < n; i++) bad = bad "failed: " arr[i] " (cargo test " args ")\n"
  if (pending) bad = bad "failed: cargo test " args ": ended without a test result (crashed?)\n"
  tests = ""; pending = 0
}
END { printf "%d %d %d %d\n%s%s", passed - skipped_n, failed, ignored, skipped_n, bad, skipped }
