package lock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/reentrant"
)

// A quorum is only as good as the independence of its nodes: the same
// server given twice counts one vote twice, and two owners could then both
// reach a "majority". Duplicates are caught in two steps.
//
//   - New checks what it can know without contacting anyone (checkNodes):
//     the same client value twice, two plain clients of one address, two
//     Cluster clients (or a Cluster client and a plain client) sharing a
//     seed address. Addresses are compared as written: "localhost:6379" and
//     "127.0.0.1:6379" pass this step.
//   - The first operation that contacts the nodes (Lock, TryLock, LockFor,
//     Inspect, IsLocked, TTL, ForceUnlock) first asks every node which
//     server it is (identifier): the run_id of INFO server; for a
//     *redis.ClusterClient, the run_ids of all its masters; for a Sentinel
//     failover client, the run_id of the master it resolves to. Two nodes
//     sharing a run_id make that operation, and every later one, fail with
//     an error naming both nodes and wrapping ErrInvalidArgument, before it
//     writes anything.
//
// The first operation waits for the answers at most as long as a first
// call to a node is waited for (a fixed NodeTimeout, or the adaptive
// NodeTimeoutInitial: not the adaptive floor, which a first contact that
// dials, and for a failover client asks a Sentinel first, can exceed on a
// loaded machine), so that a dead node costs it no more than it costs any
// operation; a slower answer is still recorded, and a duplicate it reveals
// fails the operations from then on. A node
// that does not answer the first check (it is down) does not block the
// Client: the quorum tolerates it, and it is asked again, in the
// background, by a later operation (at most once per identifyRetry) until
// it answers. A server is identified once: a node that restarts later (a
// new run_id) or a failover client whose group fails over is not checked
// again. A node that answers INFO with an error (an ACL without INFO,
// a renamed command) cannot be identified and is logged and left to the
// static check.
const (
	identifyRetry = time.Second
	// identifyFloor is the least time a check round gives a node: the first
	// contact dials and, for a Cluster, loads the slot map before INFO.
	identifyFloor = 100 * time.Millisecond
)

// checkNodes is New's static check of Options.Nodes: none nil, no Ring,
// and no server given twice as far as can be told without contacting it.
func checkNodes(nodes []redis.UniversalClient) error {
	if len(nodes) == 0 {
		return invalid("Nodes", "no Redis node given")
	}
	seen := make(map[string]int)
	for i, n := range nodes {
		if n == nil {
			return invalid("Nodes", fmt.Sprintf("node %d is a nil client", i))
		}
		if _, ring := n.(*redis.Ring); ring {
			// A Ring shards keys over several servers by hashing on the
			// client side: it is not one node, and its Pub/Sub is pinned
			// to a single shard.
			return invalid("Nodes", fmt.Sprintf("node %d is a *redis.Ring; give each master as its own client", i))
		}
		for _, id := range nodeIdentity(n) {
			if j, dup := seen[id]; dup && j != i {
				return invalid("Nodes", fmt.Sprintf("nodes %d (%s) and %d (%s) are the same server (%s): a quorum needs independent nodes",
					j, nodeAddr(nodes[j]), i, nodeAddr(n), id))
			}
			seen[id] = i
		}
	}
	return nil
}

// serverIDs asks n which server(s) it is: the run_id of each master it
// writes to. ok is false when n could not be asked (down, slow: try again
// later); ids is empty with ok true when n answered but cannot be
// identified (INFO refused), which is logged by the caller.
func serverIDs(ctx context.Context, n redis.UniversalClient) (ids []string, ok bool, err error) {
	cc, isCluster := n.(*redis.ClusterClient)
	if !isCluster {
		id, err := runID(ctx, n)
		switch {
		case err == nil:
			return []string{id}, true, nil
		case isServerError(err):
			return nil, true, err
		}
		return nil, false, err
	}
	var (
		mu      sync.Mutex
		refused error
	)
	err = cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		id, err := runID(ctx, m)
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err == nil:
			ids = append(ids, id)
		case isServerError(err):
			refused = err
		default:
			return err
		}
		return nil
	})
	switch {
	case err != nil:
		return nil, false, err
	case refused != nil && len(ids) == 0:
		return nil, true, refused
	}
	sort.Strings(ids)
	return ids, true, nil
}

// runID returns the run_id line of INFO server: a random id each server
// process draws at start, so two clients that see the same one talk to the
// same process, whatever addresses they were given.
func runID(ctx context.Context, n redis.Cmdable) (string, error) {
	info, err := n.Info(ctx, "server").Result()
	if err != nil {
		return "", err
	}
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(line, "run_id:"); ok {
			if v = strings.TrimSpace(v); v != "" {
				return v, nil
			}
		}
	}
	return "", errNoRunID
}

// errNoRunID is a reply to INFO server without a run_id: treated like a
// refused INFO (the node cannot be identified), not like a network error.
var errNoRunID = errors.New("INFO server has no run_id")

// isServerError reports whether err is an answer from Redis (an error reply,
// foreign data under a key, an INFO without run_id) rather than a failure to
// get one: the node is there, however it answered.
func isServerError(err error) bool {
	var re redis.Error
	return errors.Is(err, errNoRunID) || errors.Is(err, reentrant.ErrWrongType) ||
		(errors.As(err, &re) && !errors.Is(err, redis.ErrClosed))
}

// identifier runs the first-contact duplicate check (see the comment at the
// top of this file). It is safe for concurrent use.
type identifier struct {
	nodes   []redis.UniversalClient
	addrs   []string
	wait    time.Duration // how long an operation waits for the first round
	timeout time.Duration // how long a round waits for the nodes
	log     *slog.Logger

	ctx    context.Context // ends at close: rounds in flight give up
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	ids     [][]string // per node once known; an empty slice: answered, unidentifiable
	known   []bool
	missing int           // nodes not known yet
	err     error         // the duplicate found, returned by every check
	first   chan struct{} // closed when the first round ends
	started bool
	running bool
	closed  bool
	last    time.Time // when the last round ended
}

func newIdentifier(nodes []redis.UniversalClient, addrs []string, nodeTimeout time.Duration, log *slog.Logger) *identifier {
	ctx, cancel := context.WithCancel(context.Background())
	return &identifier{
		nodes:   nodes,
		addrs:   addrs,
		wait:    nodeTimeout,
		timeout: max(2*nodeTimeout, identifyFloor),
		log:     log,
		ctx:     ctx,
		cancel:  cancel,
		ids:     make([][]string, len(nodes)),
		known:   make([]bool, len(nodes)),
		missing: len(nodes),
		first:   make(chan struct{}),
	}
}

// check returns the duplicate error once one is found, and nil otherwise.
// The first call starts the first round, and calls wait for that round to
// end, at most d.wait (or until ctx ends); later calls start a round for
// nodes still unknown, at most one at a time and one per identifyRetry,
// without waiting for it.
func (d *identifier) check(ctx context.Context) error {
	d.mu.Lock()
	switch {
	case d.err != nil || d.missing == 0:
		err := d.err
		d.mu.Unlock()
		return err
	case d.closed:
		d.mu.Unlock()
		return ErrClosed
	case !d.started:
		d.started = true
		d.startRound()
	case !d.running && time.Since(d.last) >= identifyRetry:
		d.startRound()
	}
	first := d.first
	d.mu.Unlock()

	select {
	case <-first:
	default:
		t := time.NewTimer(d.wait)
		defer t.Stop()
		select {
		case <-first:
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.err
}

// startRound asks every unknown node, in parallel. The caller holds d.mu.
func (d *identifier) startRound() {
	d.running = true
	var todo []int
	for i, k := range d.known {
		if !k {
			todo = append(todo, i)
		}
	}
	d.wg.Go(func() {
		ctx, cancel := context.WithTimeout(d.ctx, d.timeout)
		defer cancel()
		var wg sync.WaitGroup
		for _, i := range todo {
			wg.Go(func() {
				ids, ok, err := serverIDs(ctx, d.nodes[i])
				d.record(i, ids, ok, err)
			})
		}
		wg.Wait()
		d.mu.Lock()
		defer d.mu.Unlock()
		d.running = false
		d.last = time.Now()
		select {
		case <-d.first:
		default:
			close(d.first)
		}
	})
}

// record stores node i's answer and looks for a server it shares with a
// node known before.
func (d *identifier) record(i int, ids []string, ok bool, err error) {
	switch {
	case !ok:
		d.log.Debug("relock: could not identify a node yet; asking again later", "node", i, "addr", d.addrs[i], "err", err)
		return
	case err != nil:
		d.log.Warn("relock: a node refused INFO server: it cannot be checked for duplicates", "node", i, "addr", d.addrs[i], "err", err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.known[i] {
		return
	}
	d.known[i], d.ids[i] = true, ids
	d.missing--
	for j, other := range d.ids {
		if j == i || !d.known[j] {
			continue
		}
		for _, id := range ids {
			if slices.Contains(other, id) && d.err == nil {
				a, b := min(i, j), max(i, j)
				d.err = invalid("Nodes", fmt.Sprintf("nodes %d (%s) and %d (%s) are the same server (run_id %s): a quorum needs independent nodes",
					a, d.addrs[a], b, d.addrs[b], id))
				d.log.Error("relock: duplicate nodes; every operation fails", "err", d.err)
			}
		}
	}
}

// close stops a round in flight and waits for it; later checks return
// ErrClosed (unless a duplicate was found before).
func (d *identifier) close() {
	d.mu.Lock()
	d.closed = true
	d.cancel()
	d.mu.Unlock()
	d.wg.Wait()
}
