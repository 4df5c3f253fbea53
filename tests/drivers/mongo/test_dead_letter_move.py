"""The dead letter move is one conditional single-document update."""

from __future__ import annotations

from bson import ObjectId

from tests.drivers.mongo.helpers import bodies, message
from tests.drivers.mongo.recording import record
from zq.poison.dead_letter import DeadLetterPolicy
from zq.storage.delivery_rules import DeliveryRules
from zq.storage.mongo.documents import free
from zq.storage.mongo.moves import move_document

POLICY = DeadLetterPolicy(max_claim_count=1, queue="dlq", ttl=900)


def _claim(storage, project, limit=10):
    return storage.claims.create(project, "src", ttl=60, grace=60, limit=limit,
                                 client_id="c", rules=DeliveryRules(dead_letter=POLICY))


def test_move_is_one_update_rewriting_queue_times_claim_and_history(storage, project, clock):
    (mid,) = storage.messages.post(project, "src", [message()], client_id="c")
    first = _claim(storage, project)
    storage.claims.release(project, "src", first.id, client_id="c")
    clock.advance(5)
    recorder = record(storage)

    assert _claim(storage, project) is None

    writes = recorder.writes_to("messages", ObjectId(mid))
    assert [w.method for w in writes] == ["update_one"]
    (move,) = writes
    # Conditioned on still being free in the source queue, with the count
    # the decision was made on.
    assert move.filter["queue"] == "src"
    assert move.filter["claim_count"] == 1
    assert {"expires", "claim_expires", "delay_until"} <= set(move.filter)
    now = clock.now()
    assert move.update["$set"]["queue"] == "dlq"
    assert move.update["$set"]["ttl"] == 900
    assert move.update["$set"]["created"] == now
    assert move.update["$set"]["expires"] == now + 900
    assert move.update["$set"]["claim_id"] is None
    assert move.update["$push"]["history"] == {"queue": "src", "reason": "max_claim_count",
                                               "time": now}
    moved = storage.messages.get(project, "dlq", mid)
    assert (moved.queue, moved.claim_count, moved.ttl) == ("dlq", 1, 900)


def test_move_does_nothing_when_the_message_changed_since_it_was_read(storage, project, clock):
    (mid,) = storage.messages.post(project, "src", [message()], client_id="c")
    stale = storage._ctx.messages.find_one({"_id": ObjectId(mid)})
    _claim(storage, project)  # now held by a live claim, count 1

    assert not move_document(storage._ctx, stale, POLICY.move, clock.now(),
                             state=free(clock.now()), session=None)
    assert storage.messages.get(project, "src", mid).claim_count == 1
    assert storage.messages.get_many(project, "dlq", [mid]) == []


def test_moved_message_keeps_its_marker_next_to_the_dead_letter_queues_own(storage, project):
    storage.messages.post(project, "dlq", bodies(2), client_id="c")
    src_ids = storage.messages.post(project, "src", bodies(2), client_id="c")
    before = {m.id: m.marker for m in storage.messages.list(project, "src")}
    claim = _claim(storage, project)
    storage.claims.release(project, "src", claim.id, client_id="c")

    assert _claim(storage, project) is None

    listed = storage.messages.list(project, "dlq", limit=10)
    assert [m.marker for m in listed] == sorted(m.marker for m in listed)
    assert len({m.marker for m in listed}) == 4
    assert {m.id: m.marker for m in listed if m.id in src_ids} == before


def test_claim_fills_the_batch_past_exhausted_messages(storage, project):
    ids = storage.messages.post(project, "src", bodies(4), client_id="c")
    claim = _claim(storage, project, limit=4)
    storage.claims.release(project, "src", claim.id, client_id="c")
    storage.messages.post(project, "src", bodies(2), client_id="c")

    claim = _claim(storage, project, limit=2)

    assert claim is not None and len(claim.messages) == 2
    assert all(m.id not in ids for m in claim.messages)
    # Only the walked exhausted ones moved; the rest stay in src.
    in_dlq = {m.id for m in storage.messages.list(project, "dlq", limit=10)}
    assert in_dlq == set(ids)
