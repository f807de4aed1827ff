#!/usr/bin/env bash
# The script behind the calls-per-commit table of bench/results/2026-11-29-tree-3.md (kept as run).
# calls.sh BIN LABEL [POLICY] [MODE]: tessera up, 2 x TX SQLite transactions, meta requests by op per
# transaction, daemon CPU.
set -u
BIN=$1 LABEL=$2 POL=${3:-session} MODE=${4:-wal} TX=${TX:-500}
D=/var/tmp/sq28c-$LABEL; OUT=/tmp/sq28/c-$LABEL
rm -rf $D $OUT; mkdir -p $D/data $D/mnt $OUT
MP=127.0.0.1:18$((RANDOM%900+100))
$BIN up --data $D/data --mount $D/mnt --metrics $MP --policy $POL > $OUT/up.log 2>&1 &
PID=$!
for i in $(seq 200); do grep -q " $D/mnt " /proc/mounts && break; sleep 0.3; done
snap() { curl -s http://$MP/metrics | grep -E '^tessera_client_meta_requests_total' > "$1"; }
for i in $(seq 50); do curl -sf http://$MP/metrics >/dev/null && break; sleep 0.2; done
snap $OUT/m0; c0=$(awk '{print $14+$15}' /proc/$PID/stat)
python3 "$(dirname "$0")/../sqlitetx.py" --db $D/mnt/t.db --mode $MODE --procs 2 --tx $TX | tee $OUT/sqlite.txt
c1=$(awk '{print $14+$15}' /proc/$PID/stat); snap $OUT/m1
echo "label=$LABEL policy=$POL mode=$MODE cpu_s=$(echo "scale=2; ($c1-$c0)/100" | bc) load=$(cut -d' ' -f1-3 /proc/loadavg)"
awk -v n=$((2*TX)) 'FNR==NR {a[$1]=$2; next} {d=$2-a[$1]; if (d>0) printf "%s %d %.2f/tx\n", $1, d, d/n}' $OUT/m0 $OUT/m1
kill -TERM $PID; wait $PID
grep -q " $D/mnt " /proc/mounts && fusermount3 -u $D/mnt
rm -rf $D
