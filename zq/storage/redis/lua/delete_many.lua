#!lua
-- ARGV: project, queue, client, n, n message ids, then either '*' (any
-- message) or the claim ids whose messages may be deleted.
-- Returns the ids deleted.
local project, queue, client = ARGV[3], ARGV[4], ARGV[5]
local n = tonumber(ARGV[6])
local any = ARGV[7 + n] == '*'
local allowed = {}
for i = 7 + n, #ARGV do
  allowed[ARGV[i]] = true
end
local qid = queue_id(project, queue)
if not qid then
  return {}
end
local deleted = {}
for i = 7, 6 + n do
  local m = load_msg(ARGV[i], STATE_FIELDS)
  if m and m.q == qid and alive(m) then
    local holder = held(m) and m.claim or nil
    if any or (holder and allowed[holder]) then
      remove_msg(m)
      event(project, queue, KIND.DELETED, m.id, holder, client, m.count)
      deleted[#deleted + 1] = m.id
    end
  end
end
return deleted
