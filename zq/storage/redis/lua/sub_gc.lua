#!lua
-- ARGV: batch size. Removes up to a batch of expired subscriptions;
-- returns how many.
local sids = redis.call('ZRANGEBYSCORE', K.sub_expiry(), '-inf', NOW_S, 'LIMIT', 0,
                        tonumber(ARGV[3]))
for _, sid in ipairs(sids) do
  drop_subscription(sid)
end
return #sids
