"""MessageController.move: the one atomic move of every poison feature.

Also pins what zq/poison/moves.py says a driver computes itself (ttl, times,
counts, history entry, event) and the exhaustion threshold the Redis
scripts compare with (DeadLetterPolicy.is_exhausted).
"""

from __future__ import annotations

import json

import pytest

from zq import events
from zq.errors import ClaimMismatch, MessageNotFound
from zq.poison import moves
from zq.poison.dead_letter import DeadLetterPolicy

from .helpers import TTL, claim, events_of, ids, post, raw_message

EVERYTHING = {"echo": True, "include_claimed": True, "include_delayed": True}


def where(storage, project, message_id, queues=("q", "dlq", "back")):
    """The queues in which the message is alive (exactly one, after a move)."""
    found = []
    for queue in queues:
        try:
            storage.messages.get(project, queue, message_id)
        except MessageNotFound:
            continue
        found.append(queue)
    return found


def test_a_move_puts_each_message_in_exactly_one_queue(storage, project, clock):
    posted = post(storage, project, "q", 3)
    clock.advance(7)
    moved = storage.messages.move(project, "q", [posted[2], posted[0]],
                                  moves.rejected("dlq", None, "KeyError: 'order_id'"),
                                  client_id="mover")
    assert moved == [posted[0], posted[2]]  # queue order
    assert [where(storage, project, i) for i in posted] == [["dlq"], ["q"], ["dlq"]]
    assert storage.queues.exists(project, "dlq")
    assert ids(storage.messages.list(project, "dlq", **EVERYTHING)) == [posted[0], posted[2]]
    assert ids(storage.messages.list(project, "q", **EVERYTHING)) == [posted[1]]
    assert (storage.queues.stats(project, "q").total,
            storage.queues.stats(project, "dlq").total) == (1, 2)


def test_the_moved_message_has_exactly_the_decided_values(storage, project, clock):
    [mid] = post(storage, project, "q", 1)
    before = storage.messages.get(project, "q", mid)
    clock.advance(TTL - 10)
    move = moves.rejected("dlq", None, "boom")
    storage.messages.move(project, "q", [mid], move, client_id="mover")
    after = storage.messages.get(project, "dlq", mid)
    now = clock.now()
    assert after.queue == "dlq"
    assert after.body == before.body and after.marker == before.marker
    assert after.client_id == before.client_id
    assert after.ttl == TTL  # Move.ttl None: its own
    assert after.created == pytest.approx(now)
    assert after.expires == pytest.approx(now + TTL)
    assert after.claim_id is None
    assert (after.claim_count, after.redrive_count) == (0, 0)
    assert after.history == [{"queue": "q", "reason": "rejected", "time": pytest.approx(now),
                              "description": "boom"}]


def test_a_move_with_a_ttl_restarts_expiry_with_it(storage, project, clock):
    [mid] = post(storage, project, "q", 1)
    clock.advance(100)
    storage.messages.move(project, "q", [mid], moves.expired("dlq", 50), client_id=None)
    moved = storage.messages.get(project, "dlq", mid)
    assert (moved.ttl, moved.expires) == (50, pytest.approx(clock.now() + 50))
    clock.advance(49)
    assert where(storage, project, mid) == ["dlq"]
    clock.advance(1)
    assert where(storage, project, mid) == []


def test_a_move_records_its_event_in_the_same_step(storage, project, clock):
    body = json.dumps({"big": "x" * 2000})
    [mid] = storage.messages.post(project, "q", [raw_message(body)], client_id="poster")
    claimed = claim(storage, project, "q", 1)
    storage.messages.move(project, "q", [mid], moves.rejected("dlq", None, "bad"),
                          claim_id=claimed.id, client_id="rejecter")
    [event] = events_of(storage, project, events.DEAD_LETTERED)
    assert (event.queue, event.message_id, event.claim_id, event.client_id,
            event.claim_count) == ("q", mid, claimed.id, "rejecter", 1)
    assert event.time == pytest.approx(clock.now())
    assert event.detail == {"to": "dlq", "reason": "rejected", "description": "bad",
                            "fingerprint": events.fingerprint(body),
                            "sample": body[:events.SAMPLE_CHARS]}
    assert event.detail == moves.rejected("dlq", None, "bad").event_detail(
        events.fingerprint(body), body)


def test_a_redrive_resets_claims_counts_redrives_and_records_redriven(storage, project, clock):
    [mid] = post(storage, project, "q", 1)
    policy = DeadLetterPolicy(max_claim_count=1, queue="dlq")
    held = claim(storage, project, "q", 1, dead_letter=policy)
    storage.claims.release(project, "q", held.id, client_id=None)
    assert claim(storage, project, "q", 1, dead_letter=policy) is None
    assert where(storage, project, mid) == ["dlq"]
    dead_at = clock.now()
    clock.advance(30)
    assert storage.messages.move(project, "dlq", [mid], moves.redriven("q", 600),
                                 client_id="operator") == [mid]
    back = storage.messages.get(project, "q", mid)
    assert (back.claim_count, back.redrive_count, back.ttl) == (0, 1, 600)
    assert back.expires == pytest.approx(clock.now() + 600)
    assert back.history == [
        {"queue": "q", "reason": "max_claim_count", "time": pytest.approx(dead_at)},
        {"queue": "dlq", "reason": "redriven", "time": pytest.approx(clock.now())},
    ]
    [event] = events_of(storage, project, events.REDRIVEN)
    assert (event.queue, event.message_id, event.client_id, event.claim_count) == (
        "dlq", mid, "operator", 1)
    assert event.detail["to"] == "q" and event.detail["reason"] == "redriven"
    # It is claimable again, and a second redrive counts 2.
    again = claim(storage, project, "q", 1)
    assert ids(again.messages) == [mid] and again.messages[0].claim_count == 1
    storage.messages.move(project, "q", [mid], moves.rejected("dlq", None, None),
                          claim_id=again.id, client_id=None)
    storage.messages.move(project, "dlq", [mid], moves.redriven("q", 600), client_id=None)
    assert storage.messages.get(project, "q", mid).redrive_count == 2


def test_a_new_message_has_no_redrives(storage, project):
    [mid] = post(storage, project, "q", 1)
    assert storage.messages.get(project, "q", mid).redrive_count == 0
    assert claim(storage, project, "q", 1).messages[0].redrive_count == 0


def test_without_a_claim_id_a_held_message_stays(storage, project):
    posted = post(storage, project, "q", 2)
    held = claim(storage, project, "q", 1)
    moved = storage.messages.move(project, "q", posted, moves.redriven("back", 60),
                                  client_id=None)
    assert moved == [posted[1]]
    assert storage.claims.get(project, "q", held.id).messages[0].id == posted[0]
    assert [where(storage, project, i) for i in posted] == [["q"], ["back"]]


def test_a_message_of_an_expired_claim_moves_without_a_claim_id(storage, project, clock):
    [mid] = post(storage, project, "q", 1)
    claim(storage, project, "q", 1, ttl=60, grace=60)
    clock.advance(61)
    assert storage.messages.move(project, "q", [mid], moves.redriven("back", 60),
                                 client_id=None) == [mid]
    assert claim(storage, project, "back", 1).messages[0].id == mid


def test_with_a_claim_id_only_its_holder_moves_it(storage, project):
    posted = post(storage, project, "q", 3)
    mine = claim(storage, project, "q", 2)
    other = claim(storage, project, "q", 1)
    reject = moves.rejected("dlq", None, "no")
    # One listed message not held by the claim: nothing moves at all.
    for listed in ([posted[0], posted[2]], [posted[2]]):
        with pytest.raises(ClaimMismatch):
            storage.messages.move(project, "q", listed, reject, claim_id=mine.id,
                                  client_id=None)
    assert [where(storage, project, i) for i in posted] == [["q"], ["q"], ["q"]]
    assert not storage.queues.exists(project, "dlq")
    assert events_of(storage, project, events.DEAD_LETTERED) == []
    assert storage.messages.move(project, "q", posted[:2], reject, claim_id=mine.id,
                                 client_id=None) == posted[:2]
    assert storage.messages.move(project, "q", [posted[2]], reject, claim_id=other.id,
                                 client_id=None) == [posted[2]]
    assert [where(storage, project, i) for i in posted] == [["dlq"]] * 3
    # Moving ended the claims' hold: the messages are free in the dead letter queue.
    assert ids(claim(storage, project, "dlq", 5).messages) == posted


def test_a_free_message_with_a_claim_id_is_a_mismatch(storage, project):
    posted = post(storage, project, "q", 2)
    held = claim(storage, project, "q", 1)
    with pytest.raises(ClaimMismatch):
        storage.messages.move(project, "q", [posted[1]], moves.rejected("dlq", None, None),
                              claim_id=held.id, client_id=None)
    assert where(storage, project, posted[1]) == ["q"]


def test_unknown_expired_and_other_queues_ids_are_skipped(storage, project, clock):
    [short] = post(storage, project, "q", 1, ttl=60)
    [elsewhere] = post(storage, project, "other", 1)
    [kept] = post(storage, project, "q", 1)
    clock.advance(60)
    moved = storage.messages.move(
        project, "q", [short, elsewhere, "0" * 24, "f" * 32, kept],
        moves.redriven("back", 60), client_id=None)
    assert moved == [kept]
    assert storage.messages.get(project, "other", elsewhere).id == elsewhere
    assert storage.messages.move(project, "missing", [kept], moves.redriven("back", 60),
                                 client_id=None) == []
    assert [e.message_id for e in events_of(storage, project, events.REDRIVEN)] == [kept]


def test_a_delayed_message_is_free_once_moved(storage, project):
    [mid] = post(storage, project, "q", 1, delay=500)
    assert storage.messages.move(project, "q", [mid], moves.redriven("back", 60),
                                 client_id=None) == [mid]
    assert ids(claim(storage, project, "back", 1).messages) == [mid]


def test_a_move_into_its_own_queue_is_refused(storage, project):
    [mid] = post(storage, project, "q", 1)
    with pytest.raises(ValueError):
        storage.messages.move(project, "q", [mid], moves.redriven("q", 60), client_id=None)
    assert storage.messages.move(project, "q", [], moves.redriven("back", 60),
                                 client_id=None) == []


def test_moves_keep_queue_order_in_the_destination(storage, project):
    first = post(storage, project, "a", 2)
    second = post(storage, project, "b", 2)
    storage.messages.move(project, "b", second, moves.expired("dlq", None), client_id=None)
    storage.messages.move(project, "a", first, moves.expired("dlq", None), client_id=None)
    assert ids(storage.messages.list(project, "dlq", echo=True)) == first + second


@pytest.mark.parametrize("max_claim_count", [1, 3])
def test_exhausted_means_claim_count_at_least_max(storage, project, max_claim_count):
    """DeadLetterPolicy.is_exhausted's comparison; lua/_lib.lua makes it too."""
    policy = DeadLetterPolicy(max_claim_count=max_claim_count, queue="dlq")
    [mid] = post(storage, project, "q", 1)
    for count in range(1, max_claim_count + 1):
        held = claim(storage, project, "q", 1, dead_letter=policy)
        assert held.messages[0].claim_count == count
        assert not policy.is_exhausted(count - 1)
        storage.claims.release(project, "q", held.id, client_id=None)
    assert policy.is_exhausted(max_claim_count)
    assert claim(storage, project, "q", 1, dead_letter=policy) is None
    assert where(storage, project, mid) == ["dlq"]


def test_a_claims_dead_letter_move_is_the_same_move(storage, project, clock):
    """The claim's move carries out DeadLetterPolicy.move exactly as ``move`` does."""
    body = json.dumps({"n": 1})
    policy = DeadLetterPolicy(max_claim_count=1, queue="dlq", ttl=90)
    [mid] = storage.messages.post(project, "q", [raw_message(body)], client_id="poster")
    held = claim(storage, project, "q", 1, dead_letter=policy)
    storage.claims.release(project, "q", held.id, client_id=None)
    clock.advance(3)
    assert claim(storage, project, "q", 1, dead_letter=policy, client_id="w") is None
    moved = storage.messages.get(project, "dlq", mid)
    values = policy.move.values(TTL, clock.now())
    assert (moved.ttl, moved.created, moved.expires) == (
        values.ttl, pytest.approx(values.created), pytest.approx(values.expires))
    assert (moved.claim_count, moved.redrive_count) == (1, 0)
    assert moved.history == [policy.move.history_entry("q", pytest.approx(clock.now()))]
    [event] = events_of(storage, project, events.DEAD_LETTERED)
    assert (event.client_id, event.claim_id, event.claim_count) == ("w", None, 1)
    assert event.detail == policy.move.event_detail(events.fingerprint(body), body)
