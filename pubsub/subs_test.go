package pubsub

import (
	"slices"
	"testing"
	"time"
)

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestSubTableDiff(t *testing.T) {
	st := newSubTable()
	st.add("a")
	st.add("b")
	active := map[string]bool{"b": true, "c": true}
	sub, unsub := st.diff(active)
	if !slices.Equal(sub, []string{"a"}) || !slices.Equal(unsub, []string{"c"}) {
		t.Fatalf("diff = %v, %v; want [a], [c]", sub, unsub)
	}
}

func TestSubTableAddIsIdempotent(t *testing.T) {
	st := newSubTable()
	r1, added1 := st.add("a")
	r2, added2 := st.add("a")
	if !added1 || added2 || r1 != r2 {
		t.Fatal("second add of a channel must return the same confirmation")
	}
}

func TestSubTableBarrierConfirms(t *testing.T) {
	st := newSubTable()
	ra, _ := st.add("a")
	rb, _ := st.add("b")

	// Only channels subscribed on the connection get a barrier.
	seq, ok := st.nextBarrier(map[string]bool{"a": true})
	if !ok {
		t.Fatal("no barrier for an unconfirmed channel")
	}
	if _, ok := st.nextBarrier(map[string]bool{"a": true}); ok {
		t.Fatal("a second barrier for a channel already waiting for one")
	}
	seq2, ok := st.nextBarrier(map[string]bool{"a": true, "b": true})
	if !ok || seq2 <= seq {
		t.Fatalf("barrier for b: %d, %v", seq2, ok)
	}

	st.confirm(seq)
	if !isClosed(ra) || isClosed(rb) {
		t.Fatal("answer to the first barrier must confirm a only")
	}
	st.confirm(seq2)
	if !isClosed(rb) {
		t.Fatal("answer to the second barrier must confirm b")
	}
	if _, ok := st.nextBarrier(map[string]bool{"a": true, "b": true}); ok {
		t.Fatal("barrier with everything confirmed")
	}
}

func TestSubTableLaterBarrierConfirmsEarlier(t *testing.T) {
	st := newSubTable()
	ra, _ := st.add("a")
	seq, _ := st.nextBarrier(map[string]bool{"a": true})
	st.confirm(seq + 5)
	if !isClosed(ra) {
		t.Fatal("a later barrier's answer proves earlier commands ran")
	}
}

func TestSubTableResubscribedChannelNeedsNewBarrier(t *testing.T) {
	st := newSubTable()
	st.add("a")
	seq, _ := st.nextBarrier(map[string]bool{"a": true})
	st.remove("a")
	ra, _ := st.add("a") // wanted again before the old barrier came back
	st.confirm(seq)
	if isClosed(ra) {
		t.Fatal("an old barrier confirmed a newer subscription")
	}
	seq2, ok := st.nextBarrier(map[string]bool{"a": true})
	if !ok {
		t.Fatal("no barrier for the new subscription")
	}
	st.confirm(seq2)
	if !isClosed(ra) {
		t.Fatal("new subscription not confirmed")
	}
}

func TestSubTableInvalidate(t *testing.T) {
	st := newSubTable()
	ra, _ := st.add("a")
	st.add("b")
	active := map[string]bool{"a": true, "b": true}
	seq, _ := st.nextBarrier(active)
	st.confirm(seq) // both confirmed

	st.add("c")
	seqC, _ := st.nextBarrier(map[string]bool{"a": true, "b": true, "c": true})

	st.invalidate()
	ra2, _ := st.add("a")
	if ra2 == ra || isClosed(ra2) {
		t.Fatal("after invalidate a channel must need confirming again")
	}
	// The barrier sent on the broken connection will never be answered; an
	// answer with its number (from a new connection) must not count either.
	st.confirm(seqC)
	if isClosed(ra2) {
		t.Fatal("barrier from before invalidate confirmed")
	}
	seq2, ok := st.nextBarrier(map[string]bool{"a": true, "b": true, "c": true})
	if !ok {
		t.Fatal("no barrier after invalidate")
	}
	st.confirm(seq2)
	for ch, s := range st.want {
		if !s.confirmed {
			t.Fatalf("%s not confirmed after the new barrier", ch)
		}
	}
}

func TestSubTableBarrierFailed(t *testing.T) {
	st := newSubTable()
	st.add("a")
	seq, _ := st.nextBarrier(map[string]bool{"a": true})
	st.barrierFailed(seq)
	if _, ok := st.nextBarrier(map[string]bool{"a": true}); !ok {
		t.Fatal("a failed barrier must be sent again")
	}
}

func TestSubTableHealthPing(t *testing.T) {
	st := newSubTable()
	st.ping = true
	if _, ok := st.nextBarrier(nil); !ok {
		t.Fatal("health ping not sent")
	}
	if _, ok := st.nextBarrier(nil); ok {
		t.Fatal("health ping sent twice")
	}
}

func TestBarrierPayload(t *testing.T) {
	seq, ok := parseBarrier(barrierPayload(42))
	if !ok || seq != 42 {
		t.Fatalf("parse(payload(42)) = %d, %v", seq, ok)
	}
	for _, p := range []string{"", "PONG", barrierPrefix, barrierPrefix + "x", "other:1"} {
		if _, ok := parseBarrier(p); ok {
			t.Fatalf("%q parsed as a barrier", p)
		}
	}
}

func TestRedialBackoffGrowsToAboutASecond(t *testing.T) {
	b := newRedialBackoff()
	if d := b.Next(); d < 25*time.Millisecond || d >= 75*time.Millisecond {
		t.Fatalf("first redial after %v; want about 50ms", d)
	}
	for range 10 {
		b.Next()
	}
	if d := b.Next(); d < 500*time.Millisecond || d >= 1500*time.Millisecond {
		t.Fatalf("a node down for long is redialled after %v; want about 1s", d)
	}
}
