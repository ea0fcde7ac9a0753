# Sourced by scripts/compare.sh: retrying a command on a device that is busy for a moment.

# retry_busy CMD...: runs CMD; when it fails because the device is busy for a moment (EBUSY:
# another process has it open, e.g. udev's or another user's probe), tries again, for up to
# 30 s. Its output is passed on. (mke2fs says "apparently in use by the system" for EBUSY.)
retry_busy() {
  local err rc i
  err=$(mktemp)
  for ((i = 1; i <= 31; i++)); do
    rc=0
    "$@" 2>"$err" || rc=$?
    if [ "$rc" != 0 ] && [ "$i" -le 30 ] && grep -qiE 'busy|in use by the system' "$err"; then
      echo "${prog:-retry_busy}: $1: device busy, retrying ($i): $(head -1 "$err")" >&2
      sleep 1
      continue
    fi
    break
  done
  cat "$err" >&2
  rm -f "$err"
  return "$rc"
}
