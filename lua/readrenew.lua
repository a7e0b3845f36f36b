-- readrenew: extend the lease of an owner's read hold, and repair its count
-- (as renew.lua does for a Mutex's hold). It never creates a read hold.
--
-- KEYS[1] readers hash   KEYS[2] readers' leases
-- ARGV[1] owner field   ARGV[2] lease (ms)   ARGV[3] hold count
-- ARGV[4] operation sequence number
--
-- Returns 1 when the owner reads here (its own lease extended), else 0. A
-- reader whose lease ended is dropped first, so its renewal answers 0: the
-- share it held may have let a writer in since.
local readers, leases = KEYS[1], KEYS[2]
local owner = ARGV[1]
local lease, count, seq = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])

local held, last, now = ownRead(readers, leases, owner)
if not held then
  return 0
end
if seq > last then
  last = seq
else
  -- Older than the owner's last operation here: that one's count stays, and
  -- its lease end if later (see renew.lua: a newer read hold of a longer
  -- lease must not end sooner on this node than its owner counts).
  count = held
  local ends = tonumber(redis.call('ZSCORE', leases, owner))
  if ends then
    lease = math.max(lease, ends - now)
  end
end
setReader(readers, leases, owner, count, last, now, lease)
return 1
