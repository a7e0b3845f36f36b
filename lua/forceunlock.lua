-- forceunlock: delete a lock whoever holds it, and publish its release.
--
-- KEYS[1] lock hash   KEYS[2] release channel
-- KEYS[3..] the tombstones of the owners named in ARGV[3..], in that order
-- ARGV[1] release id (the message payload)
-- ARGV[2] 1: refuse when a holder is not among the named owners; 0: delete anyway
--
-- Returns 1 when a lock was deleted, 0 when there was none, -1 when strict
-- and the holders are not the ones named (nothing changes; read and retry).
--
-- The owners it evicts must not come back through an operation of theirs
-- delayed in the network, as after a release (see acquire.lua): each gets a
-- tombstone with its last applied sequence number. A script may touch only
-- the keys it is given, and the tombstones' names depend on who holds the
-- lock, so the caller reads the holders first and names them; when they
-- changed in between, the strict call refuses and the caller reads again.
--
-- The tombstones live as long as the lock had left. The operations they
-- refuse (numbered at or below the owner's last applied one) were all sent
-- before that last one landed and carry the same lease, so none of them is
-- live past the moment the lease it set would have ended, which is now plus
-- the PTTL. Operations the owner sends after this call are new: a renewal
-- then learns the lock is gone, and an acquire takes the free lock as any
-- other owner's would. A lock without a TTL (written by someone else) gets
-- no tombstones; its owners carry no sequence numbers either.
if lockKind(KEYS[1]) == 'none' then
  return 0
end
local named = {}
for i = 3, #ARGV do
  named[ARGV[i]] = KEYS[i]
end
local seqs, owners = {}, {}
local fields = redis.call('HGETALL', KEYS[1])
for i = 1, #fields, 2 do
  if string.sub(fields[i], -4) == '/seq' then
    seqs[string.sub(fields[i], 1, -5)] = tonumber(fields[i + 1])
  else
    owners[#owners + 1] = fields[i]
  end
end
if ARGV[2] == '1' then
  for _, owner in ipairs(owners) do
    if not named[owner] then
      return -1
    end
  end
end
-- Tombstones before the delete: a foreign key in a tombstone's place stops
-- the script with the lock still there (at worst some tombstones written,
-- each at or below its owner's applied number, which refuses nothing new).
local left = redis.call('PTTL', KEYS[1])
for _, owner in ipairs(owners) do
  if named[owner] and seqs[owner] and left > 0 then
    bury(named[owner], seqs[owner], left)
  end
end
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', KEYS[2], ARGV[1])
return 1
