#!lua flags=no-writes
-- ARGV: project, queue, window (seconds). BreakerLog.read: see
-- breaker_state in _breaker.lua.
return breaker_lib().breaker_state(queue_id(ARGV[3], ARGV[4]), tonumber(ARGV[5]))
