-- seminspect: read a semaphore's live holders on this node, changing
-- nothing (holders whose lease has ended are left out, not purged).
--
-- KEYS[1] permits hash   KEYS[2] leases sorted set
--
-- Returns {holders, capacity}: holders a flat list of owner, permits,
-- remaining lease (ms), for each live holder, soonest lease end first;
-- capacity the one its holders gave (see capacityOf), 0 when none is
-- recorded.
return {liveHolders(KEYS[1], KEYS[2], semRoles), capacityOf(KEYS[1]) or 0}
