#!lua
-- ARGV: project, queue, client, metadata version, then per message: id,
-- body, ttl, delay, fingerprint, event body flag ('1': the posted event
-- carries the body, zq.events.BODY; the queue has subscribers). Returns how many were posted, or STALE.
local project, queue, client = ARGV[3], ARGV[4], ARGV[5]
local qid = queue_id(project, queue)
if stale_metadata(6, qid) then
  return STALE
end
qid = qid or ensure_queue(project, queue)
local n = (#ARGV - 6) / 6
local last = redis.call('INCRBY', K.markers(), n)
local order, ready, waiting, expiry = {}, {}, {}, {}
local first_expiry
for i = 0, n - 1 do
  local b = 7 + i * 6
  local id, body, ttl, delay, fp = ARGV[b], ARGV[b + 1], ARGV[b + 2], ARGV[b + 3], ARGV[b + 4]
  local marker = last - n + 1 + i
  local expires = NOW + tonumber(ttl)
  local free_at = NOW + tonumber(delay)
  redis.call('HSET', K.msg(id), 'q', qid, 'body', body, 'ttl', ttl, 'created', NOW_S,
             'expires', fmt(expires), 'client', client, 'claim', '', 'cexp', '0',
             'count', 0, 'hist', '[]', 'marker', marker, 'delay', fmt(free_at), 'fp', fp)
  order[#order + 1], order[#order + 2] = marker, id
  if free_at > NOW then
    waiting[#waiting + 1], waiting[#waiting + 2] = fmt(free_at), id
  else
    ready[#ready + 1], ready[#ready + 2] = marker, id
  end
  expiry[#expiry + 1], expiry[#expiry + 2] = fmt(expires), id
  first_expiry = math.min(first_expiry or expires, expires)
  -- zq.events.posted_detail (size: the body's bytes).
  local detail = {[DETAIL.TTL] = tonumber(ttl), [DETAIL.DELAY] = tonumber(delay),
                  [DETAIL.FINGERPRINT] = fp, [DETAIL.SIZE] = #body}
  if ARGV[b + 5] == '1' then
    detail[DETAIL.BODY] = body
  end
  event(project, queue, KIND.POSTED, id, nil, client, nil, detail)
end
zadd_pairs(K.order(qid), order)
zadd_pairs(K.ready(qid), ready)
zadd_pairs(K.waiting(qid), waiting)
zadd_pairs(K.expiry(qid), expiry)
redis.call('ZADD', K.queue_expiry(), 'LT', fmt(first_expiry), qid)
return n
