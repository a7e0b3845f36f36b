package reentrant

import (
	"fmt"
	"strings"
)

// DefaultPrefix is the namespace of relock's keys when the caller sets none.
const DefaultPrefix = "relock"

// Key names the Redis keys of one lock. Every key shares the hash tag
// {NAME}, so in Redis Cluster all of them live in one slot.
type Key struct {
	// Name is the lock's name as the caller gave it.
	Name string
	// Lock is the hash holding owners and their hold counts; its PTTL is the lease.
	Lock string
	// Channel is the Pub/Sub channel announcing each full release.
	Channel string
	// Fence is the fencing counter (a string key) used when tokens are requested.
	Fence string
	// Tombstones is the common beginning of the owners' tombstone keys; see
	// Tombstone.
	Tombstones string
	// Queue is the lock's wait queue (a sorted set of waiting owners by
	// ticket), kept on the node that breaks ties; see Op.Ticket and Wake.
	Queue string
	// QueueDeadlines is, for a fair lock, the deadline of each owner in
	// Queue (a sorted set of owners by the node's clock in ms): an owner
	// that stops asking leaves the queue once its deadline passes.
	QueueDeadlines string
	// Leases is a semaphore's sorted set of holders by the end of their
	// leases (see NewSemaphoreKey); empty for a lock.
	Leases string
}

// Tombstone returns the key where a node remembers, for a short while, the
// sequence number of the operation that ended owner's hold, so that a
// delayed acquire of that owner cannot bring a released lock back (see
// lua/acquire.lua). It shares the lock's hash tag, so it lives in the same
// Cluster slot; the owner comes after the tag, so any bytes in it are safe.
// The lock hash itself stays free of it: a released lock still reads as
// free everywhere.
func (k Key) Tombstone(owner string) string { return k.Tombstones + owner }

// The keys of an RWMutex beside its write hold, which is the hash at Lock
// (so that every tool that reads a lock sees its writer): they share the
// lock's hash tag, and their names end in suffixes no other key of the lock
// uses. They are methods, not fields, so a Key stays as it was for the
// other kinds of lock. See lua/prelude.lua for what each holds.

// Readers returns the hash of an RWMutex's readers: each owner's read hold
// count and the sequence number of its last operation.
func (k Key) Readers() string { return k.Lock + ":readers" }

// ReadLeases returns the sorted set of an RWMutex's readers by the end of
// their leases, in the server's time: each reader's lease is its own.
func (k Key) ReadLeases() string { return k.Lock + ":readleases" }

// WriterWaiting returns the key of the mark a waiting writer of an RWMutex
// leaves: new readers of other owners wait behind it.
func (k Key) WriterWaiting() string { return k.Lock + ":writerwaiting" }

// ReadChannel returns the channel an RWMutex's waiting readers listen on:
// a writer's release, or a waiting writer that gave up, is announced there
// (the last reader's release goes to Channel, where writers wait).
func (k Key) ReadChannel() string { return k.Lock + ":readable" }

// Permits returns the hash of the semaphore of the same name as the lock:
// each holder's permits and the sequence number of its last operation (see
// NewSemaphoreKey, whose Key has it as its Lock).
func (k Key) Permits() string { return k.Lock + ":sem" }

// PermitLeases returns the sorted set of the semaphore's holders by the end
// of their leases (NewSemaphoreKey's Leases).
func (k Key) PermitLeases() string { return k.Permits() + ":leases" }

// ReadTombstone returns the key where a node remembers, as Tombstone does
// for a hold at Lock, the sequence number of the operation that ended
// owner's read hold. Read and write holds number their operations apart.
func (k Key) ReadTombstone(owner string) string { return k.Lock + ":rgone:" + owner }

// tagEscaper keeps a name inside its hash tag: Redis ends a tag at the first
// '}', so '}' is escaped, and so is the escape character itself so that two
// different names never share a key.
var tagEscaper = strings.NewReplacer("%", "%25", "}", "%7D")

// NewKey returns the keys of the lock name under prefix (DefaultPrefix when
// empty). A name may hold any bytes; only the empty name is invalid.
func NewKey(prefix, name string) (Key, error) {
	if name == "" {
		return Key{}, fmt.Errorf("%w: the lock name is empty", ErrInvalidArgument)
	}
	if prefix == "" {
		prefix = DefaultPrefix
	}
	base := prefix + ":{" + tagEscaper.Replace(name) + "}"
	return Key{Name: name, Lock: base, Channel: base + ":released", Fence: base + ":fence", Tombstones: base + ":gone:", Queue: base + ":queue", QueueDeadlines: base + ":queue:deadlines"}, nil
}
