#!/usr/bin/env bash
# (kept as run: paths under /var/tmp/t28f; run under flock /work/bench.lock)
# count.sh BIN: tessera up, untar Go src, then find -ls cold, find -ls warm (no drop), tar -d cold;
# FUSE requests by op per job.
set -u
BIN=$1; LABEL=${2:-x}
B=/var/tmp/t28f; D=$B/c-$LABEL; OUT=$B/out-$LABEL
rm -rf $D $OUT; mkdir -p $D/data $D/mnt $OUT
[ -f $B/src.tar ] || tar -cf $B/src.tar -C /usr/local/go src
MP=127.0.0.1:19$((RANDOM%900+100))
$BIN up --data $D/data --mount $D/mnt --metrics $MP ${UPOPTS:-} > $OUT/up.log 2>&1 &
PID=$!
for i in $(seq 200); do grep -q " $D/mnt " /proc/mounts && break; sleep 0.3; done
for i in $(seq 50); do curl -sf http://$MP/metrics >/dev/null && break; sleep 0.2; done
M=$D/mnt
cpu() { awk '{print $14+$15}' /proc/$PID/stat; }
snap() { curl -s http://$MP/metrics | grep -E '^tessera_(fuse|client_meta)[a-z_]*requests_total' > "$1"; }
job() { local n=$1 drop=$2; shift 2
  [ $drop = 1 ] && { sync; echo 3 > /proc/sys/vm/drop_caches; }
  snap $OUT/$n.m0; c0=$(cpu); t0=$(date +%s.%N)
  "$@" >/dev/null 2>$OUT/$n.err; rc=$?
  t1=$(date +%s.%N); c1=$(cpu); snap $OUT/$n.m1
  echo "== $n rc=$rc wall=$(echo "$t1 - $t0" | bc) cpu_ticks=$((c1-c0))"
  awk 'FNR==NR {a[$1]=$2; next} {d=$2-a[$1]; if (d>0) printf "  %s %d\n", $1, d}' $OUT/$n.m0 $OUT/$n.m1
}
echo "load $(cat /proc/loadavg)"
job untar 1 tar -xf $B/src.tar -C $M
job find1 1 find $M/src -ls
job find2 0 find $M/src -ls
job tard 1 tar -df $B/src.tar -C $M
job tard2 0 tar -df $B/src.tar -C $M
echo "load $(cat /proc/loadavg)"
kill -TERM $PID; wait $PID
grep -q " $D/mnt " /proc/mounts && fusermount3 -u $D/mnt
rm -rf $D
