package main

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/reentrant"
)

func TestFormatTTL(t *testing.T) {
	for ms, want := range map[int64]string{-1: "never", -2: "-", 0: "0ms", 850: "850ms", 1049: "1s", 29_460: "29.5s", 61_400: "1m1s", 3_600_000: "1h0m0s"} {
		if got := formatTTL(ms); got != want {
			t.Errorf("formatTTL(%d) = %q; want %q", ms, got, want)
		}
	}
	if ttlMillis(lock.NoExpiry) != -1 || ttlMillis(1500*time.Millisecond) != 1500 {
		t.Error("ttlMillis")
	}
}

func TestDisplayNameQuotesOnlyWhatNeedsIt(t *testing.T) {
	for name, want := range map[string]string{"orders:42": "orders:42", "a b": `"a b"`, "x\ny": `"x\ny"`, `q"`: `"q\""`, "ünï": "ünï"} {
		if got := displayName(name); got != want {
			t.Errorf("displayName(%q) = %s; want %s", name, got, want)
		}
	}
}

// threeNodes is a lock held by "a" on nodes 0 and 1, with node 2 down.
func threeNodes() []lock.NodeState {
	return []lock.NodeState{
		{Node: 0, Addr: "r1:6379", Info: reentrant.Info{Holders: map[string]int64{"a": 2}, TTL: 9 * time.Second, Fence: 7}},
		{Node: 1, Addr: "r2:6379", Info: reentrant.Info{Holders: map[string]int64{"a": 2}, TTL: 8 * time.Second, Fence: 7}},
		{Node: 2, Addr: "r3:6379", Err: errors.New("connection refused")},
	}
}

func TestLockViewOfAQuorumHold(t *testing.T) {
	v := newLockView("job", threeNodes(), 2, 0)
	if !v.known() || !v.Held || v.Answered != 2 || v.Holder == nil || *v.Holder != (holderOut{Owner: "a", Count: 2, TTLms: 8000, Nodes: 2}) {
		t.Fatalf("view: %+v holder %+v", v, v.Holder)
	}
	if got, want := v.summary(), `lock "job": held by a (count 2, TTL 8s) on 2 of 3 nodes (quorum 2)`; got != want {
		t.Errorf("summary %q; want %q", got, want)
	}
	got := tableOf(t, v.writeNodes)
	want := `NODE  ADDRESS  HOLDER  COUNT  TTL  FENCE
0     r1:6379  a       2      9s   7
1     r2:6379  a       2      8s   7
2     r3:6379  unreachable: connection refused
`
	if got != want {
		t.Errorf("table:\n%s\nwant:\n%s", got, want)
	}
}

func TestLockViewSummaries(t *testing.T) {
	free := []lock.NodeState{{Node: 0, Info: reentrant.Info{Holders: map[string]int64{}, TTL: -2}}}
	if s := newLockView("x", free, 1, 0).summary(); s != `lock "x": free on all 1 nodes that answered (of 1)` {
		t.Errorf("free: %q", s)
	}
	states := threeNodes()
	states[1].Info.Holders = map[string]int64{"b": 1}
	if v := newLockView("x", states, 2, 0); v.Held || !strings.Contains(v.summary(), "not held: present on 2 of 3 nodes") {
		t.Errorf("split: %q", v.summary())
	}
	states[1].Err = errors.New("down")
	if v := newLockView("x", states, 2, 0); v.known() || !strings.Contains(v.summary(), "unknown: 1 of 3 nodes answered, 2 needed") {
		t.Errorf("unknown: %q", v.summary())
	}
}

func TestLsTable(t *testing.T) {
	held := newLockView("job", threeNodes(), 2, 0)
	states := threeNodes()
	states[1].Info.Holders = map[string]int64{}
	partial := newLockView("a b", states, 2, 0)
	got := tableOf(t, (&lsOut{Locks: []lockView{held, partial}}).writeTable)
	want := `NAME   HOLDER       COUNT  TTL  NODES
job    a            2      8s   2/3
"a b"  (no quorum)  -      -    1/3
`
	if got != want {
		t.Errorf("table:\n%s\nwant:\n%s", got, want)
	}
}

// readNodes is an RWMutex read by "r" on nodes 0 and 1 and by "s" on node 2
// alone, with no writer.
func readNodes() []lock.NodeState {
	read := func(holds map[string]reentrant.LeasedHold) reentrant.Info {
		return reentrant.Info{Holders: map[string]int64{}, TTL: -2, Readers: holds}
	}
	return []lock.NodeState{
		{Node: 0, Addr: "r1:6379", Info: read(map[string]reentrant.LeasedHold{"r": {Count: 2, TTL: 9 * time.Second}})},
		{Node: 1, Addr: "r2:6379", Info: read(map[string]reentrant.LeasedHold{"r": {Count: 1, TTL: 8 * time.Second}})},
		{Node: 2, Addr: "r3:6379", Info: read(map[string]reentrant.LeasedHold{"s": {Count: 1, TTL: 3 * time.Second}})},
	}
}

func TestLockViewOfReaders(t *testing.T) {
	v := newLockView("cfg", readNodes(), 2, 0)
	if v.Held || !v.readHeld() || len(v.Readers) != 1 || v.Readers[0] != (holderOut{Owner: "r", Count: 1, TTLms: 8000, Nodes: 2}) {
		t.Fatalf("view: %+v", v)
	}
	if got, want := v.summary(), `lock "cfg": read by r (count 1, TTL 8s, 2 nodes), each on a quorum of 2 of 3 nodes`; got != want {
		t.Errorf("summary %q; want %q", got, want)
	}
	got := tableOf(t, v.writeNodes)
	want := `NODE  ADDRESS  HOLDER    COUNT  TTL  FENCE
0     r1:6379  r (read)  2      9s   0
1     r2:6379  r (read)  1      8s   0
2     r3:6379  s (read)  1      3s   0
`
	if got != want {
		t.Errorf("table:\n%s\nwant:\n%s", got, want)
	}
	got = tableOf(t, (&lsOut{Locks: []lockView{v}}).writeTable)
	want = `NAME  HOLDER    COUNT  TTL  NODES
cfg   r (read)  1      8s   2/3
`
	if got != want {
		t.Errorf("ls table:\n%s\nwant:\n%s", got, want)
	}
}

// semNodes is a semaphore of 2 permits over three nodes held by "p" (one
// permit) on every node and by "q" (one permit) on nodes 0 and 1 only,
// with no lock of its name.
func semNodes() []lock.NodeState {
	sem := func(holds map[string]reentrant.LeasedHold) reentrant.Info {
		return reentrant.Info{Holders: map[string]int64{}, TTL: -2, Permits: holds}
	}
	p, q := reentrant.LeasedHold{Count: 1, TTL: 9 * time.Second}, reentrant.LeasedHold{Count: 1, TTL: 4 * time.Second}
	return []lock.NodeState{
		{Node: 0, Addr: "r1:6379", Info: sem(map[string]reentrant.LeasedHold{"p": p, "q": q})},
		{Node: 1, Addr: "r2:6379", Info: sem(map[string]reentrant.LeasedHold{"p": p, "q": q})},
		{Node: 2, Addr: "r3:6379", Info: sem(map[string]reentrant.LeasedHold{"p": {Count: 1, TTL: 8 * time.Second}})},
	}
}

func TestLockViewOfASemaphore(t *testing.T) {
	// Of 2 permits, a holder needs all 3 nodes: p holds, q does not.
	v := newLockView("exports", semNodes(), 2, 2)
	if v.Held || v.readHeld() || !v.permitsHeld() || !v.listed() || len(v.Permits) != 1 || v.Permits[0] != (holderOut{Owner: "p", Count: 1, TTLms: 8000, Nodes: 3}) {
		t.Fatalf("view: %+v", v)
	}
	if got, want := v.summary(), `semaphore "exports" (capacity 2): 1 permit held by p (1 permit, TTL 8s, 3 nodes), each on a quorum of 3 of 3 nodes`; got != want {
		t.Errorf("summary %q; want %q", got, want)
	}
	got := tableOf(t, v.writeNodes)
	want := `NODE  ADDRESS  HOLDER       COUNT  TTL  FENCE
0     r1:6379  p (permits)  1      9s   0
0     r1:6379  q (permits)  1      4s   0
1     r2:6379  p (permits)  1      9s   0
1     r2:6379  q (permits)  1      4s   0
2     r3:6379  p (permits)  1      8s   0
`
	if got != want {
		t.Errorf("table:\n%s\nwant:\n%s", got, want)
	}
	// With no capacity given or recorded, a majority: both hold, p with the
	// lease two of its copies still have.
	v = newLockView("exports", semNodes(), 2, 0)
	if got, want := v.summary(), `semaphore "exports": 2 permits held by p (1 permit, TTL 9s, 3 nodes), q (1 permit, TTL 4s, 2 nodes), each on a quorum of 2 of 3 nodes`; got != want {
		t.Errorf("summary %q; want %q", got, want)
	}
	got = tableOf(t, (&lsOut{Locks: []lockView{v}}).writeTable)
	want = `NAME     HOLDER       COUNT  TTL  NODES
exports  p (permits)  1      9s   3/3
exports  q (permits)  1      4s   2/3
`
	if got != want {
		t.Errorf("ls table:\n%s\nwant:\n%s", got, want)
	}
	// Nobody on a quorum of 3: not held, and listed as such.
	states := semNodes()
	delete(states[2].Info.Permits, "p")
	v = newLockView("exports", states, 2, 2)
	if v.listed() || v.keyNodes() != 2 {
		t.Fatalf("view: %+v", v)
	}
	if got, want := v.summary(), `semaphore "exports" (capacity 2): not held: permits present on 2 of 3 nodes, fewer than the quorum of 3`; got != want {
		t.Errorf("summary %q; want %q", got, want)
	}
	// A lock of the same name held beside it: a line for each.
	for i := range states {
		states[i].Info.Holders, states[i].Info.TTL = map[string]int64{"a": 1}, 5*time.Second
	}
	v = newLockView("exports", states, 2, 2)
	if got, want := v.summary(), "lock \"exports\": held by a (count 1, TTL 5s) on 3 of 3 nodes (quorum 2)\n"+
		`semaphore "exports" (capacity 2): not held: permits present on 2 of 3 nodes, fewer than the quorum of 3`; got != want {
		t.Errorf("summary %q; want %q", got, want)
	}
}

// tableOf is what write writes.
func tableOf(t *testing.T, write func(io.Writer) error) string {
	t.Helper()
	var b strings.Builder
	if err := write(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestLockViewTakesTheRecordedCapacity(t *testing.T) {
	states := semNodes()
	for i := range states {
		states[i].Info.Capacity = 2
	}
	states[2].Info.Capacity = 0 // none recorded there
	// As recorded: 2 permits, all 3 nodes; q is on two only.
	v := newLockView("exports", states, 2, 0)
	if v.Capacity != 2 || v.PermitQuorum != 3 || len(v.Permits) != 1 || v.Permits[0].Owner != "p" {
		t.Fatalf("as recorded: %+v", v)
	}
	// --permits wins over what the nodes recorded.
	v = newLockView("exports", states, 2, 1)
	if v.Capacity != 1 || v.PermitQuorum != 2 || len(v.Permits) != 2 {
		t.Fatalf("--permits 1: %+v", v)
	}
	// A node down: no holder can be seen on all 3, so it is not known
	// whether p still holds (the lock's quorum of 2 answered).
	down := semNodes()
	down[2] = lock.NodeState{Node: 2, Addr: "r3:6379", Err: errors.New("down")}
	if got, want := newLockView("exports", down, 2, 2).summary(), `semaphore "exports" (capacity 2): unknown: 2 of 3 nodes answered, 3 needed`; got != want {
		t.Errorf("summary %q; want %q", got, want)
	}
	// Nodes that differ: the largest capacity, so the largest quorum.
	states[1].Info.Capacity = 5
	if v = newLockView("exports", states, 2, 0); v.Capacity != 5 || v.PermitQuorum != 3 {
		t.Fatalf("differing: %+v", v)
	}
}

func TestLockViewShowsWhoWaits(t *testing.T) {
	since := time.Date(2026, 11, 29, 18, 20, 1, 234_000_000, time.UTC)
	waiter := func(owner string, after time.Duration, ttl time.Duration) reentrant.Waiter {
		return reentrant.Waiter{Owner: owner, Since: since.Add(after), TTL: ttl}
	}
	states := threeNodes()
	states[1].TieBreaker = true
	states[1].Info.Waiters = []reentrant.Waiter{waiter("w1", 0, 9*time.Second), waiter("w2", time.Second, 9*time.Second)}
	states[1].Info.Queued = 5
	states[0].Info.Waiters = []reentrant.Waiter{waiter("w2", time.Second, 4*time.Second)}
	states[0].Info.Queued = 1
	states[0].Info.WriterWaiting = reentrant.Waiter{Owner: "wr", TTL: 1500 * time.Millisecond}
	v := newLockView("job", states, 2, 0)
	if v.TieBreaker != 1 || len(v.Waiting) != 2 || v.Waiting[0] != (waiterOut{Owner: "w1", Since: since, Nodes: 1}) || v.Waiting[1].Nodes != 2 {
		t.Fatalf("waiting %+v, tie-breaker %d", v.Waiting, v.TieBreaker)
	}
	want := `lock "job": held by a (count 2, TTL 8s) on 2 of 3 nodes (quorum 2)
waiting: 2 owners, in the order the lock goes to them: w1 (since 2026-11-29 18:20:01.234 UTC, queued on 1 node), w2 (since 2026-11-29 18:20:02.234 UTC, queued on 2 nodes), and at least 3 more; the queue is on the tie-breaker, node 1
writer waiting: wr (marked on 1 node of 3; new readers wait behind it)`
	if got := v.summary(); got != want {
		t.Errorf("summary:\n%s\nwant:\n%s", got, want)
	}
	got := tableOf(t, v.writeNodes)
	wantTable := `NODE  ADDRESS  HOLDER             COUNT  TTL   FENCE
0     r1:6379  a                  2      9s    7
0     r1:6379  wr (writer waits)  -      1.5s  7
0     r1:6379  w2 (waits, 1st)    -      4s    7
1     r2:6379  a                  2      8s    7
1     r2:6379  w1 (waits, 1st)    -      9s    7
1     r2:6379  w2 (waits, 2nd)    -      9s    7
2     r3:6379  unreachable: connection refused
`
	if got != wantTable {
		t.Errorf("table:\n%s\nwant:\n%s", got, wantTable)
	}
	// JSON: the queue per node, its entries' tickets as times.
	var b strings.Builder
	if err := writeJSON(&b, v); err != nil {
		t.Fatal(err)
	}
	for _, part := range []string{`"tie_breaker": 1`, `"waiting": [`, `"since": "2026-11-29T18:20:01.234Z"`, `"queued": 5`, `"writer_waiting": {`, `"ttl_ms": 1500`} {
		if !strings.Contains(b.String(), part) {
			t.Errorf("JSON lacks %s:\n%s", part, b.String())
		}
	}
	// The holder's entry left in a queue: not waiting, marked in its row.
	states[0].Info.Waiters = append([]reentrant.Waiter{waiter("a", -time.Second, 3*time.Second)}, states[0].Info.Waiters...)
	states[1].Info.WriterWaiting = reentrant.Waiter{Owner: "a", TTL: time.Second}
	v = newLockView("job", states, 2, 0)
	table := tableOf(t, v.writeNodes)
	if len(v.Waiting) != 2 || !strings.Contains(table, "a (holds; left in queue)  -      3s") || !strings.Contains(table, "a (holds; mark left)") || !strings.Contains(table, "w2 (waits, 1st)") {
		t.Errorf("holder's entry and mark: waiting %+v\n%s", v.Waiting, table)
	}
	if s := v.summary(); strings.Contains(s, "writer waiting: a") || !strings.Contains(s, "writer waiting: wr") {
		t.Errorf("the holder's mark is no writer waiting: %q", s)
	}
	// Live entries only past those read (a fair queue's first 1,000 had
	// all ended): still a line, with how many.
	far := threeNodes()
	far[1].TieBreaker, far[1].Info.Queued = true, 4
	if s, want := newLockView("job", far, 2, 0).summary(), "waiting: at least 4 owners, none among the queue's first entries read; the queue is on the tie-breaker, node 1"; !strings.Contains(s, want) {
		t.Errorf("summary with only unread waiters:\n%s\nwant a line %q", s, want)
	}
	// No one waits: no line, no rows.
	if s := newLockView("job", threeNodes(), 2, 0).summary(); strings.Contains(s, "wait") {
		t.Errorf("summary with no waiter: %q", s)
	}
}

func TestOrdinal(t *testing.T) {
	for n, want := range map[int]string{1: "1st", 2: "2nd", 3: "3rd", 4: "4th", 11: "11th", 12: "12th", 13: "13th", 21: "21st", 22: "22nd", 100: "100th", 101: "101st", 111: "111th"} {
		if got := ordinal(n); got != want {
			t.Errorf("ordinal(%d) = %q; want %q", n, got, want)
		}
	}
}
