package reentrant

import (
	"errors"
	"fmt"
)

var (
	// ErrInvalidArgument is returned, wrapped with a reason, for an empty lock
	// name, a lease that is not positive, or a negative hold count. Nothing is
	// sent to Redis.
	ErrInvalidArgument = errors.New("relock: invalid argument")
	// ErrWrongType is matched by a WrongTypeError.
	ErrWrongType = errors.New("relock: key holds data that is not a relock lock")
)

// WrongTypeError reports that a lock's key holds data of another type, stored
// by someone else. relock leaves such data untouched.
type WrongTypeError struct {
	Key  string // the key that holds foreign data
	Type string // its Redis type, as TYPE reports it
}

func (e *WrongTypeError) Error() string {
	return fmt.Sprintf("relock: key %q holds a %s, not a relock lock; it was left untouched", e.Key, e.Type)
}

// Is makes errors.Is(err, ErrWrongType) true.
func (e *WrongTypeError) Is(target error) bool { return target == ErrWrongType }
