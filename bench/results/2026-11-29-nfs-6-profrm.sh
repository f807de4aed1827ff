#!/bin/bash
# profrm.sh BIN TAG: CPU profile of the remove phase of nfsbench's meta job (10,000 files, 4 workers)
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BIN=$1 TAG=$2
W=$(mktemp -d /var/tmp/n24f-profrm.XXXXXX)
mkdir -p $W/mnt
$BIN up --data $W/data --mount $W/mnt --nfs 127.0.0.1:0 --pprof 127.0.0.1:26160 > $W/up.log 2>&1 &
UP=$!
for i in $(seq 1 120); do grep -q 'tessera up: ready' $W/up.log && break; sleep 0.5; done
P=$(sed -n 's/.*tessera up: ready.* nfs=127\.0\.0\.1:\([0-9]*\).*/\1/p' $W/up.log | head -1)
chmod 1777 $W/mnt
$REPO/bench/out/bin/nfsbench -nfs 127.0.0.1:$P -job meta -n 10000 -threads 4 -path m1 > $W/nb.out 2>&1 &
NB=$!
for i in $(seq 1 600); do grep -q 'job=stat' $W/nb.out && break; sleep 0.05; done
curl -s -o /tmp/n24f/$TAG.prof "http://127.0.0.1:26160/debug/pprof/profile?seconds=3"
wait $NB; cat $W/nb.out | grep job=
kill $UP; wait $UP
fusermount3 -u $W/mnt 2>/dev/null
rm -rf $W
