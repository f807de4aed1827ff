#!/usr/bin/env bash
# Installs what Tessera needs on a fresh Debian machine and is missing here.
# Idempotent; run by scripts/up.sh and scripts/test.sh.
#   scripts/deps.sh --test     also what only the tests use: chromium (the
#                              status page rendered in a headless browser;
#                              if it cannot be installed, that test skips
#                              saying so)
#                              the etcd server (Debian's etcd-server: the
#                              tests of internal/kv/etcdkv and of meta over
#                              etcd start their own members on loopback);
#                              versitygw (Versity S3 Gateway, the S3 server
#                              the s3:// home tests start), built with go install;
#                              and libnfs-utils (nfs-ls, nfs-cp, nfs-cat: the user-space
#                              NFS client of the NFS tests, which skip without it and
#                              fail under CI=true)
#   scripts/deps.sh --test --stress   and the CPU hog of scripts/test.sh --stress
set -euo pipefail

need=()
tests=
for a in "$@"; do
	case "$a" in
	--stress) command -v stress-ng >/dev/null 2>&1 || need+=(stress-ng) ;;
	--test) tests=1 ;;
	*) echo "usage: scripts/deps.sh [--test] [--stress]" >&2; exit 2 ;;
	esac
done
command -v fusermount3 >/dev/null 2>&1 || need+=(fuse3)
command -v memcached >/dev/null 2>&1 || need+=(memcached)
command -v go >/dev/null 2>&1 || need+=(golang-go)
if [ -n "$tests" ] && ! command -v etcd >/dev/null 2>&1; then
	need+=(etcd-server)
fi
if [ -n "$tests" ] && ! command -v nfs-cp >/dev/null 2>&1; then
	need+=(libnfs-utils)
fi
if [ "${#need[@]}" -gt 0 ]; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "deps: missing ${need[*]}; run as root or install them: apt-get install -y ${need[*]}" >&2
		exit 1
	fi
	echo "deps: installing ${need[*]}" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >/dev/null || echo "deps: apt-get update failed; trying the install anyway" >&2
	apt-get install -y -qq "${need[@]}" >/dev/null
fi
if [ -n "$tests" ] && ! command -v chromium >/dev/null 2>&1; then
	if [ "$(id -u)" -eq 0 ] && { apt-get update -qq >/dev/null || true; } &&
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; then
		echo "deps: installed chromium" >&2
	else
		echo "deps: chromium could not be installed: the status page's browser test will skip" >&2
	fi
fi
# The S3-compatible server of the s3:// home tests (internal/gateway/home),
# pinned; they skip without it, and fail under CI=true.
versitygw_version=v1.8.0
if [ -n "$tests" ] && ! command -v versitygw >/dev/null 2>&1 &&
	[ ! -x "$(go env GOPATH)/bin/versitygw" ]; then
	if go install "github.com/versity/versitygw/cmd/versitygw@$versitygw_version"; then
		echo "deps: installed versitygw $versitygw_version in $(go env GOPATH)/bin" >&2
	else
		echo "deps: versitygw could not be installed: the s3:// home tests will skip (fail under CI=true)" >&2
	fi
fi
if [ ! -e /dev/fuse ]; then
	echo "deps: /dev/fuse is missing: this machine cannot mount FUSE file systems" >&2
	exit 1
fi
