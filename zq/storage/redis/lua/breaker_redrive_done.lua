#!lua
-- ARGV: project, queue, closed at. BreakerLog.redrive_done: the auto-redrive
-- of the outage that closed at that time ran; a later close keeps its own.
local qid = queue_id(ARGV[3], ARGV[4])
breaker_lib()  -- the breaker's keys
if not qid then
  return 0
end
local closed = redis.call('HGET', K.breaker(qid), 'closed')
if closed and tonumber(closed) == tonumber(ARGV[5]) then
  redis.call('HDEL', K.breaker(qid), 'rdue')
  redis.call('SREM', K.redrive_due(), qid)
  return 1
end
return 0
