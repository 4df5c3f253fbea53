#!lua
-- ARGV: project, queue, claim id, mode ('settle', 'end' or 'renew'), ttl.
-- ConsumerLog.settle (mode 'end': a release) and ConsumerLog.extend
-- (mode 'renew'); an unknown claim id changes nothing.
return consumer_settle(ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7])
