-- semrelease: give back an owner's permits (count 0), announcing it, or
-- keep them under a new sequence number (count above 0).
--
-- KEYS[1] permits hash   KEYS[2] leases sorted set   KEYS[3] release channel
-- KEYS[4] the owner's tombstone
-- ARGV[1] owner field    ARGV[2] lease (ms)   ARGV[3] hold count to store
-- ARGV[4] operation sequence number   ARGV[5] release id (the message payload)
--
-- Returns 0 when the owner holds nothing here (a release to 0 still buries
-- its sequence number, as release.lua does, so that the acquire it undoes
-- is refused whenever it lands), 1 when it still holds its permits, 2 when
-- they were given back: the release id is published on the channel, so a
-- waiter of any process retries (the permits may be what it needs).
local permits, leases, owner = KEYS[1], KEYS[2], ARGV[1]
local lease, count, seq = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])

local now = serverTime()
dropEnded(permits, leases, now, semRoles)
local done, held = releaseStart(permits, owner, KEYS[4], count, seq, lease)
if done then
  return done
end
if count > 0 then
  setReader(permits, leases, owner, held, seq, now, lease)
  return 1
end
bury(KEYS[4], seq, lease) -- first: foreign data there stops the script unchanged
redis.call('HDEL', permits, owner, owner .. '/seq')
redis.call('ZREM', leases, owner)
fitReaders(permits, leases, now)
redis.call('PUBLISH', KEYS[3], ARGV[5])
return 2
