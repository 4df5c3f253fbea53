#!lua
-- ARGV: project, queue. Removes the queue with its messages and claims
-- (detached at once, their keys reclaimed by gc).
local project, queue = ARGV[3], ARGV[4]
local qid = queue_id(project, queue)
if not qid then
  return 0
end
local n = detach_queue(project, queue, qid, false)
if n > 0 then
  event(project, queue, KIND.PURGED, nil, nil, nil, nil,
        {[DETAIL.MESSAGES] = n, [DETAIL.QUEUE_DELETED] = true})
end
return n
