package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/reentrant"
)

// lockView is one lock as inspect and ls show it: the quorum's view and
// each node's, and those of the semaphore of the same name (a name's lock
// and semaphore share no key). It is also their --json output.
type lockView struct {
	Name         string      `json:"name"`
	Quorum       int         `json:"quorum"`   // nodes that must agree: N/2+1
	Answered     int         `json:"answered"` // nodes that could be read
	Held         bool        `json:"held"`     // one owner holds it on a quorum
	Holder       *holderOut  `json:"holder,omitempty"`
	Readers      []holderOut `json:"readers,omitempty"` // an RWMutex's readers on a quorum, each with its own lease
	Capacity     int64       `json:"capacity"`          // the semaphore's permits: --permits, or as its holders gave it (0: none recorded)
	PermitQuorum int         `json:"permit_quorum"`     // nodes a semaphore holder needs: lock.SemaphoreQuorum(N, capacity or 1)
	Permits      []holderOut `json:"permits,omitempty"` // the semaphore's holders on PermitQuorum nodes, count = permits
	Waiting      []waiterOut `json:"waiting,omitempty"` // owners in the wait queues, in the order the lock goes to them
	TieBreaker   int         `json:"tie_breaker"`       // the node that keeps the wait queue
	Nodes        []nodeOut   `json:"nodes"`
}

// waiterOut is an owner waiting for the lock (lock.Waiter).
type waiterOut struct {
	Owner string    `json:"owner"` // CLIENTID:OWNERID
	Since time.Time `json:"since"` // when its Lock call began to wait, by its own clock
	Nodes int       `json:"nodes"` // nodes whose queue has it
}

// holderOut is the owner that holds a lock on a quorum (lock.Holder).
type holderOut struct {
	Owner string `json:"owner"`  // CLIENTID:OWNERID
	Count int64  `json:"count"`  // hold count (a quorum has at least this)
	TTLms int64  `json:"ttl_ms"` // remaining lease a quorum still has; -1: never expires
	Nodes int    `json:"nodes"`  // nodes that have the owner's hold
}

// nodeOut is one node's view of a lock (lock.NodeState).
type nodeOut struct {
	Node    int                  `json:"node"`
	Addr    string               `json:"addr"`
	Holders map[string]int64     `json:"holders"`                  // owner → hold count; null when unreadable
	TTLms   *int64               `json:"ttl_ms,omitempty"`         // the key's remaining lease; absent when free; -1: never expires
	Fence   int64                `json:"fence"`                    // the node's fencing counter
	Readers map[string]leasedOut `json:"readers,omitempty"`        // an RWMutex's readers there: owner → read hold
	Permits map[string]leasedOut `json:"permits,omitempty"`        // the semaphore's holders there: owner → permits
	Queue   []queuedOut          `json:"queue,omitempty"`          // the first owners in its wait queue, in order
	Queued  int64                `json:"queued,omitempty"`         // how many owners its queue has in all
	Writer  *queuedOut           `json:"writer_waiting,omitempty"` // an RWMutex's writer that waits there
	Error   string               `json:"error,omitempty"`          // why the node could not be read
}

// queuedOut is an owner in one node's wait queue (reentrant.Waiter).
type queuedOut struct {
	Owner string     `json:"owner"`
	Since *time.Time `json:"since,omitempty"` // its ticket; absent for a waiting writer's mark
	TTLms int64      `json:"ttl_ms"`          // how long its entry stays unless it asks again
}

// newQueuedOut is w as the output gives it.
func newQueuedOut(w reentrant.Waiter) queuedOut {
	q := queuedOut{Owner: w.Owner, TTLms: ttlMillis(w.TTL)}
	if !w.Since.IsZero() {
		since := w.Since.UTC()
		q.Since = &since
	}
	return q
}

// leasedOut is a hold with its own lease on one node (reentrant.LeasedHold):
// a reader's, or a semaphore holder's.
type leasedOut struct {
	Count int64 `json:"count"`  // read hold count, or permits held
	TTLms int64 `json:"ttl_ms"` // what is left of its own lease there
}

// newLeasedOut is holds as the output gives them: nil when there are none.
func newLeasedOut(holds map[string]reentrant.LeasedHold) map[string]leasedOut {
	if len(holds) == 0 {
		return nil
	}
	out := make(map[string]leasedOut, len(holds))
	for owner, h := range holds {
		out[owner] = leasedOut{Count: h.Count, TTLms: ttlMillis(h.TTL)}
	}
	return out
}

// permitsFlag adds --permits to fs: the capacity of the semaphore of the
// names read, which sets the quorum its holders need.
func permitsFlag(fs *flag.FlagSet) *int {
	return fs.Int("permits", 0, "a semaphore has `K` permits (its holders need lock.SemaphoreQuorum(nodes, K) nodes); default: as its holders gave it")
}

// checkPermits returns a usage error for a negative --permits.
func checkPermits(permits int) error {
	if permits < 0 {
		return usagef("--permits %d is negative", permits)
	}
	return nil
}

// newLockView builds the view of the name from Inspect's states: quorum is
// the lock's; permits, when not 0, the capacity of its semaphore, which sets
// the quorum the semaphore's holders need. When 0, the capacity is the one
// the holders gave (the largest recorded, should nodes differ: the largest
// quorum), or 1 (a majority) when none is recorded.
func newLockView(name string, states []lock.NodeState, quorum, permits int) lockView {
	v := lockView{Name: name, Quorum: quorum, Capacity: int64(permits), Nodes: make([]nodeOut, len(states))}
	for i, s := range states {
		n := nodeOut{Node: s.Node, Addr: s.Addr}
		if s.Err != nil {
			n.Error = s.Err.Error()
		} else {
			v.Answered++
			n.Holders, n.Fence = s.Info.Holders, s.Info.Fence
			if len(s.Info.Holders) > 0 {
				ms := ttlMillis(s.Info.TTL)
				n.TTLms = &ms
			}
			n.Readers, n.Permits = newLeasedOut(s.Info.Readers), newLeasedOut(s.Info.Permits)
			for _, w := range s.Info.Waiters {
				n.Queue = append(n.Queue, newQueuedOut(w))
			}
			n.Queued = s.Info.Queued
			if s.Info.WriterWaiting.Owner != "" {
				w := newQueuedOut(s.Info.WriterWaiting)
				n.Writer = &w
			}
			if permits == 0 {
				v.Capacity = max(v.Capacity, s.Info.Capacity)
			}
		}
		v.Nodes[i] = n
		if s.TieBreaker {
			v.TieBreaker = s.Node
		}
	}
	for _, w := range lock.Waiters(states, quorum) {
		v.Waiting = append(v.Waiting, waiterOut{Owner: w.Owner, Since: w.Since.UTC(), Nodes: w.Nodes})
	}
	if h, ok := lock.QuorumHolder(states, quorum); ok {
		v.Held = true
		v.Holder = newHolderOut(h)
	}
	for _, r := range lock.QuorumReaders(states, quorum) {
		v.Readers = append(v.Readers, *newHolderOut(r))
	}
	v.PermitQuorum = lock.SemaphoreQuorum(len(states), int(max(v.Capacity, 1)))
	for _, p := range lock.QuorumPermits(states, v.PermitQuorum) {
		v.Permits = append(v.Permits, *newHolderOut(p))
	}
	return v
}

// newHolderOut is h as the output gives it.
func newHolderOut(h lock.Holder) *holderOut {
	return &holderOut{Owner: h.Owner, Count: h.Count, TTLms: ttlMillis(h.TTL), Nodes: h.Nodes}
}

// readHeld reports whether readers read the lock on a quorum.
func (v lockView) readHeld() bool { return len(v.Readers) > 0 }

// permitsHeld reports whether holders hold the semaphore's permits on its
// quorum.
func (v lockView) permitsHeld() bool { return len(v.Permits) > 0 }

// listed reports whether a quorum holds the name: its lock, read or
// written, or its semaphore's permits.
func (v lockView) listed() bool { return v.Held || v.readHeld() || v.permitsHeld() }

// known reports whether enough nodes answered for the quorum's view to be
// known.
func (v lockView) known() bool { return v.Answered >= v.Quorum }

// keyNodes is how many nodes have the lock's key, its readers or the
// semaphore's permits, whoever holds them there.
func (v lockView) keyNodes() int {
	return v.nodesWith(func(n nodeOut) bool { return lockOn(n) || permitsOn(n) })
}

// lockOn reports whether node n has the lock's key or its readers.
func lockOn(n nodeOut) bool { return len(n.Holders) > 0 || len(n.Readers) > 0 }

// permitsOn reports whether node n has holders of the semaphore.
func permitsOn(n nodeOut) bool { return len(n.Permits) > 0 }

// nodesWith is how many nodes have what has says.
func (v lockView) nodesWith(has func(nodeOut) bool) int {
	n := 0
	for _, node := range v.Nodes {
		if has(node) {
			n++
		}
	}
	return n
}

// summary is a line on the lock as a quorum sees it, one on the semaphore
// of the same name when any node has its permits (that line alone when no
// node has the lock), then the lines on who waits (see waitSummary).
func (v lockView) summary() string {
	if !v.known() {
		return fmt.Sprintf("lock %q: unknown: %d of %d nodes answered, %d needed", v.Name, v.Answered, len(v.Nodes), v.Quorum)
	}
	var lines []string
	permitNodes := v.nodesWith(permitsOn)
	if permitNodes == 0 || v.nodesWith(lockOn) > 0 {
		lines = append(lines, v.lockSummary())
	}
	if permitNodes > 0 {
		lines = append(lines, v.semaphoreSummary(permitNodes))
	}
	return strings.Join(append(lines, v.waitSummary()...), "\n")
}

// waitSummary is a line on the owners in the lock's wait queues and one on
// an RWMutex's waiting writer, each only when there is one.
func (v lockView) waitSummary() []string {
	var lines []string
	unread := int64(0) // entries past those a node's read returned
	for _, n := range v.Nodes {
		unread = max(unread, n.Queued-int64(len(n.Queue)))
	}
	if len(v.Waiting) > 0 || unread > 0 {
		var line string
		if len(v.Waiting) > 0 {
			waiters := make([]string, len(v.Waiting))
			for i, w := range v.Waiting {
				waiters[i] = fmt.Sprintf("%s (since %s, queued on %s)", w.Owner, w.Since.Format(sinceLayout), plural(int64(w.Nodes), "node"))
			}
			line = fmt.Sprintf("waiting: %s, in the order the lock goes to them: %s", plural(int64(len(v.Waiting)), "owner"), strings.Join(waiters, ", "))
			if unread > 0 {
				line += fmt.Sprintf(", and at least %d more", unread)
			}
		} else {
			// A fair queue whose first entries read had all ended (the next
			// release drops them) still counts the live ones after them.
			line = fmt.Sprintf("waiting: at least %s, none among the queue's first entries read", plural(unread, "owner"))
		}
		if len(v.Nodes) > 1 {
			line += fmt.Sprintf("; the queue is on the tie-breaker, node %d", v.TieBreaker)
		}
		lines = append(lines, line)
	}
	marks := make(map[string]int64)
	for _, n := range v.Nodes {
		if n.Writer != nil && !v.holds(n.Writer.Owner) {
			marks[n.Writer.Owner]++
		}
	}
	for _, owner := range slices.Sorted(maps.Keys(marks)) {
		lines = append(lines, fmt.Sprintf("writer waiting: %s (marked on %s of %d; new readers wait behind it)", owner, plural(marks[owner], "node"), len(v.Nodes)))
	}
	return lines
}

// sinceLayout is how a waiter's start shows in a summary (in UTC).
const sinceLayout = "2006-01-02 15:04:05.000 UTC"

// semaphoreSummary is the line on the semaphore of the lock's name, whose
// permits permitNodes nodes have.
func (v lockView) semaphoreSummary(permitNodes int) string {
	all := len(v.Nodes)
	if v.Answered < v.PermitQuorum {
		// No holder can be seen on its quorum: whether one holds is unknown.
		return fmt.Sprintf("semaphore %q%s: unknown: %d of %d nodes answered, %d needed",
			v.Name, v.capacityNote(), v.Answered, all, v.PermitQuorum)
	}
	if !v.permitsHeld() {
		return fmt.Sprintf("semaphore %q%s: not held: permits present on %d of %d nodes, fewer than the quorum of %d",
			v.Name, v.capacityNote(), permitNodes, all, v.PermitQuorum)
	}
	holders := make([]string, len(v.Permits))
	total := int64(0)
	for i, p := range v.Permits {
		holders[i] = fmt.Sprintf("%s (%s, TTL %s, %d nodes)", p.Owner, plural(p.Count, "permit"), formatTTL(p.TTLms), p.Nodes)
		total += p.Count
	}
	return fmt.Sprintf("semaphore %q%s: %s held by %s, each on a quorum of %d of %d nodes",
		v.Name, v.capacityNote(), plural(total, "permit"), strings.Join(holders, ", "), v.PermitQuorum, all)
}

// capacityNote names the semaphore's capacity, when known, for a summary.
func (v lockView) capacityNote() string {
	if v.Capacity == 0 {
		return ""
	}
	return " (capacity " + strconv.FormatInt(v.Capacity, 10) + ")"
}

// plural is n and the noun, with an s unless n is 1.
func plural(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.FormatInt(n, 10) + " " + noun + "s"
}

// lockSummary is the line on the lock as a quorum sees it.
func (v lockView) lockSummary() string {
	all, present := len(v.Nodes), v.nodesWith(lockOn)
	switch {
	case v.Held:
		h := v.Holder
		return fmt.Sprintf("lock %q: held by %s (count %d, TTL %s) on %d of %d nodes (quorum %d)",
			v.Name, h.Owner, h.Count, formatTTL(h.TTLms), h.Nodes, all, v.Quorum)
	case v.readHeld():
		readers := make([]string, len(v.Readers))
		for i, r := range v.Readers {
			readers[i] = fmt.Sprintf("%s (count %d, TTL %s, %d nodes)", r.Owner, r.Count, formatTTL(r.TTLms), r.Nodes)
		}
		return fmt.Sprintf("lock %q: read by %s, each on a quorum of %d of %d nodes", v.Name, strings.Join(readers, ", "), v.Quorum, all)
	case present > 0:
		return fmt.Sprintf("lock %q: not held: present on %d of %d nodes, fewer than the quorum of %d", v.Name, present, all, v.Quorum)
	}
	return fmt.Sprintf("lock %q: free on all %d nodes that answered (of %d)", v.Name, v.Answered, all)
}

// writeNodes writes the per-node table of v: one row per holder, per
// reader (marked "(read)", with its own lease), per semaphore holder
// (marked "(permits)", its permits as the count, with its own lease), for
// a waiting writer (marked "(writer waits)", with its mark's TTL) and per
// owner in the wait queue (marked "(waits, 1st)" and on in its order, with
// the TTL of its entry) on each node, a dash for a free node, the error
// for an unreadable one. An entry or a mark of the quorum's holder, which
// waits no more, is marked "(holds; left in queue)" or "(holds; mark
// left)".
func (v lockView) writeNodes(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tADDRESS\tHOLDER\tCOUNT\tTTL\tFENCE")
	for _, n := range v.Nodes {
		switch {
		case n.Error != "":
			// The last cell: a long error does not widen the holder column.
			fmt.Fprintf(tw, "%d\t%s\tunreachable: %s\n", n.Node, n.Addr, n.Error)
		case len(n.Holders) == 0 && len(n.Readers) == 0 && len(n.Permits) == 0 && len(n.Queue) == 0 && n.Writer == nil:
			fmt.Fprintf(tw, "%d\t%s\t-\t-\t-\t%d\n", n.Node, n.Addr, n.Fence)
		default:
			for _, owner := range slices.Sorted(maps.Keys(n.Holders)) {
				fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\t%d\n", n.Node, n.Addr, owner, n.Holders[owner], formatTTL(*n.TTLms), n.Fence)
			}
			writeLeased(tw, n, n.Readers, "read")
			writeLeased(tw, n, n.Permits, "permits")
		}
		if n.Writer != nil {
			what := "writer waits"
			if v.holds(n.Writer.Owner) {
				what = "holds; mark left"
			}
			fmt.Fprintf(tw, "%d\t%s\t%s (%s)\t-\t%s\t%d\n", n.Node, n.Addr, n.Writer.Owner, what, formatTTL(n.Writer.TTLms), n.Fence)
		}
		waiting := 0
		for _, w := range n.Queue {
			place := "holds; left in queue"
			if !v.holds(w.Owner) {
				waiting++
				place = "waits, " + ordinal(waiting)
			}
			fmt.Fprintf(tw, "%d\t%s\t%s (%s)\t-\t%s\t%d\n", n.Node, n.Addr, w.Owner, place, formatTTL(w.TTLms), n.Fence)
		}
	}
	return tw.Flush()
}

// holds reports whether owner holds the lock on a quorum: an entry of its
// left in a node's queue, or its writer's mark, is no longer waiting (it
// stays until the owner's hold is written there, or its Unlock).
func (v lockView) holds(owner string) bool { return v.Holder != nil && v.Holder.Owner == owner }

// ordinal is n as a place in a line: 1st, 2nd, 3rd, 4th, ... 11th, 21st.
func ordinal(n int) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return strconv.Itoa(n) + suffix
}

// writeLeased writes a row of node n's table for each of holds, the
// owner marked with kind.
func writeLeased(w io.Writer, n nodeOut, holds map[string]leasedOut, kind string) {
	for _, owner := range slices.Sorted(maps.Keys(holds)) {
		h := holds[owner]
		fmt.Fprintf(w, "%d\t%s\t%s (%s)\t%d\t%s\t%d\n", n.Node, n.Addr, owner, kind, h.Count, formatTTL(h.TTLms), n.Fence)
	}
}

// ttlMillis is a TTL in milliseconds as the JSON output gives it: -1 for a
// key that never expires.
func ttlMillis(d time.Duration) int64 {
	if d == lock.NoExpiry {
		return -1
	}
	return d.Milliseconds()
}

// formatTTL writes a TTL in milliseconds for a person: to the millisecond
// below a second, to a tenth of a second below a minute, to the second
// above; "never" for -1.
func formatTTL(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	switch {
	case ms == -1:
		return "never"
	case ms < 0:
		return "-"
	case d < time.Second:
		return strconv.FormatInt(ms, 10) + "ms"
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// writeJSON writes v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
