#!/usr/bin/env bash
# Intake load test (make loadtest-intake): builds pushd and loadtest/cmd/intakeload, starts
# `pushd serve` (every role, embedded store and log) on 127.0.0.1 with a temporary data
# directory, and runs intakeload against it: installation upserts and accepted pushes per
# second (closed loop), the latency of pushes at a fixed rate (open loop), pushd's CPU per
# request from /proc, each next to the floor measured in the same run (the same generator
# against a fasthttp server that answers 200 at once, in its own process). Exits with
# intakeload's status (0 every request served, 1 some failed, 2 the run could not complete).
#
# Usage: scripts/loadtest-intake.sh [intakeload flags...]
#   e.g. scripts/loadtest-intake.sh --pushes 100000 --rate 5000 --report /tmp/intake.json
# Environment:
#   PUSHD_BIN, INTAKELOAD_BIN   prebuilt binaries (default: go build into the temp dir)
#   PUSHD_SERVE_FLAGS           extra `pushd serve` flags
#   INTAKE_PROFILE_DIR          start pushd with --pprof and write a CPU profile of the run
#                               (intake-cpu.pb.gz) and the allocations (intake-allocs*.pb.gz) there
#   LOADTEST_KEEP=1             keep the temp dir (pushd.log, data) after a passing run too
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/pushd-intake.XXXXXX")
pushd_pid=""
load_pid=""
prof_pid=""

log() { echo "loadtest-intake.sh: $*" >&2; }

stop_pid() {
	local pid=$1
	[ -n "$pid" ] || return 0
	kill -TERM "$pid" 2>/dev/null || true
	for _ in $(seq 200); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}

cleanup() {
	local rc=$?
	stop_pid "$prof_pid"
	stop_pid "$load_pid"
	stop_pid "$pushd_pid"
	if [ "${LOADTEST_KEEP:-}" = 1 ] || [ "$rc" -ne 0 ]; then
		log "logs and data kept in $work"
	else
		rm -rf "$work"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# free_port: a loopback port nothing listens on, below the kernel's ephemeral range.
free_port() {
	local port low=32768
	if [ -r /proc/sys/net/ipv4/ip_local_port_range ]; then
		read -r low _ </proc/sys/net/ipv4/ip_local_port_range
	fi
	[ "$low" -gt 12000 ] || low=61000
	for _ in $(seq 100); do
		if [ "$low" = 61000 ]; then port=$((61000 + RANDOM % 4000)); else port=$((10000 + RANDOM % (low - 10000))); fi
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			echo "$port"
			return 0
		fi
	done
	log "cannot find a free loopback port"
	return 1
}

mkdir -p "$work/bin" "$work/data"
pushd_bin=${PUSHD_BIN:-$work/bin/pushd}
load_bin=${INTAKELOAD_BIN:-$work/bin/intakeload}
(
	cd "$root"
	[ -n "${PUSHD_BIN:-}" ] || go build -o "$pushd_bin" ./cmd/pushd
	[ -n "${INTAKELOAD_BIN:-}" ] || go build -o "$load_bin" ./loadtest/cmd/intakeload
) || { log "build failed"; exit 2; }

token=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
export PUSHD_ADMIN_TOKEN=$token
prof_flags=()
[ -z "${INTAKE_PROFILE_DIR:-}" ] || prof_flags=(--pprof)
# Up to 3 starts, each on fresh ports: one can still be taken between free_port's probe and
# pushd's bind.
ready=""
for start in 1 2 3; do
	port=$(free_port)
	ops_port=$(free_port)
	gw_port=$(free_port)
	# shellcheck disable=SC2086
	"$pushd_bin" serve --addr "127.0.0.1:$port" --data "$work/data" --ops-addr "127.0.0.1:$ops_port" \
		--gateway-addr "127.0.0.1:$gw_port" "${prof_flags[@]}" ${PUSHD_SERVE_FLAGS:-} >>"$work/pushd.log" 2>&1 &
	pushd_pid=$!
	echo "$pushd_pid" >"$work/pushd.pid"
	for _ in $(seq 600); do
		kill -0 "$pushd_pid" 2>/dev/null || break
		if curl -fsS -o /dev/null --max-time 2 "http://127.0.0.1:$port/readyz" 2>/dev/null; then ready=1; break; fi
		sleep 0.1
	done
	[ -n "$ready" ] && break
	if ! kill -0 "$pushd_pid" 2>/dev/null && grep -q "address already in use" "$work/pushd.log" && [ "$start" -lt 3 ]; then
		wait "$pushd_pid" 2>/dev/null || true
		pushd_pid=""
		log "a port was taken before pushd bound it; trying others"
		continue
	fi
	break
done
if [ -z "$ready" ]; then
	log "pushd is not ready"
	tail -n 40 "$work/pushd.log" >&2 || true
	exit 2
fi
log "pushd ready on 127.0.0.1:$port (data $work/data)"

if [ -n "${INTAKE_PROFILE_DIR:-}" ]; then
	mkdir -p "$INTAKE_PROFILE_DIR"
	curl -fsS -o "$INTAKE_PROFILE_DIR/intake-allocs-before.pb.gz" "http://127.0.0.1:$ops_port/debug/pprof/allocs"
	# One CPU profile over the measured loads (the floor's included: it runs in another process).
	curl -fsS -o "$INTAKE_PROFILE_DIR/intake-cpu.pb.gz" "http://127.0.0.1:$ops_port/debug/pprof/profile?seconds=${INTAKE_PROFILE_SECONDS:-30}" &
	prof_pid=$!
fi

"$load_bin" --pushd "http://127.0.0.1:$port" --pushd-ops "http://127.0.0.1:$ops_port" --pushd-pid-file "$work/pushd.pid" "$@" &
load_pid=$!
status=0
wait "$load_pid" || status=$?
load_pid=""
if [ -n "$prof_pid" ]; then
	wait "$prof_pid" || log "the CPU profile failed"
	prof_pid=""
	curl -fsS -o "$INTAKE_PROFILE_DIR/intake-allocs.pb.gz" "http://127.0.0.1:$ops_port/debug/pprof/allocs" || true
	log "profiles in $INTAKE_PROFILE_DIR: go tool pprof -top $INTAKE_PROFILE_DIR/intake-cpu.pb.gz"
fi
exit "$status"
