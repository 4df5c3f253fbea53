#!lua
-- ARGV: project, queue, claim id, ttl, claimed, expires, settled ('':
-- none), client, forget before. Remembers a claim in the consumer log and forgets the queue's
-- records that expired before the bound (ConsumerLog.record).
consumer_record(ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8], ARGV[9], ARGV[10],
                ARGV[11])
return 1
