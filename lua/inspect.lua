-- inspect: read a lock without changing it.
--
-- KEYS[1] lock hash   KEYS[2] fencing counter
-- KEYS[3] an RWMutex's readers hash   KEYS[4] its readers' leases
-- KEYS[5] the permits hash of the semaphore of the same name
-- KEYS[6] its holders' leases (see semaphore.lua)
--
-- Returns {pttl, fence, holders, readers, permits, capacity}: holders is a
-- flat list of owner, count (the hold at KEYS[1]: a Mutex's, or an RWMutex's writer),
-- empty when the lock is free, with pttl -2; readers one of owner, count,
-- remaining lease (ms) for each reader whose lease has not ended (a lock of
-- another kind has none), as liveHolders gives them; permits the same for
-- the semaphore's live holders, with their permits as the count, and
-- capacity the one its holders gave (0 when none is recorded). A name's
-- lock and semaphore share no key, so one read shows an operator whichever
-- the name is.
local key = KEYS[1]
local fence = fenceCounter(KEYS[2])
local holders, pttl = {}, -2
if lockKind(key) ~= 'none' then
  pttl = redis.call('PTTL', key)
  local fields = redis.call('HGETALL', key)
  for i = 1, #fields, 2 do
    if string.sub(fields[i], -4) ~= '/seq' then
      holders[#holders + 1] = fields[i]
      holders[#holders + 1] = tonumber(fields[i + 1])
    end
  end
end
return {pttl, fence, holders, liveHolders(KEYS[3], KEYS[4]),
  liveHolders(KEYS[5], KEYS[6], semRoles), capacityOf(KEYS[5]) or 0}
