-- semaphore: helpers shared by the semaphore's scripts (semacquire.lua,
-- semrelease.lua, semrenew.lua, seminspect.lua); lua.go puts this text
-- after prelude.lua and before each of them.
--
-- A semaphore on one node is kept as an RWMutex's readers are (see the
-- readers' helpers in prelude.lua, which these scripts use), in two keys
-- with the same {NAME} hash tag:
--   permits  a hash: OWNER = the permits it holds, OWNER/seq = the sequence
--            number of its last applied operation;
--   leases   a sorted set: OWNER scored by the end of its lease, in this
--            server's time (ms, from TIME), so each holder's lease is its
--            own: one holder renewing keeps no other holder alive.
--   and, in the permits hash, the field '/capacity': the capacity k the
--            holders gave (see capacityOf).
-- Both keys live as long as the last lease (fitReaders); every script
-- first drops the holders whose lease has ended (dropEnded), so an expired
-- holder's permits are free to the very next call, whoever makes it.

-- semRoles names the semaphore's keys in a foreign-data error.
local semRoles = {'permits', 'leases'}

-- capacityField keeps, in the permits hash, the capacity its holders gave.
-- No holder's field can be it: an owner is CLIENTID:OWNERID, and its other
-- field OWNER/seq, neither of which begins with '/'.
local capacityField = '/capacity'

-- capacityOf returns the capacity stored in the permits hash, or nil when
-- no one holds permits. The first holder stores it; every new holder must
-- give the same, or the count each node keeps and the quorum each client
-- asks for would not be of one semaphore (a client of k = 3 would take a
-- third permit while one of k = 2 holds two). It goes with the keys when the
-- last holder leaves, so an idle semaphore can be given a new capacity.
-- A stored value that is not a whole number of permits, written in plain
-- decimal digits as relock writes it, is foreign data: read as none, an
-- acquire would write its own over it; read by tonumber, "1.5", "0" or
-- "0x10" would pass for a capacity. The caller checked that permits is a
-- hash, or no key.
local function capacityOf(permits)
  local stored = redis.call('HGET', permits, capacityField)
  if not stored then
    return nil
  end
  if not string.find(stored, '^[1-9]%d*$') then
    foreign(permits, semRoles[1])
  end
  return tonumber(stored)
end

-- others returns the permits held by live holders other than owner, and
-- the end of the soonest of their leases (0 when there is none).
local function others(permits, leases, owner)
  local live = redis.call('ZRANGE', leases, 0, -1, 'WITHSCORES')
  local used, soonest = 0, 0
  for i = 1, #live, 2 do
    local who = live[i]
    if who ~= owner then
      used = used + tonumber(redis.call('HGET', permits, who) or '0')
      if soonest == 0 then
        soonest = tonumber(live[i + 1])
      end
    end
  end
  return used, soonest
end

-- releaseStart runs the checks a release begins with (as release.lua's),
-- on the owner's hold in the hash key: it returns the reply to give at
-- once, 0 when the owner holds nothing here (a release to count 0 still
-- buries its sequence number in tomb: it may be the undo of an acquire
-- that has not landed yet, see release.lua; 2 when that number was
-- buried already, see goneBefore), 1 when a newer operation of
-- the owner already applied (a retry or a straggler); or nil and the
-- owner's stored value when the release goes on.
local function releaseStart(key, owner, tomb, count, seq, lease)
  local held, last = ownHold(key, owner)
  if not held then
    if count == 0 then
      return goneBefore(tomb, seq, lease)
    end
    return 0
  end
  if seq <= last then
    return 1
  end
  return nil, held
end
