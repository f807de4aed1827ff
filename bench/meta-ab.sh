#!/usr/bin/env bash
# bench/meta-ab.sh - metadata throughput (create / stat / unlink, the bench's metaops job) of two
# revisions side by side: each round starts `tessera up` of A, then of B, on fresh data, runs
# metaops on its mount, and stops it; rounds alternate so that load on the machine falls on both.
#
#   bench/meta-ab.sh REV_A REV_B [--rounds 4] [--files 4000] [--threads 4] [--workdir /var/tmp] [--quota-b]
#
# --quota-b sets a directory quota (1 TiB, 10^9 inodes: never reached) on the job's directory in B's
# runs before the job, so `bench/meta-ab.sh main main --quota-b` is the quota hook's cost side by side.
# Prints one line per round and phase (rev, round, phase, ops/s) and the median of each.
set -uo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
[ $# -ge 2 ] || { sed -n '2,8p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 2; }
A=$1 B=$2; shift 2
ROUNDS=4 FILES=4000 THREADS=4 WORKBASE=/var/tmp QUOTA_B=""
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) ROUNDS=$2; shift 2 ;;
    --files) FILES=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --workdir) WORKBASE=$2; shift 2 ;;
    --quota-b) QUOTA_B=1; shift ;;
    *) echo "meta-ab.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
DROP=""; [ "$(id -u)" = 0 ] && DROP=-drop-caches # as bench/run.sh: stat and unlink look names up in the file system
W=$(mktemp -d "$WORKBASE/meta-ab.XXXXXX") || exit 1
PIDUP="" MNT=""
cleanup() {
  if [ -n "$PIDUP" ] && kill -0 "$PIDUP" 2>/dev/null; then kill -TERM "$PIDUP"; wait "$PIDUP" 2>/dev/null; fi
  if [ -n "$MNT" ] && awk -v m="$MNT" '$2==m {f=1} END {exit !f}' /proc/mounts; then fusermount3 -u "$MNT" 2>/dev/null || fusermount -u "$MNT"; fi
  rm -rf "$W"
}
trap cleanup EXIT

build() { # build REV NAME: the tessera binary of REV at $W/NAME
  local src=$W/src-$2
  mkdir -p "$src" && git -C "$REPO" archive "$1" | tar -x -C "$src" || return 1
  (cd "$src" && go build -o "$W/$2" ./cmd/tessera) || return 1
}
build "$A" a || { echo "meta-ab.sh: cannot build $A" >&2; exit 1; }
build "$B" b || { echo "meta-ab.sh: cannot build $B" >&2; exit 1; }
(cd "$REPO" && go build -o "$W/metaops" ./bench/cmd/metaops) || exit 1

run() { # run NAME ROUND
  local d=$W/run-$1-$2 n=600
  mkdir -p "$d/data" "$d/mnt"; MNT=$d/mnt
  "$W/$1" up --data "$d/data" --mount "$d/mnt" >"$d/up.log" 2>&1 &
  PIDUP=$!
  while ! awk -v m="$MNT" '$2==m {f=1} END {exit !f}' /proc/mounts; do
    kill -0 "$PIDUP" 2>/dev/null && [ $n -gt 0 ] || { echo "meta-ab.sh: $1 did not mount: $(tail -n 1 "$d/up.log")" >&2; return 1; }
    n=$((n-1)); sleep 0.1
  done
  local name=$A; [ "$1" = b ] && name=$B
  if [ "$1" = b ] && [ -n "$QUOTA_B" ]; then
    name="$B+quota"
    mkdir -p "$d/mnt/meta" && "$W/b" quota set "$d/mnt/meta" --bytes 1T --inodes 1000000000 >"$d/quota.log" 2>&1 ||
      { echo "meta-ab.sh: quota set failed: $(tail -n 1 "$d/quota.log")" >&2; return 1; }
  fi
  "$W/metaops" -dir "$d/mnt/meta" -n "$FILES" -threads "$THREADS" -unique-dir $DROP >"$d/metaops.txt" 2>&1
  sed -n 's/^phase=\([a-z]*\) .*ops_per_s=\([^ ]*\).*/\1 \2/p' "$d/metaops.txt" | while read -r ph v; do
    printf '%s\t%s\t%s\t%s\n' "$name" "$2" "$ph" "$v"
  done
  kill -TERM "$PIDUP"; wait "$PIDUP" 2>/dev/null; PIDUP=""
  if awk -v m="$MNT" '$2==m {f=1} END {exit !f}' /proc/mounts; then fusermount3 -u "$MNT" 2>/dev/null || fusermount -u "$MNT"; fi
  MNT=""; rm -rf "$d/data"
}

printf 'rev\tround\tphase\tops_per_s\n'
for r in $(seq 1 "$ROUNDS"); do
  run a "$r" || exit 1
  run b "$r" || exit 1
done | tee "$W/all.tsv"
echo "# medians over $ROUNDS rounds ($FILES files, $THREADS workers, one directory each)"
B_NAME=$B; [ -n "$QUOTA_B" ] && B_NAME="$B+quota"
for rev in "$A" "$B_NAME"; do
  for ph in create stat unlink; do
    awk -F'\t' -v r="$rev" -v p="$ph" '$1==r && $3==p {print $4}' "$W/all.tsv" | sort -g |
      awk -v r="$rev" -v p="$ph" '{v[NR]=$1} END {m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "%s\t%s\tmedian\t%.1f\n", r, p, m}'
  done
done
