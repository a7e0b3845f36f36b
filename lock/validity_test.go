package lock

import (
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

func TestQuorumIsAStrictMajority(t *testing.T) {
	for n, want := range map[int]int{1: 1, 2: 2, 3: 2, 4: 3, 5: 3, 7: 4} {
		if got := quorum(n); got != want {
			t.Errorf("quorum(%d) = %d; want %d", n, got, want)
		}
	}
}

func TestValidityDeductsElapsedAndDrift(t *testing.T) {
	lease := 10 * time.Second
	// drift = 10s × 0.01 + 2ms = 102ms
	if got, want := validity(lease, 50*time.Millisecond, 0.01), 10*time.Second-50*time.Millisecond-102*time.Millisecond; got != want {
		t.Fatalf("validity = %v; want %v", got, want)
	}
	if v := validity(lease, 9900*time.Millisecond, 0.01); v > 0 {
		t.Fatalf("an attempt that took nearly the whole lease must have no validity, got %v", v)
	}
}

func TestSleepAfterFollowsHolderTTL(t *testing.T) {
	contended := attempt{contended: true, holderTTL: 3 * time.Millisecond}
	if d := sleepAfter(contended, time.Second); d != 3*time.Millisecond {
		t.Fatalf("sleep %v; want the holder's TTL, 3ms", d)
	}
	noTTL := attempt{contended: true, holderTTL: -1}
	for range 100 {
		if d := sleepAfter(noTTL, 20*time.Millisecond); d < 10*time.Millisecond || d >= 30*time.Millisecond {
			t.Fatalf("sleep %v outside the jitter range [10ms, 30ms)", d)
		}
	}
	nodesFailed := attempt{holderTTL: 5 * time.Second}
	if d := sleepAfter(nodesFailed, 20*time.Millisecond); d >= 30*time.Millisecond {
		t.Fatalf("sleep %v: a failure of the nodes is retried after the retry delay", d)
	}
	if d := sleepAfter(attempt{contended: true, holderTTL: 0}, time.Second); d < time.Millisecond {
		t.Fatalf("sleep %v: a zero TTL must not make a tight loop", d)
	}
}

func TestQuorumErrorWrapsEveryNodeCause(t *testing.T) {
	boom := errors.New("boom")
	err := &QuorumError{Op: "acquire", Needed: 2, Agreed: 1, Nodes: []NodeError{
		{Node: 1, Addr: "b:1", Err: ErrNodeTimeout},
		{Node: 2, Addr: "c:1", Err: boom},
	}}
	for _, target := range []error{ErrNoQuorum, ErrNodeTimeout, boom} {
		if !errors.Is(err, target) {
			t.Errorf("errors.Is(quorum error, %v) = false", target)
		}
	}
	msg := err.Error()
	for _, part := range []string{"1 of 2", "node 1 (b:1)", "node 2 (c:1): boom"} {
		if !strings.Contains(msg, part) {
			t.Errorf("message %q lacks %q", msg, part)
		}
	}
}

func TestNodeTimeoutsAreReportedAsSuch(t *testing.T) {
	if err := asNodeTimeout(context.DeadlineExceeded); err != ErrNodeTimeout {
		t.Errorf("per-node deadline: %v", err)
	}
	sock := &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	err := asNodeTimeout(sock)
	if !errors.Is(err, ErrNodeTimeout) || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("socket timeout: %v", err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a node timeout must not look like the caller's deadline: %v", err)
	}
	other := errors.New("ERR something")
	if asNodeTimeout(other) != other {
		t.Error("other errors must pass through")
	}
}
