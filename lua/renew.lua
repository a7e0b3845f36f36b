-- renew: extend the lease of a lock the owner holds, and repair its hold count.
-- It never creates a lock: a node that lost the lock answers 0.
--
-- KEYS[1] lock hash
-- ARGV[1] owner field   ARGV[2] lease (ms)   ARGV[3] hold count
-- ARGV[4] operation sequence number
--
-- Returns 1 when the owner holds the lock here (lease extended), else 0.
--
-- A renewal needs no tombstone (see acquire.lua): it never creates a lock,
-- so one delayed past the owner's release finds a free key, or another
-- owner's, and answers 0 without a change. One delayed past the owner's
-- release AND its next acquire finds the owner's new hold, and extends it to
-- the renewal's lease, never shortens it: that stays the owner's own lock
-- and its next release deletes it; only a new hold with a shorter explicit
-- lease that the owner lets run out instead lingers on that node until the
-- renewal's lease ends (telling the holds apart would need one more key per
-- renewal).
--
-- A renewal older than the owner's last operation here (seq <= last) changes
-- neither the count nor, if that operation's expiry is later, the expiry:
-- that operation set both, for a hold of its own lease, which may be longer
-- (a LockFor after an Unlock). Before 2026-12-04 such a renewal set the
-- expiry to its own lease, shortening the new hold on the node below the
-- validity its owner counts: on a quorum, another owner could take the
-- lock while it still held it. An expiry of lease from now, or a later
-- one, still covers what the renewal's sender counts (from its sending,
-- before it landed).
local key, owner = KEYS[1], ARGV[1]
local lease, count, seq = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
-- The values stored go as the strings the client sent (decimal integers),
-- not as the numbers read from them: Redis formats a number argument of
-- redis.call anew on every call (in acquire.lua, 1 to 2 µs of the 14 that
-- a first acquisition takes; make bench's ceiling, server time per call).
local leaseArg, countArg, seqArg = ARGV[2], ARGV[3], ARGV[4]

local held, last = ownHold(key, owner)
if not held then
  return 0
end
if seq > last then
  redis.call('HSET', key, owner, countArg, owner .. '/seq', seqArg)
elseif redis.call('PTTL', key) >= lease then
  return 1 -- older than the last operation, which set a later expiry
end
redis.call('PEXPIRE', key, leaseArg)
return 1
