#!/usr/bin/env bash
# The script behind the WAL profile of bench/results/2026-11-29-tree-2.md (kept as run; BIN: main at d760d90 or this branch).
# walprof.sh BIN LABEL [POLICY]: tessera up (defaults), 2 x 1000 SQLite WAL transactions, daemon CPU and a CPU profile of the run.
set -u
BIN=$1 LABEL=$2 POL=${3:-session}
D=/var/tmp/sq28wp-$LABEL; OUT=/tmp/sq28/wp-$LABEL
rm -rf $D $OUT; mkdir -p $D/data $D/mnt $OUT
PP=127.0.0.1:17$((RANDOM%900+100))
$BIN up --data $D/data --mount $D/mnt --pprof $PP --policy $POL > $OUT/up.log 2>&1 &
PID=$!
for i in $(seq 200); do grep -q " $D/mnt " /proc/mounts && break; sleep 0.3; done
c0=$(awk '{print $14+$15}' /proc/$PID/stat)
curl -s -o $OUT/cpu.pprof "http://$PP/debug/pprof/profile?seconds=${PSECS:-15}" &
CP=$!
python3 /work/wt-sqlite28/bench/sqlitetx.py --db $D/mnt/t.db --mode wal --procs 2 --tx ${TX:-1000} | tee $OUT/sqlite.txt
c1=$(awk '{print $14+$15}' /proc/$PID/stat)
echo "label=$LABEL policy=$POL cpu_s=$(echo "scale=2; ($c1-$c0)/100" | bc) load=$(cut -d' ' -f1-3 /proc/loadavg)" | tee -a $OUT/sqlite.txt
wait $CP
kill -TERM $PID; wait $PID
grep -q " $D/mnt " /proc/mounts && fusermount3 -u $D/mnt
rm -rf $D
