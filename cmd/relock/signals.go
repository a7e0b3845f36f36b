package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// cancelOnSignal returns a context that ends when a signal comes on sigs,
// and a function that stops watching and returns that signal (nil when
// none came). Signals after it are left on sigs.
func cancelOnSignal(ctx context.Context, sigs <-chan os.Signal) (context.Context, func() os.Signal) {
	ctx, cancel := context.WithCancel(ctx)
	var got os.Signal
	done, watched := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case got = <-sigs:
			cancel()
		case <-done:
		}
	}()
	return ctx, func() os.Signal {
		close(done)
		<-watched
		cancel()
		return got
	}
}

// interruptible runs act with a context that SIGINT or SIGTERM ends, so
// that a command stops cleanly (bench releases its locks and prints what it
// measured) instead of dying at once. When a signal came, the error is
// relock's exit status for it, 128+N.
func interruptible(ctx context.Context, act func(context.Context) error) error {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	ctx, stop := cancelOnSignal(ctx, sigs)
	err := act(ctx)
	if got := stop(); got != nil {
		return exitWith(signalStatus(got), "stopped by %v", got)
	}
	return err
}
