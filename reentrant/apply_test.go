package reentrant

import (
	"testing"
)

// The acquire script reads its nine flags by position (acquire.lua,
// ARGV[5]): each Op field must land in its own character, whatever the
// others are.
func TestAcquireFlagsPutEachFieldInItsPlace(t *testing.T) {
	for i := range 1 << 7 {
		on := func(n int) bool { return i>>n&1 == 1 }
		for _, rule := range []struct {
			fair, takesTurn bool
			char            byte
		}{{false, false, '0'}, {true, false, '1'}, {false, true, '2'}} {
			for expect := ExpectFree; expect <= ExpectHandOff; expect++ {
				op := Op{Reentry: on(0), Fence: on(1), twice: on(2), AskHolder: on(3), Waiting: on(4), NoStrays: on(5),
					Unqueued: on(6), Fair: rule.fair, TakesTurn: rule.takesTurn, Expect: expect}
				char := func(b bool) byte {
					if b {
						return '1'
					}
					return '0'
				}
				want := string([]byte{char(op.Reentry), char(op.Fence), rule.char, char(op.twice), char(op.AskHolder),
					char(op.Waiting), char(op.noStrays()), char(op.Unqueued), byte('0' + expect)})
				if got := acquireFlags(op); got != want {
					t.Fatalf("%+v: flags %q, want %q", op, got, want)
				}
			}
		}
	}
}
