#!/usr/bin/env bash
# Peak resident memory (ru_maxrss, from GNU time) and wall time of every `minfs` command on
# loop devices of 1 GiB, 20 TB and 1 PiB over sparse files (the target: a 20 TB disk in a few
# MiB). Root only: it mounts a tmpfs for the sparse images (ext4 caps a file at 16 TiB) and
# attaches loop devices; everything it makes is removed on exit or Ctrl-C.
#
# Usage: sudo scripts/large-disk.sh [--bin MINFS] [--compare OTHER_MINFS] [--sizes "1G 20T 1P"]
#                                   [--runs N]
#   --bin      the minfs binary measured (default: target/release/minfs, built if missing)
#   --compare  a second binary (e.g. one built from an older commit) run on fresh devices of
#              the same sizes; the table then shows both and the ratio OTHER / MINFS
#   --sizes    device sizes: 1G (1 GiB), 20T (20 TB = 20e12 bytes), 1P (1 PiB)
#   --runs     runs of the whole sequence per binary and size, each on a fresh device
#              (default 3); the table shows the median of each figure
# Every command runs under `ulimit -v 4 GiB`, so a binary that needs more memory fails
# (shown as "failed") instead of pushing the machine into swap or the OOM killer.
# Exit: 0 when every command of --bin succeeded, 1 otherwise, 2 usage.
set -euo pipefail
cd "$(dirname "$0")/.."

bin=target/release/minfs
compare=""
sizes="1G 20T 1P"
runs=3
while [[ $# -gt 0 ]]; do
    case $1 in
        --bin) bin=$2; shift 2 ;;
        --compare) compare=$2; shift 2 ;;
        --sizes) sizes=$2; shift 2 ;;
        --runs) runs=$2; shift 2 ;;
        -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
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

now_ns() { date +%s%N; }

# measure LABEL CMD...: runs CMD under /usr/bin/time (for ru_maxrss) and appends
# "LABEL rss_kib wall_us status"; the wall time is taken around it with date.
measure() {
    local label=$1; shift
    local st=0 t0 t1 rss
    t0=$(now_ns)
    (ulimit -v $((4 << 20)); /usr/bin/time -f "%M" -o "$scratch/time" "$@") \
        >"$scratch/out" 2>"$scratch/err" </dev/null || st=$?
    t1=$(now_ns)
    rss=$(tail -n 1 "$scratch/time")
    echo "$label $rss $(( (t1 - t0) / 1000 )) $st" >>"$scratch/results"
    if [[ $st -ne 0 ]]; then
        echo "  $label failed ($st): $(grep -v '^Command' "$scratch/err" | sed -n 1,2p | tr '\n' ' ')" >&2
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
    measure "$p create" "$m" create "$dev" data --size 256M
    measure "$p create-small" "$m" create "$dev" small --size 4M
    (ulimit -v $((4 << 20)); head -c 4194304 /dev/urandom >"$scratch/small.bin")
    measure "$p write" sh -c "exec \"\$0\" write \"\$1\" small <\"\$2\"" "$m" "$dev" "$scratch/small.bin"
    measure "$p cat" sh -c "exec \"\$0\" cat \"\$1\" small >/dev/null" "$m" "$dev"
    measure "$p ls" "$m" ls -l "$dev"
    measure "$p grow" "$m" grow "$dev" data --size 512M
    measure "$p fsck-n" "$m" fsck -n "$dev"
    # The FUSE server, in the foreground so that time waits for it: its peak RSS over mount,
    # df (statfs), ls and umount; the wall time is until the mount appears.
    local t0 t1 st=1 mounted=0
    t0=$(now_ns)
    (ulimit -v $((4 << 20)); /usr/bin/time -f "%M" -o "$scratch/mount-time" \
        "$m" mount --foreground "$dev" "$scratch/mnt" >/dev/null 2>"$scratch/mount-err") &
    local server=$!
    for _ in $(seq 1000); do
        if mountpoint -q "$scratch/mnt"; then mounted=1; break; fi
        sleep 0.005
    done
    t1=$(now_ns)
    if [[ $mounted -eq 1 ]]; then
        df -B1 "$scratch/mnt" >/dev/null && ls -l "$scratch/mnt" >/dev/null && st=0
        "$m" umount "$scratch/mnt" >/dev/null 2>&1 || umount "$scratch/mnt"
    fi
    wait "$server" || st=$?
    echo "$p mount $(tail -n 1 "$scratch/mount-time") $(( (t1 - t0) / 1000 )) $st" \
        >>"$scratch/results"
    measure "$p rm" "$m" rm "$dev" data
    losetup -d "$dev"
    loops=("${loops[@]/$dev}")
    rm -f "$img"
}

: >"$scratch/results"
for size in $sizes; do
    for run in $(seq "$runs"); do
        echo "== $size, run $run of $runs" >&2
        run_all new "$bin" "$size"
        [[ -n $compare ]] && run_all old "$compare" "$size"
    done
done

# The table: one row per size and command, the median of the runs (a failed run fails it).
awk -v cmp="${compare:+1}" '
    { key = $2 " " $3; if (!(key in seen)) { order[n++] = key; seen[key] = 1 }
      c = ++cnt[$1, key]; rss[$1, key, c] = $4; wall[$1, key, c] = $5
      if ($6 != 0) bad[$1, key] = 1 }
    function median(arr, w, k,    m, i, j, v, t) {
        m = cnt[w, k]
        for (i = 1; i <= m; i++) v[i] = arr[w, k, i] + 0
        for (i = 2; i <= m; i++) for (j = i; j > 1 && v[j - 1] > v[j]; j--) {
            t = v[j]; v[j] = v[j - 1]; v[j - 1] = t
        }
        return m % 2 ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2
    }
    function ok(w, k) { return ((w, k) in cnt) && !((w, k) in bad) }
    function cell(w, k) {
        if (!((w, k) in cnt)) return sprintf("%10s %9s", "-", "-")
        if ((w, k) in bad) return sprintf("%10s %9s", "failed", "-")
        return sprintf("%10.1f %9.1f", median(rss, w, k) / 1024, median(wall, w, k) / 1000)
    }
    END {
        if (cmp) printf "%-5s %-13s %10s %9s | %10s %9s | %7s %7s\n", "size", "command",
            "RSS MiB", "wall ms", "other MiB", "wall ms", "RSS ×", "wall ×"
        else printf "%-5s %-13s %10s %9s\n", "size", "command", "RSS MiB", "wall ms"
        for (i = 0; i < n; i++) {
            k = order[i]; split(k, a, " ")
            line = sprintf("%-5s %-13s %s", a[1], a[2], cell("new", k))
            if (cmp) {
                r = "-"; w = "-"
                if (ok("new", k) && ok("old", k)) {
                    r = sprintf("%.0f", median(rss, "old", k) / median(rss, "new", k))
                    w = sprintf("%.1f", median(wall, "old", k) / median(wall, "new", k))
                }
                line = line sprintf(" | %s | %7s %7s", cell("old", k), r, w)
            }
            print line
        }
    }' "$scratch/results"
echo "(RSS: peak resident set, ru_maxrss from GNU time; wall: elapsed, process start to exit;"
echo " mount: the server's peak over mount, df, ls -l, umount, and its wall time until mounted;"
echo " ×: other / measured)"
! awk '$1 == "new" && $6 != 0 { bad = 1 } END { exit !bad }' "$scratch/results"
