#!/usr/bin/env bash
# bench/etcd-ops.sh - what one operation through the mount costs etcd (issue 29 item 1): etcd's own
# counters (Raft proposals committed, Range and Txn RPCs served, mvcc ranges, txns, puts, deletes)
# around N creates (shell redirection: LOOKUP, CREATE, RELEASE), N stats of names whose entries
# expired (LOOKUP), N stats of missing names, one ls -l of the N files, and N unlinks.
#
#   bench/etcd-ops.sh [--files N] [--bin TESSERA] [--space]
#
# --space: instead, N creates with the meta role compacting (1 s of history kept) and
# defragmenting etcd every 2 s: etcd's db size and in-use size per file right after the creates
# and once a round has run.
set -uo pipefail
#
# One etcd member (scripts/etcd.sh's flags) on free loopback ports and `tessera up --meta-db etcd://…`
# in a work dir under /var/tmp; both stopped by PID, the mount unmounted and the dir removed on exit.
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$REPO/bench/lib.sh"
N=500 BIN="" SPACE=0
while [ $# -gt 0 ]; do
  case $1 in
    --files) N=${2:-}; shift 2 ;;
    --bin) BIN=${2:-}; shift 2 ;;
    --space) SPACE=1; shift ;;
    -h|--help) sed -n '2,11p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "etcd-ops.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ $N =~ ^[1-9][0-9]*$ ]] || { echo "etcd-ops.sh: --files must be a positive integer" >&2; exit 2; }
if [ -z "$BIN" ]; then
  mkdir -p "$OUTBASE/bin"; BIN=$OUTBASE/bin/tessera
  ( cd "$REPO" && go build -o "$BIN" ./cmd/tessera ) || die "go build ./cmd/tessera failed"
fi
W=$(mktemp -d /var/tmp/tessera-etcdops.XXXXXX) || die "no work dir"
UP="" EP=""
cleanup() {
  [ -n "$UP" ] && stop_pid "$UP"
  fuse_mounted "$W/mnt" && { fusermount_u "$W/mnt" || fusermount_u "$W/mnt" -z; }
  [ -n "$EP" ] && stop_pid "$EP"
  rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP
port() { local p; for _ in $(seq 50); do p=$(( 20000 + RANDOM % 20000 )); ss -Hltn "sport = :$p" 2>/dev/null | grep -q . || { echo "$p"; return 0; }; done; return 1; }
cport=$(port) && pport=$(port) && [ "$cport" != "$pport" ] || die "no free loopback ports"
bash "$REPO/scripts/etcd.sh" ops "$W/etcd" "http://127.0.0.1:$cport" "http://127.0.0.1:$pport" "ops=http://127.0.0.1:$pport" >"$W/etcd.log" 2>&1 &
EP=$!
wait_ready "$EP" "$W/etcd.log" 'ready to serve client requests' 60 || die "etcd did not start"
mkdir -p "$W/mnt"
MAINT=()
[ "$SPACE" = 1 ] && MAINT=(--store-maintain-every 2s --store-retain 1s --store-defrag-free 1)
"$BIN" up --data "$W/data" --mount "$W/mnt" --meta-db "etcd://127.0.0.1:$cport/ops" "${MAINT[@]}" >"$W/up.log" 2>&1 &
UP=$!
wait_ready "$UP" "$W/up.log" 'tessera up: ready' 120 || die "tessera up did not start"
fuse_mounted "$W/mnt" || die "tessera up: ready, but $W/mnt is not mounted"
counters() {
  curl -s "http://127.0.0.1:$cport/metrics" | awk '
    /^etcd_debugging_mvcc_range_total /{r=$2} /^etcd_debugging_mvcc_txn_total /{t=$2} /^etcd_debugging_mvcc_put_total /{p=$2}
    /^etcd_debugging_mvcc_delete_total /{d=$2} /^etcd_server_proposals_committed_total /{c=$2}
    /^grpc_server_handled_total.*grpc_method="Range"/{gr+=$2} /^grpc_server_handled_total.*grpc_method="Txn"/{gt+=$2}
    END{printf "%d %d %d %d %d %d %d\n", r, t, p, d, c, gr, gt}'
}
per() { # per WHAT BEFORE AFTER SECONDS
  local a b; read -r -a a <<<"$2"; read -r -a b <<<"$3"
  printf '| %s | %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |\n' "$1" "$(fdiv "$(awk -v s="$4" 'BEGIN{print s*1e6}')" "$N" %.0f)" \
    "$(fdiv $(( b[4]-a[4] )) "$N")" "$(fdiv $(( b[5]-a[5] )) "$N")" "$(fdiv $(( b[6]-a[6] )) "$N")" \
    "$(fdiv $(( b[0]-a[0] )) "$N")" "$(fdiv $(( b[1]-a[1] )) "$N")" "$(fdiv $(( b[2]-a[2] )) "$N")" "$(fdiv $(( b[3]-a[3] )) "$N")"
}
D=$W/mnt/d
mkdir "$D" && sleep 1
echo "# $(date -u +%FT%TZ) bench/etcd-ops.sh --files $N; commit $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null); load $(cut -d' ' -f1-3 /proc/loadavg)"
if [ "$SPACE" = 1 ]; then
  dbsize() { curl -s "http://127.0.0.1:$cport/metrics" | awk -v n="$N" '
    /^etcd_mvcc_db_total_size_in_bytes /{t=$2} /^etcd_mvcc_db_total_size_in_use_in_bytes /{u=$2}
    END{printf "db %.0f B/file, in use %.0f B/file", t/n, u/n}'; }
  echo "# $(date -u +%FT%TZ) bench/etcd-ops.sh --space --files $N; commit $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null); load $(cut -d' ' -f1-3 /proc/loadavg)"
  for i in $(seq "$N"); do : >"$D/f$i"; done
  echo "after $N creates: $(dbsize)"
  sleep 8 # a few maintenance rounds: compaction to 1 s ago, then defragmentation
  echo "after compaction and defragmentation by the meta role: $(dbsize)"
  exit 0
fi
echo "| per operation | µs (one at a time, with the shell's fork and exec) | proposals | Range RPCs | Txn RPCs | mvcc ranges | mvcc txns | puts | deletes |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
phase() { # phase WHAT CMD...: run CMD, print the counters' growth per file
  local what=$1 a b t0; shift
  a=$(counters); t0=$(now); "$@"; b=$(counters)
  per "$what" "$a" "$b" "$(fsub "$(now)" "$t0")"
}
creates() { for i in $(seq "$N"); do : >"$D/f$i"; done; }
stats() { for i in $(seq "$N"); do stat -c %i "$D/f$i" >/dev/null; done; }
misses() { for i in $(seq "$N"); do stat "$D/nope$i" >/dev/null 2>&1; done; }
unlinks() { for i in $(seq "$N"); do rm "$D/f$i"; done; }
lsl() { ls -l "$D" >/dev/null; }
phase "create (: > f)" creates
sleep 2 # past the mount's 1 s entry timeout: the stats below ask the meta service
phase "stat (cold entry)" stats
sleep 2
phase "stat of a missing name" misses
sleep 2
phase "ls -l, per entry" lsl
phase "unlink (rm f)" unlinks
