package lock

import (
	"sync/atomic"

	"github.com/relock-go/relock/pubsub"
)

// Stats is a snapshot of a Client's activity. Attempts, Acquired, WokenByPub,
// WokenByTTL, Renewals, Losses and FilledIn are counters that only grow from New on;
// HeldNow and Sleeping are gauges of this moment, and so are
// Subscription.Channels and Subscription.Waiters (the other Subscription
// fields are counters).
type Stats struct {
	Attempts     uint64 // acquire attempts sent to the nodes
	Acquired     uint64 // attempts that won the lock (first holds and re-entries)
	WokenByPub   uint64 // waits ended by a release message (or a reconnect, or a late subscription confirmation)
	WokenByTTL   uint64 // waits ended by the holder's lease running out, or a retry delay
	Renewals     uint64 // locks renewed by the watchdog
	Losses       uint64 // holds reported lost
	FilledIn     uint64 // nodes a new hold was written on after its acquisition, refused there by a release still on its way
	HeldNow      int    // handles holding a lock right now
	Sleeping     int    // Lock calls asleep right now, waiting for a release
	Subscription pubsub.Stats
}

// counters are the Client's live counters behind Stats.
type counters struct {
	attempts, acquired, wokenByPub, wokenByTTL, renewals, losses, filledIn atomic.Uint64
	sleeping                                                               atomic.Int64
}

// Stats returns a snapshot of the Client's counters.
func (c *Client) Stats() Stats {
	c.mu.Lock()
	held := len(c.held)
	c.mu.Unlock()
	return Stats{
		Attempts:     c.stats.attempts.Load(),
		Acquired:     c.stats.acquired.Load(),
		WokenByPub:   c.stats.wokenByPub.Load(),
		WokenByTTL:   c.stats.wokenByTTL.Load(),
		Renewals:     c.stats.renewals.Load(),
		Losses:       c.stats.losses.Load(),
		FilledIn:     c.stats.filledIn.Load(),
		HeldNow:      held,
		Sleeping:     int(c.stats.sleeping.Load()),
		Subscription: c.broker.Stats(),
	}
}
