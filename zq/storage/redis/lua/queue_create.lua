#!lua
-- ARGV: project, queue, metadata JSON. Returns 1 if created, 0 if it existed.
local _, created = ensure_queue(ARGV[3], ARGV[4], ARGV[5])
return created and 1 or 0
