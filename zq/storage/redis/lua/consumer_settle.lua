#!lua
-- ARGV: project, queue, claim id, mode ('settle', 'end' or 'renew'), ttl.
-- ConsumerLog.settle (mode 'end': a release) and ConsumerLog.extend
-- (mode 'renew'); an unknown claim id changes nothing.
local project, queue, cid, mode = ARGV[3], ARGV[4], ARGV[5], ARGV[6]
local log, by_expiry = K.consumers(project, queue), K.consumer_expiry(project, queue)
local found = redis.call('HGET', log, cid)
if not found then
  return 0
end
local ttl, claimed, expires, settled, client =
  string.match(found, '^([^|]*)|([^|]*)|([^|]*)|([^|]*)|(.*)$')
local live = tonumber(expires) > NOW
if mode == 'renew' and live then
  ttl = ARGV[7]
  expires = fmt(NOW + tonumber(ttl))
else
  if settled == '' then
    settled = NOW_S
  end
  if mode == 'end' and live then
    expires = NOW_S
  end
end
redis.call('HSET', log, cid, ttl .. '|' .. claimed .. '|' .. expires .. '|' .. settled .. '|' .. client)
redis.call('ZADD', by_expiry, expires, cid)
return 1
