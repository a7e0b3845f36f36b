package integration_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/relock-go/relock/pubsub"
)

// pubsubChannel returns a release channel name of the test's own.
func pubsubChannel(t *testing.T, i int) string {
	return fmt.Sprintf("relock:{pubsub-%s-%d}:released", t.Name(), i)
}

// newPubSubBroker returns a Broker over the cluster's proxied clients, logging
// to the test's output and closed when the test ends.
func newPubSubBroker(t *testing.T, opts pubsub.Options) *pubsub.Broker {
	t.Helper()
	opts.Logger = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
	if opts.SubscribeTimeout == 0 {
		// These tests count wakes, which needs every subscription
		// confirmed before Subscribe returns, also on a loaded machine.
		opts.SubscribeTimeout = 5 * time.Second
	}
	b := pubsub.NewBroker(cluster.Clients(), opts)
	t.Cleanup(b.Close)
	return b
}

// subscribeAll subscribes n waiters to each channel concurrently.
func subscribeAll(t *testing.T, b *pubsub.Broker, channels []string, n int) []*pubsub.Waiter {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var (
		mu   sync.Mutex
		ws   []*pubsub.Waiter
		errs []error
		wg   sync.WaitGroup
	)
	for _, ch := range channels {
		for range n {
			wg.Go(func() {
				w, err := b.Subscribe(ctx, ch)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, err)
					return
				}
				ws = append(ws, w)
			})
		}
	}
	wg.Wait()
	for _, w := range ws {
		t.Cleanup(w.Close)
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	return ws
}

// takeWakes waits d, then consumes every pending wake and returns how many
// waiters had one.
func takeWakes(ws []*pubsub.Waiter, d time.Duration) int {
	time.Sleep(d)
	n := 0
	for _, w := range ws {
		select {
		case <-w.Wake():
			n++
		default:
		}
	}
	return n
}

// publish publishes payload on channel on the given nodes, directly.
func publish(t *testing.T, channel, payload string, nodes ...int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	direct := cluster.Direct()
	for _, i := range nodes {
		if err := direct[i].Publish(ctx, channel, payload).Err(); err != nil {
			t.Fatalf("publish on node %d: %v", i, err)
		}
	}
}

// eventually polls cond every 10ms until it holds or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v: %v", what, timeout, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// numSubs returns, per node, the subscriber counts of the channels.
func numSubs(channels []string) ([]map[string]int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var out []map[string]int64
	for _, c := range cluster.Direct() {
		m, err := c.PubSubNumSub(ctx, channels...).Result()
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// expectNumSub checks that every channel has want subscribers on each node.
func expectNumSub(channels []string, want int64) func() error {
	return func() error {
		counts, err := numSubs(channels)
		if err != nil {
			return err
		}
		for i, m := range counts {
			for _, ch := range channels {
				if m[ch] != want {
					return fmt.Errorf("node %d: NUMSUB %s = %d, want %d", i, ch, m[ch], want)
				}
			}
		}
		return nil
	}
}

// expectNumSubOn checks one node's subscriber count of channel.
func expectNumSubOn(node int, channel string, want int64) func() error {
	return func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		m, err := cluster.Direct()[node].PubSubNumSub(ctx, channel).Result()
		if err != nil {
			return err
		}
		if m[channel] != want {
			return fmt.Errorf("node %d: NUMSUB %s = %d, want %d", node, channel, m[channel], want)
		}
		return nil
	}
}

// pubsubClients returns the number of Pub/Sub connections on a node.
func pubsubClients(c *redis.Client) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	list, err := c.Do(ctx, "CLIENT", "LIST", "TYPE", "pubsub").Text()
	if err != nil {
		return 0, err
	}
	n := 0
	for line := range strings.Lines(list) {
		if strings.TrimSpace(line) != "" {
			n++
		}
	}
	return n, nil
}

func TestPubSubOneReleaseWakesOneWaiter(t *testing.T) {
	reset(t)
	b := newPubSubBroker(t, pubsub.Options{})
	ch := pubsubChannel(t, 0)
	ws := subscribeAll(t, b, []string{ch}, 50)

	publish(t, ch, "release-1", 0, 1, 2)
	if n := takeWakes(ws, 200*time.Millisecond); n != 1 {
		t.Fatalf("one release published on 3 nodes woke %d of 50 waiters, want 1", n)
	}

	for _, id := range []string{"release-2", "release-3", "release-4"} {
		publish(t, ch, id, 0, 1, 2)
	}
	if n := takeWakes(ws, 200*time.Millisecond); n != 3 {
		t.Fatalf("3 releases woke %d waiters, want 3", n)
	}
	if s := b.Stats(); s.Duplicates != 8 || s.Wakes != 4 {
		t.Fatalf("stats %+v: want 8 duplicates, 4 wakes", s)
	}
}

func TestPubSubOneConnectionPerNode(t *testing.T) {
	reset(t)
	b := newPubSubBroker(t, pubsub.Options{Linger: 50 * time.Millisecond})
	var channels []string
	for i := range 20 {
		channels = append(channels, pubsubChannel(t, i))
	}
	ws := subscribeAll(t, b, channels, 5)
	if s := b.Stats(); s.Waiters != 100 || s.Channels != 20 {
		t.Fatalf("stats %+v: want 100 waiters on 20 channels", s)
	}

	// Subscribe returned after every node confirmed: no polling needed.
	if err := expectNumSub(channels, 1)(); err != nil {
		t.Fatal(err)
	}
	for i, c := range cluster.Direct() {
		eventually(t, time.Second, fmt.Sprintf("node %d pubsub clients", i), func() error {
			n, err := pubsubClients(c)
			if err == nil && n != 1 {
				err = fmt.Errorf("%d pubsub connections, want 1", n)
			}
			return err
		})
	}

	for _, w := range ws {
		w.Close()
	}
	eventually(t, 2*time.Second, "unsubscribed everywhere, after the linger", expectNumSub(channels, 0))
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	for i, c := range cluster.Direct() {
		left, err := c.PubSubChannels(ctx, "relock:*").Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(left) != 0 {
			t.Fatalf("node %d: PUBSUB CHANNELS relock:* = %v, want none", i, left)
		}
	}
	if s := b.Stats(); s.Waiters != 0 || s.Channels != 0 {
		t.Fatalf("stats %+v: want nothing left", s)
	}
}

func TestPubSubReconnectWakesEveryWaiter(t *testing.T) {
	reset(t)
	b := newPubSubBroker(t, pubsub.Options{})
	channels := []string{pubsubChannel(t, 0), pubsubChannel(t, 1)}
	ws := subscribeAll(t, b, channels, 5)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	const killed = 1
	if err := cluster.Direct()[killed].Do(ctx, "CLIENT", "KILL", "TYPE", "pubsub").Err(); err != nil {
		t.Fatal(err)
	}
	for i, w := range ws {
		select {
		case <-w.Wake():
		case <-ctx.Done():
			t.Fatalf("waiter %d not woken after its node's connection was killed", i)
		}
	}

	// go-redis redials and resubscribes; the Broker sees the connection back.
	eventually(t, 2*time.Second, "resubscribed", func() error {
		for _, ch := range channels {
			if err := expectNumSubOn(killed, ch, 1)(); err != nil {
				return err
			}
		}
		if s := b.Stats(); s.Disconnects < 1 || s.Reconnects < 1 {
			return fmt.Errorf("stats %+v", s)
		}
		return nil
	})
	takeWakes(ws, 0)

	publish(t, channels[0], "after-kill", killed)
	if n := takeWakes(ws, 200*time.Millisecond); n != 1 {
		t.Fatalf("a release on the reconnected node woke %d waiters, want 1", n)
	}
}

func TestPubSubClosedWaiterHandsWakeOn(t *testing.T) {
	reset(t)
	b := newPubSubBroker(t, pubsub.Options{})
	ch := pubsubChannel(t, 0)
	first := subscribeAll(t, b, []string{ch}, 1)[0]
	second := subscribeAll(t, b, []string{ch}, 1)[0]

	publish(t, ch, "release-1", 0, 1, 2)
	time.Sleep(200 * time.Millisecond)
	select {
	case <-second.Wake():
		t.Fatal("the release went to the younger waiter")
	default:
	}
	first.Close() // gives up without consuming its wake
	select {
	case <-second.Wake():
	case <-time.After(time.Second):
		t.Fatal("the closed waiter's wake was not handed on")
	}
}

// TestPubSubPassOnWakesTheNextWaiter: a waiter that passes on (its owner
// took a shared hold) wakes the next waiter, and Stats counts that wake;
// with no one next it counts none. Before 2026-12-04 passing on gave the
// waiter an uncounted wake and took it back on Close, counted: Wakes went
// one down, from 0 to 2^64-1.
func TestPubSubPassOnWakesTheNextWaiter(t *testing.T) {
	reset(t)
	b := newPubSubBroker(t, pubsub.Options{})
	ch := pubsubChannel(t, 0)
	alone := subscribeAll(t, b, []string{ch}, 1)[0]
	alone.PassOn()
	if s := b.Stats(); s.Wakes != 0 {
		t.Fatalf("Wakes %d after a pass-on to no one; want 0", s.Wakes)
	}

	first := subscribeAll(t, b, []string{ch}, 1)[0]
	second := subscribeAll(t, b, []string{ch}, 1)[0]
	first.PassOn()
	select {
	case <-second.Wake():
	case <-time.After(time.Second):
		t.Fatal("the next waiter was not woken")
	}
	if s := b.Stats(); s.Wakes != 1 {
		t.Fatalf("Wakes %d after one pass-on; want 1", s.Wakes)
	}
}

func TestPubSubSubscribeWithNodeDown(t *testing.T) {
	reset(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const down = 2
	if err := cluster.Nodes[down].Stop(ctx); err != nil {
		t.Fatal(err)
	}

	const timeout = 100 * time.Millisecond
	b := newPubSubBroker(t, pubsub.Options{SubscribeTimeout: timeout})
	ch := pubsubChannel(t, 0)
	start := time.Now()
	w, err := b.Subscribe(ctx, ch)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if d := time.Since(start); d > timeout+400*time.Millisecond {
		t.Fatalf("Subscribe took %v with a node down, want about %v", d, timeout)
	}
	if err := expectNumSubOn(0, ch, 1)(); err != nil {
		t.Fatal(err)
	}
	takeWakes([]*pubsub.Waiter{w}, 0)

	publish(t, ch, "release-1", 0, 1)
	select {
	case <-w.Wake():
	case <-time.After(time.Second):
		t.Fatal("release on the live nodes did not wake the waiter")
	}

	// The node comes back: the waiter is subscribed there too, and woken in
	// case it missed something.
	if err := cluster.Nodes[down].Start(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, 3*time.Second, "subscribed on the restarted node", expectNumSubOn(down, ch, 1))
	select {
	case <-w.Wake():
	case <-time.After(2 * time.Second):
		t.Fatal("waiter not woken when the node came back")
	}
	publish(t, ch, "release-2", down)
	select {
	case <-w.Wake():
	case <-time.After(time.Second):
		t.Fatal("release on the restarted node did not wake the waiter")
	}
}

// TestPubSubSubscribeAfterAnOutageIsConfirmedAtOnce: once a node that was
// down answers again, its channels are confirmed again, so a Subscribe to
// a channel already wanted returns at once. Before 2026-12-04 only a barrier
// sent while the node was down tried to confirm them; it failed, and the
// reader's redial sent none: each such Subscribe waited out
// SubscribeTimeout, until some other channel came or went.
func TestPubSubSubscribeAfterAnOutageIsConfirmedAtOnce(t *testing.T) {
	reset(t)
	ctx := ctxFor(t, 60*time.Second)
	const timeout = 10 * time.Second
	// No health PING within the test: its answer would confirm the
	// channels too (after 3 s, the default interval).
	b := newPubSubBroker(t, pubsub.Options{SubscribeTimeout: timeout, HealthCheckInterval: time.Minute})
	ch := pubsubChannel(t, 0)
	subscribeAll(t, b, []string{ch}, 1)

	statsShow := func(what string, ok func(pubsub.Stats) bool) {
		eventually(t, 10*time.Second, what, func() error {
			if s := b.Stats(); !ok(s) {
				return fmt.Errorf("stats %+v", s)
			}
			return nil
		})
	}
	const down = 1
	if err := cluster.Nodes[down].Stop(ctx); err != nil {
		t.Fatal(err)
	}
	statsShow("the outage is seen", func(s pubsub.Stats) bool { return s.Disconnects >= 1 })
	if err := cluster.Nodes[down].Start(ctx); err != nil {
		t.Fatal(err)
	}
	statsShow("the connection is back", func(s pubsub.Stats) bool { return s.Reconnects >= 1 })
	start := time.Now()
	w, err := b.Subscribe(ctx, ch)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	took := time.Since(start)
	t.Logf("Subscribe after the outage: %v", took)
	if took > timeout/2 {
		t.Fatalf("Subscribe after the outage took %v: given up on after SubscribeTimeout (%v), not confirmed by a barrier", took, timeout)
	}
}

// TestPubSubLateConfirmationWakesOneWaiter: a node that confirms a
// subscription after Subscribe stopped waiting for it may have missed a
// release published in between, so its confirmation wakes one waiter of
// the channel, as a release would, and Stats counts it. Without that wake
// every waiter would sleep out the holder's lease.
func TestPubSubLateConfirmationWakesOneWaiter(t *testing.T) {
	reset(t)
	const (
		slow    = 0
		latency = 150 * time.Millisecond
		timeout = 20 * time.Millisecond
	)
	b := newPubSubBroker(t, pubsub.Options{SubscribeTimeout: timeout})
	// Every node's connection is open and working before the link slows
	// down, so the only late event is the confirmation.
	ws := subscribeAll(t, b, []string{pubsubChannel(t, 0)}, 1)
	ws[0].Close()
	if err := cluster.Nodes[slow].Slow(latency); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cluster.Nodes[slow].Heal() }()

	ch := pubsubChannel(t, 1)
	before := b.Stats()
	ws = subscribeAll(t, b, []string{ch}, 2)
	// Its replies come latency late: Subscribe returned without its
	// confirmation, which comes later and is counted then.
	eventually(t, 3*time.Second, "the late confirmation counted", func() error {
		if late := b.Stats().LateConfirms - before.LateConfirms; late != 1 {
			return fmt.Errorf("LateConfirms rose by %d, want 1", late)
		}
		return nil
	})
	if n := takeWakes(ws, 0); n != 1 {
		t.Fatalf("%d waiters woken by the late confirmation, want 1 (as one release wakes one)", n)
	}
	after := b.Stats()
	if after.Disconnects != before.Disconnects || after.Reconnects != before.Reconnects {
		t.Fatalf("the connection changed (before %+v, after %+v): the wake may not be the confirmation's", before, after)
	}
}

func TestPubSubSubscribeContextEnds(t *testing.T) {
	reset(t)
	b := newPubSubBroker(t, pubsub.Options{SubscribeTimeout: 5 * time.Second})
	ch := pubsubChannel(t, 0)

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if w, err := b.Subscribe(cancelled, ch); !errors.Is(err, context.Canceled) || w != nil {
		t.Fatalf("Subscribe with a cancelled ctx = %v, %v; want context.Canceled", w, err)
	}

	// A paused node never confirms; ctx ends the wait.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const paused = 0
	if err := cluster.Nodes[paused].Pause(ctx); err != nil {
		t.Fatal(err)
	}
	short, cancelShort := context.WithTimeout(ctx, 150*time.Millisecond)
	defer cancelShort()
	start := time.Now()
	w, err := b.Subscribe(short, ch)
	if !errors.Is(err, context.DeadlineExceeded) || w != nil {
		t.Fatalf("Subscribe with a node paused = %v, %v; want context.DeadlineExceeded", w, err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("Subscribe returned %v after its ctx ended", d)
	}
	if s := b.Stats(); s.Waiters != 0 || s.Channels != 0 {
		t.Fatalf("a share was left behind: %+v", s)
	}
	if err := cluster.Nodes[paused].Unpause(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, 3*time.Second, "nothing subscribed", expectNumSub([]string{ch}, 0))
}

func TestPubSubHealthCheckDetectsPartition(t *testing.T) {
	reset(t)
	b := newPubSubBroker(t, pubsub.Options{HealthCheckInterval: 100 * time.Millisecond})
	ch := pubsubChannel(t, 0)
	ws := subscribeAll(t, b, []string{ch}, 3)

	const cut = 1
	link := cluster.Nodes[cut].Link()
	if err := link.Partition(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = link.Heal() })
	// The connection stays open but silent: only the health check notices.
	for i, w := range ws {
		select {
		case <-w.Wake():
		case <-time.After(2 * time.Second):
			t.Fatalf("waiter %d not woken by the partition", i)
		}
	}
	if err := link.Heal(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 3*time.Second, "reconnected", func() error {
		if s := b.Stats(); s.Disconnects < 1 || s.Reconnects < 1 {
			return fmt.Errorf("stats %+v", s)
		}
		return expectNumSubOn(cut, ch, 1)()
	})
	takeWakes(ws, 0)
	publish(t, ch, "after-heal", cut)
	if n := takeWakes(ws, 200*time.Millisecond); n != 1 {
		t.Fatalf("a release on the healed node woke %d waiters, want 1", n)
	}
}

func TestPubSubCloseWakesWaitersAndLeaksNothing(t *testing.T) {
	reset(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())

	b := pubsub.NewBroker(cluster.Clients(), pubsub.Options{})
	ch := pubsubChannel(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var ws []*pubsub.Waiter
	for range 5 {
		w, err := b.Subscribe(ctx, ch)
		if err != nil {
			b.Close()
			t.Fatal(err)
		}
		ws = append(ws, w)
	}

	b.Close()
	for i, w := range ws {
		select {
		case <-w.Wake():
		default:
			t.Errorf("waiter %d not woken by Close", i)
		}
		w.Close()
	}
	if _, err := b.Subscribe(ctx, ch); !errors.Is(err, pubsub.ErrClosed) {
		t.Fatalf("Subscribe after Close: %v, want ErrClosed", err)
	}
	eventually(t, time.Second, "connections closed", expectNumSub([]string{ch}, 0))
}

// The fixture's clients speak RESP2; go-redis defaults to RESP3, where
// published messages arrive as push frames and PING answers differently.
func TestPubSubDefaultClientOptions(t *testing.T) {
	reset(t)
	var nodes []redis.UniversalClient
	for _, n := range cluster.Nodes {
		c := redis.NewClient(&redis.Options{Addr: n.Addr()})
		t.Cleanup(func() { _ = c.Close() })
		nodes = append(nodes, c)
	}
	opts := pubsub.Options{Logger: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))}
	b := pubsub.NewBroker(nodes, opts)
	t.Cleanup(b.Close)
	ch := pubsubChannel(t, 0)
	ws := subscribeAll(t, b, []string{ch}, 5)
	if err := expectNumSub([]string{ch}, 1)(); err != nil {
		t.Fatal(err)
	}

	publish(t, ch, "release-1", 0, 1, 2)
	if n := takeWakes(ws, 200*time.Millisecond); n != 1 {
		t.Fatalf("one release woke %d waiters, want 1", n)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := cluster.Direct()[0].Do(ctx, "CLIENT", "KILL", "TYPE", "pubsub").Err(); err != nil {
		t.Fatal(err)
	}
	for i, w := range ws {
		select {
		case <-w.Wake():
		case <-ctx.Done():
			t.Fatalf("waiter %d not woken after its node's connection was killed", i)
		}
	}
	eventually(t, 2*time.Second, "resubscribed", expectNumSubOn(0, ch, 1))
}

// Close must not hang on a node that stopped answering, even while a RESP3
// handshake to it is in flight. go-redis bounds a handshake by the caller's
// ctx only with ContextTimeoutEnabled; otherwise by the client's ReadTimeout
// (about 5 s with the defaults), which Close then has to wait out.
func TestPubSubCloseWithNodePaused(t *testing.T) {
	reset(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var nodes []redis.UniversalClient
	for _, n := range cluster.Nodes {
		c := redis.NewClient(&redis.Options{Addr: n.Addr(), ContextTimeoutEnabled: true}) // RESP3: HELLO on dial
		defer c.Close()
		nodes = append(nodes, c)
	}
	const paused = 0
	if err := cluster.Nodes[paused].Pause(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cluster.Nodes[paused].Unpause(ctx) }()

	func() {
		defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
		b := pubsub.NewBroker(nodes, pubsub.Options{})
		w, err := b.Subscribe(ctx, pubsubChannel(t, 0))
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		start := time.Now()
		b.Close()
		d := time.Since(start)
		t.Logf("Close took %v with a node paused", d)
		if d > 2*time.Second {
			t.Errorf("Close took %v with a node paused", d)
		}
	}()
}

// TestPubSubChannelLingersForTheNextWaiter: a channel whose last waiter left
// stays subscribed for Options.Linger, so the next waiter of a lock taken
// in a loop costs no SUBSCRIBE and no confirmation round trip, and hears
// releases at once; after the linger with no waiter it is unsubscribed.
func TestPubSubChannelLingersForTheNextWaiter(t *testing.T) {
	reset(t)
	const linger = 1500 * time.Millisecond
	b := newPubSubBroker(t, pubsub.Options{Linger: linger})
	ch := pubsubChannel(t, 0)
	channels := []string{ch}
	ws := subscribeAll(t, b, channels, 1)
	ws[0].Close()
	left := time.Now()
	time.Sleep(200 * time.Millisecond)
	if err := expectNumSub(channels, 1)(); err != nil {
		t.Fatalf("200 ms after the last waiter left, within the linger: %v", err)
	}

	ws = subscribeAll(t, b, channels, 1)
	publish(t, ch, "r1", 0, 1, 2)
	if n := takeWakes(ws, 2*time.Second); n != 1 {
		t.Fatalf("a waiter that joined a lingering channel got %d wakes from a release, want 1", n)
	}
	ws[0].Close()
	if err := expectNumSub(channels, 1)(); err != nil {
		t.Fatalf("the second waiter's leave starts a new linger: %v", err)
	}
	eventually(t, linger+2*time.Second, "unsubscribed after the linger", expectNumSub(channels, 0))
	if waited := time.Since(left); waited < linger {
		t.Fatalf("unsubscribed %v after the first leave, before the linger (%v)", waited, linger)
	}
}

// TestPubSubLingerCountsFromTheLastLeave: a channel whose one waiter comes
// and goes, as a process's lone contender's does, stays subscribed while
// its waiters are away for less than Options.Linger, even when a linger
// that an earlier leave started runs out during such a gap; it is
// unsubscribed only once it has had no waiter for the whole linger.
// (Each leave used to start a linger that unsubscribed the channel if no
// waiter happened to be there when it ran out.)
func TestPubSubLingerCountsFromTheLastLeave(t *testing.T) {
	reset(t)
	const linger = 2 * time.Second
	b := newPubSubBroker(t, pubsub.Options{Linger: linger})
	channels := []string{pubsubChannel(t, 0)}
	ws := subscribeAll(t, b, channels, 1)
	ws[0].Close()
	firstLeave := time.Now()

	// Back at once, away again halfway through the first leave's linger:
	// that linger runs out while nobody waits.
	ws = subscribeAll(t, b, channels, 1)
	time.Sleep(time.Until(firstLeave.Add(linger / 2)))
	ws[0].Close()
	lastLeave := time.Now()

	// Subscribed throughout, past the first leave's linger, until a good
	// margin before the last leave's: NUMSUB is asked only while the
	// channel has been without a waiter for less than linger - 700 ms.
	polls, pastFirst := 0, 0
	for time.Since(lastLeave) < linger-700*time.Millisecond {
		asked := time.Now()
		if err := expectNumSub(channels, 1)(); err != nil {
			t.Fatalf("%v after the first leave, %v after the last: %v", asked.Sub(firstLeave), asked.Sub(lastLeave), err)
		}
		polls++
		if asked.Sub(firstLeave) > linger {
			pastFirst++
		}
		time.Sleep(20 * time.Millisecond)
	}
	if pastFirst == 0 {
		t.Fatalf("no NUMSUB after the first leave's linger ran out (%d in all): the test saw nothing", polls)
	}

	eventually(t, linger+2*time.Second, "unsubscribed after the last leave's linger", expectNumSub(channels, 0))
	if waited := time.Since(lastLeave); waited < linger {
		t.Fatalf("unsubscribed %v after the last leave, before the linger (%v)", waited, linger)
	}
}
