"""Two pools on two kinds of backend: SQLite and Redis."""

from __future__ import annotations

import pytest

from tests.redis_session import redis_prefix, with_prefix


@pytest.fixture
def mixed(pooled, pool_uris):
    with redis_prefix() as (url, prefix):
        pooled.admin.put_pool("sql", {"uri": pool_uris["one"], "weight": 1})
        pooled.admin.put_pool("redis", {"uri": with_prefix(url, prefix), "weight": 1})
        yield pooled


def test_queues_on_sqlite_and_redis_with_dead_letters_kept_on_each(mixed, project):
    service = mixed.service
    for i in range(10):
        service.create_queue(project, f"q{i}", {"_max_claim_count": 1,
                                                "_dead_letter_queue": f"q{i}-dlq"})
    where = {f"q{i}": mixed.pools.pool_of(project, f"q{i}") for i in range(10)}
    assert set(where.values()) == {"sql", "redis"}
    for queue, pool in where.items():
        assert mixed.pools.pool_of(project, f"{queue}-dlq") == pool
        [mid] = service.post_messages(project, queue, {"messages": [{"body": queue}]},
                                      client_id=None, body_size=8)
        claim = service.claim(project, queue, None, limit=1, client_id=None)
        service.release_claim(project, queue, claim.id, client_id=None)
        assert service.claim(project, queue, None, limit=1, client_id=None) is None
        backend = mixed.pools.storages()[pool]
        assert backend.messages.get(project, f"{queue}-dlq", mid).claim_count == 1
    listed = service.list_queues(project, limit=20, with_count=True)
    assert listed.count == 20
    assert [q.name for q in listed.queues] == sorted(
        [f"q{i}" for i in range(10)] + [f"q{i}-dlq" for i in range(10)]
    )
    report = service.health()
    assert report["redis"]["storage_reachable"] and report["sql"]["storage_reachable"]
