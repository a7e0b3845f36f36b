#!/usr/bin/env bash
# Runs the whole test suite with -race: the library module and the metrics
# adapters' modules (unit tests, no Docker), then the integration module and
# the peer benchmark's module (a quick run of every scenario), both against
# Redis in containers.
# Prints each test's result, its log lines and any failure in full, but not
# the "=== RUN" chatter nor passing subtests; the complete output is kept in
# test-output.log. Extra arguments go to every go test run. Ends with one
# count over all modules and exits non-zero if any failed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

export TESTCONTAINERS_RYUK_DISABLED=true
# The test process may itself run in a container (CI here does): container
# ports are then reached on the loopback, not the default gateway.
export TESTCONTAINERS_HOST_OVERRIDE="${TESTCONTAINERS_HOST_OVERRIDE:-127.0.0.1}"

log="$(pwd)/test-output.log"
: >"$log"
status=0
for module in . prometheus otel integration integration/peers; do
	printf '\n--- module %s\n' "$module" | tee -a "$log"
	set +e
	(cd "$module" && go test -race -count=1 -timeout 30m -v "$@" ./...) 2>&1 | tee -a "$log" |
		grep --line-buffered -v -E '^=== (RUN|PAUSE|CONT|NAME)|^ +--- PASS'
	rc=${PIPESTATUS[0]}
	set -e
	if [ "$rc" -ne 0 ]; then
		status=$rc
	fi
done
passed=$(grep -c -E '^--- PASS' "$log" || true)
failed=$(grep -c -E '^--- FAIL' "$log" || true)
echo "full log: test-output.log"
echo "tests: ${passed} passed, ${failed} failed"
exit "$status"
