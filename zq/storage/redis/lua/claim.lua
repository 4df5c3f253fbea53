#!lua
-- ARGV: project, queue, claim id, ttl, grace, limit, client, policy (8 args,
-- see read_policy), metadata version, budget (2 args, see read_budget),
-- backoff (2 args, see read_backoff), consumer ('1' or '': whether to write
-- the consumer record), its client, claimed, expires and forget before
-- (ConsumerEntry: the claim's record in the consumer log, in this script),
-- breaker and blame split (7 args, see read_rules).
-- Returns the delivered messages (empty: no claim made), STALE, or AGAIN
-- when the budget ran out before any message was delivered.
local project, queue, cid = ARGV[3], ARGV[4], ARGV[5]
local ttl, grace, limit, client = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8]), ARGV[9]
local policy = read_policy(10)
local budget = read_budget(19)
local backoff = read_backoff(21)
local qid = queue_id(project, queue)
if stale_metadata(18, qid) then
  return STALE
end
if not qid then
  return {}
end
if not settle(qid, budget) then
  return AGAIN
end
local rules = read_rules(28, project, queue, qid, client)
local probe = false
if rules and rules.ratio then
  local may
  may, probe = rules.lib.probe_gate(rules)
  if not may then
    return {}
  end
  if probe then
    limit = 1
  end
end
if rules then
  rules.claiming = true
end
local cexp = NOW + ttl
local min_expires = cexp + grace
local delivered = 0
local taken, exhausted = take_batch(project, queue, qid, limit, policy, client, budget,
                                    function(m)
  local count = tonumber(m.count) + 1
  local expires = math.max(tonumber(m.expires), min_expires)
  delivered = delivered + 1
  m.claim, m.cexp, m.count, m.expires = cid, fmt(cexp), tostring(count), fmt(expires)
  redis.call('HSET', K.msg(m.id), 'claim', cid, 'cexp', m.cexp, 'count', count, 'expires', m.expires)
  if backoff then
    -- Claimable again at the claim's expiry plus its backoff: an expiry of
    -- the claim implies it (promote sends it to waiting until then).
    m.delay = fmt(cexp + backoff_delay(backoff, count, delivered))
    redis.call('HSET', K.msg(m.id), 'delay', m.delay)
    redis.call('ZADD', K.backoff(qid), m.delay, m.id)
  end
  redis.call('ZREM', K.ready(qid), m.id)
  redis.call('ZADD', K.held(qid), m.cexp, m.id)
  redis.call('ZADD', K.expiry(qid), m.expires, m.id)
  redis.call('SADD', K.claim_msgs(cid), m.id)
  event(project, queue, KIND.CLAIMED, m.id, cid, client, count)
  return record(m)
end, rules)
if #taken == 0 then
  return exhausted and AGAIN or {}
end
if probe then
  rules.lib.probe_taken(rules, cid, taken[1][1])
end
redis.call('HSET', K.claim(cid), 'q', qid, 'ttl', ttl, 'grace', grace, 'created', NOW_S,
           'expires', fmt(cexp), 'client', client)
redis.call('ZADD', K.claim_expiry(), fmt(cexp), cid)
redis.call('SADD', K.qclaims(qid), cid)
if ARGV[23] == '1' then
  consumer_record(project, queue, cid, ARGV[6], ARGV[25], ARGV[26], '', ARGV[24], ARGV[27])
  if rules and rules.blame then
    rules.lib.index_claim(rules, cid, ARGV[24], ARGV[25], ARGV[27])
  end
end
return taken
