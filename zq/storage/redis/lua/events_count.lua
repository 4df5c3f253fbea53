#!lua flags=no-writes
-- ARGV: cursor ('' = from the start; exclusive otherwise). Returns how many
-- events come after it, counted a page at a time.
local start = ARGV[3] == '' and '-' or '(' .. ARGV[3]
local total = 0
while true do
  local page = redis.call('XRANGE', K.events(), start, '+', 'COUNT', 1000)
  total = total + #page
  if #page < 1000 then
    return total
  end
  start = '(' .. page[#page][1]
end
