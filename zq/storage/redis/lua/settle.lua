#!lua
-- ARGV: project, queue, budget (2 args, see read_budget). Removes expired
-- messages and moves messages whose claim or delay ended into ready, within
-- the budget. Returns 1 when the queue is settled, 0 when work remains.
local qid = queue_id(ARGV[3], ARGV[4])
if not qid then
  return 1
end
return settle(qid, read_budget(5)) and 1 or 0
