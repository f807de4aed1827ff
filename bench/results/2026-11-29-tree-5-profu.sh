#!/usr/bin/env bash
# (kept as run: paths under /var/tmp/t28f; run under flock /work/bench.lock)
# profu.sh BIN LABEL: a 15 s CPU profile of untar of Go's src (cold)
set -u
BIN=$1; LABEL=${2:-x}
B=/var/tmp/t28f; D=$B/p-$LABEL; OUT=$B/pout-$LABEL
rm -rf $D; mkdir -p $D/data $D/mnt $OUT
PP=127.0.0.1:16$((RANDOM%900+100))
$BIN up --data $D/data --mount $D/mnt --pprof $PP ${UPOPTS:-} > $OUT/up.log 2>&1 &
PID=$!
for i in $(seq 200); do grep -q " $D/mnt " /proc/mounts && break; sleep 0.3; done
M=$D/mnt
echo "load $(cat /proc/loadavg)"
curl -s -o $OUT/untar.pprof "http://$PP/debug/pprof/profile?seconds=15" & cp=$!
tar -xf $B/src.tar -C $M
wait $cp; curl -s -o $OUT/untar.allocs "http://$PP/debug/pprof/allocs"
echo "load $(cat /proc/loadavg)"
kill -TERM $PID; wait $PID
grep -q " $D/mnt " /proc/mounts && fusermount3 -u $D/mnt
rm -rf $D
