#!lua flags=no-writes
-- ARGV: project, queue. Returns {free, claimed, oldest id, oldest created,
-- newest id, newest created, delayed} over alive messages ('' ids when
-- empty), or AGAIN while the queue is not settled (the caller settles it):
-- then waiting holds exactly the delayed messages. Counts come from the
-- sets' sizes: no message is read but the two ends.
local qid = queue_id(ARGV[3], ARGV[4])
if not qid then
  return {0, 0, '', '', '', '', 0}
end
if not settled(qid) then
  return AGAIN
end
local total = redis.call('ZCARD', K.order(qid))
local claimed = redis.call('ZCARD', K.held(qid))
if total == 0 then
  return {0, 0, '', '', '', '', 0}
end
local oldest = redis.call('ZRANGE', K.order(qid), 0, 0)[1]
local newest = redis.call('ZRANGE', K.order(qid), -1, -1)[1]
return {total - claimed, claimed, oldest, redis.call('HGET', K.msg(oldest), 'created'),
        newest, redis.call('HGET', K.msg(newest), 'created'),
        redis.call('ZCARD', K.waiting(qid))}
