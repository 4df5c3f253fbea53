#!lua
-- ARGV: the smallest stream id to keep. Returns how many events were removed.
return redis.call('XTRIM', K.events(), 'MINID', ARGV[3])
