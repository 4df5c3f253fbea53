#!lua flags=no-writes
-- ARGV: project, queue. Returns the metadata JSON, or false when missing.
local qid = queue_id(ARGV[3], ARGV[4])
if not qid then
  return false
end
return redis.call('HGET', K.queue(qid), 'meta')
