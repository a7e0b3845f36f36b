// Package lua holds relock's Redis scripts and runs them by SHA.
//
// Every state change relock makes on a Redis node happens inside one of these
// scripts, atomically. The scripts live in .lua files next to this one and are
// embedded at build time. A script is sent by SHA (EVALSHA) where the node is
// known to hold it (Loaded), and by its source (EVAL, which also caches it)
// where not yet; when a node answers NOSCRIPT (it restarted, or someone ran
// SCRIPT FLUSH) the full source is sent once with EVAL, which puts it back in
// the node's script cache, so callers never see the difference.
package lua

import (
	"context"
	"crypto/sha1"
	_ "embed"
	"encoding/hex"
	"regexp"
	"strings"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed prelude.lua
	prelude string
	//go:embed acquire.lua
	acquireSource string
	//go:embed release.lua
	releaseSource string
	//go:embed renew.lua
	renewSource string
	//go:embed inspect.lua
	inspectSource string
	//go:embed forceunlock.lua
	forceUnlockSource string
	//go:embed fence.lua
	fenceSource string
	//go:embed readacquire.lua
	readAcquireSource string
	//go:embed readrelease.lua
	readReleaseSource string
	//go:embed readrenew.lua
	readRenewSource string
	//go:embed semaphore.lua
	semaphorePrelude string
	//go:embed semacquire.lua
	semAcquireSource string
	//go:embed semrelease.lua
	semReleaseSource string
	//go:embed semrenew.lua
	semRenewSource string
	//go:embed seminspect.lua
	semInspectSource string
)

// The scripts. Each file documents its KEYS, ARGV and reply; prelude.lua
// holds the helpers they share.
var (
	// Acquire takes or re-enters a lock for one owner.
	Acquire = New("acquire", acquireSource)
	// Release lowers an owner's hold count, deleting and announcing the lock at zero.
	Release = New("release", releaseSource)
	// Renew extends the lease of a lock its owner holds.
	Renew = New("renew", renewSource)
	// Inspect reads a lock's holders, counts, lease and fencing counter,
	// and the permits of the semaphore of the same name.
	Inspect = withHelpers("inspect", inspectSource, semaphoreHelpers).readOnly()
	// ForceUnlock frees a name of every hold on it, whoever holds it: the
	// lock's, an RWMutex's readers', and the semaphore's permits.
	ForceUnlock = withHelpers("forceunlock", forceUnlockSource, semaphoreHelpers)
	// Fence raises a lock's fencing counter.
	Fence = New("fence", fenceSource)
	// ReadAcquire takes or re-enters an RWMutex read hold for one owner.
	ReadAcquire = New("readacquire", readAcquireSource)
	// ReadRelease lowers an owner's read hold count, dropping its share at zero.
	ReadRelease = New("readrelease", readReleaseSource)
	// ReadRenew extends the lease of an owner's read hold.
	ReadRenew = New("readrenew", readRenewSource)
)

// The semaphore's scripts: semaphore.lua holds the helpers they share
// (and explains the data model), after prelude.lua's.
var (
	// SemAcquire takes n permits of a semaphore for one owner, under its own lease.
	SemAcquire = withHelpers("semacquire", semAcquireSource, semaphoreHelpers)
	// SemRelease gives an owner's permits back, announcing it.
	SemRelease = withHelpers("semrelease", semReleaseSource, semaphoreHelpers)
	// SemRenew extends the lease of the permits an owner holds.
	SemRenew = withHelpers("semrenew", semRenewSource, semaphoreHelpers)
	// SemInspect reads a semaphore's live holders, their permits and leases.
	SemInspect = withHelpers("seminspect", semInspectSource, semaphoreHelpers).readOnly()
)

// Script is a Lua script with its SHA1 digest precomputed.
type Script struct {
	name     string
	source   string
	sha      string
	readonly bool // it never writes (see ReadOnly)
	index    int  // its bit in a Loaded
}

// readOnly marks s as a script that never writes, and returns it.
func (s *Script) readOnly() *Script {
	s.readonly = true
	return s
}

// ReadOnly reports whether the script only reads: a node in the replicated
// mode (reentrant.Replication) need not wait for replicas after it.
func (s *Script) ReadOnly() bool { return s.readonly }

// New returns a script named name (used in errors and logs) whose body is
// source, preceded by the helpers of prelude.lua it calls.
func New(name, source string) *Script {
	return withHelpers(name, source, preludeHelpers)
}

// withHelpers returns the script name whose body is source, preceded by
// the helpers of lib it calls, directly or through other helpers.
//
// A script may instead place its helpers at a line of its own,
// helpersMark: the code above that line runs before they are defined, so
// a path that returns there makes none of their closures. That code may
// name no helper, nor declare a local that would hide from the helpers a
// name of Lua's they use (withHelpers panics on either).
func withHelpers(name, source string, lib *library) *Script {
	if before, after, marked := strings.Cut(source, helpersMark); marked {
		if early := lib.namedIn(code(before)); len(early) > 0 {
			panic("lua: " + name + " names " + strings.Join(early, ", ") + " above its helpers")
		}
		for _, local := range localsDeclared(code(before)) {
			if builtins[local] {
				panic("lua: " + name + " declares a local " + local + " above its helpers, hiding Lua's from them")
			}
		}
		source = before + "\n" + lib.helpersFor(after) + after
	} else {
		source = lib.helpersFor(source) + source
	}
	sum := sha1.Sum([]byte(source))
	index := int(scriptsMade.Add(1)) - 1
	return &Script{name: name, source: source, sha: hex.EncodeToString(sum[:]), index: index}
}

// scriptsMade numbers the scripts in the order they are made, for Loaded.
var scriptsMade atomic.Int32

// A library is a file of helpers (prelude.lua, and semaphore.lua after it)
// cut into its top-level definitions. Redis runs a script's whole text on
// every call, so every "local function" of the text makes a closure each
// time, and the garbage of each call is collected: a script of two
// commands took 3.6 µs a call with all of prelude.lua in front of it, 2.3 µs
// without (INFO commandstats, under redis-benchmark). Each script therefore
// gets only the helpers it calls.
//
// A script whose most frequent path needs none of them (acquire.lua taking
// a free lock, release.lua freeing it with nobody queued) goes further and
// runs that path above its helpers (see helpersMark). In instructions a
// call under callgrind (redis-server 7.0.15), acquire.lua taking a free
// lock went from 89,351 with its helpers in front to 68,670 with them
// below that path, against 66,371 for a script of its three commands
// alone, and release.lua freeing it from 74,191 to 50,940: the closures of
// the helpers, their upvalues and their garbage had cost more than the
// commands themselves. The calls of a contended cycle followed (2026-12-07):
// a waiting owner's refused attempt that joins the queue, 108,099 → 79,033,
// a release that hands the lock off, 104,304 → 80,482, and the target's
// acquire of the lock reserved for it, 99,363 → 73,725
// (scripts/script-instructions.sh).
type library struct {
	header string       // the text before the first definition: comments
	defs   []definition // in the order of the files
}

// definition is one top-level "local function NAME" or "local NAME = ...",
// with everything up to the next one (its body, and the comments that
// introduce the next).
type definition struct {
	name string
	text string
	uses []int // the definitions its text names
}

// helpersMark is the line of a script at which withHelpers puts its
// helpers, when the script has one; otherwise they go in front of it.
const helpersMark = "\n-- @helpers\n"

// builtins are the names of Lua's own that relock's helpers use: a local of
// the same name above a script's helpersMark would hide them from the
// helpers.
var builtins = map[string]bool{
	"redis": true, "string": true, "math": true, "table": true, "error": true, "pcall": true, "type": true,
	"tonumber": true, "tostring": true, "ipairs": true, "pairs": true, "unpack": true, "select": true, "next": true,
}

// localDeclaration matches a "local" statement's names, or a local function's.
var localDeclaration = regexp.MustCompile(`\blocal\s+(?:function\s+)?([A-Za-z_][A-Za-z0-9_]*(?:\s*,\s*[A-Za-z_][A-Za-z0-9_]*)*)`)

// localsDeclared returns the names text declares with "local".
func localsDeclared(text string) []string {
	var out []string
	for _, m := range localDeclaration.FindAllStringSubmatch(text, -1) {
		for _, name := range strings.Split(m[1], ",") {
			out = append(out, strings.TrimSpace(name))
		}
	}
	return out
}

var (
	preludeHelpers   = newLibrary(prelude)
	semaphoreHelpers = newLibrary(prelude + "\n" + semaphorePrelude)

	definitionLine = regexp.MustCompile(`(?m)^local (?:function )?([A-Za-z_][A-Za-z0-9_]*)`)
)

// newLibrary cuts text into its definitions. The helper files hold nothing
// else at the top level (lua_test checks it), so no statement is lost
// between two definitions.
func newLibrary(text string) *library {
	starts := definitionLine.FindAllStringSubmatchIndex(text, -1)
	lib := &library{header: text}
	if len(starts) == 0 {
		return lib
	}
	lib.header = text[:starts[0][0]]
	for i, m := range starts {
		end := len(text)
		if i+1 < len(starts) {
			end = starts[i+1][0]
		}
		lib.defs = append(lib.defs, definition{name: text[m[2]:m[3]], text: text[m[0]:end]})
	}
	for i := range lib.defs {
		lib.defs[i].uses = lib.named(lib.defs[i].text, i)
	}
	return lib
}

// namedIn returns the names of the definitions that the code text names.
func (lib *library) namedIn(text string) []string {
	var out []string
	for _, i := range lib.named(text, -1) {
		out = append(out, lib.defs[i].name)
	}
	return out
}

// named returns the definitions whose name appears as a word in the code
// of text (its comments taken out), except the one numbered self.
func (lib *library) named(text string, self int) []int {
	text = code(text)
	var out []int
	for i, d := range lib.defs {
		if i != self && containsWord(text, d.name) {
			out = append(out, i)
		}
	}
	return out
}

// helpersFor returns the header and the definitions source calls, directly or
// through others, in the library's order (each one after those it uses).
func (lib *library) helpersFor(source string) string {
	need := make([]bool, len(lib.defs))
	todo := lib.named(source, -1)
	for len(todo) > 0 {
		i := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if !need[i] {
			need[i] = true
			todo = append(todo, lib.defs[i].uses...)
		}
	}
	var b strings.Builder
	b.WriteString(lib.header)
	for i, d := range lib.defs {
		if need[i] {
			b.WriteString(d.text)
		}
	}
	b.WriteString("\n")
	return b.String()
}

// code returns text without its Lua comments: each line up to its first
// "--". relock's scripts never put "--" in a string (lua_test checks it).
func code(text string) string {
	lines := strings.Split(text, "\n")
	for i, line := range lines {
		if at := strings.Index(line, "--"); at >= 0 {
			lines[i] = line[:at]
		}
	}
	return strings.Join(lines, "\n")
}

// containsWord reports whether word appears in text with no letter, digit
// or underscore on either side.
func containsWord(text, word string) bool {
	for at := 0; ; {
		i := strings.Index(text[at:], word)
		if i < 0 {
			return false
		}
		i += at
		end := i + len(word)
		if (i == 0 || !isNamePart(text[i-1])) && (end == len(text) || !isNamePart(text[end])) {
			return true
		}
		at = i + 1
	}
}

func isNamePart(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// Name returns the script's name.
func (s *Script) Name() string { return s.name }

// SHA returns the hex SHA1 digest Redis knows the script by.
func (s *Script) SHA() string { return s.sha }

// Source returns the script's Lua source.
func (s *Script) Source() string { return s.source }

// Run runs the script on c by SHA, falling back to sending the source when the
// node does not have it cached. keys and args are passed as KEYS and ARGV; they
// are never spliced into the script text.
func (s *Script) Run(ctx context.Context, c redis.Scripter, keys []string, args ...any) *redis.Cmd {
	cmd := c.EvalSha(ctx, s.sha, keys, args...)
	if IsNoScript(cmd.Err()) {
		return s.RunSource(ctx, c, keys, args...)
	}
	return cmd
}

// RunSHA queues the script by SHA only, for use inside a pipeline: a pipeline
// cannot fall back per command, so callers check replies with IsNoScript, call
// Load, and send the failed commands again.
func (s *Script) RunSHA(ctx context.Context, c redis.Scripter, keys []string, args ...any) *redis.Cmd {
	return c.EvalSha(ctx, s.sha, keys, args...)
}

// RunSource runs the script on c by its source (EVAL), which also caches
// it there: the call to make after a node answered NOSCRIPT, without asking
// by SHA again.
func (s *Script) RunSource(ctx context.Context, c redis.Scripter, keys []string, args ...any) *redis.Cmd {
	return c.Eval(ctx, s.source, keys, args...)
}

// Load puts the script into c's script cache.
func (s *Script) Load(ctx context.Context, c redis.Scripter) error {
	return c.ScriptLoad(ctx, s.source).Err()
}

// Loaded is the set of scripts one server is known to hold in its script
// cache: each answered there, by SHA or by source, since the server last
// answered NOSCRIPT. A script not in it goes by source (EVAL: one round trip
// that also caches it) rather than by SHA first (EVALSHA, NOSCRIPT, then
// EVAL: two), so that a node first reached through a link slower than half
// a call's wait can still be reached at all. Its zero value is empty, and
// it is safe for concurrent use.
type Loaded struct{ bits atomic.Uint64 }

// loadedBits is how many scripts a Loaded tracks; any made after them
// counts as loaded: it goes by SHA first.
const loadedBits = 64

// Has reports whether s is known to be cached on the server.
func (l *Loaded) Has(s *Script) bool {
	return s.index >= loadedBits || l.bits.Load()&(1<<s.index) != 0
}

// Add records that the server answered a call of s.
func (l *Loaded) Add(s *Script) {
	if s.index < loadedBits && !l.Has(s) {
		l.bits.Or(1 << s.index)
	}
}

// Forget empties the set: the server answered NOSCRIPT, so it lost its
// script cache (a restart, SCRIPT FLUSH), every script with it.
func (l *Loaded) Forget() { l.bits.Store(0) }

// IsNoScript reports whether err is Redis's answer to an unknown script SHA.
func IsNoScript(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT")
}
