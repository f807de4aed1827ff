#!/usr/bin/env bash
# Runs Tessera's tests: static checks, unit tests with the race detector,
# and the end-to-end tests (real processes, a real FUSE mount).
#   scripts/test.sh            what CI runs
#   FSX_OPS=1000000 scripts/test.sh   a longer random-operation run
#   scripts/test.sh --stress   the same with a CPU hog on every core
#                              (stress-ng): tests must not depend on speed
set -euo pipefail
cd "$(dirname "$0")/.."
stress=
case "${1:-}" in
--stress) stress=1 ;;
"") ;;
*) echo "usage: scripts/test.sh [--stress]" >&2; exit 2 ;;
esac
bash scripts/deps.sh --test ${stress:+--stress}
start=$(date +%s)

# Bounds on the go test runs: only a hang reaches them (tests assert no
# speed); under --stress everything takes about twice as long. The
# end-to-end package runs its tests one after another, about 16 minutes
# on an idle 2-core machine: its bound leaves room for a busy one (a run
# beside benchmarks took over 20).
scale=1
if [ -n "$stress" ]; then
	scale=3
	# One CPU-bound worker per core, at the tests' own priority, so that
	# the tests get about half the machine and are often kept waiting. The
	# hog is stopped by its PID (stress-ng then stops its workers) when
	# this script ends, also on a failure or a signal; --timeout ends it
	# anyway should this script be killed outright.
	stress-ng --cpu "$(nproc)" --cpu-method matrixprod --timeout 4h --quiet &
	hog=$!
	stop_hog() { kill "$hog" 2>/dev/null || true; wait "$hog" 2>/dev/null || true; }
	trap stop_hog EXIT
	trap 'stop_hog; exit 130' INT TERM
	echo "== stress: stress-ng (pid $hog) keeps $(nproc) cores busy"
fi

echo "== verify (gofmt, vet)"
unformatted=$(gofmt -l cmd internal test bench 2>/dev/null || true)
if [ -n "$unformatted" ]; then
	echo "gofmt would change:"; echo "$unformatted"; exit 1
fi
go vet ./...

echo "== unit tests (race detector)"
TESSERA_REQUIRE_MEMCACHED=1 go test -race -count=1 -timeout $((30 * scale))m ./internal/... ./cmd/...

echo "== statistical tests the race detector skips (placement balance)"
go test -count=1 -timeout $((5 * scale))m ./internal/placement

echo "== end-to-end tests"
go test -count=1 -timeout $((45 * scale))m ./test/... ${FSX_OPS:+-args -fsx.ops=$FSX_OPS}

echo "== all tests passed${stress:+ under stress} in $(( $(date +%s) - start ))s"
