#!/bin/bash
# cannyls_bencher workload1 (full count) alternated: a new file on `minfs mount` (BIN) vs a new file on ext4.
set -euo pipefail
BIN=$1; B=/work/ext/cannyls_bencher/target/release/cannyls_bencher; W=/work/ext/cannyls_bencher/sample_workloads/workload1
cd /var/tmp/bb; rm -rf m e; mkdir m e
truncate -s 7G minfs.img ext4.img
"$BIN" mkfs -f minfs.img >/dev/null
mkfs.ext4 -qF ext4.img; lo=$(losetup --find --show --direct-io=on ext4.img); mount $lo e
"$BIN" mount minfs.img m >/dev/null
trap '"$BIN" umount m >/dev/null 2>&1; umount e; losetup -d $lo' EXIT
one() { local d=$1; "$B" --workload "$W" --lusfname $d/w1.lusf 2>&1 | grep -E "Put|Get|elapsed|total" | tr '\n' ' ' | sed "s|^|$d: |"; echo; rm -f $d/w1.lusf; sync; echo 3 > /proc/sys/vm/drop_caches; sleep 1; }
for r in 1 2 3; do one m; one e; one e; one m; done
