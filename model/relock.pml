/*
 * relock.pml: a Promela model of relock's Mutex protocol, for SPIN.
 *
 * What is modelled. Two owners (A = 0, B = 1) lock one lock name over three
 * independent Redis nodes (quorum 2). Each node applies the scripts' logic
 * (acquire, release, renew, fence; the undo of a failed attempt is a
 * release) atomically on its own state, as Redis runs a Lua script. The
 * network between owners and nodes is a bag of at most NET messages: any
 * message may be delivered next (reordering), stay in flight while time
 * passes (delay, at most MAXDELAY ticks: the bounded-delay assumption),
 * be lost (LOSSES of them, plus any that find the bag full or their node
 * down) or be duplicated (DUPS of them). A node may crash once and restart
 * empty: after DOWNFOR ticks, longer than a lease (the stated assumption),
 * or, compiled with -DIMMEDIATE, at once. Time is a global tick count up to
 * MAXT; leases last LEASE ticks, and a node's clock may run fast by up to
 * DRIFT ticks over a lease, so a key may vanish up to DRIFT ticks early.
 * Owners follow the client's logic: fan-out, quorum count, validity check,
 * undo of failed attempts in the background, the tie-breaker's keeping,
 * re-entry, renewal, loss, unlock, fencing tokens.
 *
 * Owner A: Lock, Lock (a re-entry), Unlock, Unlock. Owner B: Lock, Unlock.
 * Either may renew its hold once, between its steps. A Lock makes at most
 * ATTEMPTS attempts, then gives up (its ctx ended).
 *
 * Each step below names what it stands for: lua/<script>.lua and its lines
 * for a node, the Go function (package lock unless said) for an owner.
 *
 * Properties (assertions; run pan with -DSAFETY, see check.sh):
 *  P1 mutual exclusion of valid holds: when an owner starts or extends a
 *     hold, no other owner believes it holds (count > 0, not lost, now
 *     before its ValidUntil). Validity intervals only shrink as time runs,
 *     so checking at each start or extension covers every instant.
 *  P2 counts converge: once both owners are done, the network is empty and
 *     every background release has got through (none given up at its
 *     deadline), every node that is up holds nothing.
 *  P3 no lock held by nobody past its lease: at every tick, a node holds no
 *     field of an owner that holds nothing, later than LEASE + MAXDELAY
 *     ticks after that owner's last message.
 *  P4 fencing tokens strictly increase across successive holders (counter
 *     tokens, checked while no node has lost its counter: a crash voids
 *     them, which is why relock's default tokens are hybrid; see README).
 *
 * Configurations (-D at spin -a):
 *  (none)        delayed restart: P1..P4 are to hold (exhaustive search)
 *  -DIMMEDIATE   the node restarts at once: P1 is to fail (the known limit)
 *  -DBUG_NOSEQ   release.lua without its sequence-number check: P1 is to fail
 * None of the three searches has completed yet within the budget: see
 * README.md, Status.
 *
 * The scripts this model stands for, and their sha256 when it was last
 * checked against them (model/checksum_test.go fails when a script changes
 * and its line here does not: update the model, then the line). On
 * 2026-11-26 prelude.lua and release.lua changed only in how a release is
 * announced over Pub/Sub (mode 'u', a copy for keepers after a clean-up;
 * later the personal channels), which this model leaves out, and
 * acquire.lua and release.lua gained the wait queue's hand-off reservation
 * (a refusal that takes nothing, on the tie-breaker only; the model has no
 * queue): their lines were updated with no model change.
 */
/* checksum lua/prelude.lua sha256:3625903a03a08ee3e3fc81c439d6f5b02eca21accf74ad69bcd0871707a8120a */
/* checksum lua/acquire.lua sha256:ab6ea1c11d0765f6538d910413f06ec6dc378eb9182d357e5a1890baeb96d68e */
/* checksum lua/release.lua sha256:72c5a576234cf97ea9248e431fb8a4f5517a0a15563311e0bedf83873753de51 */
/* checksum lua/renew.lua sha256:a36678d51574561d146256997bd0cc2a0a0715bdc0c04a78f2fbcf20b7062d1c */
/* checksum lua/fence.lua sha256:2965daa1ddfb747e50e329fb6292e3d492464dd0676c1b37653d793b8b4fbb02 */

#define N 3              /* nodes */
#define Q 2              /* quorum: N/2+1 (lock/validity.go quorum) */
#define NO 2             /* owners */
#ifndef RENEWA
#define RENEWA 0
#endif
#ifdef RENEWB
#define MAYRENEW(o) true /* both owners may renew */
#else
#define MAYRENEW(o) (o == 0 && RENEWA) /* A renews; B's renewal adds states, not cases */
#endif
#ifndef ASTEPS
#define ASTEPS 2             /* A: Lock, Unlock (4: Lock, Lock, Unlock, Unlock) */
#endif
#ifndef BSTEPS
#define BSTEPS 1             /* B: Lock */
#endif
#define NSTEPS(o) (o == 0 -> ASTEPS : BSTEPS)
#define ISLOCK(o, st) (st < (NSTEPS(o) + 1) / 2)
#define TIE 0            /* the tie-breaker: hash(key) mod N (contend.go tieBreaker) */

#ifndef LEASE
#define LEASE 3          /* ticks */
#endif
#ifndef DRIFT
#define DRIFT 1          /* lease x ClockDriftFactor + 2 ms, rounded up to a tick */
#endif
#ifndef MAXT
#define MAXT 2           /* the last tick */
#endif
#ifndef MAXDELAY
#define MAXDELAY 1       /* a message older than this is gone: below LEASE - DRIFT */
#endif
#ifndef NET
#define NET 6            /* messages in flight at once */
#endif
#ifndef LOSSES
#define LOSSES 0
#endif
#ifndef DUPS
#define DUPS 0
#endif
#ifndef CRASHES
#define CRASHES 1
#endif
#ifndef ATTEMPTS
#define ATTEMPTS 1
#endif
/* A node's clock may run fast by the drift allowance: a TTL of one lease
 * ends DRIFT ticks early, in real time. The model takes that worst case
 * for every key (locks and tombstones). */
#define NODELEASE (LEASE - DRIFT)
#ifdef IMMEDIATE
#define DOWNFOR 0        /* restarts empty at once */
#else
#define DOWNFOR (LEASE + 1) /* stays down longer than a lease */
#endif

/* A message is one int: kind, owner, node, sequence number, count, value,
 * and the tick it was sent. Packing keeps the state vector small, and the
 * network keeps its messages sorted (largest first, free slots of 0 last),
 * so two orders of the same messages are one state. */
#define MK(K, O, D, S, C, V, T) (((K) << 21) | ((O) << 20) | ((D) << 18) | ((S) << 13) | ((C) << 11) | ((V) << 5) | (T))
#define KIND(x) (((x) >> 21) & 7)
#define OWN(x) (((x) >> 20) & 1)
#define NODE(x) (((x) >> 18) & 3)
#define SEQ(x) (((x) >> 13) & 31)
#define CNT(x) (((x) >> 11) & 3)
#define VAL(x) (((x) >> 5) & 63)
#define SENT(x) ((x) & 31)

/* Request kinds. */
mtype = { ACQ, REL, REN, FEN };   /* values 4..1: printed by name */

/* Reply codes. */
#define R_HELD 1         /* acquire: another owner holds it ({0, pttl}) */
#define R_OK 2           /* acquire: {1, count}; renew: 1; fence: stored */
#define R_STALE 3        /* acquire: {2, -2}, refused by the tombstone */
#define R_MISSING 4      /* acquire: {3, -2}, a re-entry found no hold */
#define R_NOTHELD 1      /* release 0 / renew 0 */
#define R_STILL 2        /* release 1 */
#define R_GONE 3         /* release 2 */

int net[NET];

byte now;

/* Node state (flattened [node*NO + owner]): the lock hash's fields OWNER
 * (count) and OWNER/seq, its PTTL as an absolute expiry, each owner's
 * tombstone (number and expiry), the fencing counter, and when a crashed
 * node is back (up while now >= down). */
byte ncnt[N*NO];
byte nseq[N*NO];
byte nexp[N];
byte ntomb[N*NO];
byte ntombx[N*NO];
byte nfence[N];
byte ndown[N];

/* Owner state (hold.go's hold): count, sequence counter, ValidUntil,
 * isLost; the running fan-out (kind and seq it waits for) and the replies
 * it got (0: none yet), with the fencing counters they carried. */
byte count[NO];
byte oseq[NO];
byte vu[NO];
bool lost[NO];
bool done[NO];
byte fkind[NO];
byte fseq[NO];
byte got[NO*N];
byte gfen[NO*N];

/* The clean-up queues (cleanup.go) are not state of their own: a
 * background release is a message marked bg (val 1) whose time field is
 * its deadline. The drainer sends it again until it gets through or its
 * deadline passes, so in the model it is delivered once at most, at any
 * moment before its deadline, and waits while its node is down; a newer
 * release of the owner for that node replaces it (cleanup.go add). */

/* Budgets and ghosts. */
byte losses = LOSSES;
byte dups = DUPS;
byte crashes = CRASHES;
bool crashed;            /* a node lost its state: counter tokens are void */
bool gaveUp;             /* a background release expired before it got through */
byte lastToken;
bool checked;

#define BELIEVES(p) (count[p] > 0 && !lost[p] && now < vu[p])
#define HASKEY(d) (ncnt[(d)*NO] > 0 || ncnt[(d)*NO+1] > 0)
#define UP(d) (now >= ndown[d])

/* P1: called where an owner starts or extends its hold. */
#define CLAIM(o) assert(!BELIEVES(1 - (o)))

/* sortnet: one bubble pass per slot, largest first. */
inline sortnet() {
	i = 0;
	do
	:: i < NET - 1 ->
		x = 0;
		do
		:: x < NET - 1 - i ->
			if
			:: net[x] < net[x+1] -> y = net[x]; net[x] = net[x+1]; net[x+1] = y
			:: else -> skip
			fi;
			x++
		:: else -> break
		od;
		i++
	:: else -> break
	od;
	i = 0; x = 0; y = 0
}

/* put: send a message; a full network loses it. */
inline put(K, O, D, S, C, V) {
	if
	:: net[NET-1] == 0 -> net[NET-1] = MK(K, O, D, S, C, V, now); sortnet();
		printf("MSC t%d %c sends %e seq %d count %d val %d to node %d\n", now, 'A' + O, K, S, C, V, D)
	:: else -> printf("MSC t%d network full: %c's message to node %d is lost\n", now, 'A' + O, D)
	fi
}

/* drop: slot J's message is gone. */
inline drop(J) {
	net[J] = 0; sortnet()
}

/* dropKey: the lock hash is gone (DEL, or its PTTL ran out). */
inline dropKey(D) {
	ncnt[D*NO] = 0; ncnt[D*NO+1] = 0; nseq[D*NO] = 0; nseq[D*NO+1] = 0; nexp[D] = 0
}

/* bury (prelude.lua bury): the tombstone keeps the higher number and the
 * longer TTL of the two. */
inline bury(E, S) {
	if
	:: ntombx[E] > now ->
		if :: S > ntomb[E] -> ntomb[E] = S :: else -> skip fi;
		if :: now + NODELEASE > ntombx[E] -> ntombx[E] = now + NODELEASE :: else -> skip fi
	:: else -> ntomb[E] = S; ntombx[E] = now + NODELEASE
	fi
}

/* apply: node m runs the script the request in slot J asks for (fields
 * unpacked in k, p, m, sq, c, v); v becomes the reply code and f the
 * fencing counter it carries. */
inline apply(J) {
	k = KIND(net[J]); p = OWN(net[J]); m = NODE(net[J]);
	sq = SEQ(net[J]); c = CNT(net[J]); v = VAL(net[J]); v0 = v;
	script()
}

/* script: node m runs request k of owner p (seq sq, count c, value v). */
inline script() {
	e = m*NO + p;
	if
	:: k == ACQ ->
		/* lua/acquire.lua */
		if
		:: ncnt[m*NO + 1 - p] > 0 ->
			v = R_HELD                   /* size > own: return {0, ttl, fence} */
		:: ncnt[e] > 0 && sq <= nseq[e] ->
			v = R_OK                     /* seq <= last: {1, held or 0}, no change */
		:: ncnt[e] == 0 && v == 1 ->
			v = R_MISSING                /* reentry, not held: {3, -2, fence} */
		:: ncnt[e] == 0 && v == 0 && ntombx[e] > now && sq <= ntomb[e] ->
			v = R_STALE                  /* seq <= buried(KEYS[3]): {2, -2, fence} */
		:: else ->
			/* HSET key owner count owner/seq seq; PEXPIRE key lease */
			ncnt[e] = c; nseq[e] = sq; nexp[m] = now + NODELEASE;
			v = R_OK
		fi;
		f = nfence[m]                    /* fenceCounter(KEYS[2]) */
	:: k == REL ->
		/* lua/release.lua */
		if
		:: ncnt[e] == 0 ->
			if :: c == 0 -> bury(e, sq) :: else -> skip fi;
			v = R_NOTHELD                /* not held: bury at count 0, return 0 */
#ifndef BUG_NOSEQ
		:: ncnt[e] > 0 && sq <= nseq[e] ->
			v = R_STILL                  /* seq <= last: a straggler, return 1 */
		:: ncnt[e] > 0 && sq > nseq[e] && c > 0 ->
#else
		:: ncnt[e] > 0 && c > 0 ->       /* the seeded bug: no seq check */
#endif
			ncnt[e] = c; nseq[e] = sq; nexp[m] = now + NODELEASE;
			v = R_STILL                  /* count > 0: HSET, PEXPIRE, return 1 */
		:: else ->
			bury(e, sq);                 /* count 0: bury, DEL, announce, return 2 */
			dropKey(m);
			v = R_GONE
		fi
	:: k == REN ->
		/* lua/renew.lua */
		if
		:: ncnt[e] == 0 -> v = R_NOTHELD /* not held: return 0 */
		:: else ->
			if
			:: sq > nseq[e] -> ncnt[e] = c; nseq[e] = sq
			:: else -> skip              /* an older renewal keeps the count */
			fi;
			nexp[m] = now + NODELEASE;       /* PEXPIRE key lease, return 1 */
			v = R_OK
		fi
	:: k == FEN ->
		/* lua/fence.lua: raise the counter to at least the token */
		if :: v > nfence[m] -> nfence[m] = v :: else -> skip fi;
		v = R_OK
	fi
}

/* answer: the reply reaches its owner: the running fan-out takes it
 * (fanout.go fanOutTo's collect). A reply it no longer waits for is late:
 * dropped (see undo). A background release needs no answer: it got
 * through. */
inline answer() {
	e = p*N + m;
	if
	:: fkind[p] == k && fseq[p] == sq && got[e] == 0 && !(k == REL && v0 == 1) -> got[e] = v; gfen[e] = f
	:: else -> skip
	fi
}

/* The world: network, nodes, clocks, crashes, clean-up drainers. */
#define SLOT(J, ACT) :: d_step { ACT(J) }

/* A request reaches its node (any one in flight: reordering). A node that
 * is down loses it. The reply comes back at once: a reply that is late or
 * lost is the owner's fan-out timing out on the node before the request
 * lands (fan), which the reordering of requests already covers. */
#define BG(x) (KIND(x) == REL && VAL(x) == 1)
#define DELIVER(J) net[J] != 0 && (UP(NODE(net[J])) || !BG(net[J])) -> \
	if \
	:: UP(NODE(net[J])) -> apply(J); answer(); \
		printf("MSC t%d node %d runs %e of %c seq %d count %d: code %d, fence %d\n", now, m, k, 'A' + p, sq, c, v, f) \
	:: else -> printf("MSC t%d node %d is down: a message is lost\n", now, NODE(net[J])) \
	fi; \
	drop(J); k = 0; p = 0; m = 0; sq = 0; c = 0; v = 0; v0 = 0; f = 0; e = 0
#define LOSE(J) net[J] != 0 && losses > 0 -> losses--; drop(J)
#define DUP(J) net[J] != 0 && dups > 0 && net[NET-1] == 0 -> \
	dups--; net[NET-1] = net[J]; sortnet()

/* A node crashes and restarts empty: every key is gone (no persistence). */
#define CRASH(D) crashes > 0 && UP(D) -> crashes--; crashed = true; \
	printf("MSC t%d node %d crashes, back empty at t%d\n", now, D, now + DOWNFOR); \
	dropKey(D); ntomb[D*NO] = 0; ntomb[D*NO+1] = 0; ntombx[D*NO] = 0; ntombx[D*NO+1] = 0; \
	nfence[D] = 0; ndown[D] = now + DOWNFOR

active proctype world() {
	byte i, x, m, p, e, k, sq, c, v, v0, f;
	int y;
end:
	do
	SLOT(0, DELIVER) SLOT(1, DELIVER) SLOT(2, DELIVER) SLOT(3, DELIVER) SLOT(4, DELIVER) SLOT(5, DELIVER)
	SLOT(0, LOSE) SLOT(1, LOSE) SLOT(2, LOSE) SLOT(3, LOSE) SLOT(4, LOSE) SLOT(5, LOSE)
	SLOT(0, DUP) SLOT(1, DUP) SLOT(2, DUP) SLOT(3, DUP) SLOT(4, DUP) SLOT(5, DUP)
	SLOT(1, CRASH) /* one node crashes; see README for why node 1 */
	:: d_step {
		/* A tick. */
		now < MAXT -> now++;
		printf("MSC tick: t%d\n", now);
		/* Messages older than MAXDELAY are gone (bounded delay). */
		x = 0;
		do
		:: x < NET ->
			if
			:: net[x] != 0 && !BG(net[x]) && SENT(net[x]) + MAXDELAY < now -> net[x] = 0
			:: net[x] != 0 && BG(net[x]) && SENT(net[x]) <= now ->
				/* a background release that never got through: its node
				 * keeps what it holds until the lease ends (P2 is off) */
				if :: UP(NODE(net[x])) -> gaveUp = true :: else -> skip fi;
				net[x] = 0
			:: else -> skip
			fi;
			x++
		:: else -> break
		od;
		sortnet();
		/* Keys whose PTTL ran out. */
		x = 0;
		do
		:: x < N ->
			if :: HASKEY(x) && nexp[x] <= now -> dropKey(x) :: else -> skip fi;
			/* P3: no key outlives its lease: every key left ends within a
			 * lease from now (every write set a TTL of one lease). */
			assert(!HASKEY(x) || nexp[x] <= now + NODELEASE);
			x++
		:: else -> break
		od;
		x = 0;
		do
		:: x < N*NO ->
			if :: ntombx[x] > 0 && ntombx[x] <= now -> ntomb[x] = 0; ntombx[x] = 0 :: else -> skip fi;
			x++
		:: else -> break
		od;
		x = 0
	}
	:: d_step {
		/* P2: quiescence after the last unlock. */
		!checked && done[0] && done[1] && count[0] == 0 && count[1] == 0 && net[0] == 0 ->
		checked = true;
#ifndef IMMEDIATE
		/* (With an immediate restart the restarted node has also lost its
		 * tombstones, and a delayed acquire can land there after the last
		 * unlock: the same limit as P1's, not checked there.) */
		assert(gaveUp || ((!UP(0) || !HASKEY(0)) && (!UP(1) || !HASKEY(1)) && (!UP(2) || !HASKEY(2))))
#else
		skip
#endif
	}
	od
}

/* The owners. */

/* clean: the clean-up queue takes a release of owner o for node D
 * (cleanup.go add, releaseOn, keepReleasing): it replaces an older one of
 * the owner for that node, keeping the later deadline. (keepReleasing's
 * sending again after the release got through is not modelled: the
 * tombstone it left refuses the acquires it would guard against.) */
inline clean(D, S, C, DL) {
	sq = S; c = C; dl = DL;
	x = 0;
	do
	:: x < NET ->
		if
		:: net[x] != 0 && BG(net[x]) && OWN(net[x]) == o && NODE(net[x]) == D ->
			if :: SEQ(net[x]) > sq -> sq = SEQ(net[x]); c = CNT(net[x]) :: else -> skip fi;
			if :: SENT(net[x]) > dl -> dl = SENT(net[x]) :: else -> skip fi;
			net[x] = 0
		:: else -> skip
		fi;
		x++
	:: else -> break
	od;
	sortnet();
	if
	:: net[NET-1] == 0 -> net[NET-1] = MK(REL, o, D, sq, c, 1, dl); sortnet();
		printf("MSC t%d %c queues a background release seq %d count %d for node %d, until t%d\n", now, 'A' + o, sq, c, D, dl)
	:: else -> gaveUp = true;   /* the model's bound, not the cleaner, lost it */
		printf("MSC t%d network full: %c's background release for node %d is lost\n", now, 'A' + o, D)
	fi;
	sq = 0; c = 0; dl = 0; x = 0
}

/* fan: fanout.go fanOutTo: the request goes to every node (send, atomic
 * with the step before it); each node's reply is waited for until it
 * comes or its timeout ends the wait: the owner may stop waiting at any
 * moment (a node may be slow), and the step after it is atomic again. */
inline send(K, C, V) {
	fkind[o] = K; fseq[o] = s; start = now;
	m = 0;
	do
	:: m < N ->
		if
		:: UP(m) && !(slow & (1 << m)) ->
			k = K; p = o; sq = s; c = C; v = V; v0 = v; f = 0;
			script();
			got[o*N+m] = v; gfen[o*N+m] = f;
			printf("MSC t%d node %d runs %e of %c seq %d count %d: code %d, fence %d\n", now, m, k, 'A' + p, sq, c, v, f)
		:: else -> put(K, o, m, s, C, V)   /* slow: the owner times out */
		fi;
		m++
	:: else -> break
	od;
	k = 0; p = 0; sq = 0; c = 0; v = 0; v0 = 0; f = 0; e = 0; m = 0; slow = 0
}
/* pickSlow: which nodes of the next fan-out are slow (their request stays
 * in flight and the owner times out on them); the others answer at once. */
inline pickSlow() {
	if
	:: slow = 0 :: slow = 1 :: slow = 2 :: slow = 3
	:: slow = 4 :: slow = 5 :: slow = 6 :: slow = 7
	fi
}
inline await() {
	fkind[o] = 0
}

/* tally: count the replies of the fan-out with code X into k. */
inline tally(X) {
	k = (got[o*N] == X) + (got[o*N+1] == X) + (got[o*N+2] == X)
}

inline forget() {
	got[o*N] = 0; got[o*N+1] = 0; got[o*N+2] = 0;
	gfen[o*N] = 0; gfen[o*N+1] = 0; gfen[o*N+2] = 0
}

/* undo: Client.undo of the acquire (seq S, count C): unknown nodes are
 * released again and again until the attempt's lease ends (keepReleasing;
 * undoLate, which may send less, is modelled as this), nodes that took it
 * are set back once (setBack), unless keep (a contender keeping them). */
inline undo(S, C, DL, KEEP) {
	d = 0;
	do
	:: d < N ->
		if
		:: got[o*N+d] == 0 -> clean(d, S + 1, C - 1, DL)
		:: got[o*N+d] == R_OK && !KEEP -> clean(d, S + 1, C - 1, DL)
		:: else -> skip
		fi;
		d++
	:: else -> break
	od;
	d = 0
}

/* releaseAll: releaseOn(op, allNodes, DL). */
inline releaseAll(S, C, DL) {
	d = 0;
	do
	:: d < N -> clean(d, S, C, DL); d++
	:: else -> break
	od;
	d = 0
}

/* loseHold (hold.go): signal the loss, clear ours on every node. */
inline loseHold() {
	lost[o] = true;
	oseq[o]++;
	releaseAll(oseq[o], 0, now + LEASE)
}

/* settleCount (unlock.go settle): the count after a release; at 0 the hold
 * ends (endHold). */
inline settleCount(T) {
	count[o] = T;
	if :: T == 0 -> vu[o] = 0; lost[o] = false :: else -> skip fi
}

proctype owner(byte o) {
	byte i, x, d, e, k, s, sq, c, dl, start, seen, tok, att, step, keepUntil, keptSeq, keptDl, renews, m, p, v, v0, f, slow;
	bool stop;
	int y;
	bool keeping, won;
	do
	:: step < NSTEPS(o) ->
		/* The watchdog (lock/renew.go Client.renewBatch) renews the hold
		 * once, between steps. */
		if
		:: MAYRENEW(o) && renews == 0 && count[o] > 0 && !lost[o] && now < vu[o] ->
			pickSlow();
			d_step {
			renews++;
			oseq[o]++; s = oseq[o];
			send(REN, count[o], 0) };
			await();
			d_step {
			tally(R_OK);
			if
			:: k >= Q && now < start + LEASE - DRIFT ->
				if :: start + LEASE - DRIFT > vu[o] -> vu[o] = start + LEASE - DRIFT :: else -> skip fi;
				printf("MSC t%d %c renewed: valid until t%d\n", now, 'A' + o, vu[o]);
				CLAIM(o)
			:: else ->
				tally(R_NOTHELD);
				if :: k > N - Q -> lost[o] = true :: else -> skip fi  /* Outcome.Lost */
			fi;
			forget(); s = 0; start = 0; k = 0 }
		:: true -> skip
		fi;
		if
		:: ISLOCK(o, step) ->
			/* Lock (hold.go lock / attempt) */
			if
			:: count[o] > 0 && lost[o] -> skip   /* isLost: ErrLost */
			:: d_step { count[o] > 0 && !lost[o] && now >= vu[o] ->
				loseHold() }                     /* re-entry past the deadline */
			:: count[o] > 0 && !lost[o] && now < vu[o] ->
				pickSlow();
				d_step {
				/* A re-entry: one attempt (lock/acquire.go Client.acquire). */
				oseq[o] = oseq[o] + 2; s = oseq[o] - 1;
				send(ACQ, count[o] + 1, 1) };
				await();
				d_step {
				tally(R_OK);
				if
				:: k >= Q && now < start + LEASE - DRIFT ->
					count[o]++;
					if :: start + LEASE - DRIFT > vu[o] -> vu[o] = start + LEASE - DRIFT :: else -> skip fi;
					printf("MSC t%d %c re-enters: count %d, valid until t%d\n", now, 'A' + o, count[o], vu[o]);
					CLAIM(o)
				:: else ->
					undo(s, count[o] + 1, start + LEASE, false);
					k = (got[o*N] == R_HELD || got[o*N] == R_STALE || got[o*N] == R_MISSING) +
					    (got[o*N+1] == R_HELD || got[o*N+1] == R_STALE || got[o*N+1] == R_MISSING) +
					    (got[o*N+2] == R_HELD || got[o*N+2] == R_STALE || got[o*N+2] == R_MISSING);
					if :: k > N - Q -> loseHold() :: else -> skip fi
				fi;
				forget(); s = 0; start = 0; k = 0 }
			:: count[o] == 0 ->
				/* A first hold: up to ATTEMPTS attempts (hold.go lock's loop). */
				d_step { att = 0; keepUntil = 255; keeping = false };
				skip;
				do
				:: stop -> break
				:: !stop && att == ATTEMPTS ->
					/* The Lock call ends without the lock: contender.abandon. */
					d_step { if :: keeping -> releaseAll(keptSeq + 1, 0, keptDl) :: else -> skip fi };
					break
				:: !stop && att < ATTEMPTS ->
					pickSlow();
					d_step {
					att++;
					oseq[o] = oseq[o] + 2; s = oseq[o] - 1;   /* one seq for the undo */
					send(ACQ, 1, 0) };
					await();
					d_step { tally(R_OK); won = k >= Q && now < start + LEASE - DRIFT };
					if
					:: won ->
						pickSlow();
						d_step {
						keeping = false;   /* what it kept is part of the hold now */
						/* drawToken (lock/fence.go), counter tokens: the highest
						 * counter the attempt saw + 1, written back to a quorum. */
						seen = gfen[o*N];
						if :: gfen[o*N+1] > seen -> seen = gfen[o*N+1] :: else -> skip fi;
						if :: gfen[o*N+2] > seen -> seen = gfen[o*N+2] :: else -> skip fi;
						tok = seen + 1; keptDl = start + LEASE - DRIFT; keptSeq = s;
						forget(); won = false;
						send(FEN, 0, tok) };
						await();
						d_step {
						tally(R_OK);
						if
						:: k >= Q && now < keptDl ->
							count[o] = 1; vu[o] = keptDl; lost[o] = false;   /* startHold */
							printf("MSC t%d %c HOLDS the lock, token %d, valid until t%d\n", now, 'A' + o, tok, vu[o]);
							CLAIM(o);
							assert(crashed || tok > lastToken);             /* P4 */
							if :: tok > lastToken -> lastToken = tok :: else -> skip fi;
							forget(); keptDl = 0; keptSeq = 0; start = 0; k = 0; seen = 0; tok = 0;
							stop = true
						:: else ->
							/* No token on a quorum: setBack on every node. */
							releaseAll(keptSeq + 1, 0, keptDl);
							keptDl = 0; keptSeq = 0
						fi }
					:: !won -> d_step {
						printf("MSC t%d %c's attempt fails (%d nodes agreed)\n", now, 'A' + o, k);
						/* contender.settle: keep what the attempt took when it won
						 * the tie-breaker, for at most one lease per Lock call. */
						won = got[o*N + TIE] == R_OK;
						if :: won && keepUntil == 255 -> keepUntil = now + LEASE :: else -> skip fi;
						if
						:: won && now < keepUntil ->
							undo(s, 1, start + LEASE, true);
							keeping = true; keptSeq = s; keptDl = start + LEASE
						:: else ->
							if :: keeping -> releaseAll(keptSeq + 1, 0, keptDl) :: else -> skip fi;
							keeping = false; keptSeq = 0; keptDl = 0;
							undo(s, 1, start + LEASE, false)
						fi;
						won = false }
					fi;
					d_step { forget(); start = 0; k = 0; seen = 0; tok = 0 };
					skip
				od;
				skip;
				d_step { att = 0; keepUntil = 0; keeping = false; keptSeq = 0; keptDl = 0; s = 0; stop = false }
			fi
		:: else ->
			/* Unlock (lock/unlock.go hold.release) */
			if
			:: count[o] == 0 -> skip   /* ErrNotHeld */
			:: d_step { count[o] > 0 && (lost[o] || now >= vu[o]) ->
				/* wasLost: clean ours once, keep the count balanced. */
				oseq[o]++;
				if :: count[o] == 1 -> releaseAll(oseq[o], 0, now + LEASE) :: else -> skip fi;
				k = count[o] - 1;
				settleCount(k);
				k = 0 }
			:: count[o] > 0 && !lost[o] && now < vu[o] ->
				pickSlow();
				d_step {
				oseq[o]++; s = oseq[o]; keptDl = now + LEASE;
				/* The last Unlock: its caller has left the critical section,
				 * so P1 no longer counts this hold from here on. */
				if :: count[o] == 1 -> vu[o] = 0 :: else -> skip fi;
				send(REL, count[o] - 1, 0) };
				await();
				d_step {
				/* nodes that did not answer: releaseOn(op, retry, deadline) */
				d = 0;
				do
				:: d < N -> if :: got[o*N+d] == 0 -> clean(d, s, count[o] - 1, keptDl) :: else -> skip fi; d++
				:: else -> break
				od;
				k = (got[o*N] == R_STILL || got[o*N] == R_GONE) +
				    (got[o*N+1] == R_STILL || got[o*N+1] == R_GONE) +
				    (got[o*N+2] == R_STILL || got[o*N+2] == R_GONE);
				if
				:: k >= Q ->
					if
					:: count[o] > 1 && now < start + LEASE - DRIFT ->
						if :: start + LEASE - DRIFT > vu[o] -> vu[o] = start + LEASE - DRIFT :: else -> skip fi;
						CLAIM(o)
					:: else -> skip
					fi
				:: else ->
					tally(R_NOTHELD);
					if
					:: k > N - Q && count[o] > 1 -> loseHold()
					:: k > N - Q && count[o] == 1 -> lost[o] = true  /* signalLoss */
					:: else -> skip
					fi
				fi;
				k = count[o] - 1;
				settleCount(k);
				printf("MSC t%d %c unlocked: count %d\n", now, 'A' + o, count[o]);
				forget(); s = 0; start = 0; k = 0; d = 0; keptDl = 0 }
			fi
		fi;
		step++
	:: else -> break
	od;
	done[o] = true;
	step = 0; renews = 0
}

init {
	atomic { run owner(0); run owner(1) }
}
