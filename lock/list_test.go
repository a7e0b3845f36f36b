package lock

import (
	"errors"
	"testing"
	"time"

	"github.com/relock-go/relock/reentrant"
)

func TestNameOfKeyUndoesNewKey(t *testing.T) {
	for _, name := range []string{"a", "orders:42", "}", "%", "%7D", "%25}", "{x}", "a b\nc", "ünï"} {
		for _, prefix := range []string{"relock", "app:{x", "p*"} {
			key, err := reentrant.NewKey(prefix, name)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := nameOfKey(prefix, key.Lock)
			if !ok || got != name {
				t.Errorf("nameOfKey(%q, %q) = %q, %v; want %q", prefix, key.Lock, got, ok, name)
			}
			for _, other := range []string{key.Fence, key.Tombstone("c:o"), key.Channel, key.Queue} {
				if got, ok := nameOfKey(prefix, other); ok {
					t.Errorf("nameOfKey(%q, %q) = %q: not a lock hash", prefix, other, got)
				}
			}
		}
	}
	if got, ok := nameOfKey("relock", "other:{a}"); ok {
		t.Errorf("a key of another prefix gave %q", got)
	}
}

func TestGlobEscaperKeepsPrefixLiteral(t *testing.T) {
	if got, want := globEscaper.Replace(`a*b?[c]\`), `a\*b\?\[c\]\\`; got != want {
		t.Fatalf("globEscaper = %q; want %q", got, want)
	}
}

func state(node int, ttl time.Duration, holders map[string]int64) NodeState {
	return NodeState{Node: node, Info: reentrant.Info{Holders: holders, TTL: ttl}}
}

func TestQuorumHolder(t *testing.T) {
	down := NodeState{Node: 2, Err: errors.New("down")}
	for _, tc := range []struct {
		name   string
		states []NodeState
		quorum int
		want   Holder
		held   bool
	}{
		{"free", []NodeState{state(0, -2, nil), state(1, -2, nil), state(2, -2, nil)}, 2, Holder{}, false},
		{"one node", []NodeState{state(0, 5*time.Second, map[string]int64{"a": 2})}, 1,
			Holder{Owner: "a", Count: 2, TTL: 5 * time.Second, Nodes: 1}, true},
		{"quorum-th lease and count", []NodeState{
			state(0, 9*time.Second, map[string]int64{"a": 3}),
			state(1, 5*time.Second, map[string]int64{"a": 2}),
			state(2, 7*time.Second, map[string]int64{"a": 2}),
		}, 2, Holder{Owner: "a", Count: 2, TTL: 7 * time.Second, Nodes: 3}, true},
		{"minority only", []NodeState{
			state(0, time.Second, map[string]int64{"a": 1}),
			state(1, time.Second, map[string]int64{"b": 1}),
			down,
		}, 2, Holder{}, false},
		{"unreadable node counts for no one", []NodeState{
			state(0, time.Second, map[string]int64{"a": 1}),
			state(1, -2, nil),
			down,
		}, 2, Holder{}, false},
		{"no expiry", []NodeState{
			state(0, NoExpiry, map[string]int64{"a": 1}),
			state(1, NoExpiry, map[string]int64{"a": 1}),
			state(2, time.Second, map[string]int64{"a": 1}),
		}, 2, Holder{Owner: "a", Count: 1, TTL: NoExpiry, Nodes: 3}, true},
	} {
		got, held := QuorumHolder(tc.states, tc.quorum)
		if got != tc.want || held != tc.held {
			t.Errorf("%s: QuorumHolder = %+v, %v; want %+v, %v", tc.name, got, held, tc.want, tc.held)
		}
	}
}
