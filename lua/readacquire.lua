-- readacquire: take or re-enter an RWMutex read hold for one owner, setting
-- its hold count to an absolute value (as acquire.lua does for a Mutex's).
-- See prelude.lua for the readers' keys and the mark.
--
-- KEYS[1] lock hash (the write hold)   KEYS[2] readers hash
-- KEYS[3] readers' leases (sorted set)  KEYS[4] the mark of a waiting writer
-- KEYS[5] the owner's read tombstone
-- ARGV[1] owner field   ARGV[2] lease (ms)   ARGV[3] hold count to store
-- ARGV[4] operation sequence number of this owner (newer operations only)
-- ARGV[5] '1' for a re-entry: only count up a read hold the owner still has
-- ARGV[6] '1' when the owner's client may send this call twice: a refusal
--         buries its sequence number (see refused in prelude.lua)
--
-- Returns as acquire.lua does, fence always 0: {1, count, 0} when the owner
-- reads here afterwards; {0, pttl, 0} when it must wait: another owner holds
-- the write hold (pttl is that hold's), or a writer of another owner waits
-- and this owner neither reads nor writes here yet (pttl is the mark's);
-- {2, -2, 0} for a stale call (the owner's read tombstone); {3, -2, 0} for a
-- re-entry whose read hold has ended here. Only {1, ...} changes anything.
--
-- Many owners read at once; each has its own lease in KEYS[3], renewed on
-- its own (readrenew.lua). The owner's own write hold never stops it
-- (a writer may take read holds: a downgrade), nor does its own mark.
local lock, readers, leases, mark = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local owner = ARGV[1]
local lease, count, seq = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local reentry = ARGV[5] == '1'
local twice = ARGV[6] == '1'

local writes, wlast = ownHold(lock, owner)
if hashSize(lock) > (writes and 1 or 0) + (wlast > 0 and 1 or 0) then
  refused(KEYS[5], seq, lease, twice)
  return {0, redis.call('PTTL', lock), 0}
end
local held, last, now = ownRead(readers, leases, owner)
if held then
  if seq <= last then
    return {1, held, 0} -- a retry or a straggler: report, change nothing
  end
elseif reentry then
  return {3, -2, 0}
else
  if seq <= buried(KEYS[5]) then
    return {2, -2, 0}
  end
  local who = markOf(mark)
  if not writes and who ~= '' and who ~= owner then
    refused(KEYS[5], seq, lease, twice)
    return {0, redis.call('PTTL', mark), 0}
  end
end
setReader(readers, leases, owner, count, seq, now, lease)
return {1, count, 0}
