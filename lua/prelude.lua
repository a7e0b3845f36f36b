-- prelude: helpers shared by every relock script; lua.go puts this text in
-- front of each script before it is sent.

-- lockKind returns the Redis type of a lock key: 'none' or 'hash'. Any other
-- type is data someone else stored: the script stops with a WRONGTYPE error
-- and changes nothing.
local function lockKind(key)
  local kind = redis.call('TYPE', key)['ok']
  if kind ~= 'none' and kind ~= 'hash' then
    error(redis.error_reply('WRONGTYPE ' .. kind))
  end
  return kind
end

-- lastSeq returns the sequence number of the owner's last applied operation
-- (0 when none), kept in the field OWNER/seq beside the hold count.
local function lastSeq(key, owner)
  return tonumber(redis.call('HGET', key, owner .. '/seq') or '0')
end

-- holds reports whether owner has a hold count on the lock.
local function holds(key, owner)
  return redis.call('HEXISTS', key, owner) == 1
end
