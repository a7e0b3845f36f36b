package pubsub

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// commandTimeout bounds, through its ctx, every call a node makes into
// go-redis, including a redial hidden inside it. go-redis applies ctx
// deadlines to the handshake only with ContextTimeoutEnabled; without it the
// client's DialTimeout and ReadTimeout bound the handshake instead.
const commandTimeout = time.Second

// nodeEvents receives what a node's connection hears.
type nodeEvents interface {
	// message is called for every published message, from the node's
	// receive goroutine; personal says it came on the channel's personal
	// channel (see PersonalChannel), channel being the channel itself.
	message(node int, channel, payload string, personal bool)
	// connectionChanged is called when the node's connection broke (lost)
	// or came back after failing (!lost).
	connectionChanged(node int, lost bool)
	// confirmed is called when the node confirmed the subscription of
	// channels, from the node's receive goroutine.
	confirmed(node int, channels []string)
}

// node is one Redis node's shared Pub/Sub connection. Two goroutines own it:
// the writer sends SUBSCRIBE, UNSUBSCRIBE and PING, so callers never block on
// the network, and the receive loop reads replies and messages. go-redis
// allows one reader and concurrent writers on a PubSub; it redials and
// resubscribes every channel on its own after a connection error.
type node struct {
	index  int
	client redis.UniversalClient
	health time.Duration // silence before a health PING; <= 0: none
	tick   time.Duration // longest single read: min(health, commandTimeout)
	log    *slog.Logger
	events nodeEvents
	// personal is the suffix of this process's personal channels (see
	// PersonalChannel), "" for none: each wanted channel is subscribed
	// with its personal channel, in lockstep.
	personal string

	ctx    context.Context // ends when the node stops
	cancel context.CancelFunc
	ps     *redis.PubSub // nil until start; nil for good if unsupported
	wg     sync.WaitGroup

	kick chan struct{} // the writer has work (buffer 1)
	work chan struct{} // a channel was added, for a parked receive loop (buffer 1)

	mu   sync.Mutex
	subs *subTable
}

func newNode(index int, client redis.UniversalClient, opts Options, events nodeEvents) *node {
	ctx, cancel := context.WithCancel(context.Background())
	n := &node{
		index:  index,
		client: client,
		health: opts.HealthCheckInterval,
		tick:   commandTimeout,
		log:    opts.Logger.With(slog.Int("node", index)),
		events: events,
		ctx:    ctx,
		cancel: cancel,
		kick:   make(chan struct{}, 1),
		work:   make(chan struct{}, 1),
		subs:   newSubTable(),
	}
	if n.health > 0 {
		n.tick = min(n.health, commandTimeout)
	}
	if opts.Process != "" {
		n.personal = PersonalChannel("", opts.Process)
	}
	return n
}

// start creates the node's PubSub and its goroutines. The connection itself
// is dialled by the first command or read.
func (n *node) start() {
	if _, ok := n.client.(*redis.Ring); ok {
		// A Ring pins a PubSub to the shard of its first channel and panics
		// without one: it cannot carry every channel of a node.
		n.log.Error("relock/pubsub: *redis.Ring is not supported as a node; waiters fall back to lease expiry")
		return
	}
	n.ps = n.client.Subscribe(n.ctx) // no channels: no I/O yet
	n.wg.Go(n.writeLoop)
	n.wg.Go(n.receiveLoop)
}

// stop ends both goroutines and closes the connection. It waits for a call
// into go-redis in progress, which commandTimeout bounds (see there).
func (n *node) stop() {
	n.cancel()
	if n.ps != nil {
		_ = n.ps.Close() // unblocks a read in progress
	}
	n.wg.Wait()
}

// want asks for channel to be subscribed and returns a channel closed once
// the node confirms it. Wanting a channel already wanted is a no-op. The
// channel's personal channel is wanted and unwanted with it, so both are
// subscribed by one SUBSCRIBE and confirmed by the same barrier: channel's
// confirmation stands for both.
func (n *node) want(channel string) <-chan struct{} {
	n.mu.Lock()
	ready, added := n.subs.add(channel)
	if n.personal != "" {
		n.subs.add(channel + n.personal)
	}
	n.mu.Unlock()
	if added {
		signal(n.kick)
		signal(n.work)
	}
	return ready
}

// unwant asks for channel to be unsubscribed.
func (n *node) unwant(channel string) {
	n.mu.Lock()
	n.subs.remove(channel)
	if n.personal != "" {
		n.subs.remove(channel + n.personal)
	}
	n.mu.Unlock()
	signal(n.kick)
}

// writeLoop brings the connection's subscriptions in line with what is
// wanted, then sends a barrier PING for what is still unconfirmed. Changes
// that pile up while a command is out go in one command.
func (n *node) writeLoop() {
	// The channels go-redis has been told to subscribe; it resubscribes them
	// on every new connection, so they stay valid across redials.
	active := make(map[string]bool)
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-n.kick:
		}
		n.syncChannels(active)
		n.sendBarrier(active)
	}
}

func (n *node) syncChannels(active map[string]bool) {
	n.mu.Lock()
	add, drop := n.subs.diff(active)
	n.mu.Unlock()

	// go-redis updates its channel set even when the command fails: a failed
	// UNSUBSCRIBE is not resubscribed by a redial, a failed SUBSCRIBE is.
	// But a failed command redials inside the call, and a SUBSCRIBE adds its
	// channels to the set only after that: the connection it leaves behind
	// may lack them. A second SUBSCRIBE puts them there, on that connection
	// or, failing too, on the one its own redial makes with them in the set.
	// Either way the connection may be another one, where nothing confirmed
	// on the old one holds: every channel is confirmed again (sendBarrier,
	// next).
	failed := false
	if len(drop) > 0 {
		err := n.command(func(ctx context.Context) error { return n.ps.Unsubscribe(ctx, drop...) })
		for _, ch := range drop {
			delete(active, ch)
		}
		failed = err != nil
		n.logFailure("unsubscribe", err, len(drop))
	}
	if len(add) > 0 {
		subscribe := func(ctx context.Context) error { return n.ps.Subscribe(ctx, add...) }
		err := n.command(subscribe)
		if err != nil && n.ctx.Err() == nil {
			failed = true
			n.logFailure("subscribe", err, len(add))
			err = n.command(subscribe)
		}
		for _, ch := range add {
			active[ch] = true
		}
		n.logFailure("subscribe", err, len(add))
	}
	if failed {
		n.mu.Lock()
		n.subs.invalidate()
		n.mu.Unlock()
	}
}

// command runs one call into go-redis, bounded by commandTimeout.
func (n *node) command(call func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(n.ctx, commandTimeout)
	defer cancel()
	return call(ctx)
}

func (n *node) sendBarrier(active map[string]bool) {
	n.mu.Lock()
	seq, ok := n.subs.nextBarrier(active)
	n.mu.Unlock()
	if !ok {
		return
	}
	err := n.command(func(ctx context.Context) error { return n.ps.Ping(ctx, barrierPayload(seq)) })
	if err != nil {
		n.mu.Lock()
		n.subs.barrierFailed(seq)
		n.mu.Unlock()
		n.logFailure("ping", err, 0)
	}
}

func (n *node) logFailure(command string, err error, channels int) {
	if err == nil || n.ctx.Err() != nil {
		return
	}
	n.log.Debug("relock/pubsub: command failed",
		slog.String("command", command), slog.Int("channels", channels), slog.Any("err", err))
}

// signal wakes whoever waits on ch, unless a wake is already pending.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
