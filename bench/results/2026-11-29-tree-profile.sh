#!/usr/bin/env bash
# The script behind bench/results/2026-11-29-tree-profile.md (kept as run; paths under /tmp/b28).
# prof.sh BIN LABEL: profile tessera up through untar/statall/tardiff/rmtree/gitclone/gitstatus of Go's src
set -u
BIN=$1 LABEL=$2
D=/var/tmp/b28prof-$LABEL; OUT=/tmp/b28/prof-$LABEL
rm -rf "$D" "$OUT"; mkdir -p "$D/data" "$D/mnt" "$OUT"
[ -f /tmp/b28/src.tar ] || tar -cf /tmp/b28/src.tar -C /usr/local/go src
[ -d /tmp/b28/repo.git ] || git clone -q --bare --no-local /work/wt-bench28 /tmp/b28/repo.git
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
  curl -s -o "$OUT/$n.pprof" "http://$PP/debug/pprof/profile?seconds=${PSECS:-8}" &
  local cp=$!
  "$@" > /dev/null 2>"$OUT/$n.err"; local rc=$?
  t1=$(date +%s.%N); c1=$(cpu); snap "$OUT/$n.m1"
  wait $cp
  echo "$n rc=$rc wall=$(echo "$t1 - $t0" | bc) cpu_ticks=$((c1-c0))" | tee -a "$OUT/summary.txt"
}
job untar tar -xf /tmp/b28/src.tar -C $M
job statall find $M/src -ls
job tardiff tar -df /tmp/b28/src.tar -C $M
job rmtree rm -rf $M/src
job clone git -c safe.directory='*' clone -q --no-local /tmp/b28/repo.git $M/repo
job gitstatus git -c safe.directory='*' -C $M/repo status
kill -TERM $PID; wait $PID
