#!lua
-- ARGV: project, queue, metadata JSON, expected metadata version, links
-- version (both '-': not checked), expiry move (wire.expiry_arg; '' = none). Returns 0 when the queue is missing,
-- STALE (changing nothing) when a version moved, 1 when written.
local project = ARGV[3]
local qid = queue_id(project, ARGV[4])
if not qid then
  return 0
end
if stale_metadata(6, qid) or stale_links(7, project) then
  return STALE
end
redis.call('HSET', K.queue(qid), 'meta', ARGV[5])
redis.call('HINCRBY', K.queue(qid), 'mv', 1)
set_expiry_move(qid, ARGV[8])
advance_links(7, project)
return 1
