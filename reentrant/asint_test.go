package reentrant

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestIntOfRefusesWhatIsNoNumber(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want int64
		ok   bool
	}{
		{int64(7), 7, true},
		{int64(-2), -2, true},
		{"42", 42, true},
		{"abc", 0, false},
		{"", 0, false},
		{"1.5", 0, false},
		{nil, 0, false},
		{[]any{int64(1)}, 0, false},
	} {
		got, ok := intOf(tc.v)
		if got != tc.want || ok != tc.ok {
			t.Errorf("intOf(%#v) = %d, %v; want %d, %v", tc.v, got, ok, tc.want, tc.ok)
		}
	}
}

// A holder whose count or lease is no number fails the parse: it is not a
// hold of 0.
func TestLeasedHoldsRefusesWhatIsNoNumber(t *testing.T) {
	good, err := leasedHolds([]any{"c:a", int64(2), int64(1500)})
	if err != nil || good["c:a"] != (LeasedHold{Count: 2, TTL: 1500 * time.Millisecond}) {
		t.Fatalf("leasedHolds = %v, %v", good, err)
	}
	for _, reply := range [][]any{
		{"c:a", "abc", int64(1500)},
		{"c:a", int64(2), "abc"},
		{"c:a", nil, int64(1500)},
	} {
		if holds, err := leasedHolds(reply); err == nil || !strings.Contains(err.Error(), "c:a") {
			t.Errorf("leasedHolds(%v) = %v, %v; want an error naming the holder", reply, holds, err)
		}
	}
}

// scriptError names the key a script says it met foreign data at: the
// read leases apart from the readers, and an evicted owner's tombstone of
// each kind, its owner in hex so that any bytes of it come through.
func TestScriptErrorNamesTheKey(t *testing.T) {
	key, err := NewKey("", "n")
	if err != nil {
		t.Fatal(err)
	}
	odd := "c:a b\r\n"
	for _, tc := range []struct{ reply, key string }{
		{"WRONGTYPE string readers", key.Readers()},
		{"WRONGTYPE string readleases", key.ReadLeases()},
		{"WRONGTYPE hash tombstone lock 633a61", key.Tombstone("c:a")},
		{"WRONGTYPE hash tombstone read 633a61 script: f_1, on @user_script:1.", key.ReadTombstone("c:a")},
		{"WRONGTYPE string tombstone permits 633a6120620d0a", key.Semaphore().Tombstone(odd)},
		// Anything that does not say whose: the lock's key, as before.
		{"WRONGTYPE string tombstone read zz", key.Lock},
		{"WRONGTYPE string tombstone read", key.Lock},
		{"WRONGTYPE string tombstone other 633a61", key.Lock},
		{"WRONGTYPE hash", key.Lock},
	} {
		var wt *WrongTypeError
		if err := (&Node{}).scriptError(key, errors.New(tc.reply)); !errors.As(err, &wt) || wt.Key != tc.key {
			t.Errorf("scriptError(%q) = %v; want a WrongTypeError naming %q", tc.reply, err, tc.key)
		}
	}
}
