#!lua
-- ARGV: project, queue, client, metadata version, then per message: id,
-- body, ttl, delay, fingerprint. Returns how many were posted, or STALE.
local project, queue, client = ARGV[3], ARGV[4], ARGV[5]
local qid = queue_id(project, queue)
if stale_metadata(6, qid) then
  return STALE
end
qid = qid or ensure_queue(project, queue)
local n = (#ARGV - 6) / 5
local last = redis.call('INCRBY', K.markers(), n)
for i = 0, n - 1 do
  local b = 7 + i * 5
  local id, body, ttl, delay, fp = ARGV[b], ARGV[b + 1], ARGV[b + 2], ARGV[b + 3], ARGV[b + 4]
  local marker = last - n + 1 + i
  local expires = NOW + tonumber(ttl)
  redis.call('HSET', K.msg(id), 'q', qid, 'body', body, 'ttl', ttl, 'created', NOW_S,
             'expires', fmt(expires), 'client', client, 'claim', '', 'cexp', '0',
             'count', 0, 'hist', '[]', 'marker', marker,
             'delay', fmt(NOW + tonumber(delay)), 'fp', fp)
  redis.call('ZADD', K.order(qid), marker, id)
  redis.call('ZADD', K.msg_expiry(), expires, id)
  event(project, queue, 'posted', id, nil, client, nil,
        {ttl = tonumber(ttl), delay = tonumber(delay), fingerprint = fp, size = #body})
end
return n
