#!/usr/bin/env bash
# The Jepsen-style chaos run (test/chaos) for as long as asked:
#   bench/chaos.sh [--minutes N] [--seed S] [--dir DIR]
# 3 etcd members, 3 metas, 3 block servers and 3 mounts, real processes on
# loopback; faults on a schedule drawn from the seed. Prints progress and,
# on its last line, the summary: operations, faults, errors by kind and each
# invariant's result. Exits non-zero when an invariant failed.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d /tmp/tessera-chaos-bin.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/chaos" ./test/chaos/cmd/chaos
go build -o "$tmp/tessera" ./cmd/tessera
"$tmp/chaos" --bin "$tmp/tessera" "$@"
