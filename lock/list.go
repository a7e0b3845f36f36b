package lock

import (
	"context"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/reentrant"
)

// DefaultListLimit is how many locks List reads at most on one node when
// its caller gives no limit.
const DefaultListLimit = 1000

// listPage is how many keys one SCAN call asks a server to look at.
const listPage = 500

// Listing is what List found on the nodes.
type Listing struct {
	// Names are the locks whose key exists on at least one node, sorted:
	// held there now, by a quorum or not (see QuorumHolder and
	// QuorumReaders).
	Names []string
	// Truncated is set when some node had more matching locks than the
	// limit: Names is then incomplete.
	Truncated bool
	// Failed are the nodes that could not be read, in node order.
	Failed []NodeError
}

// List returns the names of the locks that exist on the nodes now (their
// hash, an RWMutex's readers' or a semaphore's permits) and match pattern, a Redis glob on the
// lock name (as SCAN MATCH takes it; "" means every lock). It changes
// nothing.
//
// It reads the nodes with SCAN, one page at a time on every node in
// parallel (every master of a Cluster node), each page waited for as
// Inspect waits for a node, and stops reading a node once limit matching
// locks came from it (limit ≤ 0 means DefaultListLimit) or when ctx ends. A lock held on a
// quorum is found as long as a quorum of the nodes could be read; List
// returns a *QuorumError, with what it found, when fewer could. Names held on
// a minority only (an attempt in progress, or what a failure left until its
// lease runs out) are listed too: read each with Inspect and QuorumHolder for
// the quorum's view. In a glob, '}' and '%' match themselves only outside
// brackets.
func (c *Client) List(ctx context.Context, pattern string, limit int) (Listing, error) {
	if pattern == "" {
		pattern = "*"
	}
	if limit <= 0 {
		limit = DefaultListLimit
	}
	key, err := c.keyFor(pattern) // escapes the pattern as NewKey escapes names
	if err != nil {
		return Listing{}, err
	}
	if err := c.begin(); err != nil {
		return Listing{}, err
	}
	defer c.end()
	if err := c.ident.check(ctx); err != nil {
		return Listing{}, err
	}
	// The lock hash and every key beside it: an RWMutex that only readers
	// hold has no hash, only its readers', and a semaphore has its permits
	// (nameOfKey keeps those three).
	match := globEscaper.Replace(c.opts.KeyPrefix) + strings.TrimPrefix(key.Lock, c.opts.KeyPrefix) + "*"

	scans := make([]*nodeScan, len(c.nodes))
	for i := range scans {
		scans[i] = &nodeScan{match: match, limit: limit, names: make(map[string]struct{})}
	}
	var out Listing
	for ctx.Err() == nil && slices.ContainsFunc(scans, (*nodeScan).going) {
		replies := fanOutFor(c, ctx, kindSurvey, c.opts.Lease, func(ctx context.Context, n *reentrant.Node) (struct{}, error) {
			return struct{}{}, scans[slices.Index(c.nodes, n)].page(ctx, n.Client(), c.opts.KeyPrefix)
		})
		for _, f := range failures(c, replies) {
			scans[f.Node].fail()
			out.Failed = append(out.Failed, f)
		}
	}
	names := make(map[string]struct{})
	for _, s := range scans {
		truncated := s.collect(names)
		out.Truncated = out.Truncated || truncated
	}
	for name := range names {
		out.Names = append(out.Names, name)
	}
	slices.Sort(out.Names)
	slices.SortFunc(out.Failed, func(a, b NodeError) int { return a.Node - b.Node })
	if err := ctx.Err(); err != nil {
		return out, err
	}
	if read := len(c.nodes) - len(out.Failed); read < c.quorum {
		return out, &QuorumError{Op: "list", Needed: c.quorum, Agreed: read, Nodes: out.Failed}
	}
	return out, nil
}

// globEscaper makes a key prefix match itself in a SCAN MATCH glob.
var globEscaper = strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`, `]`, `\]`)

// tagUnescaper undoes reentrant.NewKey's escaping of a name in its hash tag.
var tagUnescaper = strings.NewReplacer("%7D", "}", "%25", "%")

// readersSuffix and permitsSuffix end the keys of an RWMutex's readers and
// of a semaphore's permits after the lock's: Key.Readers and Key.Permits of
// a key whose lock hash is "".
var (
	readersSuffix = reentrant.Key{}.Readers()
	permitsSuffix = reentrant.Key{}.Permits()
)

// nameOfKey returns the name of the lock whose hash, RWMutex readers' hash
// or semaphore's permits is key under prefix, or false for a key of another
// kind (a fencing counter, a tombstone).
func nameOfKey(prefix, key string) (string, bool) {
	tag, ok := strings.CutPrefix(key, prefix+":{")
	if !ok {
		return "", false
	}
	if t, cut := strings.CutSuffix(tag, readersSuffix); cut {
		tag = t
	} else {
		tag, _ = strings.CutSuffix(tag, permitsSuffix)
	}
	tag, ok = strings.CutSuffix(tag, "}")
	if !ok || tag == "" || strings.Contains(tag, "}") {
		return "", false
	}
	return tagUnescaper.Replace(tag), true
}

// nodeScan is List's progress through one node's keyspace.
type nodeScan struct {
	match string
	limit int

	mu        sync.Mutex // a Cluster node's masters are read in parallel
	cursors   map[string]uint64
	finished  map[string]bool // servers whose SCAN came back to cursor 0
	names     map[string]struct{}
	truncated bool
	failed    bool
}

// fail marks the node as failed: List reads no more of it.
func (s *nodeScan) fail() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failed = true
}

// collect adds the names read from the node to names and reports whether
// the node had more than the limit. (A page that fanOut stopped waiting for
// may still be landing: hence the lock.)
func (s *nodeScan) collect(names map[string]struct{}) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for name := range s.names {
		names[name] = struct{}{}
	}
	return s.truncated
}

// going reports whether the node has more to read.
func (s *nodeScan) going() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failed || s.truncated {
		return false
	}
	return s.cursors == nil || len(s.finished) < len(s.cursors)
}

// page reads one SCAN page from the node, or from each master of a Cluster
// node, and keeps the lock names in it.
func (s *nodeScan) page(ctx context.Context, rdb redis.UniversalClient, prefix string) error {
	if !s.going() {
		return nil
	}
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
			return s.pageOf(ctx, m, m.Options().Addr, prefix)
		})
	}
	return s.pageOf(ctx, rdb, "", prefix)
}

// pageOf reads the next SCAN page of one server, server naming it among a
// Cluster's masters.
func (s *nodeScan) pageOf(ctx context.Context, rdb redis.UniversalClient, server, prefix string) error {
	s.mu.Lock()
	if s.cursors == nil {
		s.cursors, s.finished = make(map[string]uint64), make(map[string]bool)
	}
	cursor, started := s.cursors[server]
	if s.finished[server] {
		s.mu.Unlock()
		return nil
	}
	if !started {
		s.cursors[server] = 0
	}
	s.mu.Unlock()

	keys, next, err := rdb.Scan(ctx, cursor, s.match, listPage).Result()
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range keys {
		if name, ok := nameOfKey(prefix, k); ok {
			if len(s.names) >= s.limit {
				s.truncated = true
				break
			}
			s.names[name] = struct{}{}
		}
	}
	s.cursors[server] = next
	if next == 0 {
		s.finished[server] = true
	}
	return nil
}

// Holder is the owner that holds a lock on a quorum of the nodes.
type Holder struct {
	Owner string        // CLIENTID:OWNERID
	Count int64         // the hold count a quorum of the owner's copies has at least
	TTL   time.Duration // the lease a quorum of its copies still has; NoExpiry when they never expire
	Nodes int           // how many nodes have the owner's hold
}

// QuorumHolder returns the owner that holds the lock on at least quorum of
// the nodes whose states Inspect returned, or false when none does: the lock
// is free, or held on a minority only. Copies of different owners do not add
// up, and nodes that could not be read count for no one. An RWMutex's
// holder here is its writer; see QuorumReaders for its readers.
func QuorumHolder(states []NodeState, quorum int) (Holder, bool) {
	holders := quorumHolds(states, quorum, writerHolds)
	if len(holders) == 0 {
		return Holder{}, false
	}
	return holders[0], true // one at most: a quorum of the nodes admits one owner
}

// QuorumReaders returns the readers of an RWMutex that read it on at least
// quorum of the nodes whose states Inspect returned, sorted by owner: each
// reader's copies, counted as QuorumHolder counts a holder's, with the
// lease a quorum of them still has (each reader's lease is its own).
// Readers on a minority only are left out.
func QuorumReaders(states []NodeState, quorum int) []Holder {
	return quorumHolds(states, quorum, func(info reentrant.Info) map[string]reentrant.LeasedHold { return info.Readers })
}

// QuorumPermits returns the holders of the semaphore of the lock's name that
// hold their permits on at least quorum of the nodes whose states Inspect
// returned, sorted by owner, each with its permits as Count. A semaphore of
// k permits over N nodes needs SemaphoreQuorum(N, k) of them, which the
// nodes do not record: the caller who knows k gives that quorum.
func QuorumPermits(states []NodeState, quorum int) []Holder {
	return quorumHolds(states, quorum, func(info reentrant.Info) map[string]reentrant.LeasedHold { return info.Permits })
}

// Waiter is an owner waiting for a lock, as the nodes' wait queues show it.
type Waiter struct {
	Owner string    // CLIENTID:OWNERID
	Since time.Time // when its Lock call began to wait, by its own clock
	Nodes int       // how many nodes have it in their queue
}

// Waiters returns the owners in the lock's wait queues on the nodes whose
// states Inspect returned, in the order releases hand the lock on: by when
// each began to wait (its ticket, by which every node orders its queue;
// the tie-breaker's where nodes differ), then by owner. Waiters queue on
// the name's tie-breaker (NodeState's TieBreaker), which hands the lock
// on; an attempt refused on another node with its ticket also registers
// its waiter there (a Mutex's and a FairMutex's alike). Each node reads the first
// reentrant.InspectWaiters of its queue (Info.Queued counts them all).
//
// The owner that holds the lock on quorum of the nodes (QuorumHolder) is
// passed over: it waits no more. Its entry can stay in a node's queue
// until its Unlock (a Mutex that won through the other nodes while its
// attempt waited there), and a release passes over it.
func Waiters(states []NodeState, quorum int) []Waiter {
	holder, _ := QuorumHolder(states, quorum)
	byOwner := make(map[string]*Waiter)
	for _, s := range states {
		if s.Err != nil {
			continue
		}
		for _, w := range s.Info.Waiters {
			if w.Owner == holder.Owner {
				continue
			}
			if seen, ok := byOwner[w.Owner]; ok {
				seen.Nodes++
				if s.TieBreaker {
					// Its place in the queue the lock goes by (an entry
					// left elsewhere may keep an older ticket).
					seen.Since = w.Since
				}
				continue
			}
			byOwner[w.Owner] = &Waiter{Owner: w.Owner, Since: w.Since, Nodes: 1}
		}
	}
	out := make([]Waiter, 0, len(byOwner))
	for _, w := range byOwner {
		out = append(out, *w)
	}
	slices.SortFunc(out, func(a, b Waiter) int {
		if c := a.Since.Compare(b.Since); c != 0 {
			return c
		}
		return strings.Compare(a.Owner, b.Owner)
	})
	return out
}

// writerHolds returns a node's holds at the lock hash, each with the key's
// lease.
func writerHolds(info reentrant.Info) map[string]reentrant.LeasedHold {
	out := make(map[string]reentrant.LeasedHold, len(info.Holders))
	for owner, n := range info.Holders {
		out[owner] = reentrant.LeasedHold{Count: n, TTL: info.TTL}
	}
	return out
}

// quorumHolds returns, sorted by owner, every owner whose hold (as holdsOf
// reads each node's) is on at least quorum of the nodes that answered.
func quorumHolds(states []NodeState, quorum int, holdsOf func(reentrant.Info) map[string]reentrant.LeasedHold) []Holder {
	counts := make(map[string][]int64) // owner → its hold count on each node
	ttls := make(map[string][]int64)   // owner → its lease on each node
	for _, s := range states {
		if s.Err != nil {
			continue
		}
		for owner, h := range holdsOf(s.Info) {
			ttl := int64(h.TTL)
			if h.TTL == NoExpiry {
				ttl = math.MaxInt64 // sorts above every lease
			}
			counts[owner] = append(counts[owner], h.Count)
			ttls[owner] = append(ttls[owner], ttl)
		}
	}
	var out []Holder
	for _, owner := range slices.Sorted(maps.Keys(counts)) {
		if len(counts[owner]) < quorum {
			continue
		}
		ttl := time.Duration(quorumth(ttls[owner], quorum))
		if ttl == math.MaxInt64 {
			ttl = NoExpiry
		}
		out = append(out, Holder{Owner: owner, Count: quorumth(counts[owner], quorum), TTL: ttl, Nodes: len(counts[owner])})
	}
	return out
}

// quorumth returns the quorum-th largest of values: the largest value that
// at least quorum of them reach.
func quorumth(values []int64, quorum int) int64 {
	sorted := slices.Sorted(slices.Values(values))
	return sorted[len(sorted)-quorum]
}
