#!lua
-- ARGV: batch size, queue id and marker to go on after ('' = from the
-- start), the layout it converts to (zq/storage/redis/layout.py). Converts data written in key layout 1 (one order per queue and
-- one global expiry index, P xm) to layout 2 (ready, held and waiting sets
-- and an expiry index per queue, P xq), up to a batch of messages per call.
-- Only indexes are written, so a call that is cut off is simply run again.
-- Returns {1 when finished else 0, queue id, marker} to go on from.
local n = tonumber(ARGV[3])
local qid, after, layout = tonumber(ARGV[4]), ARGV[5], ARGV[6]
local last = tonumber(redis.call('GET', K.qseq()) or '0')
local done = 0
while qid <= last and done < n do
  local q = tostring(qid)
  local want, page = n - done, {}
  if redis.call('EXISTS', K.queue(q)) == 1 then
    local from = after == '' and '-inf' or '(' .. after
    page = redis.call('ZRANGEBYSCORE', K.order(q), from, '+inf', 'WITHSCORES', 'LIMIT', 0, want)
  end
  for i = 1, #page, 2 do
    local m = load_msg(page[i])
    if m and m.q == q then
      redis.call('ZADD', K.expiry(q), m.expires, m.id)
      redis.call('ZADD', K.queue_expiry(), 'LT', m.expires, q)
      index_state(m)
    end
    after = page[i + 1]
  end
  done = done + #page / 2
  if #page / 2 < want then
    qid, after = qid + 1, ''
  end
end
if qid > last then
  redis.call('DEL', P .. 'xm')
  redis.call('SET', K.layout(), layout)
  return {1, qid, after}
end
return {0, qid, after}
