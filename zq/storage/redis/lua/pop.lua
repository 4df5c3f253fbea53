#!lua
-- ARGV: project, queue, limit, client, policy (8 args, see read_policy),
-- metadata version, budget (2 args, see read_budget), breaker and blame
-- split (7 args, see read_rules). Returns the popped messages with their new
-- claim counts, STALE, or AGAIN when the budget ran out before any message
-- was popped. An open or half-open breaker pops nothing.
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
local rules = read_rules(18, project, queue, qid, client)
if rules and not rules.lib.breaker_closed(rules) then
  return {}
end
local taken, exhausted = take_batch(project, queue, qid, limit, policy, client, budget,
                                    function(m)
  m.count = tostring(tonumber(m.count) + 1)
  remove_msg(m)
  event(project, queue, KIND.DELETED, m.id, nil, client, m.count, {[DETAIL.POP] = true})
  m.claim = ''
  return record(m)
end, rules)
if #taken == 0 and exhausted then
  return AGAIN
end
return taken
