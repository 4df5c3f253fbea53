"""A Redis Cluster as a pool, next to an SQLite one (docs/redis.md, "Redis Cluster")."""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import pytest

from tests.redis_cluster import LocalCluster, local_cluster


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    with local_cluster() as running:
        yield running


@pytest.fixture
def with_cluster(pooled, pool_uris, cluster):
    pooled.admin.put_pool("sql", {"uri": pool_uris["one"], "weight": 1})
    pooled.admin.put_pool("cluster", {
        "uri": f"{cluster.uri}?prefix=zqpool-{secrets.token_hex(4)}", "weight": 1})
    return pooled


def test_queues_on_a_cluster_pool_with_dead_letters_kept_on_it(with_cluster, project):
    service = with_cluster.service
    for i in range(10):
        service.create_queue(project, f"q{i}", {"_max_claim_count": 1,
                                                "_dead_letter_queue": f"q{i}-dlq"})
    where = {f"q{i}": with_cluster.pools.pool_of(project, f"q{i}") for i in range(10)}
    assert set(where.values()) == {"sql", "cluster"}
    for queue, pool in where.items():
        assert with_cluster.pools.pool_of(project, f"{queue}-dlq") == pool
        [mid] = service.post_messages(project, queue, {"messages": [{"body": queue}]},
                                      client_id=None, body_size=8)
        claim = service.claim(project, queue, None, limit=1, client_id=None)
        service.release_claim(project, queue, claim.id, client_id=None)
        assert service.claim(project, queue, None, limit=1, client_id=None) is None
        backend = with_cluster.pools.storages()[pool]
        assert backend.messages.get(project, f"{queue}-dlq", mid).claim_count == 1
    listed = service.list_queues(project, limit=20, with_count=True)
    assert listed.count == 20
    report = service.health()
    assert report["cluster"]["storage_reachable"] and report["sql"]["storage_reachable"]
