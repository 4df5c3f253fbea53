#!lua
-- ARGV: project, queue, subscriber, new id, ttl, options JSON.
-- Returns the new id, or nil (nothing changed) when a live subscription
-- of the subscriber to the queue exists; an expired one is replaced.
local project, queue, subscriber, sid = ARGV[3], ARGV[4], ARGV[5], ARGV[6]
local ttl = tonumber(ARGV[7])
if subscriber_holder(project, queue, subscriber) then
  return false
end
local expires = NOW + ttl
redis.call('HSET', K.sub(sid), 'project', project, 'queue', queue, 'subscriber', subscriber,
           'ttl', ARGV[7], 'created', NOW_S, 'expires', fmt(expires), 'options', ARGV[8],
           'confirmed', '0')
redis.call('ZADD', K.sub_ids(project, queue), 0, sid)
redis.call('HSET', K.sub_by(project, queue), subscriber, sid)
redis.call('ZADD', K.sub_expiry(), expires, sid)
return sid
