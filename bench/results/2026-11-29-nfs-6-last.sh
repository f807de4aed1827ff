#!/bin/bash
# last.sh: (1) this branch (new4) against Ganesha and FUSE, meta+untar, 3 rounds; (2) untar A/B base vs new4, tessera-nfs only, alternating
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd $REPO
echo "== final start $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
TESSERA_BIN=/tmp/n24f/new4 bash bench/nfs.sh --rounds 3 --jobs meta,untar --files 10000 --tree /usr/local/go/src --out /tmp/n24f/final.md 2>&1 | grep -E "results:|FAIL|saved"
echo "== final end $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
i=0
for b in new4 base base new4; do
  i=$((i+1))
  echo "== ab $i $b $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
  TESSERA_BIN=/tmp/n24f/$b bash bench/nfs.sh --rounds 1 --targets tessera-nfs --jobs untar --tree /usr/local/go/src 2>&1 | grep -E "results:|FAIL"
done
echo "== end $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
