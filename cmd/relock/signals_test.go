package main

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"
)

func TestCancelOnSignal(t *testing.T) {
	sigs := make(chan os.Signal, 2)
	ctx, stop := cancelOnSignal(context.Background(), sigs)
	sigs <- syscall.SIGTERM
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("a signal did not end the context")
	}
	sigs <- syscall.SIGHUP
	if got := stop(); got != syscall.SIGTERM {
		t.Fatalf("stop() = %v; want the first signal, SIGTERM", got)
	}
	if got := <-sigs; got != syscall.SIGHUP {
		t.Fatalf("the next signal was consumed: %v", got)
	}

	ctx, stop = cancelOnSignal(context.Background(), sigs)
	if got := stop(); got != nil || ctx.Err() == nil {
		t.Fatalf("without a signal: stop() = %v, ctx.Err() = %v; want nil and a stopped context", got, ctx.Err())
	}
	if code := signalStatus(syscall.SIGINT); code != 130 {
		t.Fatalf("signalStatus(SIGINT) = %d; want 130", code)
	}
}
