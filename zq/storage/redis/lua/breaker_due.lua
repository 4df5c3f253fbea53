#!lua flags=no-writes
-- ARGV: none. BreakerLog.due_redrives: {project, name} of every queue whose
-- breaker closed after an outage and whose auto-redrive has not run (the
-- set is kept by close_breaker, breaker_redrive_done and detach_queue).
local due = {}
for _, qid in ipairs(redis.call('SMEMBERS', K.due_redrives())) do
  if redis.call('HGET', K.breaker(qid), 'rdue') == '1' then
    local q = redis.call('HMGET', K.queue(qid), 'project', 'name')
    if q[1] and q[2] then
      due[#due + 1] = {q[1], q[2]}
    end
  end
end
return due
