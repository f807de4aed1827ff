#!/bin/bash
# profseq.sh BIN TAG: CPU profile over a seqwrite (SIZE, 4 WRITEs in flight, then COMMIT)
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BIN=$1 TAG=$2
W=$(mktemp -d /var/tmp/n24f-profseq.XXXXXX)
mkdir -p $W/mnt
$BIN up --data $W/data --mount $W/mnt --nfs 127.0.0.1:0 --pprof 127.0.0.1:26160 > $W/up.log 2>&1 &
UP=$!
for i in $(seq 1 120); do grep -q 'tessera up: ready' $W/up.log && break; sleep 0.5; done
P=$(sed -n 's/.*tessera up: ready.* nfs=127\.0\.0\.1:\([0-9]*\).*/\1/p' $W/up.log | head -1)
chmod 1777 $W/mnt
c0=$(awk '{print $14+$15}' /proc/$UP/stat)
curl -s -o /tmp/n24f/$TAG.prof "http://127.0.0.1:26160/debug/pprof/profile?seconds=${SECS:-4}" &
CURL=$!
$REPO/bench/out/bin/nfsbench -nfs 127.0.0.1:$P -job seqwrite -file s.dat -size ${SIZE:-256M} -window 4 -seed $RANDOM > $W/nb.out 2>&1
c1=$(awk '{print $14+$15}' /proc/$UP/stat)
echo "up cpu ticks during seqwrite: $((c1-c0))"
wait $CURL
cat $W/nb.out | grep job=
kill $UP; wait $UP
fusermount3 -u $W/mnt 2>/dev/null
rm -rf $W
