#!lua
-- ARGV: project, queue, metadata JSON, links version ('-': not checked),
-- expiry move (wire.expiry_arg; '' = none).
-- Returns 1 if created, 0 if it existed, STALE (nothing created) when the
-- links version moved.
local project, queue = ARGV[3], ARGV[4]
if queue_id(project, queue) then
  return 0
end
if stale_links(6, project) then
  return STALE
end
local qid = ensure_queue(project, queue, ARGV[5])
set_expiry_move(qid, ARGV[7])
advance_links(6, project)
return 1
