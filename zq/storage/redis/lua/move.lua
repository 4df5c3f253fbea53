#!lua
-- ARGV: project, queue, claim id ('' = none), client, move (wire.MOVE_ARGS
-- args, see read_move), then message ids. Moves the alive listed messages
-- of the queue as zq.storage.base.check_move allows, in queue order.
-- Returns {0, moved ids...}, or {2, id} (nothing moved) when a claim id was
-- given and the alive message ``id`` is not held by that live claim.
local project, queue, cid, client = ARGV[3], ARGV[4], ARGV[5], ARGV[6]
local mv = read_move(7)
local first_id = 14
local qid = queue_id(project, queue)
if not qid then
  return {0}
end
local chosen = {}
-- Everything checked before the first write: a mismatch moves nothing.
for i = first_id, #ARGV do
  local m = load_msg(ARGV[i])
  if m and m.q == qid and alive(m) then
    local holder = held(m) and m.claim or ''
    if cid == '' then
      if holder == '' then
        chosen[#chosen + 1] = m
      end
    elseif holder ~= cid then
      return {2, m.id}
    else
      chosen[#chosen + 1] = m
    end
  end
end
table.sort(chosen, function(a, b) return tonumber(a.marker) < tonumber(b.marker) end)
local out = {0}
local seen = {}
for _, m in ipairs(chosen) do
  if not seen[m.id] then
    seen[m.id] = true
    move_msg(m, project, queue, mv, cid, client)
    out[#out + 1] = m.id
  end
end
return out
