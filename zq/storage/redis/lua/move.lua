#!lua
-- ARGV: project, queue, claim id ('' = none), client, move (wire.MOVE_ARGS
-- args, see read_move), breaker and blame split (7 args, see read_rules),
-- terminal reject ('1': a reject by the claim's holder, a failure for the
-- breaker), its description ('1' when there is one, then its stored text),
-- the event detail of a terminal reject held as a retry (JSON), then
-- message ids. Moves the alive listed messages of the queue as
-- zq.storage.base.check_move allows, in queue order; a terminal reject
-- while the breaker is open is held as a retry reject instead (its id is
-- returned as if moved). Returns {0, moved ids...}, or {2, id} (nothing
-- moved) when a claim id was given and the alive message ``id`` is not held
-- by that live claim.
local project, queue, cid, client = ARGV[3], ARGV[4], ARGV[5], ARGV[6]
local mv = read_move(7)
local terminal = ARGV[21] == '1' and cid ~= ''
local desc = ARGV[22] == '1' and ARGV[23] or nil
local first_id = 25
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
local rules = terminal and ARGV[14] ~= '' and read_rules(14, project, queue, qid, client)
local out = {0}
local seen = {}
for _, m in ipairs(chosen) do
  if not seen[m.id] then
    seen[m.id] = true
    if rules and rules.lib.breaker_reject(rules, m.id, cid, desc) then
      -- Held: a retry reject with the backoff its claim gave it.
      m.delay = fmt(NOW + carried_backoff(m))
      redis.call('SREM', K.claim_msgs(cid), m.id)
      redis.call('HSET', K.msg(m.id), 'claim', '', 'cexp', '0', 'delay', m.delay)
      unhold(m)
      rules.lib.hold_probe(rules, m.id)
      event(project, queue, KIND.REJECTED, m.id, cid, client, m.count, cjson.decode(ARGV[24]))
    else
      move_msg(m, project, queue, mv, cid, client)
    end
    out[#out + 1] = m.id
  end
end
return out
