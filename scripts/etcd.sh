#!/usr/bin/env bash
# Runs one etcd member for `tessera meta --meta-db etcd://…`, in the
# foreground, with the limits the etcd engine expects (package etcdkv,
# ServerFlags; docs/design/2026-11-24-etcd.md). Installs etcd-server if
# missing.
#   scripts/etcd.sh NAME DATA_DIR CLIENT_URL PEER_URL INITIAL_CLUSTER [more etcd flags]
# e.g. for one member on this machine:
#   scripts/etcd.sh s1 /var/tmp/etcd-s1 http://127.0.0.1:2379 http://127.0.0.1:2380 s1=http://127.0.0.1:2380
# and for three sites, on each site's machine, its own name and URLs with
#   INITIAL_CLUSTER=s1=http://h1:2380,s2=http://h2:2380,s3=http://h3:2380
set -euo pipefail
if [ "$#" -lt 5 ]; then
	echo "usage: scripts/etcd.sh NAME DATA_DIR CLIENT_URL PEER_URL INITIAL_CLUSTER [etcd flags]" >&2
	exit 2
fi
name=$1 data=$2 client=$3 peer=$4 cluster=$5
shift 5
if ! command -v etcd >/dev/null 2>&1; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "etcd: not installed; run as root or: apt-get install -y etcd-server" >&2
		exit 1
	fi
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq etcd-server >/dev/null
fi
mkdir -p "$data"
exec etcd --name "$name" --data-dir "$data" \
	--listen-client-urls "$client" --advertise-client-urls "$client" \
	--listen-peer-urls "$peer" --initial-advertise-peer-urls "$peer" \
	--initial-cluster "$cluster" --initial-cluster-state new \
	--max-txn-ops=16384 \
	--max-request-bytes=33554432 \
	--auto-compaction-mode=periodic \
	--auto-compaction-retention=10m \
	--quota-backend-bytes=8589934592 \
	"$@"
