-- seminspect: read a semaphore's live holders on this node, changing
-- nothing (holders whose lease has ended are left out, not purged).
--
-- KEYS[1] permits hash   KEYS[2] leases sorted set
--
-- Returns a flat list: owner, permits, remaining lease (ms), for each live
-- holder, soonest lease end first.
local permits, leases = KEYS[1], KEYS[2]

if not pcall(redis.call, 'HLEN', permits) then
  foreign(permits, semRoles[1])
end
local ok = pcall(redis.call, 'ZCARD', leases)
if not ok then
  foreign(leases, semRoles[2])
end
local now = serverTime()
local live = redis.call('ZRANGEBYSCORE', leases, '(' .. now, '+inf', 'WITHSCORES')
local out = {}
for i = 1, #live, 2 do
  local owner = live[i]
  out[#out + 1] = owner
  out[#out + 1] = tonumber(redis.call('HGET', permits, owner) or '0')
  out[#out + 1] = tonumber(live[i + 1]) - now
end
return out
