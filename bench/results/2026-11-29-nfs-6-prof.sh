#!/bin/bash
# prof.sh BIN TAG: tessera up --nfs --pprof; untar of Go's src through nfsbench with a CPU profile over it
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BIN=$1 TAG=$2
W=$(mktemp -d /var/tmp/n24f-prof.XXXXXX)
mkdir -p $W/mnt
$BIN up --data $W/data --mount $W/mnt --nfs 127.0.0.1:0 --pprof 127.0.0.1:26160 > $W/up.log 2>&1 &
UP=$!
for i in $(seq 1 120); do grep -q 'tessera up: ready' $W/up.log && break; sleep 0.5; done
P=$(sed -n 's/.*tessera up: ready.* nfs=127\.0\.0\.1:\([0-9]*\).*/\1/p' $W/up.log | head -1)
Q=26160
echo "nfs port $P pprof port $Q"
chmod 1777 $W/mnt
[ -f /tmp/n24f/tree.tar ] || (cd /usr/local/go && tar -cf /tmp/n24f/tree.tar src)
sync; echo 3 > /proc/sys/vm/drop_caches
c0=$(awk '{print $14+$15}' /proc/$UP/stat)
curl -s -o /tmp/n24f/$TAG.prof "http://127.0.0.1:$Q/debug/pprof/profile?seconds=${SECS:-20}" &
CURL=$!
$REPO/bench/out/bin/nfsbench -nfs 127.0.0.1:$P -job untar -tar /tmp/n24f/tree.tar -path u1 2>&1 | tail -2
c1=$(awk '{print $14+$15}' /proc/$UP/stat)
echo "up cpu ticks during untar: $((c1-c0))"
wait $CURL; [ -n "$ALLOCS" ] && curl -s -o /tmp/n24f/$TAG.allocs "http://127.0.0.1:$Q/debug/pprof/allocs"
kill $UP; wait $UP
fusermount3 -u $W/mnt 2>/dev/null
rm -rf $W
