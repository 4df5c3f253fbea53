#!lua
-- ARGV: project, queue, claim id, client. Frees a live claim's messages
-- and forgets the claim; an expired or unknown claim is left to gc.
local project, queue, cid, client = ARGV[3], ARGV[4], ARGV[5], ARGV[6]
local qid = queue_id(project, queue)
local c = redis.call('HMGET', K.claim(cid), 'q', 'expires')
if not qid or c[1] ~= qid or tonumber(c[2]) <= NOW then
  return 0
end
for _, m in ipairs(held_by(cid, true)) do
  -- The backoff its claim gave it starts now.
  m.delay = fmt(NOW + carried_backoff(m))
  redis.call('HSET', K.msg(m.id), 'claim', '', 'cexp', '0', 'delay', m.delay)
  unhold(m)
  event(project, queue, KIND.RELEASED, m.id, cid, client, m.count)
end
redis.call('DEL', K.claim(cid), K.claim_msgs(cid))
redis.call('ZREM', K.claim_expiry(), cid)
redis.call('SREM', K.qclaims(qid), cid)
return 1
