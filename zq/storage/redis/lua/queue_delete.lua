#!lua
-- ARGV: project, queue. Removes the queue with its messages and claims.
local project, queue = ARGV[3], ARGV[4]
local qid = queue_id(project, queue)
if not qid then
  return 0
end
local n = clear_queue(qid)
redis.call('DEL', K.queue(qid))
redis.call('HDEL', K.catalog(), enc(project) .. queue)
redis.call('ZREM', K.project(project), queue)
if n > 0 then
  event(project, queue, 'purged', nil, nil, nil, nil, {messages = n, queue_deleted = true})
end
return n
