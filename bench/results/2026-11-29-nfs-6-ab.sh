#!/bin/bash
# ab.sh ROUNDS NEWBIN BASEBIN JOBS: interleaved rounds, NEW with Ganesha, then BASE; one lock hold (caller)
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
R=$1 NEW=$2 BASE=$3 JOBS=$4; shift 4
cd $REPO
for ((i = 1; i <= R; i++)); do
  echo "== round $i new $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
  TESSERA_BIN=$NEW bash bench/nfs.sh --rounds 1 --targets tessera-nfs,ganesha --jobs $JOBS --files 10000 --tree /usr/local/go/src "$@" 2>&1 | grep -E "results:|FAIL" 
  echo "== round $i base $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
  TESSERA_BIN=$BASE bash bench/nfs.sh --rounds 1 --targets tessera-nfs --jobs $JOBS --files 10000 --tree /usr/local/go/src "$@" 2>&1 | grep -E "results:|FAIL"
done
echo "== end $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
