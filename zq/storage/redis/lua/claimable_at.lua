#!lua flags=no-writes
-- ARGV: project, queue, project, queue, ... For each queue, in order, the
-- earliest moment one of its messages may be claimed (a string), or '' when
-- it holds none: NOW when its ready set is not empty, else the first of its
-- waiting set (delays and backoffs) and of its held set (claim expiries,
-- a lower bound where the claim gave a backoff, whose own set is read too).
-- Expired messages not removed yet count: the moment is never later than
-- the truth, and the claim the waiter then tries settles the queue. A
-- queue whose breaker is open or half-open: not before its next probe.
local answer = {}
for i = 3, #ARGV, 2 do
  local qid = queue_id(ARGV[i], ARGV[i + 1])
  local moment = ''
  if qid then
    if redis.call('ZCARD', K.ready(qid)) > 0 then
      moment = NOW_S
    else
      local first = nil
      for _, key in ipairs({K.waiting(qid), K.held(qid), K.backoff(qid)}) do
        local head = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
        if head[2] and (first == nil or tonumber(head[2]) < first) then
          first = tonumber(head[2])
        end
      end
      if first then
        moment = fmt(first)
      end
    end
    -- An open (or half-open) breaker delivers nothing before its next probe:
    -- a waiter woken sooner would get nothing, every re-check interval.
    -- (breaker_lib is built once per call, and defines K.breaker.)
    local lib = moment ~= '' and breaker_lib()
    if lib and redis.call('EXISTS', K.breaker(qid)) == 1 then
      local b = lib.load_breaker(qid)
      if b.st ~= lib.BREAKER.CLOSED and b.np > tonumber(moment) then
        moment = fmt(b.np)
      end
    end
  end
  answer[#answer + 1] = moment
end
return answer
