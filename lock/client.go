package lock

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/relock-go/relock/internal/abtest"
	"github.com/relock-go/relock/internal/workers"
	"github.com/relock-go/relock/pubsub"
	"github.com/relock-go/relock/reentrant"
	"github.com/relock-go/relock/watchdog"
)

// Client takes locks on a fixed set of independent Redis masters. One Client
// per process is the norm: it owns one Pub/Sub connection per node for every
// waiter and one watchdog for every held lock. It is safe for concurrent use.
type Client struct {
	opts   Options
	id     string // CLIENTID: the first half of every owner id
	nodes  []*reentrant.Node
	addrs  []string // each node's address, or its client's description, for messages
	labels []string // the same, made one a node (see distinctAddrs), for observers
	quorum int
	waits  *nodeWaits // how long to wait for each node (adaptive or fixed)
	stats  counters
	obs    Observer // Options.Observer's hooks, each nil when unset
	dog    *watchdog.Watchdog
	broker *pubsub.Broker // one subscription per node for every waiter
	ident  *identifier    // the first-contact duplicate check
	// splitVotes turns the tie-breaker and its queue off; noQueue the
	// queue alone (A/B switches, see internal/abtest).
	splitVotes, noQueue bool
	// cleaners[i] does node i's background clean-ups: undo, release
	// retries, repairs.
	cleaners []*cleaner

	life      context.Context // ends at Close: background work stops
	stop      context.CancelFunc
	inflight  sync.WaitGroup // node calls, including those fanOut gave up on
	workers   *workers.Pool  // the goroutines node calls run on
	bg        sync.WaitGroup // the cleaners' drainers
	ops       sync.WaitGroup // callers' operations in progress (begin/end)
	closing   chan struct{}  // closed when Close begins: waiting Locks give up
	closeDone chan struct{}  // closed when Close has done its work

	mu     sync.Mutex
	closed bool
	held   map[*hold]struct{} // holds of handles, released at Close
}

// workerIdle is how long a goroutine that ran a node call stays parked for
// the next one (see internal/workers): long enough to carry a steady stream
// of operations, short enough that a burst's goroutines soon exit.
const workerIdle = 10 * time.Second

// New validates opts and returns a Client over opts.Nodes. It does not
// contact the nodes: an unreachable node shows up as a per-node error of the
// first operation, and duplicate nodes that only the servers can reveal
// (see Options.Nodes) as that operation's error.
func New(opts Options) (*Client, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	c := &Client{
		opts:       opts,
		splitVotes: splitVotesAtNew(),
		noQueue:    noQueueAtNew(),
		id:         uuid.NewString(),
		quorum:     quorum(len(opts.Nodes)),
		held:       make(map[*hold]struct{}),
		closing:    make(chan struct{}),
		closeDone:  make(chan struct{}),
		waits:      newNodeWaits(opts),
		workers:    workers.New(workerIdle),
	}
	if opts.Observer != nil {
		c.obs = *opts.Observer
	}
	for _, n := range opts.Nodes {
		node, err := reentrant.NewReplicatedNode(n, opts.NodeTimeout, opts.replication())
		if err != nil {
			return nil, err // withDefaults has checked what this checks
		}
		node.LimitPipelines(pipelinesPerNode(len(opts.Nodes)))
		c.nodes = append(c.nodes, node)
		c.addrs = append(c.addrs, nodeAddr(n))
		c.cleaners = append(c.cleaners, newCleaner(c, len(c.cleaners)))
	}
	c.labels = distinctAddrs(slices.Clone(c.addrs))
	c.ident = newIdentifier(opts.Nodes, c.addrs, c.waits.firstContact(), opts.Logger)
	c.life, c.stop = context.WithCancel(context.Background())
	c.dog = watchdog.New(c.renewBatch, watchdog.Options{Early: lossEarly, MaxBatch: renewBatchMax})
	c.broker = pubsub.NewBroker(opts.Nodes, pubsub.Options{
		SubscribeTimeout: opts.NodeTimeout,
		Quorum:           quorum(len(opts.Nodes)),
		Grace:            opts.NodeTimeout, // by then every live node has published
		HandOffWatch:     opts.RetryDelay,
		Process:          c.id,
		Logger:           opts.Logger,
		OnConnection:     c.pubsubHook(),
	})
	return c, nil
}

// clientPipelines is how many pipelined round trips a Client keeps on the
// wire at once, shared among its nodes, at least one each: 4 on 1 master,
// 2 on 2, 1 on 3 or more (a node whose trips are stuck lets more leave;
// see reentrant.Node.LimitPipelines). Calls made while a node's are out
// leave together in its next one. More trips, each carrying fewer of the
// calls that many goroutines make at once, cost the client more system
// calls and CPU per call: with 64 goroutines locking names of their own
// through one Client, this ran 1.14 times the cycles a second of four per
// node on 3 masters and 1.21 times on 5, at 0.82 and 0.78 times the
// client's CPU (make bench's uncontended A/B, README "Performance"); on 1
// master, by hand, four and three ran 4 to 6% more than one or two, and
// eight and sixteen did not pay either: 0.97 and 0.88 times the cycles a
// second of four, at more CPU per cycle (2026-12-02, same run; two, 0.94).
const clientPipelines = 4

// pipelinesPerNode is each node's share of clientPipelines on a Client of
// nodes nodes (or the benchmark's A/B setting).
func pipelinesPerNode(nodes int) int {
	if n := abtest.PipelinesPerNode.Load(); n > 0 {
		return int(n)
	}
	return max(1, clientPipelines/nodes)
}

// ID returns the Client's id, the CLIENTID part of its owners' ids.
func (c *Client) ID() string { return c.id }

// Nodes returns how many nodes the Client uses and the quorum among them.
func (c *Client) Nodes() (n, quorum int) { return len(c.nodes), c.quorum }

// Close releases every lock still held through this Client, stops renewing,
// sends every queued clean-up once more (an undo still waiting for its
// backoff goes out now), waits for in-flight node calls, and makes every
// later operation return ErrClosed. Once Close has begun no operation
// starts: a Lock waiting for the lock returns ErrClosed at once, and one
// whose attempt wins while Close runs gives the hold back and returns
// ErrClosed. It does not close the go-redis clients. It returns the errors
// of the releases, if any. A Close while another runs waits for that one to
// finish, and returns nil, as every Close after it does.
//
// Unlike the operations, Close is not bounded by NodeTimeout: it waits for
// the node calls still in flight, and a go-redis client without
// ContextTimeoutEnabled ends a call to a node that does not answer only
// after its ReadTimeout (3 s by default), or its DialTimeout (5 s) when the
// call opened a new connection. Close waits for them all at once, so a
// stalled node costs it about one of those timeouts, not their sum.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		<-c.closeDone
		return nil
	}
	c.closed = true
	close(c.closing)
	c.mu.Unlock()
	defer close(c.closeDone)

	// Operations that began before Close end soon: waiting Locks see
	// closing, and every node call is bounded.
	c.ops.Wait()
	c.mu.Lock()
	held := make([]*hold, 0, len(c.held))
	for h := range c.held {
		held = append(held, h)
	}
	c.mu.Unlock()

	var errs []error
	for _, h := range held {
		if err := h.releaseAll(); err != nil {
			errs = append(errs, err)
		}
	}
	c.dog.Close()
	var flushes []func()
	for _, w := range c.cleaners {
		if f := w.flush(); f != nil {
			flushes = append(flushes, f)
		}
	}
	// The drainers start no round from now on: the flushes carry what they
	// had left.
	c.mu.Lock()
	c.stop() // under mu: inBackground never adds to bg once this ran
	c.mu.Unlock()
	// Side by side: each stage may wait out a call to a stalled node, which
	// a go-redis client without ContextTimeoutEnabled ends only after its
	// ReadTimeout, whatever the ctx says; one after the other they would
	// add up.
	var stages sync.WaitGroup
	stages.Go(c.broker.Close)
	stages.Go(c.ident.close)
	for _, f := range flushes {
		stages.Go(f)
	}
	stages.Go(c.bg.Wait)
	stages.Go(c.inflight.Wait)
	stages.Wait()
	for _, n := range c.nodes {
		n.Close() // its kept connections go back to the user's pool
	}
	c.workers.Close()
	return errors.Join(errs...)
}

// begin registers an operation of a caller, so that Close waits for it, or
// returns ErrClosed once Close has begun. Every begin that succeeds must be
// followed by one end.
func (c *Client) begin() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	// Under mu, and only while not closed: Close's ops.Wait, which runs
	// after closed is set under mu, never races an Add.
	c.ops.Add(1)
	return nil
}

// end marks the end of an operation that begin registered.
func (c *Client) end() { c.ops.Done() }

// isClosing reports whether Close has begun.
func (c *Client) isClosing() bool {
	select {
	case <-c.closing:
		return true
	default:
		return false
	}
}

// track records that h holds a lock (or no longer does), so Close can
// release it.
func (c *Client) track(h *hold, holding bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, had := c.held[h]; had != holding {
		c.holdChanged(h, holding)
	}
	if holding {
		c.held[h] = struct{}{}
	} else {
		delete(c.held, h)
	}
}

// inBackground runs f on the Client's lifetime context, tracked so Close
// waits for it. It reports false when the Client is closed.
func (c *Client) inBackground(f func(ctx context.Context)) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.life.Err() != nil {
		return false
	}
	c.bg.Add(1)
	go func() {
		defer c.bg.Done()
		f(c.life)
	}()
	return true
}
