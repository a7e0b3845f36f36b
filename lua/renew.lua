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

if lockKind(key) == 'none' or not holds(key, owner) then
  return 0
end
if seq > lastSeq(key, owner) then
  -- A renewal older than the last operation must not undo that operation's count.
  redis.call('HSET', key, owner, count, owner .. '/seq', seq)
end
redis.call('PEXPIRE', key, lease)
return 1
