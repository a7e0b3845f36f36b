package reentrant

import (
	"errors"
	"fmt"
	"net"

	"github.com/redis/go-redis/v9"
)

var (
	// ErrInvalidArgument is returned, wrapped with a reason, for an empty lock
	// name, a lease that is not positive, or a negative hold count. Nothing is
	// sent to Redis.
	ErrInvalidArgument = errors.New("relock: invalid argument")
	// ErrWrongType is matched by a WrongTypeError.
	ErrWrongType = errors.New("relock: key holds data that is not a relock lock")
	// ErrCapacityMismatch is matched by a CapacityError.
	ErrCapacityMismatch = errors.New("relock: the semaphore's holders gave another capacity")
	// ErrNotSent is wrapped, with the caller's ctx error, by a call whose
	// ctx ended while it was still queued for its node's next pipeline.
	ErrNotSent = errors.New("relock: call not sent")
)

// NotSent reports whether err proves that the call it answers never left
// relock: it was withdrawn from its node's queue before it was sent
// (ErrNotSent). See Node.NeverReached for failures inside the client.
func NotSent(err error) bool { return errors.Is(err, ErrNotSent) }

// connectFailed reports whether err says the client could not get a
// connection: a dial that failed or timed out, or a pool with no connection
// free in time.
func connectFailed(err error) bool {
	var opErr *net.OpError
	switch {
	case err == nil:
		return false
	case errors.Is(err, redis.ErrPoolTimeout):
		return true
	case errors.As(err, &opErr):
		return opErr.Op == "dial"
	}
	return false
}

// CapacityError reports an acquisition of a semaphore whose holders on a
// node gave another capacity: every user of a semaphore's name must give
// the same, since each node counts permits against it and each client asks
// for the quorum it sets. The node changed nothing. The capacity is kept
// while anyone holds permits there, so an idle semaphore may change it.
type CapacityError struct {
	Key      string // the semaphore's permits key
	Capacity int64  // the capacity the holders there gave
	Asked    int64  // the capacity the acquisition gave
}

// Error names the semaphore and both capacities.
func (e *CapacityError) Error() string {
	return fmt.Sprintf("relock: semaphore %q has a capacity of %d, not %d: every user of a name must give the same", e.Key, e.Capacity, e.Asked)
}

// Is makes errors.Is(err, ErrCapacityMismatch) true.
func (e *CapacityError) Is(target error) bool { return target == ErrCapacityMismatch }

// WrongTypeError reports that a lock's key holds data of another type, stored
// by someone else. relock leaves such data untouched.
type WrongTypeError struct {
	Key  string // the key that holds foreign data
	Type string // its Redis type, as TYPE reports it
}

// Error names the key and the type it holds.
func (e *WrongTypeError) Error() string {
	return fmt.Sprintf("relock: key %q holds a %s, not a relock lock; it was left untouched", e.Key, e.Type)
}

// Is makes errors.Is(err, ErrWrongType) true.
func (e *WrongTypeError) Is(target error) bool { return target == ErrWrongType }
