-- inspect: read a lock without changing it.
--
-- KEYS[1] lock hash   KEYS[2] fencing counter
--
-- Returns {pttl, fence, owner1, count1, owner2, count2, ...}; no owners when
-- the lock is free.
local key = KEYS[1]
local fence = fenceCounter(KEYS[2])
if lockKind(key) == 'none' then
  return {-2, fence}
end
local reply = {redis.call('PTTL', key), fence}
local fields = redis.call('HGETALL', key)
for i = 1, #fields, 2 do
  if string.sub(fields[i], -4) ~= '/seq' then
    reply[#reply + 1] = fields[i]
    reply[#reply + 1] = tonumber(fields[i + 1])
  end
end
return reply
