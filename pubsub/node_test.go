package pubsub

import (
	"slices"
	"testing"

	"github.com/redis/go-redis/v9"
)

// heard records what a node passes on.
type heard struct{ messages [][2]string }

func (h *heard) message(_ int, channel, payload string, personal bool) {
	if personal {
		payload += " (personal)"
	}
	h.messages = append(h.messages, [2]string{channel, payload})
}
func (h *heard) connectionChanged(int, bool) {}
func (h *heard) confirmed(int, []string)     {}

// A node of a Broker with Options.Process wants each channel together with
// its personal channel, and passes a message on either as the channel's.
func TestNodePersonalChannelGoesWithItsChannel(t *testing.T) {
	ev := &heard{}
	n := newNode(0, nil, Options{Process: "p1"}.withDefaults(), ev)
	personal := PersonalChannel("c", "p1")

	n.want("c")
	for _, ch := range []string{"c", personal} {
		if _, ok := n.subs.want[ch]; !ok {
			t.Fatalf("wanting c did not want %q", ch)
		}
	}
	n.handle(&redis.Message{Channel: personal, Payload: "r1 p1:a "})
	n.handle(&redis.Message{Channel: "c", Payload: "r2"})
	n.handle(&redis.Message{Channel: PersonalChannel("c", "p2"), Payload: "r3"})
	want := [][2]string{{"c", "r1 p1:a  (personal)"}, {"c", "r2"}, {PersonalChannel("c", "p2"), "r3"}}
	if !slices.Equal(ev.messages, want) {
		t.Fatalf("passed on %q, want %q", ev.messages, want)
	}

	n.unwant("c")
	if len(n.subs.want) != 0 {
		t.Fatalf("unwanting c left %v wanted", n.subs.want)
	}
}
