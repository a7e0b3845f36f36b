-- fence: raise the fencing counter of a lock to at least a value. The counter
-- never goes down, so a token written back to a quorum stays the floor for
-- every later acquire that reaches a quorum.
--
-- KEYS[1] fencing counter
-- ARGV[1] token
--
-- Returns the counter before the call. One at or above the token means the
-- token may have been handed out already: an acquire can read a node's
-- counter before an earlier holder's write-back lands there (a node that
-- earlier holder never held), and draw the same token (found by the SPIN
-- model, model/README.md). The caller then draws again above it.
local current = fenceCounter(KEYS[1])
local token = tonumber(ARGV[1])
if token > current then
  redis.call('SET', KEYS[1], ARGV[1])
end
return current
