#!/usr/bin/env bash
# script-instructions.sh counts the instructions Redis spends on relock's
# scripts, per call, under valgrind's callgrind: a count that, unlike a
# time, does not move with the machine's load, so two versions compare in
# one run on a busy machine.
#
#   bash scripts/script-instructions.sh [REV]
#
# It measures this work tree and, when REV (a commit, tag or branch) is
# given, that version beside it. Four calls, each on keys of its own:
#
#   acquire, free lock     a Mutex's first acquisition of a free lock
#   release, none queued   its Unlock (WakeQueueAlone, no strays)
#   release, hand-off      the same with an owner in the wait queue
#   acquire, refused       another owner's waiting Lock, which joins the queue
#
# Each figure is the instructions of a redis-server that ran N such calls
# (after those that set the scene), less those of one that ran only the
# scene, over N. It needs valgrind, redis-server and redis-cli (Debian's
# packages are installed when missing) and the Go module proxy.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

n="${N:-5000}"
port="${PORT:-7419}"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
rev="${1:-}"

for tool in valgrind redis-server redis-cli; do
	if ! command -v "$tool" >/dev/null; then
		apt_install valgrind redis-server redis-tools
		break
	fi
done

work="$(mktemp -d)"
cleanup() {
	redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
	if [ -n "$rev" ]; then git -C "$repo" worktree remove --force "$work/rev" >/dev/null 2>&1 || true; fi
	rm -rf "$work"
}
trap cleanup EXIT

# The program that writes a tree's scripts (as lua.go assembles them) and
# the calls of each scene, in Redis's protocol, for redis-cli --pipe.
mkdir -p "$work/dump"
cat >"$work/dump/main.go" <<'EOF'
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/relock-go/relock/lua"
	"github.com/relock-go/relock/reentrant"
)

const (
	alice = "client-0123456789:0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
	bob   = "client-9876543210:1e2d3c4b-5a69-7887-96a5-b4c3d2e1f0a1"
)

func command(b *strings.Builder, args ...string) {
	fmt.Fprintf(b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(b, "$%d\r\n%s\r\n", len(a), a)
	}
}

// acquire is a Mutex's first acquisition by owner: no re-entry, no fence,
// a ticket, no queue rule, one copy, no holder asked, no strays, not
// queued, expecting the lock free (expect "0") or held ("1").
func acquire(b *strings.Builder, k reentrant.Key, owner, expect string) {
	command(b, "EVALSHA", lua.Acquire.SHA(), "5", k.Lock, k.Fence, k.Tombstone(owner), k.Queue, k.QueueDeadlines,
		owner, "30000", "1", "1", "0", "0", "1733000000000001", "0", "0", "0", "0", "1", "1", expect)
}

// release is the Unlock of alice's hold: count 0, WakeQueueAlone, no strays.
func release(b *strings.Builder, k reentrant.Key, i int) {
	command(b, "EVALSHA", lua.Release.SHA(), "5", k.Lock, k.Channel, k.Tombstone(alice), k.Queue, k.QueueDeadlines,
		alice, "30000", "0", "2", "release-"+strconv.Itoa(i), "h", "1", "0")
}

func main() {
	out := os.Args[1]
	n, err := strconv.Atoi(os.Args[2])
	if err != nil {
		panic(err)
	}
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(out, name), []byte(text), 0o644); err != nil {
			panic(err)
		}
	}
	write("acquire.lua", lua.Acquire.Source())
	write("release.lua", lua.Release.Source())
	scenes := map[string]func(*strings.Builder, reentrant.Key, int){
		"none":     func(*strings.Builder, reentrant.Key, int) {},
		"held":     func(b *strings.Builder, k reentrant.Key, _ int) { acquire(b, k, alice, "0") },
		"released": func(b *strings.Builder, k reentrant.Key, i int) { acquire(b, k, alice, "0"); release(b, k, i) },
		"queued": func(b *strings.Builder, k reentrant.Key, _ int) {
			acquire(b, k, alice, "0")
			command(b, "ZADD", k.Queue, "1733000000000002", bob)
		},
		"handed": func(b *strings.Builder, k reentrant.Key, i int) {
			acquire(b, k, alice, "0")
			command(b, "ZADD", k.Queue, "1733000000000002", bob)
			release(b, k, i)
		},
		"refused": func(b *strings.Builder, k reentrant.Key, _ int) { acquire(b, k, alice, "0"); acquire(b, k, bob, "1") },
	}
	for name, scene := range scenes {
		var b strings.Builder
		for i := range n {
			k, err := reentrant.NewKey("", "instructions:"+strconv.Itoa(i))
			if err != nil {
				panic(err)
			}
			scene(&b, k, i)
		}
		write(name+".resp", b.String())
	}
}
EOF

# dump TREE DIR writes TREE's scripts and scenes into DIR.
dump() {
	local tree="$1" dir="$2"
	mkdir -p "$dir"
	cat >"$work/dump/go.mod" <<EOF
module scriptinstructions

go 1.26.0

require github.com/relock-go/relock v0.0.0

replace github.com/relock-go/relock => $tree
EOF
	cp "$tree/go.sum" "$work/dump/go.sum"
	(cd "$work/dump" && GOFLAGS=-mod=mod go run . "$dir" "$n")
}

# instructions DIR SCENE: callgrind's total for a redis-server that loaded
# DIR's scripts and ran SCENE's calls.
instructions() {
	local dir="$1" scene="$2" out="$work/callgrind.out"
	rm -f "$out"
	valgrind --tool=callgrind --callgrind-out-file="$out" \
		redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no >"$work/valgrind.log" 2>&1 &
	local server=$!
	for _ in $(seq 200); do
		redis-cli -p "$port" ping >/dev/null 2>&1 && break
		sleep 0.1
	done
	redis-cli -p "$port" -x SCRIPT LOAD <"$dir/acquire.lua" >/dev/null
	redis-cli -p "$port" -x SCRIPT LOAD <"$dir/release.lua" >/dev/null
	local piped
	piped="$(redis-cli -p "$port" --pipe <"$dir/$scene.resp" 2>&1)"
	case "$piped" in
	*"errors: 0,"*) ;;
	*)
		echo "script-instructions: $scene: $piped" >&2
		exit 1
		;;
	esac
	redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
	wait "$server" || true
	awk '/^(summary|totals):/ {print $2; exit}' "$out"
}

# measure DIR prints DIR's four figures, one per line.
measure() {
	local dir="$1" none held released queued handed refused
	none="$(instructions "$dir" none)"
	held="$(instructions "$dir" held)"
	released="$(instructions "$dir" released)"
	queued="$(instructions "$dir" queued)"
	handed="$(instructions "$dir" handed)"
	refused="$(instructions "$dir" refused)"
	echo $(((held - none) / n))
	echo $(((released - held) / n))
	echo $(((handed - queued) / n))
	echo $(((refused - held) / n))
}

dump "$repo" "$work/tree"
mapfile -t here < <(measure "$work/tree")
calls=("acquire, free lock" "release, none queued" "release, hand-off" "acquire, refused")
if [ -z "$rev" ]; then
	echo "instructions per call (callgrind, $n calls each, $(redis-server --version | awk '{sub("v=", "", $3); print $3}'))"
	for i in "${!calls[@]}"; do
		printf '%-22s %8d\n' "${calls[$i]}" "${here[$i]}"
	done
	exit 0
fi
git -C "$repo" worktree add --detach "$work/rev" "$rev" >/dev/null 2>&1
dump "$work/rev" "$work/old"
mapfile -t old < <(measure "$work/old")
echo "instructions per call (callgrind, $n calls each, $(redis-server --version | awk '{sub("v=", "", $3); print $3}'))"
printf '%-22s %10s %10s %7s\n' call "$rev" "work tree" ratio
for i in "${!calls[@]}"; do
	printf '%-22s %10d %10d %7s\n' "${calls[$i]}" "${old[$i]}" "${here[$i]}" \
		"$(awk -v a="${here[$i]}" -v b="${old[$i]}" 'BEGIN {printf "%.2f", a / b}')"
done
