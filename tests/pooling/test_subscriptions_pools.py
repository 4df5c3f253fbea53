"""Subscriptions under pooling: stored on the pool of their queue."""

from __future__ import annotations

from zq.config import Limits
from zq.subscriptions import SubscriptionService


def test_subscriptions_live_on_their_queues_pool(two_pools, project):
    service = SubscriptionService(Limits(), two_pools.pools)
    made = {}
    for i in range(8):
        queue = f"q{i}"
        made[queue], created = service.create(project, queue, {"subscriber": f"http://h/{i}"})
        assert created
    backends = two_pools.pools.storages()
    where = {queue: two_pools.pools.pool_of(project, queue) for queue in made}
    assert set(where.values()) == {"one", "two"}  # the create placed (and made) each queue
    for queue, sid in made.items():
        other = "two" if where[queue] == "one" else "one"
        assert backends[where[queue]].queues.exists(project, queue)
        assert backends[where[queue]].subscriptions.exists(project, queue, sid)
        assert not backends[other].subscriptions.exists(project, queue, sid)
        assert service.get(project, queue, sid).subscriber == backends[
            where[queue]].subscriptions.get(project, queue, sid).subscriber
        assert [s.id for s in service.list(project, queue)] == [sid]
    # An existing queue keeps its pool: a second subscription goes there too.
    extra, _ = service.create(project, "q0", {"subscriber": "mailto:a@b.c"})
    assert backends[where["q0"]].subscriptions.exists(project, "q0", extra)
    # Every backend's live() is what a notifier on it reads.
    live = [s.id for pool in ("one", "two") for s in backends[pool].subscriptions.live()
            if s.project == project]
    assert sorted(live) == sorted([*made.values(), extra])
