#!/usr/bin/env bash
# bench/gateway.sh - Panache Table 1 / Figures 5-9 on this machine (issue 14): a caching fileset
# over an s3:// home (versitygw on 127.0.0.1) behind an emulated WAN link (bench/cmd/wanlink:
# internal/wan, 30 ms RTT, 200 Mbit/s by default), measured against the link itself, a plain
# Tessera directory and `rclone mount --vfs-cache-mode full` of the same home through the same link.
# The N gateways run inside `tessera up --gateways N` (targets gwN), or with --gateway-procs as N
# `tessera gateway` processes beside a `tessera up` without in-process gateways (targets gpN).
#
#   bench/gateway.sh [--quick] [--runs 3] [--gateways 1,2,3] [--gateway-procs] [--files 16] [--file-mib 16]
#                    [--large-mib 256] [--readers 4] [--creates 2000] [--writes 64] [--write-kib 1024]
#                    [--rtt 30ms] [--rate 200Mbit] [--flow-rate 0] [--validity-lag D] [--no-rclone] [--reads-only]
#                    [--home-keep-alive] [--workdir /var/tmp] [--keep]
#   bench/gateway.sh --summary bench/out/gateway-TS/samples.tsv
#
# Needs root (FUSE, drop_caches). Installs rclone (apt) when missing; versitygw comes from
# scripts/deps.sh --test. --reads-only skips the creates, writes and drain (reads and their ratios
# only); --home-keep-alive starts versitygw with --keep-alive (by default it closes every connection
# after one request, as its default is). Everything started is stopped by PID on exit (trap). See
# bench/README.md.
set -uo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$REPO/bench/lib.sh"

RUNS=3 GWS=1,2,3 NFILES=16 FILE_MIB=16 LARGE_MIB=256 READERS=4 CREATES=2000 WRITES=64 WRITE_KIB=1024
RTT=30ms RATE=200Mbit FLOW=0 VLAG="" RCLONE=1 WORKDIR=/var/tmp KEEP=0 PROCS=0 READS_ONLY=0 VGW_KA=()
usage() { sed -n '2,19p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }

# summary SAMPLES.TSV: median (min..max) per kind and target, then the issue's ratios of medians.
# Columns: kind target run value unit secs link_bytes cpu_s
summary() {
  local med='function med(s,  a,n,i,j,t) { n=split(s,a," "); if (!n) { lo=hi="nan"; return "nan" }
      for(i=1;i<=n;i++) for(j=i+1;j<=n;j++) if (a[j]+0<a[i]+0) { t=a[i]; a[i]=a[j]; a[j]=t }
      lo=a[1]; hi=a[n]; return (n%2) ? a[(n+1)/2] : (a[n/2]+a[n/2+1])/2 }'
  local rows='/^# / && match($0, /cap_mib_s [0-9.]+/) { cap=substr($0, RSTART+10, RLENGTH-10) }
      !/^#/ && NF>=5 { k=$1"\t"$2; v[k]=v[k]" "$4; u[k]=$5; c[k]=c[k]" "$8; key[k]=1 }'
  printf "%-14s %-12s %-28s %-8s %s\n" kind target "median (min..max)" unit "cpu_s median"
  awk -F'\t' "$med $rows"' END { for (k in key) { split(k, p, "\t"); m=med(v[k]); l=lo; h=hi; cm=med(c[k])
      printf "%-14s %-12s %-28s %-8s %s\n", p[1], p[2], sprintf("%.1f (%.1f..%.1f)", m, l, h), u[k], cm } }' "$1" | sort -k1,1 -k2,2
  printf "\nratios of medians (target)\n"
  awk -F'\t' "$med $rows"' END {
      for (k in key) { split(k, p, "\t"); M[k]=med(v[k]) }
      for (k in key) { split(k, p, "\t"); t=p[2]; if (t !~ /^g[wp][0-9]+$/) continue
        if (p[1]=="cold-files" && M["link-files\tdirect"]>0) printf "  cold read, files, %s / link (S3 GETs through it): %.2f (>= 0.9); / the cap: %.2f\n", t, M[k]/M["link-files\tdirect"], M[k]/cap
        if (p[1]=="cold-large" && M["link-large\tdirect"]>0) printf "  cold read, large, %s / link (one S3 GET through it): %.2f (>= 0.9); / the cap: %.2f\n", t, M[k]/M["link-large\tdirect"], M[k]/cap
        if (p[1]=="cold-files" && M["cold-files\trclone"]>0) printf "  cold read, files, %s / rclone mount: %.2f (>= 2)\n", t, M[k]/M["cold-files\trclone"]
        if (p[1]=="cold-large" && M["cold-large\trclone"]>0) printf "  cold read, large, %s / rclone mount: %.2f (>= 2)\n", t, M[k]/M["cold-large\trclone"]
        if (p[1]=="warm-files" && M["plain-files\t"t]>0) printf "  warm read, files, %s / plain Tessera: %.2f (>= 0.9)\n", t, M[k]/M["plain-files\t"t]
        if (p[1]=="warm-large" && M["plain-large\t"t]>0) printf "  warm read, large, %s / plain Tessera: %.2f (>= 0.9)\n", t, M[k]/M["plain-large\t"t]
        if (p[1]=="create-fs" && M["create-plain\t"t]>0) printf "  creates, sw fileset / plain dir, %s: %.2f (>= 0.8)\n", t, M[k]/M["create-plain\t"t]
        if (p[1]=="write-fs" && M["write-plain\t"t]>0) printf "  writes, sw fileset / plain dir, %s: %.2f (>= 0.8)\n", t, M[k]/M["write-plain\t"t]
        if (p[1]=="drain-bytes") printf "  drain to home, %s: %.1f MiB/s, %.1f ops/s\n", t, M[k], M["drain-ops\t"t]
      } }' "$1" | sort
}

while [ $# -gt 0 ]; do
  case $1 in
    --runs) RUNS=$2; shift 2 ;;
    --gateways) GWS=$2; shift 2 ;;
    --gateway-procs) PROCS=1; shift ;;
    --files) NFILES=$2; shift 2 ;;
    --file-mib) FILE_MIB=$2; shift 2 ;;
    --large-mib) LARGE_MIB=$2; shift 2 ;;
    --readers) READERS=$2; shift 2 ;;
    --creates) CREATES=$2; shift 2 ;;
    --writes) WRITES=$2; shift 2 ;;
    --write-kib) WRITE_KIB=$2; shift 2 ;;
    --rtt) RTT=$2; shift 2 ;;
    --rate) RATE=$2; shift 2 ;;
    --flow-rate) FLOW=$2; shift 2 ;;
    --validity-lag) VLAG=$2; shift 2 ;;
    --no-rclone) RCLONE=0; shift ;;
    --reads-only) READS_ONLY=1; shift ;;
    --home-keep-alive) VGW_KA=(--keep-alive); shift ;;
    --workdir) WORKDIR=$2; shift 2 ;;
    --keep) KEEP=1; shift ;;
    --quick) RUNS=1 NFILES=4 FILE_MIB=8 LARGE_MIB=32 CREATES=400 WRITES=16; shift ;;
    --summary) summary "$2"; exit ;;
    -h|--help) usage 0 ;;
    *) echo "gateway.sh: unknown argument: $1" >&2; usage 2 ;;
  esac
done
[ "$(id -u)" = 0 ] || die "run as root (FUSE mounts, drop_caches)"
VGW=$(command -v versitygw || echo "$(go env GOPATH)/bin/versitygw")
[ -x "$VGW" ] || die "versitygw missing: scripts/deps.sh --test installs it"
[ "$RCLONE" = 0 ] || need_root_apt rclone rclone || die "rclone missing and apt-get install rclone failed (--no-rclone skips it)"

TS=$(date +%Y%m%d-%H%M%S)
OUT=$OUTBASE/gateway-$TS
W=$WORKDIR/tessera-gwbench.$$
mkdir -p "$OUT/bin" "$W" || die "cannot make $OUT and $W"
SAMPLES=$OUT/samples.tsv
declare -a PIDS_RC=()   # rclone mounts running now: pid, mount point in MOUNT_OF
declare -a PIDS_GW=()   # `tessera gateway` processes (--gateway-procs), stopped before their ups
cleanup() {
  local p
  for p in "${PIDS_RC[@]}"; do stop_mount "$p"; done
  for p in "${PIDS_GW[@]}"; do stop_pid "$p"; done
  lib_cleanup
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log "building tessera, wanlink, metaops, benchreport into $OUT/bin"
(cd "$REPO" && go build -o "$OUT/bin/" ./cmd/tessera ./bench/cmd/wanlink ./bench/cmd/metaops ./bench/cmd/benchreport) \
  || die "build failed"
TESSERA=$OUT/bin/tessera BR=$OUT/bin/benchreport

# ---------------------------------------------------------------- home and link
log "home data: $NFILES x $FILE_MIB MiB + one $LARGE_MIB MiB file (random bytes)"
HOMEDIR=$W/s3/bkt/pre
mkdir -p "$HOMEDIR/files" || die "mkdir $HOMEDIR"
for ((i=0; i<NFILES; i++)); do head -c "$((FILE_MIB<<20))" /dev/urandom > "$HOMEDIR/files/f$(printf %03d "$i")"; done
head -c "$((LARGE_MIB<<20))" /dev/urandom > "$HOMEDIR/large.dat"
FILES_BYTES=$((NFILES*FILE_MIB<<20)) LARGE_BYTES=$((LARGE_MIB<<20))

free_port() { local p; for _ in $(seq 50); do p=$((20000 + RANDOM % 20000)); ss -ltn "sport = :$p" | grep -q LISTEN || { echo "$p"; return; }; done; return 1; }
S3PORT=$(free_port) || die "no free port"
ACCESS=gwbench SECRET=gwbench-secret-$$
echo "$ACCESS $SECRET" > "$W/s3key"; chmod 600 "$W/s3key"
start_bg "$OUT/versitygw.log" srv "$VGW" --port "127.0.0.1:$S3PORT" --access "$ACCESS" --secret "$SECRET" --quiet "${VGW_KA[@]}" posix "$W/s3"
VGW_PID=$LASTPID
for _ in $(seq 300); do ss -ltn "sport = :$S3PORT" | grep -q LISTEN && break; alive "$VGW_PID" || break; sleep 0.1; done
ss -ltn "sport = :$S3PORT" | grep -q LISTEN || die "versitygw did not listen on 127.0.0.1:$S3PORT: $(tail -n 3 "$OUT/versitygw.log")"

LINKSTATS=$OUT/link.stats
start_bg "$OUT/wanlink.log" srv "$OUT/bin/wanlink" -upstream "127.0.0.1:$S3PORT" -rtt "$RTT" -rate "$RATE" -flow-rate "$FLOW" \
  -addr-file "$OUT/link.addr" -stats-file "$LINKSTATS" -stats-interval 200ms
LINK_PID=$LASTPID
wait_ready "$LINK_PID" "$OUT/wanlink.log" 'wanlink: listening' 20 || die "wanlink did not start"
LINK=$(cat "$OUT/link.addr")
log "versitygw 127.0.0.1:$S3PORT${VGW_KA:+ (keep-alive)} behind the link $LINK ($RTT RTT, $RATE, $FLOW per connection)"
# link_bytes: bytes that crossed the link (both ways) so far; fresh numbers on demand (SIGUSR1).
link_bytes() { kill -USR1 "$LINK_PID"; sleep 0.05; awk '{printf "%.0f\n", $1+$2}' "$LINKSTATS"; }

home_url() { echo "s3://bkt/$1?endpoint=http://$LINK&region=us-east-1&access_key_file=$W/s3key"; }
export RCLONE_CONFIG_HOME_TYPE=s3 RCLONE_CONFIG_HOME_PROVIDER=Other RCLONE_CONFIG_HOME_ENDPOINT="http://$LINK" \
  RCLONE_CONFIG_HOME_ACCESS_KEY_ID=$ACCESS RCLONE_CONFIG_HOME_SECRET_ACCESS_KEY=$SECRET RCLONE_CONFIG_HOME_REGION=us-east-1 \
  RCLONE_CONFIG_HOME_FORCE_PATH_STYLE=true
# Debian's rclone 1.60 fails on any AWS_CA_BUNDLE in the environment ("LoadCustomCABundleError");
# the home is plain HTTP on loopback, so rclone runs without it.
RCLONE_BIN=(env -u AWS_CA_BUNDLE rclone)

# ---------------------------------------------------------------- measurement helpers
{ echo "# $(date -u +%FT%TZ) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); gateways $GWS $([ "$PROCS" = 1 ] && echo as processes || echo in tessera up); rtt $RTT rate $RATE flow_rate $FLOW; files $NFILES x $FILE_MIB MiB, large $LARGE_MIB MiB, readers $READERS; cap_mib_s $(awk -v b="$("$OUT/bin/wanlink" -print-rate "$RATE")" 'BEGIN{printf "%.2f", b/8/1048576}')"
  printf '# kind\ttarget\trun\tvalue\tunit\tsecs\tlink_bytes\tcpu_s\tload1\n'; } > "$SAMPLES"
# sample KIND TARGET RUN VALUE UNIT SECS LINKBYTES CPU
sample() {
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$@" "$(cut -d' ' -f1 /proc/loadavg)" >> "$SAMPLES"
  log "$(printf '%-12s %-8s r%s %8s %-6s (%ss, link %s B, cpu %ss)' "$@")"
}
# timed CMD...: runs CMD, sets SECS (wall, in ms steps: a warm read of the large file takes about
# 0.2 s, and lib.sh's fsub rounds to 10 ms) and fails when CMD does.
timed() { local t0 rc; t0=$(now); "$@"; rc=$?; SECS=$(awk -v a="$(now)" -v b="$t0" 'BEGIN { printf "%.3f", a-b }'); return $rc; }
# read_files DIR: the files of DIR/files, READERS at a time, then nothing else.
read_files() { ls "$1/files" >/dev/null && find "$1/files" -type f -print0 | xargs -0 -P "$READERS" -n 1 cat > /dev/null; }
read_large() { cat "$1/large.dat" > /dev/null; }
# measure_read KIND TARGET RUN "PIDS" FN DIR BYTES: drop caches, time FN DIR, one MiB/s sample
# (cpu_s: the CPU seconds of PIDS, a space-separated list, together).
measure_read() {
  local kind=$1 target=$2 run=$3 pid=$4 fn=$5 dir=$6 bytes=$7 b0 c0
  drop_caches
  # shellcheck disable=SC2086 # $pid is a list of PIDs
  b0=$(link_bytes) c0=$(cpu_sum $pid)
  if ! timed "$fn" "$dir"; then sample "$kind" "$target" "$run" nan MiB/s "$SECS" 0 nan; log "ERROR: $kind $target failed"; return 1; fi
  sample "$kind" "$target" "$run" "$(fdiv "$bytes" "$(awk -v s="$SECS" 'BEGIN{print s*1048576}')" %.1f)" MiB/s "$SECS" \
    "$(( $(link_bytes) - b0 ))" "$(fsub "$(cpu_sum $pid)" "$c0")"
}
# write_files DIR: WRITES files of WRITE_KIB KiB, 4 at a time, each fsynced (dd conv=fsync).
write_files() {
  mkdir -p "$1" && seq -f "%04g" 1 "$WRITES" | xargs -P 4 -I{} dd if="$W/wsrc" of="$1/w{}" bs=64k conv=fsync status=none
}

# ---------------------------------------------------------------- Tessera instances
declare -A UP_PID=() GW_PIDS=()   # per N: the up, and (--gateway-procs) its gateway processes
IFS=, read -r -a GWLIST <<< "$GWS"
TP=gw; [ "$PROCS" = 1 ] && TP=gp
# start_gateways N: N `tessera gateway` processes registered with up N's meta service, each with a
# certificate of role gateway issued by that up's CA (DATA/tls), as test/cluster's StartGateway.
start_gateways() {
  local n=$1 meta k id tls=$W/up$1/tls
  meta=$(sed -n 's/^tessera up: ready .*meta=\([^ ]*\).*/\1/p' "$OUT/up$n.log" | head -n 1)
  [ -n "$meta" ] || die "no meta= in the ready line of tessera up $n: $(grep 'ready' "$OUT/up$n.log")"
  for ((k=1; k<=n; k++)); do
    id=gw$n-$k
    "$TESSERA" certs issue "$id" --role gateway --host 127.0.0.1 --dir "$tls" >>"$OUT/certs.log" 2>&1 \
      || die "certs issue $id: $(tail -n 2 "$OUT/certs.log")"
    start_bg "$OUT/gateway-$id.log" srv "$TESSERA" gateway --meta "$meta" --id "$id" --listen 127.0.0.1:0 \
      --tls-cert "$tls/$id.crt" --tls-key "$tls/$id.key" --tls-ca "$tls/ca.crt"
    PIDS_GW+=("$LASTPID") GW_PIDS[$n]="${GW_PIDS[$n]:-} $LASTPID"
    wait_ready "$LASTPID" "$OUT/gateway-$id.log" 'tessera gateway: ready' 60 || die "tessera gateway $id did not start"
  done
  log "tessera up $n: $n gateway processes, pids${GW_PIDS[$n]}, meta $meta"
}
for n in "${GWLIST[@]}"; do
  mkdir -p "$W/up$n" "$W/mnt$n"
  if [ "$PROCS" = 1 ]; then
    start_bg "$OUT/up$n.log" mount "$TESSERA" up --data "$W/up$n" --mount "$W/mnt$n" --gateways 0
  else
    start_bg "$OUT/up$n.log" mount "$TESSERA" up --data "$W/up$n" --mount "$W/mnt$n" --gateways "$n"
  fi
  UP_PID[$n]=$LASTPID MOUNT_OF[$LASTPID]=$W/mnt$n
  wait_ready "$LASTPID" "$OUT/up$n.log" 'tessera up: ready' 90 || die "tessera up ($TP$n) did not start"
  [ "$PROCS" = 1 ] && start_gateways "$n"
  # The plain (non-fileset) copy of the same data, for the warm-read ratio; untimed.
  cp -r "$HOMEDIR" "$W/mnt$n/plain" || die "copy into $W/mnt$n/plain"
  log "tessera up ($TP$n): pid ${UP_PID[$n]}, mount $W/mnt$n"
done
head -c "$((WRITE_KIB<<10))" /dev/urandom > "$W/wsrc"

# rclone_mount RUN: `rclone mount --vfs-cache-mode full` of the home through the link, fresh cache.
rclone_mount() {
  local m=$W/rc.r$1
  mkdir -p "$m" "$W/rccache.r$1"
  start_bg "$OUT/rclone.r$1.log" mount "${RCLONE_BIN[@]}" mount home:bkt/pre "$m" --vfs-cache-mode full \
    --cache-dir "$W/rccache.r$1" --dir-cache-time 1h --log-level NOTICE
  RC_PID=$LASTPID MOUNT_OF[$LASTPID]=$m PIDS_RC+=("$LASTPID")
  local k; for k in $(seq 300); do fuse_mounted "$m" && return 0; alive "$RC_PID" || break; sleep 0.1; done
  log "rclone mount did not come up: $(tail -n 3 "$OUT/rclone.r$1.log")"; return 1
}
# The link's own rate: plain S3 GETs (curl, SigV4) of the same objects through it, READERS at a time.
s3_get() { local u; for u in "$@"; do curl -sS -f --aws-sigv4 aws:amz:us-east-1:s3 --user "$ACCESS:$SECRET" \
  -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' -o /dev/null "http://$LINK/bkt/pre/$u" || return 1; done; }
export -f s3_get; export ACCESS SECRET LINK
get_files() { find "$HOMEDIR/files" -type f -printf 'files/%f\n' | xargs -P "$READERS" -n 1 bash -c 's3_get "$0"'; }
get_large() { s3_get large.dat; }
# time_flush FS: `tessera fileset flush`, quiet.
flush_fs() { "$TESSERA" fileset flush "$1" > "$OUT/flush.out" 2>&1; }

# ---------------------------------------------------------------- rounds
log "$RUNS runs; gateways $GWS; the order of the instances rotates per run"
for ((r=1; r<=RUNS; r++)); do
  measure_read link-files direct "$r" "$LINK_PID" get_files "" "$FILES_BYTES"
  measure_read link-large direct "$r" "$LINK_PID" get_large "" "$LARGE_BYTES"
  if [ "$RCLONE" = 1 ]; then
    if rclone_mount "$r"; then
      measure_read cold-files rclone "$r" "$RC_PID" read_files "$W/rc.r$r" "$FILES_BYTES"
      measure_read cold-large rclone "$r" "$RC_PID" read_large "$W/rc.r$r" "$LARGE_BYTES"
      stop_mount "$RC_PID"; PIDS_RC=(); rm -rf "$W/rccache.r$r"
    fi
  fi
  k=$(( (r-1) % ${#GWLIST[@]} ))
  for n in "${GWLIST[@]:k}" "${GWLIST[@]:0:k}"; do
    t=$TP$n p="${UP_PID[$n]}${GW_PIDS[$n]:-}" m=$W/mnt$n
    for q in $p; do alive "$q" || die "a process of $t (pid $q of $p) died: $(tail -n 5 "$OUT/up$n.log")"; done
    # Cold: a fresh read-only fileset of the same home prefix caches nothing yet.
    fs=$m/cold.r$r
    "$TESSERA" fileset create "$fs" --home "$(home_url pre)" --mode ro ${VLAG:+--validity-lag "$VLAG"} >>"$OUT/fileset.log" 2>&1 || die "fileset create $fs: $(tail -n 2 "$OUT/fileset.log")"
    # Warm: the second read of what the cold read fetched, against a plain directory's copy read
    # just before for the second time too (the first read untimed), so that both find the same
    # client caches; kernel caches are dropped before every timed read.
    for w in files large; do
      bytes=$FILES_BYTES; [ $w = large ] && bytes=$LARGE_BYTES
      measure_read "cold-$w" "$t" "$r" "$p" "read_$w" "$fs" "$bytes"
      measure_read "warm-$w" "$t" "$r" "$p" "read_$w" "$fs" "$bytes"
      drop_caches; "read_$w" "$m/plain"
      measure_read "plain-$w" "$t" "$r" "$p" "read_$w" "$m/plain" "$bytes"
    done
    [ "$READS_ONLY" = 1 ] && continue
    # Updates: an sw fileset (sync lag an hour: nothing drains while measured) against a plain dir.
    fs=$m/wb.r$r
    "$TESSERA" fileset create "$fs" --home "$(home_url "wb-$n-$r")" --mode sw --sync-lag 1h >>"$OUT/fileset.log" 2>&1 || die "fileset create $fs"
    for d in "$fs" "$m/plainw.r$r"; do
      [ "$d" = "$fs" ] && kind=fs || kind=plain
      mkdir -p "$d"
      # shellcheck disable=SC2086 # $p is a list of PIDs
      drop_caches; c0=$(cpu_sum $p)
      "$OUT/bin/metaops" -dir "$d/meta" -n "$CREATES" -threads 4 -unique-dir -drop-caches > "$OUT/metaops-$kind-$t-r$r.txt" 2>&1 \
        || log "ERROR: metaops in $d: $(tail -n 2 "$OUT/metaops-$kind-$t-r$r.txt")"
      v=$(awk '/phase=create/ { for (i=1;i<=NF;i++) if ($i ~ /^ops_per_s=/) { sub("ops_per_s=","",$i); print $i } }' "$OUT/metaops-$kind-$t-r$r.txt")
      s=$(awk '/phase=create/ { for (i=1;i<=NF;i++) if ($i ~ /^secs=/) { sub("secs=","",$i); print $i } }' "$OUT/metaops-$kind-$t-r$r.txt")
      sample "create-$kind" "$t" "$r" "${v:-nan}" ops/s "${s:-nan}" 0 "$(fsub "$(cpu_sum $p)" "$c0")"
      drop_caches; c0=$(cpu_sum $p)
      if timed write_files "$d/w"; then
        sample "write-$kind" "$t" "$r" "$(fdiv "$((WRITES*WRITE_KIB))" "$(awk -v s="$SECS" 'BEGIN{print s*1024}')" %.1f)" MiB/s "$SECS" 0 "$(fsub "$(cpu_sum $p)" "$c0")"
      else sample "write-$kind" "$t" "$r" nan MiB/s "$SECS" 0 nan; fi
    done
    # Drain: flush sends the queue home now (the metaops files were created and removed: cancelled).
    b0=$(link_bytes) c0=$(cpu_sum $p)
    if timed flush_fs "$fs"; then
      lb=$(( $(link_bytes) - b0 ))
      # "queue drained (N operations applied while waiting)"
      ops=$(sed -n 's/.*drained (\([0-9]*\) operations.*/\1/p' "$OUT/flush.out" | tail -n 1)
      sample drain-bytes "$t" "$r" "$(fdiv "$((WRITES*WRITE_KIB))" "$(awk -v s="$SECS" 'BEGIN{print s*1024}')" %.1f)" MiB/s "$SECS" "$lb" "$(fsub "$(cpu_sum $p)" "$c0")"
      sample drain-ops "$t" "$r" "$(fdiv "${ops:-nan}" "$SECS" %.1f)" ops/s "$SECS" "$lb" "$(fsub "$(cpu_sum $p)" "$c0")"
      n_home=$(find "$W/s3/bkt/wb-$n-$r" -type f 2>/dev/null | wc -l)
      [ "$n_home" -ge "$WRITES" ] || log "WARNING: after flush home has $n_home files of $WRITES written"
    else
      sample drain-bytes "$t" "$r" nan MiB/s "$SECS" 0 nan; log "ERROR: flush: $(tail -n 3 "$OUT/flush.out")"
    fi
  done
done

for n in "${GWLIST[@]}"; do
  for q in ${UP_PID[$n]} ${GW_PIDS[$n]:-}; do
    log "$TP$n pid $q: $(proc_sample "$q" | awk '{printf "cpu %ss, peak RSS %d MiB", $1, $2/1024}')"
  done
done
summary "$SAMPLES" | tee "$OUT/summary.txt"
log "results in $OUT"
