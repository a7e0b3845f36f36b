-- renew: extend the lease of a lock the owner holds, and repair its hold count.
-- It never creates a lock: a node that lost the lock answers 0.
--
-- KEYS[1] lock hash
-- ARGV[1] owner field   ARGV[2] lease (ms)   ARGV[3] hold count
-- ARGV[4] operation sequence number
--
-- Returns 1 when the owner holds the lock here (lease extended), else 0.
local key, owner = KEYS[1], ARGV[1]
local lease, count, seq = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local seqField = owner .. '/seq'

local kind = redis.call('TYPE', key)['ok']
if kind == 'none' then
  return 0
end
if kind ~= 'hash' then
  return redis.error_reply('WRONGTYPE ' .. kind)
end
if redis.call('HEXISTS', key, owner) == 0 then
  return 0
end
local last = tonumber(redis.call('HGET', key, seqField) or '0')
if seq > last then
  -- A renewal older than the last operation must not undo that operation's count.
  redis.call('HSET', key, owner, count, seqField, seq)
end
redis.call('PEXPIRE', key, lease)
return 1
