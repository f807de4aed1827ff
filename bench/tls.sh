#!/usr/bin/env bash
# bench/tls.sh - what TLS costs: the same cluster of separate processes on 127.0.0.1, started
# with certificates (the default) and with --insecure, interleaved; sequential write and read,
# 4 KiB random reads, creates. See bench/README.md ("TLS on vs off").
#
#   bench/tls.sh [--runs 3] [--servers 3] [--size 1G] [--rand-time 20] [--files 8000]
#                [--threads 4] [--profile] [--workdir /dev/shm] [--keep] [--quick] [--before BIN]
#   bench/tls.sh --summary bench/out/tls-TS/rows.tsv
# --before BIN: a third mode, "before": TLS with the tessera binary BIN (a build of an earlier
# commit), interleaved tls, before, plain: a change measured against its base in one session.
set -uo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$REPO/bench/lib.sh"

RUNS=3 NSRV=3 SIZE="" RTIME="" FILES="" THREADS=4 PROFILE=0 WORKBASE=/dev/shm KEEP=0 QUICK=0 BEFORE=""
usage() { sed -n '2,10p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }
# summary ROWS: per workload, median (min..max) of each mode, their ratio, median CPU-seconds per
# role, and the CPU of all roles per unit of work (ms per MiB, per read, per create).
summary() {
  echo "Median (min..max) over the runs; ratio = median tls / median plain (target >= 0.90);"
  echo "cpu = median CPU-seconds during the workload of the mount / meta / all block servers;"
  echo "cpu/unit = median CPU-milliseconds of all of them per MiB, read or create (create: its stat and"
  echo "unlink phases included); cpu ratio = plain/tls of those: about the throughput ratio when the CPU is the limit."
  awk -F'\t' 'NR>1 { k=$3" "$2; v[k]=v[k]" "$4; mc[k]=mc[k]" "$7; ec[k]=ec[k]" "$8; bc[k]=bc[k]" "$9; u[$3]=$5
      w=$4*$6; cu[k]=cu[k]" "((w>0 && $4!="nan") ? 1000*($7+$8+$9)/w : "nan") }
    function med(s,  a,n,i,j,t) { n=split(s,a," "); lo=hi="nan"; m=0
      for(i=1;i<=n;i++) if (a[i]!="nan") b[++m]=a[i]; if (!m) return "nan"
      for(i=1;i<=m;i++) for(j=i+1;j<=m;j++) if (b[j]+0<b[i]+0) { t=b[i]; b[i]=b[j]; b[j]=t }
      lo=b[1]; hi=b[m]; return (m%2) ? b[(m+1)/2] : (b[m/2]+b[m/2+1])/2 }
    function rat(a, b) { return (a!="nan" && b!="nan" && b+0>0) ? sprintf("%.2f", a/b) : "nan" }
    END { f="%-10s %-6s %-24s %-24s %-6s %-15s %-15s %-15s %s\n"
      printf f, "workload", "unit", "tls", "plain", "ratio", "cpu tls", "cpu plain", "cpu/unit t|p", "cpu ratio"
      n=split("seqwrite seqread randread4 create", W, " ")
      for (i=1;i<=n;i++) { w=W[i]; if (!(w in u)) continue
        t=med(v[w" tls"]); tr=sprintf("%s (%s..%s)", t, lo, hi); p=med(v[w" plain"]); pr=sprintf("%s (%s..%s)", p, lo, hi)
        ct=sprintf("%.1f/%.1f/%.1f", med(mc[w" tls"]), med(ec[w" tls"]), med(bc[w" tls"]))
        cp=sprintf("%.1f/%.1f/%.1f", med(mc[w" plain"]), med(ec[w" plain"]), med(bc[w" plain"]))
        ut=med(cu[w" tls"]); up=med(cu[w" plain"])
        printf f, w, u[w], tr, pr, rat(t, p), ct, cp, sprintf("%.2f|%.2f", ut, up), rat(up, ut) }
      # --before: the same figures of TLS with the earlier binary
      hdr=0
      for (i=1;i<=n;i++) { w=W[i]; if (!((w" before") in v)) continue
        if (!hdr++) { printf "\nbefore = TLS with the --before binary; ratio = median before / median plain; cpu ratio = plain/before:\n"
          printf f, "workload", "unit", "before", "plain", "ratio", "cpu before", "cpu plain", "cpu/unit b|p", "cpu ratio" }
        bm=med(v[w" before"]); br=sprintf("%s (%s..%s)", bm, lo, hi); p=med(v[w" plain"])
        cb=sprintf("%.1f/%.1f/%.1f", med(mc[w" before"]), med(ec[w" before"]), med(bc[w" before"]))
        cp=sprintf("%.1f/%.1f/%.1f", med(mc[w" plain"]), med(ec[w" plain"]), med(bc[w" plain"]))
        ub=med(cu[w" before"]); up=med(cu[w" plain"])
        printf f, w, u[w], br, sprintf("%s", p), rat(bm, p), cb, cp, sprintf("%.2f|%.2f", ub, up), rat(up, ub) } }' "$1"
}
ARGS="$*"
while [ $# -gt 0 ]; do
  case $1 in
    --runs) RUNS=$2; shift 2 ;;
    --servers) NSRV=$2; shift 2 ;;
    --size) SIZE=$2; shift 2 ;;
    --rand-time) RTIME=$2; shift 2 ;;
    --files) FILES=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --profile) PROFILE=1; shift ;;
    --workdir) WORKBASE=$2; shift 2 ;;
    --keep) KEEP=1; shift ;;
    --summary) summary "$2"; exit ;;   # reprint the summary of a recorded rows.tsv
    --quick) QUICK=1; shift ;;
    --before) BEFORE=$2; shift 2 ;;
    -h|--help) usage 0 ;;
    *) echo "tls.sh: unknown argument: $1" >&2; usage 2 ;;
  esac
done
if [ "$QUICK" = 1 ]; then : "${SIZE:=256M}" "${RTIME:=10}" "${FILES:=2000}"; else : "${SIZE:=1G}" "${RTIME:=20}" "${FILES:=8000}"; fi
[[ $RUNS =~ ^[1-9][0-9]?$ ]] || die "bad --runs $RUNS"
[[ $NSRV =~ ^[1-9]$ ]] || die "bad --servers $NSRV (1..9)"
[[ $RTIME =~ ^[1-9][0-9]*$ ]] || die "bad --rand-time $RTIME (seconds)"
[[ $FILES =~ ^[1-9][0-9]*$ ]] || die "bad --files $FILES"
[[ $THREADS =~ ^[1-9][0-9]?$ ]] || die "bad --threads $THREADS"
SIZE_B=$(numfmt --from=iec "$SIZE") || die "bad --size $SIZE"
[ "$(id -u)" = 0 ] || die "run as root (FUSE mounts, drop_caches)"

W="" ; trap lib_cleanup EXIT; trap 'log interrupted; exit 130' INT TERM HUP
need_root_apt fio fio || die "fio is required"
[ "$PROFILE" = 0 ] || command -v perf >/dev/null || die "--profile needs perf"
log "building tessera and bench helpers"; build_bins
( cd "$REPO" && go build -o "$OUTBASE/bin/" ./bench/cmd/metaops ) || die "cannot build bench/cmd/metaops"
METAOPS=$OUTBASE/bin/metaops
has_flag meta tls-cert || die "$TESSERA has no --tls-cert: nothing to compare"
MODES="tls plain"
if [ -n "$BEFORE" ]; then
  [ -x "$BEFORE" ] || die "--before $BEFORE: not an executable"
  MODES="tls before plain"
fi
NEWBIN=$TESSERA
TS=$(date +%Y%m%d-%H%M%S); OUT=$OUTBASE/tls-$TS; mkdir -p "$OUT/logs" "$OUT/fio" "$OUT/prof"
W=$(mktemp -d "$WORKBASE/tessera-tls.XXXXXX") || die "cannot make work dir"
UP0=$(uptime); T_START=$(date +%s)

cpu_busy() { awk '/^cpu /{t=0; for(i=2;i<=NF;i++) t+=$i; print t-$5-$6, t; exit}' /proc/stat; }
busy_pct() { awk -v a="$1" -v b="$2" 'BEGIN{split(a,x," "); split(b,y," "); if (y[2]>x[2]) printf "%.0f", 100*(y[1]-x[1])/(y[2]-x[2]); else print "nan"}'; }

# mode_args MODE NAME: the flags of process NAME in MODE (tls: its certificate; plain: --insecure)
mode_args() { if [ "$1" != plain ]; then tls_args "$2"; else echo --insecure; fi; }

META="" METAPID="" MPID="" ; declare -a BPIDS=()
# cluster_start TAG MODE: tessera meta + NSRV tessera blockd on 127.0.0.1, defaults otherwise.
cluster_start() {
  local tag=$1 mode=$2 d=$W/$1 i
  mkdir -p "$d"
  # TLSDIR set: start_mount and tls_args use certificates; plain mode has none
  if [ "$mode" != plain ]; then tls_init "$d/pki" && [ -n "$TLSDIR" ] || { log "tessera certs failed"; return 1; }
  else TLSDIR=""; fi
  # shellcheck disable=SC2046 # mode_args: words without spaces
  start_bg "$OUT/logs/$tag-meta.log" srv "$TESSERA" meta --data "$d/meta" --listen 127.0.0.1:0 $(mode_args "$mode" meta)
  METAPID=$LASTPID
  wait_ready "$METAPID" "$OUT/logs/$tag-meta.log" 'meta: ready' 30 || return 1
  META=$(grep -m1 -o 'listen=[^ ]*' "$OUT/logs/$tag-meta.log" | cut -d= -f2)
  BPIDS=()
  for ((i=0; i<NSRV; i++)); do
    [ "$mode" != plain ] && { tls_issue "b$i" blockd 127.0.0.1 || return 1; }
    # --host hI: not this machine's name, so the mount fetches blocks over TCP (no co-located file reads)
    # shellcheck disable=SC2046
    start_bg "$OUT/logs/$tag-blockd$i.log" srv "$TESSERA" blockd --data "$d/b$i" --meta "$META" --id "b$i" \
      --listen 127.0.0.1:0 --host "h$i" $(mode_args "$mode" "b$i")
    BPIDS+=("$LASTPID")
  done
  for ((i=0; i<NSRV; i++)); do wait_ready "${BPIDS[$i]}" "$OUT/logs/$tag-blockd$i.log" 'blockd: ready' 30 || return 1; done
}
# mount_fresh TAG MODE PHASE: drop caches, start a mount on $W/mnt (sets MPID).
mount_fresh() {
  local pp=()
  drop_caches
  [ "$2" = plain ] && pp+=(--insecure)   # with TLS, start_mount adds the mount's certificate
  start_mount "$OUT/logs/$1-mount-$3.log" "$W/mnt" --meta "$META" "${pp[@]}" || return 1
  MPID=$LASTPID
}
cluster_stop() { stop_all_mounts; stop_all_servers; BPIDS=(); METAPID=""; MPID=""; }

# profile_start WL / profile_stop: in run 1 with --profile, perf record (call graphs) of the
# mount and of the block servers while WL runs, and a flat report of each (prof/TAG-WL-*.txt).
declare -a PERF_PIDS=() PERF_FILES=()
profile_start() {
  [ "$PROFILE" = 1 ] && [ "$RUN" = 1 ] || return 0
  local who pids f
  for who in mount blockd; do
    if [ $who = mount ]; then pids=$MPID; else pids=$(IFS=,; echo "${BPIDS[*]}"); fi
    f=$OUT/prof/$TAG-$1-$who
    perf record -q -F 499 -g -p "$pids" -o "$f.data" >"$f.log" 2>&1 &
    PERF_PIDS+=($!) PERF_FILES+=("$f")
  done
}
profile_stop() {
  local p f
  for p in "${PERF_PIDS[@]}"; do kill -INT "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  for f in "${PERF_FILES[@]}"; do
    perf report -i "$f.data" --stdio --no-children -g none --percent-limit 0.7 --sort dso,sym 2>/dev/null | grep -v '^#' | grep . > "$f.txt"
  done
  PERF_PIDS=() PERF_FILES=()
}

ROWS=$OUT/rows.tsv
printf 'run\tmode\tworkload\tvalue\tunit\tsecs\tmount_cpu_s\tmeta_cpu_s\tblockd_cpu_s\tmachine_busy_pct\tload1\n' > "$ROWS"
C0="" ; S0=""
snap() { C0="$(cpu_of "$MPID") $(cpu_of "$METAPID") $(cpu_sum "${BPIDS[@]}")"; S0=$(cpu_busy); }
# row MODE WORKLOAD VALUE UNIT SECS: one measurement, CPU since snap
row() {
  local c1 s1 a
  c1="$(cpu_of "$MPID") $(cpu_of "$METAPID") $(cpu_sum "${BPIDS[@]}")"; s1=$(cpu_busy)
  read -r -a a <<< "$C0 $c1"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$RUN" "$1" "$2" "$3" "$4" "$5" \
    "$(fsub "${a[3]}" "${a[0]}")" "$(fsub "${a[4]}" "${a[1]}")" "$(fsub "${a[5]}" "${a[2]}")" "$(busy_pct "$S0" "$s1")" \
    "$(cut -d' ' -f1 /proc/loadavg)" >> "$ROWS"
  log "  $1 $2: $3 $4 (cpu mount/meta/blockd $(fsub "${a[3]}" "${a[0]}")/$(fsub "${a[4]}" "${a[1]}")/$(fsub "${a[5]}" "${a[2]}") s)"
}
# fio_row MODE WL FIELD(1=MiB/s 2=IOPS) UNIT FIO-ARGS...
fio_row() {
  local mode=$1 wl=$2 f=$3 unit=$4 j=$OUT/fio/$TAG-$2.json res; shift 4
  snap; profile_start "$wl"
  if timeout --foreground -k 30 1800 fio --output-format=json --output="$j" --ioengine=psync --fallocate=none "$@" >"$j.stderr" 2>&1 \
     && res=$("$BR" fio "$j"); then
    row "$mode" "$wl" "$(cut -d' ' -f"$f" <<< "$res")" "$unit" "$(cut -d' ' -f3 <<< "$res")"
  else
    log "fio $TAG $wl failed: $(tail -n 2 "$j.stderr" | tr '\n' ' ')"; row "$mode" "$wl" nan "$unit" nan
  fi
  profile_stop
}

# measure MODE: one fresh cluster; each workload on a fresh mount after dropping caches.
measure() {
  local mode=$1 f=$W/mnt/seq.dat q
  TAG="r$RUN-$mode"
  cluster_start "$TAG" "$mode" || return 1
  mount_fresh "$TAG" "$mode" write || return 1
  fio_row "$mode" seqwrite 1 MiB/s --name=seqwrite --filename="$f" --rw=write --bs=1M --size="$SIZE" --end_fsync=1
  [ "$(stat -c %s "$f" 2>/dev/null)" = "$SIZE_B" ] || log "WARNING: seq.dat is $(stat -c %s "$f" 2>/dev/null || echo missing) bytes, want $SIZE_B"
  stop_mount "$MPID"
  mount_fresh "$TAG" "$mode" read || return 1
  fio_row "$mode" seqread 1 MiB/s --name=seqread --filename="$f" --rw=read --bs=1M --size="$SIZE"
  stop_mount "$MPID"
  # 4 jobs (processes, psync, qd1), each on its own quarter of seq.dat, for RTIME seconds: IOPS summed
  mount_fresh "$TAG" "$mode" rand || return 1
  q=$(( SIZE_B / 4 ))
  fio_row "$mode" randread4 2 IOPS --name=randread4 --filename="$f" --rw=randread --bs=4k --size="$q" \
    --offset_increment="$q" --numjobs=4 --time_based --runtime="$RTIME"
  stop_mount "$MPID"
  # creates: metaops (mdtest's phases) with THREADS workers, one directory each; only create is reported
  mount_fresh "$TAG" "$mode" meta || return 1
  local mo=$OUT/logs/$TAG-metaops.txt drop="" line
  [ "$DROP_OK" = 1 ] && drop=-drop-caches
  snap; profile_start create
  timeout --foreground -k 30 1800 "$METAOPS" -dir "$W/mnt/meta" -n "$FILES" -threads "$THREADS" -unique-dir $drop >"$mo" 2>&1
  line=$(grep '^phase=create ' "$mo")
  if [ -n "$line" ]; then
    row "$mode" create "$(sed -n 's/.*ops_per_s=\([^ ]*\).*/\1/p' <<< "$line")" ops/s "$(sed -n 's/.*secs=\([^ ]*\).*/\1/p' <<< "$line")"
  else
    log "metaops $TAG failed: $(tail -n 1 "$mo")"; row "$mode" create nan ops/s nan
  fi
  profile_stop
  cluster_stop
  [ "$KEEP" = 1 ] || rm -rf "${W:?}/$TAG"
}

{
  printf 'date\t%s\ncommand\tbench/tls.sh %s\n' "$(date -Is)" "$ARGS"
  [ -n "$BEFORE" ] && printf 'before\t%s (%s)\n' "$BEFORE" "$(sha256sum "$BEFORE" | cut -c1-12)"
  printf 'commit\t%s\n' "$(git -C "$REPO" log -1 --format='%h %s' 2>/dev/null | cut -c1-100)"
  printf 'host\t%s cores, %s MiB RAM, kernel %s\n' "$(nproc)" "$(awk '/MemTotal/{print int($2/1024)}' /proc/meminfo)" "$(uname -r)"
  printf 'load at start\t%s\n' "$UP0"
  printf 'setup\ttessera meta + %s tessera blockd (--host h0..: blocks go over loopback TCP) + 1 tessera mount, separate processes on 127.0.0.1, default settings; tls = certificates from tessera certs (README Security), plain = --insecure on every role; a fresh cluster per (run, mode), runs interleaved %s; data under %s (%s)\n' \
    "$NSRV" "${MODES// /, }" "$WORKBASE" "$(findmnt -n -o FSTYPE -T "$W" | head -n 1)"
  printf 'workloads\tfio psync bs=1M: seqwrite %s (end_fsync=1), seqread of it; randread4: 4 KiB, 4 jobs each on a quarter of it, %s s; create: metaops -n %s -threads %s -unique-dir (create phase); each on a fresh mount after dropping caches\n' \
    "$SIZE" "$RTIME" "$FILES" "$THREADS"
} > "$OUT/meta.txt"

for ((RUN=1; RUN<=RUNS; RUN++)); do
  for mode in $MODES; do
    log "run $RUN/$RUNS $mode (load $(cut -d' ' -f1-3 /proc/loadavg))"
    TESSERA=$NEWBIN; [ "$mode" = before ] && TESSERA=$BEFORE
    measure "$mode" || { log "run $RUN $mode failed (see $OUT/logs)"; profile_stop; cluster_stop; }
    TESSERA=$NEWBIN
  done
done

# ---------------------------------------------------------------- report
{
  sed 's/\t/: /' "$OUT/meta.txt"
  printf 'load at end: %s\nwall: %s s\n\n' "$(uptime)" "$(( $(date +%s) - T_START ))"
  summary "$ROWS"
  echo
  echo "Every measurement (rows.tsv):"
  column -t -s $'\t' "$ROWS"
} | tee "$OUT/report.txt"
cp "$OUT/report.txt" "$OUTBASE/tls-$TS.txt"
echo "Results: $OUTBASE/tls-$TS.txt, $OUT/ (rows.tsv, fio JSON, logs$( [ "$PROFILE" = 1 ] && echo ", prof/"))"
