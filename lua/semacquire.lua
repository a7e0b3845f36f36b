-- semacquire: take n permits of a semaphore of capacity k for one owner,
-- under its own lease, or report that they are not free.
--
-- KEYS[1] permits hash   KEYS[2] leases sorted set   KEYS[3] the owner's tombstone
-- ARGV[1] owner field    ARGV[2] lease (ms)   ARGV[3] hold count (1)
-- ARGV[4] operation sequence number of this owner (newer operations only)
-- ARGV[5] '1' for a repair that must not create a hold afresh (a re-entry)
-- ARGV[6] n, the permits   ARGV[7] k, the capacity
-- ARGV[8] '1' when the owner's client may send this call twice: a refusal
--         buries its sequence number (see refused in prelude.lua)
--
-- The replies have the shapes of acquire.lua's, fence always 0:
-- {1, count, 0} the owner holds its permits here afterwards;
-- {0, pttl, 0} the permits of other live holders plus n exceed k: pttl is
--   the time until the soonest of their leases ends (when permits may come
--   back without a release);
-- {2, -2, 0} stale: the owner's permits here were released (or undone) by
--   an operation numbered at or above this one; its tombstone refuses it;
-- {3, -2, 0} a re-entry that found nothing of the owner here.
-- An error reply 'RELOCK_CAPACITY stored' when the holders here gave
-- another capacity (see capacityOf in semaphore.lua), changing nothing.
--
-- Each node enforces its own count: the live permits it holds never exceed
-- k, whatever the other nodes hold. The lock package's quorum for a
-- semaphore (see lock.SemaphoreQuorum) turns that into the guarantee across
-- nodes. Tombstones and sequence numbers follow acquire.lua's rules: a call
-- retried after a lost reply finds its own hold and changes nothing, and a
-- delayed call of an owner that released is refused.
local permits, leases, owner = KEYS[1], KEYS[2], ARGV[1]
local lease, count, seq = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local reentry = ARGV[5] == '1'
local n, k = tonumber(ARGV[6]), tonumber(ARGV[7])
local twice = ARGV[8] == '1'

local now = serverTime()
dropEnded(permits, leases, now, semRoles)
local held, last = ownHold(permits, owner)
if held then
  if seq <= last then
    return {1, count, 0} -- a retry or a straggler: report without a change
  end
  setReader(permits, leases, owner, held, seq, now, lease) -- a repair: the same permits
  return {1, count, 0}
end
if reentry then
  return {3, -2, 0}
end
if seq <= buried(KEYS[3]) then
  return {2, -2, 0}
end
local stored = capacityOf(permits)
if stored and stored ~= k then
  error(redis.error_reply('RELOCK_CAPACITY ' .. stored))
end
local used, soonest = others(permits, leases, owner)
if used + n > k then
  refused(KEYS[3], seq, lease, twice)
  if soonest == 0 then
    return {0, -1, 0} -- n alone exceeds k: no lease to wait for
  end
  return {0, math.max(soonest - now, 0), 0}
end
if not stored then
  redis.call('HSET', permits, capacityField, k)
end
setReader(permits, leases, owner, n, seq, now, lease)
return {1, count, 0}
