package lua_test

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
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
