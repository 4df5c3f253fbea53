#!lua
-- ARGV: project, queue. Drops the queue's consumer log (ConsumerLog.forget).
local project, queue = ARGV[3], ARGV[4]
redis.call('DEL', K.consumers(project, queue), K.consumer_expiry(project, queue))
return 1
