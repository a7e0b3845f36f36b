-- forceunlock: delete a lock whoever holds it, and publish its release.
--
-- KEYS[1] lock hash   KEYS[2] release channel
-- ARGV[1] release id (the message payload)
--
-- Returns 1 when a lock was deleted, 0 when there was none.
if lockKind(KEYS[1]) == 'none' then
  return 0
end
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', KEYS[2], ARGV[1])
return 1
