#!lua
-- ARGV: project, queue, limit, client, policy (8 args, see read_policy),
-- metadata version, budget (2 args, see read_budget). Returns the popped
-- messages with their new claim counts, STALE, or AGAIN when the budget
-- ran out before any message was popped.
local project, queue, limit, client = ARGV[3], ARGV[4], tonumber(ARGV[5]), ARGV[6]
local policy = read_policy(7)
local budget = read_budget(16)
local qid = queue_id(project, queue)
if stale_metadata(15, qid) then
  return STALE
end
if not qid then
  return {}
end
if not settle(qid, budget) then
  return AGAIN
end
local taken, exhausted = take_batch(project, queue, qid, limit, policy, client, budget,
                                    function(m)
  m.count = tostring(tonumber(m.count) + 1)
  remove_msg(m)
  event(project, queue, KIND.DELETED, m.id, nil, client, m.count, {[DETAIL.POP] = true})
  m.claim = ''
  return record(m)
end)
if #taken == 0 and exhausted then
  return AGAIN
end
return taken
