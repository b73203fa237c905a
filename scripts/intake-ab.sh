#!/usr/bin/env bash
# intake-ab.sh REV_A REV_B [PAIRS] [intakeload flags...]: compares the CPU per request of two
# revisions' `pushd serve` under the intake load (scripts/loadtest-intake.sh) on this machine,
# whose speed drifts by up to 2x within minutes. Alternated whole runs differ by 20% for the same
# build; so each pair runs both builds AT THE SAME TIME, each with its own generator and data
# directory, sharing the machine's moments, and compares pushd's CPU µs per request (from /proc)
# during the load and until pushd is quiet again (a planner that lags does its work after the
# load: only the second counts it), scenario by scenario. Rates are printed too but are not comparable: the two
# processes split the cores unevenly. Without flags the loads are the intake's three, floor
# left out; e.g. `scripts/intake-ab.sh 6f83674 HEAD 8 --pushes 40000 --upserts 0 --rate-pushes 0`
# for the push closed loop alone. The generator is built once, from the work tree, for both.
#
# Prints one line per pair and scenario, then per scenario the medians of B/A in load and until
# quiet (below 1: B is cheaper) and how many pairs were below 1.
set -euo pipefail
a=${1:?REV_A}; b=${2:?REV_B}; pairs=${3:-5}
shift $(($# < 3 ? $# : 3))
root=$(git rev-parse --show-toplevel)
work=$(mktemp -d "${TMPDIR:-/tmp}/intake-ab.XXXXXX")
trap 'for s in a b; do git -C "$root" worktree remove --force "$work/$s" 2>/dev/null || true; done; git -C "$root" worktree prune; rm -rf "$work"' EXIT
for side in a b; do
	rev=$a; [ "$side" = b ] && rev=$b
	git -C "$root" worktree add -q --detach "$work/$side" "$rev"
	(cd "$work/$side" && go build -o "$work/$side.pushd" ./cmd/pushd)
done
(cd "$root" && go build -o "$work/intakeload" ./loadtest/cmd/intakeload)

# figures FILE: "scenario|cpu µs/req in load|until quiet|req/s" for each row of a run's table.
figures() {
	awk '{ for (i = 1; i <= NF; i++) if ($i ~ /loop\)$/) { name = $1; for (j = 2; j <= i; j++) name = name " " $j
		printf "%s|%s|%s|%s\n", name, $(i + 6), $(i + 7), $(i + 3) } }' "$1"
}

echo "pair  A=$a  B=$b  (B/A of pushd's CPU µs per request in load, and until quiet: below 1 means B is cheaper)"
for i in $(seq "$pairs"); do
	for side in a b; do
		PUSHD_BIN="$work/$side.pushd" INTAKELOAD_BIN="$work/intakeload" \
			"$root/scripts/loadtest-intake.sh" --floor=false "$@" >"$work/$side.out" 2>&1 &
	done
	wait
	paste -d'|' <(figures "$work/a.out") <(figures "$work/b.out") | while IFS='|' read -r name ca qa ra _ cb qb rb; do
		ratio=$(awk -v a="$ca" -v b="$cb" 'BEGIN { printf "%.3f", b / a }')
		qratio=$(awk -v a="$qa" -v b="$qb" 'BEGIN { printf "%.3f", b / a }')
		echo "$i  $name  a $ca µs, $qa until quiet ($ra/s)  |  b $cb µs, $qb until quiet ($rb/s)  |  B/A $ratio, until quiet $qratio"
		echo "$name (in load)|$ratio" >>"$work/ratios"
		echo "$name (until quiet)|$qratio" >>"$work/ratios"
	done
	if ! [ -s "$work/a.out" ] || ! grep -q 'loop)' "$work/a.out" || ! grep -q 'loop)' "$work/b.out"; then
		echo "pair $i: a run failed; its output:" >&2
		tail -n 20 "$work/a.out" "$work/b.out" >&2
		exit 2
	fi
done
echo "median B/A per scenario:"
sort -t'|' -k1,1 -k2,2n "$work/ratios" | awk -F'|' '
	{ n[$1]++; r[$1, n[$1]] = $2; if ($2 < 1) below[$1]++ }
	END { for (s in n) { k = n[s]; m = (k % 2) ? r[s, (k + 1) / 2] : (r[s, k / 2] + r[s, k / 2 + 1]) / 2
		printf "  %s: %.3f (%d of %d pairs below 1)\n", s, m, below[s] + 0, k } }'
