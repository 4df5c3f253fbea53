#!lua
-- ARGV: project, queue, client, breaker and blame split (7 args, see
-- read_rules), settle ('1': settle the consumer records of the claim ids
-- first, MessageController.delete_many's settle_claims), n, n message ids,
-- then either '*' (any message) or the claim ids whose messages may be
-- deleted (each such delete is the breaker's success). Returns the ids deleted.
local project, queue, client = ARGV[3], ARGV[4], ARGV[5]
local n = tonumber(ARGV[14])
local first = 15
local any = ARGV[first + n] == '*'
local allowed = {}
for i = first + n, #ARGV do
  allowed[ARGV[i]] = true
  if ARGV[13] == '1' and not any then
    consumer_settle(project, queue, ARGV[i], 'settle', 0)
  end
end
local qid = queue_id(project, queue)
if not qid then
  return {}
end
local rules = not any and ARGV[6] ~= '' and read_rules(6, project, queue, qid, client)
local deleted = {}
for i = first, first + n - 1 do
  local m = load_msg(ARGV[i], STATE_FIELDS)
  if m and m.q == qid and alive(m) then
    local holder = held(m) and m.claim or nil
    if any or (holder and allowed[holder]) then
      remove_msg(m)
      event(project, queue, KIND.DELETED, m.id, holder, client, m.count)
      deleted[#deleted + 1] = m.id
      if rules then
        rules.lib.breaker_success(rules, m.id, holder)
      end
    end
  end
end
return deleted
