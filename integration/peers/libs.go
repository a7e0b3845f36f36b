package peers

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"

	"github.com/relock-go/relock/integration/fixture"
	"github.com/relock-go/relock/internal/abtest"
	"github.com/relock-go/relock/lock"
)

// Mutex is one owner of one named lock, as a scenario drives it. Lock blocks
// until the lock is acquired or ctx ends; Unlock releases it.
type Mutex interface {
	Lock(ctx context.Context) error
	Unlock(ctx context.Context) error
}

// Process is one library client with its own connections, as one service
// process would have.
type Process interface {
	// NewMutex returns an owner of the lock named name.
	NewMutex(name string) Mutex
	// Probe returns the counters of the Process's go-redis clients, or nil
	// when the library does not use go-redis.
	Probe() *Probe
	// Close releases what the Process holds and closes its clients.
	Close() error
}

// Lib is one library in one configuration.
type Lib struct {
	// Name is how the tables show it.
	Name string
	// SingleNode marks libraries that lock on one Redis node only.
	SingleNode bool
	// ContendedOnly marks configurations that differ only under
	// contention (an A/B of relock's contention protocol): the scenarios
	// without contention leave them out.
	ContendedOnly bool
	// UncontendedOnly marks configurations that differ only when many
	// goroutines call through one Client at once (an A/B of its
	// pipelines): only the uncontended scenario runs them.
	UncontendedOnly bool
	// GaveUp reports whether a Lock error means the library spent its own
	// retry budget while the lock stayed taken (nil: it has none). The
	// scenarios count those and call Lock again; any other error but the
	// end of the Lock's ctx is an error.
	GaveUp func(error) bool
	// NewProcess makes a Process on the masters at addrs whose go-redis
	// clients have pool connections each.
	NewProcess func(addrs []string, pool int) (Process, error)
}

// Library names, as printed.
const (
	NameRelock          = "relock"
	NameRelockSplit     = "relock (split votes, before)"
	NameRelockNoQueue   = "relock (no wait queue, before)"
	NameRelockPipelines = "relock (4 pipelines per node, before)"
	NameRedsyncDefaults = "redsync (defaults)"
	NameRedsyncFast     = "redsync (2 ms retry)"
	NameRedislock       = "redislock (2 ms backoff)"
	NameRueidislock     = "rueidislock"
)

// Peer settings.
const (
	// peerLease is the lease of the peers that take one (redislock; redsync
	// keeps its default 8 s expiry). It only has to outlast a hold.
	peerLease = 10 * time.Second
	// fastRetry is the short retry delay given to the polling peers.
	fastRetry = 2 * time.Millisecond
	// fastTries is redsync's retry budget with fastRetry: more than a Lock's
	// wait bound (lockTimeout) can use, so ctx ends the wait first.
	fastTries = int(lockTimeout/fastRetry) + 1
	// benchDialTimeout bounds a connection attempt of the benchmark's
	// go-redis clients.
	benchDialTimeout = 2 * time.Second
)

// Libs returns every library in the configurations the scenarios compare.
// relockOpts are the relock options besides Nodes.
func Libs(relockOpts lock.Options) []Lib {
	return []Lib{
		{Name: NameRelock, NewProcess: relockProcess(relockOpts)},
		{Name: NameRelockSplit, ContendedOnly: true, NewProcess: withSwitch(&abtest.SplitVotes, true, false, relockProcess(relockOpts))},
		{Name: NameRelockNoQueue, ContendedOnly: true, NewProcess: withSwitch(&abtest.NoWaitQueue, true, false, relockProcess(relockOpts))},
		{Name: NameRelockPipelines, UncontendedOnly: true, NewProcess: withSwitch[int32](&abtest.PipelinesPerNode, 4, 0, relockProcess(relockOpts))},
		{Name: NameRedsyncDefaults, GaveUp: redsyncGaveUp, NewProcess: redsyncProcess()},
		{Name: NameRedsyncFast, GaveUp: redsyncGaveUp, NewProcess: redsyncProcess(
			redsync.WithRetryDelay(fastRetry), redsync.WithTries(fastTries))},
		{Name: NameRedislock, SingleNode: true, NewProcess: redislockProcess},
		{Name: NameRueidislock, SingleNode: true, NewProcess: rueidislockProcess},
	}
}

// goRedisClients makes one hooked go-redis client per address with the
// fixture's client settings (RESP2, no retries, short timeouts) and pool
// connections.
func goRedisClients(addrs []string, pool int) ([]*redis.Client, *Probe) {
	clients := make([]*redis.Client, len(addrs))
	probe := &Probe{Nodes: make([]*Counter, len(addrs))}
	for i, addr := range addrs {
		o := fixture.ClientOptions(addr)
		o.PoolSize = pool
		// The fixture's 200 ms suits fault tests; here dozens of clients
		// dial at once on a busy machine, and a failed dial is not what
		// the benchmark measures.
		o.DialTimeout = benchDialTimeout
		clients[i] = redis.NewClient(o)
		probe.Nodes[i] = &Counter{}
		clients[i].AddHook(probe.Nodes[i])
	}
	return clients, probe
}

func closeClients(clients []*redis.Client) error {
	var errs []error
	for _, c := range clients {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// --- relock ---

type relockProc struct {
	clients []*redis.Client
	probe   *Probe
	c       *lock.Client
}

func relockProcess(opts lock.Options) func(addrs []string, pool int) (Process, error) {
	return func(addrs []string, pool int) (Process, error) {
		clients, probe := goRedisClients(addrs, pool)
		o := opts
		o.Nodes = make([]redis.UniversalClient, len(clients))
		for i, c := range clients {
			o.Nodes[i] = c
		}
		c, err := lock.New(o)
		if err != nil {
			_ = closeClients(clients)
			return nil, err
		}
		return &relockProc{clients: clients, probe: probe, c: c}, nil
	}
}

// withSwitch makes newProcess's Clients with an abtest switch set to on
// (and back to off after): with SplitVotes they contend as relock did
// before its tie-breaker, with NoWaitQueue without the tie-breaker's wait
// queue (as before it), with PipelinesPerNode at 4 each node keeps four
// pipelines (as before they were shared). The switch is read by lock.New,
// so it is set only while the Client is made (scenarios make their
// Processes one at a time).
func withSwitch[T any](sw interface{ Store(T) }, on, off T, newProcess func(addrs []string, pool int) (Process, error)) func(addrs []string, pool int) (Process, error) {
	return func(addrs []string, pool int) (Process, error) {
		sw.Store(on)
		defer sw.Store(off)
		return newProcess(addrs, pool)
	}
}

func (p *relockProc) NewMutex(name string) Mutex { return p.c.NewMutex(name) }
func (p *relockProc) Probe() *Probe              { return p.probe }
func (p *relockProc) Close() error {
	return errors.Join(p.c.Close(), closeClients(p.clients))
}

// --- go-redsync/redsync ---

type redsyncProc struct {
	clients []*redis.Client
	probe   *Probe
	rs      *redsync.Redsync
	opts    []redsync.Option
}

func redsyncProcess(opts ...redsync.Option) func(addrs []string, pool int) (Process, error) {
	return func(addrs []string, pool int) (Process, error) {
		clients, probe := goRedisClients(addrs, pool)
		pools := make([]redsyncredis.Pool, len(clients))
		for i, c := range clients {
			pools[i] = goredis.NewPool(c)
		}
		return &redsyncProc{clients: clients, probe: probe, rs: redsync.New(pools...), opts: opts}, nil
	}
}

func (p *redsyncProc) NewMutex(name string) Mutex {
	return redsyncMutex{p.rs.NewMutex(name, p.opts...)}
}
func (p *redsyncProc) Probe() *Probe { return p.probe }
func (p *redsyncProc) Close() error  { return closeClients(p.clients) }

// redsyncGaveUp: redsync returns the last attempt's "taken" error, or
// ErrFailed, once its tries are spent (with its defaults, 32 tries 50–250 ms
// apart: about 5 s).
func redsyncGaveUp(err error) bool {
	var taken *redsync.ErrTaken
	var nodeTaken *redsync.ErrNodeTaken
	return errors.Is(err, redsync.ErrFailed) || errors.As(err, &taken) || errors.As(err, &nodeTaken)
}

// redsyncMutex adapts a redsync mutex. A redsync Mutex is not safe for
// concurrent use; each goroutine of a scenario has its own.
type redsyncMutex struct{ m *redsync.Mutex }

func (m redsyncMutex) Lock(ctx context.Context) error { return m.m.LockContext(ctx) }
func (m redsyncMutex) Unlock(ctx context.Context) error {
	ok, err := m.m.UnlockContext(ctx)
	if err == nil && !ok {
		err = errors.New("redsync: unlock reached no quorum")
	}
	return err
}

// --- bsm/redislock ---

type redislockProc struct {
	clients []*redis.Client
	probe   *Probe
	c       *redislock.Client
}

func redislockProcess(addrs []string, pool int) (Process, error) {
	if len(addrs) != 1 {
		return nil, fmt.Errorf("redislock: single node only, got %d", len(addrs))
	}
	clients, probe := goRedisClients(addrs, pool)
	return &redislockProc{clients: clients, probe: probe, c: redislock.New(clients[0])}, nil
}

func (p *redislockProc) NewMutex(name string) Mutex {
	return &redislockMutex{c: p.c, key: "redislock:" + name}
}
func (p *redislockProc) Probe() *Probe { return p.probe }
func (p *redislockProc) Close() error  { return closeClients(p.clients) }

// redislockMutex holds the redislock lock it obtained; one goroutine uses it.
type redislockMutex struct {
	c    *redislock.Client
	key  string
	held *redislock.Lock
}

func (m *redislockMutex) Lock(ctx context.Context) error {
	// Obtain retries every fastRetry until ctx ends.
	l, err := m.c.Obtain(ctx, m.key, peerLease, &redislock.Options{
		RetryStrategy: redislock.LinearBackoff(fastRetry),
	})
	if err != nil {
		return err
	}
	m.held = l
	return nil
}

func (m *redislockMutex) Unlock(ctx context.Context) error {
	l := m.held
	m.held = nil
	return l.Release(ctx)
}

// --- rueidis' rueidislock ---

type rueidislockProc struct{ l rueidislock.Locker }

// rueidislockProcess makes one Locker (one rueidis client, which pipelines
// automatically over one connection). KeyMajority 1: one key on the one
// node, the plain single-instance lock; the default (2 of 3 keys, taken one
// after the other) would cost it an extra round trip per acquire.
func rueidislockProcess(addrs []string, _ int) (Process, error) {
	if len(addrs) != 1 {
		return nil, fmt.Errorf("rueidislock: single node only, got %d", len(addrs))
	}
	l, err := rueidislock.NewLocker(rueidislock.LockerOption{
		ClientOption: rueidis.ClientOption{
			InitAddress:       addrs,
			ForceSingleClient: true,
		},
		KeyMajority: 1,
	})
	if err != nil {
		return nil, err
	}
	return &rueidislockProc{l: l}, nil
}

func (p *rueidislockProc) NewMutex(name string) Mutex {
	return &rueidislockMutex{l: p.l, name: name}
}
func (p *rueidislockProc) Probe() *Probe { return nil }
func (p *rueidislockProc) Close() error  { p.l.Close(); return nil }

// rueidislockMutex holds the cancel function of the lock it took: the lock
// is a context, released by cancelling it (which waits for the DEL).
type rueidislockMutex struct {
	l      rueidislock.Locker
	name   string
	cancel context.CancelFunc
}

func (m *rueidislockMutex) Lock(ctx context.Context) error {
	// The lock's context derives from ctx: the caller keeps ctx alive
	// until Unlock.
	_, cancel, err := m.l.WithContext(ctx, m.name)
	if err != nil {
		return err
	}
	m.cancel = cancel
	return nil
}

func (m *rueidislockMutex) Unlock(context.Context) error {
	cancel := m.cancel
	m.cancel = nil
	if cancel == nil {
		return errors.New("rueidislock: not held")
	}
	cancel()
	return nil
}
