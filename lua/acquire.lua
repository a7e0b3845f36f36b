-- acquire: take the lock for one owner, or re-enter it, setting the owner's hold
-- count to an absolute value so that a retried call can never count a hold twice.
--
-- KEYS[1] lock hash        KEYS[2] fencing counter
-- ARGV[1] owner field      ARGV[2] lease (ms)   ARGV[3] hold count to store
-- ARGV[4] operation sequence number of this owner (newer operations only)
--
-- Returns {1, count, fence} when the owner holds the lock afterwards, or
-- {0, pttl, fence} when another owner holds it (pttl as PTTL reports it).
local key, owner = KEYS[1], ARGV[1]
local lease, count, seq = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local fence = tonumber(redis.call('GET', KEYS[2]) or '0')

if lockKind(key) == 'hash' then
  local seqField = owner .. '/seq'
  for _, field in ipairs(redis.call('HKEYS', key)) do
    if field ~= owner and field ~= seqField then
      return {0, redis.call('PTTL', key), fence}
    end
  end
  -- An operation that is not newer than the last one applied is a retry or a
  -- straggler: report the state without changing it.
  if seq <= lastSeq(key, owner) then
    return {1, tonumber(redis.call('HGET', key, owner) or '0'), fence}
  end
end
redis.call('HSET', key, owner, count, owner .. '/seq', seq)
redis.call('PEXPIRE', key, lease)
return {1, count, fence}
