"""Expiry of messages and claims (invisible at once) and garbage collection."""

from __future__ import annotations

import pytest

from zq import events
from zq.errors import MessageNotFound

from .helpers import claim, events_of, ids, post


def test_expired_message_is_invisible_before_gc(storage, project, clock):
    short = post(storage, project, "q", 1, ttl=60)
    long = post(storage, project, "q", 1, ttl=120)
    clock.advance(60)
    with pytest.raises(MessageNotFound):
        storage.messages.get(project, "q", short[0])
    assert storage.messages.get_many(project, "q", short + long)[0].id == long[0]
    assert ids(storage.messages.list(project, "q", echo=True)) == long
    stats = storage.queues.stats(project, "q")
    assert (stats.total, stats.oldest.id) == (1, long[0])
    assert ids(claim(storage, project, "q", 5).messages) == long
    assert storage.messages.delete_many(project, "q", short, client_id=None) == []


def test_expired_claim_frees_its_messages_before_gc(storage, project, clock):
    posted = post(storage, project, "q", 2)
    claimed = claim(storage, project, "q", 2, ttl=60)
    assert storage.queues.stats(project, "q").claimed == 2
    clock.advance(60)
    stats = storage.queues.stats(project, "q")
    assert (stats.free, stats.claimed) == (2, 0)
    listed = storage.messages.list(project, "q", echo=True)
    assert ids(listed) == posted
    assert all(m.claim_id is None for m in listed)
    storage.messages.delete(project, "q", posted[0], claim_id=None, client_id=None)
    assert ids(storage.messages.list(project, "q", echo=True)) == posted[1:]
    assert claimed.id not in [m.claim_id for m in listed]


def test_gc_removes_expired_messages_with_events(storage, project, clock):
    expiring = post(storage, project, "q", 2, ttl=60)
    kept = post(storage, project, "q", 1, ttl=600)
    claimed = claim(storage, project, "q", 1, ttl=60, grace=60)
    assert ids(claimed.messages) == expiring[:1]
    clock.advance(90)
    removed = storage.gc()
    # At least ours; other tests' leftovers in a shared backend may go too.
    assert removed.messages >= 1 and removed.claims >= 1
    logged = events_of(storage, project, events.EXPIRED)
    assert [(e.message_id, e.queue, e.claim_count) for e in logged if e.message_id] == [
        (expiring[1], "q", 0)]
    clock.advance(30)
    storage.gc()
    expired = [e.message_id for e in events_of(storage, project, events.EXPIRED)
               if e.message_id]
    assert sorted(expired) == sorted(expiring)
    message_events = {e.message_id: e.claim_count
                      for e in events_of(storage, project, events.EXPIRED) if e.message_id}
    assert message_events[expiring[0]] == 1
    assert ids(storage.messages.list(project, "q", echo=True)) == kept


def test_gc_records_expired_claims_that_still_held_messages(storage, project, clock):
    post(storage, project, "q", 3, ttl=3600)
    held = claim(storage, project, "q", 2, ttl=60, client_id="slow-worker")
    finished = claim(storage, project, "q", 1, ttl=60, client_id="fast-worker")
    storage.messages.delete(project, "q", finished.messages[0].id,
                            claim_id=finished.id, client_id=None)
    clock.advance(60)
    # Both claims went (the finished one held nothing any more); at least
    # ours: other tests' leftovers in a shared backend may go too.
    assert storage.gc().claims >= 2
    claim_events = [e for e in events_of(storage, project, events.EXPIRED)
                    if e.message_id is None]
    assert [(e.claim_id, e.client_id, e.queue, e.detail) for e in claim_events] == [
        (held.id, "slow-worker", "q", {"target": "claim", "messages": 2})]
    storage.gc()
    assert len(events_of(storage, project, events.EXPIRED)) == 1


def test_gc_does_not_touch_alive_messages_or_live_claims(storage, project, clock):
    posted = post(storage, project, "q", 2)
    claimed = claim(storage, project, "q", 1)
    storage.gc()
    assert ids(storage.messages.list(project, "q", echo=True, include_claimed=True)) == posted
    assert ids(storage.claims.get(project, "q", claimed.id).messages) == posted[:1]
    assert events_of(storage, project, events.EXPIRED) == []


def test_concurrent_gc_records_each_expiry_once(storage_factory, clock, project):
    import threading

    stores = [storage_factory(clock) for _ in range(3)]
    try:
        posted = post(stores[0], project, "q", 30, ttl=60)
        clock.advance(60)
        barrier = threading.Barrier(len(stores))

        def collect(store):
            barrier.wait()
            store.gc()

        threads = [threading.Thread(target=collect, args=(s,)) for s in stores]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        expired = [e.message_id for e in events_of(stores[0], project, events.EXPIRED)]
        assert sorted(expired) == sorted(posted)
    finally:
        for store in stores:
            store.close()
