"""Blame split (zq.poison.blame): each lapse charged to the consumer or the message.

Decided by the claim or pop whose walk discovers the lapse, in its own
step. Every driver with ``Storage.has_breaker``; the others are skipped
until they carry it out.
"""

from __future__ import annotations

import pytest

from zq.poison import blame, moves
from zq.poison.breaker import BreakerPolicy
from zq.poison.dead_letter import DeadLetterPolicy
from zq.poison.history import compact_history
from zq.storage.delivery_rules import DeliveryRules
from zq.storage.records import ConsumerEntry

from .helpers import GRACE, ids, post

TTL = 3600
CLAIM = 60
SPLIT = DeliveryRules(blame_split=True)


@pytest.fixture(autouse=True)
def _only_with_breaker(storage):
    if not storage.has_breaker:
        pytest.skip("this driver does not carry out blame split yet (Storage.has_breaker)")


def take(storage, project, client_id, limit=1, *, rules=SPLIT, queue="q"):
    """A claim as the service makes it: the consumer log records it in the same step."""
    consumer = None if client_id is None else ConsumerEntry(client_id, keep_for=3600)
    return storage.claims.create(
        project, queue, ttl=CLAIM, grace=GRACE, limit=limit, client_id=client_id,
        rules=DeliveryRules(dead_letter=rules.dead_letter, consumer=consumer,
                            breaker=rules.breaker, blame_split=rules.blame_split))


def lapses(record):
    return [e for e in record.history if not moves.is_move_entry(e)]


def test_without_blame_split_every_lapse_is_the_messages(storage, project, clock):
    posted = post(storage, project, "q", 1, ttl=TTL)
    take(storage, project, "a", rules=DeliveryRules())
    clock.advance(CLAIM)
    again = take(storage, project, "b", rules=DeliveryRules())
    assert [(m.id, m.claim_count) for m in again.messages] == [(posted[0], 2)]
    record = storage.messages.get(project, "q", posted[0])
    assert (record.forgiven_count, record.history, record.lapsed_with) == (0, [], ())


def test_a_consumer_that_stopped_claiming_takes_the_blame(storage, project, clock):
    posted = post(storage, project, "q", 1, ttl=TTL)
    take(storage, project, "a")
    clock.advance(CLAIM)
    lapsed_at = clock.now()
    clock.advance(1)
    assert ids(take(storage, project, "b").messages) == posted
    record = storage.messages.get(project, "q", posted[0])
    assert (record.claim_count, record.forgiven_count, record.lapsed_with) == (2, 1, ("a",))
    # The entry's time is the lapse's: when the claim expired.
    assert lapses(record) == [{"queue": "q", "reason": moves.REASON_LAPSED, "time": lapsed_at,
                               "client_id": "a", "charged_to": blame.CONSUMER}]


def test_a_consumer_with_another_lapsed_claim_takes_the_blame(storage, project, clock):
    posted = post(storage, project, "q", 2, ttl=TTL)
    take(storage, project, "a")  # posted[0]
    take(storage, project, "a")  # posted[1]
    clock.advance(CLAIM)
    # "a" claims again (it is alive) and takes posted[0] back itself, but
    # its other claim lapsed unsettled: still suspected.
    again = take(storage, project, "a")
    assert ids(again.messages) == posted[:1]
    assert storage.messages.get(project, "q", posted[0]).forgiven_count == 1


def test_a_healthy_consumer_leaves_the_lapse_to_the_message(storage, project, clock):
    posted = post(storage, project, "q", 1, ttl=TTL)
    take(storage, project, "a")
    clock.advance(CLAIM)
    # The consumer that let it lapse claims again: alive, and no other lapse.
    assert ids(take(storage, project, "a").messages) == posted
    record = storage.messages.get(project, "q", posted[0])
    assert (record.forgiven_count, record.lapsed_with) == (0, ("a",))
    assert [e["charged_to"] for e in lapses(record)] == [blame.MESSAGE]


def test_a_claim_without_client_id_leaves_the_lapse_to_the_message(storage, project, clock):
    posted = post(storage, project, "q", 1, ttl=TTL)
    take(storage, project, None)
    clock.advance(CLAIM)
    take(storage, project, "b")
    record = storage.messages.get(project, "q", posted[0])
    assert (record.forgiven_count, record.lapsed_with) == (0, ())
    assert lapses(record)[0]["client_id"] is None
    assert lapses(record)[0]["charged_to"] == blame.MESSAGE


def test_lapses_with_two_consumers_are_the_messages_and_dead_letter_it(storage, project, clock):
    rules = DeliveryRules(blame_split=True,
                          dead_letter=DeadLetterPolicy(max_claim_count=1, queue="dlq"))
    posted = post(storage, project, "q", 1, ttl=TTL)
    take(storage, project, "a", rules=rules)
    clock.advance(CLAIM)
    # a's lapse: a stopped claiming, charged to a; b gets the message.
    assert ids(take(storage, project, "b", rules=rules).messages) == posted
    clock.advance(CLAIM)
    # b's lapse: the message lapsed with a and b, it is the common factor,
    # and with max_claim_count 1 it is exhausted: moved, reason "lapsed".
    assert take(storage, project, "c", rules=rules) is None
    moved = storage.messages.get(project, "dlq", posted[0])
    assert (moved.claim_count, moved.forgiven_count, moved.lapsed_with) == (2, 1, ("a", "b"))
    assert [(e["client_id"], e["charged_to"]) for e in lapses(moved)] == [
        ("a", blame.CONSUMER), ("b", blame.MESSAGE)]
    last = moved.history[-1]
    assert (last["queue"], last["reason"]) == ("q", moves.REASON_LAPSED)
    assert "a" in last["description"] and "b" in last["description"]
    # Shown compacted: the move apart from the lapses, which say whom they charged.
    shown = compact_history(moved.history)
    assert sorted((e["reason"], str(e.get("charged_to"))) for e in shown) == [
        ("lapsed", "None"), ("lapsed", blame.CONSUMER), ("lapsed", blame.MESSAGE)]


def test_lapses_with_two_consumers_beat_a_suspected_one(storage, project, clock):
    posted = post(storage, project, "q", 1, ttl=TTL)
    take(storage, project, "a")
    clock.advance(CLAIM)
    take(storage, project, "b")
    clock.advance(CLAIM)
    # b stopped claiming (suspected), but the message lapsed with a and b.
    take(storage, project, "c")
    record = storage.messages.get(project, "q", posted[0])
    assert record.forgiven_count == 1
    assert [e["charged_to"] for e in lapses(record)] == [blame.CONSUMER, blame.MESSAGE]


def test_a_pop_discovers_lapses_too(storage, project, clock):
    posted = post(storage, project, "q", 1, ttl=TTL)
    take(storage, project, "a")
    clock.advance(CLAIM)
    popped = storage.messages.pop(project, "q", limit=1, client_id="b", rules=SPLIT)
    assert [(m.id, m.forgiven_count) for m in popped] == [(posted[0], 1)]


def test_an_open_breaker_forgives_a_lapse_whoever_is_to_blame(storage, project, clock):
    policy = BreakerPolicy(failure_ratio=0.5, min_failures=1, probe_interval=5)
    rules = DeliveryRules(blame_split=True, breaker=policy)
    posted = post(storage, project, "q", 1, ttl=TTL)
    take(storage, project, "a", rules=rules)
    storage.breakers.force(project, "q", "open", policy, clock.now())
    clock.advance(CLAIM)
    # a claims again itself (healthy), but the breaker is open: an outage.
    probe = take(storage, project, "a", rules=rules)
    assert ids(probe.messages) == posted
    record = storage.messages.get(project, "q", posted[0])
    assert record.forgiven_count == 1
    assert [e["charged_to"] for e in lapses(record)] == [blame.OUTAGE]


def test_lapse_entries_are_bounded(storage, project, clock):
    posted = post(storage, project, "q", 1, ttl=TTL)
    for n in range(blame.LAPSE_ENTRIES + 3):
        take(storage, project, f"c{n}")
        clock.advance(CLAIM)
    take(storage, project, "last")
    record = storage.messages.get(project, "q", posted[0])
    assert len(lapses(record)) == blame.LAPSE_ENTRIES
    assert record.lapsed_with == ("c0", "c1")
