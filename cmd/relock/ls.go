package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/relock-go/relock/lock"
)

var lsCommand = &command{
	name:         "ls",
	args:         "[PATTERN]",
	summary:      "list the locks and semaphores held now",
	minArgs:      0,
	maxArgs:      1,
	verbatimFrom: -1,
	setup:        setupLs,
	help: `
Lists the locks held on a quorum of the nodes now, whose names match the
glob PATTERN (as Redis's SCAN MATCH: * ? [abc] and \ to escape; default
every lock): name, holder, hold count, remaining lease (TTL), and on how
many nodes the holder has it; an RWMutex's readers on a quorum each get a
row, marked (read), with their own lease, and so do a Semaphore's holders,
marked (permits), with their permits as the count (on the quorum their
semaphore's capacity sets, as inspect says). Each node is read with SCAN, at most --limit locks from each; a
node with more is reported and the list is incomplete.
Every lock found is then read on every node, as inspect reads it. Exit
status 4 when fewer than a quorum of the nodes could be read.

With --json: an object with locks (each as inspect --json shows it),
truncated, and unreachable (node, addr, error).`,
	examples: `
  relock ls
  relock ls 'orders:*'
  relock ls --all --json | jq -r '.locks[] | select(.held | not) | .name'`,
}

// inspectors is how many locks ls reads at once.
const inspectors = 8

// lsOut is ls's --json output.
type lsOut struct {
	Locks       []lockView `json:"locks"`
	Truncated   bool       `json:"truncated"`
	Unreachable []nodeErr  `json:"unreachable"`
}

// nodeErr is a node that could not be read.
type nodeErr struct {
	Node  int    `json:"node"`
	Addr  string `json:"addr"`
	Error string `json:"error"`
}

func setupLs(fs *flag.FlagSet) action {
	asJSON := fs.Bool("json", false, "write JSON instead of a table")
	all := fs.Bool("all", false, "also list locks present on fewer nodes than a quorum (an attempt under way, or what a failure left until its lease ends)")
	limit := fs.Int("limit", lock.DefaultListLimit, "read at most `N` locks from each node")
	permits := permitsFlag(fs)
	return func(ctx context.Context, e *env, g *globals, args []string) error {
		if *limit <= 0 {
			return usagef("--limit %d is not positive", *limit)
		}
		if err := checkPermits(*permits); err != nil {
			return err
		}
		pattern := ""
		if len(args) > 0 {
			pattern = args[0]
		}
		c, closeAll, err := g.connect(lock.Options{})
		if err != nil {
			return err
		}
		defer closeAll()
		out, err := list(ctx, c, pattern, *limit, *permits, *all)
		if err != nil && out == nil {
			return err
		}
		if *asJSON {
			if werr := writeJSON(e.stdout, out); werr != nil {
				return werr
			}
		} else if werr := out.writeTable(e.stdout); werr != nil {
			return werr
		}
		for _, n := range out.Unreachable {
			fmt.Fprintf(e.stderr, "relock ls: node %d (%s) could not be read: %s\n", n.Node, n.Addr, n.Error)
		}
		if out.Truncated {
			fmt.Fprintf(e.stderr, "relock ls: a node holds more than %d matching locks: the list is incomplete (--limit)\n", *limit)
		}
		var qe *lock.QuorumError
		if errors.As(err, &qe) {
			return exitWith(exitNodes, "only %d of %d nodes could be read, %d needed: locks may be missing",
				qe.Agreed, qe.Agreed+len(qe.Nodes), qe.Needed)
		}
		return err
	}
}

// list finds the locks matching pattern and reads each on every node, the
// semaphores among them as of permits permits (0: as recorded). It returns what it found
// with a *lock.QuorumError when fewer than a quorum of the nodes could be
// listed, and no output with any other error.
func list(ctx context.Context, c *lock.Client, pattern string, limit, permits int, all bool) (*lsOut, error) {
	found, err := c.List(ctx, pattern, limit)
	var qe *lock.QuorumError
	if err != nil && !errors.As(err, &qe) {
		return nil, err
	}
	out := &lsOut{Locks: []lockView{}, Truncated: found.Truncated, Unreachable: []nodeErr{}}
	for _, f := range found.Failed {
		out.Unreachable = append(out.Unreachable, nodeErr{Node: f.Node, Addr: f.Addr, Error: f.Err.Error()})
	}
	views, ierr := inspectAll(ctx, c, found.Names, permits)
	if ierr != nil {
		return nil, ierr
	}
	for _, v := range views {
		if v.listed() || all && v.keyNodes() > 0 {
			out.Locks = append(out.Locks, v)
		}
	}
	return out, err
}

// inspectAll reads each of names on every node, a few at a time, and
// returns their views in the order of names (a semaphore's as of permits
// permits; 0: as recorded).
func inspectAll(ctx context.Context, c *lock.Client, names []string, permits int) ([]lockView, error) {
	_, quorum := c.Nodes()
	views := make([]lockView, len(names))
	errs := make([]error, len(names))
	turns := make(chan struct{}, inspectors)
	var wg sync.WaitGroup
	for i, name := range names {
		turns <- struct{}{}
		wg.Go(func() {
			defer func() { <-turns }()
			states, err := c.Inspect(ctx, name)
			views[i], errs[i] = newLockView(name, states, quorum, permits), err
		})
	}
	wg.Wait()
	return views, errors.Join(errs...)
}

// writeTable writes the locks as a table: name, holder, count, TTL, and
// the nodes that have the holder's hold (or the lock's key, for a lock not
// held on a quorum); a row for each reader and each semaphore holder on a
// quorum too.
func (o *lsOut) writeTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tHOLDER\tCOUNT\tTTL\tNODES")
	for _, v := range o.Locks {
		if h := v.Holder; h != nil {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d/%d\n", displayName(v.Name), h.Owner, h.Count, formatTTL(h.TTLms), h.Nodes, len(v.Nodes))
		}
		for _, r := range v.Readers {
			fmt.Fprintf(tw, "%s\t%s (read)\t%d\t%s\t%d/%d\n", displayName(v.Name), r.Owner, r.Count, formatTTL(r.TTLms), r.Nodes, len(v.Nodes))
		}
		for _, p := range v.Permits {
			fmt.Fprintf(tw, "%s\t%s (permits)\t%d\t%s\t%d/%d\n", displayName(v.Name), p.Owner, p.Count, formatTTL(p.TTLms), p.Nodes, len(v.Nodes))
		}
		if v.listed() {
			continue
		}
		fmt.Fprintf(tw, "%s\t(no quorum)\t-\t-\t%d/%d\n", displayName(v.Name), v.keyNodes(), len(v.Nodes))
	}
	return tw.Flush()
}

// displayName is a lock name as a table cell: as it is, or quoted in Go's
// syntax when it holds spaces, quotes or characters that are not printable.
func displayName(name string) string {
	if q := strconv.Quote(name); q[1:len(q)-1] != name || strings.ContainsAny(name, " '") {
		return q
	}
	return name
}
