-- semaphore: helpers shared by the semaphore's scripts (semacquire.lua,
-- semrelease.lua, semrenew.lua, seminspect.lua); lua.go puts this text
-- after prelude.lua and before each of them.
--
-- A semaphore on one node is two keys with the same {NAME} hash tag:
--   permits  a hash: OWNER = the permits it holds, OWNER/seq = the sequence
--            number of its last applied operation (as a lock's hash has);
--   leases   a sorted set: OWNER scored by the end of its lease, in this
--            server's time (ms, from TIME), so each holder's lease is its
--            own: one holder renewing keeps no other holder alive.
-- Both keys live as long as the last lease; every script first drops the
-- holders whose lease has ended (purge), so an expired holder's permits are
-- free to the very next call, whoever makes it.

-- nowMs returns the server's time in ms.
local function nowMs()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- semKeys checks the types of the two keys before anything is written:
-- another type at either is foreign data, named by its role.
local function semKeys(permits, leases)
  hashSize(permits)
  local kind = redis.call('TYPE', leases)['ok']
  if kind ~= 'none' and kind ~= 'zset' then
    foreign(leases, 'leases')
  end
end

-- purge drops the holders whose lease ended by now from both keys.
local function purge(permits, leases, now)
  local gone = redis.call('ZRANGEBYSCORE', leases, '-inf', now)
  if #gone == 0 then
    return
  end
  for _, owner in ipairs(gone) do
    redis.call('HDEL', permits, owner, owner .. '/seq')
  end
  redis.call('ZREMRANGEBYSCORE', leases, '-inf', now)
end

-- others returns the permits held by live holders other than owner, and
-- the end of the soonest of their leases (0 when there is none).
local function others(permits, leases, owner)
  local live = redis.call('ZRANGE', leases, 0, -1, 'WITHSCORES')
  local used, soonest = 0, 0
  for i = 1, #live, 2 do
    local who = live[i]
    if who ~= owner then
      used = used + tonumber(redis.call('HGET', permits, who) or '0')
      if soonest == 0 then
        soonest = tonumber(live[i + 1])
      end
    end
  end
  return used, soonest
end

-- hold writes owner's n permits, its sequence number and its lease end.
local function hold(permits, leases, owner, n, seq, now, lease)
  redis.call('HSET', permits, owner, n, owner .. '/seq', seq)
  redis.call('ZADD', leases, now + lease, owner)
end

-- settleKeys makes both keys live as long as the last lease, or deletes
-- them when no holder is left.
local function settleKeys(permits, leases, now)
  local last = redis.call('ZRANGE', leases, -1, -1, 'WITHSCORES')
  if #last == 0 then
    redis.call('DEL', permits, leases)
    return
  end
  local ttl = math.max(tonumber(last[2]) - now, 1)
  redis.call('PEXPIRE', permits, ttl)
  redis.call('PEXPIRE', leases, ttl)
end

-- releaseStart runs the checks a release begins with (as release.lua's),
-- on the owner's hold in the hash key: it returns the reply to give at once, 0
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
