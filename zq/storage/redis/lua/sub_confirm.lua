#!lua
-- ARGV: project, queue, id, confirmed ('1' or '0').
-- Returns 1 when set, 0 when no live subscription of the queue has the id.
local sid = ARGV[5]
if not live_subscription(sid, ARGV[3], ARGV[4]) then
  return 0
end
redis.call('HSET', K.sub(sid), 'confirmed', ARGV[6])
return 1
