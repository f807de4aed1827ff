# ab.sh: bench/results/2026-11-29-tree-4.md, ABBA rounds of 2026-11-29-tree-4-prof.sh (base = c311a65, new = 6516736)
set -u
cd /var/tmp/tree28d
cat /proc/loadavg
for r in 1 2; do
  for v in base new; do
    [ $r = 2 ] && [ $v = base ] && continue
    PSECS=5 ./prof.sh /var/tmp/tree28d/tessera-$v $v-$r > /dev/null 2>&1
    echo "== $v-$r"; cat prof-$v-$r/summary.txt
  done
  [ $r = 2 ] && { PSECS=5 ./prof.sh /var/tmp/tree28d/tessera-base base-2 > /dev/null 2>&1; echo "== base-2"; cat prof-base-2/summary.txt; }
done
cat /proc/loadavg
