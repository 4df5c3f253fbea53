#!lua
-- ARGV: project, queue, id. Removes the subscription when it belongs to
-- the queue (live or expired); returns 1 if removed, else 0.
local sid = ARGV[5]
local s = redis.call('HMGET', K.sub(sid), 'project', 'queue')
if s[1] ~= ARGV[3] or s[2] ~= ARGV[4] then
  return 0
end
return drop_subscription(sid)
