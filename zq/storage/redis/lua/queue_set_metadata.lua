#!lua
-- ARGV: project, queue, metadata JSON. Returns 0 when the queue is missing.
local qid = queue_id(ARGV[3], ARGV[4])
if not qid then
  return 0
end
redis.call('HSET', K.queue(qid), 'meta', ARGV[5])
redis.call('HINCRBY', K.queue(qid), 'mv', 1)
return 1
