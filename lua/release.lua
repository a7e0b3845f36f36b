-- release: bring the owner's hold count down to an absolute value; at zero the
-- lock is deleted and one message is published on its release channel.
--
-- KEYS[1] lock hash        KEYS[2] release channel   KEYS[3] the owner's tombstone
-- KEYS[4] the lock's wait queue   KEYS[5] its entries' deadlines (a fair lock's),
--         or a Mutex's hand-off reservation (see announce)
-- KEYS[6..7], an RWMutex's write hold only: the mark of a waiting writer,
--         the channel of waiting readers
-- ARGV[1] owner field      ARGV[2] lease (ms)   ARGV[3] hold count to store
-- ARGV[4] operation sequence number   ARGV[5] release id (the message payload)
-- ARGV[6] how the release is announced: '' the release id alone (a copy for
--         any waiter), 'q' handed to the head of the wait queue (this node
--         breaks the lock's ties), 'f' handed to the head of a fair lock's
--         queue, which stays there until it takes the lock, 'k' a copy for
--         keepers only, 'u' the same from a clean-up, 'h' as 'q' without
--         the hand-off's reservation (one node: see announce in prelude.lua),
--         's' nothing (an undo that frees nothing a waiter can use)
-- ARGV[7] '1' when no call of the owner that could create its hold here
--         (an acquire, a repair) may still land: each one it sent here has
--         answered, through a client that never sends a call twice
--         (reentrant.Op.NoStrays). A release to 0 then leaves no
--         tombstone, whether it ends the hold or finds none (the Unlock of
--         a hold taken through the other nodes): there is nothing for one
--         to refuse.
-- ARGV[8] '1' when the owner may be registered in the wait queue here
--         (reentrant.Op.LeaveQueue): it was refused here while it waited
--         and took the lock through other nodes. A release to 0 takes it
--         out of the queue, whether it finds the owner's hold (a repair
--         wrote it) or none, so that this node's releases stop naming it.
--
-- Returns 0 when the owner does not hold the lock here (nothing changes but
-- the tombstone, see below), 1 when it still holds it, 2 when the lock was
-- released: by this call, or, for a release to 0 that finds nothing, by a
-- copy of it that landed before (its number is buried already: see
-- goneBefore in prelude.lua).
--
-- Every release to count 0 buries the owner's sequence number in its
-- tombstone (see acquire.lua for why), unless ARGV[7] says no call it would
-- refuse can come: the full release that deletes the lock, and also one
-- that finds nothing of the owner here. The second case
-- is the undo of a failed attempt reaching a node before the acquire it
-- undoes (or instead of it, when that acquire is still on the wire): with
-- the tombstone, that acquire is refused whenever it lands, so one undo is
-- enough where before only resending it until the lease ran out helped.
-- A release to a count above 0 that finds nothing buries nothing: the owner
-- still holds the lock, so an older acquire of its that lands here later
-- merely repairs this node, and the owner's next release settles it.
--
-- How long a tombstone lives: the lease this release carries, or longer if
-- the tombstone already had more left. Every operation of one hold carries
-- that hold's lease L, and each was sent before this release, at some time
-- s. The client treats an operation as live until s + L at most: the undo of
-- a failed attempt is retried until then and no later, and validity never
-- counts past it. The release lands after s, so a tombstone kept for L from
-- now covers each such operation for at least as long as its sender would.
-- A call delayed past that is outside the bounded-delay assumption Redlock
-- already makes, and anything it creates dies with its own lease. Keeping
-- the longer of the two TTLs matters when an earlier hold of the owner had
-- a longer lease than this one. The TTL is always set, so no tombstone
-- stays forever.
--
-- An RWMutex's write hold (KEYS[5..6] given): a release to 0 also removes
-- the owner's mark, held or not (a writer that gave up waiting leaves
-- nothing), and the readers' channel hears of it when the lock was freed or
-- a mark removed: the waiting readers may go in.
local key, owner = KEYS[1], ARGV[1]
-- The values stored go as the strings the client sent (decimal integers),
-- not as the numbers read from them: Redis formats a number argument of
-- redis.call anew on every call (in acquire.lua, 1 to 2 µs of the 14 that
-- a first acquisition took; make bench's ceiling, server time per call).
local leaseArg, countArg, seqArg = ARGV[2], ARGV[3], ARGV[4]
local mode = ARGV[6]

-- The owner's count and sequence number, read as ownHold reads them but
-- with redis.pcall: another type at key is left to ownHold, below the
-- helpers, to report.
local fields = redis.pcall('HMGET', key, owner, owner .. '/seq')
local read = not fields.err

-- queued is the head of the queue, for a release to 0 of the owner's hold
-- that hands the lock off ('q', 'h': the three entries queueHead reads)
-- or tells the keepers ('k': personalMax + 1, as announce reads them), so
-- that neither reads it again. With nobody queued, the most frequent
-- release (no tombstone to leave, no readers' keys) ends here, above the
-- helpers, making none of their closures (see helpersMark in lua.go): it
-- deletes the lock, and announces it to no one, as announce would.
local queued
if read and fields[1] and countArg == '0' and tonumber(seqArg) > tonumber(fields[2] or '0')
    and (mode == 'q' or mode == 'h' or mode == 'k') then
  queued = redis.pcall('ZRANGE', KEYS[4], '0', mode == 'k' and '4' or '2')
  if queued.err then
    queued = nil -- another type: queueHead and announce deal with it
  elseif #queued == 0 and ARGV[7] == '1' and not KEYS[6] then
    redis.call('DEL', key)
    return 2
  end
end

-- A contended release, the most frequent call after those two: the lock
-- freed for waiters in the queue, with no tombstone to leave and no entry
-- of the owner's to take out (ARGV[7], ARGV[8], and for a hand-off the
-- owner not among the entries read), ends here too, doing what queueHead
-- and announce do below for it: 'q' and 'h' hand the lock to the head (out
-- of the queue, reserved for it for handOffHold ms with 'q') and tell its
-- process and the next owner's; 'k' tells the processes of the owners
-- registered here, or every process when more than personalMax are. A
-- process's channel is the lock's, '>' and the owner id up to its last ':'
-- (personal).
if queued and #queued > 0 and ARGV[7] == '1' and ARGV[8] ~= '1' and not KEYS[6]
    and (mode == 'k' or (queued[1] ~= owner and queued[2] ~= owner and queued[3] ~= owner)) then
  local tell, msg = queued, ARGV[5] .. ' k'
  if mode ~= 'k' then
    tell, msg = {queued[1], queued[2]}, ARGV[5] .. ' ' .. queued[1] .. ' ' .. (queued[2] or '')
  end
  redis.call('DEL', key)
  if mode ~= 'k' then
    redis.call('ZREM', KEYS[4], queued[1])
  end
  if mode == 'q' then
    redis.call('SET', KEYS[5], queued[1], 'PX', '20')
  end
  if #tell > 4 then
    redis.call('PUBLISH', KEYS[2], msg)
    return 2
  end
  local channel, told = KEYS[2], {}
  for i = 1, #tell do
    local process = string.match(tell[i], '^(.*):')
    local to = process and (channel .. '>' .. process) or channel
    if not told[to] then
      told[to] = true
      redis.call('PUBLISH', to, msg)
    end
  end
  return 2
end

-- @helpers

local lease, count, seq = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(seqArg)
local held, last
if read then
  held, last = fields[1] and tonumber(fields[1]), tonumber(fields[2] or '0')
else
  held, last = ownHold(key, owner)
end
if not held then
  if count == 0 then
    local gone = 0
    if ARGV[7] ~= '1' then
      gone = goneBefore(KEYS[3], seq, lease)
    end
    if ARGV[8] == '1' then
      dequeue(KEYS[4], owner, 1, nil)
    end
    if KEYS[6] and unmark(KEYS[6], owner) then
      redis.call('PUBLISH', KEYS[7], ARGV[5])
    end
    return gone
  end
  return 0
end
if seq <= last then
  return 1 -- a retry or a straggler: a newer operation already applied
end
if count > 0 then
  redis.call('HSET', key, owner, countArg, owner .. '/seq', seqArg)
  redis.call('PEXPIRE', key, leaseArg)
  return 1
end
-- Read the queue and bury first: foreign data in their place stops the
-- script before it has changed anything (Redis does not roll a script back).
local head, stale = queueHead(KEYS[4], mode, KEYS[5], owner, queued)
if ARGV[7] ~= '1' then
  bury(KEYS[3], seq, lease)
end
redis.call('DEL', key)
if ARGV[8] == '1' and stale ~= owner then
  -- Held here, and perhaps queued too: refused here while it waited, the
  -- owner took the lock through the other nodes, and a repair wrote its
  -- hold here since (a repair carries no ticket, so it leaves the queue).
  dequeue(KEYS[4], owner, 1, nil)
end
announce(KEYS[2], ARGV[5], mode, KEYS[4], head, KEYS[5], stale, queued)
if KEYS[6] then
  unmark(KEYS[6], owner)
  redis.call('PUBLISH', KEYS[7], ARGV[5])
end
return 2
