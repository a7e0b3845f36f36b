-- seminspect: read a semaphore's live holders on this node, changing
-- nothing (holders whose lease has ended are left out, not purged).
--
-- KEYS[1] permits hash   KEYS[2] leases sorted set
--
-- Returns a flat list: owner, permits, remaining lease (ms), for each live
-- holder, soonest lease end first.
return liveHolders(KEYS[1], KEYS[2], semRoles)
