package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/relock-go/relock/lock"
)

var inspectCommand = &command{
	name:         "inspect",
	args:         "NAME",
	summary:      "show who holds the lock NAME (or its semaphore), on each node",
	minArgs:      1,
	maxArgs:      1,
	verbatimFrom: -1,
	setup:        setupInspect,
	help: `
Reads the lock NAME on every node, without changing it, and shows whether one
owner holds it on a quorum (N/2+1 nodes), or which readers of an RWMutex
read it on a quorum, then each node's view: the holders (CLIENTID:OWNERID)
and their hold counts, the remaining lease (TTL), the node's fencing
counter, and the nodes that could not be read. An RWMutex's readers are
marked (read), each with its own lease. The holders of the Semaphore of
the same name are shown too, marked (permits), each with its permits as
the count and its own lease: a semaphore of K permits needs
lock.SemaphoreQuorum(N, K) nodes, more than a majority when K > 1. K is
the capacity the holders gave, which the nodes record, unless --permits
gives it. Who waits is shown too: the owners in the lock's wait queue, in
the order the lock goes to them, each with when its Lock began to wait (by
its own clock) and, per node, how long its entry stays unless it asks
again; the queue is kept on the name's tie-breaker node (an attempt
refused on another node with its ticket registers its waiter there too). An RWMutex's waiting writer,
which new readers wait behind, is marked (writer waits). Exit status 4 when fewer than a quorum could be read:
the lock's state is then unknown.

With --json: an object with name, quorum, answered (nodes read), held,
holder (owner, count, ttl_ms, nodes; absent when not held), readers (the
same for each reader on a quorum; absent when none), capacity (K; 0
when unknown), permit_quorum, permits (the same for each semaphore holder on permit_quorum nodes, count
being its permits; absent when none), waiting (owner, since, nodes, in
the order the lock goes to them; absent when none), tie_breaker (the node
that keeps the queue) and nodes (node, addr, holders, ttl_ms,
fence, readers and permits: owner -> count and ttl_ms, queue: the first
100 waiters there as owner, since and ttl_ms, queued: how many wait there,
writer_waiting: owner and ttl_ms, error).
ttl_ms is -1 for a key that never expires, and absent on a node where the
lock is free.`,
	examples: `
  relock inspect nightly-report
  relock inspect --json nightly-report | jq -r '.holder.owner // "free"'
  relock inspect exports`,
}

func setupInspect(fs *flag.FlagSet) action {
	asJSON := fs.Bool("json", false, "write JSON instead of a table")
	permits := permitsFlag(fs)
	return func(ctx context.Context, e *env, g *globals, args []string) error {
		if err := checkPermits(*permits); err != nil {
			return err
		}
		c, closeAll, err := g.connect(lock.Options{})
		if err != nil {
			return err
		}
		defer closeAll()
		states, err := c.Inspect(ctx, args[0])
		if err != nil {
			return err
		}
		_, quorum := c.Nodes()
		v := newLockView(args[0], states, quorum, *permits)
		if *asJSON {
			err = writeJSON(e.stdout, v)
		} else {
			fmt.Fprintln(e.stdout, v.summary())
			err = v.writeNodes(e.stdout)
		}
		if err != nil {
			return err
		}
		if !v.known() {
			return exitWith(exitNodes, "only %d of %d nodes answered, %d needed: the lock's state is unknown", v.Answered, len(v.Nodes), quorum)
		}
		return nil
	}
}
