#!lua flags=no-writes
-- ARGV: project, queue, marker ('' = from the start), limit, echo ('1'/''),
-- client, include claimed ('1'/''), include delayed ('1'/''), budget (most
-- messages skipped by the filters). Returns {resume, message...}: alive
-- messages in queue order that pass the filters; resume is '' when the page
-- is complete, else the marker after which the caller asks again (the
-- budget ran out first). AGAIN while the queue is not settled.
local qid = queue_id(ARGV[3], ARGV[4])
local marker, limit = ARGV[5], tonumber(ARGV[6])
local echo, client = ARGV[7] == '1', ARGV[8]
local with_claimed, with_delayed = ARGV[9] == '1', ARGV[10] == '1'
local budget = tonumber(ARGV[11])
if not qid then
  return {''}
end
if not settled(qid) then
  return AGAIN
end
-- Free messages are exactly the ready set; the others are in the order.
local source = (with_claimed or with_delayed) and K.order(qid) or K.ready(qid)
local after = marker == '' and '-inf' or '(' .. marker
-- Without a filter to apply, every ready message is shown: read it once;
-- otherwise read what the filters need first, the whole message if shown.
local unfiltered = source == K.ready(qid) and (echo or client == '')
local fields = not unfiltered and {'q', 'client', 'claim', 'cexp', 'delay'} or nil
local out, skipped = {''}, 0
while #out - 1 < limit do
  local want = limit - (#out - 1)
  local page = redis.call('ZRANGEBYSCORE', source, after, '+inf', 'WITHSCORES', 'LIMIT', 0,
                          math.min(want * 2, want + budget - skipped))
  if #page == 0 then
    break
  end
  for i = 1, #page, 2 do
    after = '(' .. page[i + 1]
    local m = load_msg(page[i], fields)
    if m and (unfiltered or (echo or client == '' or m.client ~= client)
              and (with_claimed or not held(m))
              and (with_delayed or held(m) or tonumber(m.delay) <= NOW)) then
      out[#out + 1] = record(fields and load_msg(page[i]) or m)
      if #out - 1 >= limit then
        break
      end
    else
      skipped = skipped + 1
      if skipped >= budget then
        out[1] = page[i + 1]
        return out
      end
    end
  end
end
return out
