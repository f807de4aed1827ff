# Tessera's developer targets. `make test` is what CI runs (.ci/run).
GO ?= go

.PHONY: build test race unit e2e fuzz bench verify up

build:
	$(GO) build -o bin/tessera ./cmd/tessera

test:
	bash scripts/test.sh

race:
	$(GO) test -race -count=1 ./internal/... ./cmd/...

unit:
	$(GO) test -count=1 ./internal/... ./cmd/...

e2e:
	$(GO) test -count=1 -v ./test/...

# Each fuzz target for 30 s (FUZZTIME to change).
FUZZTIME ?= 30s
fuzz:
	@for pkg in $$($(GO) list ./internal/...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done

bench: build
	bash bench/run.sh $(BENCH_ARGS)

verify:
	@test -z "$$(gofmt -l cmd internal test bench)" || (gofmt -l cmd internal test bench; exit 1)
	$(GO) vet ./...
	@cp go.mod /tmp/tessera-go.mod.bak; cp go.sum /tmp/tessera-go.sum.bak; \
	 $(GO) mod tidy; \
	 if ! diff -q go.mod /tmp/tessera-go.mod.bak >/dev/null || ! diff -q go.sum /tmp/tessera-go.sum.bak >/dev/null; then \
	   echo "go mod tidy changed go.mod/go.sum"; exit 1; fi

up:
	bash scripts/up.sh
