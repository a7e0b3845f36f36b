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

func TestNotSent(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	reset := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"withdrawn from the queue", fmt.Errorf("%w: %w", ErrNotSent, context.DeadlineExceeded), true},
		{"connection refused", refused, true},
		{"dial wrapped", fmt.Errorf("node 2: %w", refused), true},
		{"pool timeout", redis.ErrPoolTimeout, true},
		{"reset after sending", reset, false},
		{"reply cut short", io.EOF, false},
		{"deadline while on the wire", context.DeadlineExceeded, false},
		{"server error", redis.Nil, false},
	} {
		if got := NotSent(tc.err); got != tc.want {
			t.Errorf("%s: NotSent(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}
