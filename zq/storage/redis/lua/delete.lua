#!lua
-- ARGV: project, queue, message id, claim id ('' = none), client, settle
-- ('1': settle the claim's consumer record first, MessageController.delete's
-- settle_claim, whatever the answer), breaker and blame split (7 args, see
-- read_rules: a delete by the claim's holder is the breaker's success).
-- Returns 0 (deleted or nothing to delete), 1 (claimed, no claim id given)
-- or 2 (the claim id given does not hold the message).
local project, queue, id, cid, client = ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7]
if ARGV[8] == '1' and cid ~= '' then
  consumer_settle(project, queue, cid, 'settle', 0)
end
local qid = queue_id(project, queue)
if not qid then
  return 0
end
local m = load_msg(id, STATE_FIELDS)
if not m or m.q ~= qid or not alive(m) then
  return 0
end
if cid == '' then
  if held(m) then
    return 1
  end
elseif not (held(m) and m.claim == cid) then
  return 2
end
local holder = held(m) and m.claim or nil
remove_msg(m)
event(project, queue, KIND.DELETED, id, holder, client, m.count)
if holder and ARGV[9] ~= '' then
  local rules = read_rules(9, project, queue, qid, client)
  rules.lib.breaker_success(rules, id, holder)
end
return 0
