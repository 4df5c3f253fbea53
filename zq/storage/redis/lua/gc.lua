#!lua
-- ARGV: batch size. Removes up to a batch of expired claims and of expired
-- messages, with their events. Returns {messages removed, claims looked
-- at, messages looked at}; the caller repeats while a batch was full.
local batch = tonumber(ARGV[3])

local function queue_names(qid)
  local q = redis.call('HMGET', K.queue(qid), 'project', 'name')
  return q[1], q[2]
end

local cids = redis.call('ZRANGEBYSCORE', K.claim_expiry(), '-inf', NOW, 'LIMIT', 0, batch)
for _, cid in ipairs(cids) do
  local c = redis.call('HMGET', K.claim(cid), 'q', 'client')
  local held = 0
  for _, id in ipairs(redis.call('SMEMBERS', K.claim_msgs(cid))) do
    local m = load_msg(id)
    if m and m.claim == cid then
      held = held + 1
      redis.call('HSET', K.msg(id), 'claim', '', 'cexp', '0')
    end
  end
  if c[1] then
    local project, name = queue_names(c[1])
    if held > 0 and project then
      event(project, name, 'expired', nil, cid, c[2], nil, {target = 'claim', messages = held})
    end
    redis.call('SREM', K.qclaims(c[1]), cid)
  end
  redis.call('DEL', K.claim(cid), K.claim_msgs(cid))
  redis.call('ZREM', K.claim_expiry(), cid)
end

local removed = 0
local ids = redis.call('ZRANGEBYSCORE', K.msg_expiry(), '-inf', NOW, 'LIMIT', 0, batch)
for _, id in ipairs(ids) do
  local m = load_msg(id)
  if m and not alive(m) then
    local project, name = queue_names(m.q)
    remove_msg(m)
    if project then
      event(project, name, 'expired', id, nil, nil, m.count)
    end
    removed = removed + 1
  elseif m then
    redis.call('ZADD', K.msg_expiry(), m.expires, id)
  else
    redis.call('ZREM', K.msg_expiry(), id)
  end
end
return {removed, #cids, #ids}
