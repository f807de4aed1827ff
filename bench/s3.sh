#!/usr/bin/env bash
# bench/s3.sh - Tessera's S3 endpoint (tessera up --s3) against Versity S3 Gateway's posix backend
# and JuiceFS's S3 gateway on the same disk, all driven by one client (bench/cmd/s3bench, minio-go).
#
#   bench/s3.sh [--quick] [--targets tessera,versitygw,juicefs] [--size 1G] [--count 1000]
#               [--list 10000] [--parts 100] [--workdir /var/tmp] [--out FILE] [--keep]
#               [--jobs big,small,list,complete] [--rounds N] [--bin NAME=TESSERA_BINARY]...
#               [--osizes 4096,1048576]
#   (S3BENCH_BIN=PATH: a built bench/cmd/s3bench; --bin tessera=PATH: a built tessera)
set -uo pipefail
#
# Targets: tessera = `tessera up --s3 127.0.0.1:PORT` with its defaults and a key from `tessera s3
# keys add`; versitygw = `versitygw posix DIR` (v1.8.0, the library the endpoint is built on);
# juicefs = `juicefs gateway` over a sqlite3 meta database and `--storage file`, all in the work
# dir. Jobs, each target in turn: putbig (SIZE, multipart in 64 MiB parts, 8 in flight), getbig
# (8 ranged GETs in flight, every byte checked), small (4 KiB and 1 MiB objects, COUNT each:
# PUT, GET, HEAD at 1 and 16 clients), list (LIST of LIST keys in pages of 1000), complete (PARTS
# parts of 8 MiB, the complete timed alone). Output: one TSV row per job and target, then the
# ratios tessera/versitygw and tessera/juicefs. --rounds N runs the targets N times interleaved (each
# round starts each target afresh) and reports medians; --bin NAME=PATH adds a target NAME run as
# tessera from another binary (an A/B of two builds in one run); --jobs picks the jobs.
{
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$REPO/bench/lib.sh"
TARGETS=tessera,versitygw,juicefs SIZE="" COUNT="" LIST="" PARTS="" WORKBASE=/var/tmp OUTFILE="" KEEP=0 QUICK=0
JOBS=big,small,list,complete ROUNDS=1 OSIZES=4096,1048576
declare -A BINS=()
usage() { sed -n '2,9p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }
while [ $# -gt 0 ]; do
  case $1 in
    --targets) TARGETS=$2; shift 2 ;;
    --size) SIZE=$2; shift 2 ;;
    --count) COUNT=$2; shift 2 ;;
    --list) LIST=$2; shift 2 ;;
    --parts) PARTS=$2; shift 2 ;;
    --workdir) WORKBASE=$2; shift 2 ;;
    --out) OUTFILE=$2; shift 2 ;;
    --keep) KEEP=1; shift ;;
    --quick) QUICK=1; shift ;;
    --jobs) JOBS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --osizes) OSIZES=$2; shift 2 ;;
    --bin) [[ $2 == *=* ]] || { echo "s3.sh: --bin wants NAME=PATH" >&2; exit 2; }
      BINS[${2%%=*}]=$(realpath "${2#*=}"); shift 2 ;;
    -h|--help) usage 0 ;;
    *) echo "s3.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
if [ "$QUICK" = 1 ]; then : "${SIZE:=256M}" "${COUNT:=200}" "${LIST:=2000}" "${PARTS:=20}"
else : "${SIZE:=1G}" "${COUNT:=1000}" "${LIST:=10000}" "${PARTS:=100}"; fi
bytes() { numfmt --from=iec "$1"; }
SIZEB=$(bytes "$SIZE")
W=$(mktemp -d "$WORKBASE/s3bench.XXXXXX")
OUT=$OUTBASE/s3-$(date +%Y%m%d-%H%M%S); mkdir -p "$OUT/logs"
RES=$OUT/results.tsv
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do alive "$p" && kill -TERM "$p"; done
  for p in "${PIDS[@]}"; do wait_gone "$p" 15 || kill -KILL "$p" 2>/dev/null; done
  for m in "$W"/*/mnt; do fuse_mounted "$m" && fusermount_u "$m" -z; done
  [ "$KEEP" = 1 ] || rm -rf "$W"
}
trap cleanup EXIT
# Build (niced) what --bin and S3BENCH_BIN do not give, so a run under the bench lock can skip it.
if [ -z "${BINS[tessera]:-}" ]; then
  log "building tessera"; nice -n 15 go build -o "$W/tessera-bin" "$REPO/cmd/tessera" || die "build tessera"
  BINS[tessera]=$W/tessera-bin
fi
if [ -n "${S3BENCH_BIN:-}" ]; then cp "$S3BENCH_BIN" "$W/s3bench"
else log "building s3bench"; nice -n 15 go build -o "$W/s3bench" "$REPO/bench/cmd/s3bench" || die "build s3bench"; fi
# A free port below the ephemeral range: one from a :0 probe could go to one of tessera up's own :0
# binds (its block servers) before its S3 listener binds it.
freeport() { python3 -c '
import random, socket
low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
for _ in range(100):
    p = random.randint(10000, low - 1); s = socket.socket()
    try: s.bind(("127.0.0.1", p)); print(p); break
    except OSError: pass
    finally: s.close()
else: raise SystemExit("no free port below the ephemeral range")'; }
waitport() { for _ in $(seq 1 120); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.25; done; return 1; }

start_target() { # start_target NAME -> sets EP AK SK TPID TMNT (each start on a fresh work dir)
  local t=$1 port; port=$(freeport); EP=127.0.0.1:$port TMNT=""
  rm -rf "${W:?}/$t"
  case $t in
    versitygw)
      local bin; bin=$(command -v versitygw || echo "$(go env GOPATH)/bin/versitygw")
      [ -x "$bin" ] || { log "versitygw not installed: skipped"; return 1; }
      mkdir -p "$W/versitygw/dir"; AK=benchaccess SK=benchsecret0123456789
      "$bin" --port "$EP" --access "$AK" --secret "$SK" --quiet posix "$W/versitygw/dir" >"$OUT/logs/versitygw.log" 2>&1 &
      PIDS+=($!); TPID=$!
      waitport "$port" || die "versitygw did not listen" ;;
    juicefs)
      command -v juicefs >/dev/null || { log "juicefs not installed: skipped"; return 1; }
      mkdir -p "$W/juicefs"; AK=benchaccess SK=benchsecret0123456789
      juicefs format --storage file --bucket "$W/juicefs/bucket/" --trash-days 0 "sqlite3://$W/juicefs/jfs.db" bench >"$OUT/logs/juicefs-format.log" 2>&1 \
        || { log "juicefs format failed: skipped"; return 1; }
      MINIO_ROOT_USER=$AK MINIO_ROOT_PASSWORD=$SK juicefs gateway "sqlite3://$W/juicefs/jfs.db" "$EP" >"$OUT/logs/juicefs.log" 2>&1 &
      PIDS+=($!); TPID=$!
      waitport "$port" || { log "juicefs gateway did not listen: skipped"; return 1; } ;;
    *)
      local bin=${BINS[$t]:-}; [ -n "$bin" ] || die "target $t: not tessera, versitygw, juicefs nor a --bin NAME"
      TMNT=$W/$t/mnt; mkdir -p "$TMNT"
      "$bin" up --data "$W/$t/data" --mount "$TMNT" --s3 "$EP" >"$OUT/logs/$t.log" 2>&1 &
      PIDS+=($!); TPID=$!
      waitport "$port" || die "$t: tessera up --s3 did not listen"
      local k; k=$("$bin" s3 keys add bench --role rw --json --data "$W/$t/data") || die "s3 keys add"
      AK=$(python3 -c 'import json,sys;print(json.loads(sys.argv[1])["access_key_id"])' "$k")
      SK=$(python3 -c 'import json,sys;print(json.loads(sys.argv[1])["secret_access_key"])' "$k") ;;
  esac
}
stop_target() { kill -TERM "$TPID" 2>/dev/null; wait_gone "$TPID" 30 || kill -KILL "$TPID" 2>/dev/null
  [ -n "$TMNT" ] && fuse_mounted "$TMNT" && fusermount_u "$TMNT" -z; return 0; }
bench() { # bench TARGET LABEL ARGS... : one s3bench run, its lines to the TSV
  local t=$1 label=$2 f; shift 2; f=$OUT/logs/$t-$label-r$ROUND.out
  "$W/s3bench" -endpoint "$EP" -ak "$AK" -sk "$SK" "$@" >"$f" 2>&1 || { log "$t $label failed: $(tail -1 "$f")"; return; }
  while read -r line; do
    eval "local $line"  # job= ops= bytes= secs=, from s3bench
    # shellcheck disable=SC2154
    printf '%s\t%s\t%s-%s\t%s\t%s\t%s\n' "$ROUND" "$t" "$label" "$job" "$ops" "$bytes" "$secs" >>"$RES"
  done <"$f"
}
want() { [[ ",$JOBS," == *",$1,"* ]]; }
printf 'round\ttarget\tjob\tops\tbytes\tsecs\n' >"$RES"
IFS=, read -ra TS <<<"$TARGETS"
log "load at start: $(cat /proc/loadavg)"; echo "load at start: $(cat /proc/loadavg)" >"$OUT/load"
for ROUND in $(seq 1 "$ROUNDS"); do
for t in "${TS[@]}"; do
  log "round $ROUND target $t"
  start_target "$t" || continue
  if want big; then
    bench "$t" big -job putbig -size "$SIZEB" -streams 8
    bench "$t" big -job getbig -size "$SIZEB" -streams 8
  fi
  if want small; then for o in ${OSIZES//,/ }; do for c in 1 16; do
    bench "$t" "o$o-c$c" -job small -osize "$o" -clients "$c" -count "$COUNT"
  done; done; fi
  want list && bench "$t" list -job list -count "$LIST"
  want complete && bench "$t" parts -job complete -parts "$PARTS" -psize 8388608
  stop_target
done
done
log "load at end: $(cat /proc/loadavg)"; echo "load at end: $(cat /proc/loadavg)" >>"$OUT/load"
log "results: $RES"
python3 - "$RES" <<'PY' | tee "$OUT/report.md"
import csv, sys, collections, statistics
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
runs = collections.defaultdict(lambda: collections.defaultdict(list))
for r in rows:
    secs, ops, b = float(r["secs"]), int(r["ops"]), int(r["bytes"])
    big = r["job"].startswith("big-")
    v = (b / secs / 2**20) if big else (ops / secs)
    if r["job"] == "parts-complete": v = secs
    runs[r["job"]][r["target"]].append(v)
# Medians over the rounds; per-round figures, in round order, in the TSV.
val = {j: {t: statistics.median(v) for t, v in d.items()} for j, d in runs.items()}
ts = sorted({r["target"] for r in rows})
print(f"medians of {max(int(r['round']) for r in rows) if rows else 0} interleaved round(s)")
print()
print("| job | unit | " + " | ".join(ts) + " | tessera/versitygw | tessera/juicefs |")
print("|---|---|" + "---|" * (len(ts) + 2))
for j, d in val.items():
    unit = "MiB/s" if j.startswith("big-") else ("s" if j == "parts-complete" else "ops/s")
    def cell(t):
        if t not in d: return "-"
        v = runs[j][t]
        return f"{d[t]:.2f}" + (f" ({min(v):.4g}-{max(v):.4g})" if len(v) > 1 else "")
    cells = [cell(t) for t in ts]
    def ratio(o):
        if "tessera" not in d or o not in d: return "-"
        return f"{(d[o]/d['tessera'] if unit == 's' else d['tessera']/d[o]):.2f}"
    print(f"| {j} | {unit} | " + " | ".join(cells) + f" | {ratio('versitygw')} | {ratio('juicefs')} |")
PY
[ -n "$OUTFILE" ] && cp "$OUT/report.md" "$OUTFILE"
exit 0
}
