#!/usr/bin/env bash
# script-instructions.sh counts the instructions Redis spends on relock's
# scripts, per call, under valgrind's callgrind: a count that, unlike a
# time, does not move with the machine's load, so two versions compare in
# one run on a busy machine.
#
#   bash scripts/script-instructions.sh [REV]
#
# It measures this work tree and, when REV (a commit, tag or branch) is
# given, that version beside it. Five calls, each on keys of its own:
#
#   acquire, free lock     a Mutex's first acquisition of a free lock
#   release, none queued   its Unlock (WakeQueueAlone, no strays)
#   release, hand-off      the same with an owner in the wait queue
#   acquire, refused       another owner's waiting Lock, which joins the queue
#   acquire, handed off    the hand-off's target taking the lock where a
#                          release reserved it for it (the queue's node)
#
# Each figure is the instructions of a redis-server that ran N such calls
# (after those that set the scene), less those of one that ran only the
# scene, over N. It needs valgrind, redis-server and redis-cli (Debian's
# packages are installed when missing) and the Go module proxy.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

n="${N:-5000}"
port="${PORT:-7419}" # the redis-server under callgrind
plain="$((port + 1))" # the one the calls are recorded against
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
	redis-cli -p "$plain" shutdown nosave >/dev/null 2>&1 || true
	if [ -n "$rev" ]; then git -C "$repo" worktree remove --force "$work/rev" >/dev/null 2>&1 || true; fi
	rm -rf "$work"
}
trap cleanup EXIT

# The program that writes a tree's scripts (as lua.go assembles them) and
# the calls of each scene, in Redis's protocol, for redis-cli --pipe. It
# drives the tree's own reentrant.Node against a plain redis-server and
# records what it sends, so each version is measured with the arguments it
# really passes; the lock's name is then numbered for each of the N copies.
mkdir -p "$work/dump"
cat >"$work/dump/main.go" <<'EOF'
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/lua"
	"github.com/relock-go/relock/reentrant"
)

const (
	alice = "client-0123456789:0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
	bob   = "client-9876543210:1e2d3c4b-5a69-7887-96a5-b4c3d2e1f0a1"
	name  = "instructions-0000000" // numbered 0 to N-1 in the copies
)

// recorder keeps the commands the node sends while on.
type recorder struct {
	on   bool
	sent [][]string
}

func (r *recorder) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r *recorder) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		r.keep(cmd)
		return next(ctx, cmd)
	}
}

func (r *recorder) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			r.keep(cmd)
		}
		return next(ctx, cmds)
	}
}

func (r *recorder) keep(cmd redis.Cmder) {
	if !r.on {
		return
	}
	var args []string
	for _, a := range cmd.Args() {
		args = append(args, fmt.Sprint(a))
	}
	r.sent = append(r.sent, args)
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

func main() {
	addr, out := os.Args[1], os.Args[2]
	n, err := strconv.Atoi(os.Args[3])
	must(err)
	ctx := context.Background()
	rec := &recorder{}
	// MaxRetries -1: a client that never sends a call twice, as relock's
	// defaults make it.
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	rdb.AddHook(rec)
	node := reentrant.NewNode(rdb, time.Second)
	key, err := reentrant.NewKey("", name)
	must(err)
	var seq int64
	// op is a Mutex's first acquisition (count 1) or its Unlock (count 0)
	// by owner, as the lock package makes them for a lone node.
	op := func(owner string, count int64) reentrant.Op {
		seq++
		return reentrant.Op{Key: key, Owner: owner, Lease: 30 * time.Second, Count: count, Seq: seq,
			Ticket: 1733000000000000 + seq, Unqueued: true, NoStrays: true, Wake: reentrant.WakeQueueAlone}
	}
	acquire := func(owner string, expect reentrant.Expectation) func() {
		return func() {
			o := op(owner, 1)
			o.Expect = expect
			_, err := node.Acquire(ctx, o)
			must(err)
		}
	}
	release := func() {
		_, err := node.Release(ctx, op(alice, 0), "release-"+strconv.FormatInt(seq, 10))
		must(err)
	}
	queue := func() { must(rdb.ZAdd(ctx, key.Queue, redis.Z{Score: 1733000000000000, Member: bob}).Err()) }
	reserve := func() { must(rdb.Set(ctx, key.QueueDeadlines, bob, 10*time.Second).Err()) }
	// takeHandOff is bob's acquire on the node that keeps the queue after
	// a release handed the lock to it (reserved for it there).
	takeHandOff := func() {
		o := op(bob, 1)
		o.Expect, o.TakesTurn = reentrant.ExpectHandOff, true
		_, err := node.Acquire(ctx, o)
		must(err)
	}
	free := acquire(alice, reentrant.ExpectFree)
	scenes := map[string][]func(){
		"none":     nil,
		"held":     {free},
		"released": {free, release},
		"queued":   {free, queue},
		"handed":   {free, queue, release},
		"refused":  {free, acquire(bob, reentrant.ExpectHeld)},
		"reserved": {reserve},
		"takeover": {reserve, takeHandOff},
	}
	write := func(file, text string) { must(os.WriteFile(filepath.Join(out, file), []byte(text), 0o644)) }
	write("acquire.lua", lua.Acquire.Source())
	write("release.lua", lua.Release.Source())
	for scene, steps := range scenes {
		for round := range 2 { // the first loads the scripts, unrecorded
			must(rdb.FlushAll(ctx).Err())
			rec.on, rec.sent = round == 1, nil
			for _, step := range steps {
				step()
			}
		}
		rec.on = false
		var b strings.Builder
		for i := range n {
			numbered := fmt.Sprintf("instructions-%07d", i)
			for _, args := range rec.sent {
				fmt.Fprintf(&b, "*%d\r\n", len(args))
				for _, a := range args {
					a = strings.ReplaceAll(a, name, numbered)
					fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
				}
			}
		}
		write(scene+".resp", b.String())
	}
	must(rdb.Close())
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
	(cd "$work/dump" && GOFLAGS=-mod=mod go run . "127.0.0.1:$plain" "$dir" "$n")
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

# measure DIR prints DIR's five figures, one per line.
measure() {
	local dir="$1" none held released queued handed refused reserved takeover
	none="$(instructions "$dir" none)"
	held="$(instructions "$dir" held)"
	released="$(instructions "$dir" released)"
	queued="$(instructions "$dir" queued)"
	handed="$(instructions "$dir" handed)"
	refused="$(instructions "$dir" refused)"
	reserved="$(instructions "$dir" reserved)"
	takeover="$(instructions "$dir" takeover)"
	echo $(((held - none) / n))
	echo $(((released - held) / n))
	echo $(((handed - queued) / n))
	echo $(((refused - held) / n))
	echo $(((takeover - reserved) / n))
}

redis-server --port "$plain" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes --logfile "$work/plain.log"
for _ in $(seq 100); do
	redis-cli -p "$plain" ping >/dev/null 2>&1 && break
	sleep 0.1
done
dump "$repo" "$work/tree"
mapfile -t here < <(measure "$work/tree")
calls=("acquire, free lock" "release, none queued" "release, hand-off" "acquire, refused" "acquire, handed off")
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
