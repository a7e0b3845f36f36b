package pubsub

import "time"

// dedupLimit caps how many releases a dedup remembers at once, so a flood of
// distinct releases cannot grow it without bound within one window.
const dedupLimit = 1 << 14

// dedup recognises the copies of one release arriving from different nodes,
// and decides when the release is due to wake a waiter: when `need` copies
// are in (a quorum of the nodes have released, so a woken waiter's attempt
// can win instead of racing the rest of the release), or when the Broker's
// grace timer for its first copy fires. It remembers each (channel, payload)
// for a window after its first copy, and forgets it sooner once every node's
// copy has arrived. It is not safe for concurrent use; the Broker calls it
// under its lock.
type dedup struct {
	window time.Duration
	copies int // copies of one release: the number of nodes
	need   int // copies that make a release due
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
	need    int  // copies that make it due
	due     bool // the release has woken (or is waking) a waiter
}

type dedupItem struct {
	key   dedupKey
	entry *dedupEntry
}

func newDedup(window time.Duration, copies, need int) *dedup {
	need = min(max(need, 1), max(copies, 1))
	return &dedup{
		window: window,
		copies: copies,
		need:   need,
		limit:  dedupLimit,
		seen:   make(map[dedupKey]*dedupEntry),
	}
}

// observe records a message. It returns wake when the message makes its
// release due now. It returns pending, the release's entry, when the message
// is the first copy of a release that needs more copies: the caller then
// arms a grace timer and calls graceUp(pending) when it fires, so that a
// release whose other copies never come (a node's subscription is down)
// still wakes a waiter. An empty payload carries no release id, so every
// such message is due at once. need, when positive, is how many copies make
// this message due instead of the dedup's own number (a message only one
// node sends is due at its first copy).
func (d *dedup) observe(channel, payload string, need int, now time.Time) (wake bool, pending *dedupEntry) {
	d.expire(now)
	if payload == "" {
		return true, nil
	}
	key := dedupKey{channel, payload}
	if e, ok := d.seen[key]; ok {
		e.copies++
		if e.copies >= d.copies {
			delete(d.seen, key) // every node's copy is in: nothing more to match
		}
		return d.makeDue(e), nil
	}
	if d.copies <= 1 {
		return true, nil // a single node sends a single copy
	}
	if need <= 0 {
		need = d.need
	}
	e := &dedupEntry{expires: now.Add(d.window), copies: 1, need: min(need, d.copies)}
	d.seen[key] = e
	d.order = append(d.order, dedupItem{key, e})
	for len(d.order) > d.limit {
		d.pop()
	}
	if d.makeDue(e) {
		return true, nil
	}
	return false, e
}

// makeDue marks e due once enough copies are in, and reports whether this
// call did.
func (d *dedup) makeDue(e *dedupEntry) bool {
	if e.due || e.copies < e.need {
		return false
	}
	e.due = true
	return true
}

// graceUp makes e due when its grace time ran out before enough copies
// came, and reports whether this call did.
func (d *dedup) graceUp(e *dedupEntry) bool {
	if e.due {
		return false
	}
	e.due = true
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

// handOffMark is the key under which a dedup remembers that a hand-off of
// release id was seen on channel (see message.go): no payload begins with
// a NUL byte.
func handOffMark(channel, id string) dedupKey { return dedupKey{channel, "\x00hand-off " + id} }

// noteHandOff remembers, for the dedup window, that a hand-off of release
// id arrived on channel.
func (d *dedup) noteHandOff(channel, id string, now time.Time) {
	d.expire(now)
	key := handOffMark(channel, id)
	if _, ok := d.seen[key]; ok {
		return
	}
	e := &dedupEntry{expires: now.Add(d.window), due: true}
	d.seen[key] = e
	d.order = append(d.order, dedupItem{key, e})
}

// sawHandOff reports whether a hand-off of release id arrived on channel
// within the dedup window.
func (d *dedup) sawHandOff(channel, id string) bool {
	_, ok := d.seen[handOffMark(channel, id)]
	return ok
}
