package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// command is one of relock's subcommands.
type command struct {
	name     string
	args     string // the synopsis after "relock NAME [flags]"
	summary  string // one line for relock --help
	help     string // the description in relock NAME --help
	examples string // the examples that end relock NAME --help
	minArgs  int    // positional arguments required
	maxArgs  int    // positional arguments allowed; -1: any
	// verbatimFrom is the index of the positional argument from which every
	// argument is taken as is, flags included (run's CMD), or -1.
	verbatimFrom int
	// setup registers the command's flags on fs and returns what runs it.
	setup func(fs *flag.FlagSet) action
	// ownSignals is set for a command that handles SIGINT and SIGTERM
	// itself (run passes them to CMD); the others stop on them.
	ownSignals bool
}

// action runs a parsed command.
type action func(ctx context.Context, env *env, g *globals, args []string) error

// env is what a command reads and writes besides the nodes.
type env struct {
	stdout, stderr io.Writer
	getenv         func(string) string
}

// execute parses args for c, runs it and returns relock's exit code. The
// globals may come before the command's name (already in g) or among its
// flags.
func (c *command) execute(ctx context.Context, e *env, g *globals, args []string) int {
	fs := flag.NewFlagSet("relock "+c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // relock prints its own usage
	g.register(fs)
	act := c.setup(fs)
	pos, err := parseArgs(fs, args, c.verbatimFrom)
	switch {
	case errors.Is(err, flag.ErrHelp):
		c.usage(e.stdout)
		return exitOK
	case err != nil:
		return c.usageFailed(e, flagError(err))
	case len(pos) < c.minArgs:
		return c.usageFailed(e, usagef("missing %s", c.args))
	case c.maxArgs >= 0 && len(pos) > c.maxArgs:
		return c.usageFailed(e, usagef("unexpected argument %q", pos[c.maxArgs]))
	}
	if err := g.resolve(e.getenv); err != nil {
		return c.usageFailed(e, err)
	}
	if c.ownSignals {
		err = act(ctx, e, g, pos)
	} else {
		err = interruptible(ctx, func(ctx context.Context) error { return act(ctx, e, g, pos) })
	}
	if isUsage(err) {
		return c.usageFailed(e, err)
	}
	code := exitCode(err)
	if msg := errorMessage(err); msg != "" {
		fmt.Fprintf(e.stderr, "relock %s: %s\n", c.name, msg)
	}
	return code
}

// errorMessage is what relock says on stderr for err: nothing for an
// exitError without a message.
func errorMessage(err error) string {
	var ee *exitError
	if err == nil || errors.As(err, &ee) && ee.err == nil {
		return ""
	}
	return err.Error()
}

// usageFailed reports a bad command line and returns exitUsage.
func (c *command) usageFailed(e *env, err error) int {
	fmt.Fprintf(e.stderr, "relock %s: %v\nusage: relock %s [flags] %s\nRun 'relock %s --help' for more.\n",
		c.name, err, c.name, c.args, c.name)
	return exitUsage
}

// usage writes the command's help: synopsis, description, flags, global
// flags, and the rest of its help text.
func (c *command) usage(w io.Writer) {
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	c.setup(fs)
	fmt.Fprintf(w, "Usage: relock %s [flags] %s\n\n%s\n", c.name, c.args, strings.TrimSpace(c.help))
	fmt.Fprintln(w, "\nFlags:")
	printFlags(w, fs)
	fmt.Fprintln(w, "\nGlobal flags (before or after the command's name):")
	printFlags(w, globalFlags())
	fmt.Fprintf(w, "\n%s\nExamples:\n%s\n", exitCodesHelp, strings.Trim(c.examples, "\n"))
}

// globalFlags returns a flag set holding only the global flags, with their
// defaults, for help texts.
func globalFlags() *flag.FlagSet {
	fs := flag.NewFlagSet("relock", flag.ContinueOnError)
	new(globals).register(fs)
	return fs
}

// aliasUsage marks a flag registered by alias: help shows it beside its
// long name.
const aliasUsage = "\x00alias"

// alias registers short as another name of fs's flag long.
func alias(fs *flag.FlagSet, short, long string) {
	fs.Var(fs.Lookup(long).Value, short, aliasUsage)
}

// printFlags writes fs's flags as a good Unix tool lists them: "--name
// VALUE", the short alias in front, the usage, and the default when it is
// not the zero value.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	shorts := make(map[string]string) // long name → short alias
	fs.VisitAll(func(f *flag.Flag) {
		if f.Usage == aliasUsage {
			fs.VisitAll(func(l *flag.Flag) {
				if l.Usage != aliasUsage && l.Value == f.Value {
					shorts[l.Name] = f.Name
				}
			})
		}
	})
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fs.VisitAll(func(f *flag.Flag) {
		if f.Usage == aliasUsage {
			return
		}
		value, usage := flag.UnquoteUsage(f)
		name := "    --" + f.Name
		if s, ok := shorts[f.Name]; ok {
			name = "-" + s + ", --" + f.Name
		}
		if value != "" {
			name += " " + strings.ToUpper(value)
		}
		if f.DefValue != "" && f.DefValue != "0" && f.DefValue != "0s" && f.DefValue != "false" {
			usage += " (default " + f.DefValue + ")"
		}
		for i, line := range wrap(usage, usageWidth) {
			if i > 0 {
				name = ""
			}
			fmt.Fprintf(tw, "  %s\t%s\n", name, line)
		}
	})
	tw.Flush()
}

// usageWidth is the width of a flag's description in help texts, so that
// they fit 80 columns.
const usageWidth = 50

// wrap splits text into lines of at most width bytes, at spaces (a longer
// word stands alone).
func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(text) {
		switch {
		case line == "":
			line = word
		case len(line)+1+len(word) <= width:
			line += " " + word
		default:
			lines = append(lines, line)
			line = word
		}
	}
	return append(lines, line)
}

// parseArgs parses args with fs and returns the positional arguments.
// Flags may come before, between and after the positional arguments, until
// "--" or until the positional argument at index verbatimFrom (≥ 0): from
// there on every argument is positional, as given.
func parseArgs(fs *flag.FlagSet, args []string, verbatimFrom int) ([]string, error) {
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			pos = append(pos, args[i+1:]...)
			i = len(args)
		case len(a) > 1 && a[0] == '-':
			flags = append(flags, a)
			if takesValue(fs, a) && i+1 < len(args) {
				i++
				flags = append(flags, args[i])
			}
		case len(pos) == verbatimFrom:
			pos = append(pos, args[i:]...)
			i = len(args)
		default:
			pos = append(pos, a)
		}
	}
	if err := fs.Parse(flags); err != nil {
		return nil, err
	}
	return pos, nil
}

// flagError words the flag package's parse errors with the "--name" that
// relock's help shows.
func flagError(err error) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		return usagef("unknown flag --%s", name)
	}
	return usagef("%s", strings.Replace(msg, " for flag -", " for --", 1))
}

// takesValue reports whether the flag argument a ("-name" or "--name",
// without "=value") names a flag of fs that takes its value from the next
// argument.
func takesValue(fs *flag.FlagSet, a string) bool {
	name := strings.TrimLeft(a, "-")
	if strings.Contains(name, "=") {
		return false
	}
	f := fs.Lookup(name)
	if f == nil {
		return false
	}
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return !ok || !b.IsBoolFlag()
}

// flagSet reports whether the flag name, or an alias of it, was given on
// the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	v, set := fs.Lookup(name).Value, false
	fs.Visit(func(f *flag.Flag) { set = set || f.Value == v })
	return set
}
