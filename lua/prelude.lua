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

-- numberAt returns the number stored as a string at key (0 when the key
-- does not exist). Anything else there (another type, or a string that is
-- not a number) is foreign data: the script stops, before it has changed
-- anything, with a WRONGTYPE error that names the key's role (what), so the
-- client can tell which key holds it.
local function numberAt(key, what)
  local ok, value = pcall(redis.call, 'GET', key)
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
  local ok, size = pcall(redis.call, 'HLEN', key)
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
  local ok, fields = pcall(redis.call, 'HMGET', key, owner, owner .. '/seq')
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
local function bury(tomb, seq, ttl)
  local left = redis.call('PTTL', tomb)
  local keep = math.max(left, ttl)
  local ok, old = pcall(redis.call, 'SET', tomb, seq, 'PX', keep, 'GET')
  if not ok then
    foreign(tomb, 'tombstone') -- another type: nothing was written
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
    error(redis.error_reply('WRONGTYPE string tombstone'))
  end
  if last > seq then
    redis.call('SET', tomb, last, 'PX', keep)
  end
end

-- releaseStart runs the checks every release script begins with, on the
-- owner's hold in the hash key: it returns the reply to give at once, 0
-- when the owner holds nothing here (a release to count 0 still buries its
-- sequence number in tomb: it may be the undo of an acquire that has not
-- landed yet, see release.lua), 1 when a newer operation of the owner
-- already applied (a retry or a straggler); or nil and the owner's stored
-- value when the release goes on.
local function releaseStart(key, owner, tomb, count, seq, lease)
  local held, last = ownHold(key, owner)
  if not held then
    if count == 0 then
      bury(tomb, seq, lease)
    end
    return 0
  end
  if seq <= last then
    return 1
  end
  return nil, held
end

-- The wait queue. A lock's queue is a sorted set beside it (same hash tag)
-- on the node that breaks the lock's ties: the owners waiting for the lock,
-- each scored by the ticket it drew when it began to wait. A release there
-- takes the lowest ticket out and names that owner in its message, so one
-- waiter across all processes retries, not one per process (see the lock
-- package's contend.go). The queue is only a hint of who goes next: the
-- quorum alone decides who holds the lock, and every waiter still retries
-- by itself when the holder's lease runs out.

-- enqueue puts a waiting owner (ticket > 0) that found the lock held into
-- the queue, keeping the ticket it may already have there. The queue lives
-- as long as the holder's lease (ttl ms, as PTTL gave it) and one lease of
-- the waiter (lease ms) more: a waiter still waiting by then retries, and
-- joins again. Another type at the queue's key is foreign data.
local function enqueue(queue, owner, ticket, ttl, lease)
  if ticket <= 0 then
    return
  end
  local ok = pcall(redis.call, 'ZADD', queue, 'NX', ticket, owner)
  if not ok then
    foreign(queue, 'queue')
  end
  redis.call('PEXPIRE', queue, math.max(ttl, 0) + lease)
end

-- dequeue takes a waiting owner (ticket > 0) that has taken the lock out of
-- the queue, if a release has not already.
local function dequeue(queue, owner, ticket)
  if ticket > 0 then
    pcall(redis.call, 'ZREM', queue, owner)
  end
end

-- queueHead returns, for a release announced with mode 'q', the first two
-- owners of the queue (the one the lock goes to and the one after it), or
-- an empty list; nothing for another mode. Another type at the queue's key
-- is foreign data.
local function queueHead(queue, mode)
  if mode ~= 'q' then
    return {}
  end
  local ok, head = pcall(redis.call, 'ZRANGE', queue, 0, 1)
  if not ok then
    foreign(queue, 'queue')
  end
  return head
end

-- announce publishes a release that freed the lock on channel, as mode
-- says. The message formats, which pubsub parses:
--   ''  'ID'               a copy for any waiter: every node publishes one
--   'q' 'ID TARGET NEXT'   the lock goes to TARGET, the queue's head, taken
--                          out of the queue here; NEXT is the owner after it
--                          ('' when none), who retries if TARGET does not
--                          take the lock soon. An empty queue gives
--                          'ID  ': any waiter, at once.
--   'k' 'ID k'             for keepers only: waiters holding part of the
--                          lock that wait for the others to give theirs back
local function announce(channel, id, mode, queue, head)
  if mode == 'k' then
    redis.call('PUBLISH', channel, id .. ' k')
  elseif mode == 'q' then
    local target, after = head[1] or '', head[2] or ''
    if target ~= '' then
      redis.call('ZREM', queue, target)
    end
    redis.call('PUBLISH', channel, id .. ' ' .. target .. ' ' .. after)
  else
    redis.call('PUBLISH', channel, id)
  end
end
