package main

import (
	"errors"
	"fmt"

	"github.com/relock-go/relock/lock"
)

// Exit codes. run passes CMD's own code through; the others are relock's,
// chosen as flock(1) and the shells choose theirs.
const (
	exitOK          = 0   // done; for run, CMD exited 0
	exitNotAcquired = 1   // the lock is held: --no-wait, or --wait ran out (flock's conflict code); unlock declined
	exitUsage       = 2   // bad flags, arguments, URLs or environment: nothing was sent
	exitLost        = 3   // run: the lock was lost while CMD ran; CMD was stopped
	exitNodes       = 4   // the nodes failed: unreachable, no quorum, or a Redis error
	exitCannotRun   = 126 // run: CMD was found but could not be started (as in the shells, env, nohup)
	exitNotFound    = 127 // run: CMD was not found
	exitSignalBase  = 128 // 128+N: run's CMD killed by signal N, or relock stopped by N (run while waiting)
)

// exitCodesHelp is the exit status section of the help texts and the README.
const exitCodesHelp = `Exit status:
  0      success; for run, CMD exited 0
  1      the lock is held by another owner (--no-wait, or --wait ran out);
         for unlock, the question was not answered yes
  2      usage error: bad flags, arguments, node URLs or RELOCK_NODES;
         nothing was sent to any node
  3      run: the lock was lost while CMD ran; CMD was stopped
  4      the nodes failed: unreachable, no quorum, or an error from Redis
  126    run: CMD could not be started
  127    run: CMD was not found
  128+N  run: CMD was killed by signal N, or relock by signal N while it
         waited for the lock; another command: stopped by signal N
         (SIGINT, SIGTERM)
  other  run: CMD's own exit status
`

// exitError ends relock with code, saying err on stderr unless it is nil.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// exitWith returns an error that makes relock exit with code after saying
// the message made of format and args (nothing when format is empty).
func exitWith(code int, format string, args ...any) error {
	if format == "" {
		return &exitError{code: code}
	}
	return &exitError{code: code, err: fmt.Errorf(format, args...)}
}

// usageError is a bad command line: relock says so, shows the synopsis and
// exits with exitUsage before contacting any node.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// usagef returns a usageError.
func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// exitCode maps the error a command returned to relock's exit code.
func exitCode(err error) int {
	var ee *exitError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ee):
		return ee.code
	case isUsage(err):
		return exitUsage
	case errors.Is(err, lock.ErrLost):
		return exitLost
	}
	return exitNodes
}

// isUsage reports whether err is a bad command line (a usageError, or an
// option the library refused), which relock answers with its synopsis. An
// exitError is not, whatever its code: run exits 2 when CMD does.
func isUsage(err error) bool {
	var ee *exitError
	var ue *usageError
	return !errors.As(err, &ee) && (errors.As(err, &ue) || errors.Is(err, lock.ErrInvalidArgument))
}
