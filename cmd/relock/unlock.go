package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/relock-go/relock/lock"
)

var unlockCommand = &command{
	name:         "unlock",
	args:         "--force [--owner OWNER] NAME",
	summary:      "free the lock NAME, whoever holds it",
	minArgs:      1,
	maxArgs:      1,
	verbatimFrom: -1,
	setup:        setupUnlock,
	help: `
Frees NAME on every node of every hold on it, whoever holds it, and wakes
its waiters: for a lock whose holder is gone and whose lease is long. Every
hold goes: a lock's, an RWMutex's writer and readers, and the holders of the
semaphore NAME. A holder, if it still runs, finds out at its next renewal
(a relock run then stops its CMD and exits 3). --force is required. When
stdin is a terminal, unlock shows the lock and asks before it deletes
anything, unless --yes is given. Freeing a lock that is already free
succeeds. Exit status 1 when the question was not answered yes.

--owner OWNER frees the holds of that one owner alone (an owner id as
inspect and ls show it), and leaves the others': for one stuck semaphore
holder or reader among live ones. Exit status 1 when OWNER held nothing of
NAME on the nodes that answered.`,
	examples: `
  relock unlock --force nightly-report
  relock unlock --force --yes nightly-report    # from a script on a terminal
  relock unlock --force --owner 3f2a…:9c1d… exports   # one stuck holder alone`,
}

func setupUnlock(fs *flag.FlagSet) action {
	force := fs.Bool("force", false, "release the lock whoever holds it (required)")
	yes := fs.Bool("yes", false, "do not ask for confirmation on a terminal")
	owner := fs.String("owner", "", "free the holds of this owner `id` alone")
	alias(fs, "y", "yes")
	return func(ctx context.Context, e *env, g *globals, args []string) error {
		if !*force {
			return usagef("unlock releases a lock whoever holds it: confirm with --force")
		}
		if *owner == "" && flagSet(fs, "owner") {
			return usagef("--owner needs an owner id (inspect and ls show them)")
		}
		c, closeAll, err := g.connect(lock.Options{})
		if err != nil {
			return err
		}
		defer closeAll()
		name, whose := args[0], "whoever holds it"
		if *owner != "" {
			whose = "the holds of " + *owner
		}
		ask := !*yes && isTerminal(os.Stdin)
		if ask {
			if err := confirm(ctx, e, c, name, whose); err != nil {
				return err
			}
		}
		if *owner == "" {
			err = c.ForceUnlock(ctx, name)
		} else {
			var freed bool
			if freed, err = c.Evict(ctx, name, *owner); err == nil && !freed {
				err = exitWith(exitNotAcquired, "%s holds nothing of %q", *owner, name)
			}
		}
		if err != nil {
			return err
		}
		if ask {
			fmt.Fprintf(e.stderr, "relock unlock: lock %q released, %s\n", name, whose)
		}
		return nil
	}
}

// confirm shows the lock name and asks on the terminal whether to release
// it, whose holds; anything but yes is an exitNotAcquired error.
func confirm(ctx context.Context, e *env, c *lock.Client, name, whose string) error {
	states, err := c.Inspect(ctx, name)
	if err != nil {
		return err
	}
	_, quorum := c.Nodes()
	v := newLockView(name, states, quorum, 0)
	fmt.Fprintln(e.stderr, v.summary())
	if err := v.writeNodes(e.stderr); err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "Release lock %q, %s? [y/N] ", name, whose)
	answers := make(chan string, 1) // the read may outlive ctx: relock exits then
	go func() {
		answer, _ := bufio.NewReader(os.Stdin).ReadString('\n')
		answers <- answer
	}()
	select {
	case answer := <-answers:
		switch strings.ToLower(strings.TrimSpace(answer)) {
		case "y", "yes":
			return nil
		}
	case <-ctx.Done():
		fmt.Fprintln(e.stderr)
	}
	return exitWith(exitNotAcquired, "lock %q left as it is", name)
}
