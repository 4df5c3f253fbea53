#!lua
-- ARGV: project, queue. Removes every message and claim, keeps the queue.
local project, queue = ARGV[3], ARGV[4]
local qid = queue_id(project, queue)
if not qid then
  return 0
end
local n = clear_queue(qid)
if n > 0 then
  event(project, queue, 'purged', nil, nil, nil, nil, {messages = n})
end
return n
