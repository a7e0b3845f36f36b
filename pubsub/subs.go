package pubsub

import (
	"strconv"
	"strings"
)

// barrierPrefix starts the payload of the PINGs a node sends as barriers.
const barrierPrefix = "relock-pubsub-barrier:"

// subTable is one node's record of the channels the Broker wants subscribed
// there and of which the node has confirmed. It does no I/O and is not safe
// for concurrent use; its node guards it.
//
// A subscription is confirmed with a barrier: after SUBSCRIBE, the node's
// writer sends PING with a sequence number, and the answer to that PING proves
// the server executed every command written before it. The SUBSCRIBE reply
// itself cannot prove as much: after an unsubscribe and resubscribe of the
// same channel, or after go-redis redialled and resubscribed on its own, it
// is not clear which command a "subscribe" reply answers.
type subTable struct {
	want map[string]*subState
	seq  uint64 // the last barrier number handed out
	ping bool   // a health PING was asked for
}

type subState struct {
	ready     chan struct{} // closed when confirmed
	confirmed bool
	barrier   uint64 // the barrier whose answer confirms this state; 0: none sent
}

func newSubTable() *subTable {
	return &subTable{want: make(map[string]*subState)}
}

// add records that channel is wanted and returns the channel closed once the
// node confirms it; added reports whether it was not wanted before.
func (t *subTable) add(channel string) (ready <-chan struct{}, added bool) {
	if s, ok := t.want[channel]; ok {
		return s.ready, false
	}
	s := &subState{ready: make(chan struct{})}
	t.want[channel] = s
	return s.ready, true
}

// remove records that channel is no longer wanted.
func (t *subTable) remove(channel string) {
	delete(t.want, channel)
}

// diff compares the wanted channels with those subscribed on the connection
// (active) and returns what to subscribe and what to unsubscribe.
func (t *subTable) diff(active map[string]bool) (subscribe, unsubscribe []string) {
	for ch := range t.want {
		if !active[ch] {
			subscribe = append(subscribe, ch)
		}
	}
	for ch := range active {
		if _, ok := t.want[ch]; !ok {
			unsubscribe = append(unsubscribe, ch)
		}
	}
	return subscribe, unsubscribe
}

// nextBarrier hands a new barrier number to every unconfirmed channel already
// subscribed on the connection that is not yet waiting for one. ok reports
// whether a PING carrying seq must be sent: a channel needs it, or a health
// check asked for one.
func (t *subTable) nextBarrier(active map[string]bool) (seq uint64, ok bool) {
	ok, t.ping = t.ping, false
	seq = t.seq + 1
	for ch, s := range t.want {
		if !s.confirmed && s.barrier == 0 && active[ch] {
			s.barrier = seq
			ok = true
		}
	}
	if ok {
		t.seq = seq
	}
	return seq, ok
}

// barrierFailed forgets barrier seq, whose PING could not be written, so the
// next barrier covers its channels again.
func (t *subTable) barrierFailed(seq uint64) {
	for _, s := range t.want {
		if s.barrier == seq {
			s.barrier = 0
		}
	}
}

// confirm marks confirmed every channel waiting for barrier seq or an earlier
// one: replies come in order, so the answer to PING seq proves all earlier
// commands ran. It returns the channels it confirmed.
func (t *subTable) confirm(seq uint64) []string {
	var confirmed []string
	for ch, s := range t.want {
		if !s.confirmed && s.barrier != 0 && s.barrier <= seq {
			s.confirmed = true
			close(s.ready)
			confirmed = append(confirmed, ch)
		}
	}
	return confirmed
}

// invalidate records that the connection broke: nothing is known to be
// subscribed any more, and barriers in flight will never be answered.
func (t *subTable) invalidate() {
	for _, s := range t.want {
		if s.confirmed {
			s.confirmed = false
			s.ready = make(chan struct{})
		}
		s.barrier = 0
	}
}

// barrierPayload returns the PING payload of barrier seq.
func barrierPayload(seq uint64) string {
	return barrierPrefix + strconv.FormatUint(seq, 10)
}

// parseBarrier returns the barrier number a PONG payload carries, if any.
func parseBarrier(payload string) (uint64, bool) {
	rest, ok := strings.CutPrefix(payload, barrierPrefix)
	if !ok {
		return 0, false
	}
	seq, err := strconv.ParseUint(rest, 10, 64)
	return seq, err == nil
}
