#!lua
-- ARGV: project, queue, message id, claim id, client, retry after (seconds;
-- '' = the backoff the claim gave the message), the event detail (JSON,
-- built by zq.events), the failure's description ('1' when there is one,
-- then its stored text: zq.poison.breaker.stored_description), breaker and
-- blame split (7 args, see read_rules). A retry reject: the message leaves
-- its live claim and waits until now + the delay; with a breaker, it is a
-- failure (forgiven while the breaker is open). Returns 0 when done, 1 when
-- the message is missing or expired, 2 when that live claim does not hold it.
local project, queue, id, cid, client = ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7]
local retry_after, detail = ARGV[8], ARGV[9]
local qid = queue_id(project, queue)
local m = qid and load_msg(id)
if not (m and m.q == qid and alive(m)) then
  return 1
end
if not (held(m) and m.claim == cid) then
  return 2
end
local wait = retry_after == '' and carried_backoff(m) or tonumber(retry_after)
m.delay = fmt(NOW + wait)
redis.call('SREM', K.claim_msgs(cid), m.id)
redis.call('HSET', K.msg(m.id), 'claim', '', 'cexp', '0', 'delay', m.delay)
unhold(m)
event(project, queue, KIND.REJECTED, m.id, cid, client, m.count, cjson.decode(detail))
if ARGV[12] ~= '' then
  local rules = read_rules(12, project, queue, qid, client)
  rules.lib.breaker_reject(rules, m.id, cid, ARGV[10] == '1' and ARGV[11] or nil)
  rules.lib.hold_probe(rules, m.id)
end
return 0
