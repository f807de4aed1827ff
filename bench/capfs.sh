#!/usr/bin/env bash
# bench/capfs.sh - CAPFS Figure 7 / Table 1 (shared/seeds/004 §4) on Tessera: aggregate
# read and write bandwidth of 1, 2, 4 clients (each its own `tessera mount`), shared file
# and separate files, request sizes 16K..4M, per consistency preset; then commits retried
# per second with clients writing the same block. See bench/README.md ("CAPFS").
#
#   bench/capfs.sh [--quick] [--presets posix,seq-nocache,forced,relaxed,session,nfs]
#                  [--clients 1,2,4] [--sizes 16K,64K,256K,1M,4M] [--size 256M] [--timeout 8]
#                  [--contend-time 5] [--contend-bs 4K] [--runs 1] [--replicas 1]
#                  [--block-size 4M] [--workdir /dev/shm] [--keep]
set -uo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$REPO/bench/lib.sh"

PRESETS="" CLIENTS="" SIZES="" SIZE="" TMO="" CTIME="" CBS=4K RUNS=1 REPLICAS=1 BLOCK="" WORKBASE=/dev/shm KEEP=0 QUICK=0
usage() { sed -n '2,10p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }
ARGS="$*"
while [ $# -gt 0 ]; do
  case $1 in
    --presets) PRESETS=$2; shift 2 ;;
    --clients) CLIENTS=$2; shift 2 ;;
    --sizes) SIZES=$2; shift 2 ;;
    --size) SIZE=$2; shift 2 ;;
    --timeout) TMO=$2; shift 2 ;;
    --contend-time) CTIME=$2; shift 2 ;;
    --contend-bs) CBS=$2; shift 2 ;;
    --runs) RUNS=$2; shift 2 ;;
    --replicas) REPLICAS=$2; shift 2 ;;
    --block-size) BLOCK=$2; shift 2 ;;
    --workdir) WORKBASE=$2; shift 2 ;;
    --keep) KEEP=1; shift ;;
    --quick) QUICK=1; shift ;;
    -h|--help) usage 0 ;;
    *) echo "capfs.sh: unknown argument: $1" >&2; usage 2 ;;
  esac
done
if [ "$QUICK" = 1 ]; then
  : "${PRESETS:=posix,forced,relaxed,session}" "${CLIENTS:=1,2}" "${SIZES:=64K,1M}" "${SIZE:=32M}" "${TMO:=5}" "${CTIME:=3}"
else
  : "${PRESETS:=posix,seq-nocache,forced,relaxed,session,nfs}" "${CLIENTS:=1,2,4}" "${SIZES:=16K,64K,256K,1M,4M}" "${SIZE:=256M}" "${TMO:=8}" "${CTIME:=5}"
fi
IFS=, read -r -a PLIST <<< "$PRESETS"
IFS=, read -r -a NLIST <<< "$CLIENTS"
IFS=, read -r -a SLIST <<< "$SIZES"
for n in "${NLIST[@]}"; do [[ $n =~ ^[1-9]$ ]] || die "bad --clients $CLIENTS (1..9 each)"; done
SIZE_B=$(numfmt --from=iec "$SIZE") || die "bad --size $SIZE"
CBS_B=$(numfmt --from=iec "$CBS") || die "bad --contend-bs $CBS"
declare -a SB=()
for s in "${SLIST[@]}"; do SB+=("$(numfmt --from=iec "$s")") || die "bad --sizes $SIZES"; done
[[ $RUNS =~ ^[1-9][0-9]*$ ]] || die "bad --runs"
META_ARGS=(); [ -n "$BLOCK" ] && { META_ARGS=(--block-size "$(numfmt --from=iec "$BLOCK")") || die "bad --block-size"; }
[ "$(id -u)" = 0 ] || die "run as root (FUSE mounts, drop_caches)"

W="" ; trap lib_cleanup EXIT; trap 'log interrupted; exit 130' INT TERM HUP
log "building tessera and bench helpers"; build_bins
( cd "$REPO" && go build -o "$OUTBASE/bin/" ./bench/cmd/capfsops ) || die "cannot build bench/cmd/capfsops"
OPS=$OUTBASE/bin/capfsops
for p in "${PLIST[@]}"; do "$TESSERA" policy list | awk -v p="$p" '$1==p {f=1} END {exit !f}' || die "unknown preset $p (tessera policy list)"; done
TS=$(date +%Y%m%d-%H%M%S); OUT=$OUTBASE/capfs-$TS; mkdir -p "$OUT/logs"
W=$(mktemp -d "$WORKBASE/tessera-capfs.XXXXXX") || die "cannot make work dir"
UP0=$(uptime); T_START=$(date +%s)
"$TESSERA" policy list > "$OUT/policies.txt"

cpu_busy() { awk '/^cpu /{t=0; for(i=2;i<=NF;i++) t+=$i; print t-$5-$6, t; exit}' /proc/stat; }
busy_pct() { awk -v a="$1" -v b="$2" 'BEGIN{split(a,x," "); split(b,y," "); if (y[2]>x[2]) printf "%.0f", 100*(y[1]-x[1])/(y[2]-x[2]); else print "nan"}'; }
# blockd_io PID...: "rchar wchar" summed (bytes the block servers read and wrote: sockets and block files)
blockd_io() { local p; for p in "$@"; do cat "/proc/$p/io" 2>/dev/null; done | awk '$1=="rchar:"{r+=$2} $1=="wchar:"{w+=$2} END{printf "%.0f %.0f", r, w}'; }
mib_delta() { awk -v a="$1" -v b="$2" -v i="$3" 'BEGIN{split(a,x," "); split(b,y," "); printf "%.0f", (y[i]-x[i])/1048576}'; }
kv() { tr ' ' '\n' <<< "$2" | awk -F= -v k="$1" '$1==k {print $2; exit}'; } # kv KEY LINE

META="" METAPID="" ; declare -a BPIDS=() MPIDS=()
# cluster_start TAG: tessera meta + 4 blockd on 127.0.0.1 (ports chosen by the kernel), data in $W/TAG.
cluster_start() {
  local tag=$1 d=$W/$1 i
  mkdir -p "$d"
  tls_init "$d/pki" || return 1
  start_bg "$OUT/logs/$tag-meta.log" srv "$TESSERA" meta --data "$d/meta" --listen 127.0.0.1:0 --replicas "$REPLICAS" "${META_ARGS[@]}" $(tls_args meta)
  METAPID=$LASTPID
  wait_ready "$METAPID" "$OUT/logs/$tag-meta.log" 'meta: ready' 30 || return 1
  META=$(grep -m1 -o 'listen=[^ ]*' "$OUT/logs/$tag-meta.log" | cut -d= -f2)
  BPIDS=()
  for ((i=0; i<4; i++)); do
    # --host hI: not this machine's name, so mounts fetch blocks over TCP (no co-located file reads)
    tls_issue "b$i" blockd 127.0.0.1 || return 1
    start_bg "$OUT/logs/$tag-blockd$i.log" srv "$TESSERA" blockd --data "$d/b$i" --meta "$META" --id "b$i" \
      --listen 127.0.0.1:0 --host "h$i" $(tls_args "b$i")
    BPIDS+=("$LASTPID")
  done
  for ((i=0; i<4; i++)); do wait_ready "${BPIDS[$i]}" "$OUT/logs/$tag-blockd$i.log" 'blockd: ready' 30 || return 1; done
}
# mounts_start TAG PRESET N: N mounts $W/mnt0.. with --policy PRESET; sets MPIDS and MNTS.
mounts_start() {
  local tag=$1 p=$2 n=$3 i
  MPIDS=(); MNTS=""
  for ((i=0; i<n; i++)); do
    start_mount "$OUT/logs/$tag-mount$i.log" "$W/mnt$i" --meta "$META" --policy "$p" || return 1
    MPIDS+=("$LASTPID"); MNTS+="${MNTS:+,}$W/mnt$i"
  done
}
# mounts_stop TAG: stop them (SIGTERM unmounts) and sum their "mount: stats" lines into STATS.
mounts_stop() {
  local tag=$1 p f k
  for p in "${MPIDS[@]}"; do stop_mount "$p"; done
  PIDS_MOUNT=(); MPIDS=()
  STATS=$(for f in "$OUT/logs/$tag"-mount*.log; do grep -h 'mount: stats' "$f" | tail -n 1; done |
    awk '{ for (i=1;i<=NF;i++) { split($i,a,"="); if (a[1] ~ /^(commits|conflicts|redo_retries|commits_failed|callbacks)$/) s[a[1]]+=a[2] } n++ }
         END { printf "commits=%d conflicts=%d redo_retries=%d commits_failed=%d callbacks=%d stat_lines=%d", s["commits"], s["conflicts"], s["redo_retries"], s["commits_failed"], s["callbacks"], n }')
}
cluster_stop() { stop_all_mounts; stop_all_servers; BPIDS=(); METAPID=""; }

ROWS=$OUT/rows.tsv CROWS=$OUT/contend.tsv PHASES=$OUT/phases.tsv
printf 'run\tpreset\tclients\tlayout\top\tbs\tMiB_s\tops\tsecs\tcapped\terrors\tbad_reqs\tholes\tmount_cpu_s\tmeta_cpu_s\tblockd_cpu_s\tmachine_busy_pct\tblockd_rchar_MiB\tblockd_wchar_MiB\n' > "$ROWS"
printf 'run\tpreset\tclients\tphase\tcommits\tconflicts\tredo_retries\tcommits_failed\tcallbacks\n' > "$PHASES"
printf 'run\tpreset\tclients\tbs\tops\tops_s\tsecs\terrors\tcommits\tconflicts\tredo_retries\tcommits_failed\tretries_s\tconflicts_s\tmount_cpu_s\tmeta_cpu_s\tblockd_cpu_s\tmachine_busy_pct\n' > "$CROWS"

# measure RUN PRESET N OP LAYOUT BS: one capfsops transfer on the running mounts; appends to ROWS.
measure() {
  local run=$1 p=$2 n=$3 op=$4 lay=$5 bs=$6 line c0 m0 b0 s0 c1 m1 b1 s1 io0 io1
  c0=$(cpu_sum "${MPIDS[@]}"); m0=$(cpu_of "$METAPID"); b0=$(cpu_sum "${BPIDS[@]}"); s0=$(cpu_busy); io0=$(blockd_io "${BPIDS[@]}")
  line=$(timeout -k 10 $((TMO * 4 + 60)) "$OPS" "$op" -mnts "$MNTS" -dir "g" -layout "$lay" -bs "$bs" -size "$SIZE_B" \
    -timeout "${TMO}s" -seed "$run" 2>>"$OUT/logs/capfsops.err") || { log "capfsops $op $lay bs=$bs failed: $(tail -n 1 "$OUT/logs/capfsops.err")"; line=""; }
  c1=$(cpu_sum "${MPIDS[@]}"); m1=$(cpu_of "$METAPID"); b1=$(cpu_sum "${BPIDS[@]}"); s1=$(cpu_busy); io1=$(blockd_io "${BPIDS[@]}")
  echo "$p n=$n $line" >> "$OUT/logs/capfsops.out"
  local mibs=nan ops=nan secs=nan capped=nan errs=nan bad=nan holes=nan
  if [ -n "$line" ]; then
    mibs=$(kv MiB_per_s "$line") ops=$(kv ops "$line") secs=$(kv secs "$line") capped=$(kv capped "$line") errs=$(kv errors "$line") bad=$(kv bad_reqs "$line") holes=$(kv holes "$line")
    [ "$errs" != 0 ] && log "  errors: $(kv first_error "$line")"
  fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$run" "$p" "$n" "$lay" "$op" "$bs" "$mibs" "$ops" "$secs" "$capped" "$errs" "$bad" "$holes" \
    "$(fsub "$c1" "$c0")" "$(fsub "$m1" "$m0")" "$(fsub "$b1" "$b0")" "$(busy_pct "$s0" "$s1")" "$(mib_delta "$io0" "$io1" 1)" "$(mib_delta "$io0" "$io1" 2)" >> "$ROWS"
  log "  $p N=$n $op $lay bs=$bs: $mibs MiB/s in $secs s (capped=$capped errors=$errs bad_reqs=$bad holes=$holes) cpu mount/meta/blockd $(fsub "$c1" "$c0")/$(fsub "$m1" "$m0")/$(fsub "$b1" "$b0") s"
}

# group RUN PRESET N: fresh cluster; writes (all layouts, sizes) on N mounts; fresh mounts,
# caches dropped, reads; fresh mounts, contention. Commit counters per phase from the mounts' logs.
group() {
  local run=$1 p=$2 n=$3 tag="r$1-$2-n$3" lay bs first
  cluster_start "$tag" || return 1
  mounts_start "$tag-w" "$p" "$n" || return 1
  mkdir -p "$W/mnt0/g" && "$TESSERA" policy set "$W/mnt0/g" "$p" || { log "cannot make $W/mnt0/g with policy $p"; return 1; }
  "$TESSERA" policy get "$W/mnt0/g" >> "$OUT/logs/$tag-policy.txt" 2>&1
  # after each write (untimed): tessera gc --grace 0s removes the blocks superseded by later commits
  # (a commit of part of a 4 MiB block writes a whole new one: commit-per-write presets leave GiBs)
  for lay in separate shared; do for bs in "${SB[@]}"; do
    measure "$run" "$p" "$n" write "$lay" "$bs"
    printf '%s N=%s %s bs=%s: %s\n' "$p" "$n" "$lay" "$bs" "$("$TESSERA" gc --meta "$META" --grace 0s $(tls_args admin) 2>&1 | tail -n 1)" >> "$OUT/logs/gc.log"
  done; done
  mounts_stop "$tag-w"; note_phase "$run" "$p" "$n" write
  drop_caches
  mounts_start "$tag-r" "$p" "$n" || return 1
  for lay in separate shared; do for bs in "${SB[@]}"; do measure "$run" "$p" "$n" read "$lay" "$bs"; done; done
  mounts_stop "$tag-r"; note_phase "$run" "$p" "$n" read

  mounts_start "$tag-c" "$p" "$n" || return 1
  local line c0 m0 b0 s0 c1 m1 b1 s1
  c0=$(cpu_sum "${MPIDS[@]}"); m0=$(cpu_of "$METAPID"); b0=$(cpu_sum "${BPIDS[@]}"); s0=$(cpu_busy)
  line=$(timeout -k 10 $((CTIME * 4 + 60)) "$OPS" contend -mnts "$MNTS" -dir g -bs "$CBS_B" -time "${CTIME}s" 2>>"$OUT/logs/capfsops.err") || line=""
  c1=$(cpu_sum "${MPIDS[@]}"); m1=$(cpu_of "$METAPID"); b1=$(cpu_sum "${BPIDS[@]}"); s1=$(cpu_busy)
  mounts_stop "$tag-c"; note_phase "$run" "$p" "$n" contend
  echo "$p n=$n $line $STATS" >> "$OUT/logs/capfsops.out"
  local secs ops retr conf
  secs=$(kv secs "$line"); ops=$(kv ops "$line"); retr=$(kv redo_retries "$STATS"); conf=$(kv conflicts "$STATS")
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$run" "$p" "$n" "$CBS_B" "${ops:-nan}" "$(kv ops_per_s "$line")" "${secs:-nan}" "$(kv errors "$line")" \
    "$(kv commits "$STATS")" "$conf" "$retr" "$(kv commits_failed "$STATS")" "$(fdiv "$retr" "$secs" %.1f)" "$(fdiv "$conf" "$secs" %.1f)" \
    "$(fsub "$c1" "$c0")" "$(fsub "$m1" "$m0")" "$(fsub "$b1" "$b0")" "$(busy_pct "$s0" "$s1")" >> "$CROWS"
  log "  $p N=$n contend: $(kv ops_per_s "$line") ops/s, $STATS over ${secs}s"
  cluster_stop
  [ "$KEEP" = 1 ] || rm -rf "${W:?}/$tag"
}
# note_phase RUN PRESET N PHASE: the mounts' commit counters of one phase (summed over its mounts).
note_phase() {
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$@" "$(kv commits "$STATS")" "$(kv conflicts "$STATS")" "$(kv redo_retries "$STATS")" \
    "$(kv commits_failed "$STATS")" "$(kv callbacks "$STATS")" >> "$PHASES"
}

{
  printf 'date\t%s\ncommand\tbench/capfs.sh %s\n' "$(date -Is)" "$ARGS"
  printf 'host\t%s cores, %s MiB RAM, kernel %s\n' "$(nproc)" "$(awk '/MemTotal/{print int($2/1024)}' /proc/meminfo)" "$(uname -r)"
  printf 'load at start\t%s\n' "$UP0"
  printf 'setup\ttessera meta --replicas %s %s+ 4 tessera blockd (--host h0..h3: blocks go over loopback TCP) + N tessera mount --policy P, every role its own process, all on 127.0.0.1; data under %s (%s); a fresh cluster per (preset, N)\n' \
    "$REPLICAS" "${META_ARGS[*]:+${META_ARGS[*]} }" "$WORKBASE" "$(findmnt -n -o FSTYPE -T "$W" | head -n 1)"
  printf 'workload\tcapfsops: %s bytes per measurement over all clients, request sizes %s, per-client cap %s s; writes (fsync+close timed) on one set of mounts, then caches dropped and reads on fresh mounts; contention: %s s of pwrite %s + fsync per client at offset i*%s of one file\n' \
    "$SIZE_B" "$SIZES" "$TMO" "$CTIME" "$CBS" "$CBS"
  printf 'presets\t(tessera policy list)\n'; "$TESSERA" policy list | sed 's/^/    /'
} > "$OUT/meta.txt"

for ((run=1; run<=RUNS; run++)); do
  for p in "${PLIST[@]}"; do
    for n in "${NLIST[@]}"; do
      log "run $run/$RUNS preset=$p clients=$n ($(cut -d' ' -f1-3 /proc/loadavg) load)"
      group "$run" "$p" "$n" || { log "run $run $p N=$n failed (see $OUT/logs)"; cluster_stop; }
    done
  done
done

# ---------------------------------------------------------------- report
{
  sed 's/\t/: /' "$OUT/meta.txt"
  printf 'load at end: %s\nwall: %s s\n\n' "$(uptime)" "$(( $(date +%s) - T_START ))"
  "$OPS" report -rows "$ROWS" -contend "$CROWS" -policies "$OUT/policies.txt" -base relaxed
  echo
  echo "Every measurement (rows.tsv; cpu = CPU-seconds of the mounts, meta, blockds during it):"
  column -t -s $'\t' "$ROWS"
  echo; echo "Commit counters of the mounts per phase (phases.tsv; summed over the phase's N mounts, from their 'mount: stats' line at unmount):"
  column -t -s $'\t' "$PHASES"
  echo
  column -t -s $'\t' "$CROWS"
} | tee "$OUT/report.txt"
cp "$OUT/report.txt" "$OUTBASE/capfs-$TS.txt"
echo "Results: $OUTBASE/capfs-$TS.txt, $OUT/ (rows.tsv, contend.tsv, logs)"
