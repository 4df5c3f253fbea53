#!lua flags=no-writes
-- No ARGV beyond the prefix and the time. Returns {free, claimed} over every
-- alive message of the backend, from each queue's set sizes (as stats
-- counts: no message is read), so it costs a few commands per queue.
local free, claimed = 0, 0
for _, qid in ipairs(redis.call('HVALS', K.catalog())) do
  local alive = redis.call('ZCARD', K.order(qid))
                - redis.call('ZCOUNT', K.expiry(qid), '-inf', NOW_S)
  local held = redis.call('ZCOUNT', K.held(qid), '(' .. NOW_S, '+inf')
  free = free + alive - held
  claimed = claimed + held
end
return {free, claimed}
