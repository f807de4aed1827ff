# Tessera's developer targets. `make test` is what CI runs (.ci/run).
GO ?= go

.PHONY: build test race unit e2e fuzz bench verify up docs

# The commit goes into tessera version (go records none from a git worktree).
LDFLAGS ?= -X main.commit=$(shell git rev-parse HEAD 2>/dev/null)

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/tessera ./cmd/tessera

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

# Regenerates docs/reference/ and the package map of docs/architecture.md from
# the code; TestGeneratedDocsAreCurrent (cmd/tessera) fails when they are stale.
docs:
	$(GO) run ./cmd/tessera gendocs docs

# Regenerates the meta protocol's Go code (proto/ -> internal/meta/metarpc/metapb).
# protoc comes from Debian's protobuf-compiler; the Go plugins are installed
# at pinned versions into bin/proto-tools.
PROTOC_GEN_GO_VERSION ?= v1.36.6
PROTOC_GEN_GO_GRPC_VERSION ?= v1.5.1
PROTO_TOOLS := $(CURDIR)/bin/proto-tools

.PHONY: proto
proto:
	@command -v protoc >/dev/null || apt-get install -y protobuf-compiler
	@test -x $(PROTO_TOOLS)/protoc-gen-go || GOBIN=$(PROTO_TOOLS) $(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)
	@test -x $(PROTO_TOOLS)/protoc-gen-go-grpc || GOBIN=$(PROTO_TOOLS) $(GO) install google.golang.org/grpc/cmd/protoc-gen-go-grpc@$(PROTOC_GEN_GO_GRPC_VERSION)
	PATH=$(PROTO_TOOLS):$$PATH protoc -I proto \
	  --go_out=. --go_opt=module=tessera \
	  --go-grpc_out=. --go-grpc_opt=module=tessera \
	  proto/tessera/meta/v1/meta.proto proto/tessera/gateway/v1/gateway.proto
