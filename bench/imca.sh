#!/usr/bin/env bash
# bench/imca.sh - the IMCa experiments (shared/seeds/001) scaled to this machine:
# (a) stat of every file of a DIRS x FILES tree from two mounts at once, and
# (b) read latency of records (4 KiB .. 1 MiB) from a cold mount,
# each without and with the memcached tier. See bench/README.md ("IMCa").
#
#   bench/imca.sh [--servers 2] [--dirs 20] [--files 1000] [--records 1024] [--sizes 4K,64K,256K,1M]
#                 [--stat-policy relaxed] [--rate 0] [--mc-mem 1024] [--workdir /var/tmp]
#                 [--subnet 192.168.78] [--keep] [--quick]
set -uo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SUBNET=192.168.78
# shellcheck source=bench/lib.sh
. "$REPO/bench/lib.sh"

NB=2 DIRS="" FILES="" RECORDS="" SIZES=4K,64K,256K,1M STATPOL=relaxed RATE=0 MCMEM=1024 WORKBASE=/var/tmp KEEP=0 QUICK=0
usage() { sed -n '2,10p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }
ARGS="$*"
while [ $# -gt 0 ]; do
  case $1 in
    --servers) NB=$2; shift 2 ;;
    --dirs) DIRS=$2; shift 2 ;;
    --files) FILES=$2; shift 2 ;;
    --records) RECORDS=$2; shift 2 ;;
    --sizes) SIZES=$2; shift 2 ;;
    --rate) RATE=$2; shift 2 ;;
    --stat-policy) STATPOL=$2; shift 2 ;;
    --mc-mem) MCMEM=$2; shift 2 ;;
    --workdir) WORKBASE=$2; shift 2 ;;
    --subnet) SUBNET=$2; shift 2 ;;
    --keep) KEEP=1; shift ;;
    --quick) QUICK=1; shift ;;
    -h|--help) usage 0 ;;
    *) echo "imca.sh: unknown argument: $1" >&2; usage 2 ;;
  esac
done
if [ "$QUICK" = 1 ]; then : "${DIRS:=4}" "${FILES:=250}" "${RECORDS:=64}"; else : "${DIRS:=20}" "${FILES:=1000}" "${RECORDS:=1024}"; fi
IFS=, read -r -a SLIST <<< "$SIZES"
[ "$(id -u)" = 0 ] || die "run as root (namespaces, FUSE, drop_caches)"

W=""; trap lib_cleanup EXIT; trap 'log interrupted; exit 130' INT TERM HUP
need_root_apt memcached memcached || die "memcached is required (apt-get install memcached)"
log "building tessera and bench helpers"; build_bins
TS=$(date +%Y%m%d-%H%M%S); OUT=$OUTBASE/imca-$TS; mkdir -p "$OUT/logs"
W=$(mktemp -d "$WORKBASE/tessera-imca.XXXXXX") || die "cannot make work dir"
check_netns || die "ip netns / veth / tc tbf do not work here"
META=$SUBNET.1:7400
MCUSER=nobody; id memcache >/dev/null 2>&1 && MCUSER=memcache

# ---------------------------------------------------------------- cluster
# namespaces 0..NB-1: block servers (--host nsI); NB, NB+1: memcached
for ((i=0; i<NB+2; i++)); do ns_create $i || die "namespace $i"; ns_limit $i "$RATE" || die "tbf $i"; done
REPL=(); has_flag meta replicas && REPL=(--replicas 1)
# TLS, the default: a CA and every process's certificate (bench/lib.sh)
tls_init "$W/pki" "$SUBNET.1" || die "tessera certs failed"
for ((i=0; i<NB; i++)); do tls_issue "b$i" blockd "$(ns_addr $i)" || die "tessera certs issue b$i failed"; done
start_bg "$OUT/logs/meta.log" srv "$TESSERA" meta --data "$W/meta" --listen "$META" "${REPL[@]}" $(tls_args meta)
METAPID=$LASTPID; wait_ready $METAPID "$OUT/logs/meta.log" 'meta: ready' 30 || die "meta did not start"
BPIDS=()
for ((i=0; i<NB; i++)); do
  start_bg "$OUT/logs/blockd$i.log" srv ip netns exec "$(ns_name $i)" "$TESSERA" blockd --data "$W/b$i" --meta "$META" \
    --id "b$i" --listen "$(ns_addr $i):7500" --host "ns$i" $(tls_args "b$i")
  BPIDS+=("$LASTPID")
done
for ((i=0; i<NB; i++)); do wait_ready "${BPIDS[$i]}" "$OUT/logs/blockd$i.log" 'blockd: ready' 30 || die "blockd $i did not start"; done
MCADDRS=() TIER=""
for i in $NB $((NB+1)); do
  a=$(ns_addr $i)
  start_bg "$OUT/logs/memcached$i.log" srv ip netns exec "$(ns_name $i)" memcached -u "$MCUSER" -l "$a" -p 11211 -U 0 -m "$MCMEM" -I 2m -t 2 -v
  MCADDRS+=("$a")
  TIER+="${TIER:+,}$a:11211"
done
TIER="memcached://$TIER"
# mcstat KEY: summed over both memcached
mcstat() {
  local a t=0 v
  for a in "${MCADDRS[@]}"; do
    v=$( { exec 3<>"/dev/tcp/$a/11211" && printf 'stats\r\nquit\r\n' >&3 && timeout 2 cat <&3; exec 3<&-; } 2>/dev/null |
      tr -d '\r' | awk -v k="$1" '$1=="STAT" && $2==k {print $3}')
    t=$((t + ${v:-0}))
  done
  echo $t
}
for _ in $(seq 50); do [ "$(mcstat pid)" -gt 0 ] 2>/dev/null && break; sleep 0.1; done
for a in "${MCADDRS[@]}"; do
  ( exec 3<>"/dev/tcp/$a/11211" ) 2>/dev/null || die "memcached at $a:11211 not reachable (see $OUT/logs)"
done
log "cluster: meta $META, $NB block servers, tier $TIER"
TIERNOTE=$(has_flag mount cache-tier && echo "tessera mount --cache-tier" || echo "tessera mount has no --cache-tier: tier mounts use bench/cmd/tiermount (same client, Config.CacheTier)")
log "tier mounts: $TIERNOTE"

ROWS=$OUT/rows.tsv
printf 'experiment\tcase\ttier\tvalue\tunit\tmean_us\tp50_us\tp99_us\tmount_cpu_s\tmeta_cpu_s\tblockd_cpu_s\ttier_get_hits\n' > "$ROWS"
kv() { sed -n "s/.*[ ^]$1=\([^ ]*\).*/\1/p" <<< " $2"; }

# ---------------------------------------------------------------- (a) stat
# The tree gets policy $STATPOL: a mount trusts a stat from the tier only for
# the attribute TTL of the file's policy (relaxed: 1 min; the default session:
# 1 s, which the 20 s of creating the tree outlast). The creating mount has the
# tier, as IMCa's server side fills it on create; "on" is measured first, while
# those entries are fresh; "off" mounts never look at the tier.
log "(a) creating the tree: $DIRS dirs x $FILES files, policy $STATPOL"
start_mount "$OUT/logs/mount-mktree.log" "$W/m0" --meta "$META" --cache-tier "$TIER" || die "mount failed"
mkdir -p "$W/m0/tree" && "$TESSERA" policy set "$W/m0/tree" "$STATPOL" >/dev/null || die "policy set $STATPOL failed"
MK=$("$IMCAOPS" mktree -dir "$W/m0/tree" -dirs "$DIRS" -files "$FILES") || die "mktree failed"
log "  mktree: $MK"
stop_all_mounts
for mode in on off; do
  drop_caches
  targs=(); [ $mode = on ] && targs=(--cache-tier "$TIER")
  start_mount "$OUT/logs/mount-stat-$mode-A.log" "$W/mA" --meta "$META" "${targs[@]}" || die "mount A failed"; PA=$LASTPID
  start_mount "$OUT/logs/mount-stat-$mode-B.log" "$W/mB" --meta "$META" "${targs[@]}" || die "mount B failed"; PB=$LASTPID
  h0=$(mcstat get_hits); m0=$(cpu_of $METAPID); ca0=$(cpu_sum $PA $PB)
  "$IMCAOPS" stat -dir "$W/mA/tree" -dirs "$DIRS" -files "$FILES" > "$OUT/stat-$mode-A.txt" 2>&1 & SA=$!
  "$IMCAOPS" stat -dir "$W/mB/tree" -dirs "$DIRS" -files "$FILES" > "$OUT/stat-$mode-B.txt" 2>&1 & SB=$!
  wait $SA; ra=$?; wait $SB; rb=$?
  m1=$(cpu_of $METAPID); ca1=$(cpu_sum $PA $PB); h1=$(mcstat get_hits)
  [ $ra = 0 ] && [ $rb = 0 ] || log "  stat failed: $(cat "$OUT/stat-$mode-A.txt" "$OUT/stat-$mode-B.txt" | tail -n 2)"
  agg=0
  for c in A B; do
    l=$(cat "$OUT/stat-$mode-$c.txt")
    printf 'stat\tclient %s\t%s\t%s\tstat/s\t%s\t%s\t%s\t\t\t\t\n' "$c" "$mode" "$(kv ops_per_s "$l")" "$(kv mean_us "$l")" "$(kv p50_us "$l")" "$(kv p99_us "$l")" >> "$ROWS"
    agg=$(awk -v a="$agg" -v b="$(kv ops_per_s "$l")" 'BEGIN{printf "%.1f", a+b}')
  done
  printf 'stat\tboth (sum)\t%s\t%s\tstat/s\t\t\t\t%s\t%s\t\t%s\n' "$mode" "$agg" "$(fsub "$ca1" "$ca0")" "$(fsub "$m1" "$m0")" "$((h1 - h0))" >> "$ROWS"
  log "  stat tier=$mode: $agg stat/s (2 clients), meta cpu $(fsub "$m1" "$m0") s, tier hits $((h1 - h0))"
  stop_all_mounts
done

# ---------------------------------------------------------------- (b) records
log "(b) writing $RECORDS records of each of ${SIZES}"
start_mount "$OUT/logs/mount-write.log" "$W/m0" --meta "$META" || die "mount failed"
for s in "${SLIST[@]}"; do
  b=$(numfmt --from=iec "$s")
  "$IMCAOPS" write -file "$W/m0/rec-$s.dat" -rec "$b" -n "$RECORDS" -seed 7 > "$OUT/write-$s.txt" 2>&1 || die "write $s: $(cat "$OUT/write-$s.txt")"
done
stop_all_mounts
# read_all TAG TIERARGS...: a fresh mount reads every record file; rows unless TAG=warm
read_all() {
  local tag=$1 s b l p h0 h1 c0 c1 bc0 bc1; shift
  drop_caches
  start_mount "$OUT/logs/mount-read-$tag.log" "$W/m-$tag" --meta "$META" "$@" || { log "mount $tag failed"; return 1; }
  p=$LASTPID
  for s in "${SLIST[@]}"; do
    b=$(numfmt --from=iec "$s")
    h0=$(mcstat get_hits); c0=$(cpu_of "$p"); bc0=$(cpu_sum "${BPIDS[@]}")
    l=$("$IMCAOPS" read -file "$W/m-$tag/rec-$s.dat" -rec "$b" -n "$RECORDS" 2>&1) || log "  read $s ($tag) failed: $l"
    h1=$(mcstat get_hits); c1=$(cpu_of "$p"); bc1=$(cpu_sum "${BPIDS[@]}")
    echo "$l" > "$OUT/read-$tag-$s.txt"
    [ "$tag" = warm ] && continue
    printf 'read\t%s records\t%s\t%s\tMiB/s\t%s\t%s\t%s\t%s\t\t%s\t%s\n' "$s" "$tag" "$(kv MiB_per_s "$l")" "$(kv mean_us "$l")" \
      "$(kv p50_us "$l")" "$(kv p99_us "$l")" "$(fsub "$c1" "$c0")" "$(fsub "$bc1" "$bc0")" "$((h1 - h0))" >> "$ROWS"
    log "  read $s tier=$tag: mean $(kv mean_us "$l") us/record, $(kv MiB_per_s "$l") MiB/s, tier hits $((h1 - h0))"
  done
  stop_all_mounts
  grep -h 'tier hits' "$OUT/logs/mount-read-$tag.log" | sed "s/^/  $tag: /" >&2
}
read_all off
read_all warm --cache-tier "$TIER"
sleep 2   # fills are asynchronous
log "  tier after warming: $(mcstat curr_items) items, $(( $(mcstat bytes) >> 20 )) MiB, evictions $(mcstat evictions)"
read_all on --cache-tier "$TIER"

# ---------------------------------------------------------------- report
{
  printf 'date: %s\ncommand: bench/imca.sh %s\n' "$(date -Is)" "$ARGS"
  printf 'setup: meta + mounts in the root namespace; %s block servers (--host nsI) and 2 memcached (-m %s -I 2m) each in its own namespace; veth limit %s; block data under %s (%s)\n' \
    "$NB" "$MCMEM" "$( [ "$RATE" = 0 ] && echo none || echo "$RATE MiB/s")" "$W" "$(findmnt -n -o FSTYPE -T "$W" | head -n 1)"
  printf 'tier mounts: %s\n' "$TIERNOTE"
  printf '(a) %s: create untimed (policy %s, by a mount with the tier); then caches dropped, two fresh mounts stat every file concurrently (imcaops stat), tier on first\n' "$MK" "$STATPOL"
  printf '(b) %s records of each size written and fsynced; each case: drop caches, fresh mount, read records sequentially (imcaops read); "on" = tier warmed by a previous mount reading everything\n' "$RECORDS"
  echo
  column -t -s $'\t' "$ROWS"
  echo
  awk -F'\t' 'NR>1 && $1=="stat" && $2=="both (sum)" { v[$3]=$4 }
              NR>1 && $1=="read" { l[$2,$3]=$6; t[$2,$3]=$4; if (!seen[$2]++) o[++n]=$2 }
    END { if (v["on"]>0) printf "stat: tier on/off throughput = %.2f\n", v["on"]/v["off"]
          for (i=1;i<=n;i++) if (l[o[i],"on"]>0) printf "read %-14s mean latency off/on = %.2f (x faster with the tier), throughput on/off = %.2f\n", o[i]":", l[o[i],"off"]/l[o[i],"on"], t[o[i],"on"]/t[o[i],"off"] }' "$ROWS"
} | tee "$OUT/report.txt"
cp "$OUT/report.txt" "$OUTBASE/imca-$TS.txt"
echo "Results: $OUTBASE/imca-$TS.txt, $OUT/ (rows.tsv, per-run outputs, daemon logs)"
