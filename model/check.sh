#!/usr/bin/env bash
# check.sh: model-check model/relock.pml with SPIN. Installs spin and gcc
# when missing, builds the verifier of each configuration in a temporary
# directory, runs it (nice, one at a time, each bounded by LIMIT seconds and
# 4000 MB), prints states stored, depth, time and memory, and fails unless
#   delayed:    the node restarts after more than a lease (the stated
#               assumption): exhaustive search completed, 0 errors (P1-P3);
#   immediate:  the node restarts at once: P1 violated (Redlock's known
#               limit), with SPIN's trail;
#   short-restart: the node restarts after 1 tick, less than a hold's
#               validity: P1 violated (so the delayed check is not vacuous);
#   seeded-bug: release.lua without its `seq <= last` check: P1 violated,
#               with SPIN's trail.
# FINDINGS=1 also runs two searches that find what the protocol does not
# guarantee today (see model/README.md): they are reported, not gated on:
#   fencing:    counter tokens (P4), no crash: a repeated token before
#               drawToken drew again (fixed; the search is not exhaustive);
#   retries:    one go-redis retry (a duplicate), no crash: P2 broken.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
sudo=""
if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
need=()
command -v spin >/dev/null || need+=(spin)
command -v gcc >/dev/null || need+=(gcc)
if [ ${#need[@]} -gt 0 ]; then
	$sudo apt-get update -qq
	$sudo apt-get install -y -qq "${need[@]}"
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$here/relock.pml" "$work/"
cd "$work"

LIMIT=${LIMIT:-240}
# run NAME SEARCH DEFINES...: build and run one configuration. SEARCH is dfs
# (exhaustive) or bfs (the shortest counterexample; pan's BFS refuses the
# model's hidden clock, so it is built with -DNOCLOCK and the trail is
# replayed with the clock). Its output is in NAME.out.
run() {
	local name=$1 search=$2
	shift 2
	local flags=(-O2 -DSAFETY -DCOLLAPSE -DMEMLIM=4000) defs=("$@")
	if [ "$search" = bfs ]; then
		flags+=(-DBFS)
		defs+=(-DNOCLOCK)
	fi
	rm -f relock.pml.trail
	spin -a "${defs[@]}" relock.pml >/dev/null
	gcc "${flags[@]}" -o "pan_$name" pan.c
	local start=$SECONDS rc=0
	nice -n 10 timeout "$LIMIT" "./pan_$name" -m100000 -w24 >"$name.out" 2>&1 || rc=$?
	if [ "$rc" = 124 ]; then
		echo "Search not completed: stopped after $LIMIT s" >>"$name.out"
	fi
	echo "== $name (spin -a $*; gcc ${flags[*]}; pan -m100000 -w24): $((SECONDS - start)) s wall"
	grep -E "errors:|states, stored|elapsed time|total actual memory|Search not completed|max search depth too small|^pan:1:|out of memory" "$name.out" |
		sed 's/^ */   /' | cut -c1-160 || true
}

# trail DEFINES...: SPIN's counterexample as readable MSC lines.
trail() {
	spin -t "$@" relock.pml | grep 'MSC' | sed 's/^ */     /'
}

fail=0
run delayed dfs
if grep -q "^pan:1:" delayed.out || ! grep -q "errors: 0" delayed.out; then
	echo "FAIL: the delayed-restart configuration did not report 0 errors; SPIN's trail:"
	trail || true
	fail=1
fi
if grep -qE "Search not completed|max search depth too small|out of memory" delayed.out || ! grep -q "errors:" delayed.out; then
	echo "FAIL: the delayed-restart search did not complete"
	fail=1
fi

run immediate bfs -DIMMEDIATE
if grep -q "assertion violated" immediate.out; then
	echo "   the known limit, as expected; SPIN's trail:"
	trail -DIMMEDIATE
else
	echo "FAIL: the immediate-restart configuration found no counterexample"
	fail=1
fi

run short-restart bfs -DDOWNFOR=1
if grep -q "assertion violated" short-restart.out; then
	echo "   a restart sooner than a hold's validity breaks P1, as expected; SPIN's trail:"
	trail -DDOWNFOR=1
else
	echo "FAIL: a restart after 1 tick found no counterexample: the delayed check may be vacuous"
	fail=1
fi

run seeded-bug bfs -DBUG_NOSEQ -DAGAIN
if grep -q "assertion violated" seeded-bug.out; then
	echo "   the seeded bug is caught, as expected; SPIN's trail:"
	trail -DBUG_NOSEQ -DAGAIN
else
	echo "FAIL: the seeded bug went unnoticed"
	fail=1
fi

if [ "${FINDINGS:-0}" = 1 ]; then
	run fencing bfs -DFENCE -DCRASHES=0
	if grep -q "assertion violated" fencing.out; then
		echo "   FAIL: counter tokens repeat (P4); SPIN's trail:"
		trail -DFENCE -DCRASHES=0
	else
		echo "   P4: no violation within the states searched (see the line above: completed or not)"
	fi
	run retries dfs -DDUPS=1 -DCRASHES=0
	if grep -q "assertion violated" retries.out; then
		echo "   finding: a retried acquire leaves a hold behind (P2); SPIN's trail:"
		trail -DDUPS=1 -DCRASHES=0
	else
		echo "   P2 found no violation with one retry"
	fi
fi

if [ "$fail" = 0 ]; then echo "model check passed"; fi
exit $fail
