package pubsub

import (
	"log/slog"
	"time"
)

// Defaults for the zero values of Options.
const (
	DefaultSubscribeTimeout    = 100 * time.Millisecond
	DefaultDedupWindow         = time.Second
	DefaultHealthCheckInterval = 3 * time.Second
	DefaultGrace               = 50 * time.Millisecond
	DefaultHandOffWatch        = 20 * time.Millisecond
	DefaultLinger              = time.Second
)

// Options configures a Broker. The zero value is ready to use.
type Options struct {
	// SubscribeTimeout bounds how long Subscribe waits for the nodes, in
	// parallel, to confirm a subscription. A node that has not confirmed by
	// then is not waited for: the waiter misses that node's messages until
	// it answers. Zero or negative means DefaultSubscribeTimeout.
	SubscribeTimeout time.Duration

	// DedupWindow is how long after the first copy of a release the copies
	// from the other nodes (same channel, same non-empty payload) are still
	// recognised as the same release. Zero or negative means
	// DefaultDedupWindow.
	DedupWindow time.Duration

	// HealthCheckInterval is how long a node's connection may stay silent
	// before the Broker PINGs it. A PING left unanswered for the same
	// interval, or a second if that is shorter, makes the Broker drop the
	// connection and redial, as after an error: a connection that silently
	// died (a partition, a NAT that forgot it) is noticed. Zero means
	// DefaultHealthCheckInterval; a negative value disables the check,
	// leaving dead peers to TCP.
	HealthCheckInterval time.Duration

	// Quorum is how many nodes' copies of one release must arrive before it
	// wakes a waiter: with the lock's quorum here, the woken waiter retries
	// once the release has landed on a majority, instead of racing the rest
	// of it and losing. Zero or one means the first copy wakes.
	Quorum int

	// Grace is how long after a release's first copy it wakes a waiter even
	// if fewer than Quorum copies came (a node's subscription was down, or
	// the release reached only some nodes). Zero or negative means
	// DefaultGrace.
	Grace time.Duration

	// HandOffWatch is how long after a hand-off (see message.go) the waiter
	// queued after its target is woken, unless it was woken in between: a
	// target that died or gave up has taken the lock's wake with it. Zero or
	// negative means DefaultHandOffWatch.
	HandOffWatch time.Duration

	// Linger is how long a channel stays subscribed after its last waiter
	// left, for the next one to find it confirmed: it is unsubscribed once
	// it has had no waiter for Linger. Zero means DefaultLinger; a negative
	// value unsubscribes at once.
	Linger time.Duration

	// Process is this process's id, the CLIENT part of its lock owners'
	// ids (CLIENT:ID). When set, every channel a waiter waits on is
	// subscribed together with its personal channel for this process
	// (PersonalChannel), on which releases send what only this process's
	// owners need: hand-offs naming them, copies for their keepers (see
	// message.go). Messages there count as the channel's own. Empty: the
	// channel alone.
	Process string

	// Logger receives connection events (lost, restored, failed commands).
	// Nil discards them.
	Logger *slog.Logger

	// OnConnection, when set, is called when a node's working connection
	// breaks (up false) and when it works again after failing (up true),
	// from the node's receive goroutine: it must not block.
	OnConnection func(node int, up bool)
}

// withDefaults returns o with every unset field replaced by its default.
func (o Options) withDefaults() Options {
	if o.SubscribeTimeout <= 0 {
		o.SubscribeTimeout = DefaultSubscribeTimeout
	}
	if o.Linger == 0 {
		o.Linger = DefaultLinger
	}
	if o.HandOffWatch <= 0 {
		o.HandOffWatch = DefaultHandOffWatch
	}
	if o.DedupWindow <= 0 {
		o.DedupWindow = DefaultDedupWindow
	}
	if o.HealthCheckInterval == 0 {
		o.HealthCheckInterval = DefaultHealthCheckInterval
	}
	if o.Grace <= 0 {
		o.Grace = DefaultGrace
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}
