from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from tests.redis_session import redis_prefix, with_prefix
from zq.clock import ManualClock
from zq.storage.redis import RedisStorage, open_redis


@pytest.fixture(scope="session")
def redis_target() -> Iterator[tuple[str, str]]:
    """(url, prefix) of this session's keys on the test Redis."""
    with redis_prefix() as target:
        yield target


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def redis_uri(redis_target: tuple[str, str]) -> str:
    return with_prefix(*redis_target)


@pytest.fixture
def storage(redis_uri: str, clock: ManualClock) -> Iterator[RedisStorage]:
    store = open_redis(redis_uri, clock=clock)
    assert isinstance(store, RedisStorage)
    try:
        yield store
    finally:
        store.close()


@pytest.fixture
def project() -> str:
    return f"p-{uuid.uuid4().hex}"
