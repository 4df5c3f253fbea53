"""The per-process catalog cache never serves a mapping that stopped being true.

Two resolvers over one management store stand for two server processes.
"""

from __future__ import annotations

import pytest

from tests.pooling.conftest import make_pooled
from zq.errors import NoPoolAvailable
from zq.pooling.cache import GenerationCache


@pytest.fixture
def worker_b(two_pools, management_uri, clock):
    other = make_pooled(management_uri, clock, seed=99)
    yield other
    other.close()


def test_cache_empties_when_the_generation_moves():
    cache: GenerationCache[str, str] = GenerationCache(capacity=2)
    cache.put("a", "one", 5)
    assert cache.get("a", 5) == "one"
    assert cache.get("a", 6) is None  # moved on: everything dropped
    cache.put("b", "two", 5)  # read before the move: not cached
    assert cache.get("b", 6) is None
    for key in "xyz":
        cache.put(key, key, 6)
    assert len(cache) == 2 and cache.get("x", 6) is None  # least recently used went


def test_a_hit_is_served_from_the_cache(two_pools, project, monkeypatch):
    two_pools.service.create_queue(project, "q", None)
    first = two_pools.pools.locate(project, "q")
    catalog = two_pools.pools.store.catalog
    monkeypatch.setattr(catalog, "lookup", lambda *a: pytest.fail("not cached"))
    assert two_pools.pools.locate(project, "q") == first


def test_other_worker_sees_a_queue_deleted_and_placed_elsewhere(
    two_pools, worker_b, project, pool_uris
):
    a = two_pools
    a.service.create_queue(project, "q", None)
    old_pool = a.pools.pool_of(project, "q")
    a.service.post_messages(project, "q", {"messages": [{"body": 1}]}, client_id=None,
                            body_size=1)
    assert a.pools.pool_of(project, "q") == old_pool  # now cached in worker A
    # Worker B deletes it and re-creates it on the other pool only.
    other = "two" if old_pool == "one" else "one"
    worker_b.admin.update_pool(old_pool, {"weight": 0})
    worker_b.service.delete_queue(project, "q")
    worker_b.service.create_queue(project, "q", None)
    assert worker_b.pools.pool_of(project, "q") == other
    # Worker A must follow at once: its post lands on the new pool.
    a.service.post_messages(project, "q", {"messages": [{"body": 2}]}, client_id=None,
                            body_size=1)
    assert a.pools.pool_of(project, "q") == other
    assert a.service.queue_stats(project, "q").total == 1
    assert a.pools.storages()[old_pool].queues.stats(project, "q").total == 0


def test_other_worker_sees_a_deleted_queue_as_unregistered(two_pools, worker_b, project):
    two_pools.service.create_queue(project, "q", None)
    assert two_pools.pools.pool_of(project, "q") is not None
    worker_b.service.delete_queue(project, "q")
    assert two_pools.pools.pool_of(project, "q") is None


def test_other_worker_sees_a_removed_pool(two_pools, worker_b, project):
    two_pools.service.create_queue(project, "q", None)
    pool = two_pools.pools.pool_of(project, "q")
    worker_b.service.delete_queue(project, "q")
    worker_b.admin.delete_pool(pool)
    worker_b.admin.delete_pool("two" if pool == "one" else "one")
    assert two_pools.pools.pool_of(project, "q") is None
    with pytest.raises(NoPoolAvailable):
        two_pools.service.post_messages(
            project, "q", {"messages": [{"body": 1}]}, client_id=None, body_size=1
        )


def test_other_worker_follows_a_pool_moved_to_another_uri(
    two_pools, worker_b, project, pool_uris
):
    two_pools.service.create_queue(project, "q", {"where": "before"})
    pool = two_pools.pools.pool_of(project, "q")
    assert two_pools.service.queue_metadata(project, "q")["where"] == "before"
    worker_b.admin.update_pool(pool, {"uri": pool_uris["three"]})
    # The new URI is another database, which has no such queue.
    assert "where" not in two_pools.service.queue_metadata(project, "q")
