#!lua flags=no-writes
-- ARGV: cursor ('' = from the start; exclusive otherwise), limit.
local start = ARGV[3] == '' and '-' or '(' .. ARGV[3]
return redis.call('XRANGE', K.events(), start, '+', 'COUNT', tonumber(ARGV[4]))
