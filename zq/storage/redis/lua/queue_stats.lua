#!lua flags=no-writes
-- ARGV: project, queue. Returns {free, claimed, oldest id, oldest created,
-- newest id, newest created} over alive messages ('' ids when empty).
local qid = queue_id(ARGV[3], ARGV[4])
local free, claimed = 0, 0
local oldest, newest = {'', ''}, {'', ''}
if not qid then
  return {0, 0, '', '', '', ''}
end
local after = '-inf'
while true do
  local page = redis.call('ZRANGEBYSCORE', K.order(qid), after, '+inf', 'WITHSCORES', 'LIMIT', 0, 500)
  if #page == 0 then
    break
  end
  for i = 1, #page, 2 do
    after = '(' .. page[i + 1]
    local m = load_msg(page[i])
    if m and alive(m) then
      if held(m) then
        claimed = claimed + 1
      else
        free = free + 1
      end
      if oldest[1] == '' then
        oldest = {m.id, m.created}
      end
      newest = {m.id, m.created}
    end
  end
end
return {free, claimed, oldest[1], oldest[2], newest[1], newest[2]}
