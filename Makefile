# briefd: the two commands a new user needs are `make demo` (run it) and `make test` (test it).
GO ?= go
PKGS ?= ./...

.PHONY: all build test test-short demo bench eval vet fmt servers

all: vet build test

build:
	$(GO) build ./...

# test runs the whole suite. Tests start their own nats-server (embedded) and
# redis-server processes on free loopback ports; scripts/ensure-servers.sh
# installs redis-server with apt-get when it is missing.
test: servers
	$(GO) vet $(PKGS)
	$(GO) test -count=1 -timeout 20m $(PKGS)

test-short:
	$(GO) test -short -count=1 $(PKGS)

servers:
	@bash scripts/ensure-servers.sh

demo:
	$(GO) run ./cmd/publisher demo

bench:
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

# eval prints the quality yardsticks on the shared histories (bench/README.md, section 5).
eval:
	$(GO) run ./cmd/worker eval ../shared/data/histories
	$(GO) run ./cmd/worker eval --chain ../shared/data/histories

vet:
	$(GO) vet $(PKGS)

fmt:
	gofmt -w $$(git ls-files '*.go')
