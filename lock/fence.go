package lock

import (
	"context"
	"time"

	"github.com/relock-go/relock/reentrant"
)

// TokenMode chooses how fencing tokens are made; see WithFencing.
type TokenMode int

const (
	// HybridTokens are the larger of (the highest counter a quorum has seen
	// + 1) and the wall clock in microseconds. They keep increasing even
	// when a node restarts empty and loses its counter, as long as the
	// clocks of successive holders stay within the drift bound. The default.
	HybridTokens TokenMode = iota + 1
	// CounterTokens are the highest counter a quorum has seen + 1: small,
	// dense numbers, strictly increasing as long as no node loses its
	// counter (a node restarted without persistence breaks them).
	CounterTokens
)

// WithFencing makes every first acquisition of the Mutex draw a fencing
// token, readable with Token until the hold ends. Tokens strictly increase
// across successive holders of the lock name, also when their acquisitions
// reach different majorities: the highest counter is read on the acquire
// quorum, and the new token is written back to a quorum before the
// acquisition returns, so any later quorum sees it. Re-entries keep the
// hold's token.
//
// A resource protected by the lock must remember the highest token it has
// accepted and reject any request carrying a lower one: that is what stops a
// holder that was paused past its lease from writing after the next holder.
// Fencing costs one more round trip per first acquisition. Mode 0 means
// HybridTokens.
func WithFencing(mode TokenMode) MutexOption {
	if mode == 0 {
		mode = HybridTokens
	}
	return func(m *Mutex) { m.fencing = mode }
}

// Token returns the fencing token of the current hold, or 0 when the handle
// holds nothing or was made without WithFencing.
func (m *Mutex) Token() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.token
}

// nextToken is the token for a holder that read seen as the highest counter
// of its acquire quorum.
func nextToken(mode TokenMode, seen int64, now time.Time) int64 {
	token := seen + 1
	if mode == HybridTokens {
		token = max(token, now.UnixMicro())
	}
	return token
}

// fenceDraws bounds how many tokens drawToken draws for one hold.
const fenceDraws = 3

// drawToken makes the token of a new hold and writes it back to a quorum.
// It fails with a *QuorumError when fewer than a quorum stored it before
// validUntil: the token must not be handed out then, since a later holder
// might not see it.
//
// The counter read on the acquire quorum (seen) is not enough on its own:
// the acquire may have read a node before an earlier holder's write-back
// landed there, on a node that holder's acquire never reached, so the
// quorums met but the read missed the write. Each write-back therefore
// reports the counter it found, and a token some node already had is drawn
// again above it. The earlier holder's write-back reached a quorum before
// its hold began, so before this hold's write-back: one node of this
// quorum reports it. (Found by the SPIN model; model/README.md.)
func (c *Client) drawToken(ctx context.Context, key reentrant.Key, mode TokenMode, seen int64, validUntil time.Time) (int64, error) {
	for draw := 1; ; draw++ {
		token := nextToken(mode, seen, time.Now())
		replies := fanOut(c, ctx, func(ctx context.Context, n *reentrant.Node) (int64, error) {
			return n.RaiseFence(ctx, key, token)
		})
		stored, taken := 0, false
		for _, r := range replies {
			if r.err != nil {
				continue
			}
			stored++ // the counter is at least token now
			if r.value >= token {
				taken, seen = true, max(seen, r.value)
			}
		}
		late := !time.Now().Before(validUntil)
		if taken && !late && draw < fenceDraws && stored >= c.quorum {
			continue
		}
		if taken || stored < c.quorum || late {
			return 0, &QuorumError{Op: "fence", Needed: c.quorum, Agreed: stored,
				Late: stored >= c.quorum, Nodes: failures(c, replies)}
		}
		return token, nil
	}
}
