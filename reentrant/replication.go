package reentrant

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/lua"
)

// ErrNotReplicated is matched by the error of a write that ran on the node
// but that fewer of its replicas than Replication.Replicas acknowledged
// within Replication.Timeout (see NewReplicatedNode). The write stays on the
// node: to the caller it is a call whose outcome is unknown, as after a
// timeout, and a lock package treats that node as not agreeing.
var ErrNotReplicated = errors.New("relock: write not acknowledged by enough replicas")

// Replication is the replicated mode of a Node: every round trip of its
// scripts (but a lone read-only one's) ends with WAIT Replicas Timeout on
// the same connection, so the node answers only once that many of its
// replicas have the round trip's writes, or Timeout has passed. WAIT makes a lost
// write after a failover less likely, not impossible: Redis replication
// stays asynchronous, and a failover may promote a replica that did not
// acknowledge.
type Replication struct {
	// Replicas is how many replicas must acknowledge each write; 0 turns
	// the mode off.
	Replicas int
	// Timeout bounds each WAIT. It must be at least a millisecond (WAIT
	// counts in milliseconds, and 0 would wait for ever).
	Timeout time.Duration
}

// on reports whether writes wait for replicas.
func (r Replication) on() bool { return r.Replicas > 0 }

// CheckFor rejects, with an error wrapping ErrInvalidArgument, a mode WAIT
// cannot carry out on a node over rdb: negative Replicas, a Timeout below
// WAIT's millisecond, or a client whose pipelines would send the WAIT to
// another server than the writes (a *redis.ClusterClient, a *redis.Ring).
// The zero mode suits every node.
func (r Replication) CheckFor(rdb redis.UniversalClient) error {
	switch _, plain := rdb.(*redis.Client); {
	case r.Replicas < 0:
		return fmt.Errorf("%w: Replicas: %d is negative", ErrInvalidArgument, r.Replicas)
	case !r.on():
		return nil
	case r.Timeout < time.Millisecond:
		return fmt.Errorf("%w: ReplicaTimeout: %v is below WAIT's 1 ms", ErrInvalidArgument, r.Timeout)
	case !plain:
		return fmt.Errorf("%w: Replicas: a %T node cannot wait for replicas (WAIT goes to one server of it)", ErrInvalidArgument, rdb)
	}
	return nil
}

// wait queues WAIT on p, after the round trip's calls, when the mode is on.
// (A round trip of read-only calls alone need not wait; Node sends a lone
// one without it. One that shares a batch with writes waits with them.)
func (r Replication) wait(ctx context.Context, p redis.Pipeliner) {
	if r.on() {
		_ = p.Process(ctx, redis.NewIntCmd(ctx, "wait", r.Replicas, r.Timeout.Milliseconds()))
	}
}

// shortfall returns the error of a round trip whose commands are cmds (as
// Pipelined returns them: its WAIT last, from wait) when that WAIT counted
// fewer replicas than asked, or failed; nil when the mode is off.
func (r Replication) shortfall(cmds []redis.Cmder) error {
	if !r.on() || len(cmds) == 0 {
		return nil
	}
	wait, ok := cmds[len(cmds)-1].(*redis.IntCmd)
	if !ok {
		return &shortfallError{msg: "the round trip carried no WAIT", cause: errNoWait}
	}
	acked, err := wait.Result()
	switch {
	case err != nil:
		return &shortfallError{msg: "WAIT failed: " + err.Error(), cause: err}
	case acked < int64(r.Replicas):
		return &shortfallError{msg: fmt.Sprintf("%d of %d within %v", acked, r.Replicas, r.Timeout)}
	}
	return nil
}

// errNoWait is the cause of a shortfall whose round trip lacks its WAIT: the
// connection's state is unknown.
var errNoWait = errors.New("no WAIT reply")

// shortfallError is a round trip's ErrNotReplicated. cause is the WAIT's own
// failure, nil when WAIT answered with too few replicas: the connection is
// sound then, and a kept one stays kept (see brokeConn).
type shortfallError struct {
	msg   string
	cause error
}

func (e *shortfallError) Error() string        { return ErrNotReplicated.Error() + ": " + e.msg }
func (e *shortfallError) Is(target error) bool { return target == ErrNotReplicated }
func (e *shortfallError) Unwrap() error        { return e.cause }

// unreplicated gives err, a round trip's shortfall, to the reply cmd of a
// call of script s that may have written and otherwise succeeded.
func unreplicated(cmd *redis.Cmd, s *lua.Script, err error) {
	if err != nil && cmd.Err() == nil && !s.ReadOnly() {
		cmd.SetErr(err)
	}
}
