# pushd — `make help` lists the targets.
SHELL := /usr/bin/env bash
export PATH := /usr/local/go/bin:$(PATH)

GO        ?= go
# Fuzz budgets are counts (Nx), not durations: a duration budget trips Go 1.26's
# coordinator race at the deadline (golang/go#75804, fixed in 1.27) and fails a
# target that found nothing.
FUZZTIME  ?= 100000x
BENCHTIME ?= 3s
STATICCHECK_VERSION := $(shell cat .staticcheck-version)

.PHONY: help run test test-short bench loadtest lint fuzz vuln proto

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-11s %s\n", $$1, $$2}'

run: ## run pushd with every role on ./data (dev mode: console logs, a dev app with printed keys, in-process APNs/FCM simulators)
	$(GO) run ./cmd/pushd serve --dev --sim

test: ## go vet and every test with the race detector
	$(GO) vet ./...
	$(GO) test -race ./...

test-short: ## the tests in -short mode (skips the slow ones)
	$(GO) test -race -short ./...

# Each line runs one benchmark and prints its figures; add yours below.
bench: ## run the benchmarks and print their figures
	@set -e; \
	run() { echo "== $$2 ($$1)"; $(GO) test -run '^$$' -bench "$$2" -benchtime $(BENCHTIME) -benchmem "$$1" | grep -E '^Benchmark|^ok|FAIL' ; }; \
	run ./api/ 'BenchmarkAPIInstallationUpsert$$'; \
	if ls query/*_test.go >/dev/null 2>&1 && grep -qs 'func Benchmark' query/*_test.go; then run ./query/ 'Benchmark'; fi; \
	if grep -qs 'func Benchmark' store/pebble/*_test.go; then run ./store/pebble/ 'Benchmark'; fi; \
	run ./api/pushapi/ 'BenchmarkPushAccept'; \
	run ./migrate/ 'BenchmarkMigrateImportFile$$'; \
	run ./sender/apns/ 'BenchmarkSenderAPNsPool$$'; \
	run ./sender/direct/ 'BenchmarkDirect'; \
	run ./sender/vivo/ 'BenchmarkSenderVivoPool$$'; \
	run ./sender/oppo/ 'BenchmarkSenderOppoPool$$'; \
	run ./sender/mz/ 'BenchmarkSenderMzPool$$'; \
	run ./internal/clustertest/ 'BenchmarkClusterFanout'; \
	if grep -qs 'func Benchmark' bench/*_test.go; then run ./bench/ 'Benchmark'; fi

loadtest: ## load test: real pushd + simulators on 127.0.0.1, per-token delivery proof (LOADTEST_FLAGS="--installations 500")
	scripts/loadtest.sh --report $(or $(LOADTEST_REPORT),loadtest-report.json) $(LOADTEST_FLAGS)

lint: ## go vet and staticcheck (pinned in .staticcheck-version)
	$(GO) vet ./...
	@if GOBIN=$(CURDIR)/.bin $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) 2>/dev/null; then \
		$(CURDIR)/.bin/staticcheck ./... ; \
	else echo "staticcheck $(STATICCHECK_VERSION) could not be installed (offline?); ran go vet only"; fi

fuzz: ## run every fuzz target for FUZZTIME executions each (default 100000x)
	@set -e; \
	grep -rl --include='*_test.go' '^func Fuzz' . | sort | while read -r f; do \
		dir=$$(dirname "$$f"); \
		for fn in $$(grep -oE '^func Fuzz[A-Za-z0-9_]*' "$$f" | cut -d' ' -f2); do \
			echo "== $$fn ($$dir)"; \
			$(GO) test -run '^$$' -fuzz "^$$fn$$" -fuzztime $(FUZZTIME) "./$$dir" ; \
		done; \
	done

vuln: ## govulncheck (needs network)
	$(GO) run golang.org/x/vuln/cmd/govulncheck@latest ./...

proto: ## regenerate sender/direct/lcproto from its .proto (needs protoc and protoc-gen-go v1.33.0; the build does not)
	PATH="$(PATH):$$($(GO) env GOPATH)/bin" protoc --go_out=. --go_opt=paths=source_relative sender/direct/lcproto/messages.proto
