#!lua
-- ARGV: project, queue, claim id, client. Frees a live claim's messages
-- and forgets the claim; an expired or unknown claim is left to gc.
local project, queue, cid, client = ARGV[3], ARGV[4], ARGV[5], ARGV[6]
local qid = queue_id(project, queue)
local c = redis.call('HMGET', K.claim(cid), 'q', 'expires')
if not qid or c[1] ~= qid or tonumber(c[2]) <= NOW then
  return 0
end
for _, id in ipairs(redis.call('SMEMBERS', K.claim_msgs(cid))) do
  local m = load_msg(id)
  if m and m.claim == cid and alive(m) then
    redis.call('HSET', K.msg(id), 'claim', '', 'cexp', '0')
    event(project, queue, 'released', id, cid, client, m.count)
  end
end
redis.call('DEL', K.claim(cid), K.claim_msgs(cid))
redis.call('ZREM', K.claim_expiry(), cid)
redis.call('SREM', K.qclaims(qid), cid)
return 1
