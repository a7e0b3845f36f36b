package pubsub

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/internal/backoff"
)

// newRedialBackoff spaces the reads after connection errors, so a node that
// is down is redialled about once a second rather than in a hot loop, and
// the nodes of many Clients do not redial in lockstep.
func newRedialBackoff() backoff.Backoff {
	return backoff.Backoff{First: 50 * time.Millisecond, Max: time.Second, Jitter: true}
}

// receiveLoop reads the node's connection until the node stops. It reads
// with ReceiveTimeout rather than go-redis's Channel so that errors reach it:
// messages may be lost while the connection is down, and the waiters must
// hear about that.
func (n *node) receiveLoop() {
	var (
		up      bool                 // the connection last worked
		redial  = newRedialBackoff() // started since the last error; reset once a read succeeds
		heard   = time.Now()         // the last reply or message, or the last redial
		probing bool                 // a health PING is out: silence now means a dead connection
	)
	for {
		if redial.Started() && !n.awaitChannels() {
			return
		}
		msg, err := n.receive(probing)
		if n.ctx.Err() != nil {
			return
		}
		switch {
		case err == nil:
			heard, probing = time.Now(), false
			if redial.Started() {
				redial.Reset()
				n.log.Info("relock/pubsub: connection restored")
				n.events.connectionChanged(n.index, false)
				// The break left every channel unconfirmed, and the
				// barrier the writer sent then failed with the node
				// down: one now confirms them. Without it a Subscribe to
				// a channel already wanted waited out SubscribeTimeout
				// until some other channel came or went.
				signal(n.kick)
			}
			up = true
			n.handle(msg)
		case !probing && isSilence(err):
			// Silence, which is normal. Past the health interval, ask for
			// a PING: its answer, or any message, proves the connection alive.
			if n.health > 0 && time.Since(heard) >= n.health {
				probing = true
				n.mu.Lock()
				n.subs.ping = true
				n.mu.Unlock()
				signal(n.kick)
			}
		default:
			probing = false
			n.connectionBroke(err, up)
			up = false
			if !n.sleep(redial.Next()) {
				return
			}
			heard = time.Now()
		}
	}
}

// receive reads one reply or message, waiting at most n.tick. go-redis
// redials and resubscribes inside this call when the connection is gone;
// ctx bounds that too, so that Close never waits long for a read.
func (n *node) receive(probing bool) (any, error) {
	if probing {
		// Without a timeout of its own the read takes ctx's deadline, and
		// go-redis treats missing that deadline as a dead connection: it
		// closes it, and the next call redials.
		ctx, cancel := context.WithTimeout(n.ctx, n.tick)
		defer cancel()
		return n.ps.ReceiveTimeout(ctx, 0)
	}
	// A read timeout keeps the connection.
	ctx, cancel := context.WithTimeout(n.ctx, commandTimeout)
	defer cancel()
	return n.ps.ReceiveTimeout(ctx, n.tick)
}

func (n *node) handle(msg any) {
	switch m := msg.(type) {
	case *redis.Message:
		// A message on a personal channel is its channel's own.
		channel, personal := m.Channel, false
		if n.personal != "" {
			channel, personal = strings.CutSuffix(channel, n.personal)
		}
		n.events.message(n.index, channel, m.Payload, personal)
	case *redis.Pong:
		if seq, ok := parseBarrier(m.Payload); ok {
			n.mu.Lock()
			confirmed := n.subs.confirm(seq)
			n.mu.Unlock()
			if len(confirmed) > 0 {
				n.events.confirmed(n.index, confirmed)
			}
		}
	case *redis.Subscription:
		// Confirmation comes from barriers; see subTable.
	}
}

// connectionBroke records a failed read: every subscription needs
// confirming again, and the waiters are told when a working connection is
// lost, since a message may have gone with it.
func (n *node) connectionBroke(err error, wasUp bool) {
	n.mu.Lock()
	n.subs.invalidate()
	n.mu.Unlock()
	signal(n.kick) // barriers again, which also redials
	if wasUp {
		n.log.Warn("relock/pubsub: connection lost", slog.Any("err", err))
		n.events.connectionChanged(n.index, true)
	} else {
		n.log.Debug("relock/pubsub: node unreachable", slog.Any("err", err))
	}
}

// awaitChannels returns once some channel is wanted, so a broken connection
// nobody needs is not redialled, or false when the node stops.
func (n *node) awaitChannels() bool {
	for {
		n.mu.Lock()
		wanted := len(n.subs.want) > 0
		n.mu.Unlock()
		if wanted {
			return true
		}
		select {
		case <-n.ctx.Done():
			return false
		case <-n.work:
		}
	}
}

// sleep waits d, or returns false when the node stops first.
func (n *node) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-n.ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// isSilence reports whether err is a read that timed out: nothing came,
// which is normal. A timeout of anything else is not: go-redis dials and
// resubscribes inside a receive when the connection is gone, and a dial or
// a write that times out there means the node is unreachable. Taken for
// silence, it left a node that was down from the start never marked
// unreachable, so its waiters were not woken when it came back, and may
// have missed a release (make test-defaults, TestPubSubSubscribeWithNodeDown).
func isSilence(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "read" && op.Timeout()
}
