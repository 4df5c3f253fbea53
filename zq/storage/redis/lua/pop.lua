#!lua
-- ARGV: project, queue, limit, client, policy (6 args, see read_policy),
-- metadata version. Returns the popped messages with their new claim
-- counts, or STALE.
local project, queue, limit, client = ARGV[3], ARGV[4], tonumber(ARGV[5]), ARGV[6]
local policy = read_policy(7)
local qid = queue_id(project, queue)
if stale_metadata(13, qid) then
  return STALE
end
if not qid then
  return {}
end
return take_batch(project, queue, qid, limit, policy, client, function(m)
  m.count = tostring(tonumber(m.count) + 1)
  remove_msg(m)
  event(project, queue, 'deleted', m.id, nil, client, m.count, {pop = true})
  m.claim = ''
  return record(m)
end)
