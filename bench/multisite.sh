#!/usr/bin/env bash
# bench/multisite.sh - rNFS Figures 7 and 8 on this machine (issue 13): three emulated sites
# (test/cluster's Sites: per site an etcd member, a meta, two block servers, mounts; WAN links of
# the Figure 6 RTTs, A-B 60 ms, A-C 60 ms, B-C 120 ms), overwrite+fsync of 1-64 MiB and a
# synchronized read of it at another site, per replication layout; then creates/s per site.
# The Go driver is bench/cmd/multisite (its doc lists the layouts). See bench/README.md.
#
#   bench/multisite.sh [--sizes 1,4,16,64] [--runs 3] [--creates 400] [--quick]
#   bench/multisite.sh --summary bench/out/multisite-TS/io.tsv
set -uo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$REPO/bench/lib.sh"

SIZES=1,4,16,64 RUNS=3 CREATES=400
usage() { sed -n '2,9p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }
# summary IO.TSV: median (min..max) seconds per kind, layout and size, and the issue's three ratios.
summary() {
  local med='function med(s,  a,n,i,j,t) { n=split(s,a," "); if (!n) return "nan"
      for(i=1;i<=n;i++) for(j=i+1;j<=n;j++) if (a[j]+0<a[i]+0) { t=a[i]; a[i]=a[j]; a[j]=t }
      lo=a[1]; hi=a[n]; return (n%2) ? a[(n+1)/2] : (a[n/2]+a[n/2+1])/2 }'
  local rows='!/^#/ && NF>=5 && $1!="creates" && $1!="error" { k=$1" "$2" "$3; v[k]=v[k]" "$5; sz[$3]=1; key[k]=1 }'
  printf "%-10s %-11s %5s  %s\n" kind layout MiB "median s (min..max)"
  awk -F'\t' "$med $rows"' END { for (k in key) { split(k, p, " "); m=med(v[k])
      printf "%-10s %-11s %5s  %.3f (%.3f..%.3f)\n", p[1], p[2], p[3], m, lo, hi } }' "$1" | sort -k1,1 -k2,2 -k3,3n
  echo
  printf "%5s  %-28s %-38s %s\n" MiB "3-replica write / 2-rep-60" "sync read at B / (local read + 60ms)" "plain read: single-site / 3-rep@C"
  awk -F'\t' "$med $rows"' END { for (s in sz) { w3=med(v["write three "s]); w2=med(v["write two-60 "s])
      sr=med(v["syncread three "s]); lr=med(v["localread three "s]); pl=med(v["plainread local@A "s]); pc=med(v["plainread three@C "s])
      printf "%5s  %-28s %-38s %s\n", s, (w2>0 ? sprintf("%.2f (target <= 1.2)", w3/w2) : "nan"),
        (lr!="nan" ? sprintf("%.2f (target <= 1.2)", sr/(lr+0.060)) : "nan"), (pc>0 ? sprintf("%.2f (target >= 0.9)", pl/pc) : "nan") } }' "$1" | sort -n
  echo
  awk -F'\t' '$1=="creates" { printf "creates/s at %s: %s (%s s)\n", $2, $6, $5 } $1=="error" { print "error: " $2 }' "$1"
}
while [ $# -gt 0 ]; do
  case $1 in
    --sizes) SIZES=$2; shift 2 ;;
    --runs) RUNS=$2; shift 2 ;;
    --creates) CREATES=$2; shift 2 ;;
    --quick) SIZES=1,4; RUNS=1; CREATES=80; shift ;;
    --summary) summary "$2"; exit ;;
    -h|--help) usage 0 ;;
    *) echo "multisite.sh: unknown argument: $1" >&2; usage 2 ;;
  esac
done
[ "$(id -u)" = 0 ] || die "run as root (FUSE mounts)"
command -v etcd >/dev/null || need_root_apt etcd etcd-server
OUT="$REPO/bench/out/multisite-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$OUT/bin"
log "building tessera and the driver into $OUT/bin"
(cd "$REPO" && go build -o "$OUT/bin/tessera" ./cmd/tessera && go build -o "$OUT/bin/multisite" ./bench/cmd/multisite) || die "build failed"
D="$OUT/bin/multisite"
{ echo "# $(date -u +%FT%TZ) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"; } > "$OUT/io.tsv"
log "figures 7 and 8: sizes $SIZES MiB, $RUNS runs; etcd members without WAN delay (see the results file)"
"$D" -bin "$OUT/bin/tessera" -sizes "$SIZES" -runs "$RUNS" -creates "$CREATES" | tee -a "$OUT/io.tsv"
log "creates with etcd across the WAN at the full Figure 6 RTTs"
"$D" -bin "$OUT/bin/tessera" -skip-io -etcd-wan -creates "$CREATES" | tee "$OUT/creates-etcdwan.tsv"
log "creates with etcd across the WAN at a tenth of the Figure 6 RTTs"
"$D" -bin "$OUT/bin/tessera" -skip-io -etcd-wan -rtt-div 10 -creates "$CREATES" | tee "$OUT/creates-etcdwan-div10.tsv"
summary "$OUT/io.tsv" | tee "$OUT/summary.txt"
log "results in $OUT"
