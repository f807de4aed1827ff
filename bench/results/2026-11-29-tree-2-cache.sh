#!/usr/bin/env bash
# The script behind the cache table of bench/results/2026-11-29-tree-2.md (kept as run; binaries of this branch built with up.MetaCacheBytes = 8, 32, 64 MiB).
# tessera up with meta block caches of 8/32/64 MiB through untar, tar -d, rm -rf of Go's src;
# daemon CPU (utime+stime ticks) per job and the daemon's VmHWM at the end. Two interleaved rounds.
set -u
T=/tmp/sq28/pc/src.tar
[ -f $T ] || tar -cf $T -C /usr/local/go src
for round in 1 2; do for v in 8 32 64; do
  D=/var/tmp/sq28pc-$v; rm -rf $D; mkdir -p $D/data $D/mnt
  /tmp/sq28/tessera-$v up --data $D/data --mount $D/mnt > /tmp/sq28/pc/up-$v-$round.log 2>&1 &
  PID=$!
  for i in $(seq 200); do grep -q " $D/mnt " /proc/mounts && break; sleep 0.3; done
  cpu() { awk '{print $14+$15}' /proc/$PID/stat; }
  job() { local n=$1; shift; sync; echo 3 > /proc/sys/vm/drop_caches; local c0=$(cpu) t0=$(date +%s.%N)
    "$@" >/dev/null 2>/tmp/sq28/pc/$n-$v.err; local rc=$?; local t1=$(date +%s.%N) c1=$(cpu)
    echo "round=$round cache=$v job=$n rc=$rc wall=$(echo "$t1 - $t0" | bc) cpu_s=$(echo "scale=2; ($c1 - $c0)/100" | bc)"; }
  job untar tar -xf $T -C $D/mnt
  job tardiff tar -df $T -C $D/mnt
  job rmtree rm -rf $D/mnt/src
  echo "round=$round cache=$v hwm_kb=$(awk '/VmHWM/{print $2}' /proc/$PID/status) load=$(cut -d' ' -f1-3 /proc/loadavg)"
  kill -TERM $PID; wait $PID
  grep -q " $D/mnt " /proc/mounts && fusermount3 -u $D/mnt
  rm -rf $D
done; done
