#!/usr/bin/env bash
# Installs what Tessera needs on a fresh Debian machine and is missing here.
# Idempotent; run by scripts/up.sh and scripts/test.sh.
#   scripts/deps.sh --stress   also the CPU hog of scripts/test.sh --stress
set -euo pipefail

need=()
if [ "${1:-}" = "--stress" ]; then
	command -v stress-ng >/dev/null 2>&1 || need+=(stress-ng)
fi
command -v fusermount3 >/dev/null 2>&1 || need+=(fuse3)
command -v memcached >/dev/null 2>&1 || need+=(memcached)
command -v go >/dev/null 2>&1 || need+=(golang-go)
# The status page's test renders it in a real headless browser.
command -v chromium >/dev/null 2>&1 || need+=(chromium)
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
if [ ! -e /dev/fuse ]; then
	echo "deps: /dev/fuse is missing: this machine cannot mount FUSE file systems" >&2
	exit 1
fi
