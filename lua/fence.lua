-- fence: raise the fencing counter of a lock to at least a value. The counter
-- never goes down, so a token written back to a quorum stays the floor for
-- every later acquire that reaches a quorum.
--
-- KEYS[1] fencing counter
-- ARGV[1] token
--
-- Returns the counter after the call.
local current = fenceCounter(KEYS[1])
local token = tonumber(ARGV[1])
if token > current then
  redis.call('SET', KEYS[1], ARGV[1])
  return token
end
return current
