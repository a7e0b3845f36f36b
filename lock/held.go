package lock

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Reentrancy through the context. Go has no thread identity for a nested
// call to borrow, so Do (and LockContext) record their hold in the context
// they hand out, under a key naming the Client, the kind of lock and its
// name. A Do with a context derived from it finds the hold there and
// re-enters the same owner (one more hold on the same handle) instead of
// creating a new owner that would wait for the first one forever.
//
// Each Do is a scope: its hold in the context is good while its fn runs.
// Once it returns, a goroutine it leaked that still has its context gets
// ErrNotHeld from a nested Do instead of acquiring the lock again as an
// owner nobody is going to unlock.
//
// Every kind of lock uses the same piece (do_family.go: FairMutex,
// RWMutex, Semaphore). A kind adds a scopeKind; its
// Do-like entry point calls enter with a holdKey of that kind and a function
// making a fresh handle (a reentrantHold: for a read hold, an adapter whose
// Lock and Unlock are the handle's RLock and RUnlock), then open and exit
// as Do does. A hold that may re-enter through another kind's scope (a read
// inside a write holder's Do) looks that scope up with scopeIn and calls
// its reenter with its own key and handle side.

// scopeKind names a kind of hold a context can carry, so that a mutex and,
// say, a read-write lock of the same name are told apart.
type scopeKind string

// mutexScope is a Mutex's hold (Do, LockContext), or a FairMutex's
// (DoFair, FairLockContext): the same lock on the nodes. The other kinds
// are in do_family.go.
const mutexScope scopeKind = "mutex"

// holdKey is the context key of one hold: which Client, which kind of lock,
// which name. A different Client or name is a different key, so it never
// finds this hold and gets a new owner.
type holdKey struct {
	c    *Client
	kind scopeKind
	name string
}

// reentrantHold is a handle that holds a lock and can take it once more
// without waiting (Lock) and let one hold go (Unlock). Lost closes when
// its hold is lost.
type reentrantHold interface {
	Lock(ctx context.Context) error
	Unlock(ctx context.Context) error
	Lost() <-chan struct{}
}

// holdScope is one hold as a context carries it: one Do's, from the Lock
// before fn to the Unlock after it, or one LockContext's until its unlock.
type holdScope struct {
	key holdKey
	h   reentrantHold

	mu     sync.Mutex // guards closed, ended and end against entering.Add
	closed bool
	// ended is canceled when the scope ends, so that a nested Lock still
	// under way gives up; made by the first re-entry (most scopes have
	// none).
	ended    context.Context
	end      context.CancelFunc
	entering sync.WaitGroup // nested Locks in progress on h

	// Set by open: the context handed out, ended at exit.
	held      context.Context
	cancel    context.CancelCauseFunc
	watchDone chan struct{}
}

// scopeIn returns the hold ctx carries for key, or nil.
func scopeIn(ctx context.Context, key holdKey) *holdScope {
	s, _ := ctx.Value(key).(*holdScope)
	return s
}

// enter takes the hold for key: it re-enters the hold ctx carries for key,
// or, when ctx carries none, locks the handle fresh returns (a new owner).
func (c *Client) enter(ctx context.Context, key holdKey, fresh func(holdKey) reentrantHold) (*holdScope, error) {
	if s := scopeIn(ctx, key); s != nil {
		return s.reenter(ctx, key, s.h)
	}
	h := fresh(key)
	if err := h.Lock(ctx); err != nil {
		return nil, err
	}
	return &holdScope{key: key, h: h}, nil
}

// reenter takes one more hold on h, the handle of s or another side of it
// (a read hold of a write holder), as a new scope recorded under key. It
// fails, taking nothing, once s has ended. The scope's hold cannot end
// while this Lock runs (exit waits for it), so the Lock is a re-entry: it
// never waits for another owner, and fails with ErrLost if the hold was lost.
func (s *holdScope) reenter(ctx context.Context, key holdKey, h reentrantHold) (*holdScope, error) {
	ended := s.join()
	if ended == nil {
		return nil, s.endedErr()
	}
	defer s.entering.Done()
	lockCtx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(ended, func() { cancel(s.endedErr()) })
	err := h.Lock(lockCtx)
	stop()
	cancel(nil)
	if err != nil {
		if ctx.Err() == nil && ended.Err() != nil && !errors.Is(err, ErrLost) {
			err = s.endedErr() // the scope ended while the Lock ran
		}
		return nil, err
	}
	return &holdScope{key: key, h: h}, nil
}

// join registers a nested Lock on the scope's handle and returns the
// context that ends with the scope, or nil once the scope has ended.
func (s *holdScope) join() context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	if s.ended == nil {
		s.ended, s.end = context.WithCancel(context.Background())
	}
	s.entering.Add(1)
	return s.ended
}

func (s *holdScope) endedErr() error {
	return fmt.Errorf("%w: %q: the hold this context carries has ended (its Do returned, or its unlock ran)", ErrNotHeld, s.key.name)
}

// open returns the context the holder works in: derived from ctx, it
// carries the hold, and ends when ctx does, when the hold is lost
// (context.Cause is ErrLost), when the Client closes (ErrClosed: Close
// releases every hold) or at exit.
func (s *holdScope) open(ctx context.Context) context.Context {
	held, cancel := context.WithCancelCause(context.WithValue(ctx, s.key, s))
	s.held, s.cancel, s.watchDone = held, cancel, make(chan struct{})
	lost, closing := s.h.Lost(), s.key.c.closing
	go func() {
		defer close(s.watchDone)
		select {
		case <-lost:
			cancel(ErrLost)
		case <-closing:
			cancel(ErrClosed)
		case <-held.Done():
		}
	}()
	return held
}

// exit ends the scope and lets its hold go: the context open returned
// ends, nested Locks still in progress give up, and the handle is unlocked
// once. Holds that nested scopes took stay until they exit in turn. A
// second exit returns ErrNotHeld and sends nothing. The error wraps ErrLost
// when the hold was lost while the scope was open.
func (s *holdScope) exit(ctx context.Context) error {
	s.mu.Lock()
	closed, end := s.closed, s.end
	s.closed = true
	s.mu.Unlock()
	if closed {
		return s.endedErr()
	}
	if end != nil {
		end()
		s.entering.Wait()
	}
	if s.cancel != nil {
		s.cancel(nil)
		<-s.watchDone
	}
	err := s.h.Unlock(ctx)
	if s.held != nil && errors.Is(context.Cause(s.held), ErrLost) && !errors.Is(err, ErrLost) {
		err = errors.Join(err, ErrLost)
	}
	return err
}
