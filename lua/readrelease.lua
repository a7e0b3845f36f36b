-- readrelease: bring an owner's read hold count down to an absolute value
-- (as release.lua does for a Mutex's hold). At zero the owner's share goes;
-- the last reader to go announces it, so that a waiting writer retries.
--
-- KEYS[1] readers hash   KEYS[2] readers' leases   KEYS[3] release channel
-- KEYS[4] the owner's read tombstone
-- ARGV[1] owner field    ARGV[2] lease (ms)   ARGV[3] hold count to store
-- ARGV[4] operation sequence number   ARGV[5] release id (the message)
--
-- Returns 0 when the owner holds no read hold here (nothing changes but the
-- tombstone, as in release.lua), 1 when it still reads, 2 when its share
-- went (or, as in release.lua, went before this copy of the call). A
-- release to 0 buries the sequence number in the owner's read tombstone for
-- the lease, whether it held anything here or not (see release.lua for why
-- and for how long). The release id is published, once, only when no
-- reader is left afterwards: readers never wait for readers.
local readers, leases = KEYS[1], KEYS[2]
local owner = ARGV[1]
local lease, count, seq = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])

local held, last, now = ownRead(readers, leases, owner)
if not held then
  if count == 0 then
    return goneBefore(KEYS[4], seq, lease)
  end
  return 0
end
if seq <= last then
  return 1 -- a retry or a straggler: a newer operation already applied
end
if count > 0 then
  setReader(readers, leases, owner, count, seq, now, lease)
  return 1
end
bury(KEYS[4], seq, lease)
redis.call('HDEL', readers, owner, owner .. '/seq')
redis.call('ZREM', leases, owner)
if fitReaders(readers, leases, now) == 0 then
  redis.call('PUBLISH', KEYS[3], ARGV[5])
end
return 2
