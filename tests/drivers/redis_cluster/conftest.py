from __future__ import annotations

import secrets
import uuid
from collections.abc import Iterator

import pytest

from tests.redis_cluster import LocalCluster, local_cluster
from zq.clock import ManualClock
from zq.storage.redis import RedisStorage, open_redis


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    """A local 6-node cluster for this module's tests (tests/redis_cluster.py)."""
    with local_cluster() as running:
        yield running


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def cluster_uri(cluster: LocalCluster) -> str:
    return f"{cluster.uri}?prefix=zqtest-{secrets.token_hex(6)}"


@pytest.fixture
def storage(cluster_uri: str, clock: ManualClock) -> Iterator[RedisStorage]:
    store = open_redis(cluster_uri, clock=clock)
    assert isinstance(store, RedisStorage)
    try:
        yield store
    finally:
        store.close()


@pytest.fixture
def project() -> str:
    return f"p-{uuid.uuid4().hex[:12]}"
