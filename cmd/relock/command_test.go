package main

import (
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
)

// runFlagSet is a flag set like run's: a duration, a bool with an alias,
// and the globals.
func runFlagSet() (*flag.FlagSet, *time.Duration, *bool) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	new(globals).register(fs)
	wait := fs.Duration("wait", 0, "")
	noWait := fs.Bool("no-wait", false, "")
	alias(fs, "n", "no-wait")
	return fs, wait, noWait
}

func TestParseArgsFlagsAnywhereUntilVerbatim(t *testing.T) {
	for _, tc := range []struct {
		args         []string
		verbatimFrom int
		pos          []string
		wait         time.Duration
		noWait       bool
	}{
		{[]string{"name", "--", "cmd", "-x", "--wait", "1s"}, 1, []string{"name", "cmd", "-x", "--wait", "1s"}, 0, false},
		{[]string{"--wait", "2s", "name", "cmd", "--no-wait"}, 1, []string{"name", "cmd", "--no-wait"}, 2 * time.Second, false},
		{[]string{"name", "-n", "--wait=3s", "--", "cmd"}, 1, []string{"name", "cmd"}, 3 * time.Second, true},
		{[]string{"-n", "name", "--", "--", "x"}, 1, []string{"name", "--", "x"}, 0, true},
		{[]string{"a", "--wait", "1s", "b", "-n"}, -1, []string{"a", "b"}, time.Second, true},
		{[]string{"-", "x"}, -1, []string{"-", "x"}, 0, false},
	} {
		fs, wait, noWait := runFlagSet()
		pos, err := parseArgs(fs, tc.args, tc.verbatimFrom)
		if err != nil {
			t.Errorf("parseArgs(%q): %v", tc.args, err)
			continue
		}
		if !slices.Equal(pos, tc.pos) || *wait != tc.wait || *noWait != tc.noWait {
			t.Errorf("parseArgs(%q) = %q, wait %v, no-wait %v; want %q, %v, %v", tc.args, pos, *wait, *noWait, tc.pos, tc.wait, tc.noWait)
		}
	}
}

func TestParseArgsErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--bogus", "name"},
		{"name", "--wait", "soon"},
		{"--wait"},
	} {
		fs, _, _ := runFlagSet()
		if _, err := parseArgs(fs, args, 1); err == nil {
			t.Errorf("parseArgs(%q) accepted", args)
		}
	}
}

func TestFlagSetSeesAliases(t *testing.T) {
	fs, _, _ := runFlagSet()
	if _, err := parseArgs(fs, []string{"-n", "x"}, -1); err != nil {
		t.Fatal(err)
	}
	if !flagSet(fs, "no-wait") || flagSet(fs, "wait") {
		t.Fatalf("flagSet: no-wait %v (want true), wait %v (want false)", flagSet(fs, "no-wait"), flagSet(fs, "wait"))
	}
}

func TestPrintFlagsShowsAliasesDefaultsAndWraps(t *testing.T) {
	fs, _, _ := runFlagSet()
	var b strings.Builder
	printFlags(&b, fs)
	out := b.String()
	for _, want := range []string{"-n, --no-wait", "--wait DURATION", "--nodes URLS", "--prefix PREFIX"} {
		if !strings.Contains(out, want) {
			t.Errorf("printFlags lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, aliasUsage) || strings.Contains(out, "\n  -n ") {
		t.Errorf("an alias is listed on its own:\n%s", out)
	}
	for _, line := range strings.Split(out, "\n") {
		if len(line) > 80 {
			t.Errorf("line wider than 80 columns: %q", line)
		}
	}
}

func TestWrap(t *testing.T) {
	got := wrap("aa bb cc dddddddddd e", 5)
	if want := []string{"aa bb", "cc", "dddddddddd", "e"}; !slices.Equal(got, want) {
		t.Fatalf("wrap = %q; want %q", got, want)
	}
}

func TestFlagErrorUsesDoubleDashes(t *testing.T) {
	fs, _, _ := runFlagSet()
	_, err := parseArgs(fs, []string{"--bogus"}, -1)
	if got := flagError(err).Error(); got != "unknown flag --bogus" {
		t.Errorf("unknown flag: %q", got)
	}
	_, err = parseArgs(fs, []string{"--wait", "x"}, -1)
	if got := flagError(err).Error(); !strings.Contains(got, "for --wait") {
		t.Errorf("bad value: %q", got)
	}
}
