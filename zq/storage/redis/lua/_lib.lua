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
function K.ready(qid) return P .. 'qr:' .. qid end
function K.held(qid) return P .. 'qh:' .. qid end
function K.waiting(qid) return P .. 'qw:' .. qid end
function K.backoff(qid) return P .. 'qb:' .. qid end
function K.expiry(qid) return P .. 'qx:' .. qid end
function K.qclaims(qid) return P .. 'qc:' .. qid end
function K.msg(id) return P .. 'm:' .. id end
function K.claim(cid) return P .. 'c:' .. cid end
function K.claim_msgs(cid) return P .. 'cm:' .. cid end
function K.queue_expiry() return P .. 'xq' end
function K.claim_expiry() return P .. 'xc' end
function K.events() return P .. 'events' end
function K.layout() return P .. 'layout' end
function K.trash() return P .. 'trash' end
-- The consumer log (consumer_*.lua), keyed by names: it outlives a purge.
function K.consumers(project, name) return P .. 'u:' .. enc(project) .. name end
function K.consumer_expiry(project, name) return P .. 'ux:' .. enc(project) .. name end

-- The breaker's functions, made on first use (lua/_breaker.lua, prepended
-- after this file).
local breaker_lib

local function queue_id(project, name)
  return redis.call('HGET', K.catalog(), enc(project) .. name)
end

-- The queue's metadata version (MetadataRead in zq/storage/base.py): the
-- id the queue was created with (``vid``; absent: its id, as purging gives
-- a queue a new id and keeps its version), which is never reused, and the
-- count of its metadata changes; '' for a missing queue.
local function meta_version(qid)
  if not qid then
    return ''
  end
  local q = redis.call('HMGET', K.queue(qid), 'vid', 'mv')
  return (q[1] or qid) .. '.' .. (q[2] or '0')
end

-- What a script returns, changing nothing, when ARGV[i] (the caller's
-- metadata version; '-': not checked) is no longer the queue's.
local STALE = -1

-- What a script returns when its work budget ran out before it could
-- answer (see settle below): whatever it did is committed, and the caller
-- runs it again (a read script: after the settle script).
local AGAIN = -2

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
                'cexp', 'count', 'hist', 'marker', 'delay', 'fp', 'rc', 'fc', 'lf', 'lw', 'lh'}

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

-- The wire shape a script returns for one message (wire.message_record).
local function record(m)
  return {m.id, m.body, m.ttl, m.created, m.expires, m.client,
          held(m) and m.claim or '', m.count, m.hist, m.marker, m.rc or '0',
          m.fc or '0', m.lf or false, m.lw or '', m.lh or ''}
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

-- ZADD of (score, member) pairs, in chunks that Lua's unpack can take.
local function zadd_pairs(key, entries)
  for i = 1, #entries, 2000 do
    redis.call('ZADD', key, unpack(entries, i, math.min(i + 1999, #entries)))
  end
end

-- Each message of a queue is in the order (by marker), the expiry index (by
-- expires) and exactly one of three state sets: ready (free now, by marker),
-- held (by a live claim, scored by the claim's expiry) or waiting (not
-- claimable before its score: the end of its delay). A score in held or
-- waiting that has passed means "free since then": settle() moves it to
-- ready.
local function index_state(m)
  if held(m) then
    redis.call('ZADD', K.held(m.q), m.cexp, m.id)
  elseif tonumber(m.delay) > NOW then
    redis.call('ZADD', K.waiting(m.q), m.delay, m.id)
  else
    redis.call('ZADD', K.ready(m.q), m.marker, m.id)
  end
end

-- A message no longer held (released, its claim collected): ready now, or
-- waiting while a backoff its claim gave it (``delay``) has not passed.
local function unhold(m)
  redis.call('ZREM', K.held(m.q), m.id)
  redis.call('ZREM', K.backoff(m.q), m.id)
  if tonumber(m.delay) > NOW then
    redis.call('ZADD', K.waiting(m.q), m.delay, m.id)
  else
    redis.call('ZADD', K.ready(m.q), m.marker, m.id)
  end
end

-- The backoff a held message carries past its claim's expiry (zq.poison.backoff):
-- kept when the claim is renewed, waited out from now when it is released.
local function carried_backoff(m)
  return math.max(0, tonumber(m.delay) - tonumber(m.cexp))
end

-- The backoff decided in zq/poison/backoff.py, from ARGV[i] and ARGV[i + 1] (JSON
-- arrays, '' for none): the delay by claim count (the last entry for every
-- count past the end), and one jitter factor per message of the batch.
local function read_backoff(i)
  if ARGV[i] == '' then
    return nil
  end
  return {schedule = cjson.decode(ARGV[i]), factors = cjson.decode(ARGV[i + 1])}
end

-- The delay of the ``k``-th message a claim delivers, which will have
-- ``count`` claims.
local function backoff_delay(backoff, count, k)
  local schedule = backoff.schedule
  return schedule[math.min(count, #schedule)] * backoff.factors[k]
end

local function unindex(qid, id)
  for _, key in ipairs({K.order(qid), K.ready(qid), K.held(qid), K.waiting(qid),
                        K.expiry(qid), K.backoff(qid)}) do
    redis.call('ZREM', key, id)
  end
end

local function remove_msg(m)
  redis.call('DEL', K.msg(m.id))
  unindex(m.q, m.id)
  if m.claim ~= '' then
    redis.call('SREM', K.claim_msgs(m.claim), m.id)
  end
end

-- Waiting claims (zq.storage.wake_events, zq/storage/redis/wake.py): a
-- script whose events may make a message of a queue claimable publishes the
-- queue's name on the prefix's wake channel, once per script and queue
-- whatever the number of messages. Published by the script itself, so a
-- subscriber hears it once the change is made, and only if it is.
-- The channel is the deployment's one, also on a cluster, whose scripts
-- run with a home ``prefix:{b}:`` as P (zq/storage/redis/cluster.py).
local WOKEN = {}
local WAKE_CHANNEL = (P:match('^(.*){[^{}]*}:$') or P) .. 'wake'
local function wake(project, queue)
  local name = enc(project) .. queue
  if not WOKEN[name] then
    WOKEN[name] = true
    redis.call('PUBLISH', WAKE_CHANNEL, name)
  end
end

-- Append one event to the backend's stream (fields decoded by events.py),
-- and wake the queue it may make claimable.
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
  if WAKING[kind] then
    wake(project, queue)
  end
  if detail and type(detail[DETAIL.TO]) == 'string' then
    wake(project, detail[DETAIL.TO])
  end
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

-- A move decided in zq/poison/moves.py, passed as wire.MOVE_ARGS arguments from
-- ARGV[i] (wire.move_args): destination, ttl ('' = keep the message's
-- own), raw history entry as JSON, event kind, the event detail's fixed
-- part as JSON, reset the claim count ('1'), count a redrive ('1').
local function read_move(i)
  return {dest = ARGV[i], new_ttl = ARGV[i + 1] ~= '' and ARGV[i + 1] or nil,
          entry = ARGV[i + 2], kind = ARGV[i + 3], detail = ARGV[i + 4],
          reset = ARGV[i + 5] == '1', redrive = ARGV[i + 6] == '1'}
end

-- The dead letter policy decided in zq/poison/dead_letter.py (wire.policy_args):
-- ARGV[i] is the claim count from which a message is exhausted ('' = no
-- policy), then the move of exhausted messages.
local function read_policy(i)
  if ARGV[i] == '' then
    return nil
  end
  return {exhausted_from = tonumber(ARGV[i]), move = read_move(i + 1)}
end

-- Move one message of ``source`` as ``mv`` (read_move) says, with its event:
-- same id, body, marker and client; free in the destination (created if
-- missing); the ttl, the history entry and the counts as given; created
-- now and expires now + ttl. The caller checked the message may move.
local function move_msg(m, project, source, mv, claim_id, client)
  local target = ensure_queue(project, mv.dest)
  local ttl = mv.new_ttl or m.ttl
  local expires = NOW + tonumber(ttl)
  local hist
  if m.hist == '[]' then
    hist = '[' .. mv.entry .. ']'
  else
    hist = m.hist:sub(1, -2) .. ',' .. mv.entry .. ']'
  end
  if m.claim ~= '' then
    redis.call('SREM', K.claim_msgs(m.claim), m.id)
  end
  redis.call('HSET', K.msg(m.id), 'q', target, 'ttl', ttl, 'created', NOW_S,
             'expires', fmt(expires), 'claim', '', 'cexp', '0', 'delay', NOW_S, 'hist', hist)
  if mv.reset then
    -- What was forgiven goes with the claims it forgave (zq.poison.moves).
    redis.call('HSET', K.msg(m.id), 'count', 0, 'fc', 0)
    redis.call('HDEL', K.msg(m.id), 'lw')
  end
  if mv.redrive then
    redis.call('HINCRBY', K.msg(m.id), 'rc', 1)
  end
  unindex(m.q, m.id)
  redis.call('ZADD', K.order(target), m.marker, m.id)
  redis.call('ZADD', K.ready(target), m.marker, m.id)
  redis.call('ZADD', K.expiry(target), fmt(expires), m.id)
  redis.call('ZADD', K.queue_expiry(), 'LT', fmt(expires), target)
  -- zq.events.with_message_sample.
  local detail = cjson.decode(mv.detail)
  detail[DETAIL.FINGERPRINT] = m.fp
  detail[DETAIL.SAMPLE] = first_chars(m.body, DETAIL.SAMPLE_CHARS)
  event(project, source, mv.kind, m.id, claim_id, client, m.count, detail)
end

-- Keep (or, with '', drop) the queue's expiry move (wire.expiry_arg).
local function set_expiry_move(qid, xmove)
  if xmove == '' then
    redis.call('HDEL', K.queue(qid), 'xmove')
  else
    redis.call('HSET', K.queue(qid), 'xmove', xmove)
  end
end

-- The queue's expiry move (read_move's shape) for a move at NOW, or nil
-- when its expired messages are removed. The stored history entry lacks
-- only the time, added here under zq.poison.moves' name.
local function expiry_move(qid)
  local xmove = redis.call('HGET', K.queue(qid), 'xmove')
  if not xmove then
    return nil
  end
  local a = cjson.decode(xmove)
  local entry = a[3]:sub(1, -2) .. ',' .. cjson.encode(MOVE.TIME) .. ':' .. fmt(NOW) .. '}'
  return {dest = a[1], new_ttl = a[2] ~= '' and a[2] or nil, entry = entry, kind = a[4],
          detail = a[5], reset = a[6] == '1', redrive = a[7] == '1'}
end

local function queue_names(qid)
  local q = redis.call('HMGET', K.queue(qid), 'project', 'name')
  return q[1], q[2]
end

local function due(key)
  return redis.call('ZCOUNT', key, '-inf', NOW_S) > 0
end

-- Forget an expired claim: its messages are ready again, and an 'expired'
-- event counts those it still held.
local function collect_claim(cid)
  local c = redis.call('HMGET', K.claim(cid), 'q', 'client')
  local held = 0
  -- A claim of a purged or deleted queue: its messages are reclaimed with it.
  local members = c[1] and redis.call('EXISTS', K.queue(c[1])) == 1
                  and redis.call('SMEMBERS', K.claim_msgs(cid)) or {}
  for _, id in ipairs(members) do
    local m = load_msg(id, {'q', 'claim', 'delay', 'marker'})
    if m and m.claim == cid then
      held = held + 1
      -- The message keeps the claim's id and expiry: that is how the walk
      -- of a later claim or pop knows the claim lapsed on it (lapse in
      -- _breaker.lua); held() already sees it is over.
      unhold(m)
    end
  end
  if c[1] then
    local project, name = queue_names(c[1])
    if held > 0 and project then
      -- zq.events.claim_expired_detail.
      event(project, name, KIND.EXPIRED, nil, cid, c[2], nil,
            {[DETAIL.TARGET] = DETAIL.CLAIM_TARGET, [DETAIL.MESSAGES] = held})
    end
    redis.call('SREM', K.qclaims(c[1]), cid)
  end
  redis.call('DEL', K.claim(cid), K.claim_msgs(cid))
  redis.call('ZREM', K.claim_expiry(), cid)
end

-- Remove up to ``n`` expired messages of the queue, with their events, or
-- move them where the queue's expiry move says (``_dead_letter_expired``).
-- Returns how many ids it looked at, whether expired ones remain, how many
-- messages it removed and how many it moved.
local function sweep(qid, n)
  local ids = redis.call('ZRANGEBYSCORE', K.expiry(qid), '-inf', NOW_S, 'LIMIT', 0, n)
  if #ids == 0 then
    return 0, false, 0, 0
  end
  local project, name = queue_names(qid)
  local xmove = project and expiry_move(qid)
  local removed, moved = 0, 0
  for _, id in ipairs(ids) do
    local m = load_msg(id, STATE_FIELDS)
    if m and m.q == qid and not alive(m) then
      if m.claim ~= '' and redis.call('EXISTS', K.claim(m.claim)) == 1 then
        -- Its claim ended no later than the message: record that first, as
        -- gc would have, before the message is gone.
        collect_claim(m.claim)
        m.claim = ''
      end
      if xmove then
        moved = moved + 1
        move_msg(load_msg(id), project, name, xmove, nil, '')
      else
        removed = removed + 1
        remove_msg(m)
        if project then
          event(project, name, KIND.EXPIRED, id, nil, nil, m.count)
        end
      end
    elseif m and m.q == qid then
      redis.call('ZADD', K.expiry(qid), m.expires, id)
    else
      unindex(qid, id)
    end
  end
  return #ids, #ids == n and due(K.expiry(qid)), removed, moved
end

-- Move up to ``n`` messages whose held or waiting score has passed into
-- ready; held ones whose claim gave them a backoff that has not passed yet
-- (their score in the backoff set) go to waiting instead, which is why
-- held goes first. Returns whether such messages remain.
local function promote(qid, n)
  for _, key in ipairs({K.held(qid), K.waiting(qid)}) do
    local ids = n > 0 and redis.call('ZRANGEBYSCORE', key, '-inf', NOW_S, 'LIMIT', 0, n) or {}
    if #ids > 0 then
      local markers = redis.call('ZMSCORE', K.order(qid), unpack(ids))
      local free_at = key == K.held(qid) and redis.call('ZMSCORE', K.backoff(qid), unpack(ids))
      local entries, backing_off = {}, {}
      for i, id in ipairs(ids) do
        local at = free_at and tonumber(free_at[i])
        if at and at > NOW then
          backing_off[#backing_off + 1] = free_at[i]
          backing_off[#backing_off + 1] = id
        elseif markers[i] then
          entries[#entries + 1] = markers[i]
          entries[#entries + 1] = id
        end
      end
      zadd_pairs(K.ready(qid), entries)
      zadd_pairs(K.waiting(qid), backing_off)
      redis.call('ZREM', key, unpack(ids))
      if free_at then
        redis.call('ZREM', K.backoff(qid), unpack(ids))
      end
      n = n - #ids
    end
  end
  return n == 0 and (due(K.held(qid)) or due(K.waiting(qid)))
end

-- Whether the queue's sets are exact at NOW: nothing expired left in it,
-- nothing in held or waiting whose time has come.
local function settled(qid)
  return not (due(K.expiry(qid)) or due(K.held(qid)) or due(K.waiting(qid)))
end

-- The per-call work budget (ARGV[i], ARGV[i + 1]; wire.Budget): messages
-- removed or moved one by one (expired, dead lettered), and messages
-- promoted in bulk.
local function read_budget(i)
  return {work = tonumber(ARGV[i]), promote = tonumber(ARGV[i + 1])}
end

-- Bring the queue's sets up to NOW within the budget; true when they are
-- exact (settled), false when work remains for another call.
local function settle(qid, budget)
  local _, expired_left = sweep(qid, budget.work)
  local due_left = promote(qid, budget.promote)
  return not (expired_left or due_left)
end


-- Take messages from the head of the ready set of a settled queue: dead
-- letter the exhausted ones, hand the others to ``deliver`` until ``limit``
-- were delivered or ``budget.work`` were dead lettered. With ``rules``
-- (read_rules: a breaker or the blame split), a message whose claim lapsed
-- has its lapse seen first. Returns the delivered records and whether the
-- budget ran out.
local function take_batch(project, queue, qid, limit, policy, client, budget, deliver, rules)
  local taken, work = {}, 0
  while #taken < limit and work < budget.work do
    local ids = redis.call('ZRANGE', K.ready(qid), 0, limit - #taken - 1)
    if #ids == 0 then
      break
    end
    for _, id in ipairs(ids) do
      local m = load_msg(id)
      if not (m and m.q == qid and is_free(m)) then
        -- Never expected in a settled queue; put it where it belongs.
        redis.call('ZREM', K.ready(qid), id)
        if m and m.q == qid and alive(m) then
          index_state(m)
        end
        work = work + 1
      else
        local charged = rules and m.claim ~= '' and rules.lib.lapse(rules, m)
        if policy and tonumber(m.count) - tonumber(m.fc or '0') >= policy.exhausted_from then
          -- DeadLetterPolicy.is_exhausted's comparison, pinned by the contract suite.
          move_msg(m, project, queue, charged and rules.lib.lapsed_move(policy.move, queue, m)
                   or policy.move, nil, client)
          work = work + 1
        else
          taken[#taken + 1] = deliver(m)
        end
      end
      if work >= budget.work then
        break
      end
    end
  end
  return taken, work >= budget.work
end

-- Detach every message and claim from a queue at once: the name gets a new
-- queue id (``keep``, with the same metadata and version) or none, so the
-- old id's messages and claims are invisible from now on, and gc reclaims
-- their keys in batches (``reclaim``). Returns how many messages there were.
local function detach_queue(project, name, qid, keep)
  local n = redis.call('ZCARD', K.order(qid))
  redis.call('UNLINK', K.ready(qid), K.held(qid), K.waiting(qid), K.expiry(qid),
             K.backoff(qid), breaker_lib().breaker_keys(qid))
  redis.call('ZREM', K.queue_expiry(), qid)
  redis.call('SREM', K.redrive_due(), qid)
  redis.call('SADD', K.trash(), qid)
  if keep then
    local q = redis.call('HMGET', K.queue(qid), 'meta', 'mv', 'vid', 'xmove')
    local fresh = tostring(redis.call('INCR', K.qseq()))
    redis.call('HSET', K.queue(fresh), 'project', project, 'name', name, 'meta', q[1],
               'mv', q[2] or '0', 'vid', q[3] or qid)
    set_expiry_move(fresh, q[4] or '')
    redis.call('HSET', K.catalog(), enc(project) .. name, fresh)
  else
    redis.call('HDEL', K.catalog(), enc(project) .. name)
    redis.call('ZREM', K.project(project), name)
  end
  redis.call('DEL', K.queue(qid))
  return n
end

-- Delete up to ``n`` keys of a detached queue id; returns how many it
-- deleted and whether the id is gone for good.
local function reclaim(qid, n)
  local ids = redis.call('ZRANGE', K.order(qid), 0, n - 1)
  for _, id in ipairs(ids) do
    if redis.call('HGET', K.msg(id), 'q') == qid then
      redis.call('DEL', K.msg(id))
    end
  end
  if #ids > 0 then
    redis.call('ZREM', K.order(qid), unpack(ids))
  end
  local done = #ids
  if done < n then
    for _, cid in ipairs(redis.call('SPOP', K.qclaims(qid), n - done)) do
      redis.call('DEL', K.claim(cid), K.claim_msgs(cid))
      redis.call('ZREM', K.claim_expiry(), cid)
      done = done + 1
    end
  end
  if done < n then
    redis.call('SREM', K.trash(), qid)
    return done, true
  end
  return done, false
end

-- Subscriptions (SubscriptionController; key layout in zq/storage/redis/__init__.py).
function K.sub(sid) return P .. 's:' .. sid end
function K.sub_ids(project, queue) return P .. 'sq:' .. enc(project) .. queue end
function K.sub_by(project, queue) return P .. 'sb:' .. enc(project) .. queue end
function K.sub_expiry() return P .. 'sx' end

-- The subscription ``sid`` when it is live and belongs to (project, queue):
-- its {subscriber, expires}; nil otherwise.
local function live_subscription(sid, project, queue)
  local s = redis.call('HMGET', K.sub(sid), 'project', 'queue', 'subscriber', 'expires')
  if s[1] ~= project or s[2] ~= queue or tonumber(s[4]) <= NOW then
    return nil
  end
  return {s[3], s[4]}
end

-- Remove subscription ``sid`` and its index entries (no-op when missing).
local function drop_subscription(sid)
  local s = redis.call('HMGET', K.sub(sid), 'project', 'queue', 'subscriber')
  redis.call('ZREM', K.sub_expiry(), sid)
  if not s[1] then
    return 0
  end
  redis.call('ZREM', K.sub_ids(s[1], s[2]), sid)
  local by = K.sub_by(s[1], s[2])
  if redis.call('HGET', by, s[3]) == sid then
    redis.call('HDEL', by, s[3])
  end
  redis.call('DEL', K.sub(sid))
  return 1
end

-- Make room for ``subscriber`` on (project, queue), dropping an expired
-- holder. Returns the id of a live subscription holding it, else nil.
local function subscriber_holder(project, queue, subscriber)
  local other = redis.call('HGET', K.sub_by(project, queue), subscriber)
  if not other then
    return nil
  end
  if live_subscription(other, project, queue) then
    return other
  end
  drop_subscription(other)
  return nil
end

-- Remember claim ``cid`` in the queue's consumer log and forget the records
-- that expired before ``forget_before`` (ConsumerLog.record); also called by
-- claim.lua, in the claim's own script. Times are strings as given.
local function consumer_record(project, queue, cid, ttl, claimed, expires, settled, client,
                               forget_before)
  local log, by_expiry = K.consumers(project, queue), K.consumer_expiry(project, queue)
  local old = redis.call('ZRANGEBYSCORE', by_expiry, '-inf', '(' .. forget_before)
  for _, id in ipairs(old) do
    redis.call('HDEL', log, id)
  end
  redis.call('ZREMRANGEBYSCORE', by_expiry, '-inf', '(' .. forget_before)
  redis.call('HSET', log, cid, ttl .. '|' .. claimed .. '|' .. expires .. '|' .. settled .. '|' .. client)
  redis.call('ZADD', by_expiry, expires, cid)
end

-- ConsumerLog.settle (mode 'settle', or 'end': a release) and
-- ConsumerLog.extend (mode 'renew', with ``ttl``) of claim ``cid`` at NOW;
-- an unknown claim id changes nothing. Also called by delete.lua.
local function consumer_settle(project, queue, cid, mode, ttl)
  local log, by_expiry = K.consumers(project, queue), K.consumer_expiry(project, queue)
  local found = redis.call('HGET', log, cid)
  if not found then
    return 0
  end
  local was_ttl, claimed, expires, settled, client =
    string.match(found, '^([^|]*)|([^|]*)|([^|]*)|([^|]*)|(.*)$')
  local live = tonumber(expires) > NOW
  if mode == 'renew' and live then
    was_ttl = ttl
    expires = fmt(NOW + tonumber(ttl))
  else
    if settled ~= '' and not (mode == 'end' and live) then
      return 1  -- already settled: nothing to write
    end
    if settled == '' then
      settled = NOW_S
    end
    if mode == 'end' and live then
      expires = NOW_S
    end
  end
  redis.call('HSET', log, cid, was_ttl .. '|' .. claimed .. '|' .. expires .. '|' .. settled .. '|' .. client)
  redis.call('ZADD', by_expiry, expires, cid)
  return 1
end
