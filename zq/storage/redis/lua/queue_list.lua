#!lua flags=no-writes
-- ARGV: project, marker ('' = from the start), limit (-1 = all), name filter.
-- Returns {name, metadata JSON, ...} ordered by name.
local project, marker, limit, needle = ARGV[3], ARGV[4], tonumber(ARGV[5]), ARGV[6]
local key = K.project(project)
local start = marker == '' and '-' or '(' .. marker
local out, found = {}, 0
while limit < 0 or found < limit do
  local names = redis.call('ZRANGEBYLEX', key, start, '+', 'LIMIT', 0, 200)
  if #names == 0 then
    break
  end
  for _, name in ipairs(names) do
    start = '(' .. name
    if needle == '' or string.find(name, needle, 1, true) then
      local qid = queue_id(project, name)
      out[#out + 1] = name
      out[#out + 1] = qid and redis.call('HGET', K.queue(qid), 'meta') or '{}'
      found = found + 1
      if found == limit then
        break
      end
    end
  end
end
return out
