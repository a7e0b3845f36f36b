// Package pubsub lets many local waiters sleep on Redis release channels
// through one shared Pub/Sub connection per Redis node.
//
// A Broker serves a fixed set of independent Redis nodes. Each node gets a
// single Pub/Sub connection, opened on the first Subscribe and kept until
// Broker.Close, carrying every channel any local waiter waits on. Channels are
// reference counted: the first waiter of a channel subscribes it on every node,
// the last one to leave unsubscribes it everywhere.
//
// A release of a lock is published once on each node that holds it, with the
// same payload (a release id) on all of them. The Broker counts those copies
// once and hands each release to exactly one waiter: the oldest one that has
// not been woken yet. Waiters therefore wake one at a time instead of all
// racing for a lock only one of them can take.
//
// With Options.Process set, each channel is subscribed together with this
// process's personal channel (PersonalChannel), where releases send what
// concerns this process's owners alone, such as a hand-off naming one of
// them; messages there count as the channel's own.
//
// Messages can be lost while a connection is down. Whenever a node's
// connection breaks or comes back, every waiter is woken so that it retries
// instead of sleeping on a release it will never hear about; callers still
// bound every wait by the holder's remaining lease.
package pubsub
