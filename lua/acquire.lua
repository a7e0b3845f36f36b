-- acquire: take the lock for one owner, or re-enter it, setting the owner's hold
-- count to an absolute value so that a retried call can never count a hold twice.
--
-- KEYS[1] lock hash        KEYS[2] fencing counter   KEYS[3] the owner's tombstone
-- KEYS[4] the lock's wait queue   KEYS[5] its entries' deadlines (a fair lock's),
--         or a Mutex's hand-off reservation (see announce)
-- KEYS[6..8], an RWMutex's write hold only: readers hash, readers' leases,
--         the mark of a waiting writer (see prelude.lua)
-- ARGV[1] owner field      ARGV[2] lease (ms)   ARGV[3] hold count to store
-- ARGV[4] operation sequence number of this owner (newer operations only)
-- ARGV[5] the call's flags, one character each, in this order (one
--         argument, not nine: Redis and Lua make an object of each
--         argument, about 900 instructions apiece under callgrind):
--   1 reentry     '1' for a re-entry: only count up a hold the owner still
--                 has here
--   2 fenced      '1' to read the fencing counter (a fenced first
--                 acquisition)
--   3 rule        '1' for a fair lock's first acquisition on the node that
--                 keeps its queue: the lock is taken only by the owner at
--                 the head of the queue, or by anyone when the queue is
--                 empty; another owner finds {4, -2, fence} and joins the
--                 queue (with a ticket), or is refused (a TryLock, without
--                 one);
--                 '2' for a waiting owner's acquisition (with a ticket) on
--                 the node that keeps a Mutex's queue: a free lock that a
--                 release just handed off to another owner (reserved in
--                 KEYS[5], see announce in prelude.lua) is refused with
--                 {4, -2, fence}, and the owner joins the queue; the owner it
--                 was handed to takes it and ends the reservation;
--                 '0' for neither
--   4 twice       '1' when the owner's client may send this call twice
--                 (go-redis retries): a refusal buries its sequence number
--                 (see refused in prelude.lua)
--   5 askHolder   '1' to name the other owner in a refusal by its hold (the
--                 reply's fourth element; see below)
--   6 writerWaits '1' (with KEYS[6..8]) when the owner waits for the write
--                 hold: a refusal leaves its mark, so that new readers wait
--                 behind it
--   7 noStrays    '1' when the owner expects no tombstone of its own here:
--                 no call of its that could take the lock here may still
--                 land, so its releases here leave none (see release.lua,
--                 ARGV[7]). A first acquisition then asks for the lock, the
--                 tombstone and, with rule '2', the hand-off's reservation
--                 in one EXISTS and, finding none, takes the lock; finding
--                 any, it goes the usual way. A hint only: both ways decide
--                 alike.
--   8 unqueued    '1' when the owner is in no wait queue here: it carries
--                 its ticket (ARGV[6]) to join the queue if refused, but no
--                 attempt of its Lock call was refused here yet, or a
--                 hand-off took it out. A hold taken here then skips taking
--                 it out of the queue, so that an uncontended Lock never
--                 touches the queue. A hint only: were the owner queued
--                 after all (an earlier Lock call of its ended without the
--                 lock and could not leave the queue), a release would pass
--                 over it or name it while it holds the lock, and the owner
--                 after it would retry a retry delay later.
--   9 expect      what a first acquisition expects to find (the lock
--                 package's guess, reentrant.Expectation), which orders its
--                 reads so that the expected case costs the fewest
--                 commands: '0' the lock free (with noStrays, one EXISTS for
--                 the lock, the tombstone and, with rule '2', the hand-off's
--                 reservation); '1' another owner's hold (the owner's last
--                 attempt was refused): the owner's own fields, then the
--                 lock's PTTL, so that a refusal costs those two commands;
--                 '2' the lock handed off to this owner: the EXISTS leaves
--                 the reservation out, which is most likely the owner's own
--                 and is read and ended in one GETDEL (see reservedFor). A
--                 hint only: every way decides alike.
-- ARGV[6] the owner's ticket in the wait queue, or 0: a waiting owner that
--         finds another holder joins the queue (see enqueue in prelude.lua),
--         and leaves it when it takes the lock
--
-- fence in each reply is the fencing counter, or 0 when ARGV[6] did not ask
-- for it: a lock without fencing never reads that key.
--
-- Returns {1, count, fence} when the owner holds the lock afterwards,
-- {4, -2, fence} when a fair lock is free here but another owner is ahead
-- in its queue (rule '1'),
-- {0, pttl, fence} when another owner holds it (pttl as PTTL reports it;
-- with askHolder, {0, pttl, fence, that owner}: a waiter that took the
-- tie-breaker learns whether one owner holds a quorum), or
-- {2, -2, fence} when the lock is free but this call is stale: the owner's
-- hold here was ended (released, undone or force-unlocked) by an operation
-- numbered at or above this one. Nothing changes then, and -2 ("no key") is
-- the honest PTTL: nobody holds the lock, so a waiter must not sleep on it.
-- A re-entry that finds no hold of the owner here (the lock is free, or held
-- by the owner's sequence field alone) returns {3, -2, fence} and changes
-- nothing: the hold it meant to nest in has ended on this node, and creating
-- it afresh would hide from the owner that another owner may have held the
-- lock in between. The client decides from a quorum of such answers that
-- the hold is lost.
--
-- An RWMutex's write hold is this same hold, with the readers' keys given:
-- readers of other owners whose lease has not ended refuse it too, with
-- {0, ms until the first of their leases ends, fence}, and a writer that
-- waits (writerWaits) leaves its mark whenever it is refused; the hold once
-- taken removes the owner's mark. A marking writer is told to look again
-- within half a lease at the latest, so that it renews its mark before the
-- mark can lapse. The owner's own read holds never refuse
-- it (it never asks while it reads, see the lock package's RWMutex, but a
-- repair or a retry may find them).
--
-- Why the tombstone. A full release deletes the hash, and with it the field
-- OWNER/seq that lets the branch below ignore stragglers. Without more, an
-- acquire of the owner delayed in the network (a retransmitted packet, a
-- call that went over another connection, a watchdog repair carrying the
-- current count) that lands after the release finds a free key and creates
-- the lock again, for a whole lease, held by an owner that has unlocked: no
-- one else can take it on this node. So the release leaves the owner's last
-- sequence number behind in a key of its own, KEYS[3], and a free key is only
-- taken when this call is newer than it.
--
-- Why a separate key, and only for this owner: the lock hash keeps meaning
-- "held" for inspect, IsLocked, TTL, a waiter's PTTL and any other tool; a
-- tombstone inside it would make a free lock look held and would need its
-- own expiry per field (Redis 7.0 has none). One string key per owner is
-- read only by that owner's acquire, so another owner acquires at once, and
-- each key expires on its own, so no structure grows while a busy lock is
-- taken by ever new owners. The cost on the hot path is one GET, paid only
-- when the key is free; a held key already carries OWNER/seq. An owner with
-- no tombstone here (noStrays) looks for both keys in one EXISTS instead.
local key, owner = KEYS[1], ARGV[1]
-- The values stored go as the strings the client sent (decimal integers),
-- not as the numbers read from them: Redis formats a number argument of
-- redis.call anew on every call (in acquire.lua, 1 to 2 µs of the 14 that
-- a first acquisition took; make bench's ceiling, server time per call).
local leaseArg, countArg, seqArg = ARGV[2], ARGV[3], ARGV[4]
local reentryFlag, fenced, rule, twiceFlag, askHolder, writerWaits, noStrays, unqueued, expect =
  string.match(ARGV[5], '^(.)(.)(.)(.)(.)(.)(.)(.)(.)$')
if not expect then
  error(redis.error_reply('ERR relock acquire: ARGV[5] is not nine flags: ' .. tostring(ARGV[5])))
end
local reentry = reentryFlag == '1'
local deadlines = rule == '1' and KEYS[5] or nil
local reservation = rule == '2' and KEYS[5] or nil

-- Neither the lock nor the owner's tombstone here (noStrays), nor a
-- hand-off's reservation where the owner takes turns (unless it expects
-- the lock handed off to itself, expect '2'): free, and this call is not
-- stale. One command instead of HLEN and GET (and GET).
local fresh, unreserved = false, false
if noStrays == '1' and not reentry and expect ~= '1' then
  if reservation and expect ~= '2' then
    fresh = redis.call('EXISTS', key, KEYS[3], reservation) == 0
    unreserved = fresh
  else
    fresh = redis.call('EXISTS', key, KEYS[3]) == 0
  end
end

-- store writes the owner's hold: its count and sequence number, under its
-- lease (all three as the client sent them).
local function store(key, owner, count, seq, lease)
  redis.call('HSET', key, owner, count, owner .. '/seq', seq)
  redis.call('PEXPIRE', key, lease)
end

-- The most frequent call, a free lock taken with nothing else to read or
-- change (no fencing counter, no reservation left to end, no fair queue,
-- no readers, no queue entry of the owner's), ends here, above the
-- helpers: it makes none of their closures, nor reads the numbers only the
-- other paths need (see helpersMark in lua.go).
if fresh and (unreserved or not reservation) and not deadlines and not KEYS[6]
    and fenced ~= '1' and unqueued == '1' then
  store(key, owner, countArg, seqArg, leaseArg)
  return {1, tonumber(countArg), 0}
end

-- A hand-off's target taking the lock on the node that keeps the queue
-- (expect '2'), the third call of a contended cycle there, also ends here:
-- free and no tombstone (the EXISTS above), and reserved for this owner or
-- for nobody (the reservation, read and ended in one GETDEL as reservedFor
-- reads it), it takes the lock. Reserved for another owner, the
-- reservation goes back for handOffHold ms and the owner is refused and
-- joins the queue, as below. Another type at a key goes the usual way.
if fresh and reservation and expect == '2' and unqueued == '1' and twiceFlag ~= '1'
    and fenced ~= '1' and not deadlines and not KEYS[6] then
  local handedTo = redis.pcall('GETDEL', reservation)
  if not handedTo or handedTo == owner then
    store(key, owner, countArg, seqArg, leaseArg)
    return {1, tonumber(countArg), 0}
  elseif type(handedTo) == 'string' then
    redis.call('SET', reservation, handedTo, 'PX', '20')
    if tonumber(ARGV[6]) <= 0 then
      return {4, -2, 0}
    elseif type(redis.pcall('ZADD', KEYS[4], 'NX', ARGV[6], owner)) == 'number' then
      redis.call('PEXPIRE', KEYS[4], leaseArg)
      return {4, -2, 0}
    end
  end
end

-- The most frequent refusal, a waiting owner's attempt that expects another
-- owner's hold (expect '1') and finds it, also ends here: nothing of its own
-- in the hash (HMGET), the lock held (PTTL), so it joins the queue with its
-- ticket, as enqueue does for a Mutex, and reports that PTTL. It needs
-- nothing the helpers read: no fencing counter, no fair queue, no readers,
-- no tombstone to bury (a client that never sends a call twice), no
-- holder's name. Anything else it finds (the lock free, a field of its own,
-- another type at a key) goes the usual way below, which takes what was
-- read here (ownFields, holderTTL) instead of reading it again: nothing was
-- changed yet.
local ownFields, holderTTL
if expect == '1' and not reentry and twiceFlag ~= '1' and askHolder ~= '1'
    and fenced ~= '1' and not deadlines and not KEYS[6] then
  local fields = redis.pcall('HMGET', key, owner, owner .. '/seq')
  if not fields.err then
    ownFields = fields
    if not fields[1] and not fields[2] then
      holderTTL = redis.call('PTTL', key)
      if holderTTL ~= -2 and tonumber(ARGV[6]) <= 0 then
        return {0, holderTTL, 0}
      elseif holderTTL ~= -2 and type(redis.pcall('ZADD', KEYS[4], 'NX', ARGV[6], owner)) == 'number' then
        redis.call('PEXPIRE', KEYS[4], math.max(holderTTL, 0) + tonumber(leaseArg))
        return {0, holderTTL, 0}
      end
    end
  end
end

-- @helpers

local lease, count, seq = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local ticket = tonumber(ARGV[6])
local twice = twiceFlag == '1'
local fence = 0
if fenced == '1' then
  fence = fenceCounter(KEYS[2])
end
-- size is the number of fields of the lock hash, or, when the owner has
-- none there, 1 for any number above 0: all that the checks below need.
-- held and last are the owner's count and sequence number (see ownHold),
-- ttl the lock's PTTL once read.
local size, held, last, ttl = 0, nil, 0, nil
if fresh then
  -- Free here: take it below.
elseif not reentry and (noStrays == '1' or expect == '1') then
  -- The lock is most likely another owner's (EXISTS found something, or
  -- the owner expects it held): the owner's own fields first; with none,
  -- the PTTL a refusal reports anyway says whether the lock exists.
  if ownFields then
    held, last = ownFields[1] and tonumber(ownFields[1]), tonumber(ownFields[2] or '0')
  else
    held, last = ownHold(key, owner)
  end
  if held or last > 0 then
    size = hashSize(key)
  else
    ttl = holderTTL or redis.call('PTTL', key)
    size = ttl == -2 and 0 or 1
  end
else
  size = hashSize(key)
  if size > 0 then
    held, last = ownHold(key, owner)
  end
end
if fresh then
  -- Free here: take it below.
elseif size > 0 then
  -- The owner's fields are its count and OWNER/seq: any other field is
  -- another owner's hold, found without reading the whole hash.
  local own = (held and 1 or 0) + (last > 0 and 1 or 0)
  if size > own then
    ttl = ttl or redis.call('PTTL', key)
    refused(KEYS[3], seq, lease, twice)
    enqueue(KEYS[4], owner, ticket, ttl, lease, deadlines)
    if KEYS[8] and writerWaits == '1' then
      ttl = markWaiting(KEYS[8], owner, lease, ttl)
    end
    if askHolder == '1' then
      -- Any field but the owner's own two names the other owner's hold:
      -- its count, or its sequence number (OWNER/seq).
      for _, field in ipairs(redis.call('HKEYS', key)) do
        local other = string.match(field, '^(.*)/seq$') or field
        if other ~= owner then
          return {0, ttl, fence, other}
        end
      end
    end
    return {0, ttl, fence}
  end
  -- An operation that is not newer than the last one applied is a retry or a
  -- straggler: report the state without changing it.
  if seq <= last then
    return {1, held or 0, fence}
  end
  if reentry and not held then
    return {3, -2, fence}
  end
elseif reentry then
  return {3, -2, fence}
end
-- A Mutex just handed off to another owner waits for it a moment: anyone
-- else is refused and joins the queue, as when the lock is held, so this
-- comes before the tombstone, which only a lock free for the owner needs
-- read (a retried copy of a call that met the reservation is refused
-- again, as it is by a holder). The owner it was handed to ends the
-- reservation: as it reads it when it expects the hand-off (expect '2'),
-- else once it holds the lock.
local handedTo = reservation and not held and not unreserved
  and reservedFor(reservation, expect == '2' and owner)
if handedTo and handedTo ~= owner then
  refused(KEYS[3], seq, lease, twice)
  enqueue(KEYS[4], owner, ticket, -2, lease, nil)
  return {4, -2, fence}
end
if not fresh and size == 0 and seq <= buried(KEYS[3]) then
  if handedTo and expect == '2' then
    -- Read and ended above for a call that takes nothing: put it back.
    redis.call('SET', reservation, owner, 'PX', handOffHold)
  end
  return {2, -2, fence}
end
-- Free here. A fair lock goes to the head of its queue: anyone else joins
-- the queue (or is refused) and takes nothing.
if deadlines and not held and aheadOf(KEYS[4], deadlines, owner) then
  refused(KEYS[3], seq, lease, twice)
  enqueue(KEYS[4], owner, ticket, -2, lease, deadlines)
  return {4, -2, fence}
end
if KEYS[6] then
  local wait = otherReaders(KEYS[6], KEYS[7], owner)
  if wait >= 0 then
    refused(KEYS[3], seq, lease, twice)
    if writerWaits == '1' then
      wait = markWaiting(KEYS[8], owner, lease, wait)
    end
    return {0, wait, fence}
  end
  unmark(KEYS[8], owner)
end
store(key, owner, countArg, seqArg, leaseArg)
if unqueued ~= '1' then
  dequeue(KEYS[4], owner, ticket, deadlines)
end
if handedTo and expect ~= '2' then
  redis.call('DEL', reservation)
end
return {1, count, fence}
