// Package lua holds relock's Redis scripts and runs them by SHA.
//
// Every state change relock makes on a Redis node happens inside one of these
// scripts, atomically. The scripts live in .lua files next to this one and are
// embedded at build time. A script is sent by SHA (EVALSHA); when a node
// answers NOSCRIPT (it restarted, or someone ran SCRIPT FLUSH) the full source
// is sent once with EVAL, which also puts it back in the node's script cache,
// so callers never see the difference.
package lua

import (
	"context"
	"crypto/sha1"
	_ "embed"
	"encoding/hex"
	"strings"

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
	// Inspect reads a lock's holders, counts, lease and fencing counter.
	Inspect = New("inspect", inspectSource)
	// ForceUnlock deletes a lock whoever holds it.
	ForceUnlock = New("forceunlock", forceUnlockSource)
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
	SemAcquire = New("semacquire", semaphorePrelude+"\n"+semAcquireSource)
	// SemRelease gives an owner's permits back, announcing it.
	SemRelease = New("semrelease", semaphorePrelude+"\n"+semReleaseSource)
	// SemRenew extends the lease of the permits an owner holds.
	SemRenew = New("semrenew", semaphorePrelude+"\n"+semRenewSource)
	// SemInspect reads a semaphore's live holders, their permits and leases.
	SemInspect = New("seminspect", semaphorePrelude+"\n"+semInspectSource)
)

// Script is a Lua script with its SHA1 digest precomputed.
type Script struct {
	name   string
	source string
	sha    string
}

// New returns a script named name (used in errors and logs) whose body is
// source, preceded by the helpers of prelude.lua that every relock script
// may call.
func New(name, source string) *Script {
	source = prelude + "\n" + source
	sum := sha1.Sum([]byte(source))
	return &Script{name: name, source: source, sha: hex.EncodeToString(sum[:])}
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
		return c.Eval(ctx, s.source, keys, args...)
	}
	return cmd
}

// RunSHA queues the script by SHA only, for use inside a pipeline: a pipeline
// cannot fall back per command, so callers check replies with IsNoScript, call
// Load, and send the failed commands again.
func (s *Script) RunSHA(ctx context.Context, c redis.Scripter, keys []string, args ...any) *redis.Cmd {
	return c.EvalSha(ctx, s.sha, keys, args...)
}

// Load puts the script into c's script cache.
func (s *Script) Load(ctx context.Context, c redis.Scripter) error {
	return c.ScriptLoad(ctx, s.source).Err()
}

// IsNoScript reports whether err is Redis's answer to an unknown script SHA.
func IsNoScript(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT")
}
