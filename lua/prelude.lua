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

-- numberAt returns the number stored as a string at key (0 when the key
-- does not exist). Anything else there (another type, or a string that is
-- not a number) is foreign data: the script stops, before it has changed
-- anything, with a WRONGTYPE error that names the key's role (what), so the
-- client can tell which key holds it.
local function numberAt(key, what)
  local ok, value = pcall(redis.call, 'GET', key)
  local number = ok and tonumber(value or '0')
  if not number then
    error(redis.error_reply('WRONGTYPE ' .. redis.call('TYPE', key)['ok'] .. ' ' .. what))
  end
  return number
end

-- fenceCounter returns a lock's fencing counter (0 when never raised).
local function fenceCounter(key)
  return numberAt(key, 'fence')
end

-- foreign stops the script with a WRONGTYPE error naming the type found at
-- key: data someone else stored there, which relock never changes.
local function foreign(key)
  error(redis.error_reply('WRONGTYPE ' .. redis.call('TYPE', key)['ok']))
end

-- hashSize returns the number of fields of the lock hash (0 when the key
-- does not exist), in one command; another type at key is foreign data.
local function hashSize(key)
  local ok, size = pcall(redis.call, 'HLEN', key)
  if not ok then
    foreign(key)
  end
  return size
end

-- ownHold returns, in one command, the owner's hold count on the lock (nil
-- when it holds nothing here) and the sequence number of its last applied
-- operation (0 when none), kept in the field OWNER/seq beside the count.
-- Another type at key is foreign data.
local function ownHold(key, owner)
  local ok, fields = pcall(redis.call, 'HMGET', key, owner, owner .. '/seq')
  if not ok then
    foreign(key)
  end
  return fields[1] and tonumber(fields[1]), tonumber(fields[2] or '0')
end

-- An owner's tombstone is a string key beside the lock (KEYS of the script
-- that touches it, same {NAME} hash tag, so the same Cluster slot) holding
-- the sequence number of the last operation that ended the owner's hold on
-- this node. Operations of that owner numbered at or below it are delayed
-- copies of calls the owner has already moved past: acquire refuses them.
-- Other owners never read it. acquire.lua and release.lua explain where it
-- lives and for how long.

-- buried returns the sequence number kept in a tombstone (0 when there is
-- none).
local function buried(tomb)
  return numberAt(tomb, 'tombstone')
end

-- bury records in tomb that the owner's operations up to seq are over here,
-- for at least ttl ms. It never lowers the number nor shortens the life of
-- an existing tombstone: a release arriving late must not reopen the door
-- that a newer one closed, nor cut short the cover an earlier hold with a
-- longer lease still needs. The key always gets a TTL. Usually there is no
-- tombstone yet, and one SET NX does it all.
local function bury(tomb, seq, ttl)
  if redis.call('SET', tomb, seq, 'PX', ttl, 'NX') then
    return
  end
  local last = buried(tomb)
  local left = redis.call('PTTL', tomb)
  redis.call('SET', tomb, math.max(last, seq), 'PX', math.max(left, ttl))
end
