-- semrenew: extend the lease of permits the owner holds. It never creates a
-- hold: a node where the owner's lease ended (and was purged) answers 0.
--
-- KEYS[1] permits hash   KEYS[2] leases sorted set
-- ARGV[1] owner field    ARGV[2] lease (ms)   ARGV[3] hold count
-- ARGV[4] operation sequence number
--
-- Returns 1 when the owner holds permits here (its lease extended), else 0.
-- Only this owner's lease moves: every holder's lease is its own.
local permits, leases, owner = KEYS[1], KEYS[2], ARGV[1]
local lease, seq = tonumber(ARGV[2]), tonumber(ARGV[4])

local now = serverTime()
dropEnded(permits, leases, now, semRoles)
local held, last = ownHold(permits, owner)
if not held then
  return 0
end
setReader(permits, leases, owner, held, math.max(seq, last), now, lease)
return 1
