#!lua flags=no-writes
-- ARGV: project, queue. Returns {free, claimed, oldest id, oldest created,
-- newest id, newest created} over alive messages ('' ids when empty), or
-- AGAIN while the queue holds expired messages (the caller settles it).
-- Counts come from the sets' sizes: no message is read but the two ends.
local qid = queue_id(ARGV[3], ARGV[4])
if not qid then
  return {0, 0, '', '', '', ''}
end
if due(K.expiry(qid)) then
  return AGAIN
end
local total = redis.call('ZCARD', K.order(qid))
local claimed = redis.call('ZCOUNT', K.held(qid), '(' .. NOW_S, '+inf')
if total == 0 then
  return {0, 0, '', '', '', ''}
end
local oldest = redis.call('ZRANGE', K.order(qid), 0, 0)[1]
local newest = redis.call('ZRANGE', K.order(qid), -1, -1)[1]
return {total - claimed, claimed, oldest, redis.call('HGET', K.msg(oldest), 'created'),
        newest, redis.call('HGET', K.msg(newest), 'created')}
