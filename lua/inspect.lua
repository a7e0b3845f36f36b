-- inspect: read a lock without changing it.
--
-- KEYS[1] lock hash   KEYS[2] fencing counter
-- KEYS[3] an RWMutex's readers hash   KEYS[4] its readers' leases
--
-- Returns {pttl, fence, holders, readers}: holders is a flat list of owner,
-- count (the hold at KEYS[1]: a Mutex's, or an RWMutex's writer), empty when
-- the lock is free, with pttl -2; readers one of owner, count, remaining
-- lease (ms) for each reader whose lease has not ended (a lock of another
-- kind has none), as liveHolders gives them.
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
return {pttl, fence, holders, liveHolders(KEYS[3], KEYS[4])}
