#!lua
-- ARGV: project, queue, claim id, ttl, claimed, expires, settled ('':
-- none), client, forget before. Remembers a claim in the consumer log and forgets the queue's
-- records that expired before the bound (ConsumerLog.record).
local project, queue, cid = ARGV[3], ARGV[4], ARGV[5]
local log, by_expiry = K.consumers(project, queue), K.consumer_expiry(project, queue)
local old = redis.call('ZRANGEBYSCORE', by_expiry, '-inf', '(' .. ARGV[11])
for _, id in ipairs(old) do
  redis.call('HDEL', log, id)
end
redis.call('ZREMRANGEBYSCORE', by_expiry, '-inf', '(' .. ARGV[11])
redis.call('HSET', log, cid, ARGV[6] .. '|' .. ARGV[7] .. '|' .. ARGV[8] .. '|' .. ARGV[9] .. '|' .. ARGV[10])
redis.call('ZADD', by_expiry, ARGV[8], cid)
return 1
