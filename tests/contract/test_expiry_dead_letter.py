"""Dead lettering on expiry (``_dead_letter_expired``): the move, by gc or by a claim.

An expired message of such a queue is invisible in it at once, and moves to
the dead letter queue (reason ``expired``) when gc runs or a claim on the
queue is made with the queue's policy, as MessageController.move moves.
"""

from __future__ import annotations

import json

import pytest

from zq import events
from zq.errors import ClaimNotFound, MessageNotFound
from zq.poison import dead_letter, moves

from .helpers import claim, events_of, ids, post, raw_message

METADATA = {"_dead_letter_queue": "dlq", "_dead_letter_expired": True}


def make_queue(storage, project, metadata=METADATA, queue="q"):
    storage.queues.create(project, queue, dict(metadata))
    return dead_letter.policy_from_metadata(metadata)


def alive_in(storage, project, message_id, queues=("q", "dlq")):
    found = []
    for queue in queues:
        try:
            storage.messages.get(project, queue, message_id)
        except MessageNotFound:
            continue
        found.append(queue)
    return found


def test_gc_moves_an_expired_message_with_the_expired_move(storage, project, clock):
    make_queue(storage, project)
    body = json.dumps({"order": 7})
    [mid] = storage.messages.post(project, "q", [raw_message(body, ttl=60)], client_id="p")
    clock.advance(60)
    # Invisible in the source at once, not yet in the dead letter queue.
    assert alive_in(storage, project, mid) == []
    # gc sweeps the whole store, which earlier tests share: this project's
    # part is pinned by its events below (one dead_lettered, no expired).
    assert storage.gc().moved >= 1
    assert alive_in(storage, project, mid) == ["dlq"]
    assert (storage.queues.stats(project, "q").total,
            storage.queues.stats(project, "dlq").total) == (0, 1)
    moved = storage.messages.get(project, "dlq", mid)
    move = moves.expired("dlq", None)
    now = clock.now()
    assert (moved.ttl, moved.created, moved.expires) == (60, pytest.approx(now),
                                                          pytest.approx(now + 60))
    assert (moved.claim_id, moved.claim_count, moved.redrive_count) == (None, 0, 0)
    assert moved.history == [{"queue": "q", "reason": "expired", "time": pytest.approx(now)}]
    assert events_of(storage, project, events.EXPIRED) == []
    [event] = events_of(storage, project, events.DEAD_LETTERED)
    assert (event.queue, event.message_id, event.client_id, event.claim_id,
            event.claim_count) == ("q", mid, None, None, 0)
    assert event.detail == move.event_detail(events.fingerprint(body), body)
    assert storage.gc().moved == 0  # moved once


def test_the_dead_letter_ttl_applies(storage, project, clock):
    make_queue(storage, project, {**METADATA, "_dead_letter_queue_messages_ttl": 900})
    [mid] = post(storage, project, "q", 1, ttl=60)
    clock.advance(61)
    storage.gc()
    moved = storage.messages.get(project, "dlq", mid)
    assert (moved.ttl, moved.expires) == (900, pytest.approx(clock.now() + 900))


def test_a_claim_with_the_policy_moves_expired_messages_first(storage, project, clock):
    policy = make_queue(storage, project)
    assert policy.expired and policy.max_claim_count is None
    short = post(storage, project, "q", 2, ttl=60)
    long = post(storage, project, "q", 1, ttl=600)
    clock.advance(60)
    held = claim(storage, project, "q", 5, dead_letter=policy)
    assert ids(held.messages) == long
    assert ids(storage.messages.list(project, "dlq", echo=True)) == short
    # One event each (in no promised order: by expiry, then as the backend keeps them).
    assert sorted(e.message_id for e in events_of(storage, project, events.DEAD_LETTERED)) == (
        sorted(short))
    assert storage.gc().moved == 0


def test_a_claim_that_delivers_nothing_still_moves_them(storage, project, clock):
    policy = make_queue(storage, project)
    [mid] = post(storage, project, "q", 1, ttl=60)
    clock.advance(60)
    assert claim(storage, project, "q", 5, dead_letter=policy) is None
    assert alive_in(storage, project, mid) == ["dlq"]


def test_queues_without_the_setting_still_drop_expired_messages(storage, project, clock):
    make_queue(storage, project)
    storage.queues.create(project, "plain", {"_dead_letter_queue": "dlq"})
    [moving] = post(storage, project, "q", 1, ttl=60)
    [dropped] = post(storage, project, "plain", 1, ttl=60)
    [implicit] = post(storage, project, "lazy", 1, ttl=60)
    clock.advance(60)
    collected = storage.gc()
    assert (collected.messages, collected.moved) == (2, 1)
    assert ids(storage.messages.list(project, "dlq", echo=True)) == [moving]
    assert {e.message_id for e in events_of(storage, project, events.EXPIRED)} == {
        dropped, implicit}


def test_turning_it_off_drops_them_again(storage, project, clock):
    make_queue(storage, project)
    storage.queues.set_metadata(project, "q", {"_dead_letter_queue": "dlq"})
    [mid] = post(storage, project, "q", 1, ttl=60)
    clock.advance(60)
    assert (storage.gc().messages, alive_in(storage, project, mid)) == (1, [])
    storage.queues.set_metadata(project, "q", dict(METADATA))
    [again] = post(storage, project, "q", 1, ttl=60)
    clock.advance(60)
    assert storage.gc().moved == 1
    assert alive_in(storage, project, again) == ["dlq"]


def test_a_message_whose_claim_lapsed_moves_free(storage, project, clock):
    make_queue(storage, project)
    [mid] = post(storage, project, "q", 1, ttl=60)
    held = claim(storage, project, "q", 1, ttl=30, grace=30)
    clock.advance(61)
    collected = storage.gc()
    assert collected.moved == 1
    moved = storage.messages.get(project, "dlq", mid)
    assert (moved.claim_id, moved.claim_count) == (None, 1)
    with pytest.raises(ClaimNotFound):
        storage.claims.get(project, "q", held.id)
    assert ids(claim(storage, project, "dlq", 1).messages) == [mid]


def test_a_purged_queue_keeps_its_setting(storage, project, clock):
    make_queue(storage, project)
    storage.queues.purge(project, "q")
    [mid] = post(storage, project, "q", 1, ttl=60)
    clock.advance(60)
    assert storage.gc().moved == 1
    assert alive_in(storage, project, mid) == ["dlq"]


def test_many_expired_messages_all_move_once(storage, project, clock):
    make_queue(storage, project)
    posted = post(storage, project, "q", 120, ttl=60)
    clock.advance(60)
    total = 0
    while True:
        went = storage.gc().moved
        total += went
        if not went:
            break
    assert total == 120
    listed = []
    marker = None
    while True:
        page = storage.messages.list(project, "dlq", echo=True, limit=50, marker=marker)
        if not page:
            break
        listed += page
        marker = page[-1].marker
    assert ids(listed) == posted
    assert len(events_of(storage, project, events.DEAD_LETTERED)) == 120
