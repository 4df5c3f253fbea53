"""Storage URIs for the crash tests: one isolated place per backend, removed after.

SQLite (a temporary file, migrated by ``zq serve`` itself), PostgreSQL (a
fresh database, migrated here) and Redis (a random key prefix on the shared
server). ZQ_TEST_BACKENDS narrows the selection, as everywhere.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.backends import empty_database
from tests.redis_session import redis_prefix, with_prefix

CRASH_BACKENDS = ("sqlite", "postgresql", "redis")


def selected(name: str) -> bool:
    wanted = os.environ.get("ZQ_TEST_BACKENDS", "")
    return not wanted or name in {item.strip() for item in wanted.split(",")}


@pytest.fixture(params=[
    pytest.param(name, marks=pytest.mark.skipif(
        not selected(name), reason=f"{name} not in ZQ_TEST_BACKENDS"))
    for name in CRASH_BACKENDS
])
def storage_uri(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A storage URI nobody else uses, on the backend of the parameter."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'zq.sqlite3'}"
    elif request.param == "postgresql":
        from zq.storage.sql import migrate

        with empty_database("postgresql") as uri:
            migrate.upgrade(uri)
            yield uri
    else:
        with redis_prefix() as (url, prefix):
            yield with_prefix(url, prefix)
