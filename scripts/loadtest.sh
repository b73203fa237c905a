#!/usr/bin/env bash
# Load test (make loadtest): builds pushd, pushsim and the driver, starts the gateway
# simulators and `pushd serve` on 127.0.0.1 with a temporary data directory, runs the driver
# (loadtest/cmd/loadtest) against them and exits with the driver's status
# (0 verified, 1 a verification failed, 2 the run could not complete).
#
# Usage: scripts/loadtest.sh [driver flags...]
#   e.g. scripts/loadtest.sh --installations 500 --report /tmp/loadtest.json
#   Driver flags: go run ./loadtest/cmd/loadtest -h. The script sets --pushd, --sim-stats,
#   --sim-dir, --apns-key-id, --apns-team-id, --sim-invalid-rate, --sim-seed and --pushd-pid-file.
# Environment:
#   PUSHD_BIN, PUSHSIM_BIN, LOADTEST_BIN  prebuilt binaries (default: go build into the temp dir)
#   LOADTEST_SIM_INVALID_RATE             pushsim -invalid-token-rate (default 0.1; 0 skips the invalid scenario)
#   LOADTEST_SIM_SEED                     pushsim -seed (default 1)
#   LOADTEST_VIVO_QUOTA                   day quota of the vivo profile "quota" (default 20; the quota scenario)
#   PUSHSIM_FLAGS                         extra pushsim flags (e.g. "--latency 20ms")
#   PUSHD_SERVE_FLAGS                     extra `pushd serve` flags
#   PUSHD_LISTEN_FLAG, PUSHD_DATA_FLAG    names of pushd's API listen and data-dir flags
#                                         (default: found in `pushd serve --help`)
#   LOADTEST_KEEP=1                       keep the temp dir (logs, data) after a passing run too
#   LOADTEST_PROFILE_DIR                  start pushd with --pprof and write CPU and allocation
#                                         profiles of each scenario's push there (make profile)
#   H2FLOOR_BIN                           prebuilt loadtest/cmd/h2floor (the Go floor)
# Measurement: the driver samples pushd's own process from /proc (pushsim runs in its own
# process, so the simulators' CPU is not counted; the report names the build it measured: Go
# version, CGO_ENABLED, GOAMD64) and, after the scenarios, measures the floor
# against the same APNs simulator: h2load (Debian nghttp2-client, installed with apt-get when
# missing and running as root) and loadtest/cmd/h2floor, each in its own process.
# Kill scenario: with --kill-at F (e.g. 0.3) the driver runs the kill scenario: it SIGKILLs
# pushd once the simulators accepted F of the push's audience, and this script restarts pushd
# on the same port and data directory; the report gives the duplicates the crash caused.
#   e.g. scripts/loadtest.sh --installations 100000 --kill-at 0.3
# Own-channel and mixed scenarios (run by default after the others; --pushes direct,mixed for
# only them): a second app, China edition, whose own-channel devices the driver connects
# through the router on both protocols (--direct-devices, default 200: each is an open file in
# the driver and in pushd; --direct-offline 0.2 connect only after the push), and whose mixed
# push reaches apns, the own channel and the hms, honor, mi, vivo, oppo and mz simulators pushsim
# runs (--mixed-per-channel, default 50).
# Quota scenario (run last by default): pushsim gives the hybrid app a vivo profile "quota"
# whose simulator app has a day quota of LOADTEST_VIVO_QUOTA targets (default 20); the driver
# fills it (quota-fill: every target sent once), then pushes to --quota-devices more (default 30)
# with --quota-expiry (default 3s): pushd parks vivo for that app and fails each target with
# vivo's 10070 reason when the push expires, none reaching the simulator.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/pushd-loadtest.XXXXXX")
invalid_rate=${LOADTEST_SIM_INVALID_RATE:-0.1}
vivo_quota=${LOADTEST_VIVO_QUOTA:-20}
seed=${LOADTEST_SIM_SEED:-1}
key_id=SIMKEY0001
team_id=SIMTEAM001
sim_pid=""
pushd_pid=""
driver_pid=""

log() { echo "loadtest.sh: $*" >&2; }

# stop_pid PID NAME: SIGTERM, wait up to 20 s, then SIGKILL.
stop_pid() {
	local pid=$1 name=$2
	[ -n "$pid" ] || return 0
	kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null || true; return 0; }
	kill -TERM "$pid" 2>/dev/null || true
	for _ in $(seq 200); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		log "$name did not stop within 20s of SIGTERM; killing it"
		kill -KILL "$pid" 2>/dev/null || true
	fi
	wait "$pid" 2>/dev/null || true
}

cleanup() {
	local rc=$?
	stop_pid "$driver_pid" loadtest
	stop_pid "$pushd_pid" pushd
	stop_pid "$sim_pid" pushsim
	if [ "${LOADTEST_KEEP:-}" = 1 ] || [ "$rc" -ne 0 ]; then
		log "logs and data kept in $work (pushd.log, pushsim.log, metrics.txt: pushd /metrics after the run)"
	else
		rm -rf "$work"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

tail_log() {
	log "last lines of $1:"
	tail -n 40 "$1" >&2 || true
}

# free_port: a loopback port nothing listens on (bounded tries), below the kernel's
# ephemeral range so that no outgoing connection takes it between the probe and the bind.
free_port() {
	local port low=32768
	if [ -r /proc/sys/net/ipv4/ip_local_port_range ]; then
		read -r low _ </proc/sys/net/ipv4/ip_local_port_range
	fi
	[ "$low" -gt 12000 ] || low=61000 # odd range: use the ports above the usual one
	for _ in $(seq 100); do
		if [ "$low" = 61000 ]; then
			port=$((61000 + RANDOM % 4000))
		else
			port=$((10000 + RANDOM % (low - 10000)))
		fi
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			echo "$port"
			return 0
		fi
	done
	log "cannot find a free loopback port"
	return 1
}

# cpu_seconds PID: user+system CPU seconds the process used so far ("?" without /proc).
cpu_seconds() {
	local stat
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || { echo "?"; return 0; }
	stat=${stat##*) }
	# shellcheck disable=SC2086
	set -- $stat
	awk -v u="${12}" -v s="${13}" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.1f", (u + s) / hz }'
}

# has_flag HELP NAME: the help text lists -NAME or --NAME.
has_flag() {
	grep -Eq -- "(^|[[:space:],])--?$2([[:space:]=,]|$)" <<<"$1"
}

supervise=""
for a in "$@"; do
	case $a in
	--kill-at | --kill-at=* | -kill-at | -kill-at=*) supervise=1 ;;
	esac
done

mkdir -p "$work/bin" "$work/sim" "$work/data"
pushd_bin=${PUSHD_BIN:-$work/bin/pushd}
pushsim_bin=${PUSHSIM_BIN:-$work/bin/pushsim}
loadtest_bin=${LOADTEST_BIN:-$work/bin/loadtest}
h2floor_bin=${H2FLOOR_BIN:-$work/bin/h2floor}
(
	cd "$root"
	[ -n "${PUSHD_BIN:-}" ] || go build -o "$pushd_bin" ./cmd/pushd
	[ -n "${PUSHSIM_BIN:-}" ] || go build -o "$pushsim_bin" ./loadtest/cmd/pushsim
	[ -n "${LOADTEST_BIN:-}" ] || go build -o "$loadtest_bin" ./loadtest/cmd/loadtest
	[ -n "${H2FLOOR_BIN:-}" ] || go build -o "$h2floor_bin" ./loadtest/cmd/h2floor
) || { log "build failed"; exit 2; }

# The C floor: h2load, from Debian's nghttp2-client.
h2load_bin=$(command -v h2load || true)
if [ -z "$h2load_bin" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
	log "installing nghttp2-client (h2load) for the floor"
	if DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nghttp2-client >"$work/apt.log" 2>&1 ||
		{ apt-get update -qq >>"$work/apt.log" 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nghttp2-client >>"$work/apt.log" 2>&1; }; then
		h2load_bin=$(command -v h2load || true)
	fi
fi
if [ -z "$h2load_bin" ]; then
	log "h2load is not installed and cannot be (needs root and apt-get: apt-get install nghttp2-client); the floor is the Go client's only"
fi

help=$("$pushd_bin" serve --help 2>&1 || true)
for f in apns-endpoint fcm-endpoint gateway-ca; do
	if ! has_flag "$help" "$f"; then
		log "pushd serve has no --$f flag; the load test needs --apns-endpoint, --fcm-endpoint and --gateway-ca"
		exit 2
	fi
done
listen_flag=${PUSHD_LISTEN_FLAG:-}
if [ -z "$listen_flag" ]; then
	for f in api-addr http-addr addr listen listen-addr; do
		if has_flag "$help" "$f"; then listen_flag=$f; break; fi
	done
fi
data_flag=${PUSHD_DATA_FLAG:-}
if [ -z "$data_flag" ]; then
	for f in data-dir data dir; do
		if has_flag "$help" "$f"; then data_flag=$f; break; fi
	done
fi
if [ -z "$listen_flag" ] || [ -z "$data_flag" ]; then
	log "cannot find pushd's API listen flag or data-dir flag in 'pushd serve --help'; set PUSHD_LISTEN_FLAG and PUSHD_DATA_FLAG"
	exit 2
fi
# Every other listener flag pushd has (ops, own-channel gateway, ...) gets its own loopback port;
# pick_ports chooses them again at each start (below).
extra_flags=$(grep -Eo -- "--?(ops|metrics|gateway|direct|device|ws|debug|pprof|admin|grpc)-(addr|listen)\b" <<<"$help" | sed -E 's/^-+//' | sort -u)
if [ -n "${LOADTEST_PROFILE_DIR:-}" ]; then
	if ! grep -qx ops-addr <<<"$extra_flags" || ! has_flag "$help" pprof; then
		log "LOADTEST_PROFILE_DIR needs pushd's --ops-addr and --pprof flags"
		exit 2
	fi
	mkdir -p "$LOADTEST_PROFILE_DIR"
fi
pick_ports() {
	local f p
	extra_addrs=()
	profile_flags=()
	for f in $extra_flags; do
		[ "$f" = "$listen_flag" ] && continue
		p=$(free_port)
		extra_addrs+=("--$f" "127.0.0.1:$p")
		if [ "$f" = ops-addr ]; then ops_port=$p; fi
	done
	if [ -n "${LOADTEST_PROFILE_DIR:-}" ]; then
		extra_addrs+=(--pprof)
		profile_flags=(--profile-dir "$(cd "$LOADTEST_PROFILE_DIR" && pwd)" --pprof-url "http://127.0.0.1:$ops_port")
	fi
}

# Simulators: random loopback ports, credentials and CA bundle in $work/sim.
# shellcheck disable=SC2086
"$pushsim_bin" --apns-addr 127.0.0.1:0 --fcm-addr 127.0.0.1:0 --dir "$work/sim" \
	--hms-addr 127.0.0.1:0 --mi-addr 127.0.0.1:0 --vivo-addr 127.0.0.1:0 --oppo-addr 127.0.0.1:0 --mz-addr 127.0.0.1:0 \
	--honor-addr 127.0.0.1:0 \
	--vivo-quota-profile "$vivo_quota" \
	--key-id "$key_id" --team-id "$team_id" \
	--invalid-token-rate "$invalid_rate" --seed "$seed" ${PUSHSIM_FLAGS:-} >"$work/pushsim.log" 2>&1 &
sim_pid=$!
for _ in $(seq 300); do
	grep -q '^ca: ' "$work/pushsim.log" 2>/dev/null && break
	kill -0 "$sim_pid" 2>/dev/null || { log "pushsim exited"; tail_log "$work/pushsim.log"; exit 2; }
	sleep 0.1
done
apns_url=$(sed -nE 's/^apns: (https:\/\/[^ ]+) .*/\1/p' "$work/pushsim.log")
fcm_url=$(sed -nE 's/^fcm: (https:\/\/[^ ]+) .*/\1/p' "$work/pushsim.log")
if [ -z "$apns_url" ] || [ -z "$fcm_url" ]; then
	log "pushsim did not print its URLs within 30s"
	tail_log "$work/pushsim.log"
	exit 2
fi
# The vendor simulators (the mixed scenario's): "<channel>: <url>" lines, credentials in
# $work/sim/vendors.json.
sim_stats="apns=$apns_url,fcm=$fcm_url"
for v in hms honor mi vivo oppo mz; do
	u=$(sed -nE "s/^$v: (https:\/\/[^ ]+).*/\1/p" "$work/pushsim.log")
	[ -n "$u" ] && sim_stats="$sim_stats,$v=$u"
done
log "simulators: $sim_stats"

token=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
export PUSHD_ADMIN_TOKEN=$token

# start_pushd PORT: starts pushd on PORT over $work/data, appending to pushd.log, and waits up
# to 60 s for /readyz. Sets pushd_pid (empty if pushd exited) and ready (1 once ready); writes
# the pid to $work/pushd.pid, where the driver's kill scenario finds it.
start_pushd() {
	ready=""
	# shellcheck disable=SC2086
	"$pushd_bin" serve "--$listen_flag" "127.0.0.1:$1" "--$data_flag" "$work/data" \
		"${extra_addrs[@]}" \
		--apns-endpoint "$apns_url" --fcm-endpoint "$fcm_url" --gateway-ca "$work/sim/ca.pem" \
		${PUSHD_SERVE_FLAGS:-} >>"$work/pushd.log" 2>&1 &
	pushd_pid=$!
	echo "$pushd_pid" >"$work/pushd.pid"
	for _ in $(seq 600); do
		if ! kill -0 "$pushd_pid" 2>/dev/null; then
			wait "$pushd_pid" 2>/dev/null || true
			pushd_pid=""
			return 0
		fi
		if curl -fsS -o /dev/null --max-time 2 "http://127.0.0.1:$1/readyz" 2>/dev/null; then
			ready=1
			return 0
		fi
		sleep 0.1
	done
}

ready=""
# Up to 3 starts, each on fresh ports: one can still be taken between the probe and pushd's
# bind.
for start in 1 2 3; do
	port=$(free_port)
	pick_ports
	start_pushd "$port"
	[ -n "$ready" ] && break
	if [ -z "$pushd_pid" ] && grep -q "address already in use" "$work/pushd.log" && [ "$start" -lt 3 ]; then
		log "a port was taken before pushd bound it; trying others"
		continue
	fi
	[ -n "$pushd_pid" ] || { log "pushd exited"; tail_log "$work/pushd.log"; exit 2; }
	break
done
if [ -z "$ready" ]; then
	log "pushd is not ready after 60s"
	tail_log "$work/pushd.log"
	exit 2
fi
log "pushd ready on 127.0.0.1:$port (data $work/data)"

# The driver runs in the background so that a SIGTERM to this script interrupts `wait` at
# once and the EXIT trap stops the driver, pushd and pushsim.
"$loadtest_bin" --pushd "http://127.0.0.1:$port" \
	--sim-stats "$sim_stats" --sim-dir "$work/sim" \
	--apns-key-id "$key_id" --apns-team-id "$team_id" \
	--sim-invalid-rate "$invalid_rate" --sim-seed "$seed" --pushd-pid-file "$work/pushd.pid" \
	--floor-h2load "$h2load_bin" --floor-go "$h2floor_bin" "${profile_flags[@]}" "$@" &
driver_pid=$!
status=0
if [ -n "$supervise" ]; then
	# Kill scenario: the driver SIGKILLs pushd mid-push; restart it on the same port and data
	# directory (the embedded store and log recover from it) for as long as the driver runs.
	while :; do
		wait -n "$driver_pid" "$pushd_pid" || true
		kill -0 "$driver_pid" 2>/dev/null || break
		if ! kill -0 "$pushd_pid" 2>/dev/null; then
			wait "$pushd_pid" 2>/dev/null || true
			log "pushd (pid $pushd_pid) died; restarting it on port $port over the same data"
			start_pushd "$port"
			if [ -z "$ready" ]; then
				log "restarted pushd is not ready"
				tail_log "$work/pushd.log"
				exit 2
			fi
		fi
	done
fi
wait "$driver_pid" || status=$?
driver_pid=""
curl -fsS --max-time 10 -o "$work/metrics.txt" "http://127.0.0.1:$port/metrics" 2>/dev/null || true
log "CPU used: pushd $(cpu_seconds "$pushd_pid")s, pushsim $(cpu_seconds "$sim_pid")s (user+system, whole run)"
if [ "$status" -ne 0 ]; then
	tail_log "$work/pushd.log"
fi
exit "$status"
