"""Dead letter moves made by claims (and pops) on exhausted messages."""

from __future__ import annotations

import json

import pytest

from zq import events
from zq.errors import MessageNotFound
from zq.poison.dead_letter import DeadLetterPolicy
from zq.storage.delivery_rules import DeliveryRules

from .helpers import TTL, claim, events_of, ids, post, raw_message

POLICY = DeadLetterPolicy(max_claim_count=2, queue="dlq")


def exhaust(storage, project, queue, count, *, policy=POLICY):
    """Post ``count`` messages and claim/release them max_claim_count times."""
    posted = post(storage, project, queue, count)
    for _ in range(policy.max_claim_count):
        claimed = claim(storage, project, queue, count, dead_letter=policy)
        assert ids(claimed.messages) == posted
        storage.claims.release(project, queue, claimed.id, client_id=None)
    return posted


def test_exhausted_messages_move_and_the_batch_is_still_filled(storage, project):
    poison = exhaust(storage, project, "q", 2)
    fresh = post(storage, project, "q", 3)
    claimed = claim(storage, project, "q", 3, dead_letter=POLICY, client_id="w")
    assert ids(claimed.messages) == fresh
    assert [m.claim_count for m in claimed.messages] == [1, 1, 1]
    assert storage.queues.exists(project, "dlq")
    moved = storage.messages.list(project, "dlq", echo=True)
    assert ids(moved) == poison
    for message in moved:
        assert message.queue == "dlq"
        assert message.claim_id is None
        assert message.claim_count == 2
    assert [json.loads(m.body) for m in moved] == [{"n": 0}, {"n": 1}]


def test_moved_message_is_gone_from_the_source(storage, project):
    poison = exhaust(storage, project, "q", 1)
    fresh = post(storage, project, "q", 1)
    claim(storage, project, "q", 5, dead_letter=POLICY)
    with pytest.raises(MessageNotFound):
        storage.messages.get(project, "q", poison[0])
    assert storage.messages.get_many(project, "q", poison) == []
    assert ids(storage.messages.list(
        project, "q", echo=True, include_claimed=True, include_delayed=True)) == fresh
    stats = storage.queues.stats(project, "q")
    assert (stats.free, stats.claimed, stats.oldest.id) == (0, 1, fresh[0])
    dlq_stats = storage.queues.stats(project, "dlq")
    assert (dlq_stats.free, dlq_stats.claimed, dlq_stats.oldest.id) == (1, 0, poison[0])
    assert storage.messages.get(project, "dlq", poison[0]).id == poison[0]


def test_claim_returns_none_after_only_moving(storage, project):
    poison = exhaust(storage, project, "q", 2)
    assert claim(storage, project, "q", 5, dead_letter=POLICY) is None
    assert ids(storage.messages.list(project, "dlq", echo=True)) == poison
    assert storage.queues.stats(project, "q").total == 0


def test_without_a_policy_nothing_moves(storage, project):
    posted = exhaust(storage, project, "q", 1)
    claimed = claim(storage, project, "q", dead_letter=None)
    assert ids(claimed.messages) == posted
    assert claimed.messages[0].claim_count == 3
    assert not storage.queues.exists(project, "dlq")


def test_move_appends_a_raw_history_entry(storage, project, clock):
    poison = exhaust(storage, project, "q", 1)
    clock.advance(5)
    claim(storage, project, "q", dead_letter=POLICY)
    moved = storage.messages.get(project, "dlq", poison[0])
    assert moved.history == [
        {"queue": "q", "reason": "max_claim_count", "time": pytest.approx(clock.now())}]


def test_a_second_move_from_another_queue_adds_a_second_entry(storage, project, clock):
    poison = exhaust(storage, project, "q", 1)
    claim(storage, project, "q", dead_letter=POLICY)
    first_move = clock.now()
    clock.advance(10)
    # In "dlq" it already has 2 claims: a policy of 3 lets it out once more.
    onward = DeadLetterPolicy(max_claim_count=3, queue="final")
    again = claim(storage, project, "dlq", dead_letter=onward)
    assert ids(again.messages) == poison
    storage.claims.release(project, "dlq", again.id, client_id=None)
    clock.advance(10)
    assert claim(storage, project, "dlq", dead_letter=onward) is None
    moved = storage.messages.get(project, "final", poison[0])
    assert moved.claim_count == 3
    assert moved.history == [
        {"queue": "q", "reason": "max_claim_count", "time": pytest.approx(first_move)},
        {"queue": "dlq", "reason": "max_claim_count", "time": pytest.approx(clock.now())},
    ]


def test_moved_message_keeps_its_ttl_and_restarts_expiry(storage, project, clock):
    poison = exhaust(storage, project, "q", 1)
    clock.advance(TTL - 1)
    claim(storage, project, "q", dead_letter=POLICY)
    moved = storage.messages.get(project, "dlq", poison[0])
    assert moved.ttl == TTL
    assert moved.created == pytest.approx(clock.now())
    assert moved.expires == pytest.approx(clock.now() + TTL)
    clock.advance(TTL - 1)
    assert storage.messages.get(project, "dlq", poison[0]).id == poison[0]
    clock.advance(1)
    with pytest.raises(MessageNotFound):
        storage.messages.get(project, "dlq", poison[0])


def test_moved_message_gets_the_policy_ttl(storage, project, clock):
    policy = DeadLetterPolicy(max_claim_count=1, queue="dlq", ttl=7200)
    poison = exhaust(storage, project, "q", 1, policy=policy)
    claim(storage, project, "q", dead_letter=policy)
    moved = storage.messages.get(project, "dlq", poison[0])
    assert moved.ttl == 7200
    assert moved.expires == pytest.approx(clock.now() + 7200)


def test_move_into_an_existing_queue_keeps_its_metadata(storage, project):
    storage.queues.create(project, "dlq", {"purpose": "poison"})
    exhaust(storage, project, "q", 1)
    claim(storage, project, "q", dead_letter=POLICY)
    assert storage.queues.get_metadata(project, "dlq") == {"purpose": "poison"}


def test_moved_message_keeps_its_marker_order_in_the_dlq(storage, project):
    early = post(storage, project, "dlq", 1)
    poison = exhaust(storage, project, "q", 1)
    late = post(storage, project, "dlq", 1)
    claim(storage, project, "q", dead_letter=POLICY)
    assert ids(storage.messages.list(project, "dlq", echo=True)) == early + poison + late


def test_pop_dead_letters_exhausted_messages_and_fills_the_batch(storage, project):
    poison = exhaust(storage, project, "q", 1)
    fresh = post(storage, project, "q", 2)
    popped = storage.messages.pop(project, "q", limit=2, client_id=None,
                                  rules=DeliveryRules(dead_letter=POLICY))
    assert ids(popped) == fresh
    assert ids(storage.messages.list(project, "dlq", echo=True)) == poison
    assert storage.queues.stats(project, "q").total == 0


def test_dead_lettered_event(storage, project):
    poison = exhaust(storage, project, "q", 1)
    body = storage.messages.get(project, "q", poison[0]).body
    claim(storage, project, "q", dead_letter=POLICY, client_id="w")
    [event] = events_of(storage, project, events.DEAD_LETTERED)
    assert (event.queue, event.message_id, event.claim_count) == ("q", poison[0], 2)
    assert event.detail == {
        "to": "dlq", "reason": "max_claim_count",
        "fingerprint": events.fingerprint(body), "sample": body}


def test_dead_lettered_event_samples_long_bodies(storage, project):
    policy = DeadLetterPolicy(max_claim_count=1, queue="dlq")
    text = json.dumps({"text": "x" * 3000})
    [message_id] = storage.messages.post(project, "q", [raw_message(text)], client_id=None)
    first = claim(storage, project, "q", dead_letter=policy)
    storage.claims.release(project, "q", first.id, client_id=None)
    claim(storage, project, "q", dead_letter=policy)
    [event] = events_of(storage, project, events.DEAD_LETTERED)
    assert event.detail["sample"] == text[:events.SAMPLE_CHARS]
    assert storage.messages.get(project, "dlq", message_id).body == text


def test_a_claim_that_moves_nothing_creates_no_dead_letter_queue(storage, project):
    post(storage, project, "q", 2)
    assert len(claim(storage, project, "q", 5, dead_letter=POLICY).messages) == 2
    assert not storage.queues.exists(project, "dlq")


def test_the_moves_are_recorded_before_the_claim_they_made_room_for(storage, project):
    poison = exhaust(storage, project, "q", 2)
    fresh = post(storage, project, "q", 2)
    claimed = claim(storage, project, "q", 2, dead_letter=POLICY)
    recorded = [(e.kind, e.message_id) for e in events_of(storage, project)
                if e.claim_id in (None, claimed.id)
                and e.kind in (events.DEAD_LETTERED, events.CLAIMED)]
    assert recorded == ([(events.DEAD_LETTERED, m) for m in poison]
                        + [(events.CLAIMED, m) for m in fresh])
