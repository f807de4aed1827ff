# ABAB of bench/run.sh's tree jobs, Tessera only: base (c311a65) and new (6516736) binaries
cd /work/wt-tree28d
echo "start $(date -u +%T) load $(cat /proc/loadavg)"
for v in base new base new; do
  now=$(date -u +%H%M); [ "$now" -ge 1907 ] && { echo "stopped at $now (deadline)"; break; }
  echo "== $v $(date -u +%T)"
  TESSERA_BIN=/var/tmp/tree28d/tessera-$v bash bench/run.sh --runs 1 --targets tessera --workloads tree 2>&1 | grep -E 'tessera (untar|statall|tardiff|rmtree) run|Results:'
done
echo "end $(date -u +%T) load $(cat /proc/loadavg)"
