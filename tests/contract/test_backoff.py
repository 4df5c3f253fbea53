"""Backoff between deliveries: a claim ended without a delete delays its messages.

Every case crosses the backoff with the manual clock: one second before
the message is claimable again it is not, at that moment it is.
"""

from __future__ import annotations

import pytest

from zq.poison.backoff import EXPONENTIAL, FIXED, LINEAR, BackoffPolicy
from zq.poison.dead_letter import DeadLetterPolicy
from zq.storage.delivery_rules import DeliveryRules

from .helpers import CLAIM_TTL, GRACE, claim, ids, post

TTL = 3600  # messages outlive every backoff below


def exact(delay: float, max_delay: float, kind: str = EXPONENTIAL) -> BackoffPolicy:
    """A policy without jitter: the delays are exactly the formula's."""
    return BackoffPolicy(delay=delay, max_delay=max_delay, kind=kind, jitter=0.0)


def claim_with(storage, project, backoff, queue="q", limit=10, **options):
    return storage.claims.create(
        project, queue, ttl=options.get("ttl", CLAIM_TTL), grace=GRACE, limit=limit,
        client_id="consumer",
        rules=DeliveryRules(dead_letter=options.get("dead_letter"), backoff=backoff),
    )


def claimable_after(storage, project, clock, seconds, queue="q"):
    """Advance to one second before ``seconds``: nothing; then to it: the message."""
    clock.advance(seconds - 1)
    assert claim(storage, project, queue) is None
    clock.advance(1)
    return claim(storage, project, queue)


def test_released_message_is_delayed_for_its_backoff(storage, project, clock):
    posted = post(storage, project, "q", 1, ttl=TTL)
    claimed = claim_with(storage, project, exact(10, 100))
    storage.claims.release(project, "q", claimed.id, client_id=None)
    stats = storage.queues.stats(project, "q")
    assert (stats.free, stats.claimed, stats.delayed, stats.total) == (1, 0, 1, 1)
    assert storage.messages.list(project, "q", echo=True) == []
    shown = storage.messages.list(project, "q", echo=True, include_delayed=True)
    assert ids(shown) == posted
    again = claimable_after(storage, project, clock, 10)
    assert ids(again.messages) == posted
    assert again.messages[0].claim_count == 2


def test_a_held_message_is_listed_as_claimed_not_as_delayed(storage, project, clock):
    """Its backoff is already written while the claim lives; it is not delayed."""
    posted = post(storage, project, "q", 2, ttl=TTL)
    claim_with(storage, project, exact(10, 100), limit=1)
    listed = storage.messages.list(project, "q", echo=True, include_claimed=True)
    assert ids(listed) == posted
    assert ids(storage.messages.list(project, "q", echo=True)) == posted[1:]


def test_an_expired_claim_implies_the_backoff(storage, project, clock):
    posted = post(storage, project, "q", 1, ttl=TTL)
    claim_with(storage, project, exact(10, 100), ttl=CLAIM_TTL)
    clock.advance(CLAIM_TTL)
    stats = storage.queues.stats(project, "q")
    assert (stats.free, stats.claimed, stats.delayed) == (1, 0, 1)
    again = claimable_after(storage, project, clock, 10)
    assert ids(again.messages) == posted


def test_garbage_collection_of_the_expired_claim_keeps_the_backoff(storage, project, clock):
    post(storage, project, "q", 1, ttl=TTL)
    claim_with(storage, project, exact(30, 100), ttl=CLAIM_TTL)
    clock.advance(CLAIM_TTL + 1)
    storage.gc()  # collects the expired claim (and others of the session)
    assert storage.queues.stats(project, "q").delayed == 1
    assert claimable_after(storage, project, clock, 29) is not None


def test_exponential_backoff_doubles_with_each_claim_up_to_the_max(storage, project, clock):
    post(storage, project, "q", 1, ttl=TTL)
    policy = exact(10, 25)
    for expected in (10, 20, 25, 25):
        claimed = claim_with(storage, project, policy)
        assert claimed is not None
        storage.claims.release(project, "q", claimed.id, client_id=None)
        clock.advance(expected - 1)
        assert claim_with(storage, project, policy) is None
        clock.advance(1)


@pytest.mark.parametrize(("kind", "delays"), [
    (FIXED, (7, 7, 7)),
    (LINEAR, (7, 14, 21)),
    (EXPONENTIAL, (7, 14, 28)),
])
def test_each_kind_of_backoff(storage, project, clock, kind, delays):
    post(storage, project, "q", 1, ttl=TTL)
    policy = exact(7, 1000, kind)
    for expected in delays:
        claimed = claim_with(storage, project, policy)
        assert claimed is not None, expected
        storage.claims.release(project, "q", claimed.id, client_id=None)
        clock.advance(expected - 1)
        assert claim_with(storage, project, policy) is None
        clock.advance(1)


def test_renewing_keeps_the_backoff_after_the_new_expiry(storage, project, clock):
    posted = post(storage, project, "q", 1, ttl=TTL)
    claimed = claim_with(storage, project, exact(10, 100), ttl=CLAIM_TTL)
    clock.advance(30)
    storage.claims.renew(project, "q", claimed.id, ttl=CLAIM_TTL, grace=GRACE, client_id=None)
    clock.advance(CLAIM_TTL)  # the renewed claim just expired
    assert storage.queues.stats(project, "q").delayed == 1
    again = claimable_after(storage, project, clock, 10)
    assert ids(again.messages) == posted


def test_good_messages_behind_a_backed_off_head_are_claimed(storage, project, clock):
    posted = post(storage, project, "q", 4, ttl=TTL)
    head = claim_with(storage, project, exact(60, 600), limit=2)
    storage.claims.release(project, "q", head.id, client_id=None)
    behind = claim_with(storage, project, exact(60, 600), limit=10)
    assert ids(behind.messages) == posted[2:]


def test_jitter_takes_at_most_a_tenth_off_the_delay(storage, project, clock):
    post(storage, project, "q", 1, ttl=TTL)
    most = BackoffPolicy(delay=100, max_delay=100, draw=lambda: 1.0)  # the most jitter
    claimed = claim_with(storage, project, most)
    storage.claims.release(project, "q", claimed.id, client_id=None)
    assert claimable_after(storage, project, clock, 90) is not None


def test_random_jitter_stays_within_its_bounds(storage, project, clock):
    post(storage, project, "q", 20, ttl=TTL)
    claimed = claim_with(storage, project, BackoffPolicy(delay=100, max_delay=100), limit=20)
    storage.claims.release(project, "q", claimed.id, client_id=None)
    clock.advance(90 - 0.001)  # every delay is in (90, 100]
    assert claim(storage, project, "q", 20) is None
    clock.advance(10.01)
    assert len(claim(storage, project, "q", 20).messages) == 20


def test_a_deleted_message_needs_no_backoff(storage, project, clock):
    posted = post(storage, project, "q", 2, ttl=TTL)
    claimed = claim_with(storage, project, exact(10, 100), limit=1)
    storage.messages.delete(project, "q", posted[0], claim_id=claimed.id, client_id=None)
    assert ids(claim(storage, project, "q").messages) == posted[1:]
    assert storage.queues.stats(project, "q").delayed == 0


def test_without_a_policy_a_released_message_is_free_at_once(storage, project, clock):
    posted = post(storage, project, "q", 1, ttl=TTL)
    claimed = claim(storage, project, "q")
    storage.claims.release(project, "q", claimed.id, client_id=None)
    assert storage.queues.stats(project, "q").delayed == 0
    assert ids(claim(storage, project, "q").messages) == posted


def test_delayed_posts_count_as_delayed(storage, project, clock):
    post(storage, project, "q", 2, ttl=TTL, delay=30)
    post(storage, project, "q", 1, ttl=TTL)
    stats = storage.queues.stats(project, "q")
    assert (stats.free, stats.claimed, stats.delayed) == (3, 0, 2)
    clock.advance(30)
    assert storage.queues.stats(project, "q").delayed == 0


def test_an_exhausted_message_is_dead_lettered_once_its_backoff_passed(storage, project, clock):
    posted = post(storage, project, "q", 1, ttl=TTL)
    policy = DeadLetterPolicy(max_claim_count=1, queue="dlq")
    claimed = claim_with(storage, project, exact(10, 100), dead_letter=policy)
    storage.claims.release(project, "q", claimed.id, client_id=None)
    assert claim_with(storage, project, exact(10, 100), dead_letter=policy) is None
    assert storage.queues.stats(project, "dlq").total == 0
    clock.advance(10)
    assert claim_with(storage, project, exact(10, 100), dead_letter=policy) is None
    assert ids(storage.messages.list(project, "dlq", echo=True)) == posted
    assert storage.queues.stats(project, "dlq").delayed == 0
