#!/usr/bin/env bash
# The script behind the setattr table of bench/results/2026-11-29-tree-2.md (kept as run; src.tar: Go 1.26 src).
# attrcount.sh BIN LABEL: tessera up (session), untar Go's src, meta requests by op and daemon CPU.
set -u
BIN=$1 LABEL=$2
D=/var/tmp/sq28ac-$LABEL; OUT=/tmp/sq28/ac-$LABEL
rm -rf $D $OUT; mkdir -p $D/data $D/mnt $OUT
MP=127.0.0.1:18$((RANDOM%900+100))
$BIN up --data $D/data --mount $D/mnt --metrics $MP > $OUT/up.log 2>&1 &
PID=$!
for i in $(seq 200); do grep -q " $D/mnt " /proc/mounts && break; sleep 0.3; done
snap() { curl -s http://$MP/metrics | grep -E '^tessera_client_meta_requests_total' > "$1"; }
snap $OUT/m0; c0=$(awk '{print $14+$15}' /proc/$PID/stat)
tar -xf /tmp/sq28/pc/src.tar -C $D/mnt
c1=$(awk '{print $14+$15}' /proc/$PID/stat); snap $OUT/m1
tar -df /tmp/sq28/pc/src.tar -C $D/mnt > $OUT/tardiff.txt 2>&1; echo "tar -d rc=$?" >> $OUT/tardiff.txt
echo "label=$LABEL untar_cpu_s=$(echo "scale=2; ($c1-$c0)/100" | bc) load=$(cut -d' ' -f1-3 /proc/loadavg)"
join <(sort $OUT/m0) <(sort $OUT/m1) | awk '{d=$3-$2; if (d>0) print $1, d}' | grep -E 'setattr|getattr|commit|create|lookup' 
tail -1 $OUT/tardiff.txt
kill -TERM $PID; wait $PID
grep -q " $D/mnt " /proc/mounts && fusermount3 -u $D/mnt
rm -rf $D
