#!/usr/bin/env bash
# bench/striping.sh - aggregate sequential write/read of one large file striped over
# N block servers, each in its own network namespace behind a tbf-limited veth.
# See bench/README.md ("Striping").
#
#   bench/striping.sh [--servers 1,2,4,8] [--rate 50] [--size 1G] [--bs 1M] [--runs 1] [--no-ceiling]
#                     [--uploads K] [--workdir /dev/shm] [--subnet 192.168.77] [--keep] [--quick]
set -uo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$REPO/bench/lib.sh"

SERVERS="" RATE=50 SIZE="" BS=1M RUNS=1 CEILING=1 WORKBASE=/dev/shm KEEP=0 QUICK=0
usage() { sed -n '2,7p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }
ARGS="$*"
while [ $# -gt 0 ]; do
  case $1 in
    --servers) SERVERS=$2; shift 2 ;;
    --rate) RATE=$2; shift 2 ;;
    --size) SIZE=$2; shift 2 ;;
    --bs) BS=$2; shift 2 ;;
    --runs) RUNS=$2; shift 2 ;;
    --no-ceiling) CEILING=0; shift ;;
    --uploads) HELPER_ARGS=(--uploads "$2"); shift 2 ;;
    --workdir) WORKBASE=$2; shift 2 ;;
    --subnet) SUBNET=$2; shift 2 ;;
    --keep) KEEP=1; shift ;;
    --quick) QUICK=1; shift ;;
    -h|--help) usage 0 ;;
    *) echo "striping.sh: unknown argument: $1" >&2; usage 2 ;;
  esac
done
if [ "$QUICK" = 1 ]; then : "${SERVERS:=1,2}" "${SIZE:=128M}"; else : "${SERVERS:=1,2,4,8}" "${SIZE:=1G}"; fi
IFS=, read -r -a NLIST <<< "$SERVERS"
NMAX=0; for n in "${NLIST[@]}"; do [[ $n =~ ^[1-9][0-9]?$ ]] || die "bad --servers $SERVERS"; [ "$n" -gt $NMAX ] && NMAX=$n; done
[ "$NMAX" -le 60 ] || die "at most 60 servers"
[ "$(id -u)" = 0 ] || die "run as root (namespaces, tc, FUSE, drop_caches)"
SIZE_B=$(numfmt --from=iec "$SIZE") || die "bad --size"
[[ $RUNS =~ ^[1-9][0-9]?$ ]] || die "bad --runs $RUNS"

W="" ; trap lib_cleanup EXIT; trap 'log interrupted; exit 130' INT TERM HUP
need_root_apt fio fio || die "fio is required"
log "building tessera and bench helpers"; build_bins
TS=$(date +%Y%m%d-%H%M%S); OUT=$OUTBASE/striping-$TS; mkdir -p "$OUT/logs" "$OUT/fio"
W=$(mktemp -d "$WORKBASE/tessera-striping.XXXXXX") || die "cannot make work dir"

log "checking ip netns + veth + tc tbf"
check_netns || die "ip netns / veth / tc tbf do not work here"
META=$SUBNET.1:7400
REPL=(); if has_flag meta replicas; then REPL=(--replicas 1); REPL_NOTE="meta --replicas 1"
else REPL_NOTE="tessera meta has no --replicas flag: run without (the meta default is R=1)"; log "NOTE: $REPL_NOTE"; fi

log "creating $NMAX namespaces ($SUBNET.0/24)"
for ((i=0; i<NMAX; i++)); do ns_create $i || die "namespace $i: cannot set up"; done
# TLS, the default: a CA and every process's certificate (bench/lib.sh)
tls_init "$W/pki" "$SUBNET.1" || die "tessera certs failed"
for ((i=0; i<NMAX; i++)); do tls_issue "b$i" blockd "$(ns_addr $i)" || die "tessera certs issue b$i failed"; done

# cpu_busy: "busy total" jiffies of the whole machine (/proc/stat)
cpu_busy() { awk '/^cpu /{t=0; for(i=2;i<=NF;i++) t+=$i; print t-$5-$6, t; exit}' /proc/stat; }

# fio_run NAME ARGS... -> RES="MiB/s iops runtime_s" or returns 1
fio_run() {
  local name=$1; shift
  local j=$OUT/fio/$name.json
  timeout --foreground -k 30 1800 fio --output-format=json --output="$j" --ioengine=psync --fallocate=none "$@" >"$j.stderr" 2>&1 \
    || { log "fio $name failed: $(tail -n 2 "$j.stderr" | tr '\n' ' ')"; return 1; }
  RES=$("$BR" fio "$j") || { log "fio $name: $RES"; return 1; }
}

ROWS=$OUT/rows.tsv
printf 'limit\tN\tphase\tMiB_s\tideal\tratio\tclient_cpu_s\tclient_cpu_pct\tblockd_cpu_s\tmachine_busy_pct\tveth_MiB\tveth_min_max_MiB\ttbf_drops\tcpu_bound_MiB_s\trun\n' > "$ROWS"

# measure LIMIT N: one cluster with N servers, write then (fresh mount) read.
measure() {
  local lim=$1 n=$2 tag="r$1-n$2" i d mpid
  local -a bpids=()
  d=$W/$tag; mkdir -p "$d"
  for ((i=0; i<n; i++)); do ns_limit $i "$lim" || { log "tc tbf on veth $i failed"; return 1; }; done
  start_bg "$OUT/logs/$tag-meta.log" srv "$TESSERA" meta --data "$d/meta" --listen "$META" "${REPL[@]}" $(tls_args meta)
  local metapid=$LASTPID
  wait_ready "$metapid" "$OUT/logs/$tag-meta.log" 'meta: ready' 30 || return 1
  for ((i=0; i<n; i++)); do
    start_bg "$OUT/logs/$tag-blockd$i.log" srv ip netns exec "$(ns_name $i)" "$TESSERA" blockd --data "$d/b$i" \
      --meta "$META" --id "b$i" --listen "$(ns_addr $i):7500" --host "ns$i" $(tls_args "b$i")
    bpids+=("$LASTPID")
  done
  for ((i=0; i<n; i++)); do wait_ready "${bpids[$i]}" "$OUT/logs/$tag-blockd$i.log" 'blockd: ready' 30 || return 1; done

  local phase
  for phase in write read; do
    [ $phase = read ] && drop_caches
    start_mount "$OUT/logs/$tag-mount-$phase.log" "$d/mnt" --meta "$META" || { log "mount ($tag, $phase) failed"; return 1; }
    mpid=$LASTPID
    local c0 b0 s0 v0=() v1=() t0 t1 c1 b1 s1 args
    local dr0=0 dr1=0
    for ((i=0; i<n; i++)); do v0[$i]=$(veth_bytes $i); dr0=$((dr0 + $(tbf_drops $i))); done
    c0=$(cpu_of "$mpid"); b0=$(cpu_sum "${bpids[@]}"); s0=$(cpu_busy); t0=$(now)
    if [ $phase = write ]; then args=(--rw=write --end_fsync=1); else args=(--rw=read); fi
    if ! fio_run "$tag-$phase" --name="$phase" --filename="$d/mnt/seq.dat" --bs="$BS" --size="$SIZE" "${args[@]}"; then
      RES="nan nan nan"
      local e; e=$(grep -m1 'level=ERROR' "$OUT/logs/$tag-mount-$phase.log" | sed 's/^.*msg=//')
      [ -n "$e" ] && { log "  mount error: $e"; printf '%s\t%s\t%s\t%s\n' "$lim" "$n" "$phase" "$e" >> "$OUT/errors.tsv"; }
    fi
    t1=$(now); c1=$(cpu_of "$mpid"); b1=$(cpu_sum "${bpids[@]}"); s1=$(cpu_busy)
    # bytes over the veths in the data direction: tx (root->ns) for write, rx for read
    local col=1 tot=0 mn="" mx=0 x
    [ $phase = read ] && col=2
    for ((i=0; i<n; i++)); do
      v1[$i]=$(veth_bytes $i); dr1=$((dr1 + $(tbf_drops $i)))
      x=$(( $(cut -d' ' -f$col <<< "${v1[$i]}") - $(cut -d' ' -f$col <<< "${v0[$i]}") ))
      tot=$((tot + x)); [ -z "$mn" ] || [ $x -lt "$mn" ] && mn=$x; [ $x -gt $mx ] && mx=$x
    done
    local mibs ideal ratio cpu wall busy
    mibs=$(awk '{printf "%.1f", $1}' <<< "$RES")
    wall=$(fsub "$t1" "$t0"); cpu=$(fsub "$c1" "$c0")
    busy=$(awk -v a="$s0" -v b="$s1" 'BEGIN{split(a,x," "); split(b,y," "); if (y[2]>x[2]) printf "%.0f", 100*(y[1]-x[1])/(y[2]-x[2]); else print "nan"}')
    if [ "$lim" = 0 ]; then ideal=-; ratio=-; else ideal=$((n * lim)); ratio=$(fdiv "$mibs" "$ideal"); fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$( [ "$lim" = 0 ] && echo none || echo "${lim}MiB/s")" "$n" "$phase" \
      "$mibs" "$ideal" "$ratio" "$cpu" "$(awk -v c="$cpu" -v w="$wall" 'BEGIN{printf "%.0f", 100*c/w}')" "$(fsub "$b1" "$b0")" "$busy" \
      "$((tot >> 20))" "$((mn >> 20))/$((mx >> 20))" "$((dr1 - dr0))" \
      "$(awk -v m="$mibs" -v b="$busy" 'BEGIN{if (b+0 > 0) printf "%.0f", m*100/b; else print "nan"}')" "$RUN" >> "$ROWS"
    log "  limit=$lim N=$n $phase: $mibs MiB/s (ideal ${ideal}), client cpu $cpu s, blockd cpu $(fsub "$b1" "$b0") s, machine busy ${busy}%, over veths $((tot >> 20)) MiB, tbf drops $((dr1 - dr0))"
    if [ $phase = write ]; then
      local got; got=$(stat -c %s "$d/mnt/seq.dat" 2>/dev/null)
      [ "$got" = "$SIZE_B" ] || log "WARNING: seq.dat is ${got:-missing} bytes, want $SIZE_B"
    fi
    stop_mount "$mpid"
  done
  "$TESSERA" status --meta "$META" $(tls_args admin) > "$OUT/logs/$tag-status.txt" 2>&1
  stop_all_servers
  rm -rf "$d"
}

{
  printf 'date\t%s\ncommand\tbench/striping.sh %s\n' "$(date -Is)" "$ARGS"
  printf 'host\t%s cores, %s MiB RAM, kernel %s\n' "$(nproc)" "$(awk '/MemTotal/{print int($2/1024)}' /proc/meminfo)" "$(uname -r)"
  printf 'setup\tmeta + FUSE mount in the root namespace, blockd i in namespace %s-i (%s.4i+2) with --host nsI, tbf on both veth ends; block data under %s (%s); tbf burst 512k latency %s\n' \
    "$NS_PFX" "$SUBNET" "$W" "$(findmnt -n -o FSTYPE -T "$W" | head -n 1)" "${TBF_LATENCY:-50ms}"
  printf 'workload\tfio psync bs=%s size=%s: write --end_fsync=1 (one mount), then drop caches and read with a fresh mount\n' "$BS" "$SIZE"
  printf 'replicas\t%s\n' "$REPL_NOTE"
  printf 'mount\t%s\n' "$( [ ${#HELPER_ARGS[@]} -gt 0 ] && echo "bench/cmd/tiermount ${HELPER_ARGS[*]} (client knobs not on tessera mount)" || echo "tessera mount (defaults: 32 uploads with 4 per server, 64 fetches with 2 per server, 128 MiB dirty, read-ahead 6 blocks per server (8 to 3/4 of the 256 MiB memory cache), each block on R of its R+1 rendezvous candidates by the client's load)")"
} > "$OUT/meta.tsv"

LIMITS=("$RATE"); [ "$CEILING" = 1 ] && LIMITS+=(0)
for ((RUN=1; RUN<=RUNS; RUN++)); do
  for lim in "${LIMITS[@]}"; do
    for n in "${NLIST[@]}"; do
      log "run $RUN/$RUNS: limit=${lim} MiB/s (0 = none), N=$n"
      measure "$lim" "$n" || { log "N=$n limit=$lim failed (see $OUT/logs)"; stop_all_mounts; stop_all_servers; }
    done
  done
done

# ---------------------------------------------------------------- report
{
  cat "$OUT/meta.tsv" | sed 's/\t/: /'
  echo
  column -t -s $'\t' "$ROWS"
  echo
  if [ -s "$OUT/errors.tsv" ]; then
    echo "FAILURES (first ERROR line of the mount's log; limit N phase error):"; cat "$OUT/errors.tsv"; echo
  fi
  if [ "$RUNS" -gt 1 ]; then
    echo "Medians over $RUNS runs (ratio min..max):"
    awk -F'\t' 'NR>1 && $1!="none" { k=$2" "$3; v[k]=v[k]" "$6; c[k]=c[k]" "$14 }
      function med(s,  a,n,i,j,t) { n=split(s,a," "); for(i=1;i<=n;i++) for(j=i+1;j<=n;j++) if (a[j]+0<a[i]+0) { t=a[i]; a[i]=a[j]; a[j]=t }
        lo=a[1]; hi=a[n]; return (n%2) ? a[(n+1)/2] : (a[n/2]+a[n/2+1])/2 }
      END { printf "  %-3s %-6s %-7s %-11s %s\n", "N", "phase", "ratio", "min..max", "cpu_bound_MiB_s"
        for (k in v) { split(k,x," "); r=med(v[k]); l=lo; h=hi; printf "  %-3s %-6s %-7.2f %s..%-6s %.0f\n", x[1], x[2], r, l, h, med(c[k]) } }' "$ROWS" | sort -k1,1n -k2,2r
    echo
  fi
  echo "ratio = MiB/s / (N x rate); target >= 0.85. tbf counts IP+TCP headers: at MTU 1500 the payload ceiling is ~0.955 x rate."
  echo "cpu_bound_MiB_s = MiB/s x 100 / machine_busy_pct: where the machine's 2 cores would be all busy at this cost per MiB;"
  echo "  when it is near N x rate, the CPU (not the links) is the limit of that row."
  echo "client_cpu_pct = mount CPU / wall (100 = one core); machine_busy_pct = all processes, % of $(nproc) cores."
  echo "veth_MiB = bytes over the block servers' veths in the data direction (min/max per server): data really crossed them."
  if [ "$CEILING" = 1 ]; then
    awk -F'\t' -v r="$RATE" 'NR>1 && $1=="none" { if ($4+0>m[$3]) { m[$3]=$4+0; n[$3]=$2; b[$3]=$10 } }
      END { for (p in m) printf "CPU ceiling (%s, no tc limit): %.0f MiB/s at N=%s, machine %s%% busy -> with %s MiB/s links the target 0.85*N*rate holds up to N ~ %.1f\n",
            p, m[p], n[p], b[p], r, m[p]/(0.85*r) }' "$ROWS"
  fi
} | tee "$OUT/report.txt"
cp "$OUT/report.txt" "$OUTBASE/striping-$TS.txt"
echo "Results: $OUTBASE/striping-$TS.txt, $OUT/ (rows.tsv, fio JSON, daemon logs)"
