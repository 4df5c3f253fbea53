#!lua
-- ARGV: project, queue, claim id, ttl, grace, limit, client, policy (6 args,
-- see read_policy), metadata version, budget (2 args, see read_budget).
-- Returns the delivered messages (empty: no claim made), STALE, or AGAIN
-- when the budget ran out before any message was delivered.
local project, queue, cid = ARGV[3], ARGV[4], ARGV[5]
local ttl, grace, limit, client = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8]), ARGV[9]
local policy = read_policy(10)
local budget = read_budget(17)
local qid = queue_id(project, queue)
if stale_metadata(16, qid) then
  return STALE
end
if not qid then
  return {}
end
if not settle(qid, budget) then
  return AGAIN
end
local cexp = NOW + ttl
local min_expires = cexp + grace
local taken, exhausted = take_batch(project, queue, qid, limit, policy, client, budget,
                                    function(m)
  local count = tonumber(m.count) + 1
  local expires = math.max(tonumber(m.expires), min_expires)
  m.claim, m.cexp, m.count, m.expires = cid, fmt(cexp), tostring(count), fmt(expires)
  redis.call('HSET', K.msg(m.id), 'claim', cid, 'cexp', m.cexp, 'count', count, 'expires', m.expires)
  redis.call('ZREM', K.ready(qid), m.id)
  redis.call('ZADD', K.held(qid), m.cexp, m.id)
  redis.call('ZADD', K.expiry(qid), m.expires, m.id)
  redis.call('SADD', K.claim_msgs(cid), m.id)
  event(project, queue, 'claimed', m.id, cid, client, count)
  return record(m)
end)
if #taken == 0 then
  return exhausted and AGAIN or {}
end
redis.call('HSET', K.claim(cid), 'q', qid, 'ttl', ttl, 'grace', grace, 'created', NOW_S,
           'expires', fmt(cexp), 'client', client)
redis.call('ZADD', K.claim_expiry(), fmt(cexp), cid)
redis.call('SADD', K.qclaims(qid), cid)
return taken
