#!/usr/bin/env bash
# check.sh: model-check model/relock.pml with SPIN. Installs spin and gcc
# when missing, builds the verifier of each configuration in a temporary
# directory, runs it, prints states stored, depth and time, and fails unless
#   delayed restart (the stated assumption): 0 errors, search completed;
#   immediate restart: an assertion violation (the known Redlock limit);
#   seeded bug (release.lua without its sequence check): an assertion violation.
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

# run NAME SEARCH DEFINES...: build and run one configuration (SEARCH: dfs,
# or bfs for the shortest counterexample); its output is in NAME.out. Each
# run is bounded by LIMIT seconds: a search cut short is reported as not
# completed.
LIMIT=${LIMIT:-80}
run() {
	local name=$1 search=$2
	shift 2
	spin -a "$@" relock.pml >/dev/null
	# Exhaustive: no bitstate. COLLAPSE compresses stored states.
	local flags=(-O2 -DSAFETY -DCOLLAPSE)
	if [ "$search" = bfs ]; then flags+=(-DBFS); fi
	gcc "${flags[@]}" -o "pan_$name" pan.c
	local start=$SECONDS
	# -m: DFS stack depth, far above the model's (depth is printed and checked).
	if ! timeout "$LIMIT" "./pan_$name" -m100000 -w26 >"$name.out" 2>&1; then
		if [ $((SECONDS - start)) -ge "$LIMIT" ]; then
			echo "Search not completed: stopped after $LIMIT s" >>"$name.out"
		fi
	fi
	echo "== $name ($*): $((SECONDS - start)) s"
	grep -E "errors:|states, stored|elapsed time|total actual memory|Search not completed|max search depth too small|assertion violated" "$name.out" | sed 's/^/   /' | cut -c1-200
}

fail=0
run delayed dfs
if grep -q "assertion violated" delayed.out || ! grep -q "errors: 0" delayed.out; then
	echo "FAIL: the delayed-restart configuration did not report 0 errors"
	spin -t relock.pml | grep MSC || true
	fail=1
fi
if grep -qE "Search not completed|max search depth too small" delayed.out; then
	echo "FAIL: the delayed-restart search is not exhaustive"
	fail=1
fi

run immediate bfs -DIMMEDIATE
if grep -q "assertion violated" immediate.out; then
	echo "   the known limit, as expected: SPIN's trail:"
	spin -t -DIMMEDIATE relock.pml | grep MSC | sed 's/^ */     /'
else
	echo "FAIL: the immediate-restart configuration found no counterexample"
	fail=1
fi

run seeded-bug bfs -DBUG_NOSEQ -DATTEMPTS=2
if grep -q "assertion violated" seeded-bug.out; then
	echo "   the seeded bug is caught, as expected: SPIN's trail:"
	spin -t -DBUG_NOSEQ -DATTEMPTS=2 relock.pml | grep MSC | sed 's/^ */     /'
else
	echo "FAIL: the seeded bug went unnoticed"
	fail=1
fi

exit $fail
