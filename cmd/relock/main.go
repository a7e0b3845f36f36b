// Command relock takes relock's distributed locks from the shell: it runs a
// command while holding a lock (a flock(1) for many machines, for cron jobs
// and scripts), shows who holds a lock on each node, lists the locks held,
// frees a lock whose holder is gone, and measures the nodes.
//
//	relock --nodes redis://r1:6379,redis://r2:6379,redis://r3:6379 run nightly-report -- ./report.sh
//
// Run relock --help for the commands, and relock COMMAND --help for each.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"text/tabwriter"

	"github.com/redis/go-redis/v9"
)

// commands are relock's subcommands, in the order help lists them.
var commands = []*command{runCommand, inspectCommand, lsCommand, unlockCommand, benchCommand}

func main() {
	quietRedisLogs()
	e := &env{stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv}
	os.Exit(relock(context.Background(), e, os.Args[1:]))
}

// relock runs the command line args and returns the exit code.
func relock(ctx context.Context, e *env, args []string) int {
	g := new(globals)
	top, version := topFlags(g)
	err := top.Parse(args) // stops at the command's name
	switch {
	case errors.Is(err, flag.ErrHelp):
		mainUsage(e.stdout)
		return exitOK
	case err != nil:
		return mainUsageFailed(e, flagError(err).Error())
	case *version:
		fmt.Fprintln(e.stdout, "relock", moduleVersion())
		return exitOK
	case top.NArg() == 0:
		return mainUsageFailed(e, "no command")
	}
	name, rest := top.Arg(0), top.Args()[1:]
	if name == "help" {
		if len(rest) == 0 {
			mainUsage(e.stdout)
			return exitOK
		}
		name, rest = rest[0], []string{"--help"}
	}
	for _, c := range commands {
		if c.name == name {
			return c.execute(ctx, e, g, rest)
		}
	}
	return mainUsageFailed(e, fmt.Sprintf("unknown command %q", name))
}

// topFlags returns the flags that may come before the command's name: the
// globals, into g, and --version.
func topFlags(g *globals) (*flag.FlagSet, *bool) {
	top := flag.NewFlagSet("relock", flag.ContinueOnError)
	top.SetOutput(io.Discard)
	g.register(top)
	return top, top.Bool("version", false, "print relock's version and exit")
}

// mainUsageFailed reports a bad command line before the command's name.
func mainUsageFailed(e *env, msg string) int {
	fmt.Fprintf(e.stderr, "relock: %s\nusage: relock [global flags] COMMAND [flags] [ARGS]\nRun 'relock --help' for the commands.\n", msg)
	return exitUsage
}

// mainUsage writes relock --help.
func mainUsage(w io.Writer) {
	fmt.Fprint(w, `relock: distributed locks over Redis, from the shell.

Usage: relock [global flags] COMMAND [flags] [ARGS]

Commands:
`)
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	for _, c := range commands {
		fmt.Fprintf(tw, "  %s %s\t%s\n", c.name, c.args, c.summary)
	}
	fmt.Fprintf(tw, "  help COMMAND\tshow a command's flags and examples\n")
	tw.Flush()
	fmt.Fprintln(w, "\nGlobal flags (before or after the command's name):")
	top, _ := topFlags(new(globals))
	printFlags(w, top)
	fmt.Fprint(w, `
Nodes:
  Give every process that shares a lock the same nodes, in the same order:
  one Redis for single-instance mode, or several independent masters (3, 5)
  for a Redlock quorum of N/2+1. Each is a go-redis URL:
    redis://[USER[:PASSWORD]@]HOST[:PORT][/DB][?OPTIONS]
    rediss://...                  TLS (?skip_verify=true to skip verification)
    unix://[USER[:PASSWORD]@]/PATH/TO/SOCKET
    HOST:PORT                     short for redis://HOST:PORT
  OPTIONS are go-redis's, e.g. dial_timeout=2s&read_timeout=1s.

Environment:
  RELOCK_NODES  the nodes, comma-separated, when --nodes is not given

`)
	fmt.Fprint(w, exitCodesHelp)
	fmt.Fprint(w, `
Examples:
  export RELOCK_NODES=redis://r1:6379,redis://r2:6379,redis://r3:6379
  relock run nightly-report -- ./report.sh      # one at a time, across machines
  relock run --no-wait backup -- ./backup.sh    # skip if another backup runs
  relock inspect nightly-report                 # who holds it, on each node
  relock ls 'orders:*'                          # the locks held now
  relock unlock --force nightly-report          # free a lock whose holder died

Run 'relock COMMAND --help' for a command's flags, exit status and examples.
`)
}

// quietRedisLogs silences go-redis's own log lines (dial retries and the
// like), which it writes to stderr: relock reports every failure itself, so
// they would only repeat it beside relock's message. main calls it once, and
// the tests' TestMain too, so that they run as relock does.
func quietRedisLogs() { redis.SetLogger(quietRedis{}) }

// quietRedis drops go-redis's own log lines.
type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}

// moduleVersion is the version go install built, or "(devel)".
func moduleVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}
