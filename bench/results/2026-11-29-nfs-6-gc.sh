#!/bin/bash
cd $REPO
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
for i in 1 2; do
  for b in new3 gc100; do
    echo "== $i $b $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
    TESSERA_BIN=/tmp/n24f/$b bash bench/nfs.sh --rounds 1 --targets tessera-nfs --jobs meta,untar --files 10000 --tree /usr/local/go/src 2>&1 | grep -E "results:|FAIL"
  done
done
echo "== end $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
