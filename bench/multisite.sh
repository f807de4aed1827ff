#!/usr/bin/env bash
# bench/multisite.sh - rNFS Figures 7 and 8 on this machine (issue 13): three emulated sites
# (test/cluster's Sites: per site an etcd member, a meta, two block servers, mounts; WAN links of
# the Figure 6 RTTs, A-B 60 ms, A-C 60 ms, B-C 120 ms), overwrite+fsync of 1-64 MiB and a
# synchronized read of it at another site, per replication layout; then creates/s per site
# with etcd's members at each of --etcd-delays (none: no delay between them; full: the Figure 6
# RTTs; tenth: a tenth of them), group commit on and off (--batch: on, off, or N Txns in flight,
# a list), in one directory per site
# and one per worker (--create-dirs), Updates reading at the leader or the local member
# (--update-reads: etcdkv's update-reads=local). The Go driver is bench/cmd/multisite. See bench/README.md.
#
#   bench/multisite.sh [--sizes 1,4,16,64] [--runs 3] [--creates 400] [--create-workers 4]
#        [--create-dirs one|each|both] [--batch on,off,N] [--etcd-delays none,full,tenth]
#        [--update-reads leader|local|both] [--creates-only] [--quick] [--cpu] [--ops]
#   bench/multisite.sh --summary bench/out/multisite-TS/io.tsv
set -uo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$REPO/bench/lib.sh"

SIZES=1,4,16,64 RUNS=3 CREATES=400 WORKERS=4 DIRS=both BATCH=on,off DELAYS=none,full,tenth CREATES_ONLY=0 READS=leader CPU=
usage() { sed -n '2,14p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }
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
  if grep -q '^# cpu ' "$1"; then
    echo
    echo "CPU ms per operation, medians (-cpu): own = the sites' processes + the driver (WAN links, the reads' copies); other = the rest of the machine"
    printf "%-10s %-9s %5s %6s %6s %6s  %s\n" kind layout MiB wall own other "own by kind (blockd mount etcd meta driver)"
    awk "$med"' /^# cpu (write|plainread) / { k=$3" "$4" "$5; sub(/wall=/, "", $7); w[k]=w[k]" "$7; own=0
        for (i=9; i<=NF; i++) { split($i, kv, "="); n=split(kv[1], q, "."); kind=q[n]; sub(/\(wan\)/, "", kind)
          if (kind=="machine-other") { o[k]=o[k]" "kv[2]; continue }
          own+=kv[2]; part[k" "kind]+=kv[2] }
        for (kk in part) if (index(kk, k" ")==1) { split(kk, z, " "); by[k" "z[4]]=by[k" "z[4]]" "part[kk]; delete part[kk] }
        ow[k]=ow[k]" "own; key[k]=1 }
      END { for (k in key) { split(k, p, " "); s=""
          for (j=1; j<=5; j++) { kind=(j==1?"blockd":j==2?"mount":j==3?"etcd":j==4?"meta":"driver"); s=s sprintf(" %s=%s", kind, med(by[k" "kind])) }
          printf "%-10s %-9s %5s %6s %6s %6s  %s\n", p[1], p[2], p[3], med(w[k]), med(ow[k]), med(o[k]), s } }' "$1" |
      grep -E '^(write +(three|two-60)|plainread)' | sort -k1,1 -k2,2 -k3,3n
  fi
  echo
  printf "%-6s %-8s %-5s %7s %-6s %9s %8s %-21s %s\n" "etcd" batch dirs workers site creates/s seconds "etcd proposals/create" "etcd leader"
  cat "$@" | awk -F'\t' '$1=="creates" && NF>=9 { printf "%-6s %-8s %-5s %7s %-6s %9s %8s %-21s %s\n", $2, $3, $5, $6, $4, $8, $7, $9, $10 }
    $1=="error" { print "error: " $2 " " $3 " " $4 }'
}
while [ $# -gt 0 ]; do
  case $1 in
    --sizes) SIZES=$2; shift 2 ;;
    --runs) RUNS=$2; shift 2 ;;
    --creates) CREATES=$2; shift 2 ;;
    --create-workers) WORKERS=$2; shift 2 ;;
    --create-dirs) DIRS=$2; shift 2 ;;
    --batch) BATCH=$2; shift 2 ;;
    --etcd-delays) DELAYS=$2; shift 2 ;;
    --update-reads) READS=$2; shift 2 ;;
    --creates-only) CREATES_ONLY=1; shift ;;
    --cpu) CPU="$CPU -cpu"; shift ;;
    --ops) CPU="$CPU -ops"; shift ;;
    --quick) SIZES=1,4; RUNS=1; CREATES=80; shift ;;
    --summary) shift; summary "$@"; exit ;;
    -h|--help) usage 0 ;;
    *) echo "multisite.sh: unknown argument: $1" >&2; usage 2 ;;
  esac
done
[[ $WORKERS =~ ^[1-9][0-9]*$ ]] || die "--create-workers $WORKERS: want a positive number"
case $DIRS in one|each|both) ;; *) die "--create-dirs $DIRS: want one, each or both" ;; esac
[ "$BATCH" = both ] && BATCH=on,off
BATCHES=${BATCH//,/ }
for b in $BATCHES; do [[ $b =~ ^(on|off|[1-9][0-9]*)$ ]] || die "--batch: $b is none of on, off, a number of Txns in flight"; done
case $READS in leader|local) READSET=$READS ;; both) READSET="leader local" ;; *) die "--update-reads $READS: want leader, local or both" ;; esac
for d in ${DELAYS//,/ }; do case $d in none|full|tenth) ;; *) die "--etcd-delays: $d is none of none, full, tenth" ;; esac; done
[ "$(id -u)" = 0 ] || die "run as root (FUSE mounts)"
command -v etcd >/dev/null || need_root_apt etcd etcd-server
OUT="$REPO/bench/out/multisite-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$OUT/bin"
log "building tessera and the driver into $OUT/bin"
(cd "$REPO" && go build -o "$OUT/bin/tessera" ./cmd/tessera && go build -o "$OUT/bin/multisite" ./bench/cmd/multisite) || die "build failed"
D="$OUT/bin/multisite"
{ echo "# $(date -u +%FT%TZ) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"; } > "$OUT/io.tsv"
if [ "$CREATES_ONLY" = 0 ]; then
  log "figures 7 and 8: sizes $SIZES MiB, $RUNS runs; etcd members without WAN delay (see the results file)"
  "$D" -bin "$OUT/bin/tessera" -sizes "$SIZES" -runs "$RUNS" -creates 0 $CPU | tee -a "$OUT/io.tsv"
fi
# creates DELAY BATCH READS: the create phase on a fresh cluster, its rows tagged with the three.
creates() {
  local delay=$1 batch=$2 reads=$3 q=() args=(-skip-io -creates "$CREATES" -threads "$WORKERS" -create-dirs "$DIRS")
  case $delay in full) args+=(-etcd-wan) ;; tenth) args+=(-etcd-wan -rtt-div 10) ;; esac
  case $batch in off) q+=(batch=0) ;; on) ;; *) q+=("batch=$batch") ;; esac
  [ "$reads" = local ] && q+=(update-reads=local)
  [ ${#q[@]} -gt 0 ] && args+=(-etcd-query "$(IFS='&'; echo "${q[*]}")")
  log "creates: etcd members at delay $delay, group commit $batch, update reads $reads, $WORKERS workers per site, dirs $DIRS (load $(cut -d' ' -f1-3 /proc/loadavg))"
  "$D" -bin "$OUT/bin/tessera" "${args[@]}" |
    awk -v d="$delay" -v b="$batch" -v r="$reads" 'BEGIN { OFS="\t" } $1=="creates" || $1=="error" { $1=$1 "\t" d "\t" b (r=="local" ? "+local" : "") } { print }' |
    tee "$OUT/creates-$delay-$batch-$reads.tsv"
}
if [ "$CREATES" -gt 0 ]; then
  for delay in ${DELAYS//,/ }; do
    for b in $BATCHES; do
      for r in $READSET; do creates "$delay" "$b" "$r"; done
    done
  done
fi
summary "$OUT/io.tsv" "$OUT"/creates-*.tsv 2>/dev/null | tee "$OUT/summary.txt"
log "results in $OUT"
