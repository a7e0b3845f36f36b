package reentrant

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/lua"
)

// RenewResult is one node's answer to one renewal of a batch.
type RenewResult struct {
	Held bool  // the owner holds the lock on this node; its lease was extended
	Err  error // the call failed; Held is false
}

// RenewAll renews many locks in one pipelined round trip. The i-th result
// answers ops[i]. When the node has lost the script cache, the script is loaded
// once and the affected renewals are sent again in a second round trip.
func (n *Node) RenewAll(ctx context.Context, ops []Op) []RenewResult {
	results := make([]RenewResult, len(ops))
	pending := make([]int, 0, len(ops))
	for i, op := range ops {
		if err := op.check(1); err != nil {
			results[i].Err = err
			continue
		}
		pending = append(pending, i)
	}
	for attempt := 0; attempt < 2 && len(pending) > 0; attempt++ {
		cmds := make([]*redis.Cmd, len(pending))
		_, _ = n.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for j, i := range pending {
				cmds[j] = lua.Renew.RunSHA(ctx, p, []string{ops[i].Key.Lock}, renewArgs(ops[i])...)
			}
			return nil
		})
		var missing []int
		for j, i := range pending {
			r, err := cmds[j].Int64()
			if lua.IsNoScript(err) && attempt == 0 {
				missing = append(missing, i)
				continue
			}
			if err != nil {
				results[i] = RenewResult{Err: n.scriptError(ops[i].Key, err)}
				continue
			}
			results[i] = RenewResult{Held: r == 1}
		}
		if len(missing) > 0 {
			if err := lua.Renew.Load(ctx, n.rdb); err != nil {
				for _, i := range missing {
					results[i].Err = err
				}
				return results
			}
		}
		pending = missing
	}
	return results
}
