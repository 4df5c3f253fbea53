#!lua flags=no-writes
-- ARGV: project, queue, message ids. Returns the alive ones of the queue.
local qid = queue_id(ARGV[3], ARGV[4])
local out = {}
if not qid then
  return out
end
for i = 5, #ARGV do
  local m = load_msg(ARGV[i])
  if m and m.q == qid and alive(m) then
    out[#out + 1] = record(m)
  end
end
return out
