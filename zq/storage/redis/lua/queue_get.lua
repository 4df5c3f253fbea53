#!lua flags=no-writes
-- ARGV: project, queue. Returns {metadata JSON, metadata version}, or
-- false when the queue is missing.
local qid = queue_id(ARGV[3], ARGV[4])
if not qid then
  return false
end
return {redis.call('HGET', K.queue(qid), 'meta'), meta_version(qid)}
