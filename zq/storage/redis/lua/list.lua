#!lua flags=no-writes
-- ARGV: project, queue, marker ('' = from the start), limit, echo ('1'/''),
-- client, include claimed ('1'/''), include delayed ('1'/'').
-- Returns alive messages in queue order that pass the filters.
local qid = queue_id(ARGV[3], ARGV[4])
local marker, limit = ARGV[5], tonumber(ARGV[6])
local echo, client = ARGV[7] == '1', ARGV[8]
local with_claimed, with_delayed = ARGV[9] == '1', ARGV[10] == '1'
if not qid then
  return {}
end
local after = marker == '' and '-inf' or '(' .. marker
local out = {}
while #out < limit do
  local page = redis.call('ZRANGEBYSCORE', K.order(qid), after, '+inf', 'WITHSCORES', 'LIMIT', 0, 200)
  if #page == 0 then
    break
  end
  for i = 1, #page, 2 do
    after = '(' .. page[i + 1]
    local m = load_msg(page[i])
    if m and alive(m)
        and (echo or client == '' or m.client ~= client)
        and (with_claimed or not held(m))
        and (with_delayed or tonumber(m.delay) <= NOW) then
      out[#out + 1] = record(m)
      if #out >= limit then
        break
      end
    end
  end
end
return out
