-- Shared by every script: prepended to each .lua file when it is loaded.
-- ARGV[1] is the key prefix (ending in ':'), ARGV[2] the time from the
-- caller's clock; scripts never read the server's TIME, so tests can move
-- time with a manual clock.
local P = ARGV[1]
local NOW_S = ARGV[2]
local NOW = tonumber(NOW_S)

-- 17 significant digits: a float survives the round trip through a string.
local function fmt(x)
  return string.format('%.17g', x)
end

-- Length-prefixed text: enc(a) .. b is unambiguous whatever bytes a and b hold.
local function enc(s)
  return #s .. ':' .. s
end

-- The key layout (documented in zq/storage/redis/__init__.py). Every family
-- starts with a distinct head, so no id or name can make two keys collide.
local K = {}
function K.catalog() return P .. 'queues' end
function K.qseq() return P .. 'qseq' end
function K.markers() return P .. 'marker' end
function K.project(project) return P .. 'p:' .. enc(project) end
function K.links(project) return P .. 'l:' .. enc(project) end
function K.queue(qid) return P .. 'q:' .. qid end
function K.order(qid) return P .. 'qo:' .. qid end
function K.qclaims(qid) return P .. 'qc:' .. qid end
function K.msg(id) return P .. 'm:' .. id end
function K.claim(cid) return P .. 'c:' .. cid end
function K.claim_msgs(cid) return P .. 'cm:' .. cid end
function K.msg_expiry() return P .. 'xm' end
function K.claim_expiry() return P .. 'xc' end
function K.events() return P .. 'events' end

local function queue_id(project, name)
  return redis.call('HGET', K.catalog(), enc(project) .. name)
end

-- The queue's metadata version (MetadataRead in zq/storage/base.py): its
-- id, which is never reused, and the count of its metadata changes; ''
-- for a missing queue.
local function meta_version(qid)
  if not qid then
    return ''
  end
  return qid .. '.' .. (redis.call('HGET', K.queue(qid), 'mv') or '0')
end

-- What a script returns, changing nothing, when ARGV[i] (the caller's
-- metadata version; '-': not checked) is no longer the queue's.
local STALE = -1

local function stale_metadata(i, qid)
  return ARGV[i] ~= '-' and ARGV[i] ~= meta_version(qid)
end

-- The project's links version (QueueController in zq/storage/base.py).
local function links_version(project)
  return redis.call('GET', K.links(project)) or '0'
end

-- Whether ARGV[i] (a links version; '-': none given) is no longer the
-- project's; a write given one moves it with advance_links.
local function stale_links(i, project)
  return ARGV[i] ~= '-' and ARGV[i] ~= links_version(project)
end

local function advance_links(i, project)
  if ARGV[i] ~= '-' then
    redis.call('INCR', K.links(project))
  end
end

-- The queue's id, creating the queue (with metadata ``meta``) when missing.
local function ensure_queue(project, name, meta)
  local qid = queue_id(project, name)
  if qid then
    return qid, false
  end
  qid = tostring(redis.call('INCR', K.qseq()))
  redis.call('HSET', K.catalog(), enc(project) .. name, qid)
  redis.call('HSET', K.queue(qid), 'project', project, 'name', name, 'meta', meta or '{}')
  redis.call('ZADD', K.project(project), 0, name)
  return qid, true
end

local FIELDS = {'q', 'body', 'ttl', 'created', 'expires', 'client', 'claim',
                'cexp', 'count', 'hist', 'marker', 'delay', 'fp'}

-- What deciding on and removing a message needs: no body, which is the
-- bulk of what a whole message costs to read.
local STATE_FIELDS = {'q', 'expires', 'claim', 'cexp', 'count'}

-- The message's ``fields`` (all of them by default), or nil when missing.
local function load_msg(id, fields)
  fields = fields or FIELDS
  local v = redis.call('HMGET', K.msg(id), unpack(fields))
  if not v[1] then
    return nil
  end
  local m = {id = id}
  for i, f in ipairs(fields) do
    m[f] = v[i]
  end
  return m
end

local function alive(m)
  return tonumber(m.expires) > NOW
end

-- Held by a live claim.
local function held(m)
  return m.claim ~= '' and tonumber(m.cexp) > NOW
end

local function is_free(m)
  return alive(m) and not held(m) and tonumber(m.delay) <= NOW
end

-- The wire shape a script returns for one message (see records.py).
local function record(m)
  return {m.id, m.body, m.ttl, m.created, m.expires, m.client,
          held(m) and m.claim or '', m.count, m.hist, m.marker}
end

-- The alive messages a claim still holds, in queue order. With ``tidy``
-- (write scripts only) it forgets the ids the claim no longer holds.
local function held_by(cid, tidy)
  local key = K.claim_msgs(cid)
  local found = {}
  for _, id in ipairs(redis.call('SMEMBERS', key)) do
    local m = load_msg(id)
    if m and m.claim == cid and alive(m) then
      found[#found + 1] = m
    elseif tidy and (not m or m.claim ~= cid) then
      redis.call('SREM', key, id)
    end
  end
  table.sort(found, function(a, b) return tonumber(a.marker) < tonumber(b.marker) end)
  return found
end

local function remove_msg(m)
  redis.call('DEL', K.msg(m.id))
  redis.call('ZREM', K.order(m.q), m.id)
  redis.call('ZREM', K.msg_expiry(), m.id)
  if m.claim ~= '' then
    redis.call('SREM', K.claim_msgs(m.claim), m.id)
  end
end

-- Append one event to the backend's stream (fields decoded by eventlog.py).
local function event(project, queue, kind, msg_id, claim_id, client, count, detail)
  local f = {'t', NOW_S, 'p', project, 'q', queue, 'k', kind}
  local function put(name, value)
    if value and value ~= '' then
      f[#f + 1] = name
      f[#f + 1] = tostring(value)
    end
  end
  put('m', msg_id)
  put('c', claim_id)
  put('cl', client)
  put('n', count)
  if detail then
    put('d', cjson.encode(detail))
  end
  redis.call('XADD', K.events(), '*', unpack(f))
end

-- The first ``n`` UTF-8 characters of ``text``.
local function first_chars(text, n)
  if #text <= n then
    return text
  end
  local i, seen = 1, 0
  while i <= #text and seen < n do
    local b = text:byte(i)
    if b < 0x80 then i = i + 1
    elseif b < 0xE0 then i = i + 2
    elseif b < 0xF0 then i = i + 3
    else i = i + 4 end
    seen = seen + 1
  end
  return text:sub(1, i - 1)
end

-- The dead letter policy decided in zq/dead_letter.py, passed as five
-- arguments from ARGV[i]: max claim count ('' = no policy), target queue,
-- ttl ('' = keep the message's own), reason, raw history entry as JSON.
local function read_policy(i)
  if ARGV[i] == '' then
    return nil
  end
  return {max = tonumber(ARGV[i]), queue = ARGV[i + 1],
          ttl = ARGV[i + 2] ~= '' and ARGV[i + 2] or nil,
          reason = ARGV[i + 3], entry = ARGV[i + 4], sample = tonumber(ARGV[i + 5])}
end

-- Move an exhausted message into the policy's queue: same id, body, claim
-- count and marker; free; ttl per policy; created and expires restart now.
local function dead_letter(m, project, source, policy, client)
  local target = ensure_queue(project, policy.queue)
  local ttl = policy.ttl or m.ttl
  local expires = NOW + tonumber(ttl)
  local hist
  if m.hist == '[]' then
    hist = '[' .. policy.entry .. ']'
  else
    hist = m.hist:sub(1, -2) .. ',' .. policy.entry .. ']'
  end
  if m.claim ~= '' then
    redis.call('SREM', K.claim_msgs(m.claim), m.id)
  end
  redis.call('HSET', K.msg(m.id), 'q', target, 'ttl', ttl, 'created', NOW_S,
             'expires', fmt(expires), 'claim', '', 'cexp', '0', 'hist', hist)
  redis.call('ZREM', K.order(m.q), m.id)
  redis.call('ZADD', K.order(target), m.marker, m.id)
  redis.call('ZADD', K.msg_expiry(), expires, m.id)
  event(project, source, 'dead_lettered', m.id, nil, client, m.count,
        {to = policy.queue, reason = policy.reason, fingerprint = m.fp,
         sample = first_chars(m.body, policy.sample)})
end

-- Walk the queue's free messages in order: dead letter the exhausted ones,
-- hand the others to ``deliver`` until ``limit`` were delivered.
local function take_batch(project, queue, qid, limit, policy, client, deliver)
  local order = K.order(qid)
  local after = '-inf'
  local taken = {}
  -- A first page about the batch's size: most claims find it free.
  local size = limit * 2
  while #taken < limit do
    local page = redis.call('ZRANGEBYSCORE', order, after, '+inf', 'WITHSCORES', 'LIMIT', 0, size)
    size = 100
    if #page == 0 then
      break
    end
    for i = 1, #page, 2 do
      after = '(' .. page[i + 1]
      -- Claimed messages ahead in the order are skipped by reading only
      -- the fields that decide freeness; the full message only when free.
      local s = redis.call('HMGET', K.msg(page[i]), 'expires', 'claim', 'cexp', 'delay')
      local m = s[1] and is_free({expires = s[1], claim = s[2], cexp = s[3], delay = s[4]})
                and load_msg(page[i])
      if m then
        if policy and tonumber(m.count) >= policy.max then
          dead_letter(m, project, queue, policy, client)
        else
          taken[#taken + 1] = deliver(m)
          if #taken >= limit then
            break
          end
        end
      end
    end
  end
  return taken
end

-- Remove every message and claim of a queue; returns how many messages.
local function clear_queue(qid)
  local ids = redis.call('ZRANGE', K.order(qid), 0, -1)
  for _, id in ipairs(ids) do
    local m = load_msg(id)
    if m then
      remove_msg(m)
    end
  end
  redis.call('DEL', K.order(qid))
  for _, cid in ipairs(redis.call('SMEMBERS', K.qclaims(qid))) do
    redis.call('DEL', K.claim(cid), K.claim_msgs(cid))
    redis.call('ZREM', K.claim_expiry(), cid)
  end
  redis.call('DEL', K.qclaims(qid))
  return #ids
end
