# Sourced by scripts/compare.sh and scripts/hdd-check.sh: the teardown of an emulated drive.

# stop_emulator HDDSIM MOUNTPOINT: unmounts the `hddsim emulate` server at MOUNTPOINT and
# removes the directory. `hddsim umount` is retried for up to 5 s, because the loop device may
# hold the emulator's file a moment after it was detached; if it is still mounted then, it is
# detached lazily (`umount -l`) and the function returns 1.
stop_emulator() {
  local hddsim=$1 mnt=$2 rc=0
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    ! mountpoint -q "$mnt" && break
    "$hddsim" umount "$mnt" >/dev/null 2>&1 && break
    sleep 0.5
  done
  if mountpoint -q "$mnt"; then
    umount -l "$mnt"
    rc=1
  fi
  rmdir "$mnt" 2>/dev/null
  return $rc
}
