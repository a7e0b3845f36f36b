package lock

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/reentrant"
)

// Defaults of the Options fields left zero.
const (
	DefaultLease            = 30 * time.Second
	DefaultClockDriftFactor = 0.01
	DefaultRetryDelay       = 20 * time.Millisecond

	// NodeTimeoutFloor is the least adaptive per-node timeout (see
	// Options.NodeTimeout), or a tenth of the Lease when that is shorter:
	// a busy machine pauses goroutines for tens of milliseconds however
	// fast the node is.
	NodeTimeoutFloor = 100 * time.Millisecond
	// NodeTimeoutInitial is the adaptive per-node timeout before the node's
	// first answer (RFC 6298's initial timeout), or a tenth of the Lease
	// when that is shorter: long enough for a node far away.
	NodeTimeoutInitial = time.Second

	// lossEarly is how long before ValidUntil the watchdog reports a hold
	// lost (at most a tenth of the validity it had): the timer, and the
	// goroutines and locks between it and Lost() closing, run late on a
	// busy machine. The chaos suite under CI load saw a loss signal arrive
	// 78 ms after its timer was due, with no timer running late.
	lossEarly = 100 * time.Millisecond

	// renewBatchMax is how many holds one renewal batch carries: one
	// pipeline per node (see Client.renewBatch), so 10,000 holds due
	// together cost 5 round trips per node, not the watchdog's default of
	// one per 500 (the bench measured 6: not all are due at once). A batch
	// of 2,000 renewal scripts is about 300 KB on the wire and 20 to 25 ms
	// of the node's time (the bench: 107 to 124 ms per tick for 10,000),
	// which the node reads and runs in 16 KB slices between other clients'
	// commands, so theirs do not wait for the whole batch; its replies come
	// well within a renewal's wait (at least 4 node timeouts).
	renewBatchMax = 2000

	// minLeaseToTimeout is how many node timeouts a lease must span: a lease
	// barely above the timeout would leave no validity after a slow round.
	minLeaseToTimeout = 10
	// driftFloor is added to every drift allowance (Redlock's 2 ms).
	driftFloor = 2 * time.Millisecond
)

// Options configure a Client. Only Nodes is required.
type Options struct {
	// Nodes are the independent Redis masters the lock lives on: one for
	// single-instance mode, or several (3, 5) for a Redlock quorum of
	// len(Nodes)/2+1. The Client does not close them. Of a *redis.Client
	// (a failover client is one) it keeps a few pooled connections between
	// its round trips: at most four per node, and half the pool's size,
	// each given back after 100 ms unused and all of them by Close. Clients
	// sharing one go-redis client each keep their own.
	//
	// Each node may be a *redis.Client, a Sentinel failover client
	// (redis.NewFailoverClient: the group's current master is the node) or a
	// *redis.ClusterClient (a whole Redis Cluster is the node: lock names
	// spread over its shards, and every key of one lock shares a hash tag,
	// so one slot). A *redis.Ring is rejected: it is not one server.
	//
	// Each must be a different server. New rejects what it can see without
	// contacting anyone (the same client twice, the same address twice); the
	// first operation that contacts the nodes compares the servers' run_ids
	// (INFO server; all masters of a Cluster), which also catches
	// "localhost" and "127.0.0.1" for one server and two failover clients of
	// one Sentinel group. A duplicate found then makes that operation and
	// every later one fail with an error that names both nodes and wraps
	// ErrInvalidArgument, before anything is written. See identity.go.
	//
	// An even count is accepted, for a documented reason: the quorum
	// len(Nodes)/2+1 is still a strict majority, so two owners never both
	// reach one, and any two quorums share two nodes instead of one, so a
	// held lock survives one of its nodes restarting empty even with
	// another node down (with 3 nodes, one down and one restarted empty can
	// let a second owner in). It buys no availability: 2 nodes survive no
	// node failure, 4 survive one like 3 do. Prefer an odd count unless that
	// margin is what you want.
	//
	// List the nodes in the same order in every process that shares locks:
	// each lock has a tie-breaker node, picked by position in this list,
	// that settles which waiter goes on when several try at once (see
	// contend.go). Another order in some process costs that process speed
	// under contention, never safety.
	Nodes []redis.UniversalClient

	// KeyPrefix namespaces every key relock writes ("relock" when empty).
	KeyPrefix string

	// Lease is the lease of locks taken without an explicit one; the
	// watchdog renews them every Lease/3 while they are held. Default 30s.
	// It must be at least 10 × NodeTimeout when NodeTimeout is set; so must
	// an explicit lease (LockFor), also against the adaptive floor.
	Lease time.Duration

	// NodeTimeout is how long an operation waits for one node's answer,
	// whatever the go-redis client's own timeouts are.
	//
	// Zero (the default) makes it adaptive, per node, as TCP's
	// retransmission timer is (RFC 6298): the smoothed round trip plus
	// four times its mean deviation, learnt from the node's answers to
	// every kind of call (acquires, releases, renewal batches; queueing in
	// this process included, so a loaded client waits longer). Before the
	// node's first answer it is NodeTimeoutInitial (1 s). Each timeout
	// doubles it until an answer comes, so a node that got slower is soon
	// waited for long enough. It never goes below NodeTimeoutFloor (100 ms)
	// nor above a tenth of the lease, so an acquire that waited that long
	// still leaves a validity of lease − lease/10 − drift, above zero (89%
	// of the lease less 2 ms at the default drift); with a Lease under 1 s
	// the floor and the initial value shrink to Lease/10 as well.
	//
	// A positive value is a fixed timeout instead, the same for every node
	// and every call; Lease must then be at least 10 × NodeTimeout.
	//
	// Unlock waits longer for a node than an acquire does, since a release
	// has no validity to protect: adaptive, a tenth of the lease (at least
	// 4 floors; 3 s at the default lease, go-redis's own read timeout),
	// whatever the estimate; fixed, 4 × NodeTimeout. Renewal batches wait
	// as long. It keeps retrying nodes that still did not answer in the
	// background.
	// Once a quorum of nodes has agreed (taken the lock, found the hold),
	// the others are waited for only as long as their usual round trips
	// call for, not the backed-off timeout: a dead node of a minority does
	// not slow every operation.
	// After New, NodeTimeout holds the fixed timeout or the adaptive floor.
	NodeTimeout time.Duration

	// ClockDriftFactor is the share of a lease allowed for clock drift
	// between the client and the nodes, in [0, 0.5). Zero means the default,
	// 0.01; the drift allowance is Lease × factor + 2 ms.
	ClockDriftFactor float64

	// RetryDelay is the mean of the random delay between attempts that fail
	// for lack of a quorum (nodes down or slow). Default 20ms.
	RetryDelay time.Duration

	// Replicas turns on the replicated mode when above zero, for nodes that
	// are masters with replicas (a Sentinel group's failover client, or a
	// master and its replicas): every write relock makes on a node is
	// followed, in the same round trip and on the same connection, by
	// WAIT Replicas ReplicaTimeout, and counts as done on that node only
	// when at least Replicas replicas acknowledged it. A write they did not
	// acknowledge in time is that node's failure (ErrNotReplicated, in the
	// QuorumError): an acquire undoes it, a renewal that cannot reach a
	// quorum this way ends in a loss, a release is sent again in the
	// background. So a lock is handed out only once it survives the
	// master's failover to one of those replicas, barring a failover to a
	// replica that had not acknowledged (Redis replication stays
	// asynchronous: WAIT narrows the window, it does not close it).
	//
	// It costs each write round trip the replicas' acknowledgement, and
	// makes every lock operation fail while fewer replicas than Replicas
	// are connected. It works with plain and failover *redis.Client nodes;
	// a *redis.ClusterClient node is rejected (its pipelines would send WAIT
	// to some other shard), and so is a node whose go-redis ReadTimeout is
	// not above ReplicaTimeout. Zero (the default) is the quorum mode alone.
	Replicas int

	// ReplicaTimeout bounds each WAIT of the replicated mode: how long a
	// write waits for its replicas' acknowledgements. It must be at least a
	// millisecond (WAIT counts milliseconds) and below NodeTimeout (or its
	// adaptive floor), since it adds to a node's round trip. Default: half
	// of NodeTimeout (50 ms with the adaptive timeout).
	ReplicaTimeout time.Duration

	// Logger receives relock's diagnostics (quorum failures, losses,
	// background clean-ups). Default: discard.
	Logger *slog.Logger

	// Observer, when set, receives an event for every attempt, wait,
	// release, renewal batch, loss, node failure and Pub/Sub reconnect (see
	// Observer): the hook for metrics and traces. New copies it: changing
	// it afterwards has no effect. Nil (the default) costs nothing.
	Observer *Observer

	// adaptive is set by withDefaults when NodeTimeout was left zero; it
	// then holds the adaptive floor.
	adaptive bool
}

// withDefaults validates o and fills in the zero fields. The error says which
// option is wrong and why, and wraps ErrInvalidArgument.
func (o Options) withDefaults() (Options, error) {
	if err := checkNodes(o.Nodes); err != nil {
		return o, err
	}
	var err error
	if o.NodeTimeout < 0 {
		return o, invalid("NodeTimeout", fmt.Sprintf("%v is negative", o.NodeTimeout))
	}
	if o.Lease, err = durationOrDefault("Lease", o.Lease, DefaultLease); err != nil {
		return o, err
	}
	if o.NodeTimeout == 0 {
		// Adaptive: the floor takes NodeTimeout's place in the lease rule,
		// and shrinks with a short lease so the rule holds by construction.
		o.adaptive = true
		o.NodeTimeout = min(NodeTimeoutFloor, o.Lease/minLeaseToTimeout)
		if o.NodeTimeout <= 0 {
			return o, invalid("Lease", fmt.Sprintf("%v is too short to leave any time for a node to answer", o.Lease))
		}
	}
	if err := checkLease("Lease", o.Lease, o.NodeTimeout); err != nil {
		return o, err
	}
	if err := o.replicatedMode(); err != nil {
		return o, err
	}
	if o.RetryDelay, err = durationOrDefault("RetryDelay", o.RetryDelay, DefaultRetryDelay); err != nil {
		return o, err
	}
	// Written so that NaN, which compares false with everything, fails too.
	if !(o.ClockDriftFactor >= 0 && o.ClockDriftFactor < 0.5) {
		return o, invalid("ClockDriftFactor", fmt.Sprintf("%v is outside [0, 0.5)", o.ClockDriftFactor))
	}
	if o.ClockDriftFactor == 0 {
		o.ClockDriftFactor = DefaultClockDriftFactor
	}
	if o.KeyPrefix == "" {
		o.KeyPrefix = reentrant.DefaultPrefix
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o, nil
}

// replicatedMode validates Replicas and ReplicaTimeout, once NodeTimeout is
// known, and fills in ReplicaTimeout's default. What WAIT itself asks of
// a node, reentrant checks (Replication.CheckFor); the rest is the lock's:
// the WAIT must fit in a node's round trip.
func (o *Options) replicatedMode() error {
	switch {
	case o.ReplicaTimeout < 0:
		return invalid("ReplicaTimeout", fmt.Sprintf("%v is negative", o.ReplicaTimeout))
	case o.Replicas == 0 && o.ReplicaTimeout != 0:
		return invalid("ReplicaTimeout", "set without Replicas")
	case o.Replicas > 0 && o.ReplicaTimeout == 0:
		o.ReplicaTimeout = o.NodeTimeout / 2
	}
	rep := o.replication()
	for i, n := range o.Nodes {
		if err := rep.CheckFor(n); err != nil {
			return fmt.Errorf("node %d: %w", i, err)
		}
		if o.Replicas == 0 {
			continue
		}
		// A round trip's replies are read within the client's ReadTimeout
		// (0 became go-redis's 3 s default; negative: no bound). CheckFor
		// let only a *redis.Client through.
		if rt := n.(*redis.Client).Options().ReadTimeout; rt > 0 && rt <= o.ReplicaTimeout {
			return invalid("ReplicaTimeout", fmt.Sprintf("%v is not below node %d's ReadTimeout (%v), which would cut every WAIT short", o.ReplicaTimeout, i, rt))
		}
	}
	if o.Replicas > 0 && o.ReplicaTimeout >= o.NodeTimeout {
		return invalid("ReplicaTimeout", fmt.Sprintf("%v is not below NodeTimeout (%v)", o.ReplicaTimeout, o.NodeTimeout))
	}
	return nil
}

// replication is the replicated mode the options ask of every node.
func (o Options) replication() reentrant.Replication {
	return reentrant.Replication{Replicas: o.Replicas, Timeout: o.ReplicaTimeout}
}

// durationOrDefault rejects a negative duration option and replaces zero
// with its default.
func durationOrDefault(what string, d, def time.Duration) (time.Duration, error) {
	switch {
	case d < 0:
		return 0, invalid(what, fmt.Sprintf("%v is negative", d))
	case d == 0:
		return def, nil
	}
	return d, nil
}

// checkLease rejects a lease that is not positive or not well above the
// per-node timeout.
func checkLease(what string, lease, nodeTimeout time.Duration) error {
	if lease <= 0 {
		return invalid(what, fmt.Sprintf("%v is not positive", lease))
	}
	if lease < minLeaseToTimeout*nodeTimeout {
		return invalid(what, fmt.Sprintf("%v is below %d × NodeTimeout (%v)", lease, minLeaseToTimeout, nodeTimeout))
	}
	return nil
}

func invalid(what, why string) error {
	return fmt.Errorf("%w: %s: %s", ErrInvalidArgument, what, why)
}

// nodeIdentity returns what New can tell about the server(s) behind n
// without contacting them, as keys that two nodes share only when they
// are the same server: the client value itself, the address of a plain
// client (whatever its database: two databases of one server fail
// together), and each seed address of a Cluster client. A Sentinel failover
// client has no address of its own ("FailoverClient"); the first-contact
// check (identity.go) covers it.
func nodeIdentity(n redis.UniversalClient) []string {
	ids := []string{fmt.Sprintf("client %p", n)}
	switch c := n.(type) {
	case *redis.Client:
		if o := c.Options(); o.Addr != failoverAddr {
			ids = append(ids, "address "+o.Network+"/"+o.Addr)
		}
	case *redis.ClusterClient:
		for _, a := range c.Options().Addrs {
			ids = append(ids, "address tcp/"+a)
		}
	}
	return ids
}

// failoverAddr is the Addr go-redis gives the *redis.Client that
// redis.NewFailoverClient returns: the real address comes from Sentinel.
const failoverAddr = "FailoverClient"

// nodeAddr is a node's address for error messages and observers.
func nodeAddr(n redis.UniversalClient) string {
	switch c := n.(type) {
	case *redis.Client:
		if a := c.Options().Addr; a != failoverAddr {
			return a
		}
		return "sentinel failover client"
	case *redis.ClusterClient:
		return fmt.Sprintf("cluster %v", c.Options().Addrs)
	}
	return fmt.Sprintf("%T", n)
}

// distinctAddrs gives each node an address of its own, for observers: nodes
// whose client shows no address (a Sentinel failover client, another kind of
// client) share a description, and get their index beside it, so that a
// metric labelled by address keeps one series a node. Messages name the
// node by its index already, beside its plain address. Real addresses do
// not repeat: two clients of one server are refused.
func distinctAddrs(addrs []string) []string {
	seen := make(map[string]int, len(addrs))
	for _, a := range addrs {
		seen[a]++
	}
	for i, a := range addrs {
		if seen[a] > 1 {
			addrs[i] = fmt.Sprintf("%s, node %d", a, i)
		}
	}
	return addrs
}
