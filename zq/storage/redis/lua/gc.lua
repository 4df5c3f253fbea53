#!lua
-- ARGV: batch size. Collects up to a batch of expired claims (their
-- messages become ready), then removes up to a batch of expired messages
-- (with their events) and of the keys purged and deleted queues left.
-- Returns {messages removed, claims looked at, 1 when work remains else 0,
-- messages moved (``_dead_letter_expired``)};
-- the caller repeats while a batch was full or work remains.
local batch = tonumber(ARGV[3])

local cids = redis.call('ZRANGEBYSCORE', K.claim_expiry(), '-inf', NOW_S, 'LIMIT', 0, batch)
for _, cid in ipairs(cids) do
  collect_claim(cid)
end

-- Queues by (a lower bound of) their first message expiry: a queue whose
-- earliest message may have expired is swept, then filed under its real
-- first expiry, or dropped when it has no message left.
local left, removed, moved, more = batch, 0, 0, false
local qids = redis.call('ZRANGEBYSCORE', K.queue_expiry(), '-inf', NOW_S, 'LIMIT', 0, batch)
for _, qid in ipairs(qids) do
  if left <= 0 then
    more = true
    break
  end
  local seen, expired_left, gone, went = sweep(qid, left)
  removed = removed + gone
  moved = moved + went
  left = left - math.max(seen, 1)
  if expired_left then
    more = true
  else
    local first = redis.call('ZRANGE', K.expiry(qid), 0, 0, 'WITHSCORES')
    if #first == 0 then
      redis.call('ZREM', K.queue_expiry(), qid)
    else
      redis.call('ZADD', K.queue_expiry(), first[2], qid)
    end
  end
end
-- Keys of purged and deleted queues, a batch at a time.
for _, qid in ipairs(redis.call('SRANDMEMBER', K.trash(), 10)) do
  if left <= 0 then
    more = true
    break
  end
  local done, gone = reclaim(qid, left)
  left = left - done
  more = more or not gone
end
return {removed, #cids, more and 1 or 0, moved}
