#!/usr/bin/env bash
# bench/scale.sh - the metadata scale benchmark of issue 29: grow a namespace of empty files
# through the mount and print, per slice, creates/s, stat and lookup latency, the listing rate
# of one full directory, store bytes per file and each role's resident memory; then remove it all.
#
#   bench/scale.sh --engine pebble|etcd --files N --dirs D --workers W [--slice S] [--sample K]
#                  [--workdir /var/tmp] [--keep]
set -uo pipefail
#
# pebble: `tessera up` with its embedded store (DATA/meta; its size is the store bytes).
# etcd:   one etcd member started here with scripts/etcd.sh's flags on free loopback ports,
#         and `tessera up --meta-db etcd://…` (store bytes: etcd's db size from its metrics).
# `tessera up` runs the meta service, block servers and the mount in one process (role "up");
# etcd is its own process (role "etcd"). The figures are bench/cmd/scale's (see its doc).
# Bounded: it stops after --files; everything started here is stopped by PID and the mount
# unmounted on exit (trap), and the work dir removed unless --keep.

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$REPO/bench/lib.sh"

ENGINE="" FILES="" DIRS="" WORKERS="" SLICE=0 SAMPLE=1000 WORKBASE=/var/tmp KEEP=0
usage() { sed -n '2,6p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }
while [ $# -gt 0 ]; do
  case $1 in
    --engine) ENGINE=${2:-}; shift 2 ;;
    --files) FILES=${2:-}; shift 2 ;;
    --dirs) DIRS=${2:-}; shift 2 ;;
    --workers) WORKERS=${2:-}; shift 2 ;;
    --slice) SLICE=${2:-}; shift 2 ;;
    --sample) SAMPLE=${2:-}; shift 2 ;;
    --workdir) WORKBASE=${2:-}; shift 2 ;;
    --keep) KEEP=1; shift ;;
    -h|--help) usage 0 ;;
    *) echo "scale.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
case $ENGINE in pebble|etcd) ;; *) echo "scale.sh: --engine must be pebble or etcd, not '$ENGINE'" >&2; exit 2 ;; esac
for v in FILES DIRS WORKERS; do
  [[ ${!v} =~ ^[1-9][0-9]*$ ]] || { echo "scale.sh: --${v,,} must be a positive integer" >&2; exit 2; }
done
[[ $SLICE =~ ^[0-9]+$ ]] || { echo "scale.sh: --slice must be a number of files" >&2; exit 2; }
[[ $SAMPLE =~ ^[1-9][0-9]*$ ]] || { echo "scale.sh: --sample must be a positive integer" >&2; exit 2; }

W=$(mktemp -d "$WORKBASE/tessera-scale.XXXXXX") || die "cannot make a work dir under $WORKBASE"
OUT=$OUTBASE/scale-$ENGINE-w$WORKERS-$(date +%Y%m%d-%H%M%S); mkdir -p "$OUT"
UP_PID="" ETCD_PID=""
cleanup() {
  [ -n "$UP_PID" ] && { log "stopping tessera up (pid $UP_PID)"; stop_pid "$UP_PID"; }
  fuse_mounted "$W/mnt" && { log "unmounting $W/mnt"; fusermount_u "$W/mnt" || fusermount_u "$W/mnt" -z; }
  [ -n "$ETCD_PID" ] && { log "stopping etcd (pid $ETCD_PID)"; stop_pid "$ETCD_PID"; }
  if [ "$KEEP" = 1 ]; then log "kept $W"; else rm -rf "$W"; fi
}
trap cleanup EXIT
trap 'log "interrupted"; exit 130' INT TERM HUP

mkdir -p "$OUTBASE/bin"
TESSERA=${TESSERA_BIN:-$OUTBASE/bin/tessera}
if [ -z "${TESSERA_BIN:-}" ]; then
  ( cd "$REPO" && go build -o "$TESSERA" ./cmd/tessera ) || die "go build ./cmd/tessera failed (set TESSERA_BIN)"
fi
( cd "$REPO" && go build -o "$OUTBASE/bin/scale" ./bench/cmd/scale ) || die "go build ./bench/cmd/scale failed"

# free_port: a loopback TCP port nothing listens on now (a race with other starters is
# caught by etcd failing to start).
free_port() {
  local p
  for _ in $(seq 50); do
    p=$(( 20000 + RANDOM % 20000 ))
    ss -Hltn "sport = :$p" 2>/dev/null | grep -q . || { echo "$p"; return 0; }
  done
  return 1
}

PIDARGS=() STOREARGS=() METADB=()
if [ "$ENGINE" = etcd ]; then
  cport=$(free_port) && pport=$(free_port) || die "no free loopback port for etcd"
  [ "$cport" != "$pport" ] || die "picked the same port twice; run again"
  curl_url=http://127.0.0.1:$cport
  bash "$REPO/scripts/etcd.sh" scale "$W/etcd" "$curl_url" "http://127.0.0.1:$pport" "scale=http://127.0.0.1:$pport" \
    >"$OUT/etcd.log" 2>&1 &
  ETCD_PID=$!   # scripts/etcd.sh execs etcd: this PID is etcd's
  wait_ready "$ETCD_PID" "$OUT/etcd.log" 'ready to serve client requests' 60 || die "etcd did not start (log $OUT/etcd.log)"
  log "etcd: pid $ETCD_PID on $curl_url"
  METADB=(--meta-db "etcd://127.0.0.1:$cport/scale")
  STOREARGS=(-etcd-metrics "$curl_url/metrics")
else
  STOREARGS=(-store-dir "$W/data/meta")
fi
mkdir -p "$W/mnt"
"$TESSERA" up --data "$W/data" --mount "$W/mnt" "${METADB[@]}" >"$OUT/up.log" 2>&1 &
UP_PID=$!
wait_ready "$UP_PID" "$OUT/up.log" 'tessera up: ready' 120 || die "tessera up did not start (log $OUT/up.log)"
fuse_mounted "$W/mnt" || die "tessera up: ready, but $W/mnt is not mounted"
PIDARGS=(-pid "up=$UP_PID")
[ -n "$ETCD_PID" ] && PIDARGS+=(-pid "etcd=$ETCD_PID")
log "tessera up: pid $UP_PID, mount $W/mnt, engine $ENGINE; output $OUT/scale.txt"

{
  echo "# $(date -u +%FT%TZ) bench/scale.sh --engine $ENGINE --files $FILES --dirs $DIRS --workers $WORKERS --slice $SLICE --sample $SAMPLE"
  echo "# commit $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), workdir $WORKBASE ($(stat -f -c %T "$WORKBASE"))"
  [ -n "$ETCD_PID" ] && echo "# etcd $(etcd --version 2>/dev/null | head -n 1)"
} | tee "$OUT/scale.txt"
"$OUTBASE/bin/scale" -root "$W/mnt/scale" -files "$FILES" -dirs "$DIRS" -workers "$WORKERS" \
  -slice "$SLICE" -sample "$SAMPLE" "${STOREARGS[@]}" "${PIDARGS[@]}" | tee -a "$OUT/scale.txt"
rc=${PIPESTATUS[0]}
echo "# load at end $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/scale.txt"
[ "$rc" = 0 ] || die "bench/cmd/scale failed (exit $rc)"
log "done: $OUT/scale.txt"
