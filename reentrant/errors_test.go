package reentrant

import (
	"context"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/redis/go-redis/v9"
)

func TestNeverReached(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	reset := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	withdrawn := fmt.Errorf("%w: %w", ErrNotSent, context.DeadlineExceeded)
	noRetries := NewNode(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1}), 0)
	retries := NewNode(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}), 0) // go-redis default: 3 retries
	for _, tc := range []struct {
		name                string
		err                 error
		noRetries, retrying bool
	}{
		{"nil", nil, false, false},
		{"withdrawn from the queue", withdrawn, true, true},
		{"connection refused", refused, true, false},
		{"dial wrapped", fmt.Errorf("node 2: %w", refused), true, false},
		{"pool timeout", redis.ErrPoolTimeout, true, false},
		{"reset after sending", reset, false, false},
		{"reply cut short", io.EOF, false, false},
		{"deadline while on the wire", context.DeadlineExceeded, false, false},
		{"server error", redis.Nil, false, false},
	} {
		if got := noRetries.NeverReached(tc.err); got != tc.noRetries {
			t.Errorf("%s, client without retries: NeverReached(%v) = %v, want %v", tc.name, tc.err, got, tc.noRetries)
		}
		if got := retries.NeverReached(tc.err); got != tc.retrying {
			t.Errorf("%s, client with retries: NeverReached(%v) = %v, want %v", tc.name, tc.err, got, tc.retrying)
		}
	}
	if !NotSent(withdrawn) || NotSent(refused) {
		t.Error("NotSent must mean withdrawn before sending, nothing else")
	}
}

// TestRetriesOffOnAClusterNeedsNoRedirects: a cluster client sends a call
// again after a network error up to MaxRedirects times, so only one
// without retries and without redirects sends each call once.
func TestRetriesOffOnAClusterNeedsNoRedirects(t *testing.T) {
	for _, tc := range []struct {
		name                    string
		maxRetries, maxRedirect int
		want                    bool
	}{
		{"defaults", 0, 0, false},
		{"no retries, default redirects", -1, 0, false},
		{"no retries, no redirects", -1, -1, true},
		{"retries, no redirects", 2, -1, false},
	} {
		c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}, MaxRetries: tc.maxRetries, MaxRedirects: tc.maxRedirect})
		if got := retriesOff(c); got != tc.want {
			t.Errorf("%s: retriesOff = %v, want %v", tc.name, got, tc.want)
		}
		_ = c.Close()
	}
}
