"""Every query the driver sends is served by an index.

The test runs every storage operation once while recording each filter the
driver sends. On a real server (ZQ_TEST_MONGO_URL) it asks the server to
``explain`` each one and fails on a collection scan. mongomock has no
``explain``, so there it checks each filter against the created indexes
the way the query planner picks one: the index's leading field is
constrained by the filter and a requested sort follows the index's
equality prefix (or the filter pins ``_id``, or the sort walks ``_id``).
Writes (update/delete) are explained as a find with the same filter: the
planner chooses their index the same way.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from bson import ObjectId

from tests.drivers.mongo.helpers import bodies
from tests.drivers.mongo.recording import Call, record
from tests.drivers.mongo.session import real_server_url
from zq.poison import moves
from zq.poison.breaker import BreakerPolicy
from zq.poison.dead_letter import DeadLetterPolicy
from zq.storage.delivery_rules import DeliveryRules
from zq.storage.mongo.indexes import INDEXES
from zq.storage.records import ConsumerEntry


def _every_operation(storage, project: str, clock) -> None:
    policy = DeadLetterPolicy(max_claim_count=1, queue="dlq")
    queues, messages, claims = storage.queues, storage.messages, storage.claims
    queues.create(project, "q", {"a": 1})
    queues.exists(project, "q")
    queues.get_metadata(project, "q")
    queues.set_metadata(project, "q", {"b": 2})
    queues.set_metadata(project, "q", {"b": 3},
                        expected_version=queues.read_metadata(project, "q").version,
                        links_version=queues.links_version(project))
    queues.create(project, "r", {}, links_version=queues.links_version(project))
    queues.list(project, marker="a", limit=5, name="q")
    queues.count(project, name="q")
    ids = messages.post(project, "q", bodies(4), client_id="c")
    messages.list(project, "q", marker=0, client_id="x")
    messages.get(project, "q", ids[0])
    messages.get_many(project, "q", ids)
    queues.stats(project, "q")
    claim = claims.create(project, "q", ttl=60, grace=60, limit=2, client_id="c",
                          rules=DeliveryRules(dead_letter=policy))
    claims.get(project, "q", claim.id)
    claims.renew(project, "q", claim.id, ttl=60, grace=60, client_id="c")
    messages.delete(project, "q", claim.messages[0].id, claim_id=claim.id, client_id="c")
    claims.release(project, "q", claim.id, client_id="c")
    claims.create(project, "q", ttl=60, grace=60, limit=1, client_id="c",
                  rules=DeliveryRules(dead_letter=policy))
    messages.pop(project, "q", limit=1, client_id="c", rules=DeliveryRules(dead_letter=policy))
    messages.delete_many(project, "q", ids, client_id="c")
    messages.delete_many(project, "q", ids, claim_ids=[claim.id], client_id="c")
    messages.post(project, "q", bodies(1), client_id="c")
    subs = storage.subscriptions
    sid = subs.create(project, "q", "http://h/1", 60, {})
    subs.create(project, "q", "http://h/1", 60, {})
    subs.get(project, "q", sid)
    subs.find(project, "q", "http://h/1")
    subs.exists(project, "q", sid)
    subs.list(project, "q", marker="a", limit=5)
    subs.update(project, "q", sid, subscriber="http://h/2", ttl=30, options={"a": 1})
    subs.confirm(project, "q", sid, confirmed=True)
    subs.for_queue(project, "q")
    subs.live()
    subs.delete(project, "q", sid)
    _breaker_operations(storage, project, clock)
    clock.advance(100_000)
    storage.gc()
    cursor = storage.events.read(limit=3)[-1].cursor
    storage.events.read(after=cursor)
    storage.events.trim(up_to=cursor)
    messages.post(project, "q", bodies(1), client_id="c")
    queues.purge(project, "q")
    queues.delete(project, "q")


def _breaker_operations(storage, project, clock) -> None:
    """Every breaker and blame split query: trip, probes, lapses, force, read."""
    policy = BreakerPolicy(failure_ratio=0.5, min_failures=1, probe_interval=1, close_after=1)
    rules = DeliveryRules(breaker=policy, blame_split=True,
                          consumer=ConsumerEntry("c", keep_for=3600))
    messages, claims = storage.messages, storage.claims
    ids = messages.post(project, "b", bodies(4), client_id="c")
    claims.create(project, "b", ttl=60, grace=60, limit=1, client_id="c", rules=rules)
    clock.advance(60)
    claim = claims.create(project, "b", ttl=60, grace=60, limit=4, client_id="c",
                          rules=rules)  # discovers a lapse, blames it
    messages.delete(project, "b", ids[1], claim_id=claim.id, client_id="c", rules=rules)
    messages.delete_many(project, "b", ids[2:3], claim_ids=[claim.id], client_id="c",
                         rules=rules)
    messages.reject(project, "b", ids[0], claim_id=claim.id, client_id="c",
                    description="down", retry_after=0, rules=rules)  # trips it
    messages.move(project, "b", ids[3:], moves.rejected("dlq", None, "down"),
                  claim_id=claim.id, client_id="c", rules=rules)  # held
    messages.pop(project, "b", limit=1, client_id="c", rules=rules)
    clock.advance(1)
    probe = claims.create(project, "b", ttl=60, grace=60, limit=4, client_id="c", rules=rules)
    messages.delete(project, "b", probe.messages[0].id, claim_id=probe.id, client_id="c",
                    rules=rules)
    storage.breakers.read(project, "b", policy, clock.now())
    storage.breakers.force(project, "b", "open", policy, clock.now())
    closed = storage.breakers.force(project, "b", "closed", policy, clock.now())
    storage.breakers.due_redrives()
    storage.breakers.redrive_done(project, "b", closed.closed_at)
    storage.queues.purge(project, "b")


def _recorded(storage, project, clock) -> list[Call]:
    recorder = record(storage)
    _every_operation(storage, project, clock)
    assert {c.collection for c in recorder.calls} >= {"queues", "messages", "claims",
                                                      "counters", "events", "breakers",
                                                      "breaker_outcomes", "consumers"}
    return recorder.calls


def _served(call: Call) -> bool:
    fields = set(call.filter or {})
    if "_id" in fields or (call.sort and call.sort[0][0] == "_id"):
        return True  # the _id index: by id, or walking the event log in order
    for _name, keys, _options in INDEXES.get(call.collection, []):
        if keys[0][0] not in fields:
            continue
        if not call.sort:
            return True
        equality_prefix = []
        for key, _direction in keys:
            if key in fields and not isinstance(call.filter[key], dict):
                equality_prefix.append(key)
            else:
                break
        following = [k for k, _ in keys[len(equality_prefix):]]
        if following and following[0] == call.sort[0][0]:
            return True
    return False


def _explain(storage, call: Call) -> dict[str, Any]:
    command: dict[str, Any] = {"find": call.collection, "filter": call.filter or {}}
    if call.sort:
        command["sort"] = dict(call.sort)
    return storage._connection.database.command("explain", command)


def test_every_query_uses_an_index(storage, project, clock):
    calls = _recorded(storage, project, clock)
    if real_server_url() is None:
        path = "mongomock: filters checked against the created indexes"
        unserved = [c for c in calls if not _served(c)]
    else:
        path = "real server: explain() of every filter"
        unserved = [c for c in calls if "COLLSCAN" in str(_explain(storage, c)["queryPlanner"])]
    print(f"checked {len(calls)} queries on {path}")
    assert unserved == []


def test_indexes_exist_and_start_up_is_idempotent(storage, mongo_factory, clock):
    mongo_factory(clock).close()  # a second start-up creates nothing new, raises nothing
    for collection, indexes in INDEXES.items():
        info = storage._connection.database[collection].index_information()
        for name, keys, options in indexes:
            assert [tuple(k) for k in info[name]["key"]] == keys
            for option, value in options.items():
                assert info[name][option] == value


def test_ttl_index_date_tracks_the_float_expiry(storage, project, clock):
    storage.messages.post(project, "q", bodies(1), client_id="c")
    doc = storage._ctx.messages.find_one({"project": project})
    posted_at = doc["expires_at"]
    storage.claims.create(project, "q", ttl=600, grace=600, limit=1, client_id="c",
                          rules=DeliveryRules(dead_letter=None))
    doc = storage._ctx.messages.find_one({"project": project})
    assert doc["expires"] == clock.now() + 1200
    # The date moved by the same amount as the float expiry (300 s -> 1200 s).
    assert (doc["expires_at"] - posted_at).total_seconds() >= 899


def test_the_mongomock_check_refuses_unindexed_filters_and_sorts():
    assert not _served(Call("messages", "find", {"body": "x"}, None, None))
    assert not _served(Call("messages", "find", {"project": "p", "queue": "q"}, None,
                            [("created", 1)]))
    assert _served(Call("messages", "find", {"project": "p", "queue": "q"}, None,
                        [("marker", 1)]))


def test_ttl_index_removes_a_message_an_hour_after_its_expiry_date(storage, project):
    """mongomock applies TTL indexes on access; a server's TTL monitor within a minute."""
    if real_server_url() is not None:
        pytest.skip("a server's TTL monitor runs every 60 s; not waited for")
    keep, drop = storage.messages.post(project, "q", bodies(2), client_id="c")
    two_hours_ago = datetime.now(UTC) - timedelta(hours=2)
    half_hour_ago = datetime.now(UTC) - timedelta(minutes=30)
    storage._ctx.messages.update_one({"_id": ObjectId(drop)},
                                   {"$set": {"expires_at": two_hours_ago}})
    storage._ctx.messages.update_one({"_id": ObjectId(keep)},
                                   {"$set": {"expires_at": half_hour_ago}})
    left = [str(d["_id"]) for d in storage._ctx.messages.find({"project": project})]
    assert left == [keep]
