#!lua
-- ARGV: project, queue, id, subscriber, ttl, options JSON ('' each: keep).
-- Returns 1 when updated, 0 when no live subscription has the id, -1
-- (nothing changed) when another live subscription holds the subscriber.
local project, queue, sid = ARGV[3], ARGV[4], ARGV[5]
local subscriber, ttl, options = ARGV[6], ARGV[7], ARGV[8]
local current = live_subscription(sid, project, queue)
if not current then
  return 0
end
if subscriber ~= '' and subscriber ~= current[1] then
  if subscriber_holder(project, queue, subscriber) then
    return -1
  end
  local by = K.sub_by(project, queue)
  redis.call('HDEL', by, current[1])
  redis.call('HSET', by, subscriber, sid)
  redis.call('HSET', K.sub(sid), 'subscriber', subscriber)
end
if ttl ~= '' then
  local expires = NOW + tonumber(ttl)
  redis.call('HSET', K.sub(sid), 'ttl', ttl, 'expires', fmt(expires))
  redis.call('ZADD', K.sub_expiry(), expires, sid)
end
if options ~= '' then
  redis.call('HSET', K.sub(sid), 'options', options)
end
return 1
