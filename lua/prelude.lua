-- prelude: helpers shared by every relock script; lua.go puts this text in
-- front of each script before it is sent.

-- lockKind returns the Redis type of a lock key: 'none' or 'hash'. Any other
-- type is data someone else stored: the script stops with a WRONGTYPE error
-- and changes nothing.
local function lockKind(key)
  local kind = redis.call('TYPE', key)['ok']
  if kind ~= 'none' and kind ~= 'hash' then
    error(redis.error_reply('WRONGTYPE ' .. kind))
  end
  return kind
end

-- foreign stops the script with a WRONGTYPE error naming the type found at
-- key: data someone else stored there, which relock never changes. what,
-- when given, names the key's role, as numberAt does.
local function foreign(key, what)
  local msg = 'WRONGTYPE ' .. redis.call('TYPE', key)['ok']
  if what then
    msg = msg .. ' ' .. what
  end
  error(redis.error_reply(msg))
end

-- attempt runs a command as pcall(redis.call, ...) does, but catches only a
-- WRONGTYPE error: another type at a key is foreign data, which the caller
-- reports as such. Any other error is the node's (READONLY on a replica that
-- was a master a moment ago, OOM under maxmemory, ...) and is raised as it
-- came, so that the client sees that error and not foreign data at a key.
local function attempt(...)
  local ok, result = pcall(redis.call, ...)
  if not ok then
    local text = type(result) == 'table' and result.err or tostring(result)
    if not string.find(text, 'WRONGTYPE', 1, true) then
      error(type(result) == 'table' and result or redis.error_reply(text))
    end
  end
  return ok, result
end

-- numberAt returns the number stored as a string at key (0 when the key
-- does not exist). Anything else there (another type, or a string that is
-- not a number) is foreign data: the script stops, before it has changed
-- anything, with a WRONGTYPE error that names the key's role (what), so the
-- client can tell which key holds it.
local function numberAt(key, what)
  local ok, value = attempt('GET', key)
  local number = ok and tonumber(value or '0')
  if not number then
    foreign(key, what)
  end
  return number
end

-- fenceCounter returns a lock's fencing counter (0 when never raised).
local function fenceCounter(key)
  return numberAt(key, 'fence')
end

-- hashSize returns the number of fields of the lock hash (0 when the key
-- does not exist), in one command; another type at key is foreign data.
local function hashSize(key)
  local ok, size = attempt('HLEN', key)
  if not ok then
    foreign(key)
  end
  return size
end

-- ownHold returns, in one command, the owner's hold count on the lock (nil
-- when it holds nothing here) and the sequence number of its last applied
-- operation (0 when none), kept in the field OWNER/seq beside the count.
-- Another type at key is foreign data.
local function ownHold(key, owner)
  local ok, fields = attempt('HMGET', key, owner, owner .. '/seq')
  if not ok then
    foreign(key)
  end
  return fields[1] and tonumber(fields[1]), tonumber(fields[2] or '0')
end

-- An owner's tombstone is a string key beside the lock (KEYS of the script
-- that touches it, same {NAME} hash tag, so the same Cluster slot) holding
-- the sequence number of the last operation that ended the owner's hold on
-- this node. Operations of that owner numbered at or below it are delayed
-- copies of calls the owner has already moved past: acquire refuses them.
-- Other owners never read it. acquire.lua and release.lua explain where it
-- lives and for how long.

-- buried returns the sequence number kept in a tombstone (0 when there is
-- none).
local function buried(tomb)
  return numberAt(tomb, 'tombstone')
end

-- bury records in tomb that the owner's operations up to seq are over here,
-- for at least ttl ms. It never lowers the number nor shortens the life of
-- an existing tombstone: a release arriving late must not reopen the door
-- that a newer one closed, nor cut short the cover an earlier hold with a
-- longer lease still needs. The key always gets a TTL.
--
-- Two commands, whether a tombstone is there or not (an owner that locks
-- again and again always finds its last one): PTTL, then one SET ... GET
-- that writes the number with the longer TTL and returns the old number.
-- SET ... GET refuses a key of another type before changing it. Only a
-- straggler, a release older than the one that wrote the tombstone, finds
-- a higher number there, and puts it back with a third SET.
--
-- It returns the number that was there before (0 when none): a release
-- that finds nothing of its owner and sees its own number already buried
-- is a copy of itself that landed before (go-redis sends a call again when
-- its reply did not come), not a sign that the hold was lost (see
-- goneBefore).
--
-- what names the key's role in a foreign-data error ('tombstone' when not
-- given: the one owner's of the call, which its client knows); a script
-- that buries several owners says whose (see forceunlock.lua).
local function bury(tomb, seq, ttl, what)
  what = what or 'tombstone'
  local left = redis.call('PTTL', tomb)
  local keep = math.max(left, ttl)
  local ok, old = attempt('SET', tomb, seq, 'PX', keep, 'GET')
  if not ok then
    foreign(tomb, what) -- another type: nothing was written
  end
  local last = tonumber(old or '0')
  if not last then
    -- A string that is not a number is someone else's data: put it back
    -- as it was, TTL included, and stop.
    if left >= 0 then
      redis.call('SET', tomb, old, 'PX', left)
    else
      redis.call('SET', tomb, old)
    end
    error(redis.error_reply('WRONGTYPE string ' .. what))
  end
  if last > seq then
    redis.call('SET', tomb, last, 'PX', keep)
  end
  return last
end

-- goneBefore is what a release to count 0 that finds nothing of its owner
-- answers, after burying seq in tomb: 2 (released) when the tombstone
-- already had seq or more, so that this call, or a newer operation of the
-- owner, had ended the hold here (a copy of a release sent again after a
-- lost reply would otherwise read as a lost lock); else 0 (not held). The
-- price: a release whose first copy found the hold already gone (expired)
-- and whose reply was lost reports that node as released.
local function goneBefore(tomb, seq, lease)
  if bury(tomb, seq, lease) >= seq then
    return 2
  end
  return 0
end

-- refused is called by an acquire that changes nothing because the lock is
-- not free for the owner (another holder, another owner's turn). twice says
-- that the owner's client may send this same call more than once (go-redis
-- retries a call whose reply did not come, over a new connection): the
-- copy the client did not read may still land later, find the lock free
-- and take it for an owner that counted this node as refused, so never
-- undoes it here, and the hold would stay until its lease ends. Burying the
-- call's sequence number (for its lease, as an undo would) makes every
-- later copy stale. The owner's next operations are numbered above it.
local function refused(tomb, seq, lease, twice)
  if twice then
    bury(tomb, seq, lease)
  end
end

-- The wait queue. A lock's queue is a sorted set beside it (same hash tag)
-- on the node that breaks the lock's ties: the owners waiting for the lock,
-- each scored by the ticket it drew when it began to wait. A release there
-- takes the lowest ticket out and names that owner in its message, so one
-- waiter across all processes retries, not one per process (see the lock
-- package's contend.go). The queue is only a hint of who goes next: the
-- quorum alone decides who holds the lock, and every waiter still retries
-- by itself when the holder's lease runs out.

-- serverTime is the node's clock in ms (TIME): the deadlines of a fair
-- lock's queue entries, and the readers' and a semaphore's leases, are kept
-- and compared on one node, by that node's clock.
local function serverTime()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- A fair lock (the lock package's FairMutex) keeps beside its queue a second
-- sorted set, deadlines: each waiting owner with the node's clock (ms) by which
-- it must ask again. A live waiter asks at least that often (each refused
-- attempt moves its deadline on, see enqueue); one that died or gave up
-- without leaving is dropped once its deadline passes, so it holds up the
-- owners behind it for a bounded time.

-- purgeQueue drops the entries whose deadline passed, at most 100 a call
-- (each call drops more), from the queue and from deadlines.
local function purgeQueue(queue, deadlines)
  local ok, gone = attempt('ZRANGEBYSCORE', deadlines, '-inf', serverTime(), 'LIMIT', 0, 100)
  if not ok then
    foreign(deadlines, 'deadlines')
  end
  if #gone > 0 then
    redis.call('ZREM', deadlines, unpack(gone))
    attempt('ZREM', queue, unpack(gone))
  end
end

-- aheadOf returns the owner at the head of a fair lock's queue when that is
-- not owner (someone asked first and is still waiting), or nil: the queue
-- is empty, or owner heads it. Expired entries are dropped first.
local function aheadOf(queue, deadlines, owner)
  purgeQueue(queue, deadlines)
  local ok, head = attempt('ZRANGE', queue, '0', '0')
  if not ok then
    foreign(queue, 'queue')
  end
  if head[1] and head[1] ~= owner then
    return head[1]
  end
  return nil
end

-- enqueue puts a waiting owner (ticket > 0) that found the lock held into
-- the queue, keeping the ticket it may already have there. The queue lives
-- as long as the holder's lease (ttl ms, as PTTL gave it) and one lease of
-- the waiter (lease ms) more: a waiter still waiting by then retries, and
-- joins again. For a fair lock, deadlines is the key of the entries' deadlines
-- (see aheadOf): the owner's is set to that same span from now, so each
-- attempt of a live waiter moves it on, and the two keys live as long as
-- their latest deadline: a waiter of a shorter lease does not shorten them
-- (before 2026-12-04 it did, and with them went the place in line of the
-- waiters before it). A Mutex's queue is a hint, which the last waiter's
-- span serves. Another type at either key is foreign data.
local function enqueue(queue, owner, ticket, ttl, lease, deadlines)
  if ticket <= 0 then
    return
  end
  local ok = attempt('ZADD', queue, 'NX', ticket, owner)
  if not ok then
    foreign(queue, 'queue')
  end
  local span = math.max(ttl, 0) + lease
  if not deadlines then
    redis.call('PEXPIRE', queue, span)
    return
  end
  if not attempt('ZADD', deadlines, serverTime() + span, owner) then
    foreign(deadlines, 'deadlines')
  end
  for _, k in ipairs({queue, deadlines}) do
    if redis.call('PTTL', k) < span then
      redis.call('PEXPIRE', k, span)
    end
  end
end

-- dequeue takes a waiting owner (ticket > 0) that has taken the lock out of
-- the queue, if a release has not already, and out of the deadlines of a
-- fair lock's queue (deadlines, when given). A fair lock's owner leaves its
-- queue whatever its ticket: a TryLock (ticket 0) of an owner a stale entry
-- still names there (a Lock that gave up and whose leave did not land)
-- would otherwise leave that entry without a deadline, which no purge then
-- drops, and every later release would name that owner, holding up the
-- others for as long as any of them kept asking.
local function dequeue(queue, owner, ticket, deadlines)
  if ticket > 0 or deadlines then
    attempt('ZREM', queue, owner)
  end
  if deadlines then
    attempt('ZREM', deadlines, owner)
  end
end

-- queueHead returns, for a release announced with mode 'q', 'h' or 'f', the
-- first two owners of the queue (the one the lock goes to and the one after
-- it), or an empty list; nothing for another mode. A fair lock's ('f')
-- expired entries are dropped first (deadlines). A Mutex's releasing owner
-- (owner) is passed over: it can only be there by mistake (a Lock that
-- took the lock at its first attempt skips the dequeue, see acquire.lua's
-- flag unqueued), and the second value is then owner, for announce to take out
-- with the target. Another type at the queue's key is foreign data.
-- queued, for 'q' and 'h', is the queue's first three entries when the
-- caller read them already (release.lua), which are then not read again.
local function queueHead(queue, mode, deadlines, owner, queued)
  if mode ~= 'q' and mode ~= 'h' and mode ~= 'f' then
    return {}
  end
  if mode == 'f' then
    purgeQueue(queue, deadlines)
  end
  local ok, first = true, queued
  if mode == 'f' or not first then
    -- The bounds as strings: a number argument is formatted on every call.
    ok, first = attempt('ZRANGE', queue, '0', mode == 'f' and '1' or '2')
  end
  if not ok then
    foreign(queue, 'queue')
  end
  if mode == 'f' then
    return first
  end
  local head, stale = {}, nil
  for _, who in ipairs(first) do
    if who == owner then
      stale = owner
    elseif #head < 2 then
      head[#head + 1] = who
    end
  end
  return head, stale
end

-- announce publishes a release that freed the lock on channel, as mode
-- says, and takes the releasing owner out of the queue when queueHead
-- found it there (stale). The message formats, which pubsub parses:
--   ''  'ID'               a copy for any waiter: every node publishes one
--   'q' 'ID TARGET NEXT'   the lock goes to TARGET, the queue's head, taken
--                          out of the queue here and reserved for it for
--                          handOffHold ms (reserve); NEXT is the owner after
--                          it ('' when none), who retries if TARGET does not
--                          take the lock soon. Published for TARGET's
--                          process, and NEXT's, alone (see personal). An
--                          empty queue publishes nothing: every waiting
--                          Lock joins the queue when its first attempt is
--                          refused (acquire.lua's ticket), so none waits
--                          outside it.
--   'h' 'ID TARGET NEXT'   as 'q', without the reservation: a lock kept on
--                          one node, where no acquire takes turns
--   'f' 'ID TARGET NEXT'   as 'q', for a fair lock: TARGET stays in the
--                          queue, at its head, until it takes the lock (or
--                          its deadline passes), so no one else may take it
--                          here before; an empty queue gives 'ID  ' on the
--                          channel itself: any waiter, at once
--   'k' 'ID k'             for keepers only: waiters holding part of the
--                          lock that wait for the others to give theirs
--                          back. Published only for the processes of the
--                          owners registered in the queue key here: a
--                          keeper, or a hand-off's target whose attempt came
--                          before this release, registered when its attempt
--                          was refused (enqueue). A hand-off's target does
--                          not wait for these copies, so nobody else needs
--                          one. More than personalMax registered: on the
--                          channel itself, for every process.
--   'u' 'ID u'             for keepers only as 'k', from a clean-up (an undo,
--                          a retried release) after which no hand-off is to
--                          come; on the channel itself, always: the
--                          clean-up does not read who registered
--   's'  nothing           the undo of an attempt that one other owner
--                          refused on a quorum of the nodes: the lock is
--                          held, and the undo frees nothing a waiter can use
local personalMax = 4

-- handOffHold is how long (ms) a Mutex handed off to TARGET is kept for
-- it on the node that keeps its queue: waiting owners that ask then
-- (a releaser that locks again at once, most often) are refused and join
-- the queue, instead of taking the lock while TARGET is on its way and
-- leaving it to fail (see acquire.lua, rule '2'). It matches the lock
-- package's default RetryDelay, the delay after which NEXT checks that
-- TARGET took the lock: a TARGET that died holds the lock up for no more.
-- The reservation lives in the key a fair lock keeps its deadlines in
-- (KEYS[5]), which a Mutex does not otherwise use.
local handOffHold = 20

-- reservedFor returns the owner a Mutex was just handed off to, from its
-- reservation key, or nil (none, or foreign data there). take says that
-- the owner asking expects the lock handed off to itself: the reservation
-- is then ended as it is read (one GETDEL, where GET and a DEL after the
-- hold was taken cost two), and one found for another owner is put back,
-- for a whole handOffHold again: a hint kept a few ms longer.
local function reservedFor(reserve, take)
  local ok, who = attempt(take and 'GETDEL' or 'GET', reserve)
  if not (ok and who) then
    return nil
  end
  if take and who ~= take then
    redis.call('SET', reserve, who, 'PX', handOffHold)
  end
  return who
end

-- personal returns the channel of messages on channel for the process of
-- owner alone: an owner id is CLIENT:ID, one CLIENT per process, and each
-- process subscribes channel>CLIENT beside channel (see pubsub's
-- PersonalChannel). An owner without a ':' gets channel itself.
local function personal(channel, owner)
  local client = string.match(owner, '^(.*):')
  if not client then
    return channel
  end
  return channel .. '>' .. client
end

-- publishFor publishes msg once for each distinct process among owners.
local function publishFor(channel, owners, msg)
  local sent = {}
  for _, owner in ipairs(owners) do
    local to = personal(channel, owner)
    if not sent[to] then
      sent[to] = true
      redis.call('PUBLISH', to, msg)
    end
  end
end

-- announce's queued, for 'k', is the queue's first personalMax + 1 entries
-- when the caller read them already (release.lua): they are not read again.
local function announce(channel, id, mode, queue, head, reserve, stale, queued)
  if mode == 's' then
    return
  elseif mode == 'k' then
    local ok, registered = true, queued
    if not registered then
      ok, registered = attempt('ZRANGE', queue, 0, personalMax)
    end
    if not ok or #registered > personalMax then
      redis.call('PUBLISH', channel, id .. ' k')
    else
      publishFor(channel, registered, id .. ' k')
    end
  elseif mode == 'u' then
    redis.call('PUBLISH', channel, id .. ' u')
  elseif mode == 'q' or mode == 'h' or mode == 'f' then
    local target, after = head[1] or '', head[2] or ''
    local msg = id .. ' ' .. target .. ' ' .. after
    if target == '' then
      -- Nobody waits in the queue: a Mutex's waiter joins it with its
      -- first refused attempt, so there is no one to tell. A fair lock's
      -- message still goes to any waiter.
      if mode == 'f' then
        redis.call('PUBLISH', channel, msg)
      elseif stale then
        redis.call('ZREM', queue, stale)
      end
      return
    end
    if mode ~= 'f' and stale then
      redis.call('ZREM', queue, target, stale)
    elseif mode ~= 'f' then
      redis.call('ZREM', queue, target)
    end
    if mode == 'q' then
      redis.call('SET', reserve, target, 'PX', handOffHold)
    end
    publishFor(channel, {target, after ~= '' and after or nil}, msg)
  else
    redis.call('PUBLISH', channel, id)
  end
end

-- The readers of an RWMutex. Its write hold is a hold like a Mutex's, in the
-- lock hash; its read holds live beside it (same hash tag) in two keys of
-- their own, so that each reader's lease is its own:
--   readers   a hash: OWNER = the reader's hold count, OWNER/seq = the
--             sequence number of its last applied operation (as in the
--             lock hash);
--   leases    a sorted set: OWNER scored by the end of its lease, in the
--             server's time (TIME, in ms).
-- Both keys expire with the furthest lease among the readers (fitReaders),
-- and each script that reads them first drops the readers whose lease has
-- ended (dropEnded): a reader that stopped renewing frees its share at its
-- own lease's end, not at the longest one's. A third key, the mark, is a
-- string naming a writer that waits (markWaiting): new readers of other
-- owners wait behind it. It lives one lease of that writer at most, so a
-- writer that died holds readers back no longer than that.

-- fitReaders sets the readers' keys to expire with the furthest lease among
-- them, or deletes both when no reader is left; it returns how many are
-- left.
local function fitReaders(readers, leases, now)
  local last = redis.call('ZRANGE', leases, -1, -1, 'WITHSCORES')
  if #last == 0 then
    redis.call('DEL', readers, leases)
    return 0
  end
  local ttl = math.max(tonumber(last[2]) - now, 1)
  redis.call('PEXPIRE', readers, ttl)
  redis.call('PEXPIRE', leases, ttl)
  return redis.call('ZCARD', leases)
end

-- readerRoles names an RWMutex's readers' keys in a foreign-data error:
-- the hash, then the leases, each its own, so the client names the key
-- that holds the data.
local readerRoles = {'readers', 'readleases'}

-- dropEnded checks the readers' keys (another type at either is foreign
-- data: the script stops before any change) and drops the readers whose
-- lease ended by now. roles, when given, names the two keys' roles in a
-- foreign-data error ({hash's, leases'}), for another kind of hold kept
-- the same way (a semaphore's holders, see semaphore.lua); an RWMutex's
-- readers' (readerRoles) otherwise.
local function dropEnded(readers, leases, now, roles)
  roles = roles or readerRoles
  if not attempt('HLEN', readers) then
    foreign(readers, roles[1])
  end
  local ok, ended = attempt('ZRANGEBYSCORE', leases, '-inf', now)
  if not ok then
    foreign(leases, roles[2])
  end
  if #ended == 0 then
    return
  end
  for _, owner in ipairs(ended) do
    redis.call('HDEL', readers, owner, owner .. '/seq')
  end
  redis.call('ZREMRANGEBYSCORE', leases, '-inf', now)
  fitReaders(readers, leases, now)
end

-- setReader stores the owner's read hold: count, sequence number, and a
-- lease of lease ms from now.
local function setReader(readers, leases, owner, count, seq, now, lease)
  redis.call('HSET', readers, owner, count, owner .. '/seq', seq)
  redis.call('ZADD', leases, now + lease, owner)
  fitReaders(readers, leases, now)
end

-- ownRead drops the readers whose lease ended and returns, as ownHold
-- does, the owner's read hold count (nil when it does not read here) and
-- its last sequence number, with the server's time.
local function ownRead(readers, leases, owner)
  local now = serverTime()
  dropEnded(readers, leases, now)
  local held, last = ownHold(readers, owner)
  return held, last, now
end

-- otherReaders drops the readers whose lease ended and returns the ms left
-- until the first lease of a reader other than owner ends, or -1 when there
-- is none.
local function otherReaders(readers, leases, owner)
  local now = serverTime()
  dropEnded(readers, leases, now)
  local first = redis.call('ZRANGE', leases, 0, 1, 'WITHSCORES')
  for i = 1, #first, 2 do
    if first[i] ~= owner then
      return math.max(tonumber(first[i + 1]) - now, 1)
    end
  end
  return -1
end

-- liveHolders reads, changing nothing, the holders kept as an RWMutex keeps
-- its readers (counts in hash, lease ends in the sorted set leases) whose
-- lease has not ended: a flat list of owner, count, remaining lease (ms),
-- soonest end first. Another type at either key is foreign data, and so is
-- a count that is no number (relock writes only numbers there: it would
-- otherwise drop out of the list and shift the values after it); roles
-- names the keys' roles in that error, as dropEnded's does.
local function liveHolders(hash, leases, roles)
  roles = roles or readerRoles
  if not attempt('HLEN', hash) then
    foreign(hash, roles[1])
  end
  local now = serverTime()
  local ok, live = attempt('ZRANGEBYSCORE', leases, '(' .. now, '+inf', 'WITHSCORES')
  if not ok then
    foreign(leases, roles[2])
  end
  local out = {}
  for i = 1, #live, 2 do
    local owner = live[i]
    local count = tonumber(redis.call('HGET', hash, owner) or '0')
    if not count then
      foreign(hash, roles[1])
    end
    out[#out + 1] = owner
    out[#out + 1] = count
    out[#out + 1] = tonumber(live[i + 1]) - now
  end
  return out
end

-- markOf returns the owner named by the mark ('' when there is none);
-- another type there is foreign data.
local function markOf(mark)
  local ok, who = attempt('GET', mark)
  if not ok then
    foreign(mark, 'mark')
  end
  return who or ''
end

-- markWaiting leaves the mark of a writer that waits, for ttl ms, unless
-- another writer's mark is there, and returns how long the writer may
-- sleep before it looks again: wait ms (what refused it lasts that long),
-- or less, so that it renews its mark before the mark lapses; a negative
-- wait (unknown) stays as it is.
local function markWaiting(mark, owner, ttl, wait)
  local who = markOf(mark)
  if who == '' or who == owner then
    redis.call('SET', mark, owner, 'PX', ttl)
  end
  if wait < 0 then
    return wait -- unknown (-1: no expiry, -2: gone): the client decides
  end
  return math.min(wait, math.floor(ttl / 2))
end

-- unmark deletes the owner's mark, if it is there, and reports whether it
-- did.
local function unmark(mark, owner)
  if markOf(mark) ~= owner then
    return false
  end
  redis.call('DEL', mark)
  return true
end
