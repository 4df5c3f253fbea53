#!lua flags=no-writes
-- The id of the stream's last event, or nil when it is empty.
local last = redis.call('XREVRANGE', K.events(), '+', '-', 'COUNT', 1)
if #last == 0 then
  return false
end
return last[1][1]
