-- release: bring the owner's hold count down to an absolute value; at zero the
-- lock is deleted and one message is published on its release channel.
--
-- KEYS[1] lock hash        KEYS[2] release channel
-- ARGV[1] owner field      ARGV[2] lease (ms)   ARGV[3] hold count to store
-- ARGV[4] operation sequence number   ARGV[5] release id (the message payload)
--
-- Returns 0 when the owner does not hold the lock here (nothing changes),
-- 1 when it still holds it, 2 when the lock was released.
local key, owner = KEYS[1], ARGV[1]
local lease, count, seq = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])

if lockKind(key) == 'none' or not holds(key, owner) then
  return 0
end
if seq <= lastSeq(key, owner) then
  return 1 -- a retry or a straggler: a newer operation already applied
end
if count > 0 then
  redis.call('HSET', key, owner, count, owner .. '/seq', seq)
  redis.call('PEXPIRE', key, lease)
  return 1
end
redis.call('DEL', key)
redis.call('PUBLISH', KEYS[2], ARGV[5])
return 2
