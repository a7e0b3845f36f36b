#!/usr/bin/env bash
# lean-check.sh builds a throwaway module that imports the library's lock
# package, as a user's service would, and fails if its module graph or go.sum
# names any of the heavy modules the tests and adapters use (testcontainers,
# toxiproxy, moby, OpenTelemetry, zerolog, Prometheus, porcupine; testify
# is not among them: go-redis's own dependencies already name it). It prints the
# consumer's module graph size and what it requires.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT

cat >"$dir/go.mod" <<GOMOD
module example.com/consumer

go 1.26.0

require github.com/relock-go/relock v0.0.0-00010101000000-000000000000

replace github.com/relock-go/relock => $repo
GOMOD
cat >"$dir/main.go" <<'GO'
package main

import (
	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/lock"
)

func main() {
	c, err := lock.New(lock.Options{Nodes: []redis.UniversalClient{redis.NewClient(&redis.Options{})}})
	if err == nil {
		_ = c.Close()
	}
}
GO
(cd "$dir" && go mod tidy >/dev/null 2>&1 || (cd "$dir" && go mod tidy))
(cd "$dir" && go build -o /dev/null .)
graph="$(cd "$dir" && go mod graph)"
heavy='testcontainers|toxiproxy|moby|opentelemetry|zerolog|prometheus|porcupine'
echo "consumer of lock: go mod graph has $(printf '%s\n' "$graph" | wc -l) lines, go.sum $(wc -l <"$dir/go.sum") lines"
echo "consumer go.sum modules: $(awk '{print $1}' "$dir/go.sum" | sort -u | paste -sd' ')"
if printf '%s\n' "$graph" | grep -E "$heavy" || grep -E "$heavy" "$dir/go.sum"; then
	echo "lean-check: a heavy module reached a consumer of lock (above)" >&2
	exit 1
fi
echo "lean-check: no heavy module in a consumer's graph"
