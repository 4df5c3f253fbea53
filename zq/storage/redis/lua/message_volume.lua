#!lua flags=no-writes
-- No ARGV beyond the prefix and the time. Returns {free, claimed} over every
-- alive message of the backend: alive ones from the expiry index (no scan
-- of the messages), claimed ones by walking the live claims.
local alive_count = redis.call('ZCOUNT', K.msg_expiry(), '(' .. NOW_S, '+inf')
local claimed = 0
for _, cid in ipairs(redis.call('ZRANGEBYSCORE', K.claim_expiry(), '(' .. NOW_S, '+inf')) do
  for _, id in ipairs(redis.call('SMEMBERS', K.claim_msgs(cid))) do
    local m = load_msg(id, STATE_FIELDS)
    if m and m.claim == cid and alive(m) and held(m) then
      claimed = claimed + 1
    end
  end
end
return {alive_count - claimed, claimed}
