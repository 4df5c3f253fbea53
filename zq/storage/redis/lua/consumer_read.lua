#!lua flags=no-writes
-- ARGV: project, queue, expires after. The queue's consumer log records
-- with expires >= the bound, as {claim id, record} pairs.
local project, queue = ARGV[3], ARGV[4]
local log, by_expiry = K.consumers(project, queue), K.consumer_expiry(project, queue)
local out = {}
for _, id in ipairs(redis.call('ZRANGEBYSCORE', by_expiry, ARGV[5], '+inf')) do
  local found = redis.call('HGET', log, id)
  if found then
    out[#out + 1] = id
    out[#out + 1] = found
  end
end
return out
