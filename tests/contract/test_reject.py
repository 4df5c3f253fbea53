"""MessageController.reject (a retry reject) and the terminal reject as a move."""

from __future__ import annotations

import pytest

from zq import events
from zq.errors import ClaimMismatch, MessageNotFound
from zq.poison import moves
from zq.poison.backoff import BackoffPolicy
from zq.storage.delivery_rules import DeliveryRules

from .helpers import CLAIM_TTL, GRACE, claim, events_of, ids, post

TTL = 3600


def reject(storage, project, message_id, claim_id, *, retry_after=None, description="boom",
           queue="q", client_id="consumer"):
    storage.messages.reject(project, queue, message_id, claim_id=claim_id,
                            client_id=client_id, description=description,
                            retry_after=retry_after)


def test_retry_reject_frees_the_message_after_retry_after(storage, project, clock):
    posted = post(storage, project, "q", 2, ttl=TTL)
    held = claim(storage, project, "q", 2)
    reject(storage, project, posted[0], held.id, retry_after=30)
    stats = storage.queues.stats(project, "q")
    assert (stats.free, stats.claimed, stats.delayed) == (1, 1, 1)
    # The claim keeps its other message.
    assert ids(storage.claims.get(project, "q", held.id).messages) == [posted[1]]
    assert storage.messages.get(project, "q", posted[0]).claim_id is None
    clock.advance(29)
    assert claim(storage, project, "q") is None
    clock.advance(1)
    again = claim(storage, project, "q")
    assert [(m.id, m.claim_count) for m in again.messages] == [(posted[0], 2)]


def test_retry_reject_with_zero_frees_at_once(storage, project, clock):
    posted = post(storage, project, "q", 1, ttl=TTL)
    held = claim(storage, project, "q")
    reject(storage, project, posted[0], held.id, retry_after=0)
    assert storage.queues.stats(project, "q").delayed == 0
    assert ids(claim(storage, project, "q").messages) == posted


def test_retry_reject_without_retry_after_follows_the_backoff(storage, project, clock):
    posted = post(storage, project, "q", 1, ttl=TTL)
    policy = BackoffPolicy(delay=20, max_delay=100, jitter=0.0)
    held = storage.claims.create(project, "q", ttl=CLAIM_TTL, grace=GRACE, limit=1,
                                 client_id="consumer", rules=DeliveryRules(backoff=policy))
    clock.advance(5)
    reject(storage, project, posted[0], held.id)
    assert storage.queues.stats(project, "q").delayed == 1
    clock.advance(19)
    assert claim(storage, project, "q") is None
    clock.advance(1)
    assert ids(claim(storage, project, "q").messages) == posted


def test_retry_reject_without_backoff_or_retry_after_frees_at_once(storage, project, clock):
    posted = post(storage, project, "q", 1, ttl=TTL)
    held = claim(storage, project, "q")
    reject(storage, project, posted[0], held.id, retry_after=None)
    assert ids(claim(storage, project, "q").messages) == posted


def test_retry_reject_records_a_rejected_event(storage, project, clock):
    posted = post(storage, project, "q", 1, ttl=TTL)
    held = claim(storage, project, "q")
    reject(storage, project, posted[0], held.id, retry_after=7,
           description="KeyError: 'order_id'", client_id="w1")
    [event] = events_of(storage, project, events.REJECTED)
    assert (event.queue, event.message_id, event.claim_id, event.client_id,
            event.claim_count) == ("q", posted[0], held.id, "w1", 1)
    assert event.detail == {"description": "KeyError: 'order_id'", "retry_after": 7}
    assert event.time == pytest.approx(clock.now())
    clock.advance(7)
    held = claim(storage, project, "q")
    reject(storage, project, posted[0], held.id, description=None)
    assert events_of(storage, project, events.REJECTED)[-1].detail == {
        "description": None, "retry_after": None}


def test_only_the_live_claim_holding_it_may_reject(storage, project, clock):
    posted = post(storage, project, "q", 2, ttl=TTL)
    first = claim(storage, project, "q", 1)
    second = claim(storage, project, "q", 1)
    with pytest.raises(ClaimMismatch):
        reject(storage, project, posted[0], second.id)  # another claim's message
    with pytest.raises(ClaimMismatch):
        reject(storage, project, posted[0], "0" * 32)  # no such claim
    clock.advance(CLAIM_TTL)
    with pytest.raises(ClaimMismatch):
        reject(storage, project, posted[0], first.id)  # its claim expired
    post(storage, project, "q", 1, ttl=TTL)
    assert events_of(storage, project, events.REJECTED) == []


def test_rejecting_a_missing_message_raises_not_found(storage, project, clock):
    posted = post(storage, project, "q", 1, ttl=60)
    held = claim(storage, project, "q", ttl=30, grace=0)
    with pytest.raises(MessageNotFound):
        reject(storage, project, "0" * 24, held.id)
    with pytest.raises(MessageNotFound):
        reject(storage, project, posted[0], held.id, queue="other")
    clock.advance(60)
    with pytest.raises(MessageNotFound):
        reject(storage, project, posted[0], held.id)


def test_terminal_reject_moves_with_its_description(storage, project, clock):
    posted = post(storage, project, "q", 2, ttl=TTL)
    held = claim(storage, project, "q", 2)
    move = moves.rejected("dlq", None, "ValueError: bad total")
    assert storage.messages.move(project, "q", [posted[0]], move, claim_id=held.id,
                                 client_id="w1") == [posted[0]]
    moved = storage.messages.get(project, "dlq", posted[0])
    assert moved.claim_id is None and moved.claim_count == 1
    [entry] = moved.history
    assert (entry["queue"], entry["reason"], entry["description"]) == (
        "q", "rejected", "ValueError: bad total")
    [event] = events_of(storage, project, events.DEAD_LETTERED)
    assert (event.claim_id, event.detail["reason"], event.detail["description"]) == (
        held.id, "rejected", "ValueError: bad total")
    assert ids(storage.claims.get(project, "q", held.id).messages) == [posted[1]]
    with pytest.raises(ClaimMismatch):
        storage.messages.move(project, "q", [posted[1]], move, claim_id="0" * 32,
                              client_id=None)
    assert storage.queues.stats(project, "dlq").total == 1
