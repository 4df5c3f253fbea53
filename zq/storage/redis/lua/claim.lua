#!lua
-- ARGV: project, queue, claim id, ttl, grace, limit, client, policy (6 args,
-- see read_policy), metadata version. Returns the delivered messages
-- (empty: no claim made), or STALE.
local project, queue, cid = ARGV[3], ARGV[4], ARGV[5]
local ttl, grace, limit, client = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8]), ARGV[9]
local policy = read_policy(10)
local qid = queue_id(project, queue)
if stale_metadata(16, qid) then
  return STALE
end
if not qid then
  return {}
end
local cexp = NOW + ttl
local min_expires = cexp + grace
local taken = take_batch(project, queue, qid, limit, policy, client, function(m)
  local count = tonumber(m.count) + 1
  local expires = math.max(tonumber(m.expires), min_expires)
  m.claim, m.cexp, m.count, m.expires = cid, fmt(cexp), tostring(count), fmt(expires)
  redis.call('HSET', K.msg(m.id), 'claim', cid, 'cexp', m.cexp, 'count', count, 'expires', m.expires)
  redis.call('ZADD', K.msg_expiry(), expires, m.id)
  redis.call('SADD', K.claim_msgs(cid), m.id)
  event(project, queue, 'claimed', m.id, cid, client, count)
  return record(m)
end)
if #taken > 0 then
  redis.call('HSET', K.claim(cid), 'q', qid, 'ttl', ttl, 'grace', grace, 'created', NOW_S,
             'expires', fmt(cexp), 'client', client)
  redis.call('ZADD', K.claim_expiry(), cexp, cid)
  redis.call('SADD', K.qclaims(qid), cid)
end
return taken
