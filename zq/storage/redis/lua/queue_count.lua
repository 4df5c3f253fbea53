#!lua flags=no-writes
-- ARGV: project, name filter ('' = none). Returns how many queues
-- queue_list would list without paging. Reads names only, never metadata:
-- without a filter one ZCARD; with one, the project's names in chunks.
local project, needle = ARGV[3], ARGV[4]
local key = K.project(project)
if needle == '' then
  return redis.call('ZCARD', key)
end
local count, start = 0, '-'
while true do
  local names = redis.call('ZRANGEBYLEX', key, start, '+', 'LIMIT', 0, 1000)
  if #names == 0 then
    return count
  end
  for _, name in ipairs(names) do
    if string.find(name, needle, 1, true) then
      count = count + 1
    end
  end
  start = '(' .. names[#names]
end
