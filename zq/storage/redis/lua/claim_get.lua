#!lua flags=no-writes
-- ARGV: project, queue, claim id. Returns {ttl, grace, created, expires,
-- {message}...} for a live claim of the queue, or false.
local qid = queue_id(ARGV[3], ARGV[4])
local cid = ARGV[5]
local c = redis.call('HMGET', K.claim(cid), 'q', 'ttl', 'grace', 'created', 'expires')
if not qid or c[1] ~= qid or tonumber(c[5]) <= NOW then
  return false
end
local out = {c[2], c[3], c[4], c[5]}
for _, m in ipairs(held_by(cid, false)) do
  out[#out + 1] = record(m)
end
return out
