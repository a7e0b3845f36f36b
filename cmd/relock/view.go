package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/relock-go/relock/lock"
)

// lockView is one lock as inspect and ls show it: the quorum's view and
// each node's. It is also their --json output.
type lockView struct {
	Name     string      `json:"name"`
	Quorum   int         `json:"quorum"`   // nodes that must agree: N/2+1
	Answered int         `json:"answered"` // nodes that could be read
	Held     bool        `json:"held"`     // one owner holds it on a quorum
	Holder   *holderOut  `json:"holder,omitempty"`
	Readers  []holderOut `json:"readers,omitempty"` // an RWMutex's readers on a quorum, each with its own lease
	Nodes    []nodeOut   `json:"nodes"`
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
	Holders map[string]int64     `json:"holders"`           // owner → hold count; null when unreadable
	TTLms   *int64               `json:"ttl_ms,omitempty"`  // the key's remaining lease; absent when free; -1: never expires
	Fence   int64                `json:"fence"`             // the node's fencing counter
	Readers map[string]readerOut `json:"readers,omitempty"` // an RWMutex's readers there: owner → read hold
	Error   string               `json:"error,omitempty"`   // why the node could not be read
}

// readerOut is one reader's hold on one node (reentrant.LeasedHold).
type readerOut struct {
	Count int64 `json:"count"`  // read hold count
	TTLms int64 `json:"ttl_ms"` // what is left of its own lease there
}

// newLockView builds the view of the lock name from Inspect's states.
func newLockView(name string, states []lock.NodeState, quorum int) lockView {
	v := lockView{Name: name, Quorum: quorum, Nodes: make([]nodeOut, len(states))}
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
			if len(s.Info.Readers) > 0 {
				n.Readers = make(map[string]readerOut, len(s.Info.Readers))
			}
			for owner, r := range s.Info.Readers {
				n.Readers[owner] = readerOut{Count: r.Count, TTLms: ttlMillis(r.TTL)}
			}
		}
		v.Nodes[i] = n
	}
	if h, ok := lock.QuorumHolder(states, quorum); ok {
		v.Held = true
		v.Holder = newHolderOut(h)
	}
	for _, r := range lock.QuorumReaders(states, quorum) {
		v.Readers = append(v.Readers, *newHolderOut(r))
	}
	return v
}

// newHolderOut is h as the output gives it.
func newHolderOut(h lock.Holder) *holderOut {
	return &holderOut{Owner: h.Owner, Count: h.Count, TTLms: ttlMillis(h.TTL), Nodes: h.Nodes}
}

// readHeld reports whether readers read the lock on a quorum.
func (v lockView) readHeld() bool { return len(v.Readers) > 0 }

// known reports whether enough nodes answered for the quorum's view to be
// known.
func (v lockView) known() bool { return v.Answered >= v.Quorum }

// keyNodes is how many nodes have the lock's key or its readers, whoever
// holds it there.
func (v lockView) keyNodes() int {
	n := 0
	for _, node := range v.Nodes {
		if len(node.Holders) > 0 || len(node.Readers) > 0 {
			n++
		}
	}
	return n
}

// summary is one line on the lock as a quorum sees it.
func (v lockView) summary() string {
	all := len(v.Nodes)
	switch {
	case !v.known():
		return fmt.Sprintf("lock %q: unknown: %d of %d nodes answered, %d needed", v.Name, v.Answered, all, v.Quorum)
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
	case v.keyNodes() > 0:
		return fmt.Sprintf("lock %q: not held: present on %d of %d nodes, fewer than the quorum of %d", v.Name, v.keyNodes(), all, v.Quorum)
	}
	return fmt.Sprintf("lock %q: free on all %d nodes that answered (of %d)", v.Name, v.Answered, all)
}

// writeNodes writes the per-node table of v: one row per holder and per
// reader (marked "(read)", with its own lease) on each node, a dash for a
// free node, the error for an unreadable one.
func (v lockView) writeNodes(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tADDRESS\tHOLDER\tCOUNT\tTTL\tFENCE")
	for _, n := range v.Nodes {
		switch {
		case n.Error != "":
			// The last cell: a long error does not widen the holder column.
			fmt.Fprintf(tw, "%d\t%s\tunreachable: %s\n", n.Node, n.Addr, n.Error)
		case len(n.Holders) == 0 && len(n.Readers) == 0:
			fmt.Fprintf(tw, "%d\t%s\t-\t-\t-\t%d\n", n.Node, n.Addr, n.Fence)
		default:
			for _, owner := range slices.Sorted(maps.Keys(n.Holders)) {
				fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\t%d\n", n.Node, n.Addr, owner, n.Holders[owner], formatTTL(*n.TTLms), n.Fence)
			}
			for _, owner := range slices.Sorted(maps.Keys(n.Readers)) {
				r := n.Readers[owner]
				fmt.Fprintf(tw, "%d\t%s\t%s (read)\t%d\t%s\t%d\n", n.Node, n.Addr, owner, r.Count, formatTTL(r.TTLms), n.Fence)
			}
		}
	}
	return tw.Flush()
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
