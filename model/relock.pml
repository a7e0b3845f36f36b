/*
 * relock.pml: a Promela model of relock's Mutex protocol, for SPIN.
 *
 * Two owners (A = 0, B = 1) lock one lock name over three Redis nodes
 * (quorum 2). Each node applies the scripts (acquire, release, renew,
 * fence; the undo of a failed attempt is a release) atomically on its own
 * state, as Redis runs a Lua script: one d_step per script call. Owners
 * follow the client: fan-out, quorum count, validity, the undo of a failed
 * attempt in the background, the tie-breaker's keeping, fencing tokens,
 * unlock, loss (and, with -DREENTRY, a re-entry).
 *
 * The network. Every request is a message of its own in a small per
 * (owner, node) set of in-flight slots (FGS of them), so requests to one
 * node land in any order (reordering), and land at any moment until they
 * are MAXDELAY ticks old, then they are gone (the bounded-delay
 * assumption: a message that is never delivered is a lost one). The owner
 * stops waiting for a node's reply at any moment (its timeout): what lands
 * after that is a late request whose reply nobody reads, which also covers
 * a lost reply. With -DDUPS=1 one request may be retried as go-redis
 * retries (see DUP). An owner's send waits while one of its slots to a
 * node is full (FGS bounds the requests in flight). A request that reaches a
 * node that is down is lost. Background releases (lock/cleanup.go) are one
 * slot per (owner, node): the newest release and the latest deadline, as
 * the cleaner merges them; each lands once, at any moment before its
 * deadline, and waits while its node is down. A node that is up gets it by
 * its deadline (the cleaner retries until then: bounded losses).
 *
 * Time. Ticks, with no bound on their number: the model keeps no clock,
 * only countdowns (TTLs, validity, deadlines, a message's age), which a
 * tick moves on; so states at different times merge and every schedule of
 * ticks is covered. A lease is LEASE ticks. A node's clock may run fast by
 * the drift allowance (DRIFT ticks a lease), and the model takes that worst
 * case for every key: a TTL of one lease ends NL = LEASE - DRIFT ticks
 * after it was set. An owner's hold is valid for LEASE - DRIFT ticks from
 * the start of its acquire fan-out (lock/validity.go: lease - elapsed -
 * drift, counted from start + elapsed): NL - elapsed ticks from its end.
 *
 * A crash. Node 1 may crash once, at any moment, and comes back empty (no
 * persistence: lock hash, tombstones and fencing counter gone) after
 * DOWNFOR = LEASE + 1 ticks, longer than a lease (the stated assumption),
 * or, with -DIMMEDIATE, at once. Node 0 is the tie-breaker; node 2 is node
 * 1's twin, so one crashing node stands for either.
 *
 * Owners. A: Lock, Unlock (-DAGAIN: Lock, Unlock, Lock; -DREENTRY: Lock,
 * Lock, Unlock, Unlock). B: Lock (-DBUNLOCK: Lock, Unlock). A Lock makes at
 * most ATTEMPTS attempts (B: BATTEMPTS, ATTEMPTS unless set), then ends
 * without the lock (its ctx ended); an attempt that fails but took the
 * tie-breaker keeps what it took while attempts are left. A
 * first hold draws a counter fencing token only with -DFENCE (drawToken's
 * extra round; without it the hold starts when the acquire quorum is
 * counted, earlier, so P1 without it covers P1 with it). With -DRENEW=m
 * (a mask: 1 A, 2 B, 3 both) the owner's watchdog renews its hold (see
 * RENSTART, RENEND): a round may start at any moment while the owner holds
 * and has no operation on the wire, sends renew.lua to every node, and
 * counts its replies at any later moment; a quorum within validity
 * extends the belief to NL ticks from when the round was SENT, too many
 * "not held" mark the hold lost. With -DREPAIR a round that renewed also
 * writes the hold back on the nodes that answered "not held" (repairLater,
 * REPAIRSEND), up to REPAIRS (1) repairs an owner. With -DFILLIN a keeper
 * whose retry wins writes its hold, through the cleaner, on the nodes where
 * another owner's hold refused it (fillInLater, FILLSEND), up to FILLS (2)
 * sends an owner. With -DHANDOFF the tie-breaker's hand-off is in: a
 * release to 0 there may reserve the lock for the other owner until the
 * tick, and an acquire there that takes turns (a Lock's attempt) is then
 * refused as by a holder (see rsv, DELIVERTT); with -DFILLIN too, every
 * winning first hold may fill in, as a hand-off's target does. The wait
 * queue's order and Pub/Sub's wakes are not modelled: the model lets any
 * release reserve for the other owner, queued or not, and any attempt
 * come at any moment.
 * With -DFORCE the operator calls ForceUnlock once, at any moment (with
 * -DFORCE=2, Evict of A instead): on each node forceunlock.lua frees the
 * holds, naming their owners for tombstones or not (see forceScript).
 * With -DPROGRESS, a progress configuration (see PROGRESS, WOKEN): node 1
 * is down for good, the network is quiet, A and B each Lock with up to
 * ATTEMPTS (3) attempts, with the contention design's probe.
 *
 * Properties (assertions, checked exhaustively with pan -DSAFETY):
 *  P1 mutual exclusion of valid holds: whenever an owner starts or extends
 *     a hold, the other owner does not believe it holds (count > 0, not
 *     lost, validity left). A belief only shrinks as time
 *     passes, so checking at every start and extension covers every tick.
 *     The last Unlock ends the belief when it is called.
 *  P2 counts converge: once both owners are done and nothing is in flight
 *     (foreground or background), every node that is up holds, for each
 *     owner, nothing when the owner holds nothing, and else no other count
 *     than the owner's (counts are absolute). Not under -DIMMEDIATE.
 *  P3 nothing held past its lease: at every tick, a node keeps no hold of
 *     an owner that holds nothing later than MAXDELAY + NL ticks after that
 *     owner's last request that can write a hold (an acquire, or a release
 *     to a count above 0, the cleaner's counted when it lands).
 *  P4 fencing tokens strictly increase across successive holders (counter
 *     tokens, -DFENCE, while no node has lost its counter: a restart
 *     empties it).
 *  P5 progress (-DPROGRESS only): once both Locks are over and nothing is
 *     in flight, one of the owners holds the lock.
 *  P6 (-DFORCE) the owners an operator's call frees on a node, naming
 *     them, do not come back there through a request of theirs numbered
 *     at or below the one the call buried (refused as after a release).
 *     With -DFORCE, P1 is asked only between owners the call did not
 *     override (see fv): freeing a live hold breaks mutual exclusion by
 *     design (-DNOEXEMPT asks it of every owner, and fails).
 *
 * Configurations (check.sh runs them; README.md has the results):
 *  (none)                 delayed restart: P1, P2, P3 hold (exhaustive).
 *  -DRENEW=1 -DCRASHES=0 -DSYMM  A renews until it unlocks: P1-P3 hold
 *                         (exhaustive; -DSYMM: nodes 1 and 2 swapped into
 *                         one order; with the crash, once node 1 is back).
 *  -DRENEW=2 -DCRASHES=0 -DSYMM  B renews for ever: P1-P3 hold (exhaustive).
 *  -DPROGRESS             P5 (and P1-P3) hold (exhaustive).
 *  -DRENEW=3 -DBUG_RENEWLATE  a renewal valid from its reply: P1 fails.
 *  -DPROGRESS -DBUG_NOKEEP    plain Redlock's undo of every failed
 *                         attempt: P5 fails (two owners livelock).
 *  -DIMMEDIATE            P1 fails (Redlock's known limit).
 *  -DDOWNFOR=1            a restart sooner than a hold's validity: P1 fails.
 *  -DBUG_NOSEQ -DAGAIN    release.lua without `if seq <= last then return 1`
 *                         (the seeded bug): P1 fails.
 *  -DFENCE -DCRASHES=0    P4 failed: counter tokens could repeat (a
 *                         finding, fixed; this search does not complete).
 *  -DFENCE -DCRASHES=0 -DNOP3 -DSYMM  P1, P2 and P4 hold (exhaustive with
 *                         compressed states and 20 GB; check.sh runs it
 *                         alone, after the others).
 *  -DFENCE -DCRASHES=0 -DNOP3 -DSYMM -DBUG_TAKEN  drawToken counting a
 *                         node that had the token as storing it (the
 *                         finding's cause, the seeded bug): P4 fails.
 *  -DDUPS=1 -DCRASHES=0   one go-redis retry: P1-P3 hold (exhaustive). It
 *                         found that a retried acquire's first try could
 *                         land after its refused retry and take the lock
 *                         (fixed: a refusal through a client that retries
 *                         buries the call's seq, acquire.lua's refused).
 *  -DDUPS=1 -DCRASHES=0 -DBUG_NOTWICE  that fix undone: P2 fails.
 *  -DRENEW=1 -DCRASHES=0 -DREPAIR -DBUG_REPAIRSTRAY  a renewal's repair
 *                         whose node is left out of the strays: P2 fails
 *                         (the repair lands after Unlock).
 *  -DRENEW=1 (or 2) -DCRASHES=0 -DSYMM -DREPAIR  renewal with its repairs:
 *                         A's (RENEW=1) and B's both complete with
 *                         hash-compact states, 0 errors (by hand:
 *                         check.sh's REPAIR=1).
 *  -DRENEW=1 (or 2) -DSYMM  renewal with the crash: A's and B's complete
 *                         with hash-compact states, 0 errors (by hand:
 *                         check.sh's CRASH=1). -DREENTRY -DSYMM (re-entry
 *                         with the crash) does not complete within 20 GB.
 *  -DATTEMPTS=2 -DBATTEMPTS=1 -DFILLIN -DCRASHES=0 -DSYMM  A keeps and
 *                         fills in: P1-P3 hold (hash-compact; by hand:
 *                         check.sh's KEEP=1).
 *  -DATTEMPTS=2 -DBATTEMPTS=1 -DFILLIN -DCRASHES=0 -DBUG_FILLSTRAY  a
 *                         fill-in whose node is left out of the strays:
 *                         P2 fails (the fill-in lands after Unlock).
 *  -DATTEMPTS=2 -DBATTEMPTS=1 -DCRASHES=0 -DBUG_NOSTRAYS  no node ever
 *                         marked a stray: P2 fails (a failed attempt's
 *                         acquire lands after Unlock's release skipped the
 *                         tombstone).
 *  -DHANDOFF -DFILLIN -DCRASHES=0 -DSYMM  the hand-off's reservation and
 *                         its target's fill-in: P1-P3 hold (exhaustive).
 *  -DHANDOFF -DFILLIN -DCRASHES=0 -DBUG_FILLSTRAY  a target's fill-in left
 *                         out of the strays: P2 fails (one attempt each).
 *  -DHANDOFF -DAGAIN -DCRASHES=0 -DSYMM  the reservation with A's second
 *                         Lock: P1-P3 hold (hash-compact; by hand:
 *                         check.sh's HANDOFF=1).
 *  -DHANDOFF -DAGAIN -DCRASHES=0 -DSYMM -DBUG_RSVHOLDER  the target takes
 *                         the lock on its reservation before the holder
 *                         check: P2 fails.
 *  -DHANDOFF -DAGAIN -DDUPS=1 -DCRASHES=0 -DSYMM -DBUG_RSVNOTWICE  the
 *                         reservation's refusal buries nothing: P2 fails
 *                         (a retried acquire's first copy lands later).
 *  -DFORCE -DCRASHES=0 -DSYMM  the operator's ForceUnlock: P1 (between
 *                         owners it did not override), P2, P3, P6 hold;
 *                         -DFORCE=2 the same for Evict of A.
 *  -DFORCE -DATTEMPTS=2 -DBATTEMPTS=1 -DCRASHES=0 -DBUG_FORCENOTOMB  a
 *                         force-unlock that writes no tombstones: P6 fails
 *                         (a failed attempt's late acquire brings the
 *                         freed hold back).
 *  -DFORCE -DCRASHES=0 -DNOEXEMPT  P1 asked of overridden owners too: it
 *                         fails (the operator's override, as documented).
 *  -DNOP3                 P3 off and its ghost out of the state (a
 *                         reduction for P4 and renewal with the crash:
 *                         neither completes within 4 GB; P4 with -DSYMM
 *                         added completes within 20 GB compressed).
 *
 * Every node step names the script branch it stands for, every owner step
 * the Go function (package lock). The scripts and their sha256 when the
 * model was last checked against them (model/checksum_test.go fails when a
 * script changes and its line here does not). prelude.lua's wait queue,
 * fair queue, readers and announcements are not modelled. On 2026-11-26,
 * after this model was written, acquire.lua, release.lua and prelude.lua
 * gained the wait queue's personal channels and hand-off reservation (on
 * the tie-breaker only, a refusal that takes nothing, with a reservation
 * in a key the model does not have): their lines were updated with no
 * model change. Later the same day acquire.lua gained `refused` (ACQ's
 * R_HELD buries with -DDUPS), and prelude.lua and release.lua the one-node
 * hand-off without a reservation and the cutting of helpers per script
 * (lua.go), which the model does not see. On 2026-11-27 acquire.lua
 * gained ARGV[13] (a Lock's first attempt skips the dequeue) and asks for
 * the hand-off's reservation in its one EXISTS, and prelude.lua's release
 * publishes nothing when a Mutex's queue is empty and passes over the
 * releasing owner's own entry: queue and announcements only, which the
 * model does not have, so only the lines changed. The same day acquire.lua
 * gained ARGV[14], orders of reads for what the owner expects (a holder:
 * HMGET, then PTTL instead of HLEN; a hand-off: the reservation read
 * apart), which decide as ACQ does: the
 * model's ACQ reads the node's state whole, so only the line changed
 * (TestReentrantAcquireHintsDecideAlike checks the orders agree).
 * Later release.lua gained ARGV[8]: an Unlock's release that finds no
 * hold of the owner takes it out of the wait queue there (queue only).
 * Later still, a release to 0 that finds no hold of the owner buries
 * nothing where ARGV[7] says no stray of the owner can land (REL's first
 * branch, checked anew): until then such a release, the Unlock of a hold
 * taken through the other nodes, left a tombstone there for a lease.
 * On 2026-11-29 acquire.lua reads a Mutex's hand-off reservation before the
 * tombstone (a reserved lock refuses a stale call as a holder does: a
 * refusal that takes nothing, which R_HELD already is) and the owner that
 * expects the hand-off ends the reservation as it reads it (GETDEL, in
 * prelude.lua's reservedFor): the reservation only, so only the lines
 * changed. Later that day prelude.lua gained liveHolders, which
 * inspect.lua and seminspect.lua call to read readers and semaphore
 * holders: no script the model stands for calls it (lua.go gives each
 * script only the helpers it calls), so only the line changed. On
 * 2026-11-30 prelude.lua's pcalls became `attempt`, which catches only
 * WRONGTYPE: any other error of a command (READONLY, OOM) fails the script
 * as it came instead of reading as foreign data. A node's error reply is
 * a reply the owner cannot count, which the model's lost replies already
 * cover, so only the line changed. On 2026-12-01 the model gained the
 * hand-off's reservation (-DHANDOFF, acquire.lua's handedTo branch and the
 * take that ends it, release.lua's announce 'q'), until then argued to be
 * covered by R_HELD: no script changed. On 2026-12-02 acquire.lua,
 * release.lua and renew.lua began storing the count, the sequence number
 * and the lease as the strings the client sent instead of the numbers read
 * from them, and prelude.lua's queue reads pass their bounds as strings:
 * the same values and replies, which the model abstracts, so only the
 * lines changed. Later that day acquire.lua takes a free lock that needs
 * nothing else read or changed (no fence, no reservation to end, no fair
 * queue, no readers, no queue entry) above prelude.lua's helpers, whose
 * definitions it then skips: the same commands, state and reply as the
 * path below them gives that call, so only the line changed. So does
 * release.lua a release to 0 of the owner's hold with nobody in the queue
 * and no tombstone to leave (ARGV[7]): HMGET and the queue's ZRANGE with
 * redis.pcall, then DEL, as REL's full release with an empty queue; on
 * every other path it hands what it read to ownHold's, queueHead's and
 * announce's places (prelude.lua), which read nothing again: the same
 * commands, state and replies, so only the lines changed. Then
 * acquire.lua's nine flags (ARGV[5], [6], [8] to [14]) became one
 * argument, ARGV[5], a character each, and the ticket ARGV[6]: the same
 * decisions, so only the lines changed. On 2026-12-04 renew.lua stopped
 * shortening a later expiry with a renewal older than the owner's last
 * operation (a LockFor of a longer lease after the Unlock that followed
 * the renewal's sending): it sets the expiry only if PTTL is below its
 * lease. The model has one lease length, every TTL at most NL, so that is
 * REN's NL as before: only the line changed (the case needs two leases,
 * TestReentrantLateRenewalKeepsANewerLongerLease checks it). The same day
 * prelude.lua's fair queue stopped losing entries and time: a fair lock's
 * owner leaves its queue whatever its ticket, and a waiter of a short lease
 * no longer shortens the queue's keys. The fair queue is not modelled, so
 * only the line changed. On 2026-12-06 prelude.lua, inspect.lua and
 * forceunlock.lua changed only what their foreign-data errors name (the
 * readers' leases key, whose tombstone a force-unlock met) and made a
 * count that is no number foreign data where inspect read it as 0: errors
 * on data relock never writes, which the model does not have, so only the
 * lines changed. The same day release.lua's release to 0 that finds the
 * owner's hold also takes it out of the wait queue when told it may be
 * there (ARGV[8]): the queue is not modelled, so only the line changed.
 * On 2026-12-07 the three scripts of a contended cycle moved above their
 * helpers, for a client that never sends a call twice: acquire.lua's
 * refusal of an owner that expects a holder (HMGET, PTTL, then the queue's
 * ZADD and PEXPIRE: ACQ's R_HELD, which buries nothing without -DDUPS) and
 * its take of a lock reserved for its owner (EXISTS, GETDEL, then HSET and
 * PEXPIRE, or the reservation put back and a refusal: -DHANDOFF's take and
 * handedTo branch), and release.lua's release to 0 with owners queued and
 * no tombstone to leave (REL's full release; the hand-off and keepers'
 * announcements of prelude.lua's announce, written out). Anything else
 * they meet goes below the helpers, which reuse what was read. The same
 * commands, state, replies and messages as the paths below give those
 * calls (TestReentrantContendedReleaseDecidesAlike,
 * TestReentrantAcquireHintsDecideAlike), so only the lines changed.
 */
/* checksum lua/prelude.lua sha256:917739f63ae124801f4a3a78bf3cd8e165b7abc352e9453c3c6beacc34f64062 */
/* checksum lua/acquire.lua sha256:c3dd239873b9044383f93c2c0075772cbb28fcbdc1511fb490ea7c70162053f0 */
/* checksum lua/release.lua sha256:b99fb38146823df09c1039ead98362616a360d8d39952cfe7fd37e7ea69c84e0 */
/* checksum lua/renew.lua sha256:8179278940225cb82a163f0e8b8ff661d6a6237706b5d18943ffa75917d5f5da */
/* checksum lua/fence.lua sha256:514d69c17ea152f0a0850990562419890842bdefe87a46b1fbdb401f207ac3bf */
/* checksum lua/forceunlock.lua sha256:556548626b264349d774e0d1ac8414f252eff6c67ef0f9a0647a75ca5eb28a94 */
/* checksum lua/inspect.lua sha256:b0ad9e05d995abcbf0f409b5bfea1d7a4d3bbe457c7d197eddaa450e11497f04 */

#define N 3              /* nodes */
#define Q 2              /* quorum: lock/validity.go quorum(3) */
#define TIE 0            /* the tie-breaker: lock/contend.go tieBreaker */
#define CRASHER 1        /* the node that may crash */

#ifndef LEASE
#define LEASE 3
#endif
#ifndef DRIFT
#define DRIFT 1
#endif
#define NL (LEASE - DRIFT)   /* a TTL of one lease, on a fast node clock */
#ifndef MAXDELAY
#define MAXDELAY 0       /* below NL: a tombstone outlives the requests it guards against */
#endif
#ifndef FDRAWS
#define FDRAWS 3             /* drawToken's draws at most (fence.go fenceDraws) */
#endif
#ifndef ATTEMPTS
#ifdef PROGRESS
#define ATTEMPTS 3
#else
#define ATTEMPTS 1
#endif
#endif
/* -DBATTEMPTS=n: B makes n attempts, A ATTEMPTS (B's own bound keeps a
 * search of A's keeping small). ATT(p): owner p's bound. */
#ifndef BATTEMPTS
#define BATTEMPTS ATTEMPTS
#endif
#define ATT(p) ((p) == 0 -> ATTEMPTS : BATTEMPTS)
#ifndef DUPS
#define DUPS 0
#endif
#ifndef FGS
#define FGS 2            /* in-flight requests per (owner, node) */
#endif
/* -DPROGRESS: the progress configuration (see the header): node CRASHER
 * is down for the whole run (never back), nothing else fails (a quiet
 * network), A and B each Lock (ATTEMPTS attempts), with the contention
 * design's probe. */
#ifdef PROGRESS
#define CRASHES 0
#define PROBE 1
#endif
#ifndef CRASHES
#define CRASHES 1
#endif
#ifndef DOWNFOR
#ifdef IMMEDIATE
#define DOWNFOR 0
#else
#define DOWNFOR (LEASE + 1)   /* -DDOWNFOR=n: another restart delay, in ticks */
#endif
#endif

/* Request kinds (the scripts) and reply codes, one mtype so that the
 * trace prints their names (SPIN numbers them from the last, 1, up). */
mtype = {
	ACQ,         /* acquire.lua */
	REL,         /* release.lua */
	REN,         /* renew.lua */
	FEN,         /* fence.lua */
	R_OK,        /* acquire {1, count}; renew 1; fence: it was below the token */
	R_HELD,      /* acquire {0, pttl}: another owner holds it */
	R_STALE,     /* acquire {2, -2}: refused by the tombstone */
	R_MISSING,   /* acquire {3, -2}: a re-entry found no hold */
	R_NOTHELD,   /* release 0, renew 0 */
	R_STILL,     /* release 1 */
	R_GONE,      /* release 2 */
	R_TAKEN      /* fence: the counter was at or above the token already */
};

/* A foreground request: kind, seq, count (a fence's token), re-entry flag,
 * orphan flag (a copy whose reply nobody reads: see DUP) and its age in
 * ticks. Slots of a pair are kept sorted, largest first, empty (0) last,
 * so two orders of the same requests are one state. */
#define MSG(K, S, C, F, T) (((K) << 10) | ((S) << 6) | ((C) << 4) | ((F) << 3) | (T))
#define MKIND(x) (((x) >> 10) & 15)
#define MSEQ(x) (((x) >> 6) & 15)
#define MCNT(x) (((x) >> 4) & 3)
#define MFLAG(x) (((x) >> 3) & 1)
#define MORPHAN(x) (((x) >> 2) & 1)
#define MAGE(x) ((x) & 3)
/* A background release: seq, count, ticks left until its deadline (the
 * cleaner retries until then). */
#define BGM(S, C, DL) (((S) << 7) | ((C) << 5) | (DL))
#define BSEQ(x) (((x) >> 7) & 15)
#define BCNT(x) (((x) >> 5) & 3)
#define BDL(x) ((x) & 31)

/* Pair (owner p, node d) is p*N + d; its slots are pair*FGS .. +FGS-1. */
short fg[2*N*FGS];
short bg[2*N];

/* The tick count, for the trace only: hidden, not part of the state.
 * (pan's BFS refuses hidden variables: -DNOCLOCK keeps it at 0 there;
 * the trail replays the same steps with the clock.) */
#ifdef NOCLOCK
byte clock;
#define CLOCKSTEP 0
#else
hidden byte clock;
#define CLOCKSTEP 1
#endif

/* Node d, owner p: index d*2 + p. The lock hash's fields OWNER (count)
 * and OWNER/seq, the hash's TTL in ticks (one PTTL per key), the owner's
 * tombstone (number, TTL), the fencing counter. */
byte ncnt[2*N];
byte nseq[2*N];
byte nttl[N];
byte ntomb[2*N];
byte nttomb[2*N];
byte nfence[N];
/* -DHANDOFF: the tie-breaker's hand-off reservation (acquire.lua ARGV[8]
 * '2', prelude.lua announce 'q' and reservedFor, in the key KEYS[5]): 0
 * none, 1 + o reserved for owner o. It lives handOffHold (20 ms), far less
 * than a tick: every tick ends it. tt is set only inside a delivery that
 * stands for a call that takes turns (reentrant.Op.TakesTurn: a Lock's
 * attempt on the tie-breaker) or an Unlock's release there that hands the
 * lock off (wake mode 'q'); always 0 in a stored state. */
#ifdef HANDOFF
byte rsv;
bit tt;
#define RSVFOR(p) (tt && rsv == 2 - (p))   /* reserved for the other owner */
#define RSVMINE(p) (tt && rsv == 1 + (p))  /* handed off to p itself */
#else
#define RSVFOR(p) false
#endif
/* -DBUG_RSVHOLDER (a seeded bug): the owner a lock was handed to takes it
 * on its reservation alone, before the holder check (acquire.lua reading
 * reservedFor first): a holder that took the lock meanwhile (an acquire
 * that does not take turns) is overridden. */
#if defined(HANDOFF) && defined(BUG_RSVHOLDER)
#define RSVOVERRIDES(p) RSVMINE(p)
#else
#define RSVOVERRIDES(p) false
#endif
#ifdef PROGRESS
byte down = 1;           /* node CRASHER is down, for good (no tick moves it) */
#else
byte down;               /* node CRASHER is down for this many ticks more */
#endif
bool crashed;            /* it crashed: counter tokens are void (P4) */
#if DUPS > 0
byte dups = DUPS;
#endif

/* Owners (lock/hold.go hold): count, seq counter, validity left (ticks to
 * ValidUntil), isLost; the fan-out in progress (kind and seq it waits for,
 * 0: none) and the replies it got (0: none yet), with the highest fencing
 * counter they carried; el: 1 + the ticks since the running acquire's
 * fan-out began (0: none runs); kl: ticks left of a kept attempt's lease. */
byte count[2];
byte oseq[2];
byte vl[2];
bool lost[2];
bool done[2];
byte wk[2];
byte ws[2];
byte got[2*N];
/* str[p*N + d]: owner p's strays (lock/hold.go hold.strays): node d had an
 * acquire of p's that the fan-out ended without its answer, so a copy may
 * still land there; cleared by a release to 0 there that buried (an answer
 * R_GONE or R_NOTHELD). A release to 0 to a node not in it, through a client
 * that never sends twice (DUPS 0), leaves no tombstone (release.lua
 * ARGV[7], reentrant.Op.NoStrays). */
bool str[2*N];
byte gfen[2];
byte el[2];
byte kl[2];
#ifndef RENEW
#define RENEW 0
#endif
/* Renewal (-DRENEW=m, a mask of the owners whose watchdog renews: 1 A,
 * 2 B, 3 both): the renewal in flight of owner p, if any (rel: 1 + the
 * ticks since it was sent, 0: none; at most one per hold, as the watchdog
 * pops an entry while renewing it), the replies it got, and the seq of
 * the owner's last renewal (see RENSTART for why renewals share one). */
#define RENEWS(p) ((RENEW >> (p)) & 1)
#if RENEW > 0
byte rel[2];
byte rsq[2];
byte rgot[2*N];
#define RSQ0 rsq[o] = 0      /* another operation took a number: rsq is stale (0, canonical) */
#else
#define RSQ0 skip
#endif
#ifndef REPAIRS
#define REPAIRS 1
#endif
/* Repairs (-DREPAIR, with RENEW): a renewal that renewed on a quorum
 * writes the hold back on the nodes that answered "not held"
 * (lock/renew.go renewBatch, Client.repairLater; the cleaner sends it,
 * cleanup_run.go, with hold.repairOp's fresh seq). rep[p]: the nodes
 * (bit d) where owner p's cleaner has a repair to send; rps[p]: repairs p
 * may still send (REPAIRS, a bound that keeps seqs bounded while B renews
 * for ever). */
#ifdef REPAIR
#if RENEW == 0
#error "-DREPAIR needs -DRENEW"
#endif
byte rep[2];
byte rps[2] = REPAIRS;
#endif
#if RENEW > 0
#define RSQZ(O) rsq[O] = 0
#else
#define RSQZ(O) skip
#endif
#ifndef FILLS
#define FILLS 2
#endif
/* Fill-ins (-DFILLIN): lock/hold.go attempt's fillInLater. An acquisition
 * that wins while its owner keeps what an earlier attempt took (a keeper;
 * a hand-off's target is the other case, with -DHANDOFF) writes its hold,
 * through the cleaner, on the nodes where another owner's hold refused it
 * (refusedBy: R_HELD), by hold.repairOp as a repair does, and sends it
 * again while that hold refuses it, until
 * by = min(ValidUntil, now + lease/3). fil[p]: the nodes (bit d) with a
 * fill-in of owner p pending; fdl[p]: ticks left to send them (2: a third
 * of a lease from a moment inside the current tick ends before the second
 * tick from now); fls[p]: sends p may still make (FILLS: the cleaner's
 * backoff makes a few tries by then; a bound that keeps seqs bounded). */
#ifdef FILLIN
#ifdef FENCE
#error "-DFILLIN is modelled without -DFENCE"
#endif
byte fil[2];
byte fdl[2];
byte fls[2] = FILLS;
#endif
/* The operator (-DFORCE): one ForceUnlock of the name at any moment
 * (lock/admin.go Client.ForceUnlock: reentrant.Node.ForceUnlock on every
 * node at once), or with -DFORCE=2 one Evict of A (Client.Evict,
 * Node.Evict). forced: the call was made; fph[d]: node d's part is on the
 * wire. Ghosts: fv[p], owner p was overridden: the operator freed a hold
 * of p's while p held (count > 0) or counted an acquire (a fan-out
 * running), so p's belief may outlive its hold (P1 is not asked of it
 * until its hold ends or its next attempt starts); and P6's mark on the
 * requests themselves (POISON). */
#ifdef FORCE
bool forced;
bool fph[N];
bool fv[2];
#ifndef NOEXEMPT
#define OVERRIDDEN(p) fv[p]
#else
#define OVERRIDDEN(p) false  /* -DNOEXEMPT: P1 asked of every owner (the operator's override breaks it) */
#endif
#define FVCLEAR(O) fv[O] = false
#define FORCEQUIET (!fph[0] && !fph[1] && !fph[2])
#else
#define OVERRIDDEN(p) false
#define FVCLEAR(O) skip
#define FORCEQUIET true
#endif
/* UNLOCKS(p): owner p calls Unlock (B only with -DBUNLOCK): only its
 * strays are ever read (see markStrays). */
#ifdef BUNLOCK
#define UNLOCKS(p) 1
#else
#define UNLOCKS(p) ((p) == 0)
#endif
/* Ghosts: the last token handed out (P4); ticks since each owner's last
 * request that can write a hold, up to P3LIM (P3). */
#define P3LIM (MAXDELAY + NL)
byte lastToken;
#ifdef NOP3
/* -DNOP3: P3 is not checked; its ghost is then no part of the state
 * (hidden: stored in no state, so the search merges states that differ in
 * it alone; no behaviour reads it, so that changes nothing else). */
hidden byte sw[2];
#else
byte sw[2] = P3LIM;
#endif

#define UP(d) ((d) != CRASHER || down == 0)
#define BELIEVES(p) (count[p] > 0 && !lost[p] && vl[p] > 0)
/* P1 (with -DFORCE, between owners the operator did not override) */
#define CLAIM(o) assert(OVERRIDDEN(0) || OVERRIDDEN(1) || !BELIEVES(1 - (o)))

/* P6 (-DFORCE): an owner the operator's call freed on a node, naming it,
 * does not come back there through a request of its numbered at or below
 * what the call buried (forceunlock.lua's tombstones: its late operations
 * are refused as after a release). The call marks each such request still
 * in flight to the node (POISON, a bit no step reads but this check); an
 * acquire that takes or writes the hold must not carry it. Requests sent
 * later are numbered above (h.op), so only those in flight can. */
#define POISON 16384   /* bit 14 of a request: a ghost, see FPCHECK */
#ifdef FORCE
#define FPCHECK assert(!(m & POISON))   /* m: the request DELIVER lands */
#else
#define FPCHECK skip
#endif

/* sortPair: the pair's slots, largest first (FGS = 2 or 3). */
inline sortPair(P) {
	if :: fg[(P)*FGS] < fg[(P)*FGS+1] -> y = fg[(P)*FGS]; fg[(P)*FGS] = fg[(P)*FGS+1]; fg[(P)*FGS+1] = y :: else -> skip fi;
#if FGS > 2
	if :: fg[(P)*FGS+1] < fg[(P)*FGS+2] -> y = fg[(P)*FGS+1]; fg[(P)*FGS+1] = fg[(P)*FGS+2]; fg[(P)*FGS+2] = y :: else -> skip fi;
	if :: fg[(P)*FGS] < fg[(P)*FGS+1] -> y = fg[(P)*FGS]; fg[(P)*FGS] = fg[(P)*FGS+1]; fg[(P)*FGS+1] = y :: else -> skip fi;
#endif
	y = 0
}

/* dropKey: the lock hash is gone (DEL, or its PTTL ran out). */
inline dropKey(D) {
	ncnt[(D)*2] = 0; ncnt[(D)*2+1] = 0; nseq[(D)*2] = 0; nseq[(D)*2+1] = 0; nttl[D] = 0
}

/* buryFor (prelude.lua bury): keep the higher number and the longer TTL;
 * bury, with a lease's (a release's). */
inline buryFor(E, S, T) {
	if
	:: nttomb[E] > 0 ->
		if :: S > ntomb[E] -> ntomb[E] = S :: else -> skip fi;
		if :: T > nttomb[E] -> nttomb[E] = T :: else -> skip fi
	:: else -> ntomb[E] = S; nttomb[E] = T
	fi
}
inline bury(E, S) {
	buryFor(E, S, NL)
}

/* refused (prelude.lua): a refusal through a client that retries
 * (Node.noRetries false: twice = 1, under -DDUPS) buries the call's seq,
 * so its other copy is stale when it lands. -DBUG_NOTWICE (a seeded bug)
 * buries nothing. */
#if DUPS > 0 && !defined(BUG_NOTWICE)
#define REFUSED(E, S) bury(E, S)
#else
#define REFUSED(E, S) skip
#endif

/* script: node d runs request kind k of owner p (seq sq, count c, re-entry
 * flag fl); the reply code goes to r, the fencing counter read to f. */
inline script(d, p, k, sq, c, fl) {
	e = (d)*2 + (p);
	if
	:: k == ACQ ->
		/* lua/acquire.lua */
		g = (d)*2 + 1 - (p);
		if
		:: ncnt[g] > 0 && !RSVOVERRIDES(p) ->
			REFUSED(e, sq);              /* refused(KEYS[3], seq, lease, twice) */
			r = R_HELD                   /* size > own: return {0, ttl, fence} */
		:: ncnt[g] == 0 && ncnt[e] > 0 && sq <= nseq[e] ->
			r = R_OK                     /* seq <= last: return {1, held or 0, fence} */
		:: ncnt[g] == 0 && ncnt[e] == 0 && fl ->
			r = R_MISSING                /* elseif reentry: return {3, -2, fence} */
#ifdef HANDOFF
		:: ncnt[g] == 0 && ncnt[e] == 0 && !fl && RSVFOR(p) ->
			/* handedTo ~= owner (reservedFor): a free lock handed off to the
			 * other owner a moment ago. refused(KEYS[3], seq, lease, twice)
			 * and enqueue; {4, -2, fence}, which the client reads as a
			 * holder's refusal (refusedBy, contender.settle): R_HELD.
			 * -DBUG_RSVNOTWICE (a seeded bug) buries nothing there. */
#ifndef BUG_RSVNOTWICE
			REFUSED(e, sq);
#endif
			printf("MSC t%d node %d: the lock is reserved for %c, handed off to it: %c is refused\n", clock, d, 'A' + 1 - (p), 'A' + (p));
			r = R_HELD
#endif
		:: ncnt[g] == 0 && ncnt[e] == 0 && !fl && !RSVFOR(p) && nttomb[e] > 0 && sq <= ntomb[e] ->
			r = R_STALE                  /* elseif seq <= buried(KEYS[3]): {2, -2, fence} */
		:: else ->
			/* (noStrays' one EXISTS, for an owner with no stray here, takes
			 * this branch exactly when neither the hash nor the tombstone
			 * exists, which the branches above also send here: the model
			 * does not tell the two paths apart.)
			 * free here, or the owner's own hold and a newer seq:
			 * HSET key owner count owner/seq seq; PEXPIRE key lease; {1, count, fence} */
			FPCHECK;
			ncnt[e] = c; nseq[e] = sq; nttl[d] = NL;
#ifdef HANDOFF
			/* the owner it was handed to ends the reservation as it takes
			 * the lock (GETDEL in reservedFor, or DEL after HSET) */
			if :: RSVMINE(p) -> rsv = 0 :: else -> skip fi;
#endif
			r = R_OK
		fi;
		f = nfence[d]                    /* fenceCounter(KEYS[2]) */
	:: k == REL ->
		/* lua/release.lua */
		if
		:: ncnt[e] == 0 && c == 0 && fl ->
			r = R_NOTHELD                /* not held, count 0, ARGV[7]: no stray of the owner here, nothing to bury: return 0 */
		:: ncnt[e] == 0 && c == 0 && !fl && nttomb[e] > 0 && ntomb[e] >= sq ->
			bury(e, sq);
			r = R_GONE                   /* goneBefore: its own number was buried already: return 2 */
		:: ncnt[e] == 0 && !(c == 0 && (fl || nttomb[e] > 0 && ntomb[e] >= sq)) ->
			if :: c == 0 -> bury(e, sq) :: else -> skip fi;
			r = R_NOTHELD                /* not held: bury when count is 0; return 0 */
#ifndef BUG_NOSEQ
		:: ncnt[e] > 0 && sq <= nseq[e] ->
			r = R_STILL                  /* seq <= last: a straggler, return 1 */
		:: ncnt[e] > 0 && sq > nseq[e] && c > 0 ->
#else
		:: ncnt[e] > 0 && c > 0 ->       /* THE SEEDED BUG: no seq <= last check */
#endif
			ncnt[e] = c; nseq[e] = sq; nttl[d] = NL;
			r = R_STILL                  /* count > 0: HSET, PEXPIRE, return 1 */
		:: else ->
			/* count 0: bury (unless ARGV[7]: no stray of the owner here,
			 * the flag fl of a foreground release), DEL, announce, return 2 */
			if :: !fl -> bury(e, sq) :: else -> skip fi;
			dropKey(d);
#ifdef HANDOFF
			/* announce 'q': the queue's head, here the other owner (whether
			 * it queued or not: a superset), taken out of the queue and the
			 * lock reserved for it (SET reserve target PX handOffHold) */
			if
			:: tt -> rsv = 2 - (p);
				printf("MSC t%d node %d hands the lock off to %c: reserved for it until the tick\n", clock, d, 'A' + 1 - (p))
			:: else -> skip
			fi;
#endif
			r = R_GONE
		fi
	:: k == REN ->
		/* lua/renew.lua */
		if
		:: ncnt[e] == 0 -> r = R_NOTHELD /* not held: return 0 */
		:: else ->
			if :: sq > nseq[e] -> ncnt[e] = c; nseq[e] = sq :: else -> skip fi;
			/* PEXPIRE key lease, return 1; a renewal older than the
			 * last operation only if PTTL is below the lease, which
			 * every TTL here is (one lease length, NL the longest) */
			nttl[d] = NL;
			r = R_OK
		fi
	:: k == FEN ->
		/* lua/fence.lua: raise the counter to the token; return the
		 * counter it found (f) */
		f = nfence[d];
		if :: c > nfence[d] -> nfence[d] = c; r = R_OK :: else -> r = R_TAKEN fi
	fi;
	e = 0; g = 0
}

/* The world: deliveries, duplicates, ticks, the crash, P2. */

/* RENREPLY(P): the reply of a renewal's request reaches the watchdog's
 * fan-out (renewBatch's fanOutTo) while it waits; requests of a renewal
 * whose fan-out ended are orphans (RENFORGET). */
#if RENEW > 0
#define RENREPLY(P) :: !MORPHAN(m) && MKIND(m) == REN && rel[P / N] > 0 && rgot[P] == 0 -> rgot[P] = r
#else
#define RENREPLY(P)
#endif

/* -DSYMM (not with PROGRESS, where node 1 is down for good): nodes 1 and 2
 * are interchangeable (node 0 is the tie-breaker; no step, property or
 * owner variable names node 1 or 2 apart, but the crash), so after each
 * delivery and tick the world swaps their whole state (lock hash, TTLs,
 * tombstones, fencing counter, requests in flight to them, clean-ups and
 * replies) when node 2's comes first in a fixed order: symmetric states
 * are stored once. With the crash, only once node 1 has crashed and is
 * back: until then it is the node that may crash, or is down. (A trail
 * then may name node 1 for node 2.) */
#if CRASHES
#define SWAPPABLE (crashed && down == 0)
#else
#define SWAPPABLE true
#endif
#if defined(SYMM) && !defined(PROGRESS)
#define CMPV(X1, X2) if :: c == 0 && (X1) < (X2) -> c = 1 :: c == 0 && (X1) > (X2) -> c = 2 :: else -> skip fi
#define SWP(X, Y) y = X; X = Y; Y = y
#define NKEY(d) ((((((ncnt[2*(d)]*4 + ncnt[2*(d)+1])*16 + nseq[2*(d)])*16 + nseq[2*(d)+1])*4 + nttl[d])*4 + nfence[d])*4096 + \
	((ntomb[2*(d)]*16 + ntomb[2*(d)+1])*4 + nttomb[2*(d)])*4 + nttomb[2*(d)+1])
#if RENEW > 0 && defined(REPAIR)
#define REPB(o, d) ((rep[o] >> (d)) & 1)
#define CMPREN CMPV(rgot[1], rgot[2]); CMPV(rgot[N+1], rgot[N+2]); CMPV(REPB(0, 1), REPB(0, 2)); CMPV(REPB(1, 1), REPB(1, 2))
#define SWPREP(o) if :: REPB(o, 1) != REPB(o, 2) -> rep[o] = rep[o] ^ 6 :: else -> skip fi
#define SWPREN SWP(rgot[1], rgot[2]); SWP(rgot[N+1], rgot[N+2]); SWPREP(0); SWPREP(1)
#elif RENEW > 0
#define CMPREN CMPV(rgot[1], rgot[2]); CMPV(rgot[N+1], rgot[N+2])
#define SWPREN SWP(rgot[1], rgot[2]); SWP(rgot[N+1], rgot[N+2])
#else
#define CMPREN skip
#define SWPREN skip
#endif
#ifdef FILLIN
#define FILB(o, d) ((fil[o] >> (d)) & 1)
#define SWPFILB(o) if :: FILB(o, 1) != FILB(o, 2) -> fil[o] = fil[o] ^ 6 :: else -> skip fi
#define CMPFIL CMPV(FILB(0, 1), FILB(0, 2)); CMPV(FILB(1, 1), FILB(1, 2))
#define SWPFIL SWPFILB(0); SWPFILB(1)
#else
#define CMPFIL skip
#define SWPFIL skip
#endif
#ifdef FORCE
#define CMPFORCE CMPV(fph[1], fph[2])
#define SWPFORCE SWP(fph[1], fph[2])
#else
#define CMPFORCE skip
#define SWPFORCE skip
#endif
inline canon() {
	c = 0;
	if :: !SWAPPABLE -> c = 3 :: else -> skip fi;
	CMPV(NKEY(1), NKEY(2));
	CMPV(fg[1*FGS], fg[2*FGS]); CMPV(fg[1*FGS+1], fg[2*FGS+1]);
	CMPV(fg[4*FGS], fg[5*FGS]); CMPV(fg[4*FGS+1], fg[5*FGS+1]);
	CMPV(bg[1], bg[2]); CMPV(bg[N+1], bg[N+2]);
	CMPV(got[1], got[2]); CMPV(got[N+1], got[N+2]);
	CMPV(str[1], str[2]); CMPV(str[N+1], str[N+2]);
	CMPREN;
	CMPFIL;
	CMPFORCE;
	if
	:: c == 2 ->
		SWP(ncnt[2], ncnt[4]); SWP(ncnt[3], ncnt[5]); SWP(nseq[2], nseq[4]); SWP(nseq[3], nseq[5]);
		SWP(nttl[1], nttl[2]); SWP(ntomb[2], ntomb[4]); SWP(ntomb[3], ntomb[5]);
		SWP(nttomb[2], nttomb[4]); SWP(nttomb[3], nttomb[5]); SWP(nfence[1], nfence[2]);
		SWP(fg[1*FGS], fg[2*FGS]); SWP(fg[1*FGS+1], fg[2*FGS+1]);
		SWP(fg[4*FGS], fg[5*FGS]); SWP(fg[4*FGS+1], fg[5*FGS+1]);
		SWP(bg[1], bg[2]); SWP(bg[N+1], bg[N+2]);
		SWP(got[1], got[2]); SWP(got[N+1], got[N+2]);
		SWP(str[1], str[2]); SWP(str[N+1], str[N+2]);
		SWPREN;
		SWPFIL;
		SWPFORCE
	:: else -> skip
	fi;
	c = 0; y = 0
}
#else
inline canon() {
	skip
}
#endif

#ifdef FORCE
/* poison(P, S): P6's mark on pair P's acquires in flight numbered at or
 * below S. */
inline poison(P, S) {
	g = 0;
	do
	:: g < FGS ->
		if
		:: fg[(P)*FGS+g] != 0 && MKIND(fg[(P)*FGS+g]) == ACQ && MSEQ(fg[(P)*FGS+g]) <= (S) ->
			fg[(P)*FGS+g] = fg[(P)*FGS+g] | POISON
		:: else -> skip
		fi;
		g++
	:: else -> break
	od;
	sortPair(P); g = 0
}

/* forceScript: node D's part of the operator's call. ForceUnlock reads
 * the holders (InspectHolds, inspect.lua), then runs lua/forceunlock.lua
 * naming them: strict (ARGV[2] '1': a holder it was not told of refuses
 * it, nothing changes, and it reads again) or, after forceUnlockTries
 * reads, not ('0': every hold goes, and only the owners named get
 * tombstones). Evict runs it in mode 'o' naming A, which frees A's hold
 * alone. One step here, the read and the script together: what a step
 * between them could change is who holds, and a strict try then refuses
 * and reads again; the last try frees a holder its read missed without a
 * tombstone. So each hold that goes is named (NM 1) or, for ForceUnlock,
 * not (NM 0: a holder that came after the last read; a superset, since the
 * model may take that at any try). A named owner's hold is buried at its
 * OWNER/seq for the lock's PTTL left ("tombstones before the deletes"),
 * then the holds go (DEL; 'o': HDEL, and the key goes with its last
 * field). -DBUG_FORCENOTOMB (a seeded bug) writes no tombstone. */
inline forceScript(D, NM) {
	e = 0;
	do
	:: e < 2 ->
		if
		:: ncnt[(D)*2+e] > 0 && (FORCE != 2 || e == 0) ->
			if
			:: NM ->
#ifndef BUG_FORCENOTOMB
				buryFor((D)*2+e, nseq[(D)*2+e], nttl[D]);
#endif
				poison(e*N+(D), nseq[(D)*2+e])
			:: else -> skip
			fi;
			if :: count[e] > 0 || el[e] > 0 -> fv[e] = true :: else -> skip fi;
			printf("MSC t%d node %d runs the operator's forceunlock: %c's hold goes (named: %d)\n", clock, D, 'A' + e, NM);
			ncnt[(D)*2+e] = 0; nseq[(D)*2+e] = 0
		:: else -> skip
		fi;
		e++
	:: else -> break
	od;
	if :: ncnt[(D)*2] == 0 && ncnt[(D)*2+1] == 0 -> dropKey(D) :: else -> skip fi;
	e = 0
}

/* FORCESTART: the operator's call, once, at any moment: every node's part
 * goes out at once (Client.force's fanOut). */
#if FORCE == 2
#define FORCESAY printf("MSC t%d the operator calls Evict(A) on every node\n", clock)
#else
#define FORCESAY printf("MSC t%d the operator calls ForceUnlock on every node\n", clock)
#endif
#define FORCESTART \
	:: d_step { !forced -> forced = true; fph[0] = true; fph[1] = true; fph[2] = true; FORCESAY }
/* FORCEPART(D): node D's part lands (forceScript), naming the holders it
 * frees or, for ForceUnlock's last try, not; on a node that is down it is
 * lost. */
#define FORCEPART(D) \
	:: d_step { fph[D] && UP(D) -> fph[D] = false; forceScript(D, 1); canon() } \
	:: d_step { fph[D] && UP(D) && FORCE != 2 && (ncnt[(D)*2] > 0 || ncnt[(D)*2+1] > 0) -> \
		fph[D] = false; forceScript(D, 0); canon() } \
	:: d_step { fph[D] && !UP(D) -> fph[D] = false; \
		printf("MSC t%d node %d is down: the operator's call there is lost\n", clock, D) }
#define FORCESTEPS FORCESTART FORCEPART(0) FORCEPART(1) FORCEPART(2)
/* At a tick a part still on the wire is lost (the bounded delay, as for
 * every request: a part that lands does so within the tick it is sent). */
#define FORCETICK(I) if :: (I) < N -> fph[I] = false :: else -> skip fi
#else
#define FORCESTEPS
#define FORCETICK(I) skip
#endif

/* DELIVER(P, J): slot J of pair P (owner P / N, node P % N) lands. A node
 * that is down loses it. The reply reaches the owner if its fan-out still
 * waits for it (fanout.go fanOutTo's collect); else nobody reads it. */
#ifdef HANDOFF
#define SETTT(T) tt = T
#else
#define SETTT(T) skip
#endif
#define DELIVER(P, J) DELIVERAS(P, J, 0, true)
/* DELIVERAS(P, J, T, G): DELIVER with tt = T, when G also holds. */
#define DELIVERAS(P, J, T, G) \
	:: d_step { fg[P*FGS+J] != 0 && (G) -> \
		m = fg[P*FGS+J]; fg[P*FGS+J] = 0; sortPair(P); SETTT(T); \
		if \
		:: UP(P % N) -> \
			script(P % N, P / N, MKIND(m), MSEQ(m), MCNT(m), MFLAG(m)); \
			printf("MSC t%d node %d runs %e of %c seq %d count %d: %e\n", \
				clock, P % N, MKIND(m), 'A' + P / N, MSEQ(m), MCNT(m), r); \
			if \
			:: !MORPHAN(m) && wk[P / N] == MKIND(m) && ws[P / N] == MSEQ(m) && got[P] == 0 -> got[P] = r; \
				if :: (MKIND(m) == ACQ || MKIND(m) == FEN) && f > gfen[P / N] -> gfen[P / N] = f :: else -> skip fi \
			RENREPLY(P) \
			:: else -> skip \
			fi \
		:: else -> printf("MSC t%d node %d is down: %c's request seq %d is lost\n", clock, P % N, 'A' + P / N, MSEQ(m)) \
		fi; \
		m = 0; r = 0; f = 0; SETTT(0); canon() }
#ifdef HANDOFF
/* DELIVERTT(P, J): slot J of pair P, a pair to the tie-breaker, lands as a
 * call that takes turns (a Lock's attempt) or an Unlock's release that
 * hands off; DELIVER lands the same request as one that does not (a
 * cleaner's repair or fill-in; an Unlock whose queue is empty). Either may
 * stand for the other: a superset. Only where it can differ: an acquire
 * while a reservation stands, a release. */
#define TTMAYDIFFER(P, J) (MKIND(fg[P*FGS+J]) == REL || MKIND(fg[P*FGS+J]) == ACQ && rsv != 0)
#define DELIVERTT(P, J) DELIVERAS(P, J, 1, TTMAYDIFFER(P, J))
#if FGS > 2
#define DELIVERTTS DELIVERTT((TIE), 0) DELIVERTT((TIE), 1) DELIVERTT((TIE), 2) \
	DELIVERTT((N + TIE), 0) DELIVERTT((N + TIE), 1) DELIVERTT((N + TIE), 2)
#else
#define DELIVERTTS DELIVERTT((TIE), 0) DELIVERTT((TIE), 1) DELIVERTT((N + TIE), 0) DELIVERTT((N + TIE), 1)
#endif
#else
#define DELIVERTTS
#endif

/* BGDELIVER(P): the cleaner's release for pair P gets through (cleanup.go
 * drainer, release.lua). It waits while the node is down. */
#define BGDELIVER(P) \
	:: d_step { bg[P] != 0 && UP(P % N) -> \
		script(P % N, P / N, REL, BSEQ(bg[P]), BCNT(bg[P]), 0); \
		printf("MSC t%d node %d runs %c's background REL seq %d count %d: %e\n", \
			clock, P % N, 'A' + P / N, BSEQ(bg[P]), BCNT(bg[P]), r); \
		/* P3's ghost: a release to a count above 0 writes the hold (the \
		 * cleaner sent it just now) */ \
		if :: BCNT(bg[P]) > 0 -> sw[P / N] = 0 :: else -> skip fi; \
		bg[P] = 0; r = 0; f = 0; canon() }

/* DUP(P, J): go-redis retries the request in slot J of pair P (its first
 * try got no reply in time): two copies are in flight, and the owner reads
 * the reply of the retry only; the first try may still land, before or
 * after it (reentrant/node.go NeverReached). */
#define DUP(P, J) \
	:: d_step { dups > 0 && fg[P*FGS+J] != 0 && !MORPHAN(fg[P*FGS+J]) && fg[P*FGS+FGS-1] == 0 -> \
		dups--; fg[P*FGS+FGS-1] = fg[P*FGS+J] | 4; sortPair(P); \
		printf("MSC t%d %c's request seq %d to node %d is sent twice (a retry)\n", clock, 'A' + P / N, MSEQ(fg[P*FGS+J]), P % N) }

/* A background release that has to get through before the next tick
 * (its deadline) while its node is up blocks the tick. */
#define BGDUE(P) (bg[P] != 0 && BDL(bg[P]) <= 1 && UP(P % N))
#define ANYBGDUE (BGDUE(0) || BGDUE(1) || BGDUE(2) || BGDUE(3) || BGDUE(4) || BGDUE(5))

/* putTo: request K (seq S, count C, flag F) of owner O to node D waits in
 * a free slot of the pair (the sender's guard saw one). */
inline putTo(O, D, K, S, C, F) {
	if
	:: fg[((O)*N+(D))*FGS+FGS-1] == 0 -> fg[((O)*N+(D))*FGS+FGS-1] = MSG(K, S, C, F, 0); sortPair((O)*N+(D))
	:: else -> assert(false)
	fi
}
#define FREEO(O, D) (fg[((O)*N+(D))*FGS+FGS-1] == 0)

#if RENEW > 0
/* Renewal: the watchdog's round for owner O (lock/renew.go renewBatch,
 * watchdog.go renewBatch), in two atomic steps of the world: the fan-out
 * is sent (RENSTART), then at any later moment the watchdog stops waiting
 * and counts the replies it has (RENEND); requests that land after that
 * are late, their replies read by nobody.
 *
 * RENSTART: renewOp. The watchdog renews a held lock every third of its
 * lease (a tick) and retries a failed round sooner; the model lets a round
 * start at any moment (or never), a superset of the watchdog's schedule.
 * renewOp skips the round while an operation of the owner is on the wire
 * (opMu: el[O] > 0) or the hold is over (count 0); the entry is stopped
 * once the hold is lost or expired (markLost, the deadline timer). The
 * request carries the owner's count and a fresh seq (h.op(count, lease, 1)).
 * Seq abstraction: successive renewals with no other operation of the
 * owner between them share one seq (rsq[O] == oseq[O]: no other operation
 * took a number since). That is sound: such renewals carry the same count,
 * no other operation's number lies between theirs, so every comparison
 * with another operation's number comes out the same; between themselves
 * renew.lua's `seq > last` only decides whether HSET writes the same count
 * (and a seq that stands for both), and PEXPIRE runs either way. It keeps
 * seqs bounded while a hold is renewed for ever. */
#define RENSTART(O) \
	:: d_step { RENEWS(O) && count[O] > 0 && !lost[O] && vl[O] > 0 && rel[O] == 0 && el[O] == 0 && \
			FREEO(O, 0) && FREEO(O, 1) && FREEO(O, 2) -> \
		if :: rsq[O] != oseq[O] -> oseq[O]++; rsq[O] = oseq[O] :: else -> skip fi; \
		rel[O] = 1; sw[O] = 0; \
		putTo(O, 0, REN, rsq[O], count[O], 0); putTo(O, 1, REN, rsq[O], count[O], 0); putTo(O, 2, REN, rsq[O], count[O], 0); \
		printf("MSC t%d %c's watchdog sends REN seq %d count %d to every node\n", clock, 'A' + O, rsq[O], count[O]) }

/* The renewal's validity (lock/validity.go, renew.go): ValidUntil =
 * start + elapsed + (lease - elapsed - drift) = start + lease - drift,
 * counted from when the renewal was SENT: NL - (rel - 1) ticks from now.
 * -DBUG_RENEWLATE (a seeded bug) counts it from the reply instead. */
#ifdef BUG_RENEWLATE
#define RVLEFT(O) NL
#else
#define RVLEFT(O) (NL + 1 - rel[O])
#endif

/* renForget: the renewal's fan-out is over (or its entry stopped): its
 * requests still in flight become orphans, their replies read by nobody. */
inline renForget(O, I) {
	rel[O] = 0; rgot[(O)*N] = 0; rgot[(O)*N+1] = 0; rgot[(O)*N+2] = 0;
	I = (O)*N*FGS;
	do
	:: I < ((O)+1)*N*FGS ->
		if :: fg[I] != 0 && MKIND(fg[I]) == REN -> fg[I] = fg[I] | 4 :: else -> skip fi;
		I++
	:: else -> break
	od;
	sortPair((O)*N); sortPair((O)*N+1); sortPair((O)*N+2);
	I = 0
}

/* RENEND: renew.go renewBatch's decision, then watchdog.go renewBatch's.
 * A stopped entry (hold ended, lost or expired) ignores the outcome.
 * held >= quorum && validity > 0: Renewed, the entry's ValidUntil is SET
 * to the new one (it may move back; the belief only shrinks then), and,
 * with -DREPAIR, the nodes that answered "not held" get a repair
 * (repairLater; REPAIRSEND sends it). notHeld > N - quorum: Lost (markLost: the
 * loss is signalled; nothing is released, an Unlock cleans up, wasLost).
 * Otherwise: neither, and the watchdog retries (a later RENSTART). */
#define RENEND(O) \
	:: d_step { rel[O] > 0 -> \
		rk = (rgot[(O)*N] == R_OK) + (rgot[(O)*N+1] == R_OK) + (rgot[(O)*N+2] == R_OK); \
		rn = (rgot[(O)*N] == R_NOTHELD) + (rgot[(O)*N+1] == R_NOTHELD) + (rgot[(O)*N+2] == R_NOTHELD); \
		if \
		:: count[O] == 0 || lost[O] || vl[O] == 0 -> skip \
		:: else -> \
			if \
			:: rk >= Q && rel[O] <= NL -> \
				vl[O] = RVLEFT(O); \
				printf("MSC t%d %c's watchdog: %d nodes renewed: valid for %d ticks\n", clock, 'A' + O, rk, vl[O]); \
				CLAIM(O); \
				REPAIRLATER(O) \
			:: else -> \
				if \
				:: rn > N - Q -> lost[O] = true; vl[O] = 0; REPDROP(O); \
					printf("MSC t%d %c's watchdog: %d nodes do not hold it: LOST\n", clock, 'A' + O, rn) \
				:: else -> printf("MSC t%d %c's renewal fails (%d renewed); retried\n", clock, 'A' + O, rk) \
				fi \
			fi \
		fi; \
		renForget(O, i); rk = 0; rn = 0 }
#else
#define RENSTART(O)
#define RENEND(O)
#endif

/* The cleaner's acquire for owner O on node D (cleanup_run.go;
 * hold.repairOp), a repair's or a fill-in's. CLEANERMAYSEND: O holds
 * (count > 0, not lost, validity left) and has no operation on the wire
 * (repairOp's opMu.TryLock; a renewal round in flight does not hold opMu),
 * and the pair has a free slot. CLEANERSEND: acquire.lua with the owner's
 * count and a fresh seq (h.op); D joins the strays (STRAY: repairOp), and
 * the reply only counts it, so it goes out as an orphan. */
#define CLEANERMAYSEND(O, D) (count[O] > 0 && !lost[O] && vl[O] > 0 && el[O] == 0 && FREEO(O, D))
#define CLEANERSEND(O, D, STRAY) \
	oseq[O]++; RSQZ(O); STRAY; sw[O] = 0; \
	fg[((O)*N+(D))*FGS+FGS-1] = MSG(ACQ, oseq[O], count[O], 0, 0) | 4; sortPair((O)*N+(D))

#ifdef REPAIR
/* REPAIRLATER(O): Client.repairLater for the nodes the round found
 * without the hold (while the owner has repairs left to send). */
#define REPAIRLATER(O) \
	if \
	:: rps[O] > 0 -> \
		rep[O] = rep[O] | (rgot[(O)*N] == R_NOTHELD) | (rgot[(O)*N+1] == R_NOTHELD) * 2 | (rgot[(O)*N+2] == R_NOTHELD) * 4 \
	:: else -> skip \
	fi

/* REPAIRSEND(O, D): the cleaner of node D sends O's repair there
 * (cleanup_run.go; hold.repairOp), at any moment before its deadline, the
 * renewal's ValidUntil (repairBy): while O holds (count > 0, not lost,
 * validity left) and has no operation on the wire (repairOp's
 * opMu.TryLock; a renewal round in flight does not hold opMu). The repair
 * is acquire.lua with the owner's count and a fresh seq (h.op), sent once
 * (one attempt per request: the next renewal asks again); its reply only
 * counts it (repaired), so it goes out as an orphan. It may land after
 * the owner's Unlock, so D joins the strays (repairOp): that Unlock's
 * release there buries, and the repair then finds the tombstone.
 * -DBUG_REPAIRSTRAY (a seeded bug) leaves D out of the strays. */
#ifdef BUG_REPAIRSTRAY
#define REPSTRAY(O, D) skip
#else
#define REPSTRAY(O, D) str[(O)*N+(D)] = true
#endif
#define REPAIRSEND(O, D) \
	:: d_step { ((rep[O] >> (D)) & 1) && rps[O] > 0 && CLEANERMAYSEND(O, D) -> \
		rep[O] = rep[O] & (7 - (1 << (D))); rps[O]--; REPDROP(O); \
		CLEANERSEND(O, D, REPSTRAY(O, D)); \
		printf("MSC t%d %c's cleaner sends its repair (ACQ seq %d count %d) to node %d\n", clock, 'A' + O, oseq[O], count[O], D); \
		canon() }
#define REPAIRSENDS REPAIRSEND(0, 0) REPAIRSEND(0, 1) REPAIRSEND(0, 2) REPAIRSEND(1, 0) REPAIRSEND(1, 1) REPAIRSEND(1, 2)
/* A repair not sent by then is dropped: the hold ended, was lost or
 * expired (repairBy passed). Each of these lasts for the rest of the hold,
 * and so does rps[I] == 0, so the bits left then can never be sent:
 * REPDROP clears them at once (at the tick, and in each step that ends a
 * hold's validity or sends its last repair), so that states differing
 * only in such dead bits are stored once. */
#define REPAIRDROP(I) if :: rep[I] != 0 && (rps[I] == 0 || count[I] == 0 || lost[I] || vl[I] == 0) -> rep[I] = 0 :: else -> skip fi
#else
#define REPAIRLATER(O) skip
#define REPAIRSENDS
#define REPAIRDROP(I) skip
#endif

#ifdef FILLIN
/* FILLINLATER: fillInLater for the nodes where another owner's hold
 * refused the winning attempt of a keeper (called before keeping ends)
 * or, with -DHANDOFF, of a hand-off's target (hold.go attempt: fillIn =
 * !reentry && (handOff || keeping)). The model does not tell which
 * attempts a hand-off named (Pub/Sub is not modelled), so with -DHANDOFF
 * every winning first hold arms it: a superset, since an armed fill-in may
 * also never be sent (FILLSEND is a step the world may not take before
 * FILLDROP clears it). */
#ifdef HANDOFF
#define FILLER true
#else
#define FILLER keeping
#endif
#define FILLINLATER \
	if \
	:: FILLER && fls[o] > 0 -> \
		fil[o] = (got[o*N] == R_HELD) | (got[o*N+1] == R_HELD) * 2 | (got[o*N+2] == R_HELD) * 4; \
		if :: fil[o] != 0 -> fdl[o] = 2 :: else -> skip fi \
	:: else -> skip \
	fi
/* FILLSEND(O, D): node D's cleaner sends O's fill-in there, as
 * REPAIRSEND does (hold.repairOp: the same guards, count and strays), at
 * any moment before its deadline, and again while it has sends left
 * (cleanup_run.go sends it again only while another owner's hold refuses
 * it; sending it again whatever the reply is a superset).
 * -DBUG_FILLSTRAY (a seeded bug) leaves D out of the strays. Only an
 * owner that unlocks keeps strays (markStrays says why), so B's fill-in
 * marks none: the same behaviour, fewer states. */
#ifdef BUG_FILLSTRAY
#define FILLSTRAY(O, D) skip
#else
#define FILLSTRAY(O, D) if :: UNLOCKS(O) -> str[(O)*N+(D)] = true :: else -> skip fi
#endif
#define FILLSEND(O, D) \
	:: d_step { ((fil[O] >> (D)) & 1) && fls[O] > 0 && fdl[O] > 0 && CLEANERMAYSEND(O, D) -> \
		fls[O]--; \
		CLEANERSEND(O, D, FILLSTRAY(O, D)); \
		printf("MSC t%d %c's cleaner sends its fill-in (ACQ seq %d count %d) to node %d\n", clock, 'A' + O, oseq[O], count[O], D); \
		REPDROP(O); canon() }
#define FILLSENDS FILLSEND(0, 0) FILLSEND(0, 1) FILLSEND(0, 2) FILLSEND(1, 0) FILLSEND(1, 1) FILLSEND(1, 2)
/* A fill-in past its deadline, of a hold that ended, was lost or expired,
 * or with no sends left, can never be sent: cleared at once, as REPAIRDROP
 * does, so that such dead state is stored once. */
#define FILLDROP(I) if :: fil[I] != 0 && (fls[I] == 0 || fdl[I] == 0 || count[I] == 0 || lost[I] || vl[I] == 0) -> fil[I] = 0 :: else -> skip fi; \
	if :: fil[I] == 0 -> fdl[I] = 0 :: else -> skip fi
#define FILLTICK(I) if :: fdl[I] > 0 -> fdl[I]-- :: else -> skip fi
#else
#define FILLINLATER skip
#define FILLSENDS
#define FILLDROP(I) skip
#define FILLTICK(I) skip
#endif
/* REPDROP(I): both kinds of the cleaner's acquires dropped where they can
 * never be sent. */
#define REPDROP(I) REPAIRDROP(I); FILLDROP(I)

/* PROGRESS's quiet network: no request to a node that is up is lost (a
 * tick waits until every one has landed), a fan-out waits for the reply
 * of every node that is up (REPLIED), and returns before the tick (a round
 * trip is shorter than a third of a lease: a tick waits for every running
 * fan-out, el > 0). */
#ifdef PROGRESS
/* rdy[p]: owner p's Lock will retry: 1 when woken (WOKEN), 2 at once (a
 * probe that won the tie-breaker); 0: it is not between attempts. A
 * woken retry comes before the tick (the retry delay is shorter than a
 * third of a lease): a tick waits for it. */
byte rdy[2];
/* met[p]: p's last attempt ended while the other owner's attempt ran:
 * p's retry waits for it to end too (its undo is still to come). */
bool met[2];
#define OTHERQUIET(p) (!met[p] && bg[(1-(p))*N] == 0 && bg[(1-(p))*N+2] == 0)
#define RETRYDUE(p) (rdy[p] == 2 || (rdy[p] == 1 && OTHERQUIET(p)))
#define QUIETNET (fg[0] == 0 && fg[2*FGS] == 0 && fg[3*FGS] == 0 && fg[5*FGS] == 0 && el[0] == 0 && el[1] == 0 && \
	!RETRYDUE(0) && !RETRYDUE(1))
#define REPLIED (got[o*N] != 0 && got[o*N+2] != 0)
#else
#define QUIETNET 1
#define REPLIED 1
#endif

/* P3 for node D, owner P (see the header). */
#ifdef NOP3
#define P3(D, P) skip
#else
#define P3(D, P) assert(!(ncnt[(D)*2+P] > 0 && count[P] == 0) || sw[P] < P3LIM)
#endif

active proctype world() {
	short m, y;
	byte e, g, r, f, i, c;
#if RENEW > 0
	byte rk, rn;
#endif
end:
	do
	DELIVER(0, 0) DELIVER(0, 1) DELIVER(1, 0) DELIVER(1, 1) DELIVER(2, 0) DELIVER(2, 1)
	DELIVER(3, 0) DELIVER(3, 1) DELIVER(4, 0) DELIVER(4, 1) DELIVER(5, 0) DELIVER(5, 1)
#if FGS > 2
	DELIVER(0, 2) DELIVER(1, 2) DELIVER(2, 2) DELIVER(3, 2) DELIVER(4, 2) DELIVER(5, 2)
#endif
	BGDELIVER(0) BGDELIVER(1) BGDELIVER(2) BGDELIVER(3) BGDELIVER(4) BGDELIVER(5)
	DELIVERTTS
#if DUPS > 0
	DUP(0, 0) DUP(1, 0) DUP(2, 0) DUP(3, 0) DUP(4, 0) DUP(5, 0)
#endif
	RENSTART(0) RENSTART(1) RENEND(0) RENEND(1)
	REPAIRSENDS
	FILLSENDS
	FORCESTEPS
	:: d_step {
		/* The crash: node CRASHER restarts empty (no persistence). */
		CRASHES && !crashed ->
		crashed = true;
		dropKey(CRASHER);
		ntomb[CRASHER*2] = 0; ntomb[CRASHER*2+1] = 0; nttomb[CRASHER*2] = 0; nttomb[CRASHER*2+1] = 0;
		nfence[CRASHER] = 0;
		down = DOWNFOR;
		printf("MSC t%d node %d crashes; back, empty, at t%d\n", clock, CRASHER, clock + DOWNFOR)
	}
	:: d_step {
		/* A tick: every countdown moves on. */
		!ANYBGDUE && QUIETNET ->
		clock = (clock + 1) * CLOCKSTEP;
		printf("MSC tick: t%d\n", clock);
#ifdef HANDOFF
		rsv = 0;   /* handOffHold, 20 ms, is over */
#endif
#ifndef PROGRESS
		if :: down > 0 -> down-- :: else -> skip fi;
#endif
		i = 0;
		do
		:: i < 2*N*FGS ->
			/* a request older than MAXDELAY is gone (bounded delay) */
			if
			:: fg[i] != 0 && MAGE(fg[i]) >= MAXDELAY -> fg[i] = 0
			:: fg[i] != 0 && MAGE(fg[i]) < MAXDELAY -> fg[i] = fg[i] + 1
			:: else -> skip
			fi;
			i++
		:: else -> break
		od;
		i = 0;
		do
		:: i < 2*N ->
			sortPair(i);
			/* a background release at its deadline (its node is down) */
			if
			:: bg[i] != 0 && BDL(bg[i]) <= 1 -> bg[i] = 0
			:: bg[i] != 0 && BDL(bg[i]) > 1 -> bg[i] = bg[i] - 1
			:: else -> skip
			fi;
			FORCETICK(i);
			/* tombstones whose TTL ran out */
			if
			:: nttomb[i] > 1 -> nttomb[i]--
			:: nttomb[i] == 1 -> nttomb[i] = 0; ntomb[i] = 0
			:: else -> skip
			fi;
			i++
		:: else -> break
		od;
		/* owners: validity, elapsed, kept lease, P3's ghost */
		i = 0;
		do
		:: i < 2 ->
			if :: vl[i] > 0 -> vl[i]-- :: else -> skip fi;
			FILLTICK(i);
			REPDROP(i);
			if :: el[i] > 0 && el[i] <= LEASE -> el[i]++ :: else -> skip fi;
#if RENEW > 0
			if :: rel[i] > 0 && rel[i] <= NL -> rel[i]++ :: else -> skip fi;   /* past NL: no validity left */
#endif
			if :: kl[i] > 1 -> kl[i]-- :: else -> skip fi;
			if :: sw[i] < P3LIM -> sw[i]++ :: else -> skip fi;
			i++
		:: else -> break
		od;
		i = 0;
		do
		:: i < N ->
			/* lock hashes whose PTTL ran out */
			if
			:: nttl[i] > 1 -> nttl[i]--
			:: nttl[i] == 1 -> dropKey(i)
			:: else -> skip
			fi;
			P3(i, 0); P3(i, 1);
			i++
		:: else -> break
		od;
		i = 0;
		canon()
	}
	:: d_step {
		/* P2: quiescence after the owners are done. */
		done[0] && done[1] &&
		fg[0] == 0 && fg[FGS] == 0 && fg[2*FGS] == 0 && fg[3*FGS] == 0 && fg[4*FGS] == 0 && fg[5*FGS] == 0 &&
		bg[0] == 0 && bg[1] == 0 && bg[2] == 0 && bg[3] == 0 && bg[4] == 0 && bg[5] == 0 && FORCEQUIET ->
#ifdef PROGRESS
		/* P5, progress: both Locks are over and all is quiet: one of them
		 * got the lock. */
		if
		:: count[0] == 0 && count[1] == 0 ->
			printf("MSC t%d all quiet, both Locks over, nobody holds the lock: P5 fails\n", clock)
		:: else -> skip
		fi;
		assert(count[0] > 0 || count[1] > 0);
#endif
#if !defined(IMMEDIATE) && !defined(NOP2)
		i = 0;
		do
		:: i < 2*N ->
			if
			:: !(!UP(i / 2) || (count[i % 2] == 0 && ncnt[i] == 0) || (count[i % 2] > 0 && (ncnt[i] == 0 || ncnt[i] == count[i % 2]))) ->
				printf("MSC t%d all quiet, but node %d holds %c's count %d while %c's count is %d: P2 fails\n",
					clock, i / 2, 'A' + i % 2, ncnt[i], 'A' + i % 2, count[i % 2])
			:: else -> skip
			fi;
			assert(!UP(i / 2) || (count[i % 2] == 0 && ncnt[i] == 0) || (count[i % 2] > 0 && (ncnt[i] == 0 || ncnt[i] == count[i % 2])));
			i++
		:: else -> break
		od;
		i = 0
#else
		/* With an immediate restart the node has lost its tombstones too:
		 * a delayed acquire may land there after the last unlock. Same
		 * limit as P1's; not checked. (-DNOP2: P2 off, see check.sh.) */
		skip
#endif
	}
	od
}

/* The owners. */

/* put: send request K (seq S, count C, flag F) of owner o to node D: it
 * waits in a free slot of the pair (the owner's send waits for one). */
inline put(D, K, S, C, F) {
	putTo(o, D, K, S, C, F)
}
#define FREE(D) (fg[(o*N+(D))*FGS+FGS-1] == 0)
#define CANSEND (FREE(0) && FREE(1) && FREE(2))

/* send: fanout.go fanOutTo: the request goes to every node; the owner then
 * waits for the replies (wk, ws). */
inline send(K, S, C, F) {
	wk[o] = K; ws[o] = S;
	put(0, K, S, C, F); put(1, K, S, C, F); put(2, K, S, C, F);
	printf("MSC t%d %c sends %e seq %d count %d to every node\n", clock, 'A' + o, K, S, C)
}

/* tally: how many replies of the fan-out are X, into k. */
#define TALLY(X) k = (got[o*N] == X) + (got[o*N+1] == X) + (got[o*N+2] == X)

/* markStrays: an acquire's fan-out is over (hold.attempt, strayNodes):
 * each node that did not answer may still get the request. Only an owner
 * that unlocks reads its strays (B only with -DBUNLOCK), and only through a
 * client that never sends twice (with -DDUPS, NOSTRAY is never true): other
 * strays would be state that no step reads, so they are not kept. */
inline markStrays() {
#ifndef BUG_NOSTRAYS
	if
	:: UNLOCKS(o) && DUPS == 0 ->
		if :: got[o*N] == 0 -> str[o*N] = true :: else -> skip fi;
		if :: got[o*N+1] == 0 -> str[o*N+1] = true :: else -> skip fi;
		if :: got[o*N+2] == 0 -> str[o*N+2] = true :: else -> skip fi
	:: else -> skip
	fi
#else
	skip   /* THE SEEDED BUG: no node counts as a stray */
#endif
}

/* sendRelease: Unlock's fan-out (hold.release): as send, with, for a release
 * to 0, the flag NoStrays for each node not in the owner's strays, through a
 * client that never sends twice (DUPS 0). */
#define NOSTRAY(D, C) ((C) == 0 && !str[o*N+(D)] && DUPS == 0)
inline sendRelease(S, C) {
	wk[o] = REL; ws[o] = S;
	put(0, REL, S, C, NOSTRAY(0, C)); put(1, REL, S, C, NOSTRAY(1, C)); put(2, REL, S, C, NOSTRAY(2, C));
	printf("MSC t%d %c sends REL seq %d count %d to every node (no tombstone needed: %d%d%d)\n", clock, 'A' + o, S, C,
		NOSTRAY(0, C), NOSTRAY(1, C), NOSTRAY(2, C))
}

/* A release to 0 that buried on node D (its answer R_GONE or R_NOTHELD; a
 * straggler's R_STILL buries nothing) covers every acquire sent there
 * before: D leaves the strays. */
#define BURIED(D) (got[o*N+(D)] == R_GONE || got[o*N+(D)] == R_NOTHELD)
inline clearStrays() {
	if :: str[o*N] && BURIED(0) -> str[o*N] = false :: else -> skip fi;
	if :: str[o*N+1] && BURIED(1) -> str[o*N+1] = false :: else -> skip fi;
	if :: str[o*N+2] && BURIED(2) -> str[o*N+2] = false :: else -> skip fi
}

/* dropStrays: the owner's hold ended (count 0) and, without -DAGAIN, no
 * Unlock of its follows: its strays are read no more, and are dropped so
 * that states that differ in them alone are one. */
inline dropStrays() {
#ifndef AGAIN
	if :: count[o] == 0 -> str[o*N] = false; str[o*N+1] = false; str[o*N+2] = false :: else -> skip fi
#else
	skip
#endif
}

/* forget: the fan-out is over: late replies are read by nobody. */
inline forget() {
	wk[o] = 0; ws[o] = 0; got[o*N] = 0; got[o*N+1] = 0; got[o*N+2] = 0; gfen[o] = 0
}

/* clean: the cleaner of node D takes a release of owner o (seq S, count C,
 * deadline DL): cleanup.go add: the newer release of the two, the later
 * deadline. (keepReleasing's sending again after one got through is not
 * modelled: the tombstone it left refuses what it would guard against.) */
inline clean(D, S, C, DL) {
	if
	:: bg[o*N+(D)] == 0 -> bg[o*N+(D)] = BGM(S, C, DL)
	:: else ->
		if
		:: S > BSEQ(bg[o*N+(D)]) && DL > BDL(bg[o*N+(D)]) -> bg[o*N+(D)] = BGM(S, C, DL)
		:: S > BSEQ(bg[o*N+(D)]) && DL <= BDL(bg[o*N+(D)]) -> bg[o*N+(D)] = BGM(S, C, BDL(bg[o*N+(D)]))
		:: S <= BSEQ(bg[o*N+(D)]) && DL > BDL(bg[o*N+(D)]) -> bg[o*N+(D)] = BGM(BSEQ(bg[o*N+(D)]), BCNT(bg[o*N+(D)]), DL)
		:: else -> skip
		fi
	fi
}

/* undo: Client.undo of the acquire (seq S, count C): a node that did not
 * answer is released until the attempt's lease ends (keepReleasing; undoLate
 * is modelled as it), one that took it is set back (setBack) unless KEEP;
 * one that refused changed nothing. */
inline undo(S, C, DL, KEEP) {
	if :: got[o*N] == 0 || (got[o*N] == R_OK && !KEEP) -> clean(0, S + 1, C - 1, DL) :: else -> skip fi;
	if :: got[o*N+1] == 0 || (got[o*N+1] == R_OK && !KEEP) -> clean(1, S + 1, C - 1, DL) :: else -> skip fi;
	if :: got[o*N+2] == 0 || (got[o*N+2] == R_OK && !KEEP) -> clean(2, S + 1, C - 1, DL) :: else -> skip fi
}

/* releaseAll: Client.releaseOn(op, allNodes, DL). */
inline releaseAll(S, C, DL) {
	clean(0, S, C, DL); clean(1, S, C, DL); clean(2, S, C, DL)
}

/* loseHold (hold.go): signal the loss; clear ours on every node. */
inline loseHold() {
	lost[o] = true; vl[o] = 0;     /* a lost hold's validity is never read again */
	REPDROP(o);
	oseq[o]++; RSQ0;
	releaseAll(oseq[o], 0, LEASE)
}

/* The running acquire's validity (lock/validity.go): it began el[o] - 1
 * ticks ago; valid while that is below NL, for NL - (el[o] - 1) ticks
 * more; its lease ends LEASE - (el[o] - 1) ticks from now (at least one:
 * every release is sent at least once, cleanup.go add). */
#define VALID (el[o] > 0 && el[o] <= NL)
#define VLEFT (NL + 1 - el[o])
#define DLEFT (el[o] <= LEASE -> LEASE + 1 - el[o] : 1)

/* WOKEN: PROGRESS's retry rule (hold.lock's wait between attempts). A
 * first attempt, or a probe that won the tie-breaker (retryNow), goes at
 * once; any other retry waits until the other owner's attempt has ended
 * and the releases it queued for the nodes that are up have landed: the
 * wake its release publishes, or a retry delay long enough for it. That is
 * an assumption (a fairness one: with a bounded number of attempts, a
 * retry that always comes before the undo it waits for burns them all;
 * hold.lock retries until its ctx ends). Without PROGRESS: at once. */
#ifdef PROGRESS
#define WOKEN (att == 0 || rdy[o] == 2 || OTHERQUIET(o))
#else
#define WOKEN 1
#endif
/* -DBUG_NOKEEP (a seeded bug, for PROGRESS): settle never keeps and never
 * probes: every failed attempt undoes, as plain Redlock does. */
#ifdef BUG_NOKEEP
#define NOKEEP 1
#else
#define NOKEEP 0
#endif

/* lockStep: hold.lock / hold.attempt. */
inline lockStep() {
	if
	:: count[o] > 0 && lost[o] -> skip                    /* isLost: ErrLost */
	:: d_step { count[o] > 0 && !lost[o] && vl[o] == 0 -> loseHold() }  /* re-entry past the deadline */
	:: d_step { CANSEND && count[o] > 0 && !lost[o] && vl[o] > 0 ->
		/* A re-entry (hold.attempt, Client.acquire), one attempt. */
		oseq[o] = oseq[o] + 2; s = oseq[o] - 1; el[o] = 1; sw[o] = 0; RSQ0;
		send(ACQ, s, count[o] + 1, 1) };
		/* fanOutTo returns: every node answered or timed out. */
		d_step {
			markStrays();
			TALLY(R_OK);
			if
			:: k >= Q && VALID ->
				count[o]++;
				if :: VLEFT > vl[o] -> vl[o] = VLEFT :: else -> skip fi;    /* extend */
				printf("MSC t%d %c re-enters: count %d, valid for %d ticks\n", clock, 'A' + o, count[o], vl[o]);
				CLAIM(o)
			:: else ->
				undo(s, count[o] + 1, DLEFT, false);
				k = (got[o*N] == R_HELD || got[o*N] == R_STALE || got[o*N] == R_MISSING) +
				    (got[o*N+1] == R_HELD || got[o*N+1] == R_STALE || got[o*N+1] == R_MISSING) +
				    (got[o*N+2] == R_HELD || got[o*N+2] == R_STALE || got[o*N+2] == R_MISSING);
				if :: k > N - Q -> loseHold() :: else -> skip fi;              /* a.absent > N - quorum */
				printf("MSC t%d %c's re-entry fails\n", clock, 'A' + o)
			fi;
			forget(); s = 0; el[o] = 0; k = 0 }
	:: count[o] == 0 ->
		/* A first hold: up to ATTEMPTS attempts (hold.lock's loop). */
		do
		:: count[o] > 0 -> break
		:: count[o] == 0 && att == ATT(o) ->
			/* The Lock call ends without the lock: contender.abandon. */
			d_step {
				if :: keeping -> releaseAll(keptSeq + 1, 0, kl[o]) :: else -> skip fi;
				printf("MSC t%d %c's Lock gives up\n", clock, 'A' + o);
				keeping = false; keptSeq = 0; kl[o] = 0; att = 0 };
			break
		:: d_step { CANSEND && count[o] == 0 && att < ATT(o) && WOKEN ->
			att++; FVCLEAR(o);
			oseq[o] = oseq[o] + 2; s = oseq[o] - 1; RSQ0;  /* op(count+1, lease, 2): one seq for the undo */
			el[o] = 1; sw[o] = 0;
#ifdef PROBE
			if
			:: probe ->
				/* contender.target: a probe asks the tie-breaker alone; the
				 * other nodes are not asked (nothing to undo there) */
				wk[o] = ACQ; ws[o] = s; put(TIE, ACQ, s, 1, 0);
				got[o*N+1] = R_STALE; got[o*N+2] = R_STALE;
				printf("MSC t%d %c probes the tie-breaker: ACQ seq %d\n", clock, 'A' + o, s)
			:: else -> send(ACQ, s, 1, 0)
			fi;
			rnow = false; rdy[o] = 0
#else
			send(ACQ, s, 1, 0)
#endif
			};
			/* fanOutTo returns: every node answered or timed out. */
			d_step {
				REPLIED ->
				markStrays();
				TALLY(R_OK);
				/* Client.acquire: agreed >= need && validity > 0 */
				won = k >= Q && VALID;
				if
				:: won ->
					FILLINLATER;
					if :: keeping -> keeping = false; keptSeq = 0; kl[o] = 0 :: else -> skip fi; /* part of the hold now */
#ifndef FENCE
					/* startHold (no fencing) */
					count[o] = 1; vl[o] = VLEFT; lost[o] = false;
					printf("MSC t%d %c HOLDS the lock, valid for %d ticks\n", clock, 'A' + o, vl[o]);
					CLAIM(o);
					el[o] = 0; won = false; att = 0
#else
					/* drawToken (lock/fence.go), counter tokens: the highest
					 * counter the attempt saw + 1. */
					tok = gfen[o] + 1
#endif
				:: else ->
					printf("MSC t%d %c's attempt fails (%d nodes agreed)\n", clock, 'A' + o, k);
					/* contender.settle: keep what the attempt took when it
					 * won the tie-breaker (and the Lock goes on); else undo
					 * it, and what earlier attempts kept (abandon). Not
					 * modelled: contender.mayKeep's refusal to start keeping
					 * when one owner refused the attempt on a quorum (the
					 * acquire's reply names it, askHolder), unless a hand-off
					 * named the waiter, and the silent undo that follows
					 * (release mode 's': no message; pubsub is not modelled).
					 * It only keeps less; the safety properties hold for any
					 * choice of when to keep. */
					if
					:: got[o*N + TIE] == R_OK && att < ATT(o) && !NOKEEP ->
						undo(s, 1, DLEFT, true);
						keeping = true; keptSeq = s; kl[o] = DLEFT
#ifdef PROBE
						; rnow = probe; probe = false   /* a probe that won the tie-breaker goes on at once */
#endif
					:: else ->
						if :: keeping -> releaseAll(keptSeq + 1, 0, kl[o]) :: else -> skip fi;
						keeping = false; keptSeq = 0; kl[o] = 0;
						undo(s, 1, DLEFT, false)
#ifdef PROBE
						/* probe next time only if another owner holds the tie-breaker */
						; probe = (got[o*N + TIE] == R_HELD) && !NOKEEP
#endif
					fi;
					el[o] = 0
#ifdef PROGRESS
					; if :: att < ATT(o) && rnow -> rdy[o] = 2 :: att < ATT(o) && !rnow -> rdy[o] = 1 :: else -> skip fi;
					met[o] = (el[1-o] > 0)
#endif
				fi;
#ifdef PROGRESS
				met[1-o] = false;
#endif
				forget(); k = 0 };
			if
#ifdef FENCE
			:: won ->
				/* drawToken: write the token back to every node; a token
				 * some node had already is drawn again above the highest
				 * counter found, up to FDRAWS draws (fenceDraws). Each
				 * draw is its own fan-out: fs is its seq. */
				fs = s; again = true;
				do
				:: again ->
					d_step { CANSEND -> send(FEN, fs, tok, 0) };
					d_step {
						TALLY(R_TAKEN); tk = k;
						k = k + (got[o*N] == R_OK) + (got[o*N+1] == R_OK) + (got[o*N+2] == R_OK);
#ifdef BUG_TAKEN
						/* the seeded bug: drawToken before the fix, a node
						 * that had the token already counts as storing it */
						tk = 0;
#endif
						again = tk > 0 && k >= Q && VALID && draws + 1 < FDRAWS;
						if
						:: again ->
							draws++; tok = gfen[o] + 1;
							assert(tok <= 3);         /* the token's bits in a message */
							printf("MSC t%d %c's token was at a node already: draws again, token %d\n", clock, 'A' + o, tok);
							forget(); oseq[o]++; RSQ0; fs = oseq[o]; k = 0; tk = 0
						:: else -> skip
						fi }
				:: else ->
					d_step {
						if
						:: tk == 0 && k >= Q && VALID ->
							/* startHold */
							count[o] = 1; vl[o] = VLEFT; lost[o] = false;
							printf("MSC t%d %c HOLDS the lock: token %d, valid for %d ticks\n", clock, 'A' + o, tok, vl[o]);
							CLAIM(o);
							assert(crashed || tok > lastToken);         /* P4 */
							if :: tok > lastToken -> lastToken = tok :: else -> skip fi;
							att = 0
						:: else ->
							/* no token on a quorum: setBack(op, allNodes, validUntil) */
							printf("MSC t%d %c's token was not stored on a quorum\n", clock, 'A' + o);
							if :: VALID -> k = VLEFT :: else -> k = 1 fi;
							releaseAll(s + 1, 0, k)
						fi;
						forget(); el[o] = 0; k = 0; tk = 0; tok = 0; fs = 0; draws = 0; won = false };
					break
				od
#endif
			:: else -> skip
			fi;
			s = 0
		od
	fi
}

#if RENEW > 0
#define RENKILL renForget(o, y)
#else
#define RENKILL skip
#endif

/* unlockStep: hold.release (lock/unlock.go). */
inline unlockStep() {
	if
	:: count[o] == 0 -> skip                           /* ErrNotHeld */
	:: d_step { count[o] > 0 && (lost[o] || vl[o] == 0) ->
		/* wasLost: clean ours once, keep the count balanced. */
		oseq[o]++; RSQ0;
		if :: count[o] == 1 -> releaseAll(oseq[o], 0, LEASE) :: else -> skip fi;
		count[o]--;
		if :: count[o] == 0 -> vl[o] = 0; lost[o] = false; FVCLEAR(o); RENKILL :: else -> skip fi;   /* settle, endHold */
		dropStrays();
		printf("MSC t%d %c unlocks a lost hold: count %d\n", clock, 'A' + o, count[o]) }
	:: d_step { CANSEND && count[o] > 0 && !lost[o] && vl[o] > 0 ->
		oseq[o]++; RSQ0; s = oseq[o]; el[o] = 1;
		if :: count[o] > 1 -> sw[o] = 0 :: else -> skip fi;
		/* the last Unlock: its caller has left the critical section; the
		 * hold's watchdog entry ends with it (endHold: a renewal in flight
		 * is ignored) */
		if :: count[o] == 1 -> vl[o] = 0; RENKILL; REPDROP(o) :: else -> skip fi;
		sendRelease(s, count[o] - 1) };
		d_step {
			if :: count[o] == 1 -> clearStrays() :: else -> skip fi;
			/* nodes that did not answer: releaseOn(op, retry, now + lease) */
			if :: got[o*N] == 0 -> clean(0, s, count[o] - 1, DLEFT) :: else -> skip fi;
			if :: got[o*N+1] == 0 -> clean(1, s, count[o] - 1, DLEFT) :: else -> skip fi;
			if :: got[o*N+2] == 0 -> clean(2, s, count[o] - 1, DLEFT) :: else -> skip fi;
			k = (got[o*N] == R_STILL || got[o*N] == R_GONE) +
			    (got[o*N+1] == R_STILL || got[o*N+1] == R_GONE) +
			    (got[o*N+2] == R_STILL || got[o*N+2] == R_GONE);
			if
			:: k >= Q ->
				if
				:: count[o] > 1 && VALID ->
					if :: VLEFT > vl[o] -> vl[o] = VLEFT :: else -> skip fi;
					CLAIM(o)
				:: else -> skip
				fi
			:: else ->
				TALLY(R_NOTHELD);
				if
				:: k > N - Q && count[o] > 1 -> loseHold()
				:: k > N - Q && count[o] == 1 -> lost[o] = true    /* signalLoss */
				:: else -> skip
				fi
			fi;
			count[o]--;
			if :: count[o] == 0 -> vl[o] = 0; lost[o] = false; FVCLEAR(o) :: else -> skip fi;   /* settle */
			dropStrays();
			printf("MSC t%d %c unlocked: count %d\n", clock, 'A' + o, count[o]);
			forget(); s = 0; el[o] = 0; k = 0 }
	fi
}

proctype owner(byte o) {
	byte s, att, k, tok, keptSeq;
	bool won, keeping;
#ifdef PROBE
	bool probe, rnow;   /* contender.probe; settle's retryNow */
#endif
#ifdef FENCE
	byte fs, tk, draws;   /* drawToken: the draw's seq, nodes that had its token, draws made */
	bool again;
#endif
	short y;
	if
	:: o == 0 ->
		lockStep();
#ifndef PROGRESS
#ifdef REENTRY
		lockStep(); unlockStep();
#endif
		unlockStep()
#ifdef AGAIN
		; lockStep()
#endif
#endif
	:: else ->
		lockStep()
#ifdef BUNLOCK
		; unlockStep()
#endif
	fi;
	done[o] = true
}

init {
	atomic { run owner(0); run owner(1) }
}
