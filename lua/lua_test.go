package lua_test

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/relock-go/relock/lua"
)

func TestScriptsAreEmbeddedWithTheirSHA(t *testing.T) {
	for _, s := range allScripts {
		if !strings.Contains(s.Source(), "KEYS[1]") {
			t.Errorf("%s: source not embedded", s.Name())
		}
		sum := sha1.Sum([]byte(s.Source()))
		if s.SHA() != hex.EncodeToString(sum[:]) {
			t.Errorf("%s: SHA %s does not match its source", s.Name(), s.SHA())
		}
		// Values travel in ARGV, never in the script text.
		if strings.Contains(s.Source(), "..ARGV") || strings.Contains(s.Source(), "loadstring") {
			t.Errorf("%s: builds code from arguments", s.Name())
		}
	}
}

func TestIsNoScript(t *testing.T) {
	if !lua.IsNoScript(errors.New("NOSCRIPT No matching script. Please use EVAL.")) {
		t.Error("NOSCRIPT reply not recognised")
	}
	for _, err := range []error{nil, errors.New("ERR something"), errors.New("WRONGTYPE string")} {
		if lua.IsNoScript(err) {
			t.Errorf("IsNoScript(%v) = true", err)
		}
	}
}

func TestScriptsTouchOnlyTheKeysTheyAreGiven(t *testing.T) {
	// Redis Cluster routes a script by the keys in KEYS, and a node may
	// refuse one that reaches a key it was not given. The tombstone of an
	// owner is such a key: each script that reads or writes one must get
	// its full name in KEYS, never build it from the lock's name.
	built := regexp.MustCompile(`KEYS\[[^\]]*\]\s*\.\.|\.\.\s*KEYS\[`)
	for _, s := range allScripts {
		if m := built.FindString(s.Source()); m != "" {
			t.Errorf("%s: builds a key name (%q)", s.Name(), m)
		}
	}
	if !built.MatchString(`redis.call('GET', KEYS[3] .. owner)`) {
		t.Fatal("the check does not catch a built key")
	}
}

// allScripts is every script relock runs.
var allScripts = []*lua.Script{lua.Acquire, lua.Release, lua.Renew, lua.Inspect, lua.ForceUnlock, lua.Fence,
	lua.ReadAcquire, lua.ReadRelease, lua.ReadRenew,
	lua.SemAcquire, lua.SemRelease, lua.SemRenew, lua.SemInspect}

// The tests below guard the cutting of the helper files (lua.go, library):
// each script carries only the helpers it calls, and a helper left out
// would fail only when a call reaches the line that needs it.

// helperFiles are the files of helpers that scripts are given parts of.
var helperFiles = []string{"prelude.lua", "semaphore.lua"}

// topLevel matches the lines a helper file may hold at its top level, so
// that cutting it at its definitions loses no statement.
var topLevel = regexp.MustCompile(`^(--.*|local function [A-Za-z_][A-Za-z0-9_]*\(.*|local [A-Za-z_][A-Za-z0-9_]* = .*|end|)$`)

var definition = regexp.MustCompile(`(?m)^local (?:function )?([A-Za-z_][A-Za-z0-9_]*)`)

func TestHelperFilesHoldOnlyDefinitionsAtTheirTopLevel(t *testing.T) {
	for _, name := range helperFiles {
		for i, line := range strings.Split(readFile(t, name), "\n") {
			if line != "" && line[0] != ' ' && !topLevel.MatchString(line) {
				t.Errorf("%s:%d: a top-level statement that is no definition: %q", name, i+1, line)
			}
		}
	}
	if topLevel.MatchString("redis.call('DEL', KEYS[1])") {
		t.Fatal("the check lets a statement through")
	}
}

func TestNoScriptPutsACommentMarkInAString(t *testing.T) {
	// lua.go reads a line's code as the part before its first "--".
	files, err := filepath.Glob("*.lua")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts found: %v", err)
	}
	for _, name := range files {
		for i, line := range strings.Split(readFile(t, name), "\n") {
			before, _, _ := strings.Cut(line, "--")
			if strings.Count(before, "'")%2 != 0 || strings.Count(before, `"`)%2 != 0 {
				t.Errorf("%s:%d: \"--\" inside a string: %q", name, i+1, line)
			}
		}
	}
}

func TestScriptsDefineEveryHelperTheyCall(t *testing.T) {
	var helpers []string
	for _, name := range helperFiles {
		for _, m := range definition.FindAllStringSubmatch(readFile(t, name), -1) {
			helpers = append(helpers, m[1])
		}
	}
	for _, s := range allScripts {
		defined := map[string]bool{}
		for _, m := range definition.FindAllStringSubmatch(s.Source(), -1) {
			defined[m[1]] = true
		}
		var code strings.Builder
		for _, line := range strings.Split(s.Source(), "\n") {
			before, _, _ := strings.Cut(line, "--")
			code.WriteString(before + "\n")
		}
		for _, h := range helpers {
			called := regexp.MustCompile(`\b` + h + `\b`).MatchString(code.String())
			if called && !defined[h] {
				t.Errorf("%s calls %s but is not given it", s.Name(), h)
			}
		}
	}
	// And the cutting does cut: a renewal needs none of the wait queue's helpers.
	if strings.Contains(lua.Renew.Source(), "local function announce") {
		t.Error("renew is given the release's helpers")
	}
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A script is marked read-only (the replicated mode sends no WAIT after
// it, and does not fail it for want of replicas) exactly when every
// command it may call, its helpers' included, only reads.
func TestReadOnlyScriptsCallOnlyReads(t *testing.T) {
	reads := map[string]bool{"EXISTS": true, "GET": true, "HGET": true, "HGETALL": true, "HKEYS": true, "HLEN": true,
		"HMGET": true, "PTTL": true, "TIME": true, "TYPE": true, "ZCARD": true, "ZCOUNT": true, "ZRANGE": true, "ZRANGEBYSCORE": true, "ZSCORE": true}
	// A command is named by a literal, or by a choice of two
	// (`cond and 'A' or 'B'`), in a call of redis.call, redis.pcall or
	// prelude.lua's attempt.
	named := regexp.MustCompile(`(?:redis\.p?call\(\s*|\battempt\(\s*)(?:'([A-Z]+)'|\w+ and '([A-Z]+)' or '([A-Z]+)')`)
	anyCall := regexp.MustCompile(`redis\.p?call\b|\battempt\(`)
	// attempt itself passes on the command its caller names.
	forward := regexp.MustCompile(`local function attempt\(\.\.\.\)\s+local ok, result = pcall\(redis\.call, \.\.\.\)`)
	for _, s := range allScripts {
		code := forward.ReplaceAllString(lua.Code(s.Source()), "")
		calls := named.FindAllStringSubmatch(code, -1)
		if len(calls) != len(anyCall.FindAllString(code, -1)) {
			t.Errorf("%s: calls a command whose name is not a literal: the test cannot tell whether it writes", s.Name())
			continue
		}
		var writes []string
		for _, m := range calls {
			for _, cmd := range m[1:] {
				if cmd != "" && !reads[cmd] {
					writes = append(writes, cmd)
				}
			}
		}
		if s.ReadOnly() != (len(writes) == 0) {
			t.Errorf("%s: ReadOnly() = %v, but it may call %v", s.Name(), s.ReadOnly(), writes)
		}
	}
}

// A script's code above its helpers' line (acquire.lua's free lock) runs
// before they are defined: lua.go refuses one that would need them there,
// or that would hide a name of Lua's from them.
func TestCodeAboveTheHelpersNeedsNoneOfThem(t *testing.T) {
	// The paths that run above the helpers, each by a line only it has.
	fastPaths := map[*lua.Script][]string{
		lua.Acquire: {
			"return {1, tonumber(countArg), 0}", // a free lock taken
			"return {0, holderTTL, 0}",          // a refusal that joins the queue
			"return {4, -2, 0}",                 // a hand-off's reservation for another owner
		},
		lua.Release: {
			"redis.call('DEL', key)\n    return 2", // nobody queued
			"redis.call('PUBLISH', to, msg)",       // a hand-off, or copies for keepers
		},
	}
	for script, lines := range fastPaths {
		helpers := strings.Index(script.Source(), "\n-- prelude:")
		for _, line := range lines {
			if at := strings.Index(script.Source(), line); at < 0 || at > helpers {
				t.Errorf("%s: %q is not above the helpers", script.Name(), line)
			}
		}
	}
	// Above its helpers release.lua reads the queue as far as announce
	// would for keepers, personalMax + 1 entries, publishes on the lock's
	// channel for more than personalMax, and reserves a hand-off for
	// handOffHold ms, all without naming those values of the prelude's;
	// acquire.lua puts another owner's reservation back for as long.
	copies := []struct {
		script *lua.Script
		texts  []string // above the helpers
		values []string // in the helpers the script is given
	}{
		{lua.Release, []string{"mode == 'k' and '4' or '2'", "if #tell > 4 then", "'PX', '20'"},
			[]string{"local personalMax = 4\n", "local handOffHold = 20\n"}},
		{lua.Acquire, []string{"'PX', '20'"}, []string{"local handOffHold = 20\n"}},
	}
	for _, c := range copies {
		helpers := strings.Index(c.script.Source(), "\n-- prelude:")
		for _, text := range c.texts {
			if at := strings.Index(c.script.Source(), text); at < 0 || at > helpers {
				t.Errorf("%s: %q is not above the helpers", c.script.Name(), text)
			}
		}
		for _, value := range c.values {
			if at := strings.Index(c.script.Source(), value); at < helpers {
				t.Errorf("%s: the prelude no longer says %q, which the path above the helpers copies", c.script.Name(), value)
			}
		}
	}
	bad := map[string]string{
		"a helper":      "local ok = attempt('GET', KEYS[1])\n-- @helpers\nreturn ownHold(KEYS[1], ARGV[1])",
		"a value":       "local ms = handOffHold\n-- @helpers\nreturn reservedFor(KEYS[1], ARGV[1])",
		"Lua's own":     "local type = ARGV[1]\n-- @helpers\nreturn ownHold(KEYS[1], type)",
		"in a list too": "local a, tonumber = 1, 2\n-- @helpers\nreturn ownHold(KEYS[1], a)",
	}
	for what, source := range bad {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s above the helpers: no panic", what)
				}
			}()
			lua.New("bad", source)
		}()
	}
	good := lua.New("good", "local key = KEYS[1] -- ownHold(key) in a comment is no call\nif key == '' then\n  return 0\nend\n-- @helpers\nreturn ownHold(key, ARGV[1])")
	above, below, _ := strings.Cut(good.Source(), "local function ownHold")
	if !strings.Contains(above, "return 0") || !strings.Contains(below, "return ownHold(key, ARGV[1])") {
		t.Errorf("the helpers are not put at their line:\n%s", good.Source())
	}
}

func TestLoadedTracksEachScriptUntilForgotten(t *testing.T) {
	var l lua.Loaded
	if l.Has(lua.Acquire) || l.Has(lua.Release) {
		t.Fatal("a new set holds a script")
	}
	l.Add(lua.Acquire)
	l.Add(lua.Acquire)
	if !l.Has(lua.Acquire) || l.Has(lua.Release) || l.Has(lua.SemInspect) {
		t.Fatal("Add(Acquire) added another script, or not Acquire")
	}
	l.Add(lua.SemInspect)
	l.Forget()
	if l.Has(lua.Acquire) || l.Has(lua.SemInspect) {
		t.Fatal("Forget kept a script")
	}
}
