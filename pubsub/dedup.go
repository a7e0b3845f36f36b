package pubsub

import "time"

// dedupLimit caps how many releases a dedup remembers at once, so a flood of
// distinct releases cannot grow it without bound within one window.
const dedupLimit = 1 << 14

// dedup recognises the copies of one release arriving from different nodes.
// It remembers each (channel, payload) for a window after its first copy, and
// forgets it sooner once every node's copy has arrived. It is not safe for
// concurrent use; the Broker calls it under its lock.
type dedup struct {
	window time.Duration
	copies int // copies of one release: the number of nodes
	limit  int

	seen map[dedupKey]*dedupEntry
	// order lists entries oldest first. Insertion order is expiry order, so
	// expiring is popping from the front.
	order []dedupItem
}

type dedupKey struct{ channel, payload string }

type dedupEntry struct {
	expires time.Time
	copies  int
}

type dedupItem struct {
	key   dedupKey
	entry *dedupEntry
}

func newDedup(window time.Duration, copies int) *dedup {
	return &dedup{
		window: window,
		copies: copies,
		limit:  dedupLimit,
		seen:   make(map[dedupKey]*dedupEntry),
	}
}

// first reports whether a message is the first copy of its release, that is
// whether it must be dispatched. An empty payload carries no release id, so
// every such message counts.
func (d *dedup) first(channel, payload string, now time.Time) bool {
	d.expire(now)
	if payload == "" {
		return true
	}
	key := dedupKey{channel, payload}
	if e, ok := d.seen[key]; ok {
		e.copies++
		if e.copies >= d.copies {
			delete(d.seen, key) // every node's copy is in: nothing more to match
		}
		return false
	}
	if d.copies <= 1 {
		return true // a single node sends a single copy
	}
	e := &dedupEntry{expires: now.Add(d.window), copies: 1}
	d.seen[key] = e
	d.order = append(d.order, dedupItem{key, e})
	for len(d.order) > d.limit {
		d.pop()
	}
	return true
}

// expire forgets the releases whose window has passed.
func (d *dedup) expire(now time.Time) {
	for len(d.order) > 0 && !now.Before(d.order[0].entry.expires) {
		d.pop()
	}
}

// pop forgets the oldest entry, unless it already left the map (all copies
// arrived) and a newer release of the same key took its place.
func (d *dedup) pop() {
	it := d.order[0]
	d.order[0] = dedupItem{}
	d.order = d.order[1:]
	if d.seen[it.key] == it.entry {
		delete(d.seen, it.key)
	}
}

// len returns how many releases are remembered.
func (d *dedup) len() int { return len(d.seen) }
