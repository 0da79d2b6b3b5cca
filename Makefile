# briefd: the two commands a new user needs are `make demo` (run it) and `make test` (test it).
GO ?= go
PKGS ?= ./...

.PHONY: all build test test-short test-ts demo bench eval vet fmt servers

all: vet build test

build:
	$(GO) build ./...

# test runs the whole suite. Tests start their own nats-server (embedded) and
# redis-server processes on free loopback ports; scripts/ensure-servers.sh
# installs redis-server with apt-get when it is missing.
test: servers test-ts
	$(GO) vet $(PKGS)
	$(GO) test -count=1 -timeout 20m $(PKGS)

# test-ts runs the TypeScript SDK's tests (Node 20+ and npm; .ci/run installs
# them): unit tests, then tests against nats-server and redis-server processes
# and a worker built from this tree, the Go/TypeScript conformance test and
# the example agent loop. npm ci prefers the local cache (offline-safe once
# the packages were fetched) and installs exactly package-lock.json.
test-ts:
	cd sdk/typescript && npm ci --prefer-offline --no-audit --no-fund --loglevel=error && npm test

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
