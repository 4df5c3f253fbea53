"""An isolated Redis key prefix for one test session.

Used by the ``redis`` entry of tests/backends.py and by the Redis driver
tests. Every session gets a random prefix and deletes its keys at the end
(SCAN by prefix, in teardown only); the server is shared, so nothing else is
ever flushed.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import redis

from tests.backends import BackendUnreachable
from zq.clock import Clock
from zq.storage.base import Storage

DEFAULT_URL = "redis://127.0.0.1:6379/0"


def redis_url() -> str:
    return os.environ.get("ZQ_TEST_REDIS_URL", DEFAULT_URL)


def with_prefix(url: str, prefix: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}prefix={prefix}"


def delete_prefix(client: redis.Redis, prefix: str) -> int:
    """Delete every key starting with ``prefix`` (derived prefixes included)."""
    removed = 0
    batch: list[bytes] = []
    for key in client.scan_iter(match=f"{prefix}*", count=1000):
        batch.append(key)
        if len(batch) >= 500:
            removed += client.delete(*batch)
            batch = []
    if batch:
        removed += client.delete(*batch)
    return removed


@contextmanager
def redis_prefix() -> Iterator[tuple[str, str]]:
    """Yield ``(url, prefix)`` for a fresh prefix; delete its keys afterwards."""
    url = redis_url()
    client = redis.Redis.from_url(url)
    try:
        client.ping()
    except redis.RedisError as error:
        client.close()
        raise BackendUnreachable(
            f"The Redis test backend at {url} is unreachable ({error}). Start it, point "
            "ZQ_TEST_REDIS_URL at a server, or leave redis out of ZQ_TEST_BACKENDS."
        ) from error
    prefix = f"zqtest-{secrets.token_hex(6)}"
    try:
        yield url, prefix
    finally:
        delete_prefix(client, prefix)
        client.close()


@contextmanager
def redis_session() -> Iterator[Callable[[Clock], Storage]]:
    """The tests/backends.py session setup: ``factory(clock) -> Storage``."""
    from tests.backends import redis_settings
    from zq.storage.redis import open_redis

    with redis_prefix() as (url, prefix):
        uri = with_prefix(url, prefix)
        yield lambda clock: open_redis(uri, clock=clock, settings=redis_settings())
