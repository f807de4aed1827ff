#!/usr/bin/env bash
# bench/nfs.sh - Tessera's NFS server (tessera up --nfs) against NFS-Ganesha over ext4 and against
# Tessera's own FUSE mount, all driven by one client (bench/cmd/nfsbench). See bench/README.md.
#
#   bench/nfs.sh [--quick] [--rounds 3] [--targets tessera-nfs,ganesha,tessera-fuse] [--jobs seq,rand,meta,untar[,scale]]
#                [--size 2G] [--window 1] [--count 20000] [--files 10000] [--threads 4] [--tree DIR]
#                [--workdir /var/tmp] [--out FILE] [--keep]
#   bench/nfs.sh --report bench/out/nfs-TS/results.tsv    (the tables again, from a run's results)
set -uo pipefail
#
# Targets: tessera-nfs = `tessera up --nfs 127.0.0.1:0` with its defaults (root squashed; the
# client sends uid 1000); ganesha = NFS-Ganesha (FSAL VFS) exporting an ext4 directory of the
# work dir, NFSv3 only, run in the foreground in its own network namespace (only `lo`) with
# Debian's rpcbind beside it: Ganesha 4.3 exits when it cannot register with rpcbind, and the
# namespace keeps rpcbind's port 111 and Ganesha's ports off every interface but that namespace's
# loopback; tessera-fuse = the same `tessera up`'s FUSE mount, the same jobs as plain file calls.
# NFS targets are driven by nfsbench's go-nfs-client over TCP, straight to the NFS and MOUNT
# ports: each worker/stream its own connection, one call in flight on each.
# Jobs (each round, each target; the target order rotates per round):
#   seq:   seqwrite (SIZE in 1 MiB WRITEs, UNSTABLE, then COMMIT / fsync), server restarted and
#          caches dropped, seqread (cold); WINDOW calls in flight at once on the one connection
#          (as a kernel client's read-ahead and write-behind keep; on FUSE: WINDOW threads' preads
#          or pwrites on the one descriptor), 1 (the default): one after another
#   rand:  4 KiB random reads of that file, COUNT in all, 1 stream then 4 (cold each)
#   meta:  create / stat (LOOKUP) / remove of FILES empty files, THREADS workers, a directory each
#   untar: the tar of TREE written entry by entry (files closed with COMMIT over NFS, plain close on FUSE)
#   scale (on request): cold reads of SIZE through one `tessera nfs --meta` of the up's cluster, then
#          of two files through two such servers at once, one client each

# The script is one { ... } block: bash parses it whole before running any of it, so editing this
# file while a run is under way cannot change that run (bash reads a plain script as it goes).
{
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$REPO/bench/lib.sh"

TARGETS=tessera-nfs,ganesha,tessera-fuse JOBS=seq,rand,meta,untar
WINDOW=1 REPORT="" ROUNDS="" SIZE="" COUNT="" FILES="" THREADS=4 TREE="" WORKBASE=/var/tmp OUTFILE="" KEEP=0 QUICK=0
usage() { sed -n '2,7p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }
ARGS="$*"
while [ $# -gt 0 ]; do
  case $1 in
    --targets) TARGETS=$2; shift 2 ;;
    --jobs) JOBS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --size) SIZE=$2; shift 2 ;;
    --window) WINDOW=$2; shift 2 ;;
    --count) COUNT=$2; shift 2 ;;
    --files) FILES=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --tree) TREE=$2; shift 2 ;;
    --workdir) WORKBASE=$2; shift 2 ;;
    --out) OUTFILE=$2; shift 2 ;;
    --keep) KEEP=1; shift ;;
    --report) REPORT=$2; shift 2 ;;
    --quick) QUICK=1; shift ;;
    -h|--help) usage 0 ;;
    *) echo "nfs.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
GOROOT_SRC=$(go env GOROOT)/src
if [ "$QUICK" = 1 ]; then : "${ROUNDS:=1}" "${SIZE:=256M}" "${COUNT:=2000}" "${FILES:=1000}" "${TREE:=$GOROOT_SRC/cmd/go}"
else : "${ROUNDS:=3}" "${SIZE:=2G}" "${COUNT:=20000}" "${FILES:=10000}" "${TREE:=$GOROOT_SRC}"; fi
for v in ROUNDS COUNT FILES THREADS WINDOW; do
  [[ ${!v} =~ ^[1-9][0-9]*$ ]] || { echo "nfs.sh: --${v,,} ${!v}: want a positive integer" >&2; exit 2; }
done
[[ $SIZE =~ ^[1-9][0-9]*[KMG]$ ]] || { echo "nfs.sh: --size $SIZE: want a size such as 256M or 2G" >&2; exit 2; }
[ -d "$TREE" ] || { echo "nfs.sh: --tree $TREE is not a directory" >&2; exit 2; }
TREE=$(cd "$TREE" && pwd)
for t in ${TARGETS//,/ }; do
  case $t in tessera-nfs|ganesha|tessera-fuse) ;; *) echo "nfs.sh: unknown target '$t' (tessera-nfs, ganesha, tessera-fuse)" >&2; exit 2 ;; esac
done
for j in ${JOBS//,/ }; do
  case $j in seq|rand|meta|untar|scale) ;; *) echo "nfs.sh: unknown job '$j' (seq, rand, meta, untar, scale)" >&2; exit 2 ;; esac
done
[[ ,$JOBS, == *,rand,* && ,$JOBS, != *,seq,* ]] && { echo "nfs.sh: the rand job reads the seq job's file: give --jobs seq,rand" >&2; exit 2; }
report_tables() { # report_tables RESULTS.TSV
  awk -F'\t' -v order="$TARGETS" '
    function med(a, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
      return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
    NR > 1 {
      k = $3 SUBSEP $2
      if ($4 == "FAIL") { fail[k]++; seen[$3] = 1; next }
      rate = ($3 ~ /^(seq|scale)/) ? $5 / $6 / 1e6 : $4 / $6
      n[k]++; R[k, n[k]] = rate; S[k, n[k]] = $6; seen[$3] = 1
      if ($7 != "nan") { nc[k]++; C[k, nc[k]] = $7 }
    }
    END {
      nt = split(order, T, ",")
      split("seqwrite seqread randread1 randread4 create stat remove untar scale1 scale2", J, " ")
      for (ji = 1; ji <= 10; ji++) { j = J[ji]; if (!(j in seen)) continue
        printf "\n### %s\n\n| target | s | rate | cpu s |\n|---|---|---|---|\n", j
        delete M
        for (ti = 1; ti <= nt; ti++) { t = T[ti]; k = j SUBSEP t
          if (!n[k]) { if (fail[k]) printf "| %s | FAIL | | |\n", t; continue }
          lo = hi = R[k, 1]; for (i = 1; i <= n[k]; i++) { a[i] = R[k, i]; if (a[i] < lo) lo = a[i]; if (a[i] > hi) hi = a[i] }
          M[t] = med(a, n[k]); delete a
          for (i = 1; i <= n[k]; i++) a[i] = S[k, i]; s = med(a, n[k]); delete a
          c = "-"; if (nc[k]) { for (i = 1; i <= nc[k]; i++) a[i] = C[k, i]; c = sprintf("%.1f", med(a, nc[k])); delete a }
          printf "| %s | %.2f | %.1f [%.1f-%.1f]%s | %s |\n", t, s, M[t], lo, hi, fail[k] ? " (" fail[k] " FAIL)" : "", c
        }
        want_g = (j ~ /^seq/) ? 0.9 : (j ~ /^rand/ ? 0 : 1.0); want_f = (j ~ /^seq/) ? 0.8 : 0
        if (M["tessera-nfs"] > 0 && M["ganesha"] > 0) { x = M["tessera-nfs"] / M["ganesha"]
          printf "\nTessera-NFS / Ganesha: **%.2fx**%s\n", x, want_g ? sprintf(" (target >= %.1fx: %s)", want_g, x >= want_g ? "met" : "NOT met") : "" }
        if (M["tessera-nfs"] > 0 && M["tessera-fuse"] > 0) { x = M["tessera-nfs"] / M["tessera-fuse"]
          printf "\nTessera-NFS / Tessera-FUSE: **%.2fx**%s\n", x, want_f ? sprintf(" (target >= %.1fx: %s)", want_f, x >= want_f ? "met" : "NOT met") : "" }
        if (j == "scale2" && M["tessera-nfs"] > 0 && S1 > 0) { x = M["tessera-nfs"] / S1
          printf "\ntwo tessera nfs, two clients / one: **%.2fx** (target >= 1.7x: %s)\n", x, (x >= 1.7 ? "met" : "NOT met") }
        if (j == "scale1") S1 = M["tessera-nfs"]
      }
    }' "$1"
}
if [ -n "$REPORT" ]; then
  [ -f "$REPORT" ] || { echo "nfs.sh: --report $REPORT: no such file" >&2; exit 2; }
  echo "Rendered from $REPORT (bench/nfs.sh --report)."
  report_tables "$REPORT"; exit 0
fi
[ "$(id -u)" = 0 ] || { echo "nfs.sh: run as root (drops caches, mounts FUSE, starts Ganesha in a network namespace)" >&2; exit 2; }

LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
W=$(mktemp -d "$WORKBASE/tessera-nfs.XXXXXX") || die "cannot make a work dir under $WORKBASE"
OUT=$OUTBASE/nfs-$(date +%Y%m%d-%H%M%S); mkdir -p "$OUT/logs"
NS="" TPID="" GPID="" RPID="" TPORT="" TMNT=$W/tmnt GEXP=$W/ext4
cleanup() {
  trap '' INT TERM
  stop_snfs; stop_tessera; stop_ganesha
  [ -n "$RPID" ] && stop_pid "$RPID"; RPID=""
  [ -n "$NS" ] && ip netns del "$NS" 2>/dev/null
  lib_cleanup
}
trap cleanup EXIT
trap 'log "interrupted"; exit 130' INT TERM HUP

# ---------------------------------------------------------------- tools
build_bins
( cd "$REPO" && go build -o "$OUTBASE/bin/" ./bench/cmd/nfsbench ) || die "cannot build bench/cmd/nfsbench"
NFSBENCH=$OUTBASE/bin/nfsbench
COMMIT=$(cd "$REPO" && git rev-parse --short HEAD 2>/dev/null)$( [ -n "$(cd "$REPO" && git status --porcelain -- cmd internal 2>/dev/null)" ] && echo '+dirty')
[ -n "${TESSERA_BIN:-}" ] && COMMIT="TESSERA_BIN=$TESSERA_BIN"
TARBALL=$W/tree.tar
( cd "$(dirname "$TREE")" && tar -cf "$TARBALL" "$(basename "$TREE")" ) || die "cannot tar $TREE"
TREE_N=$(tar -tf "$TARBALL" | wc -l)

# spawn LOGFILE CMD...: start in background, LASTPID = its PID. Not lib.sh's start_bg: servers are
# restarted here and each PID is stopped and forgotten by its own variable (never a stale one).
spawn() { local lg=$1; shift; "$@" >"$lg" 2>&1 & LASTPID=$!; }

# ---------------------------------------------------------------- tessera (one up: NFS and FUSE)
start_tessera() {
  local lg=$OUT/logs/tessera-$(date +%H%M%S%N).log
  mkdir -p "$TMNT"
  # shellcheck disable=SC2086
  spawn "$lg" "$TESSERA" up --data "$W/tessera" --mount "$TMNT" --nfs 127.0.0.1:0 ${TESSERA_UP_OPTS:-}
  TPID=$LASTPID
  wait_ready "$TPID" "$lg" 'tessera up: ready' 120 || return 1
  TPORT=$(sed -n 's/.*tessera up: ready.* nfs=127\.0\.0\.1:\([0-9]*\).*/\1/p' "$lg" | head -n 1)
  [ -n "$TPORT" ] || { log "tessera up named no nfs= address"; return 1; }
}
stop_tessera() {
  [ -n "$TPID" ] || return 0
  if alive "$TPID"; then
    kill -TERM "$TPID" 2>/dev/null
    # a tessera up that outlives SIGTERM: SIGQUIT makes Go print every goroutine into its log
    wait_gone "$TPID" 30 || { log "tessera up ($TPID) alive 30 s after SIGTERM: SIGQUIT (goroutines in its log)"; kill -QUIT "$TPID" 2>/dev/null; }
    wait_gone "$TPID" 10 || stop_pid "$TPID" KILL
  fi
  wait "$TPID" 2>/dev/null; TPID=""
  fuse_mounted "$TMNT" && { fusermount_u "$TMNT" || fusermount_u "$TMNT" -z; }
  return 0
}

# ---------------------------------------------------------------- scale: tessera nfs beside the up
# start_snfs I: a `tessera nfs` of the up's cluster (its mount certificate), SPORT[I] its port.
declare -a SPID=() SPORT=()
start_snfs() {
  local i=$1 lg=$OUT/logs/tessera-nfs$1-$(date +%H%M%S%N).log D=$W/tessera
  spawn "$lg" "$TESSERA" nfs --meta "$(cat "$D/meta.addr")" --listen 127.0.0.1:0 \
    --tls-cert "$D/tls/mount.crt" --tls-key "$D/tls/mount.key" --tls-ca "$D/tls/ca.crt"
  SPID[$i]=$LASTPID
  wait_ready "$LASTPID" "$lg" 'tessera nfs: ready' 60 || return 1
  SPORT[$i]=$(sed -n 's/.*ready.* nfs=127\.0\.0\.1:\([0-9]*\).*/\1/p' "$lg" | head -n 1)
  [ -n "${SPORT[$i]}" ] || { log "tessera nfs named no nfs= address"; return 1; }
}
stop_snfs() { local i; for i in "${!SPID[@]}"; do stop_pid "${SPID[$i]}"; done; SPID=() SPORT=(); }
# scale_job R: files a and b (SIZE each, written through the FUSE mount), then cold reads of a
# through one `tessera nfs` (scale1), and of a and b through two at once, one client each (scale2:
# both files' bytes over the slower reader's time). Fresh servers and dropped caches before each.
# Where the CPU went goes to scale-cpu.tsv: the NFS servers', the up's (its block servers and meta
# service), the clients' (nfsbench), and how busy the machine's cores were (all processes, the
# other users' included) over the reads.
busy_sample() { awk '/^cpu /{print $2+$3+$4+$7+$8+$9, $5+$6; exit}' /proc/stat; } # busy idle (jiffies)
scale_job() {
  local r=$1 d=bench/tessera-nfs.r$r/scale n lg=$OUT/logs/scale.r$r c secs
  [ -s "$OUT/scale-cpu.tsv" ] || printf 'round\tservers\tnfs_servers_cpu_s\tup_cpu_s\tclients_cpu_s\tmachine_busy_pct\n' > "$OUT/scale-cpu.tsv"
  mkdir -p "$TMNT/$d" && chmod 1777 "$TMNT/$d"
  for f in a b; do
    "$NFSBENCH" -dir "$TMNT" -job seqwrite -file "$d/$f.dat" -size "$SIZE" -seed "$RANDOM" >/dev/null 2>>"$lg.log" \
      || { log "scale: writing $f failed"; printf '%s\ttessera-nfs\tscale1\tFAIL\t0\tnan\tnan\n' "$r" >> "$RES"; return 1; }
  done
  for n in 1 2; do
    stop_snfs; drop_caches
    start_snfs 1 && { [ $n = 1 ] || start_snfs 2; } \
      || { printf '%s\ttessera-nfs\tscale%s\tFAIL\t0\tnan\tnan\n' "$r" $n >> "$RES"; stop_snfs; return 1; }
    local u0 b0 u1 b1
    u0=$(cpu_of "$TPID"); b0=$(busy_sample)
    /usr/bin/time -f '%U %S' -o "$lg.$n.a.cpu" "$NFSBENCH" -nfs "127.0.0.1:${SPORT[1]}" -job seqread -file "$d/a.dat" -size "$SIZE" -window "$WINDOW" >"$lg.$n.a" 2>>"$lg.log" &
    local pa=$! pb=""
    if [ $n = 2 ]; then /usr/bin/time -f '%U %S' -o "$lg.$n.b.cpu" "$NFSBENCH" -nfs "127.0.0.1:${SPORT[2]}" -job seqread -file "$d/b.dat" -size "$SIZE" -window "$WINDOW" >"$lg.$n.b" 2>>"$lg.log" & pb=$!; fi
    wait $pa; local ra=$? rb=0; [ -n "$pb" ] && { wait "$pb"; rb=$?; }
    u1=$(cpu_of "$TPID"); b1=$(busy_sample)
    c=$(cpu_sum "${SPID[@]}")
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$r" "$n" "$c" \
      "$(awk -v a="$u0" -v b="$u1" 'BEGIN{printf "%.2f", b-a}')" \
      "$(cat "$lg.$n".*.cpu 2>/dev/null | awk 'NF==2{t+=$1+$2} END{printf "%.2f", t}')" \
      "$(echo "$b0 $b1" | awk '{b=$3-$1; i=$4-$2; printf "%.0f", (b+i) ? 100*b/(b+i) : 0}')" >> "$OUT/scale-cpu.tsv"
    [ -n "${CLIENT_OF[tessera-nfs]:-}" ] || CLIENT_OF[tessera-nfs]="$(sed -n 's/^nfsbench: \(go-nfs.*\)/\1/p' "$lg.log" | head -n 1) (scale: tessera nfs servers)"
    if [ $ra != 0 ] || [ $rb != 0 ]; then
      log "scale$n failed: $(tail -n 2 "$lg.log" | tr '\n' ' ')"; printf '%s\ttessera-nfs\tscale%s\tFAIL\t0\tnan\tnan\n' "$r" $n >> "$RES"
    else
      secs=$(cat "$lg.$n".* | sed -n 's/.*secs=\([0-9.]*\).*/\1/p' | sort -g | tail -n 1)
      printf '%s\ttessera-nfs\tscale%s\t%s\t%s\t%s\t%s\n' "$r" $n $n "$(( n * $(cat "$lg.$n".a | sed -n 's/.*bytes=\([0-9]*\).*/\1/p') ))" "$secs" "$c" >> "$RES"
    fi
  done
  stop_snfs
  log "scale CPU (round, servers, NFS servers' CPU s, up's CPU s, clients' CPU s, machine busy %): $(grep "^$r	" "$OUT/scale-cpu.tsv" | tr '\t\n' ' ;')"
}

# ---------------------------------------------------------------- ganesha (own namespace + rpcbind)
GPORT=2049 GMNTPORT=20048
# netns_run CMD...: CMD in Ganesha's network namespace only. Not `ip netns exec`: that also gives
# CMD a mount namespace of its own, and with / private (as here) its copy of tessera up's FUSE mount
# outlives the unmount, so the FUSE connection never ends and tessera up's shutdown waits forever
# in go-fuse's Unmount (seen on every restart while a Ganesha started by `ip netns exec` ran).
# spawn runs it as nsenter itself (a function run in the background would be a subshell whose
# PID is not the server's), so stopping the PID stops the server.
netns_run() { nsenter --net="/run/netns/$NS" "$@"; }
ganesha_setup() {
  need_root_apt ganesha.nfsd nfs-ganesha || { GANESHA_WHY="apt-get install nfs-ganesha failed"; return 1; }
  ls /usr/lib/*/ganesha/libfsalvfs.so >/dev/null 2>&1 || apt-get install -y -qq nfs-ganesha-vfs >/dev/null 2>&1
  ls /usr/lib/*/ganesha/libfsalvfs.so >/dev/null 2>&1 || { GANESHA_WHY="no FSAL VFS (nfs-ganesha-vfs)"; return 1; }
  need_root_apt rpcbind rpcbind || { GANESHA_WHY="apt-get install rpcbind failed"; return 1; }
  [ "$(stat -f -c %T "$W")" = ext2/ext3 ] || log "WARNING: $W is on $(stat -f -c %T "$W"), not ext4"
  NS=tnfs$$
  ip netns add "$NS" && ip -n "$NS" link set lo up || { GANESHA_WHY="cannot make a network namespace"; NS=""; return 1; }
  spawn "$OUT/logs/rpcbind.log" nsenter --net="/run/netns/$NS" rpcbind -f -w
  RPID=$LASTPID
  mkdir -p "$GEXP" "$W/ganesha"
  # Bind_Addr is left out: getaddrinfo finds no address for 127.0.0.1 in a namespace holding
  # only lo (AI_ADDRCONFIG); lo is the namespace's only interface anyway.
  cat > "$W/ganesha/ganesha.conf" <<EOF
NFS_CORE_PARAM {
  NFS_Port = $GPORT; MNT_Port = $GMNTPORT; Protocols = 3;
  Enable_NLM = false; Enable_RQUOTA = false; Enable_UDP = false;
}
NFSV4 { Graceless = true; }
EXPORT {
  Export_Id = 1; Path = $GEXP; Pseudo = $GEXP; Access_Type = RW; Squash = Root_Squash;
  Protocols = 3; Transports = TCP; SecType = sys;
  FSAL { Name = VFS; }
}
LOG { Default_Log_Level = EVENT; }
EOF
}
start_ganesha() {
  local lg=$OUT/logs/ganesha-$(date +%H%M%S%N).log n=600
  spawn "$lg.stdout" nsenter --net="/run/netns/$NS" ganesha.nfsd -F -f "$W/ganesha/ganesha.conf" -L "$lg" -p "$W/ganesha/pid" -N NIV_EVENT
  GPID=$LASTPID
  while [ -z "$(netns_run ss -Htln "( sport = :$GPORT )" 2>/dev/null)" ]; do
    alive "$GPID" || { GANESHA_WHY="ganesha.nfsd exited: $(grep -E 'FATAL|MAJ' "$lg" | tail -n 1 | cut -c1-200)"; return 1; }
    n=$((n - 1)); [ $n -le 0 ] && { GANESHA_WHY="ganesha.nfsd not listening after 60 s"; return 1; }
    sleep 0.1
  done
}
stop_ganesha() { [ -n "$GPID" ] && stop_pid "$GPID"; GPID=""; return 0; }

# ---------------------------------------------------------------- targets
# server_of T: the PID whose CPU is the target's; restart T: stop its server, drop caches, start it.
server_of() { case $1 in ganesha) echo "$GPID" ;; *) echo "$TPID" ;; esac; }
restart() {
  case $1 in
    ganesha) stop_ganesha; drop_caches; start_ganesha ;;
    *) stop_tessera; drop_caches; start_tessera ;;
  esac
}
# nb T ARGS...: nfsbench against target T
nb() {
  local t=$1; shift
  case $t in
    tessera-nfs) "$NFSBENCH" -nfs "127.0.0.1:$TPORT" "$@" ;;
    ganesha) netns_run "$NFSBENCH" -nfs "127.0.0.1:$GPORT,$GMNTPORT" -export "$GEXP" "$@" ;;
    tessera-fuse) "$NFSBENCH" -dir "$TMNT" "$@" ;;
  esac
}
# backing T: where the target's files are seen on this host (to make and remove round dirs)
backing() { case $1 in ganesha) echo "$GEXP" ;; *) echo "$TMNT" ;; esac; }

declare -A AVAIL=()
GANESHA_WHY=""
for t in ${TARGETS//,/ }; do
  case $t in
    ganesha) if ganesha_setup && start_ganesha; then AVAIL[$t]=1; else log "ganesha unavailable: $GANESHA_WHY"; stop_ganesha; fi ;;
    *) if [ -n "$TPID" ] || start_tessera; then AVAIL[$t]=1; else log "tessera up did not start (see $OUT/logs)"; fi ;;
  esac
done
# the client (uid 1000) writes into round directories made by root, open to all (sticky)
for ((r = 1; r <= ROUNDS; r++)); do
  [ -n "${AVAIL[ganesha]:-}" ] && mkdir -p "$GEXP/bench/ganesha.r$r" && chmod 1777 "$GEXP/bench/ganesha.r$r"
done
# fresh_tessera T R: a new cluster (empty data dir) for round R of target T: Tessera stores blocks
# by content, so a file or tree written before (an earlier round, the other Tessera target) would
# be deduplicated instead of written, until the reclaimer removes its blocks.
fresh_tessera() {
  stop_tessera; rm -rf "$W/tessera"; drop_caches
  start_tessera || return 1
  mkdir -p "$TMNT/bench/$1.r$2" && chmod 1777 "$TMNT/bench/$1.r$2"
}
[ ${#AVAIL[@]} -gt 0 ] || die "no target started"

RES=$OUT/results.tsv
printf 'round\ttarget\tjob\tops\tbytes\tsecs\tcpu_s\n' > "$RES"
# measure R T JOB ARGS...: run nfsbench job, record each phase it reports with the server's CPU
measure() {
  local r=$1 t=$2 job=$3; shift 3
  local p c0 c1 lg=$OUT/logs/$t.r$r.$job${STREAMS:-}.log
  p=$(server_of "$t"); c0=$(cpu_of "$p")
  if ! nb "$t" -job "$job" "$@" >"$lg.out" 2>"$lg"; then
    log "$job on $t (round $r) failed: $(tail -n 2 "$lg" | tr '\n' ' ')"
    printf '%s\t%s\t%s\tFAIL\t0\tnan\tnan\n' "$r" "$t" "$job" >> "$RES"; return 1
  fi
  c1=$(cpu_of "$p")
  CLIENT_OF[$t]=$(sed -n 's/^nfsbench: //p' "$lg" | head -n 1)
  awk -v r="$r" -v t="$t" -v c="$(fsub "$c1" "$c0")" '
    { for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
      printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r, t, f["job"], f["ops"], f["bytes"], f["secs"], c }' "$lg.out" >> "$RES"
}
declare -A CLIENT_OF=()

IFS=, read -r -a TL <<< "$TARGETS"
for ((r = 1; r <= ROUNDS; r++)); do
  for ((k = 0; k < ${#TL[@]}; k++)); do
    t=${TL[$(( (k + r - 1) % ${#TL[@]} ))]}
    [ -n "${AVAIL[$t]:-}" ] || continue
    d=bench/$t.r$r
    log "round $r: $t"
    if [ "$t" != ganesha ]; then fresh_tessera "$t" "$r" || { log "tessera up did not start"; continue; }; fi
    if [[ ,$JOBS, == *,seq,* ]]; then
      drop_caches
      measure "$r" "$t" seqwrite -file "$d/seq.dat" -size "$SIZE" -window "$WINDOW" -seed "$RANDOM$r"
      restart "$t" || { log "$t did not restart"; continue; }
      measure "$r" "$t" seqread -file "$d/seq.dat" -size "$SIZE" -window "$WINDOW"
    fi
    if [[ ,$JOBS, == *,rand,* ]]; then
      for s in 1 4; do
        restart "$t" || { log "$t did not restart"; continue 2; }
        STREAMS=$s measure "$r" "$t" randread -file "$d/seq.dat" -size "$SIZE" -streams $s -count "$COUNT"
      done
    fi
    [[ ,$JOBS, == *,meta,* ]] && measure "$r" "$t" meta -path "$d/meta" -n "$FILES" -threads "$THREADS" -drop-caches
    if [[ ,$JOBS, == *,untar,* ]]; then drop_caches; measure "$r" "$t" untar -tar "$TARBALL" -path "$d/tree"; fi
    [[ ,$JOBS, == *,scale,* && $t == tessera-nfs ]] && scale_job "$r"
    rm -rf "$(backing "$t")/$d"   # this round's data, before the next target's
  done
done

# ---------------------------------------------------------------- report
report_header() {
  echo "# bench/nfs.sh: Tessera's NFS against NFS-Ganesha over ext4 and Tessera's FUSE mount"
  echo
  echo "$(date -u +%F) $(uname -r), $(nproc) cores, load before: $LOAD0; tessera at $COMMIT"
  echo "command: bench/nfs.sh $ARGS (rounds $ROUNDS, seq $SIZE with $WINDOW call(s) in flight, randread $COUNT x 4 KiB, meta $FILES files x $THREADS workers, untar $TREE: $TREE_N entries)"
  for t in ${TARGETS//,/ }; do
    if [ -n "${AVAIL[$t]:-}" ]; then echo "- $t: ${CLIENT_OF[$t]:-?}"
    else echo "- $t: unavailable${GANESHA_WHY:+: $GANESHA_WHY}"; fi
  done
  echo
  echo "Median over rounds [min-max]; rate = MB/s (10^6 B/s) for seq and scale jobs, operations/s otherwise (untar: entries/s); cpu = server CPU-seconds (tessera up: every role in one process; create/stat/remove: the three phases together)."
  echo "Ratios of medians; targets from issue 24: seq >= 0.9x Ganesha and >= 0.8x FUSE; small-file operations >= 1.0x Ganesha."
}
{ report_header; report_tables "$RES"; } | tee "$OUT/report.md"
[ -n "$OUTFILE" ] && cp "$OUT/report.md" "$OUTFILE" && log "saved $OUTFILE"
log "results: $RES"
! grep -q FAIL "$RES"
exit
}
