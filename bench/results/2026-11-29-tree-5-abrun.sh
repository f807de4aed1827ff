# ABAB of bench/run.sh's tree jobs, Tessera only: base (main 7836a28) and new (this branch, 99376b8)
# binaries; run as: flock /work/bench.lock bash bench/results/2026-11-29-tree-5-abrun.sh
cd /work/wt-tree28f
echo "start $(date -u +%T) load $(cat /proc/loadavg)"
for v in base new2 base new2; do
  echo "== $v $(date -u +%T)"
  TESSERA_BIN=/var/tmp/t28f/tessera-$v bash bench/run.sh --runs 1 --targets tessera --workloads tree --workdir /var/tmp/t28f/w 2>&1 | grep -E 'tessera (untar|statall|tardiff|rmtree) run|Results:'
done
echo "end $(date -u +%T) load $(cat /proc/loadavg)"
