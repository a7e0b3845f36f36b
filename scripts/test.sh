#!/usr/bin/env bash
# Runs the whole test suite with -race against Redis in containers. Prints
# each test's result, its log lines and any failure in full, but not the
# "=== RUN" chatter nor passing subtests; the complete output is kept in
# test-output.log. Exits with go test's status.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

export TESTCONTAINERS_RYUK_DISABLED=true
# The test process may itself run in a container (CI here does): container
# ports are then reached on the loopback, not the default gateway.
export TESTCONTAINERS_HOST_OVERRIDE="${TESTCONTAINERS_HOST_OVERRIDE:-127.0.0.1}"

set +e
go test -race -count=1 -timeout 30m -v "$@" ./... 2>&1 | tee test-output.log |
	grep --line-buffered -v -E '^=== (RUN|PAUSE|CONT|NAME)|^ +--- PASS'
status=${PIPESTATUS[0]}
set -e
passed=$(grep -c -E '^--- PASS' test-output.log || true)
failed=$(grep -c -E '^--- FAIL' test-output.log || true)
echo "full log: test-output.log"
echo "tests: ${passed} passed, ${failed} failed"
exit "$status"
