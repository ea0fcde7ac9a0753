#!/usr/bin/env bash
# Peak resident memory (ru_maxrss, from GNU time) and wall time of every `minfs` command on
# loop devices of 1 GiB, 20 TB and 1 PiB over sparse files (issue 12: "a 20 TB disk in a few
# MiB"). Root only: it mounts a tmpfs for the sparse images (ext4 caps a file at 16 TiB) and
# attaches loop devices; everything it makes is removed on exit or Ctrl-C.
#
# Usage: sudo scripts/large-disk.sh [--bin MINFS] [--compare OTHER_MINFS] [--sizes "1G 20T 1P"]
#   --bin      the minfs binary measured (default: target/release/minfs, built if missing)
#   --compare  a second binary (e.g. one built from an older commit) run on fresh devices of
#              the same sizes; the table then shows both and the ratio OTHER / MINFS
#   --sizes    device sizes: 1G (1 GiB), 20T (20 TB = 20e12 bytes), 1P (1 PiB)
# Every command runs under `ulimit -v 4 GiB`, so a binary that needs more memory fails
# (shown as "failed") instead of pushing the machine into swap or the OOM killer.
# Exit: 0 when every command of --bin succeeded, 1 otherwise, 2 usage.
set -euo pipefail
cd "$(dirname "$0")/.."

bin=target/release/minfs
compare=""
sizes="1G 20T 1P"
while [[ $# -gt 0 ]]; do
    case $1 in
        --bin) bin=$2; shift 2 ;;
        --compare) compare=$2; shift 2 ;;
        --sizes) sizes=$2; shift 2 ;;
        -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
        *) echo "large-disk.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
if [[ $(id -u) -ne 0 ]]; then
    echo "large-disk.sh: needs root (loop devices, a tmpfs mount)" >&2
    exit 2
fi
if [[ ! -x /usr/bin/time ]]; then
    apt-get install -y -q time >/dev/null
fi
if [[ $bin == target/release/minfs && ! -x $bin ]]; then
    cargo build --release -q -p minfs --bin minfs
fi
for b in "$bin" $compare; do
    [[ -x $b ]] || { echo "large-disk.sh: $b is not an executable" >&2; exit 2; }
done

scratch=$(mktemp -d /var/tmp/minfs-large-disk.XXXXXX)
loops=()
cleanup() {
    set +e
    mountpoint -q "$scratch/mnt" && "$bin" umount "$scratch/mnt" >/dev/null 2>&1
    for l in "${loops[@]}"; do losetup -d "$l" 2>/dev/null; done
    mountpoint -q "$scratch/tmpfs" && umount "$scratch/tmpfs"
    rm -rf "$scratch"
}
trap cleanup EXIT INT TERM
mkdir -p "$scratch/tmpfs" "$scratch/mnt"
mount -t tmpfs -o size=1G,mode=0700 minfs-large-disk "$scratch/tmpfs"

bytes_of() {
    case $1 in
        1G) echo $((1 << 30)) ;;
        20T) echo $((20000000000000 / 4096 * 4096)) ;;
        1P) echo $((1 << 50)) ;;
        *) echo "large-disk.sh: unknown size $1 (1G, 20T or 1P)" >&2; exit 2 ;;
    esac
}

# measure LABEL CMD...: runs CMD under /usr/bin/time, appends "LABEL rss_kib wall_s status".
measure() {
    local label=$1; shift
    local st=0
    (ulimit -v $((4 << 20)); /usr/bin/time -f "%M %e" -o "$scratch/time" "$@") \
        >"$scratch/out" 2>"$scratch/err" </dev/null || st=$?
    read -r rss wall < <(tail -n 1 "$scratch/time")
    echo "$label $rss $wall $st" >>"$scratch/results"
    if [[ $st -ne 0 ]]; then
        echo "  $label failed ($st): $(grep -v '^Command' "$scratch/err" | head -n 2 | tr '\n' ' ')" >&2
    fi
}

# run_all WHICH BIN SIZE: the CLI on a fresh loop device of SIZE.
run_all() {
    local which=$1 m=$2 size=$3
    local img="$scratch/tmpfs/$size.img"
    rm -f "$img"
    truncate -s "$(bytes_of "$size")" "$img"
    local dev
    dev=$(losetup --find --show --direct-io=on "$img")
    loops+=("$dev")
    local p="$which $size"
    measure "$p mkfs" "$m" mkfs "$dev"
    measure "$p info" "$m" info "$dev"
    measure "$p create" "$m" create "$dev" data --size 1G
    measure "$p create-small" "$m" create "$dev" small --size 4M
    (ulimit -v $((4 << 20)); head -c 4194304 /dev/urandom >"$scratch/small.bin")
    measure "$p write" sh -c "exec \"\$0\" write \"\$1\" small <\"\$2\"" "$m" "$dev" "$scratch/small.bin"
    measure "$p cat" sh -c "exec \"\$0\" cat \"\$1\" small >/dev/null" "$m" "$dev"
    measure "$p ls" "$m" ls -l "$dev"
    measure "$p grow" "$m" grow "$dev" data --size 2G
    measure "$p fsck-n" "$m" fsck -n "$dev"
    # The FUSE server: mounted in the foreground (so time waits for it), statfs, unmounted.
    (ulimit -v $((4 << 20)); /usr/bin/time -f "%M %e" -o "$scratch/mount-time" \
        "$m" mount --foreground "$dev" "$scratch/mnt" >/dev/null 2>"$scratch/mount-err") &
    local server=$! mounted=0
    for _ in $(seq 100); do
        if mountpoint -q "$scratch/mnt"; then mounted=1; break; fi
        sleep 0.05
    done
    local st=1
    if [[ $mounted -eq 1 ]]; then
        df -B1 "$scratch/mnt" >/dev/null && ls -l "$scratch/mnt" >/dev/null && st=0
        "$m" umount "$scratch/mnt" >/dev/null 2>&1 || umount "$scratch/mnt"
    fi
    wait "$server" || st=$?
    read -r rss wall < <(tail -n 1 "$scratch/mount-time")
    echo "$p mount+df+umount $rss $wall $st" >>"$scratch/results"
    measure "$p rm" "$m" rm "$dev" data
    losetup -d "$dev"
    loops=("${loops[@]/$dev}")
    rm -f "$img"
}

: >"$scratch/results"
for size in $sizes; do
    echo "== $size" >&2
    run_all new "$bin" "$size"
    [[ -n $compare ]] && run_all old "$compare" "$size"
done

# The table: one row per size and command.
awk -v cmp="${compare:+1}" '
    { key = $2 " " $3; if (!(key in seen)) { order[n++] = key; seen[key] = 1 }
      rss[$1, key] = $4; wall[$1, key] = $5; st[$1, key] = $6 }
    function cell(w, k) {
        if (!((w, k) in rss)) return sprintf("%10s %9s", "-", "-")
        if (st[w, k] != 0) return sprintf("%10s %9s", "failed", "-")
        return sprintf("%10.1f %9.0f", rss[w, k] / 1024, wall[w, k] * 1000)
    }
    END {
        if (cmp) printf "%-5s %-17s %10s %9s | %10s %9s | %9s %9s\n", "size", "command",
            "RSS MiB", "wall ms", "other MiB", "wall ms", "RSS ×", "wall ×"
        else printf "%-5s %-17s %10s %9s\n", "size", "command", "RSS MiB", "wall ms"
        for (i = 0; i < n; i++) {
            k = order[i]; split(k, a, " ")
            line = sprintf("%-5s %-17s %s", a[1], a[2], cell("new", k))
            if (cmp) {
                r = "-"; w = "-"
                if (st["new", k] == 0 && st["old", k] == 0 && (("old", k) in rss)) {
                    r = sprintf("%.1f", rss["old", k] / rss["new", k])
                    if (wall["new", k] > 0) w = sprintf("%.1f", wall["old", k] / wall["new", k])
                }
                line = line sprintf(" | %s | %9s %9s", cell("old", k), r, w)
            }
            print line
        }
    }' "$scratch/results"
echo "(RSS: peak resident set, ru_maxrss; wall: elapsed; GNU time 1.9 rounds it to 10 ms)"
! awk '$1 == "new" && $6 != 0 { bad = 1 } END { exit !bad }' "$scratch/results"
