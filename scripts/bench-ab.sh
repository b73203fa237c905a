#!/usr/bin/env bash
# bench-ab.sh REV_A REV_B [PAIRS] [UPSERTS]: compares the installation upsert cost of two
# revisions on this machine, whose speed drifts by up to 2x within minutes. Alternating runs
# differ by +-15% for the same build; so each pair runs both builds AT THE SAME TIME, sharing
# the machine's moments, without the HTTP-ceiling rounds, and compares CPU microseconds per
# upsert (each process counts its own). Two copies of one build differ by +-2-3% this way.
# Upserts/s are printed too but are not comparable: the two processes split the CPU unevenly.
# Revisions older than PUSHD_BENCH_NO_CEILING still run their ceiling rounds; their
# cpu-µs/upsert counts the upsert rounds only, as always.
set -euo pipefail
a=${1:?REV_A}; b=${2:?REV_B}; pairs=${3:-5}; n=${4:-40000}
root=$(git rev-parse --show-toplevel)
work=$(mktemp -d)
trap 'git -C "$root" worktree remove --force "$work/a" 2>/dev/null || true; git -C "$root" worktree remove --force "$work/b" 2>/dev/null || true; git -C "$root" worktree prune; rm -rf "$work"' EXIT
for side in a b; do
	rev=$a; [ "$side" = b ] && rev=$b
	git -C "$root" worktree add -q --detach "$work/$side" "$rev"
	(cd "$work/$side" && go test -c -o "$work/$side.test" ./api/)
done
run() { (cd "$root/api" && PUSHD_BENCH_NO_CEILING=1 "$work/$1.test" -test.run '^$' \
	-test.bench 'BenchmarkAPIInstallationUpsert$' -test.benchtime "${n}x" 2>&1 |
	awk -v s="$1" '/^Benchmark/ { for (i = 1; i <= NF; i++) { if ($(i+1) == "cpu-µs/upsert") c = $i; if ($(i+1) == "upserts/s") u = $i }
		printf "%s %s cpu-µs/upsert %s upserts/s\n", s, c, u }') ; }
echo "pair  A=$a  B=$b  (B/A of cpu-µs/upsert: below 1 means B is cheaper)"
for i in $(seq "$pairs"); do
	run a > "$work/a.out" & run b > "$work/b.out" & wait
	ca=$(awk '{print $2}' "$work/a.out"); cb=$(awk '{print $2}' "$work/b.out")
	echo "$i  $(cat "$work/a.out")  |  $(cat "$work/b.out")  |  B/A $(awk -v a="$ca" -v b="$cb" 'BEGIN { printf "%.3f", b / a }')"
done
