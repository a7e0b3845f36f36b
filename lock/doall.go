package lock

import (
	"context"
	"fmt"
	"slices"
)

// DoAll runs fn while holding every lock of names, as Do holds one, and
// releases them all when fn returns or panics. It takes them one after
// another in the names' byte order, whatever the order given (a name given
// twice is taken once), so DoAll calls on overlapping sets, in any process,
// never wait for each other in a cycle; each waits, as Do does, while
// another owner holds a lock it needs, and ctx bounds the whole wait. When
// ctx ends before the last lock is taken, the locks already taken are
// released and DoAll returns an error for which errors.Is(err, ctx.Err())
// is true: fn runs with all of them or not at all.
//
// fn's context ends when ctx ends, when any of the locks is lost, or when
// the Client is closed; after a loss context.Cause(fnCtx) is ErrLost and
// DoAll's error wraps ErrLost. It carries every hold, as Do's carries one:
// a Do or DoAll on some of the names with a context derived from it
// re-enters them. Each name is a lock of its own, with an owner of its own,
// as Do's: Inspect and relock inspect show them one by one.
//
// Every lock a process takes together with others should be taken through
// DoAll (or in the same order by hand): a Mutex held on "b" while waiting
// for "a" can still wait in a cycle with a DoAll on both, until a ctx ends.
// An empty list, or an empty name in it, returns an error wrapping
// ErrInvalidArgument and takes nothing.
func (c *Client) DoAll(ctx context.Context, names []string, fn func(ctx context.Context) error) error {
	order, err := lockOrder(names)
	if err != nil {
		return err
	}
	var from func(ctx context.Context, i int) error
	from = func(ctx context.Context, i int) error {
		if i == len(order) {
			return fn(ctx)
		}
		return c.Do(ctx, order[i], func(ctx context.Context) error { return from(ctx, i+1) })
	}
	return from(ctx, 0)
}

// lockOrder returns names sorted and without repeats: the order in which
// DoAll takes them. It refuses an empty list and an empty name.
func lockOrder(names []string) ([]string, error) {
	if len(names) == 0 {
		return nil, fmt.Errorf("%w: DoAll needs at least one lock name", ErrInvalidArgument)
	}
	if slices.Contains(names, "") {
		return nil, fmt.Errorf("%w: a lock name is empty", ErrInvalidArgument)
	}
	order := slices.Clone(names)
	slices.Sort(order)
	return slices.Compact(order), nil
}
