#!lua
-- ARGV: project, queue, claim id, ttl, grace, client.
-- Returns 1 when renewed, 0 when no live claim has that id in the queue.
local project, queue, cid = ARGV[3], ARGV[4], ARGV[5]
local ttl, grace, client = tonumber(ARGV[6]), tonumber(ARGV[7]), ARGV[8]
local qid = queue_id(project, queue)
local c = redis.call('HMGET', K.claim(cid), 'q', 'expires')
if not qid or c[1] ~= qid or tonumber(c[2]) <= NOW then
  return 0
end
local cexp = NOW + ttl
local min_expires = cexp + grace
redis.call('HSET', K.claim(cid), 'ttl', ttl, 'grace', grace, 'expires', fmt(cexp))
redis.call('ZADD', K.claim_expiry(), fmt(cexp), cid)
for _, m in ipairs(held_by(cid, true)) do
  local expires = math.max(tonumber(m.expires), min_expires)
  -- The backoff its claim gave it moves with the claim's expiry.
  local carried = carried_backoff(m)
  local delay = fmt(cexp + carried)
  redis.call('HSET', K.msg(m.id), 'cexp', fmt(cexp), 'expires', fmt(expires), 'delay', delay)
  if carried > 0 then
    redis.call('ZADD', K.backoff(qid), delay, m.id)
  end
  redis.call('ZADD', K.expiry(qid), fmt(expires), m.id)
  redis.call('ZADD', K.held(qid), fmt(cexp), m.id)
  event(project, queue, KIND.RENEWED, m.id, cid, client, m.count)
end
return 1
