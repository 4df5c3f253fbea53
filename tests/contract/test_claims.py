"""ClaimController: create, get, renew, release."""

from __future__ import annotations

import pytest

from zq import events
from zq.errors import ClaimNotFound

from .helpers import CLAIM_TTL, GRACE, claim, events_of, ids, post


def test_claim_takes_free_messages_in_order_up_to_limit(storage, project, clock):
    posted = post(storage, project, "q", 5)
    claimed = claim(storage, project, "q", 3, ttl=100, grace=40)
    assert ids(claimed.messages) == posted[:3]
    assert claimed.queue == "q"
    assert (claimed.ttl, claimed.grace) == (100, 40)
    assert claimed.created == pytest.approx(clock.now())
    assert claimed.expires == pytest.approx(clock.now() + 100)
    for message in claimed.messages:
        assert message.claim_id == claimed.id
        assert message.claim_count == 1
    second = claim(storage, project, "q", 3)
    assert ids(second.messages) == posted[3:]
    assert claim(storage, project, "q", 3) is None


def test_claim_of_empty_or_missing_queue_is_none(storage, project):
    assert claim(storage, project, "missing") is None
    storage.queues.create(project, "empty", {})
    assert claim(storage, project, "empty") is None


def test_claim_extends_message_expiry_to_ttl_plus_grace(storage, project, clock):
    short = post(storage, project, "q", 1, ttl=60)
    long = post(storage, project, "q", 1, ttl=1000)
    claimed = claim(storage, project, "q", 2, ttl=100, grace=50)
    expires = {m.id: m.expires for m in claimed.messages}
    assert expires[short[0]] == pytest.approx(clock.now() + 150)
    assert expires[long[0]] == pytest.approx(clock.now() + 1000)
    assert storage.messages.get(project, "q", short[0]).expires == pytest.approx(
        clock.now() + 150)
    clock.advance(149)
    assert storage.messages.get(project, "q", short[0]).id == short[0]


def test_claim_counts_grow_with_each_claim(storage, project, clock):
    posted = post(storage, project, "q", 1)
    for expected in (1, 2, 3):
        claimed = claim(storage, project, "q")
        assert [m.claim_count for m in claimed.messages] == [expected]
        storage.claims.release(project, "q", claimed.id, client_id=None)
    assert storage.messages.get(project, "q", posted[0]).claim_count == 3


def test_claim_takes_a_message_again_when_the_claim_expires(storage, project, clock):
    posted = post(storage, project, "q", 1)
    first = claim(storage, project, "q", ttl=CLAIM_TTL)
    clock.advance(CLAIM_TTL - 1)
    assert claim(storage, project, "q") is None
    clock.advance(1)
    second = claim(storage, project, "q")
    assert ids(second.messages) == posted
    assert second.messages[0].claim_count == 2
    assert second.id != first.id


def test_claim_takes_expired_released_and_new_messages_in_one_queue_order(
        storage, project, clock):
    """Messages whose claim expired, released ones and never-claimed ones
    (which a driver may keep apart) are handed out in one queue order, past
    those still held."""
    posted = post(storage, project, "q", 40)
    expiring = claim(storage, project, "q", 10, ttl=CLAIM_TTL)
    released = claim(storage, project, "q", 10, ttl=10 * CLAIM_TTL)
    held = claim(storage, project, "q", 10, ttl=10 * CLAIM_TTL)
    assert ids(expiring.messages) == posted[:10]
    assert ids(held.messages) == posted[20:30]
    storage.claims.release(project, "q", released.id, client_id=None)
    clock.advance(CLAIM_TTL)
    taken = claim(storage, project, "q", 25)
    assert ids(taken.messages) == posted[:20] + posted[30:35]
    assert [m.claim_count for m in taken.messages] == [2] * 20 + [1] * 5


def test_get_returns_the_live_claim_with_its_alive_messages(storage, project):
    posted = post(storage, project, "q", 3)
    claimed = claim(storage, project, "q", 3)
    storage.messages.delete(project, "q", posted[1], claim_id=claimed.id, client_id=None)
    got = storage.claims.get(project, "q", claimed.id)
    assert (got.id, got.queue, got.ttl, got.grace) == (claimed.id, "q", CLAIM_TTL, GRACE)
    assert got.expires == pytest.approx(claimed.expires)
    assert ids(got.messages) == [posted[0], posted[2]]
    assert all(m.claim_id == claimed.id for m in got.messages)


def test_get_unknown_expired_or_other_queue_claim_raises(storage, project, clock):
    post(storage, project, "q", 1)
    claimed = claim(storage, project, "q")
    with pytest.raises(ClaimNotFound, match="'unknown' does not exist or has expired"):
        storage.claims.get(project, "q", "unknown")
    with pytest.raises(ClaimNotFound):
        storage.claims.get(project, "other", claimed.id)
    clock.advance(CLAIM_TTL)
    with pytest.raises(ClaimNotFound):
        storage.claims.get(project, "q", claimed.id)


def test_renew_extends_claim_and_messages_without_counting(storage, project, clock):
    posted = post(storage, project, "q", 2, ttl=60)
    claimed = claim(storage, project, "q", 2, ttl=60, grace=60)
    clock.advance(50)
    storage.claims.renew(project, "q", claimed.id, ttl=200, grace=100, client_id="w")
    got = storage.claims.get(project, "q", claimed.id)
    assert got.expires == pytest.approx(clock.now() + 200)
    assert (got.ttl, got.grace) == (200, 100)
    for message in got.messages:
        assert message.claim_count == 1
        assert message.expires == pytest.approx(clock.now() + 300)
    clock.advance(199)
    assert claim(storage, project, "q") is None
    assert ids(storage.claims.get(project, "q", claimed.id).messages) == posted
    clock.advance(1)
    assert ids(claim(storage, project, "q", 2).messages) == posted


def test_renew_unknown_or_expired_claim_raises(storage, project, clock):
    post(storage, project, "q", 1)
    claimed = claim(storage, project, "q")
    with pytest.raises(ClaimNotFound):
        storage.claims.renew(project, "q", "unknown", ttl=60, grace=60, client_id=None)
    clock.advance(CLAIM_TTL)
    with pytest.raises(ClaimNotFound):
        storage.claims.renew(project, "q", claimed.id, ttl=60, grace=60, client_id=None)


def test_release_frees_messages_with_counts_unchanged(storage, project):
    posted = post(storage, project, "q", 2)
    claimed = claim(storage, project, "q", 2)
    storage.claims.release(project, "q", claimed.id, client_id="w")
    with pytest.raises(ClaimNotFound):
        storage.claims.get(project, "q", claimed.id)
    listed = storage.messages.list(project, "q", echo=True)
    assert ids(listed) == posted
    assert [(m.claim_id, m.claim_count) for m in listed] == [(None, 1), (None, 1)]
    assert storage.queues.stats(project, "q").free == 2


def test_release_unknown_or_expired_claim_is_quiet(storage, project, clock):
    post(storage, project, "q", 1)
    storage.claims.release(project, "q", "unknown", client_id=None)
    claimed = claim(storage, project, "q")
    clock.advance(CLAIM_TTL)
    storage.claims.release(project, "q", claimed.id, client_id=None)
    assert events_of(storage, project, events.RELEASED) == []


def test_two_claims_never_share_a_message(storage, project):
    post(storage, project, "q", 4)
    first = claim(storage, project, "q", 3)
    second = claim(storage, project, "q", 3)
    assert not set(ids(first.messages)) & set(ids(second.messages))
    assert len(second.messages) == 1
