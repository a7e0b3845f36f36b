-- forceunlock: free a name of every hold on it, whoever holds it, or of
-- the holds of the owners named alone, and wake the waiters of each.
--
-- KEYS[1] lock hash   KEYS[2] its release channel (where writers and a
--         Mutex's waiters wait)   KEYS[3] the channel of an RWMutex's
--         waiting readers
-- KEYS[4] an RWMutex's readers hash   KEYS[5] its readers' leases
-- KEYS[6] the permits hash of the semaphore of the same name
-- KEYS[7] its holders' leases   KEYS[8] its release channel
-- KEYS[9..] the tombstones of the owners named in ARGV[6..], in that order
-- ARGV[1] release id (the message payload)
-- ARGV[2] '1': free every hold, refusing when a holder is not among the
--         owners named; '0': free every hold anyway; 'o': free the named
--         owners' holds alone, leaving the others' as they are
-- ARGV[3] how many of the named owners hold the lock hash; ARGV[4] how many
--         of the rest read; the others after them hold permits
-- ARGV[5] the message announcing freed permits: the release id, asking for
--         copies from every node before a waiter wakes (see
--         reentrant.permitsReleaseID: an acquisition of permits may need them all)
-- ARGV[6..] the owners, lock holders first, then readers, then permit holders
--
-- Returns 1 when a hold was freed, 0 when there was none (of the named
-- owners, for 'o'), -1 when strict and the holders are not the ones named
-- (nothing changes; read and retry).
--
-- The owners it evicts must not come back through an operation of theirs
-- delayed in the network, as after a release (see acquire.lua): each gets a
-- tombstone of its kind of hold with its last applied sequence number. A
-- script may touch only the keys it is given, and the tombstones' names
-- depend on who holds what, so the caller reads the holders first and names
-- them; when they changed in between, the strict call refuses and the
-- caller reads again.
--
-- A tombstone lives as long as its owner's lease had left: the lock's PTTL
-- for the lock hash's holders, each one's own lease for a reader or a
-- permit holder. The operations it refuses (numbered at or below the
-- owner's last applied one) were all sent before that last one landed and
-- carry the same lease, so none of them is live past the moment the lease
-- it set would have ended. Operations the owner sends after this call are
-- new: a renewal then learns the hold is gone, and an acquire takes what is
-- free as any other owner's would. A lock without a TTL (written by someone
-- else) gets no tombstones; its owners carry no sequence numbers either.
--
-- Each kind it frees is announced where its waiters listen: the lock hash's
-- release on both channels (a writer's end frees readers too), the last
-- readers' on the lock's channel, the permits' on the semaphore's. With
-- 'o', a kind that other owners still hold here is not announced, but
-- permits, which other waiters may take beside the holders left.
local now = serverTime()
local only = ARGV[2] == 'o'
local writers, readers = tonumber(ARGV[3]), tonumber(ARGV[4])
local named = {{}, {}, {}} -- by kind: owner → the key of its tombstone
for i = 6, #ARGV do
  local kind = 3
  if i < 6 + writers then
    kind = 1
  elseif i < 6 + writers + readers then
    kind = 2
  end
  named[kind][ARGV[i]] = KEYS[i + 3]
end

-- The holds, by kind: owner → {seq, lease left (ms)}. Only live readers
-- and permit holders count: the others' holds are free already.
local holds = {{}, {}, {}}
if lockKind(KEYS[1]) ~= 'none' then
  local left = redis.call('PTTL', KEYS[1])
  local seqs = {}
  local fields = redis.call('HGETALL', KEYS[1])
  for i = 1, #fields, 2 do
    if string.sub(fields[i], -4) == '/seq' then
      seqs[string.sub(fields[i], 1, -5)] = tonumber(fields[i + 1])
    end
  end
  for i = 1, #fields, 2 do
    if string.sub(fields[i], -4) ~= '/seq' then
      holds[1][fields[i]] = {seqs[fields[i]], left}
    end
  end
end
local function leased(hash, leases, kind, roles)
  dropEnded(hash, leases, now, roles)
  local live = redis.call('ZRANGE', leases, 0, -1, 'WITHSCORES')
  for i = 1, #live, 2 do
    local _, seq = ownHold(hash, live[i])
    holds[kind][live[i]] = {seq, tonumber(live[i + 1]) - now}
  end
end
leased(KEYS[4], KEYS[5], 2)
leased(KEYS[6], KEYS[7], 3, semRoles)

if ARGV[2] == '1' then
  for kind = 1, 3 do
    for owner in pairs(holds[kind]) do
      if not named[kind][owner] then
        return -1
      end
    end
  end
end

-- The holds that go: every one, or with 'o' the named owners' alone.
local going = {{}, {}, {}}
for kind = 1, 3 do
  for owner, hold in pairs(holds[kind]) do
    if named[kind][owner] or not only then
      going[kind][owner] = hold
    end
  end
end

-- Tombstones before the deletes: a foreign key in a tombstone's place stops
-- the script with the holds still there (at worst some tombstones written,
-- each at or below its owner's applied number, which refuses nothing new).
-- Its error says whose tombstone it is, 'WRONGTYPE TYPE tombstone KIND
-- OWNER' (KIND lock, read or permits; OWNER in hex: an owner may hold any
-- bytes, which an error reply does not carry), so that the client names
-- the key; the script cannot name it (see reentrant's scriptError).
local kinds = {'lock', 'read', 'permits'}
local function hex(c)
  return string.format('%02x', string.byte(c))
end
for kind = 1, 3 do
  for owner, hold in pairs(going[kind]) do
    local seq, left = hold[1], hold[2]
    if named[kind][owner] and seq and seq > 0 and left > 0 then
      local whose = 'tombstone ' .. kinds[kind] .. ' ' .. (string.gsub(owner, '.', hex))
      bury(named[kind][owner], seq, left, whose)
    end
  end
end

-- Each kind's keys (hash, then leases) and the channels its waiters
-- listen on.
local keys = {{KEYS[1]}, {KEYS[4], KEYS[5]}, {KEYS[6], KEYS[7]}}
local channels = {{KEYS[2], KEYS[3]}, {KEYS[2]}, {KEYS[8]}}
local messages = {ARGV[1], ARGV[1], ARGV[5]}

local freed, announced = {}, {}
for kind = 1, 3 do
  freed[kind] = next(going[kind]) ~= nil
  announced[kind] = freed[kind]
  if freed[kind] and not only then
    redis.call('DEL', unpack(keys[kind]))
  elseif freed[kind] then
    local hash, leases = keys[kind][1], keys[kind][2]
    for owner in pairs(going[kind]) do
      redis.call('HDEL', hash, owner, owner .. '/seq')
      if leases then
        redis.call('ZREM', leases, owner)
      end
    end
    -- Announced when no one holds the kind here now (permits: always,
    -- since waiters may take them beside the holders left).
    if leases then
      announced[kind] = fitReaders(hash, leases, now) == 0 or kind == 3
    else
      announced[kind] = hashSize(hash) == 0
    end
  end
end
for kind = 1, 3 do
  if announced[kind] then
    for _, channel in ipairs(channels[kind]) do
      redis.call('PUBLISH', channel, messages[kind])
    end
  end
end
if freed[1] or freed[2] or freed[3] then
  return 1
end
return 0
