#!/usr/bin/env bash
# The scripts behind bench/results/2026-11-29-tree-4.md (kept as run; paths under /var/tmp/tree28d).
# prof.sh BIN LABEL: profile tessera up through untar/statall/tardiff/rmtree/gitstatus of Go's src
set -u
BIN=$1 LABEL=$2
B=/var/tmp/tree28d
D=$B/prof-$LABEL-fs; OUT=$B/prof-$LABEL
rm -rf "$D" "$OUT"; mkdir -p "$D/data" "$D/mnt" "$OUT"
[ -f $B/src.tar ] || tar -cf $B/src.tar -C /usr/local/go src
[ -d $B/repo.git ] || git clone -q --bare --no-local /work/wt-tree28d $B/repo.git
PP=127.0.0.1:16$((RANDOM%900+100)) MP=127.0.0.1:19$((RANDOM%900+100))
"$BIN" up --data "$D/data" --mount "$D/mnt" --pprof $PP --metrics $MP ${UPOPTS:-} > "$OUT/up.log" 2>&1 &
PID=$!
echo $PID > "$OUT/pid"
for i in $(seq 100); do grep -q " $D/mnt " /proc/mounts && break; sleep 0.3; done
M=$D/mnt
cpu() { awk '{print $14+$15}' /proc/$PID/stat; }
snap() { curl -s http://$MP/metrics | grep -E '^tessera_(fuse|client|meta)[a-z_]*requests_total' > "$1"; }
job() { # job NAME CMD...
  local n=$1; shift
  sync; echo 3 > /proc/sys/vm/drop_caches
  snap "$OUT/$n.m0"; c0=$(cpu); t0=$(date +%s.%N)
  if [ "${PSECS:-0}" != 0 ]; then curl -s -o "$OUT/$n.pprof" "http://$PP/debug/pprof/profile?seconds=${PSECS}" & fi; local cp=$!
  "$@" > /dev/null 2>"$OUT/$n.err"; local rc=$?
  t1=$(date +%s.%N); c1=$(cpu); snap "$OUT/$n.m1"
  wait $cp 2>/dev/null
  echo "$n rc=$rc wall=$(echo "$t1 - $t0" | bc) cpu_ticks=$((c1-c0))" | tee -a "$OUT/summary.txt"
}
job untar tar -xf $B/src.tar -C $M
job statall find $M/src -ls
job tardiff tar -df $B/src.tar -C $M
job rmtree rm -rf $M/src
job clone git -c safe.directory='*' clone -q --no-local $B/repo.git $M/repo
job gitstatus git -c safe.directory='*' -C $M/repo status
kill -TERM $PID; wait $PID
fusermount3 -u $M 2>/dev/null
rm -rf "$D"
