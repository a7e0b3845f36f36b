-- forceunlock: delete a lock whoever holds it, and publish its release.
--
-- KEYS[1] lock hash   KEYS[2] release channel
-- ARGV[1] release id (the message payload)
--
-- Returns 1 when a lock was deleted, 0 when there was none.
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind == 'none' then
  return 0
end
if kind ~= 'hash' then
  return redis.error_reply('WRONGTYPE ' .. kind)
end
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', KEYS[2], ARGV[1])
return 1
