#!/usr/bin/env bash
# Runs Tessera's tests: static checks, unit tests with the race detector,
# and the end-to-end tests (real processes, a real FUSE mount).
#   scripts/test.sh            what CI runs
#   FSX_OPS=1000000 scripts/test.sh   a longer random-operation run
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
start=$(date +%s)

echo "== verify (gofmt, vet)"
unformatted=$(gofmt -l cmd internal test bench 2>/dev/null || true)
if [ -n "$unformatted" ]; then
	echo "gofmt would change:"; echo "$unformatted"; exit 1
fi
go vet ./...

echo "== unit tests (race detector)"
TESSERA_REQUIRE_MEMCACHED=1 go test -race -count=1 -timeout 20m ./internal/... ./cmd/...

echo "== statistical tests the race detector skips (placement balance)"
go test -count=1 -timeout 5m ./internal/placement

echo "== end-to-end tests"
go test -count=1 -timeout 20m ./test/... ${FSX_OPS:+-args -fsx.ops=$FSX_OPS}

echo "== all tests passed in $(( $(date +%s) - start ))s"
