#!lua
-- ARGV: project, queue. Removes every message and claim, keeps the queue
-- (with its metadata and metadata version): they are detached at once and
-- their keys reclaimed by gc. Returns how many messages there were.
local project, queue = ARGV[3], ARGV[4]
local qid = queue_id(project, queue)
if not qid then
  return 0
end
local n = detach_queue(project, queue, qid, true)
if n > 0 then
  event(project, queue, KIND.PURGED, nil, nil, nil, nil, {[DETAIL.MESSAGES] = n})
end
return n
