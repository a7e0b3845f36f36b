package main

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"testing"

	"github.com/relock-go/relock/lock"
)

func TestExitCodeMapsErrors(t *testing.T) {
	qe := &lock.QuorumError{Op: "acquire", Needed: 2, Agreed: 1, Nodes: []lock.NodeError{{Node: 1, Err: lock.ErrNodeTimeout}}}
	for _, tc := range []struct {
		err  error
		want int
	}{
		{nil, exitOK},
		{exitWith(42, ""), 42},
		{exitWith(exitUsage, ""), exitUsage}, // CMD exited 2: not a usage error
		{errors.Join(exitWith(130, "stopped"), usagef("late")), 130},
		{exitWith(exitNotAcquired, "held"), exitNotAcquired},
		{fmt.Errorf("wrapped: %w", exitWith(exitLost, "lost")), exitLost},
		{errors.Join(exitWith(130, "interrupted"), qe), 130},
		{usagef("bad"), exitUsage},
		{fmt.Errorf("%w: Lease: too short", lock.ErrInvalidArgument), exitUsage},
		{lock.ErrLost, exitLost},
		{qe, exitNodes},
		{fmt.Errorf("x: %w", lock.ErrWrongType), exitNodes},
		{context.DeadlineExceeded, exitNodes},
	} {
		if got := exitCode(tc.err); got != tc.want {
			t.Errorf("exitCode(%v) = %d; want %d", tc.err, got, tc.want)
		}
	}
}

func TestIsUsageLeavesExitCodesAlone(t *testing.T) {
	if isUsage(exitWith(exitUsage, "")) || isUsage(nil) || isUsage(lock.ErrLost) {
		t.Error("an exit status of 2 from CMD, no error or a lost lock taken for a usage error")
	}
	if !isUsage(usagef("x")) || !isUsage(fmt.Errorf("w: %w", lock.ErrInvalidArgument)) {
		t.Error("a usage error not recognised")
	}
}

func TestErrorMessageIsSilentForBareExitCodes(t *testing.T) {
	if msg := errorMessage(exitWith(7, "")); msg != "" {
		t.Errorf("a bare exit code says %q", msg)
	}
	if msg := errorMessage(exitWith(1, "lock %q is held", "x")); msg != `lock "x" is held` {
		t.Errorf("message %q", msg)
	}
}

func TestStartErrorFollowsTheShells(t *testing.T) {
	if got := exitCode(startError("x", fmt.Errorf("exec: %w", errors.New("executable file not found")))); got != exitCannotRun {
		t.Errorf("other start error: %d", got)
	}
	_, err := exec.LookPath("relock-no-such-command")
	if got := exitCode(startError("x", err)); got != exitNotFound {
		t.Errorf("not found: %d (%v)", got, err)
	}
}
