package reentrant

import (
	"context"
)

// RenewResult is one node's answer to one renewal of a batch.
type RenewResult struct {
	Held bool  // the owner holds the lock on this node; its lease was extended
	Err  error // the call failed; Held is false
}

// RenewAll renews many locks in one pipelined round trip. The i-th result
// answers ops[i]. When the node has lost the script cache, the script is loaded
// once and the affected renewals are sent again in a second round trip.
// A zero Op is a renewal skipped this round: it is not sent, and its result
// is zero (not held, no error).
func (n *Node) RenewAll(ctx context.Context, ops []Op) []RenewResult {
	results := make([]RenewResult, len(ops))
	calls := make([]scriptCall, 0, len(ops))
	sent := make([]int, 0, len(ops))
	for i, op := range ops {
		if op == (Op{}) {
			continue
		}
		if err := op.check(1); err != nil {
			results[i].Err = err
			continue
		}
		calls = append(calls, op.renewCall())
		sent = append(sent, i)
	}
	for j, cmd := range n.pipelined(ctx, calls) {
		i := sent[j]
		r, err := cmd.Int64()
		if err != nil {
			results[i] = RenewResult{Err: n.scriptError(ops[i].Key, err)}
			continue
		}
		results[i] = RenewResult{Held: r == 1}
	}
	return results
}
