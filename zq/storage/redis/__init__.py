"""Redis storage driver: every state change is one Lua script.

URI: ``redis://[[user]:password@]host[:port][/db][?prefix=NAME]``,
``rediss://`` for TLS, ``redis+sentinel://h1:26379,h2/MASTER[/db]``
through Redis Sentinel, or ``redis+cluster://h1:7000,h2:7001/`` on a Redis
Cluster (zq/storage/redis/uri.py; on a cluster the layout below is
repeated under each project's home, zq/storage/redis/cluster.py). ``prefix`` (default
``zq``; letters, digits, ``_``, ``.``, ``-``) starts every key, so several
deployments or test sessions share one Redis without colliding. Requires Redis 7.0 or later (script
flags, exclusive XRANGE, XTRIM MINID).

Atomicity. Each state change (post, claim, pop, delete, delete_many, move,
renew, release, purge, queue_create, queue_set_metadata, queue_delete, gc,
events_trim, sub_create, sub_update, sub_confirm, sub_delete, sub_gc) is one
script in ``lua/``, with its events appended by XADD inside the same script.
Scripts receive the time from the driver's clock and never read the
server's TIME. Dead letter decisions are made in
zq.poison.dead_letter and passed in as arguments (see ``wire.policy_args``); the
claim and pop scripts only apply them. Scripts check everything before their
first write, and are flagged (``#!lua``) so that Redis refuses them before
they start when it is out of memory.

The breaker and the blame split (zq.storage.breakers, zq.poison.blame)
run inside the claim, pop, delete, delete_many, reject and move scripts
(lua/_breaker.lua, prepended to every script after lua/_lib.lua); with
neither on a queue those scripts run the same commands as before (a
message read names four more fields). The
breaker's keys are per queue id like the queue's other keys, so a purge
(a new id) and a delete drop them at once, and a change of the layout that
groups a queue's keys (a Redis Cluster hash tag) takes them along.

Key layout, version 2 (zq/storage/redis/layout.py). ``P`` is ``prefix:``;
``enc(s)`` is ``len(s) .. ':' .. s`` in bytes. Every family starts with its
own head, and names and project ids appear only length-prefixed or as hash
fields and set members, so no queue name or project id (``.``, ``:`` or any
bytes) can make two keys collide::

    P queues           hash  enc(project) .. queue -> qid (a number)
    P qseq             string counter for qids
    P p:enc(project)   zset  queue names of the project (score 0, by name)
    P l:enc(project)   string the project's links version (a counter)
    P q:<qid>          hash  project, name, meta (JSON text), mv (metadata changes),
                             vid (the version's id after a purge gave a new qid)
    P qo:<qid>         zset  message ids by marker: the queue's order
    P qr:<qid>         zset  ready (free now) message ids by marker
    P qh:<qid>         zset  held message ids by claim expiry
    P qw:<qid>         zset  waiting message ids by when they become claimable
    P qb:<qid>         zset  held message ids whose claim gave them a backoff
                             (zq.poison.backoff), by when they become claimable again:
                             where settling sends them once the claim expired
    P qx:<qid>         zset  message ids by expiry time
    P qc:<qid>         set   claim ids of the queue
    P qk:<qid>         hash  the queue's breaker (lua/_breaker.lua): st (state), since,
                             desc, tripped, closed, rdue (redrive due), np (next
                             probe), pc / pm (the probe's claim and message), ps
                             (probe successes), seq (outcome numbers)
    P qkf:<qid>        zset  the breaker window's failures (seq, message id,
                             description) by time
    P qkm:<qid>        zset  the window's failed message ids by last failure
    P qks:<qid>        zset  the window's successes by time
    P kd               set   queue ids whose breaker closed with its auto-redrive
                             still due (BreakerLog.due_redrives)
    P marker           string counter for markers (one sequence per backend)
    P m:<id>           hash  q, body, ttl, created, expires, client, claim,
                             cexp (claim expiry), count, hist (JSON list),
                             marker, delay (claimable from: a post's delay, or
                             the claim's expiry plus its backoff), fp (fingerprint),
                             rc (redrive count; absent: 0), fc (forgiven count;
                             absent: 0), lf (last failure), lw (lapsed with: JSON
                             list), lh (lapse history entries, one JSON object a
                             line); claim and cexp stay after the claim expired
                             (gc too), so that a later walk sees the lapse
    P c:<cid>          hash  q, ttl, grace, created, expires, client
    P cm:<cid>         set   message ids the claim took
    P xq               zset  queue ids by (a lower bound of) their first expiry
    P xc               zset  claim ids by expiry time
    P events           stream of events, read by the exporter
    P layout           string the key layout version
    P trash            set   ids of purged and deleted queues whose keys gc reclaims
    P s:<sid>          hash  project, queue, subscriber, ttl, created, expires,
                             options (JSON text), confirmed ('0'/'1')
    P sq:enc(project)queue  zset  the queue's subscription ids (score 0, by id)
    P sb:enc(project)queue  hash  subscriber -> subscription id
    P sx               zset  subscription ids by expiry (gc, live())
    P u:enc(project)queue   hash  the consumer log: claim id ->
                             "ttl|claimed|expires|settled|client" (zq.poison.consumers)
    P ux:enc(project)queue  zset  the same claim ids by expires (forgetting)
    P ub:enc(project)enc(queue)client  zset  the blame split's index of the log: a
                             Client-ID's claims made while it was on, by claim time
    P ul:enc(project)queue  hash  Client-ID -> its last claim time (the same index)
    P wake             pub/sub channel, not a key: enc(project) .. queue is
                             published by a script whose events may make a
                             message of the queue claimable (waiting claims,
                             zq/storage/redis/wake.py)

Every message of a queue is in its order, its expiry index and exactly one
of ready, held and waiting (and in qb only while in held). No script walks
a queue: each call that needs the queue exact first settles it (``settle`` in lua/_lib.lua: removes
expired messages, moves messages whose claim or delay ended into ready)
within a per-call budget (``wire.Budget``), answering AGAIN for the driver
to call again when the budget ran out; docs/redis.md has the bounds.

Expiry. Reads and writes compare stored times with the time passed in, so
an expired message or claim is invisible at once. Settling a queue removes
its expired messages; ``gc`` collects expired claims from ``xc`` and sweeps
the queues ``xq`` names (never scanning the keyspace), recording the
``expired`` events. Purging or deleting a queue detaches its messages at
once (the name gets a new queue id, or none) and ``gc`` deletes the old
id's keys in batches. Keys carry no Redis TTL: Redis would remove them by
its own clock, without the events.
"""

from zq.storage.redis.storage import RedisStorage, open_redis

__all__ = ["RedisStorage", "open_redis"]
