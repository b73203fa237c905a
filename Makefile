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

.PHONY: help run test test-short test-browser console-screenshots bench loadtest loadtest-intake loadtest-flap loadtest-latency profile lint fuzz vuln proto

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-11s %s\n", $$1, $$2}'

run: ## run pushd with every role on ./data (dev mode: console logs, a dev app with printed keys, in-process APNs/FCM simulators)
	$(GO) run ./cmd/pushd serve --dev --sim

test: ## go vet and every test with the race detector
	$(GO) vet ./...
	$(GO) test -race ./...

test-short: ## the tests in -short mode (skips the slow ones)
	$(GO) test -race -short ./...

# The console's browser tests need Chromium: scripts/install-chromium.sh installs Debian's
# (apt, as root) when none is on PATH. PUSHD_BROWSER_TESTS=required makes a missing browser a
# failure instead of a skip.
test-browser: ## install Chromium if missing, then the web console's browser tests (e2e, headless)
	scripts/install-chromium.sh
	PUSHD_BROWSER_TESTS=required $(GO) test -race -count=1 -run 'TestE2EConsole' ./e2e/

console-screenshots: ## run the console's browser tests and keep their screenshots in docs/console/
	scripts/install-chromium.sh
	PUSHD_BROWSER_TESTS=required PUSHD_CONSOLE_SCREENSHOTS=$(CURDIR)/docs/console $(GO) test -count=1 -run 'TestE2EConsoleBrowser$$' ./e2e/

# Each line runs one benchmark and prints its figures; add yours below.
bench: ## run the benchmarks and print their figures
	@set -e; \
	run() { echo "== $$2 ($$1)"; $(GO) test -run '^$$' -bench "$$2" -benchtime $(BENCHTIME) -benchmem "$$1" | grep -E '^Benchmark|^ok|FAIL' ; }; \
	run ./api/ 'BenchmarkAPIInstallationUpsert$$'; \
	if ls query/*_test.go >/dev/null 2>&1 && grep -qs 'func Benchmark' query/*_test.go; then run ./query/ 'Benchmark'; fi; \
	if grep -qs 'func Benchmark' store/pebble/*_test.go; then run ./store/pebble/ 'Benchmark'; fi; \
	run ./api/pushapi/ 'BenchmarkPushAccept'; \
	run ./fanout/ 'BenchmarkFanoutSmallPush'; \
	run ./migrate/ 'BenchmarkMigrateImportFile$$'; \
	run ./sender/apns/ 'BenchmarkSenderAPNsPool$$'; \
	run ./sender/fcm/ 'BenchmarkSenderFCMPool$$'; \
	run ./sender/direct/ 'BenchmarkDirect'; \
	run ./sender/vivo/ 'BenchmarkSenderVivoPool$$'; \
	run ./sender/oppo/ 'BenchmarkSenderOppoPool$$'; \
	run ./sender/mz/ 'BenchmarkSenderMzPool$$'; \
	run ./sender/hms/ 'BenchmarkSenderHMSPool$$'; \
	run ./sender/mi/ 'BenchmarkSenderMiPool$$'; \
	run ./sender/honor/ 'BenchmarkSenderHonorPool$$'; \
	run ./internal/clustertest/ 'BenchmarkClusterFanout'; \
	if grep -qs 'func Benchmark' bench/*_test.go; then run ./bench/ 'Benchmark(DryRun|Scan|Pipeline)'; fi; \
	echo "== BenchmarkGatewayIdle (./bench/; PUSHD_BENCH_GATEWAY_CONNS=100000 for issue 13's figure)"; \
	$(GO) test -run '^$$' -bench 'BenchmarkGatewayIdle' -benchtime 1x -timeout 30m ./bench/ | grep -E '^Benchmark|^ok|FAIL'

LOADTEST_REPORT ?= loadtest-report.json
LOADTEST_HTML   ?= $(LOADTEST_REPORT:.json=.html)
loadtest: ## load test: real pushd + simulators on 127.0.0.1, per-token delivery proof, JSON + HTML report (LOADTEST_FLAGS="--installations 500")
	@rc=0; scripts/loadtest.sh --report $(LOADTEST_REPORT) --html $(LOADTEST_HTML) $(LOADTEST_FLAGS) || rc=$$?; \
	[ -f $(LOADTEST_HTML) ] && echo "HTML report: $(abspath $(LOADTEST_HTML))"; exit $$rc

# Intake and upserts (issue 16, item 6): upserts and pushes per second at max (closed loop),
# p50/p99 of pushes at INTAKE_RATE/s (open loop), pushd's CPU per request; each beside the floor
# (the same generator against a fasthttp server answering 200 at once) measured in the same run.
# INTAKE_PROFILE_DIR=dir adds a CPU and an allocation profile of pushd over the run.
INTAKE_RATE ?= 5000
loadtest-intake: ## load test of the intake: upserts/s and pushes/s at max, p99 at INTAKE_RATE=5000/s, CPU per request, each as a ratio to the floor
	scripts/loadtest-intake.sh --rate $(INTAKE_RATE) --report loadtest-intake.json $(INTAKE_FLAGS)

# The same whole-population push twice in one run: with the simulators answering at once, then
# with LATENCY added to every answer (pushsim's POST /_latency); prints both rates and the ratio.
LATENCY              ?= 20ms
LATENCY_INSTALLATIONS ?= 200000
loadtest-latency: ## load test: one push at 0 and at LATENCY=20ms per gateway answer, both rates and their ratio (target ≥ 0.9)
	LOADTEST_SIM_INVALID_RATE=0 scripts/loadtest.sh --installations $(LATENCY_INSTALLATIONS) --latency-compare $(LATENCY) \
		--report loadtest-latency.json --html loadtest-latency.html $(LOADTEST_FLAGS)

# The flapping scenario (issue 20): FLAP_DEVICES Android devices, half hybrid over the six
# vendors, all on the own channel too, dropping and reconnecting while FLAP_PUSHES own_first
# pushes go out; every record checked against the device, vendor and webhook ledgers.
FLAP_DEVICES ?= 10000
FLAP_PUSHES  ?= 5
loadtest-flap: ## load test: the own_first flapping scenario on the real binary (FLAP_DEVICES=10000, FLAP_PUSHES=5)
	PUSHD_FLAP_DEVICES=$(FLAP_DEVICES) PUSHD_FLAP_PUSHES=$(FLAP_PUSHES) $(GO) test -count=1 -v -timeout 60m \
		-run 'TestE2EFlappingOwnFirst' ./e2e/ | grep -E 'flapping|^(---|ok|FAIL)|_test.go'

# A 100,000-device push, iOS only, to the APNs simulator, profiled through pushd's --pprof:
# consecutive 2 s CPU profiles over the push (merged by pprof) and the allocation profile
# before and after it (read with -base).
PROFILE_DIR          ?= profile
PROFILE_INSTALLATIONS ?= 100000
profile: ## CPU and allocation profiles of a 100k push through the load test; prints the pprof -top heads (PROFILE_DIR=profile)
	mkdir -p $(PROFILE_DIR) && rm -f $(PROFILE_DIR)/all-cpu-*.pb.gz $(PROFILE_DIR)/all-allocs*.pb.gz
	LOADTEST_PROFILE_DIR=$(PROFILE_DIR) LOADTEST_SIM_INVALID_RATE=0 scripts/loadtest.sh --installations $(PROFILE_INSTALLATIONS) \
		--ios-fraction 1 --pushes all --report $(PROFILE_DIR)/loadtest-report.json --html $(PROFILE_DIR)/loadtest-report.html $(LOADTEST_FLAGS)
	@echo "== CPU profile of the push (top 25 by flat time; $(PROFILE_DIR)/all-cpu-*.pb.gz)"
	@$(GO) tool pprof -top -nodecount 25 $(PROFILE_DIR)/all-cpu-*.pb.gz 2>/dev/null | head -n 32
	@echo "== the same by cumulative time (where pushd's own code spends it)"
	@$(GO) tool pprof -top -cum -nodecount 30 $(PROFILE_DIR)/all-cpu-*.pb.gz 2>/dev/null | sed -n '7,37p'
	@echo "== allocations of the push (top 25 by bytes; -base $(PROFILE_DIR)/all-allocs-before.pb.gz $(PROFILE_DIR)/all-allocs.pb.gz)"
	@$(GO) tool pprof -top -nodecount 25 -sample_index=alloc_space -base $(PROFILE_DIR)/all-allocs-before.pb.gz $(PROFILE_DIR)/all-allocs.pb.gz 2>/dev/null | head -n 32
	@echo "profiles and reports in $(abspath $(PROFILE_DIR)); go tool pprof -http=: $(PROFILE_DIR)/all-cpu-*.pb.gz to browse"

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
