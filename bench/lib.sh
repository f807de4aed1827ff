# shellcheck shell=bash disable=SC2034
# bench/lib.sh - helpers shared by bench/striping.sh and bench/imca.sh (sourced).
# Process accounting and fio parsing are bench/cmd/benchreport's (`proc`, `fio`),
# as in bench/run.sh. Everything started here is remembered by PID and stopped by
# PID in lib_cleanup (trap it on EXIT); network namespaces and veths made here
# are deleted there too.
#
# Network: namespace i gets a veth pair <pfx><i>h (root side, $SUBNET.(4i+1)/30)
# and <pfx><i>n (inside, $SUBNET.(4i+2)/30). Inside, the only route besides the
# /30 is $SUBNET.0/24 via the root side, so a namespace can reach the other
# test addresses in the root namespace (the meta service listens on $SUBNET.1)
# and nothing else. No forwarding, no default route, no NAT.

REPO=${REPO:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
OUTBASE=$REPO/bench/out
SUBNET=${SUBNET:-192.168.77}

log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }
die() { log "FATAL: $*"; exit 1; }
now() { date +%s.%N; }
fsub() { awk -v a="$1" -v b="$2" 'BEGIN { if (a=="nan"||b=="nan"||a==""||b=="") print "nan"; else printf "%.2f", a-b }'; }
fdiv() { awk -v a="$1" -v b="$2" -v f="${3:-%.2f}" 'BEGIN { if (a=="nan"||b=="nan"||a==""||b==""||b+0==0) print "nan"; else printf f, a/b }'; }
alive() { [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null; }
fuse_mounted() { awk -v m="$1" '$2==m {f=1} END {exit !f}' /proc/mounts; }
fusermount_u() { # fusermount_u MNT [-z]
  if command -v fusermount3 >/dev/null; then fusermount3 -u ${2:-} "$1" 2>/dev/null
  else fusermount -u ${2:-} "$1" 2>/dev/null; fi
}
wait_gone() { # wait_gone PID SECONDS
  local p=$1 n=$(( $2 * 10 ))
  while alive "$p" && [ $n -gt 0 ]; do sleep 0.1; n=$((n-1)); done
  if ! alive "$p"; then wait "$p" 2>/dev/null; return 0; fi
  return 1
}
need_root_apt() { # need_root_apt CMD PKG
  command -v "$1" >/dev/null && return 0
  log "$1 missing: apt-get install -y $2"
  apt-get install -y -qq "$2" >/dev/null 2>&1 || { apt-get update -qq >/dev/null 2>&1; apt-get install -y -qq "$2" >/dev/null 2>&1; }
  command -v "$1" >/dev/null
}
DROP_OK=1
drop_caches() {
  sync
  if [ "$DROP_OK" = 1 ] && ! { echo 3 > /proc/sys/vm/drop_caches; } 2>/dev/null; then
    DROP_OK=0; log "WARNING: cannot drop caches (not root?): reads are not cold"
  fi
}

# ---------------------------------------------------------------- build
# build_bins: tessera (or $TESSERA_BIN) and the bench helpers into $OUTBASE/bin.
build_bins() {
  mkdir -p "$OUTBASE/bin"
  ( cd "$REPO" && go build -o "$OUTBASE/bin/" ./bench/cmd/benchreport ./bench/cmd/imcaops ) \
    || die "cannot build bench helpers"
  BR=$OUTBASE/bin/benchreport IMCAOPS=$OUTBASE/bin/imcaops TIERMOUNT=${TIERMOUNT_BIN:-$OUTBASE/bin/tiermount}
  # tiermount links the client package, which may be mid-edit: TIERMOUNT_BIN overrides
  if [ -z "${TIERMOUNT_BIN:-}" ]; then
    ( cd "$REPO" && go build -o "$OUTBASE/bin/" ./bench/cmd/tiermount ) >"$OUTBASE/bin/tiermount-build.log" 2>&1 \
      || log "WARNING: go build ./bench/cmd/tiermount failed ($(grep -v '^#' "$OUTBASE/bin/tiermount-build.log" | head -n 1)); set TIERMOUNT_BIN"
  fi
  if [ -n "${TESSERA_BIN:-}" ]; then TESSERA=$TESSERA_BIN
  else
    TESSERA=$OUTBASE/bin/tessera
    ( cd "$REPO" && go build -o "$TESSERA" ./cmd/tessera ) >"$OUTBASE/bin/tessera-build.log" 2>&1 \
      || die "go build ./cmd/tessera failed (set TESSERA_BIN to a built binary): $(grep -v '^#' "$OUTBASE/bin/tessera-build.log" | head -n 3)"
  fi
}
# has_flag ROLE FLAG: does `tessera ROLE -h` list --FLAG? (The help is read whole first: grep -q
# stopping at the first match would kill tessera with SIGPIPE, and pipefail would make that a no.)
has_flag() { local h; h=$("$TESSERA" "$1" -h 2>&1); grep -q -- "-$2\b" <<< "$h"; }

# ---------------------------------------------------------------- TLS
# TLS is every role's default (issue 12). tls_init DIR [HOSTS]: a CA and the
# certificates of meta (valid for 127.0.0.1 and HOSTS), mount (client-rw) and
# admin in DIR, made with `tessera certs`; tls_issue NAME ROLE [HOSTS] makes
# another (a block server's, valid for its address); tls_args NAME prints the
# flags that use NAME's certificate. With a binary older than TLS they make
# nothing and print nothing.
TLSDIR=""
tls_init() {
  TLSDIR=""
  has_flag meta tls-cert || return 0
  TLSDIR=$1
  "$TESSERA" certs init --dir "$TLSDIR" --force >/dev/null || return 1
  tls_issue meta meta "127.0.0.1${2:+,$2}" && tls_issue mount client-rw && tls_issue admin admin
}
tls_issue() {
  [ -n "$TLSDIR" ] || return 0
  "$TESSERA" certs issue "$1" --role "$2" ${3:+--host "$3"} --dir "$TLSDIR" --force >/dev/null
}
tls_args() { [ -n "$TLSDIR" ] && echo --tls-cert "$TLSDIR/$1.crt" --tls-key "$TLSDIR/$1.key" --tls-ca "$TLSDIR/ca.crt"; return 0; }

proc_sample() { "$BR" proc "$1" 2>/dev/null; }   # "cpu_s hwm_kib nprocs max_hwm_kib"
cpu_of() { local s; s=$(proc_sample "$1") || { echo nan; return; }; echo "${s%% *}"; }
cpu_sum() { # cpu_sum PID... : summed CPU seconds
  local p t=0 c
  for p in "$@"; do c=$(cpu_of "$p"); [ "$c" = nan ] || t=$(awk -v a="$t" -v b="$c" 'BEGIN{printf "%.2f", a+b}'); done
  echo "$t"
}

# ---------------------------------------------------------------- processes
# Every process we start: PIDS (all), with a kind for the stop order.
declare -a PIDS_MOUNT=() PIDS_SRV=()
declare -A MOUNT_OF=()   # pid -> mount point
# start_bg LOGFILE KIND CMD...: start in background; echo nothing, set LASTPID.
start_bg() {
  local logf=$1 kind=$2; shift 2
  "$@" >"$logf" 2>&1 &
  LASTPID=$!
  if [ "$kind" = mount ]; then PIDS_MOUNT+=("$LASTPID"); else PIDS_SRV+=("$LASTPID"); fi
}
# wait_ready PID LOGFILE PATTERN SECONDS: wait for PATTERN in the log, fail if PID dies.
wait_ready() {
  local p=$1 f=$2 pat=$3 n=$(( ${4:-30} * 10 ))
  while ! grep -q "$pat" "$f" 2>/dev/null; do
    if ! alive "$p"; then log "process $p exited before ready: $(grep -v '^\s*$' "$f" | tail -n 3 | tr '\n' ' ')"; return 1; fi
    n=$((n-1)); [ $n -le 0 ] && { log "process $p not ready after ${4:-30}s: $(tail -n 2 "$f" | tr '\n' ' ')"; return 1; }
    sleep 0.1
  done
}
# stop_pid PID [SIG]: SIGTERM (or SIG), wait, SIGKILL if it lingers.
stop_pid() {
  local p=$1
  alive "$p" || { wait "$p" 2>/dev/null; return 0; }
  kill -"${2:-TERM}" "$p" 2>/dev/null
  wait_gone "$p" 30 || { log "pid $p still alive 30 s after SIG${2:-TERM}: SIGKILL"; kill -KILL "$p" 2>/dev/null; wait_gone "$p" 5; }
}
# start_mount LOGFILE MNT [--cache-tier URL] ARGS...: tessera mount (or bench tiermount
# when the binary lacks --cache-tier); sets LASTPID; returns 1 on failure.
TIER_VIA=""
HELPER_ARGS=()   # e.g. (--uploads 4): mount with bench/cmd/tiermount and these client knobs
start_mount() {
  local logf=$1 mnt=$2; shift 2
  local tier="" args=()
  while [ $# -gt 0 ]; do
    case $1 in --cache-tier) tier=$2; shift 2 ;; *) args+=("$1"); shift ;; esac
  done
  mkdir -p "$mnt"
  if { [ -n "$tier" ] && ! has_flag mount cache-tier; } || [ ${#HELPER_ARGS[@]} -gt 0 ]; then
    [ -n "$tier" ] && TIER_VIA="bench/cmd/tiermount (tessera mount has no --cache-tier)"
    # shellcheck disable=SC2046 # tls_args: paths without spaces
    start_bg "$logf" mount "$TIERMOUNT" ${tier:+--cache-tier "$tier"} "${HELPER_ARGS[@]}" $(tls_args mount) "${args[@]}" "$mnt"
  else
    [ -n "$tier" ] && { TIER_VIA="tessera mount --cache-tier"; args=(--cache-tier "$tier" "${args[@]}"); }
    # shellcheck disable=SC2046
    start_bg "$logf" mount "$TESSERA" mount $(tls_args mount) "${args[@]}" "$mnt"
  fi
  MOUNT_OF[$LASTPID]=$mnt
  wait_ready "$LASTPID" "$logf" 'mount: ready' 60 || return 1
  fuse_mounted "$mnt" || { log "mount $mnt: ready printed but not in /proc/mounts"; return 1; }
}
stop_mount() { # stop_mount PID: SIGTERM unmounts; fusermount -u as fallback
  local p=$1 m=${MOUNT_OF[$1]:-}
  stop_pid "$p"
  if [ -n "$m" ] && fuse_mounted "$m"; then fusermount_u "$m" || fusermount_u "$m" -z || umount -l "$m" 2>/dev/null; fi
  unset "MOUNT_OF[$p]"
}
stop_all_mounts() { local p; for p in "${PIDS_MOUNT[@]}"; do stop_mount "$p"; done; PIDS_MOUNT=(); }
stop_all_servers() { # block servers and memcached first, meta last (it was started first)
  local i
  for ((i=${#PIDS_SRV[@]}-1; i>=0; i--)); do stop_pid "${PIDS_SRV[$i]}"; done
  PIDS_SRV=()
}

# ---------------------------------------------------------------- namespaces
NS_PFX="tb$$"          # namespace tb<pid>-<i>, veths tb<pid>x<i>h / ...n (<= 15 chars)
declare -a NS_MADE=()
ns_name() { echo "$NS_PFX-$1"; }
ns_veth() { echo "${NS_PFX}x$1$2"; }     # ns_veth I h|n
ns_addr() { echo "$SUBNET.$((4*$1+2))"; } # address inside namespace I
ns_gw() { echo "$SUBNET.$((4*$1+1))"; }   # root side of veth I
# ns_create I: namespace I with its veth pair, addresses and the one route.
ns_create() {
  local i=$1 ns vh vn
  ns=$(ns_name "$i") vh=$(ns_veth "$i" h) vn=$(ns_veth "$i" n)
  ip netns add "$ns" || return 1
  NS_MADE+=("$i")
  ip link add "$vh" type veth peer name "$vn" netns "$ns" || return 1
  ip addr add "$(ns_gw "$i")/30" dev "$vh" || return 1
  ip link set "$vh" up || return 1
  ip -n "$ns" link set lo up || return 1
  ip -n "$ns" addr add "$(ns_addr "$i")/30" dev "$vn" || return 1
  ip -n "$ns" link set "$vn" up || return 1
  ip -n "$ns" route add "$SUBNET.0/24" via "$(ns_gw "$i")" || return 1
}
# ns_limit I RATE_MIB: tbf on both ends of veth I (RATE in MiB/s; 0 = remove).
ns_limit() {
  local i=$1 r=$2 ns vh vn
  ns=$(ns_name "$i") vh=$(ns_veth "$i" h) vn=$(ns_veth "$i" n)
  tc qdisc del dev "$vh" root 2>/dev/null; tc -n "$ns" qdisc del dev "$vn" root 2>/dev/null
  [ "$r" = 0 ] && return 0
  # burst must hold a GSO segment (64 KiB) or tbf drops it; 512 KiB = 10 ms at 50 MiB/s.
  # latency sets the queue length (TBF_LATENCY, default 50ms = 2.5 MB at 50 MiB/s).
  tc qdisc add dev "$vh" root tbf rate "${r}mibps" burst 512k latency "${TBF_LATENCY:-50ms}" || return 1
  tc -n "$ns" qdisc add dev "$vn" root tbf rate "${r}mibps" burst 512k latency "${TBF_LATENCY:-50ms}" || return 1
}
# tbf_drops I: packets dropped so far by the qdiscs on both ends of veth I
tbf_drops() {
  { tc -s qdisc show dev "$(ns_veth "$1" h)"; tc -n "$(ns_name "$1")" -s qdisc show dev "$(ns_veth "$1" n)"; } 2>/dev/null |
    awk '/dropped/ { for (i=1;i<=NF;i++) if ($i=="(dropped") { gsub(",","",$(i+1)); d+=$(i+1) } } END { print d+0 }'
}
# veth_bytes I: "tx rx" bytes of the root side of veth I (tx = towards the namespace)
veth_bytes() {
  local vh; vh=$(ns_veth "$1" h)
  echo "$(cat /sys/class/net/"$vh"/statistics/tx_bytes) $(cat /sys/class/net/"$vh"/statistics/rx_bytes)"
}
ns_delete_all() {
  local i
  for i in "${NS_MADE[@]}"; do
    [ -n "$i" ] || continue
    ip netns del "$(ns_name "$i")" 2>/dev/null
    ip link del "$(ns_veth "$i" h)" 2>/dev/null
  done
  NS_MADE=()
}
# check_netns: can we make a namespace with a veth and a tbf on it? (uses index 63)
check_netns() {
  local i=63 ok=0
  if ns_create $i && ns_limit $i 50; then ok=1; fi
  ip netns del "$(ns_name $i)" 2>/dev/null; ip link del "$(ns_veth $i h)" 2>/dev/null
  NS_MADE=("${NS_MADE[@]/$i}")
  [ $ok = 1 ]
}

LIB_CLEANED=0
lib_cleanup() {
  [ "$LIB_CLEANED" = 1 ] && return; LIB_CLEANED=1
  trap '' INT TERM
  stop_all_mounts
  stop_all_servers
  ns_delete_all
  if [ -n "${W:-}" ] && [ -d "$W" ]; then
    local left; left=$(grep -F "$W" /proc/mounts)
    if [ -n "$left" ]; then log "WARNING: still mounted: $left"
    elif [ "${KEEP:-0}" = 1 ]; then log "kept work dir $W"
    else rm -rf "$W"; fi
  fi
  local nsleft; nsleft=$(ip netns list 2>/dev/null | grep -c "^$NS_PFX-")
  log "cleanup: namespaces left: $nsleft; our mounts left: $( [ -n "${W:-}" ] && grep -cF "$W" /proc/mounts || echo 0)"
}
