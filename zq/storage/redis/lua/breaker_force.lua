#!lua
-- ARGV: project, queue, state (open or closed), breaker (7 args, see
-- read_rules). BreakerLog.force: opened as by a trip or closed as by the
-- probes, with a ``breaker`` event saying it was forced; the state it is
-- already in (half-open counts as open) changes nothing. Returns the new
-- state as breaker_read does (a missing queue: nothing stored).
local project, queue, wanted = ARGV[3], ARGV[4], ARGV[5]
local qid = queue_id(project, queue)
local rules = qid and read_rules(6, project, queue, qid, '')
local lib = breaker_lib()
if not rules then
  return lib.breaker_state(nil, 0)
end
local b = lib.load_breaker(qid)
if wanted == lib.BREAKER.OPEN and b.st == lib.BREAKER.CLOSED then
  lib.open_breaker(rules, b, true)
elseif wanted == lib.BREAKER.CLOSED and b.st ~= lib.BREAKER.CLOSED then
  lib.close_breaker(rules, b, true)
end
return lib.breaker_state(qid, rules.window)
