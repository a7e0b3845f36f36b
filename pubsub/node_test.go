package pubsub

import (
	"context"
	"fmt"
	"io"
	"net"
	"slices"
	"testing"
	"time"

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

// Only a read that timed out is silence. A dial or a write that times out
// (go-redis redials and resubscribes inside a receive) means the node is
// unreachable, and so does any other error. The errors are real ones, from
// a loopback connection with deadlines already passed.
func TestOnlyAReadTimeoutIsSilence(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	past := time.Now().Add(-time.Second)

	_ = conn.SetReadDeadline(past)
	_, readErr := conn.Read(make([]byte, 1))
	_ = conn.SetWriteDeadline(past)
	_, writeErr := conn.Write([]byte("PING\r\n"))
	_, dialErr := (&net.Dialer{Deadline: past}).Dial("tcp", ln.Addr().String())

	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"read timeout", readErr, true},
		{"wrapped read timeout", fmt.Errorf("redis: %w", readErr), true},
		{"write timeout", writeErr, false},
		{"dial timeout", dialErr, false},
		{"EOF", io.EOF, false},
		{"context deadline", context.DeadlineExceeded, false},
	} {
		if c.err == nil {
			t.Fatalf("%s: no error to test", c.name)
		}
		if got := isSilence(c.err); got != c.want {
			t.Errorf("isSilence(%s: %v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
}
