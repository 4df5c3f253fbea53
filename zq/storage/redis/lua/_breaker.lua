-- The breaker and the blame split (zq.storage.breakers, zq.poison.breaker,
-- zq.poison.blame), carried out inside the reject, delete, claim, pop and
-- move scripts they belong to. Prepended to every script after _lib.lua.
-- The rules are decided in Python and passed in (wire.breaker_args); the
-- names come from the generated function breaker_names (zq.storage.redis.
-- scripts.events_prelude).
--
-- Every script runs the whole library each time it is called, so the
-- functions below are made only when a call needs them (breaker_lib, by
-- read_rules when a queue has a breaker or blame split, and by the
-- breaker_* scripts): a script on a queue with neither pays for one closure.

local built

function breaker_lib()  -- declared in _lib.lua
  if built then
    return built
  end
  local ENTRY, BREAKER, BLAME = breaker_names()
  local lib = {BREAKER = BREAKER}

  -- Per queue id, beside the queue's other keys (so they follow it into a
  -- hash slot, and a purge's new id starts without them):
  --   qk:<qid>  hash  the record: st (state), since, desc ('-' none, '+' .. text),
  --                   tripped, closed, rdue ('1': redrive due), np (next probe
  --                   at), pc and pm (the outstanding probe's claim and
  --                   message ids), ps (probe successes), seq (outcome numbers)
  --   qkf:<qid> zset  the window's failures: "seq:enc(message id)" .. desc, by time
  --   qkm:<qid> zset  the window's failed message ids, by their last failure
  --   qks:<qid> zset  the window's successes: the deleted message ids, by time
  function K.breaker(qid) return P .. 'qk:' .. qid end
  function K.failures(qid) return P .. 'qkf:' .. qid end
  function K.failed(qid) return P .. 'qkm:' .. qid end
  function K.successes(qid) return P .. 'qks:' .. qid end
  -- Backend-wide: the queue ids whose breaker closed with its auto-redrive
  -- still to run (BreakerLog.due_redrives, for housekeeping after a crash).
  function K.redrive_due() return P .. 'kd' end

  local function breaker_keys(qid)
    return K.breaker(qid), K.failures(qid), K.failed(qid), K.successes(qid)
  end

  local BREAKER_FIELDS = {'st', 'since', 'desc', 'tripped', 'closed', 'rdue', 'np', 'pc', 'pm',
                          'ps'}

  -- The stored record; defaults when nothing is stored (closed since 0).
  local function load_breaker(qid)
    local v = redis.call('HMGET', K.breaker(qid), unpack(BREAKER_FIELDS))
    local b = {}
    b.st = v[1] or BREAKER.CLOSED
    b.since = v[2] or '0'
    b.desc = v[3] and v[3] ~= '-' and v[3]:sub(2) or nil
    b.tripped, b.closed, b.rdue = v[4] or '', v[5] or '', v[6] == '1'
    b.np, b.pc, b.pm, b.ps = tonumber(v[7] or '0'), v[8] or '', v[9] or '', tonumber(v[10] or '0')
    return b
  end

  local function stored_desc(desc)
    return desc and ('+' .. desc) or '-'
  end

  -- Forget outcomes from before the window (zq.poison.breaker: those at or
  -- after NOW - window count).
  local function trim_outcomes(r)
    if r.trimmed then
      return  -- once per script: NOW does not move within it
    end
    r.trimmed = true
    local before = '(' .. fmt(NOW - r.window)
    redis.call('ZREMRANGEBYSCORE', K.failures(r.qid), '-inf', before)
    redis.call('ZREMRANGEBYSCORE', K.failed(r.qid), '-inf', before)
    redis.call('ZREMRANGEBYSCORE', K.successes(r.qid), '-inf', before)
  end

  -- Failures, successes and distinct failed messages from ``from`` on.
  local function outcome_counts(qid, from)
    local lo = fmt(from)
    return redis.call('ZCOUNT', K.failures(qid), lo, '+inf'),
           redis.call('ZCOUNT', K.successes(qid), lo, '+inf'),
           redis.call('ZCOUNT', K.failed(qid), lo, '+inf')
  end

  -- zq.poison.breaker.most_common over the failures from ``from`` on: the
  -- description most of them share (those without one left out), a tie to
  -- the one seen most recently; nil when none had one.
  local function most_common(qid, from)
    local rows = redis.call('ZRANGEBYSCORE', K.failures(qid), fmt(from), '+inf', 'WITHSCORES')
    local counts, last, order = {}, {}, {}
    for i = 1, #rows, 2 do
      local member = rows[i]
      local colon = member:find(':', 1, true)
      local head = member:find(':', colon + 1, true)
      local len = tonumber(member:sub(colon + 1, head - 1))
      local mark = head + len + 1
      if member:sub(mark, mark) == '+' then
        local desc = member:sub(mark + 1)
        if not counts[desc] then
          counts[desc] = 0
          order[#order + 1] = desc
        end
        counts[desc] = counts[desc] + 1
        last[desc] = math.max(last[desc] or -math.huge, tonumber(rows[i + 1]))
      end
    end
    local best
    for _, desc in ipairs(order) do
      if not best or counts[desc] > counts[best]
         or (counts[desc] == counts[best] and last[desc] > last[best]) then
        best = desc
      end
    end
    return best
  end

  -- A ``breaker`` event (zq.events.breaker_detail): the state left and
  -- entered, the outage's description and the window's counts at the change.
  local function breaker_event(r, to, from, desc, fails, oks, forced)
    local detail = {}
    detail[DETAIL.STATE] = to
    detail[DETAIL.PREVIOUS] = from
    detail[DETAIL.DESCRIPTION] = desc or cjson.null
    detail[DETAIL.FAILURES] = fails
    detail[DETAIL.SUCCESSES] = oks
    detail[DETAIL.FORCED] = forced
    event(r.project, r.queue, KIND.BREAKER, nil, nil, nil, nil, detail)
  end

  -- Open (a trip, or forced): the window's most common description, the
  -- first probe one interval from now.
  local function open_breaker(r, b, forced)
    local from = NOW - r.window
    local desc = most_common(r.qid, from)
    local fails, oks = outcome_counts(r.qid, from)
    redis.call('HSET', K.breaker(r.qid), 'st', BREAKER.OPEN, 'since', NOW_S, 'tripped', NOW_S,
               'desc', stored_desc(desc), 'np', fmt(NOW + r.probe_interval), 'pc', '', 'pm', '',
               'ps', 0)
    breaker_event(r, BREAKER.OPEN, b.st, desc, fails, oks, forced)
  end

  -- Closed after an outage (probes, or forced): the window starts over, so
  -- the outage's failures cannot trip it again, and its auto-redrive is due.
  local function close_breaker(r, b, forced)
    local fails, oks = outcome_counts(r.qid, NOW - r.window)
    local _, f, m, s = breaker_keys(r.qid)
    redis.call('DEL', f, m, s)
    redis.call('HSET', K.breaker(r.qid), 'st', BREAKER.CLOSED, 'since', NOW_S, 'closed', NOW_S,
               'rdue', r.redrive_max > 0 and '1' or '', 'np', 0, 'pc', '', 'pm', '', 'ps', 0)
    if r.redrive_max > 0 then
      redis.call('SADD', K.redrive_due(), r.qid)
    else
      redis.call('SREM', K.redrive_due(), r.qid)
    end
    breaker_event(r, BREAKER.CLOSED, b.st, b.desc, fails, oks, forced)
  end

  -- Whether the breaker was open (or half-open) at ``at``: from its last
  -- trip on, until it closed if it has since.
  local function outage_at(b, at)
    if b.tripped == '' or at < tonumber(b.tripped) then
      return false
    end
    return b.st ~= BREAKER.CLOSED or (b.closed ~= '' and at < tonumber(b.closed))
  end

  -- A failure of message ``mid`` (``desc``: its stored description, nil for
  -- a lapse) at time ``at`` (a lapse: its claim's expiry), by claim ``cid``.
  -- Recorded; a closed breaker may trip on it (the failure that trips it is
  -- charged); a failed probe opens it again. Returns whether the failure is
  -- forgiven: the breaker was open or half-open at ``at`` (outage_at; a
  -- lapse seen after the close whose claim expired during the outage too).
  local function breaker_failure(r, mid, desc, at, cid)
    local b = load_breaker(r.qid)
    -- Decided before the failure may trip it: the tripping one is charged.
    local forgiven = outage_at(b, at)
    if at >= NOW - r.window then
      local seq = redis.call('HINCRBY', K.breaker(r.qid), 'seq', 1)
      local member = seq .. ':' .. enc(mid) .. (desc and ('+' .. desc) or '-')
      redis.call('ZADD', K.failures(r.qid), fmt(at), member)
      redis.call('ZADD', K.failed(r.qid), 'GT', fmt(at), mid)
    end
    trim_outcomes(r)
    if b.st == BREAKER.CLOSED then
      local fails, oks, msgs = outcome_counts(r.qid, NOW - r.window)
      local total = fails + oks
      -- zq.poison.breaker.trips.
      if total > 0 and fails >= r.ratio * total and msgs >= r.min_failures then
        open_breaker(r, b, false)
      end
      return forgiven
    end
    if cid ~= '' and cid == b.pc and mid == b.pm then
      -- A failed probe: its message is held back (hold_probe, applied by the
      -- caller once it has given the message its own delay).
      r.held_id, r.held_until = mid, NOW + r.probe_interval * (r.close_after + 1)
      redis.call('HSET', K.breaker(r.qid), 'st', BREAKER.OPEN, 'ps', 0, 'pc', '', 'pm', '',
                 'np', fmt(NOW + r.probe_interval))
      if b.st ~= BREAKER.OPEN then
        redis.call('HSET', K.breaker(r.qid), 'since', NOW_S)
        local fails, oks = outcome_counts(r.qid, NOW - r.window)
        breaker_event(r, BREAKER.OPEN, b.st, b.desc, fails, oks, false)
      end
    end
    return forgiven
  end

  -- A delete of message ``mid`` by the holder of live claim ``cid``: a
  -- success; the probe's moves an open breaker to half-open (the next probe
  -- may go at once) and, the close_after-th in a row, closes it.
  local function breaker_success(r, mid, cid)
    -- A message is deleted once: its id names the success.
    redis.call('ZADD', K.successes(r.qid), NOW_S, mid)
    trim_outcomes(r)
    local b = load_breaker(r.qid)
    if b.st == BREAKER.CLOSED or b.pc == '' or cid ~= b.pc or mid ~= b.pm then
      return
    end
    local probes = b.ps + 1
    if probes >= r.close_after then
      close_breaker(r, b, false)
      return
    end
    redis.call('HSET', K.breaker(r.qid), 'ps', probes, 'pc', '', 'pm', '', 'np', NOW_S)
    if b.st == BREAKER.OPEN then
      redis.call('HSET', K.breaker(r.qid), 'st', BREAKER.HALF_OPEN, 'since', NOW_S)
      local fails, oks = outcome_counts(r.qid, NOW - r.window)
      breaker_event(r, BREAKER.HALF_OPEN, b.st, b.desc, fails, oks, false)
    end
  end

  -- The Client-ID of lapsed claim ``cid``: its consumer log record's, else
  -- its claim's while gc has not collected it; '' when unknown.
  local function lapse_client(r, cid)
    local found = redis.call('HGET', K.consumers(r.project, r.queue), cid)
    if found then
      return (string.match(found, '^[^|]*|[^|]*|[^|]*|[^|]*|(.*)$'))
    end
    return redis.call('HGET', K.claim(cid), 'client') or ''
  end

  -- The blame split's index of the consumer log, per queue name like the
  -- log itself (it outlives a purge; ConsumerLog.forget drops it): for each
  -- Client-ID, its claims made while the split was on (``ub``, by claim
  -- time, forgotten with the log) and its last claim time (``ul``). Claims
  -- of the index found settled or forgotten are dropped by the reader, so
  -- reading costs the client's live and lapsed claims, not the whole log.
  function K.blame_claims(project, queue, client)
    return P .. 'ub:' .. enc(project) .. enc(queue) .. client
  end
  function K.blame_last(project, queue) return P .. 'ul:' .. enc(project) .. queue end

  -- A claim ``cid`` by ``client`` at ``claimed`` (strings as given), in the
  -- claim's script; records claimed before ``forget_before`` are forgotten
  -- as the log forgets them.
  local function index_claim(r, cid, client, claimed, forget_before)
    local key = K.blame_claims(r.project, r.queue, client)
    redis.call('ZREMRANGEBYSCORE', key, '-inf', '(' .. forget_before)
    redis.call('ZADD', key, claimed, cid)
    redis.call('HSET', K.blame_last(r.project, r.queue), client, claimed)
  end

  -- ConsumerLog.forget's part: the index of the queue's consumer log.
  local function forget_index(project, queue)
    local last = K.blame_last(project, queue)
    for _, client in ipairs(redis.call('HKEYS', last)) do
      redis.call('DEL', K.blame_claims(project, queue, client))
    end
    redis.call('DEL', last)
  end

  -- ``client``'s claims that expired unsettled (lapsed), as a set, read
  -- once per script from the index (dropping what is settled or forgotten).
  local function lapsed_claims(r, client)
    r.lapsed = r.lapsed or {}
    if r.lapsed[client] then
      return r.lapsed[client]
    end
    local found, gone = {}, {}
    local key, log = K.blame_claims(r.project, r.queue, client), K.consumers(r.project, r.queue)
    for _, id in ipairs(redis.call('ZRANGE', key, 0, -1)) do
      local rec = redis.call('HGET', log, id)
      local expires, settled
      if rec then
        expires, settled = string.match(rec, '^[^|]*|[^|]*|([^|]*)|([^|]*)|')
      end
      if not rec or settled ~= '' then
        gone[#gone + 1] = id
      elseif tonumber(expires) <= NOW then
        found[id] = true
      end
    end
    if #gone > 0 then
      for i = 1, #gone, 1000 do
        redis.call('ZREM', key, unpack(gone, i, math.min(i + 999, #gone)))
      end
    end
    r.lapsed[client] = found
    return found
  end

  -- zq.poison.blame.suspects for ``client``'s lapsed claim ``cid`` (expired
  -- at ``at``): another of its claims lapsed, or it made no claim since
  -- (the claim being made now by the same Client-ID counts).
  local function suspected(r, client, cid, at)
    for id in pairs(lapsed_claims(r, client)) do
      if id ~= cid then
        return true
      end
    end
    if r.claiming and r.client == client then
      return false
    end
    local last = redis.call('HGET', K.blame_last(r.project, r.queue), client)
    return not (last and tonumber(last) >= at)
  end

  -- The history entry of a lapse (zq.poison.blame.lapse_entry) whose claim
  -- expired at ``at``, as JSON text written here so that its time keeps every
  -- digit (cjson.encode keeps 14).
  local function lapse_entry(r, at, client, charged)
    return '{' .. cjson.encode(ENTRY.QUEUE) .. ':' .. cjson.encode(r.queue) .. ','
           .. cjson.encode(ENTRY.REASON) .. ':' .. cjson.encode(ENTRY.LAPSED) .. ','
           .. cjson.encode(ENTRY.TIME) .. ':' .. fmt(at) .. ','
           .. cjson.encode(ENTRY.CLIENT_ID) .. ':'
           .. (client ~= '' and cjson.encode(client) or 'null') .. ','
           .. cjson.encode(ENTRY.CHARGED_TO) .. ':' .. cjson.encode(charged) .. '}'
  end

  -- A message's lapse entries (field ``lh``): one JSON object per line,
  -- oldest first, the BLAME.LAPSE_ENTRIES most recent kept (the driver merges
  -- them into the history by time: wire.message_record).
  local function with_lapse(lh, entry)
    local kept = {}
    for line in string.gmatch(lh or '', '[^\n]+') do
      kept[#kept + 1] = line
    end
    kept[#kept + 1] = entry
    local first = math.max(1, #kept - BLAME.LAPSE_ENTRIES + 1)
    return table.concat(kept, '\n', first, #kept)
  end

  -- Fill zq.poison.blame.exhaustion_description (its three forms, generated
  -- with the placeholders {1} and {2}) with the message's lapse Client-IDs.
  local function exhaustion_description(with)
    local text = BLAME.EXHAUSTED[math.min(#with, 2) + 1]
    for k = #with, 1, -1 do
      if k <= 2 then
        local at = text:find('{' .. k .. '}', 1, true)
        text = text:sub(1, at - 1) .. with[k] .. text:sub(at + 3)
      end
    end
    return text
  end

  -- The move of a message exhausted by a lapse charged to it
  -- (zq.poison.moves.lapsed): the policy's destination and ttl.
  local function lapsed_move(policy_move, queue, m)
    local desc = exhaustion_description(m.lapsed)
    local detail = cjson.decode(policy_move.detail)
    detail[DETAIL.REASON] = ENTRY.LAPSED
    detail[DETAIL.DESCRIPTION] = desc
    local entry = '{' .. cjson.encode(ENTRY.QUEUE) .. ':' .. cjson.encode(queue) .. ','
                  .. cjson.encode(ENTRY.REASON) .. ':' .. cjson.encode(ENTRY.LAPSED) .. ','
                  .. cjson.encode(ENTRY.TIME) .. ':' .. fmt(NOW) .. ','
                  .. cjson.encode(ENTRY.DESCRIPTION) .. ':' .. cjson.encode(desc) .. '}'
    return {dest = policy_move.dest, new_ttl = policy_move.new_ttl, entry = entry,
            kind = policy_move.kind, detail = cjson.encode(detail), reset = policy_move.reset,
            redrive = policy_move.redrive}
  end

  -- The lapse of free message ``m`` (a whole load_msg), which still carries
  -- the claim that expired on it: met by a claim's or pop's walk (or, for
  -- an open breaker's probe, by the next claim). Records the failure, blames
  -- it (blame split), forgives it when it is not the message's. Returns
  -- whether it was charged to the message under the blame split (an
  -- exhausted message then moves with reason ``lapsed``).
  local function lapse(r, m)
    local cid, at = m.claim, tonumber(m.cexp)
    local client = lapse_client(r, cid)
    local outage = false
    if r.ratio then
      outage = breaker_failure(r, m.id, nil, at, cid)
      -- A lapse has no description (zq.storage.breakers: last_failure None).
      redis.call('HDEL', K.msg(m.id), 'lf')
      m.lf = nil
    end
    local forgiven, charged_message = outage, false
    if r.blame then
      local with = m.lw and m.lw ~= '' and cjson.decode(m.lw) or {}
      local known = false
      for _, c in ipairs(with) do
        known = known or c == client
      end
      if client ~= '' and not known and #with < BLAME.LAPSED_WITH then
        with[#with + 1] = client
        m.lw = cjson.encode(with)
        redis.call('HSET', K.msg(m.id), 'lw', m.lw)
      end
      -- zq.poison.blame.judge.
      local charged
      if outage then
        charged = BLAME.OUTAGE
      elseif #with >= BLAME.LAPSED_WITH and client ~= '' then
        charged = BLAME.MESSAGE
      elseif client ~= '' and suspected(r, client, cid, at) then
        charged = BLAME.CONSUMER
      else
        charged = BLAME.MESSAGE
      end
      m.lapsed = with
      m.lh = with_lapse(m.lh, lapse_entry(r, at, client, charged))
      redis.call('HSET', K.msg(m.id), 'lh', m.lh)
      forgiven, charged_message = charged ~= BLAME.MESSAGE, charged == BLAME.MESSAGE
    end
    if forgiven then
      m.fc = tostring(redis.call('HINCRBY', K.msg(m.id), 'fc', 1))
    end
    return charged_message
  end

  -- Hold back the message of a failed probe (zq.poison.breaker.BreakerPolicy.
  -- probe_hold): not claimable before r.held_until, so that the next probe is
  -- another message and a poison message at the head cannot keep it open.
  -- Called once the message is free (its claim left, its own delay set).
  local function hold_probe(r, mid)
    if not r or r.held_id ~= mid then
      return
    end
    r.held_id = nil
    local m = load_msg(mid, {'q', 'delay', 'marker', 'claim', 'cexp', 'expires'})
    if not m or tonumber(m.delay) >= r.held_until then
      return
    end
    m.delay = fmt(r.held_until)
    redis.call('HSET', K.msg(mid), 'delay', m.delay)
    redis.call('ZREM', K.ready(m.q), mid)
    redis.call('ZREM', K.held(m.q), mid)
    redis.call('ZREM', K.backoff(m.q), mid)
    redis.call('ZADD', K.waiting(m.q), m.delay, mid)
  end

  -- The breaker gate of a claim: whether it may deliver now, and whether what
  -- it delivers is the probe (one message). An outstanding probe whose claim
  -- lapsed is its failure, seen here.
  local function probe_gate(r)
    local b = load_breaker(r.qid)
    if b.st == BREAKER.CLOSED then
      return true, false
    end
    if b.pc ~= '' then
      local m = load_msg(b.pm)
      if m and m.q == r.qid and alive(m) and m.claim == b.pc then
        if held(m) then
          return false, false
        end
        lapse(r, m)
        -- Seen: the walk must not count this lapse again.
        redis.call('HSET', K.msg(m.id), 'claim', '', 'cexp', '0')
        hold_probe(r, m.id)
        b = load_breaker(r.qid)
      end
    end
    return NOW >= b.np, true
  end

  -- Record the claim ``cid`` that took message ``mid`` as the probe.
  local function probe_taken(r, cid, mid)
    redis.call('HSET', K.breaker(r.qid), 'pc', cid, 'pm', mid, 'np', fmt(NOW + r.probe_interval))
  end

  -- Whether pops deliver: not while the breaker is open or half-open.
  local function breaker_closed(r)
    return not r.ratio or load_breaker(r.qid).st == BREAKER.CLOSED
  end

  -- A reject (retry or terminal) of message ``mid`` by the holder of live
  -- claim ``cid``, with its stored description: the message's last failure,
  -- and the breaker's failure. Returns whether it is forgiven (the breaker is
  -- open: a terminal reject is then held as a retry).
  local function breaker_reject(r, mid, cid, desc)
    if desc then
      redis.call('HSET', K.msg(mid), 'lf', desc)
    else
      redis.call('HDEL', K.msg(mid), 'lf')
    end
    local forgiven = breaker_failure(r, mid, desc, NOW, cid)
    if forgiven then
      redis.call('HINCRBY', K.msg(mid), 'fc', 1)
    end
    return forgiven
  end

  -- BreakerLog.read's answer for queue ``qid`` (nil: none) and window
  -- ``window`` (seconds): {state, since, description or false, tripped at,
  -- closed at ('' when never), redrive due (1/0), outage description or
  -- false}. Closed: the description is the current window's most common;
  -- otherwise the outage's, which a close keeps until the next opening.
  local function breaker_state(qid, window)
    if not qid then
      return {BREAKER.CLOSED, '0', false, '', '', 0, false}
    end
    local b = load_breaker(qid)
    local desc = b.desc
    if b.st == BREAKER.CLOSED then
      desc = most_common(qid, NOW - window)
    end
    return {b.st, b.since, desc or false, b.tripped, b.closed, b.rdue and 1 or 0,
            b.desc or false}
  end

  lib.breaker_keys = breaker_keys
  lib.load_breaker = load_breaker
  lib.open_breaker = open_breaker
  lib.close_breaker = close_breaker
  lib.breaker_success = breaker_success
  lib.lapse = lapse
  lib.lapsed_move = lapsed_move
  lib.probe_gate = probe_gate
  lib.probe_taken = probe_taken
  lib.hold_probe = hold_probe
  lib.breaker_closed = breaker_closed
  lib.breaker_reject = breaker_reject
  lib.breaker_state = breaker_state
  lib.index_claim = index_claim
  lib.forget_index = forget_index
  built = lib
  return lib
end

-- The rules of one call from ARGV[i] .. ARGV[i + 6] (wire.BREAKER_ARGS):
-- the breaker policy (ratio '' = no breaker; min failures, window, probe
-- interval, close after, auto-redrive max) and the blame split ('1').
-- nil when neither is on: the script then does exactly what it did before.
local function read_rules(i, project, queue, qid, client)
  local on, blame = ARGV[i] ~= '', ARGV[i + 6] == '1'
  if not (on or blame) then
    return nil
  end
  local r = {project = project, queue = queue, qid = qid, client = client or '',
             blame = blame}
  if on then
    r.ratio, r.min_failures, r.window = tonumber(ARGV[i]), tonumber(ARGV[i + 1]),
                                         tonumber(ARGV[i + 2])
    r.probe_interval, r.close_after = tonumber(ARGV[i + 3]), tonumber(ARGV[i + 4])
    r.redrive_max = tonumber(ARGV[i + 5])
  end
  r.lib = breaker_lib()
  return r
end

