#!lua flags=no-writes
-- No ARGV. BreakerLog.due_redrives: {project, queue, ...} of every queue
-- whose breaker closed with its auto-redrive still to run (a short set: a
-- queue leaves it when its redrive ran, or when it is purged or deleted).
breaker_lib()  -- the breaker's keys
local out = {}
for _, qid in ipairs(redis.call('SMEMBERS', K.redrive_due())) do
  local project, name = queue_names(qid)
  if project and redis.call('HGET', K.breaker(qid), 'rdue') == '1' then
    out[#out + 1] = project
    out[#out + 1] = name
  end
end
return out
