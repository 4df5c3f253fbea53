#!lua
-- Redis Cluster only (zq/storage/redis/cluster_events.py), in the event log's
-- home: append a batch read from one project home's stream to the log, and
-- record how far that stream is drained, in one step.
-- ARGV: the home's bucket, the position the batch was read after ('' =
-- the start), the id of its last event, the number of events, then per
-- event its number of field values followed by the fields and values.
-- Returns 0 (nothing written) when the recorded position is not the one
-- the batch was read after: another process drained it meanwhile.
local drained = P .. 'drained'
local bucket = ARGV[3]
if (redis.call('HGET', drained, bucket) or '') ~= ARGV[4] then
  return 0
end
local i = 7
for _ = 1, tonumber(ARGV[6]) do
  local n = tonumber(ARGV[i])
  redis.call('XADD', K.events(), '*', unpack(ARGV, i + 1, i + n))
  i = i + n + 1
end
redis.call('HSET', drained, bucket, ARGV[5])
return 1
