package pubsub

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrClosed is returned by Subscribe once the Broker is closed.
var ErrClosed = errors.New("relock/pubsub: broker closed")

// Broker multiplexes the release channels of many local waiters over one
// Pub/Sub connection per Redis node. It is safe for concurrent use.
type Broker struct {
	opts  Options
	nodes []*node
	done  chan struct{} // closed by Close

	mu         sync.Mutex
	started    bool
	closed     bool
	reg        *registry
	dedup      *dedup
	lingering  map[string]*lingering // channels without waiters, still subscribed
	duplicates uint64
	unclaimed  uint64
	standIns   uint64
	late       uint64
	lost       uint64
	restored   uint64
}

// Stats is a snapshot of a Broker's activity.
type Stats struct {
	Channels   int    // channels with at least one waiter
	Waiters    int    // open waiters
	Wakes      uint64 // wakes handed to waiters; one passed on by a closing waiter counts once
	Duplicates uint64 // copies of a release dropped because another node's copy came first
	Unclaimed  uint64 // releases that found no waiter without a pending wake
	// StandIns counts releases given to a waiter here because their
	// hand-off had not come Options.Grace after a copy for keepers on the
	// lock's channel: the node that hands the lock off failed to, or its
	// message was late (a loaded machine).
	StandIns uint64
	// LateConfirms counts subscriptions a node confirmed after Subscribe
	// had stopped waiting for it (Options.SubscribeTimeout): each woke one
	// waiter of the channel, in case a release came in between.
	LateConfirms uint64
	Disconnects  uint64 // times a node's working connection broke
	Reconnects   uint64 // times a node's connection worked again after failing
}

// NewBroker returns a Broker for the given independent Redis nodes. No
// connection is opened until the first Subscribe. Each client may be a
// *redis.Client or a *redis.ClusterClient (one Pub/Sub connection to the
// cluster, whose nodes forward published messages to each other); a
// *redis.Ring is not supported. NewBroker panics if a client is nil.
func NewBroker(nodes []redis.UniversalClient, opts Options) *Broker {
	opts = opts.withDefaults()
	b := &Broker{
		opts:      opts,
		done:      make(chan struct{}),
		reg:       newRegistry(),
		lingering: make(map[string]*lingering),
		dedup:     newDedup(opts.DedupWindow, len(nodes), opts.Quorum),
	}
	for i, c := range nodes {
		if c == nil {
			panic("relock/pubsub: nil client for node " + strconv.Itoa(i))
		}
		b.nodes = append(b.nodes, newNode(i, c, opts, b))
	}
	return b
}

// Subscribe registers a waiter on channel and returns once every node has
// confirmed the channel's subscription, so that a message published after
// Subscribe returns reaches the waiter. Nodes are waited for in parallel, at
// most Options.SubscribeTimeout in all; a node that is down or slow is not
// waited for beyond that and its messages are missed until it answers again.
// Even if no node confirmed, the Waiter is usable: it is woken when a node's
// confirmation comes after all (a release published before it was missed)
// and when a node's connection comes back, and callers bound their wait
// anyway.
//
// If ctx ends first, Subscribe returns ctx's error; if the Broker is closed,
// ErrClosed. In both cases no share of the channel is left behind. The caller
// must Close the returned Waiter.
func (b *Broker) Subscribe(ctx context.Context, channel string) (*Waiter, error) {
	return b.SubscribeOwner(ctx, channel, "", "")
}

// SubscribeOwner is Subscribe for a waiter that waits as the lock owner
// owner and is not woken by messages whose payload starts with ignore (when
// ignore is not empty): a lock owner waiting for a release ignores its own,
// such as the undo of its own failed attempt, which frees nothing it is
// waiting for; a message it ignores goes to the next waiter of the channel.
// A hand-off that names owner wakes it (see message.go), and one that names
// it as the next in line wakes it Options.HandOffWatch later unless another
// wake came in between.
func (b *Broker) SubscribeOwner(ctx context.Context, channel, owner, ignore string) (*Waiter, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	w, ready, err := b.join(channel, owner, ignore)
	if err != nil {
		return nil, err
	}
	if err := b.awaitConfirmed(ctx, ready); err != nil {
		w.Close()
		return nil, err
	}
	b.noteLate(w, ready)
	return w, nil
}

// noteLate records the nodes whose confirmation w's Subscribe did not wait
// for, so that it arriving later wakes w (see confirmed).
func (b *Broker) noteLate(w *Waiter, ready []<-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, r := range ready {
		select {
		case <-r:
			continue // confirmed: closed before confirmed runs, so never missed
		default:
		}
		if w.late == nil {
			w.late = make([]<-chan struct{}, len(ready))
		}
		w.late[i] = r
	}
}

// confirmed handles node's confirmation of channels. Where a waiter's
// Subscribe had stopped waiting for it, a release published in between
// reached no one: one waiter of the channel is woken to retry, as a release
// would have woken one, rather than everyone sleeping out the holder's
// lease.
func (b *Broker) confirmed(node int, channels []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	for _, ch := range channels {
		missed := false
		for _, w := range b.reg.chans[ch] {
			if w.late != nil && w.late[node] != nil {
				w.late[node] = nil
				missed = true
			}
		}
		if missed {
			b.late++
			b.dispatch(ch, "")
		}
	}
}

// join adds a waiter of channel and returns it with, per node, the channel
// closed when that node confirms the subscription.
func (b *Broker) join(channel, owner, ignore string) (*Waiter, []<-chan struct{}, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, nil, ErrClosed
	}
	if !b.started {
		b.started = true
		for _, n := range b.nodes {
			n.start()
		}
	}
	w := newWaiter(b, channel)
	w.ignore, w.owner = ignore, owner
	b.reg.add(w)
	// The node ignores channels it already wants, so asking for every
	// waiter is harmless and hands each waiter the confirmation to wait on.
	ready := make([]<-chan struct{}, len(b.nodes))
	for i, n := range b.nodes {
		ready[i] = n.want(channel)
	}
	return w, ready, nil
}

// awaitConfirmed waits until every ready channel is closed or the subscribe
// timeout passes (nil either way), ctx ends (its error), or the Broker closes.
func (b *Broker) awaitConfirmed(ctx context.Context, ready []<-chan struct{}) error {
	timer := time.NewTimer(b.opts.SubscribeTimeout)
	defer timer.Stop()
	for _, r := range ready {
		select {
		case <-r:
		case <-timer.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-b.done:
			return ErrClosed
		}
	}
	return nil
}

// Close stops every goroutine of the Broker and closes its connections.
// Waiters still open are woken; later Subscribe calls fail with ErrClosed.
// Close is idempotent.
//
// Close returns at once unless a connection attempt to an unresponsive node
// is in flight; it then waits for go-redis to give up, which takes at most a
// second when the client has ContextTimeoutEnabled, and up to the client's
// DialTimeout and ReadTimeout otherwise (go-redis ignores ctx deadlines in
// the handshake then).
func (b *Broker) Close() {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return
	}
	b.closed = true
	close(b.done)
	b.reg.wakeAll()
	for _, l := range b.lingering {
		l.timer.Stop()
	}
	clear(b.lingering)
	started := b.started
	b.mu.Unlock()

	if !started {
		return
	}
	var wg sync.WaitGroup
	for _, n := range b.nodes {
		wg.Go(n.stop)
	}
	wg.Wait()
}

// Stats returns a snapshot of the Broker's counters.
func (b *Broker) Stats() Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return Stats{
		Channels:     len(b.reg.chans),
		Waiters:      b.reg.waiters,
		Wakes:        b.reg.wakes,
		Duplicates:   b.duplicates,
		Unclaimed:    b.unclaimed,
		StandIns:     b.standIns,
		LateConfirms: b.late,
		Disconnects:  b.lost,
		Reconnects:   b.restored,
	}
}

// message dispatches a published message: a release wakes one waiter once
// Options.Quorum nodes' copies are in, or Options.Grace after its first copy;
// the other copies are dropped. A hand-off is due at once: it is the only
// copy its target gets (see message.go). A copy for keepers that came on
// this process's personal channel was meant for a keeper here, and the
// hand-off of the same release went to another process: it never makes a
// waiter here stand in for a missing hand-off.
func (b *Broker) message(_ int, channel, payload string, personal bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	m := parseMessage(payload)
	now := time.Now()
	if m.kind == handOff {
		if b.dedup.sawHandOff(channel, m.id) {
			b.duplicates++
			return
		}
		b.dedup.noteHandOff(channel, m.id, now)
		b.dispatch(channel, payload)
		return
	}
	wake, pending := b.dedup.observe(channel, payload, m.copiesNeeded(b.opts.Quorum), now)
	switch {
	case wake:
		b.dispatch(channel, payload)
		if m.handOffFollows() && !personal {
			b.unlessHandedOff(channel, m.id)
		}
	case pending != nil:
		b.afterGrace(func() {
			if b.dedup.graceUp(pending) {
				b.dispatch(channel, payload)
			}
		})
	default:
		b.duplicates++
	}
}

// afterGrace runs f, holding b.mu, Options.Grace from now, unless the
// Broker has closed by then.
func (b *Broker) afterGrace(f func()) {
	time.AfterFunc(b.opts.Grace, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if !b.closed {
			f()
		}
	})
}

// dispatch hands a due release, or another reason to retry (payload ""),
// to one waiter of channel. The caller holds b.mu.
func (b *Broker) dispatch(channel, payload string) {
	claimed, watch := b.reg.dispatch(channel, payload)
	if !claimed {
		b.unclaimed++
	}
	if watch != nil {
		b.watchHandOff(watch)
	}
}

// unlessHandedOff gives release id of channel to one waiter here, as a
// copy for any waiter would, if no hand-off of it has arrived by
// Options.Grace after its first copy for keepers: the node that hands the
// lock off failed to, or this process does not hear it (see message.go).
// The caller holds b.mu.
func (b *Broker) unlessHandedOff(channel, id string) {
	b.afterGrace(func() {
		if !b.dedup.sawHandOff(channel, id) {
			b.standIns++
			b.dispatch(channel, id)
		}
	})
}

// unwantLater unsubscribes channel on every node once it has had no waiter
// for Options.Linger: a lock contended in a loop gets a waiter again within
// milliseconds, and would otherwise pay a SUBSCRIBE, a confirmation round
// trip and an UNSUBSCRIBE per node for each Lock that waits. A waiter that
// joins a lingering channel finds it confirmed already. The linger counts
// from the last waiter's leave: a channel whose one waiter comes and goes,
// as a process's lone contender does, stays subscribed between its waits.
// The caller holds b.mu.
func (b *Broker) unwantLater(channel string) {
	if b.opts.Linger <= 0 {
		b.unwant(channel)
		return
	}
	now := time.Now()
	if l := b.lingering[channel]; l != nil {
		l.since = now // its timer, already out, counts from here
		return
	}
	l := &lingering{since: now}
	l.timer = time.AfterFunc(b.opts.Linger, func() { b.endLinger(channel, l) })
	b.lingering[channel] = l
}

// lingering is a channel whose waiters all left, still subscribed.
type lingering struct {
	since time.Time   // when its last waiter left
	timer *time.Timer // runs endLinger
}

// endLinger runs when l's timer fires. A channel that has a waiter again
// stops lingering (its next last leave starts anew); one whose last waiter
// left less than Options.Linger ago lingers for the rest; any other is
// unsubscribed.
func (b *Broker) endLinger(channel string, l *lingering) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed || b.lingering[channel] != l {
		return
	}
	if len(b.reg.chans[channel]) > 0 {
		delete(b.lingering, channel)
		return
	}
	if rest := b.opts.Linger - time.Since(l.since); rest > 0 {
		l.timer.Reset(rest)
		return
	}
	delete(b.lingering, channel)
	b.unwant(channel)
}

// unwant unsubscribes channel on every node. The caller holds b.mu.
func (b *Broker) unwant(channel string) {
	for _, n := range b.nodes {
		n.unwant(channel)
	}
}

// watchHandOff wakes w, the waiter queued after a hand-off's target,
// Options.HandOffWatch from now unless it was woken in between (by the
// target's own release, usually): a target that died or gave up takes its
// wake with it, and w's retry is what moves the queue on. Should w have
// left meanwhile, unwoken, another waiter of the channel retries in its
// place: nobody else would (w's leaving publishes nothing). The caller
// holds b.mu.
func (b *Broker) watchHandOff(w *Waiter) {
	seen := w.wakes
	time.AfterFunc(b.opts.HandOffWatch, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.closed || w.wakes != seen {
			return
		}
		if w.closed {
			b.reg.dispatch(w.channel, "") // a wake passed on: any waiter's
			return
		}
		w.noteReason(WokenWatch)
		if w.wakeUp() {
			b.reg.wakes++
		}
	})
}

// connectionChanged wakes every waiter: while the connection was down a
// release may have been published that this node never delivered, and no
// waiter can tell whether it was theirs.
func (b *Broker) connectionChanged(node int, lost bool) {
	if f := b.opts.OnConnection; f != nil {
		f(node, !lost)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if lost {
		b.lost++
	} else {
		b.restored++
	}
	if !b.closed {
		b.reg.wakeAll()
	}
}
