package reentrant_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/relock-go/relock/reentrant"
)

func TestNewKeyKeepsTheWholeNameInOneHashTag(t *testing.T) {
	names := []string{"orders:42", "}", "{", "a}b", "%7D", "%", "line\nbreak", "ünï 🔒", strings.Repeat("z", 1024)}
	seen := map[string]string{}
	for _, name := range names {
		k, err := reentrant.NewKey("", name)
		if err != nil {
			t.Fatalf("NewKey(%q): %v", name, err)
		}
		// Redis hashes the text between the first '{' and the first '}'
		// after it: that must be the whole escaped name, for every key.
		for _, key := range []string{k.Lock, k.Channel, k.Fence, k.Queue, k.Tombstone("c:a"), k.Tombstone("}{owner}")} {
			open := strings.IndexByte(key, '{')
			end := open + strings.IndexByte(key[open:], '}')
			if tag := key[open+1 : end]; strings.Contains(tag, "}") || tag != strings.TrimSuffix(strings.TrimPrefix(k.Lock, "relock:{"), "}") {
				t.Errorf("name %q: key %q has tag %q", name, key, tag)
			}
		}
		if prev, dup := seen[k.Lock]; dup {
			t.Errorf("names %q and %q share key %q", prev, name, k.Lock)
		}
		seen[k.Lock] = name
	}
}

func TestNewKeyNames(t *testing.T) {
	k, err := reentrant.NewKey("app", "orders:42")
	if err != nil {
		t.Fatal(err)
	}
	want := reentrant.Key{Name: "orders:42", Lock: "app:{orders:42}", Channel: "app:{orders:42}:released", Fence: "app:{orders:42}:fence", Tombstones: "app:{orders:42}:gone:", Queue: "app:{orders:42}:queue", QueueDeadlines: "app:{orders:42}:queue:deadlines"}
	if k != want {
		t.Fatalf("NewKey = %+v; want %+v", k, want)
	}
	if got := k.Tombstone("c:a"); got != "app:{orders:42}:gone:c:a" {
		t.Fatalf("Tombstone(c:a) = %q", got)
	}
	if _, err := reentrant.NewKey("", ""); !errors.Is(err, reentrant.ErrInvalidArgument) {
		t.Fatalf("empty name: %v; want ErrInvalidArgument", err)
	}
}

func TestWrongTypeErrorNamesTheKey(t *testing.T) {
	err := error(&reentrant.WrongTypeError{Key: "relock:{x}", Type: "string"})
	if !errors.Is(err, reentrant.ErrWrongType) {
		t.Fatal("errors.Is(WrongTypeError, ErrWrongType) = false")
	}
	if !strings.Contains(err.Error(), `"relock:{x}"`) || !strings.Contains(err.Error(), "string") {
		t.Fatalf("message %q lacks the key or its type", err)
	}
}

func TestTombstonesOfDifferentLocksAndOwnersNeverCollide(t *testing.T) {
	// Every key of every lock, and every tombstone of every owner, is
	// distinct: a tombstone must never be read as another lock's key.
	seen := map[string]string{}
	for _, name := range []string{"a", "a:gone:x", "a}:gone:x", "b"} {
		k, err := reentrant.NewKey("", name)
		if err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{k.Lock, k.Fence, k.Tombstone("x"), k.Tombstone("y"), k.Tombstone("")} {
			if prev, dup := seen[key]; dup {
				t.Errorf("%q is both %s and a key of %q", key, prev, name)
			}
			seen[key] = "a key of " + name
		}
	}
}

func TestRWMutexKeysShareTheTagAndDiffer(t *testing.T) {
	k, err := reentrant.NewKey("app", "a}b")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{k.Lock: true, k.Channel: true, k.Fence: true, k.Queue: true, k.Tombstone("c:a"): true}
	for _, key := range []string{k.Readers(), k.ReadLeases(), k.WriterWaiting(), k.ReadChannel(), k.ReadTombstone("c:a")} {
		if !strings.HasPrefix(key, k.Lock+":") {
			t.Errorf("key %q is not under the lock's tag %q", key, k.Lock)
		}
		if seen[key] {
			t.Errorf("key %q used twice", key)
		}
		seen[key] = true
	}
	if k.WaitChannel(reentrant.Read) != k.ReadChannel() || k.WaitChannel(reentrant.Write) != k.Channel || k.WaitChannel(reentrant.Exclusive) != k.Channel {
		t.Error("WaitChannel: readers wait on ReadChannel, the others on Channel")
	}
}
