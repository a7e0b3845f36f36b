-- inspect: read a lock without changing it.
--
-- KEYS[1] lock hash   KEYS[2] fencing counter
-- KEYS[3] an RWMutex's readers hash   KEYS[4] its readers' leases
-- KEYS[5] the permits hash of the semaphore of the same name
-- KEYS[6] its holders' leases (see semaphore.lua)
-- KEYS[7] the lock's wait queue   KEYS[8] its entries' deadlines (a fair
--         lock's), or a Mutex's hand-off reservation, which is not read
-- KEYS[9] the mark of an RWMutex's waiting writer
-- ARGV[1] how many of the queue's first entries to return: 0 reads the
--         holds alone (KEYS[7] to KEYS[9] untouched, queue and mark empty)
--
-- Returns {pttl, fence, holders, readers, permits, capacity, queue, queued,
-- mark}: holders is a flat list of owner, count (the hold at KEYS[1]: a
-- Mutex's, or an RWMutex's writer), empty when the lock is free, with pttl
-- -2; readers one of owner, count, remaining lease (ms) for each reader
-- whose lease has not ended (a lock of another kind has none), as
-- liveHolders gives them; permits the same for the semaphore's live
-- holders, with their permits as the count, and capacity the one its
-- holders gave (0 when none is recorded). queue is a flat list of owner,
-- ticket, ms left, for the first ARGV[1] owners in the wait queue, in the
-- order a release hands the lock on: the ms left is how long the entry
-- stays unless its owner asks again (a fair lock's entry's own deadline,
-- else the queue key's TTL, which each waiter's attempt sets); a fair
-- lock's entries whose deadline passed are left out, as the next release
-- drops them. queued is how many owners wait in all (the ended ones
-- aside), mark {owner, ms left} for a waiting writer, or empty. A name's
-- lock and semaphore share no key, so one read shows an operator whichever
-- the name is.
--
-- A count or a capacity that is no number (relock writes only numbers) is
-- foreign data, as another type at a key is: the script stops with a
-- WRONGTYPE error naming the key's role, rather than give it as 0.
local key = KEYS[1]
local fence = fenceCounter(KEYS[2])
local holders, pttl = {}, -2
if lockKind(key) ~= 'none' then
  pttl = redis.call('PTTL', key)
  local fields = redis.call('HGETALL', key)
  for i = 1, #fields, 2 do
    if string.sub(fields[i], -4) ~= '/seq' then
      local count = tonumber(fields[i + 1])
      if not count then
        foreign(key)
      end
      holders[#holders + 1] = fields[i]
      holders[#holders + 1] = count
    end
  end
end

-- The wait queue, read a page at a time (at most ten) so that a fair
-- lock's entries whose deadline passed, which no release has dropped yet,
-- do not take the places asked for.
local limit, waiting, queued, mark = tonumber(ARGV[1]), {}, 0, {}
if limit > 0 then
  local queue, deadlines = KEYS[7], KEYS[8]
  local ok, total = attempt('ZCARD', queue)
  if not ok then
    foreign(queue, 'queue')
  end
  local now, keyLeft = serverTime(), redis.call('PTTL', queue)
  -- The deadlines' key holds a Mutex's hand-off reservation (a string, see
  -- announce in prelude.lua) instead of a fair lock's deadlines.
  local kind = redis.call('TYPE', deadlines)['ok']
  if kind ~= 'none' and kind ~= 'zset' and kind ~= 'string' then
    foreign(deadlines, 'deadlines')
  end
  local fair, ended = kind == 'zset', 0
  if fair then
    ended = redis.call('ZCOUNT', deadlines, '-inf', now)
  end
  local from = 0
  while #waiting < 3 * limit and from < math.min(total, 1000) do
    local page = redis.call('ZRANGE', queue, from, from + 99, 'WITHSCORES')
    from = from + 100
    for i = 1, #page, 2 do
      if #waiting >= 3 * limit then
        break
      end
      local owner, left = page[i], keyLeft
      local deadline = fair and tonumber(redis.call('ZSCORE', deadlines, owner))
      if deadline and keyLeft >= 0 then
        left = math.min(deadline - now, keyLeft)
      elseif deadline then
        left = deadline - now
      end
      if not deadline or left > 0 then
        waiting[#waiting + 1] = owner
        waiting[#waiting + 1] = tonumber(page[i + 1])
        waiting[#waiting + 1] = left
      end
    end
  end
  queued = math.max(total - ended, 0)

  local who = markOf(KEYS[9])
  if who ~= '' then
    mark = {who, redis.call('PTTL', KEYS[9])}
  end
end
local readers = liveHolders(KEYS[3], KEYS[4])
local permits = liveHolders(KEYS[5], KEYS[6], semRoles)
return {pttl, fence, holders, readers, permits, capacityOf(KEYS[5]) or 0,
  waiting, queued, mark}
