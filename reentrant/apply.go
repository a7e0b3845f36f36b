package reentrant

import (
	"context"
	"fmt"
	"slices"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/lua"
)

// Change is one acquire or one release in a batch sent by Apply.
type Change struct {
	Op Op
	// Release brings Op.Owner's count down to Op.Count (≥ 0), as Release
	// does; otherwise the change is an acquire to Op.Count (≥ 1).
	Release bool
	// ReleaseID is published by a release that frees the lock.
	ReleaseID string
}

// ChangeResult answers one Change of a batch.
type ChangeResult struct {
	Acquisition Acquisition   // an acquire's answer
	Released    ReleaseResult // a release's answer
	Err         error         // the change failed; the other fields are zero
}

// Apply sends many acquires and releases in one pipelined round trip, in
// order: a later change of the same lock runs after an earlier one, except
// after the node lost its script cache (a restart, SCRIPT FLUSH): the
// changes whose script it lacked run again, in their order, after the others
// ran (see recoverNoScript). The i-th result answers changes[i]. Each change
// follows the rules of Acquire or Release, sequence numbers included.
func (n *Node) Apply(ctx context.Context, changes []Change) []ChangeResult {
	results := make([]ChangeResult, len(changes))
	calls := make([]scriptCall, 0, len(changes))
	sent := make([]int, 0, len(changes))
	for i, ch := range changes {
		op := ch.Op
		var call scriptCall
		op.twice = !n.noRetries
		if ch.Release {
			results[i].Err = op.check(0)
			call = op.releaseCall(ch.ReleaseID)
		} else {
			results[i].Err = op.check(1)
			call = op.acquireCall()
		}
		if results[i].Err == nil {
			calls = append(calls, call)
			sent = append(sent, i)
		}
	}
	for j, cmd := range n.pipelined(ctx, calls) {
		i := sent[j]
		r := &results[i]
		if changes[i].Release {
			var v int64
			v, r.Err = cmd.Int64()
			r.Released = ReleaseResult(v)
		} else {
			var v []any
			if v, r.Err = cmd.Slice(); r.Err == nil {
				r.Acquisition, r.Err = acquisitionOf(v)
			}
		}
		if r.Err != nil {
			*r = ChangeResult{Err: n.opError(changes[i].Op, r.Err)}
		}
	}
	return results
}

// acquireKeys and releaseKeys are the KEYS of the acquire and release
// scripts for op, the same for a lone call and a batch.
func acquireKeys(op Op) []string {
	return []string{op.Key.Lock, op.Key.Fence, op.Key.Tombstone(op.Owner), op.Key.Queue, op.Key.QueueDeadlines}
}

// acquireArgs are the ARGV of the acquire script for op.
func acquireArgs(op Op) []any {
	return appendAcquireArgs(append(make([]any, 0, 1+acquireArgsAfterOwner), op.Owner), op, op.Lease.Milliseconds())
}

// acquireArgsAfterOwner is how many ARGV appendAcquireArgs appends.
const acquireArgsAfterOwner = 5

// appendAcquireArgs appends the acquire script's ARGV after the owner
// (ARGV[1]) to argv, with lease as ARGV[2]: one list for a lone call and a
// prepared one. The flag Op.Waiting is read with an RWMutex's keys only.
func appendAcquireArgs(argv []any, op Op, lease any) []any {
	return append(argv, lease, op.Count, op.Seq, acquireFlags(op), op.Ticket)
}

// acquireFlags is the acquire script's ARGV[5]: its nine flags, one
// character each (see acquire.lua), boxed once for every combination
// (acquireFlagArgs), so that a call allocates nothing for them.
func acquireFlags(op Op) any {
	i := 0
	for _, b := range [...]bool{op.Reentry, op.Fence, op.twice, op.AskHolder, op.Waiting, op.noStrays(), op.Unqueued} {
		i = i<<1 | flag(b)
	}
	return acquireFlagArgs[(i*3+queueRule(op))*3+int(op.Expect)]
}

// acquireFlagArgs holds every ARGV[5] of the acquire script, boxed, at the
// index acquireFlags computes: seven booleans, then the queue rule and the
// expectation (three values each).
var acquireFlagArgs = func() (args [1 << 7 * 3 * 3]any) {
	for i := range args {
		bits, rule, expect := i/9, i/3%3, i%3
		bit := func(n int) byte { return '0' + byte(bits>>(6-n)&1) }
		args[i] = string([]byte{bit(0), bit(1), '0' + byte(rule), bit(2), bit(3), bit(4), bit(5), bit(6), '0' + byte(expect)})
	}
	return args
}()

// noStrays is Op.NoStrays where the client never sends a call twice: the
// acquire and release scripts' promise that no tombstone is needed.
func (op Op) noStrays() bool { return op.NoStrays && !op.twice }

// queueRule is the acquire script's flag rule: 1 for Op.Fair, 2 for
// Op.TakesTurn, 0 for neither.
func queueRule(op Op) int {
	switch {
	case op.Fair:
		return 1
	case op.TakesTurn:
		return 2
	}
	return 0
}

// flag is a script's boolean argument.
func flag(b bool) int {
	if b {
		return 1
	}
	return 0
}

func releaseKeys(op Op) []string {
	return []string{op.Key.Lock, op.Key.Channel, op.Key.Tombstone(op.Owner), op.Key.Queue, op.Key.QueueDeadlines}
}

// releaseArgs are the ARGV of the release script for op, publishing
// releaseID when it frees the lock.
func releaseArgs(op Op, releaseID string) []any {
	return appendReleaseArgs(append(make([]any, 0, 1+releaseArgsAfterOwner), op.Owner), op, op.Lease.Milliseconds(), releaseID)
}

// releaseArgsAfterOwner is how many ARGV appendReleaseArgs appends.
const releaseArgsAfterOwner = 7

// appendReleaseArgs is appendAcquireArgs for the release script.
func appendReleaseArgs(argv []any, op Op, lease any, releaseID string) []any {
	return append(argv, lease, op.Count, op.Seq, releaseID, wakeArg(op.Wake), flag(op.noStrays()), flag(op.LeaveQueue))
}

// acquisitionOf reads the acquire script's reply {outcome, count or pttl,
// fence}: outcome 1 acquired, 0 held by another owner, 2 a stale operation
// of an owner that released since (its tombstone refused it), 3 a re-entry
// whose hold is missing, 4 a fair lock's turn that is someone else's. An
// outcome 0 may name the other owner after the fence (Op.AskHolder).
func acquisitionOf(reply []any) (Acquisition, error) {
	bad := func() (Acquisition, error) {
		return Acquisition{}, fmt.Errorf("relock: acquire: unexpected reply %v", reply)
	}
	if len(reply) != 3 && len(reply) != 4 {
		return bad()
	}
	outcome, ok0 := reply[0].(int64)
	n, ok1 := reply[1].(int64)
	fence, ok2 := reply[2].(int64)
	if !ok0 || !ok1 || !ok2 || outcome < 0 || outcome > 4 {
		return bad()
	}
	a := Acquisition{Acquired: outcome == 1, Stale: outcome == 2, Missing: outcome == 3, Queued: outcome == 4, Fence: fence}
	if a.Acquired {
		a.Count = n
	} else {
		a.HolderTTL = pttl(n)
	}
	if len(reply) == 4 {
		holder, ok := reply[3].(string)
		if !ok || outcome != 0 {
			return bad()
		}
		a.Holder = holder
	}
	return a, nil
}

// scriptCall is one script call of a pipelined batch.
type scriptCall struct {
	script *lua.Script
	keys   []string
	args   []any
}

// pipelined is runPipelined over one of the node's kept connections (see
// keptConns): its renewal batches and changes do not wait in the pool
// behind the connections its own trips keep.
func (n *Node) pipelined(ctx context.Context, calls []scriptCall) []*redis.Cmd {
	var cmds []*redis.Cmd
	n.calls.conns.with(n.rdb, func(to sender) bool {
		cmds = runPipelined(ctx, to, n.rep, &n.calls.scripts, calls)
		return slices.ContainsFunc(cmds, func(c *redis.Cmd) bool { return brokeConn(c.Err()) })
	})
	return cmds
}

// runPipelined sends calls in one pipelined round trip and returns their
// replies in order: by SHA the scripts known says the node holds, by source
// the first call of each other one (see lua.Loaded); the calls a node
// answered NOSCRIPT to (it lost its script cache) go again (see
// recoverNoScript). known learns from the replies.
func runPipelined(ctx context.Context, rdb sender, rep Replication, known *lua.Loaded, calls []scriptCall) []*redis.Cmd {
	cmds := make([]*redis.Cmd, len(calls))
	first := firstSends{known: known}
	sent, _ := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, c := range calls {
			if first.bySource(c.script) {
				cmds[i] = c.script.RunSource(ctx, p, c.keys, c.args...)
			} else {
				cmds[i] = c.script.RunSHA(ctx, p, c.keys, c.args...)
			}
		}
		rep.wait(ctx, p)
		return nil
	})
	if err := rep.shortfall(sent); err != nil {
		for i, c := range calls {
			unreplicated(cmds[i], c.script, err)
		}
	}
	learnLoaded(known, calls, cmds)
	recoverNoScript(ctx, rdb, rep, known, calls, cmds)
	return cmds
}

// learnLoaded records in known what the replies cmds to calls tell of the
// node's script cache: a NOSCRIPT says it lost every script, any other
// answer of the node's that it holds that call's script.
func learnLoaded(known *lua.Loaded, calls []scriptCall, cmds []*redis.Cmd) {
	for i, cmd := range cmds {
		learn(known, calls[i].script, cmd.Err())
	}
}

// learn records in known what err, the reply to one call of s, tells of
// the node's script cache: NOSCRIPT, that it lost every script; any other
// answer of the node's (a reply, or an error the script raised), that it
// holds s. A broken connection tells nothing.
func learn(known *lua.Loaded, s *lua.Script, err error) {
	switch {
	case lua.IsNoScript(err):
		known.Forget()
	case !brokeConn(err):
		known.Add(s)
	}
}

// firstSends picks, among the calls of one round trip, those that go by
// source: the first call of each script the node is not known to hold
// (see lua.Loaded). The source caches the script, so the calls of it
// queued behind that one go by SHA.
type firstSends struct {
	known   *lua.Loaded          // nil: no script is known to be there
	sourced map[*lua.Script]bool // made for a script not loaded only
}

// bySource reports whether the next call of s goes by source.
func (f *firstSends) bySource(s *lua.Script) bool {
	if (f.known != nil && f.known.Has(s)) || f.sourced[s] {
		return false
	}
	if f.sourced == nil {
		f.sourced = make(map[*lua.Script]bool, 1)
	}
	f.sourced[s] = true
	return true
}

// recoverNoScript sends again the calls whose reply in cmds is NOSCRIPT, and
// puts their new replies in its place: in one pipelined round trip, the
// first call of each script with its source (EVAL, which caches the script
// there) and the others by SHA behind it, so the source goes once per
// script, not once per call. Through a client whose pipeline reaches
// several nodes (a cluster's), a call on a node that did not get the source
// meets NOSCRIPT again: those scripts are loaded (a cluster client loads
// them on every master) and those calls go once more; a failed load is the
// reply of its calls. In the replicated mode rep each round trip ends with
// its WAIT, as the first did.
func recoverNoScript(ctx context.Context, rdb sender, rep Replication, known *lua.Loaded, calls []scriptCall, cmds []*redis.Cmd) {
	missing := noScript(cmds, nil)
	if len(missing) == 0 {
		return
	}
	defer learnLoaded(known, calls, cmds)
	var first firstSends // the node answered NOSCRIPT: it holds none
	// resent sends the calls numbered idx in one round trip.
	resent := func(idx []int, send func(p redis.Pipeliner)) {
		sent, _ := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			send(p)
			rep.wait(ctx, p)
			return nil
		})
		if err := rep.shortfall(sent); err != nil {
			for _, i := range idx {
				unreplicated(cmds[i], calls[i].script, err)
			}
		}
	}
	resent(missing, func(p redis.Pipeliner) {
		for _, i := range missing {
			c := calls[i]
			if first.bySource(c.script) {
				cmds[i] = c.script.RunSource(ctx, p, c.keys, c.args...)
			} else {
				cmds[i] = c.script.RunSHA(ctx, p, c.keys, c.args...)
			}
		}
	})
	missing = noScript(cmds, missing)
	if len(missing) == 0 {
		return
	}
	loaded := map[*lua.Script]error{}
	var pending []int
	for _, i := range missing {
		s := calls[i].script
		if _, done := loaded[s]; !done {
			loaded[s] = s.Load(ctx, rdb)
		}
		if err := loaded[s]; err != nil {
			cmds[i].SetErr(err)
			continue
		}
		pending = append(pending, i)
	}
	if len(pending) == 0 {
		return
	}
	resent(pending, func(p redis.Pipeliner) {
		for _, i := range pending {
			cmds[i] = calls[i].script.RunSHA(ctx, p, calls[i].keys, calls[i].args...)
		}
	})
}

// noScript returns the indexes of cmds (among among, or all when nil) whose
// reply is NOSCRIPT.
func noScript(cmds []*redis.Cmd, among []int) []int {
	var out []int
	if among == nil {
		for i, cmd := range cmds {
			if lua.IsNoScript(cmd.Err()) {
				out = append(out, i)
			}
		}
		return out
	}
	for _, i := range among {
		if lua.IsNoScript(cmds[i].Err()) {
			out = append(out, i)
		}
	}
	return out
}

// prepared is what the copies of a prepared Op share (see Op.Prepare): its
// scripts' KEYS, and the start of their argv as go-redis sends it,
// {"evalsha", SHA, number of keys, KEYS..., owner}, every value already in
// an interface (go-redis would box each again, an allocation per key per
// call).
type prepared struct {
	key                      Key    // the Op it was built for: a copy with another is not its
	owner                    string // own
	lease                    int64  // the Op's lease in ms, and boxed
	leaseArg                 any
	acquireKeys, releaseKeys []string
	acquireArgv, releaseArgv []any
}

func prepare(op Op) *prepared {
	p := &prepared{key: op.Key, owner: op.Owner, lease: op.Lease.Milliseconds(), leaseArg: op.Lease.Milliseconds(),
		acquireKeys: acquireKeys(op), releaseKeys: releaseKeys(op)}
	p.acquireArgv = argvStart(lua.Acquire, p.acquireKeys, op.Owner)
	p.releaseArgv = argvStart(lua.Release, p.releaseKeys, op.Owner)
	return p
}

// argvStart is {"evalsha", SHA, len(keys), keys..., owner}, boxed.
func argvStart(s *lua.Script, keys []string, owner string) []any {
	argv := []any{"evalsha", s.SHA(), len(keys)}
	for _, k := range keys {
		argv = append(argv, k)
	}
	return append(argv, owner)
}

// fits reports whether p was prepared for op's lock, owner and mode.
func (p *prepared) fits(op Op) bool {
	return p != nil && op.Mode == Exclusive && op.Key == p.key && op.Owner == p.owner
}

// leaseArgOf is op's lease in ms as a script argument.
func (p *prepared) leaseArgOf(op Op) any {
	if ms := op.Lease.Milliseconds(); ms != p.lease {
		return ms
	}
	return p.leaseArg
}

// acquireCall is op.acquireCall, from p: the same script, KEYS and ARGV.
func (p *prepared) acquireCall(op Op) preparedCall {
	argv := make([]any, len(p.acquireArgv), len(p.acquireArgv)+acquireArgsAfterOwner)
	copy(argv, p.acquireArgv)
	argv = appendAcquireArgs(argv, op, p.leaseArgOf(op))
	return preparedCall{scriptCall{lua.Acquire, p.acquireKeys, argv[3+len(p.acquireKeys):]}, argv}
}

// releaseCall is op.releaseCall, from p.
func (p *prepared) releaseCall(op Op, releaseID string) preparedCall {
	argv := make([]any, len(p.releaseArgv), len(p.releaseArgv)+releaseArgsAfterOwner)
	copy(argv, p.releaseArgv)
	argv = appendReleaseArgs(argv, op, p.leaseArgOf(op), releaseID)
	return preparedCall{scriptCall{lua.Release, p.releaseKeys, argv[3+len(p.releaseKeys):]}, argv}
}

// wakeArgs are the Wakes' luaFlag, boxed once (WakeCleanup is the last Wake).
var wakeArgs = func() (args [WakeCleanup + 1]any) {
	for w := range args {
		args[w] = Wake(w).luaFlag()
	}
	return args
}()

// wakeArg is w's luaFlag as a script argument.
func wakeArg(w Wake) any {
	if w >= 0 && int(w) < len(wakeArgs) {
		return wakeArgs[w]
	}
	return w.luaFlag()
}

// preparedCall is a script call with its whole EVALSHA argv built: the
// call sends argv as it is, and only a node that lost the script (NOSCRIPT)
// gets the script's source with KEYS and ARGV.
type preparedCall struct {
	scriptCall
	argv []any
}
