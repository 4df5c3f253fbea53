#!lua
-- ARGV: project, queue. Drops the queue's consumer log (ConsumerLog.forget)
-- with the blame split's index of it.
local project, queue = ARGV[3], ARGV[4]
redis.call('DEL', K.consumers(project, queue), K.consumer_expiry(project, queue))
-- And the blame split's index of it (lua/_breaker.lua).
breaker_lib().forget_index(project, queue)
return 1
