# confighub: every tool is installed with `go install` at a pinned version
# into ./bin, so a fresh machine needs only Go.
SHELL := /bin/bash
GO    ?= go
BIN   := $(CURDIR)/bin
export PATH := $(BIN):$(PATH)

BUF_VERSION               := v1.75.0
PROTOC_GEN_GO_VERSION     := v1.36.12
PROTOC_GEN_GO_GRPC_VERSION := v1.6.2
GRPCURL_VERSION           := v1.9.4
GHZ_VERSION               := v0.93.0
HEALTH_PROBE_VERSION      := v0.4.62
GOLANGCI_LINT_VERSION     := v2.15.0
HELM_VERSION              := v3.22.0

GRPCURL_LOG := $(CURDIR)/bin/grpcurl-e2e.log
TEST_FLAGS  ?=
BREAKING_AGAINST ?= .git\#branch=main

.PHONY: test-gokong robustness soak deploy-test test-etcd all chromium run test generate gen-check lint lint-proto vet gotest grpcurl-check self-contained breaking bench fuzz tools demo clean

all: test

# stamp files carry the version, so bumping a version reinstalls the tool
$(BIN)/.buf-$(BUF_VERSION):
	GOBIN=$(BIN) $(GO) install github.com/bufbuild/buf/cmd/buf@$(BUF_VERSION) && touch $@
$(BIN)/.protoc-gen-go-$(PROTOC_GEN_GO_VERSION):
	GOBIN=$(BIN) $(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION) && touch $@
$(BIN)/.protoc-gen-go-grpc-$(PROTOC_GEN_GO_GRPC_VERSION):
	GOBIN=$(BIN) $(GO) install google.golang.org/grpc/cmd/protoc-gen-go-grpc@$(PROTOC_GEN_GO_GRPC_VERSION) && touch $@
$(BIN)/.grpcurl-$(GRPCURL_VERSION):
	GOBIN=$(BIN) $(GO) install github.com/fullstorydev/grpcurl/cmd/grpcurl@$(GRPCURL_VERSION) && touch $@
$(BIN)/.grpc-health-probe-$(HEALTH_PROBE_VERSION):
	GOBIN=$(BIN) $(GO) install github.com/grpc-ecosystem/grpc-health-probe@$(HEALTH_PROBE_VERSION) && touch $@
$(BIN)/.ghz-$(GHZ_VERSION):
	GOBIN=$(BIN) $(GO) install github.com/bojand/ghz/cmd/ghz@$(GHZ_VERSION) && touch $@
$(BIN)/.golangci-lint-$(GOLANGCI_LINT_VERSION):
	GOBIN=$(BIN) $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION) && touch $@
$(BIN)/.helm-$(HELM_VERSION):
	GOBIN=$(BIN) $(GO) install helm.sh/helm/v3/cmd/helm@$(HELM_VERSION) && touch $@

TOOLS := $(BIN)/.buf-$(BUF_VERSION) $(BIN)/.protoc-gen-go-$(PROTOC_GEN_GO_VERSION) \
	$(BIN)/.protoc-gen-go-grpc-$(PROTOC_GEN_GO_GRPC_VERSION) $(BIN)/.grpcurl-$(GRPCURL_VERSION) \
	$(BIN)/.grpc-health-probe-$(HEALTH_PROBE_VERSION)

## tools: install the pinned tools into ./bin
tools: $(TOOLS)

## run: start the hub on the embedded bbolt store with the example sinks
## (installs grpcurl and grpc-health-probe first: the README's tour uses them)
run: $(BIN)/.grpcurl-$(GRPCURL_VERSION) $(BIN)/.grpc-health-probe-$(HEALTH_PROBE_VERSION)
	@echo "status page: http://127.0.0.1:9464/ (once the hub logs 'confighub serving'; /metrics beside it)"
	$(GO) run ./cmd/confighub --data-dir ./data --sinks examples/sinks.yaml

## generate: regenerate the Go code from api/ (buf, local plugins)
generate: $(TOOLS)
	buf generate

## gen-check: fail when the committed generated code is stale
gen-check: generate
	@if [ -n "$$(git status --porcelain -- api)" ]; then \
		echo "generated code is stale: run 'make generate' and commit:"; git status --porcelain -- api; exit 1; fi

lint-proto: $(TOOLS)
	buf lint
	buf format --exit-code -d

## breaking: buf breaking against main (override BREAKING_AGAINST)
breaking: $(TOOLS)
	buf breaking --against '$(BREAKING_AGAINST)'

## lint: proto lint and format, go vet, golangci-lint
# MODULES: every Go module of the repository (the root, the light API module,
# and the checks of deploy/, which keep k8s.io/api and Prometheus' parser out
# of the root module)
MODULES := . api deploy/test

lint: lint-proto vet $(BIN)/.golangci-lint-$(GOLANGCI_LINT_VERSION)
	for m in $(MODULES); do (cd $$m && golangci-lint run ./...) || exit 1; done

vet:
	for m in $(MODULES); do (cd $$m && $(GO) vet ./...) || exit 1; done

## chromium: the status page's browser tests need Chromium; installed with
## apt-get when missing and root, else a message says how (or set
## CONFIGHUB_SKIP_BROWSER=1 to skip those tests, which then say so)
chromium:
	@if [ "$$CONFIGHUB_SKIP_BROWSER" = 1 ]; then echo "CONFIGHUB_SKIP_BROWSER=1: the browser tests are skipped"; \
	elif command -v chromium >/dev/null || command -v chromium-browser >/dev/null || [ -n "$$CONFIGHUB_CHROMIUM" ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "installing chromium for the browser tests (apt-get)"; \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) || \
			{ echo "apt-get install chromium failed"; exit 1; }; \
	else echo "the browser tests need Chromium: run 'sudo apt-get install -y chromium' (Debian/Ubuntu), set CONFIGHUB_CHROMIUM=/path/to/chrome, or CONFIGHUB_SKIP_BROWSER=1 to skip them"; exit 1; fi

gotest: $(TOOLS) chromium
	rm -f $(GRPCURL_LOG)
	CONFIGHUB_GRPCURL=$(BIN)/grpcurl CONFIGHUB_GRPCURL_LOG=$(GRPCURL_LOG) \
		$(GO) test -race -timeout 12m $(TEST_FLAGS) ./...
	# the status page's time bounds, on the hub as built (no race detector)
	$(GO) test -count=1 -timeout 5m -run 'TestThousandSinks' $(TEST_FLAGS) ./internal/statuspage
	cd api && $(GO) test -race -timeout 5m $(TEST_FLAGS) ./...

## grpcurl-check: the e2e tests must have run the real grpcurl binary
grpcurl-check:
	@test -s $(GRPCURL_LOG) || { echo "e2e tests did not run grpcurl (no $(GRPCURL_LOG))"; exit 1; }
	@grep -q "^github.com/fullstorydev/grpcurl $(GRPCURL_VERSION)	$(BIN)/grpcurl	" $(GRPCURL_LOG) || { echo "e2e tests did not use $(BIN)/grpcurl built from github.com/fullstorydev/grpcurl $(GRPCURL_VERSION)"; exit 1; }
	@echo "grpcurl-check: $$(wc -l < $(GRPCURL_LOG)) real grpcurl $(GRPCURL_VERSION) invocations"

## self-contained: nothing tracked refers to a folder or brief outside the
## repository (a clone has neither); the [d]/[N] keep this line from matching
self-contained:
	@if git grep -n -I -e '\.\./share[d]' -e 'DESIG[N]\.md' -- . ; then \
		echo "self-contained: the lines above refer to files outside the repository"; exit 1; fi

## test-gokong: go-kong's own integration tests (the go-kong version go.mod
## requires, from the module cache) against the Kong emulator, one fresh
## emulator per top-level test, in DB mode and DB-less; prints the counts
test-gokong:
	$(GO) run ./test/gokong $(GOKONG_FLAGS)

## deploy-test: the Helm chart (helm lint and template of its ci/ value sets,
## every object decoded into the k8s.io/api types, flags against the hub's
## --help, single node against deploy/single-node), the kustomize manifests
## and the Grafana dashboard's PromQL (deploy/test, its own module)
deploy-test: $(BIN)/.helm-$(HELM_VERSION)
	cd deploy/test && CONFIGHUB_HELM=$(BIN)/helm $(GO) test -count=1 -timeout 5m $(TEST_FLAGS) ./...

## test: everything CI runs
test: self-contained lint-proto gen-check vet gotest grpcurl-check deploy-test test-gokong

## bench: the performance table (separate from test)
bench: $(TOOLS) $(BIN)/.ghz-$(GHZ_VERSION)
	$(GO) run ./test/bench $(BENCH_FLAGS)

## fuzz: run every fuzz target for FUZZTIME each (default 30s; not part of test/CI)
FUZZTIME ?= 30s
fuzz:
	@set -e; for f in $$(grep -rl --include='*_test.go' '^func Fuzz' . | sort); do \
		pkg=./$$(dirname $${f#./}); \
		for t in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$f); do \
			echo "== $$pkg $$t ($(FUZZTIME))"; \
			$(GO) test -run '^$$' -fuzz "^$$t\$$" -fuzztime $(FUZZTIME) $$pkg; \
		done; \
	done

## demo: three emulated gateways, the hub, a pushed fixture, the live status table
demo:
	./scripts/demo.sh

clean:
	rm -rf $(BIN) data bench/results soak

## test-etcd: the replica e2e tests (takeover after kill -9, etcd restart and
## unreachable, the convergence metric over replicas) against a real etcd
## server process: Debian's etcd-server, installed with apt-get when missing
test-etcd: $(TOOLS)
	@if ! command -v etcd >/dev/null; then \
		echo "etcd not found: apt-get install -y etcd-server"; \
		apt-get install -y etcd-server || { apt-get update && apt-get install -y etcd-server; }; fi
	CONFIGHUB_ETCD_BIN=$$(command -v etcd) CONFIGHUB_TIMING=strict \
		$(GO) test -count=1 -timeout 15m -v -run 'TestReplicas' ./test/e2e

## robustness: the shipped hub under a seeded random mix of pushers, faulty
## emulated gateways, resuming watchers and kill -9, then the history
## checker (make test runs a short one). SEED=0 picks a random seed (printed);
## DURATION (default 2m) is the faulty part; KILL_EVERY=0 means a quarter of
## it (at most 20s); MODE=replica runs two replicas on a real etcd server
## ($$CONFIGHUB_ETCD_BIN or etcd on PATH: apt-get install -y etcd-server) and
## also kills replicas and restarts etcd; BREAK=<invariant> corrupts one
## recorded answer to show that check fail
SEED       ?= 0
MODE       ?= single
KILL_EVERY ?= 0
BREAK      ?=
robustness:
	$(GO) test -count=1 -v -timeout 3h -run '^TestRobustness$$' ./test/robustness \
		-robustness.seed=$(SEED) -robustness.duration=$(or $(DURATION),2m) \
		-robustness.kill-every=$(KILL_EVERY) -robustness.mode=$(MODE) -robustness.break=$(BREAK)

## soak: the same mix without kills for DURATION (default 10m; DURATION=1h
## for the real one), sampling the hub every 10s into SOAK_OUT/soak.csv and
## soak.png; passes when RSS, heap, goroutines and open files are flat over
## the last two thirds (the bounds are printed)
SOAK_OUT ?= $(CURDIR)/soak
soak:
	$(GO) test -count=1 -v -timeout 3h -run '^TestSoak$$' ./test/robustness \
		-robustness.seed=$(SEED) -robustness.soak=$(or $(DURATION),10m) -robustness.out=$(SOAK_OUT)
