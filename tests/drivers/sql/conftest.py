"""Fixtures for SQL-driver-specific tests, on the selected SQL backends only."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.backends import BACKENDS, StorageFactory, empty_database, selected_backends
from zq.clock import ManualClock
from zq.storage.sql import SqlStorage

SQL_BACKENDS = [name for name in selected_backends()
                if name in ("sqlite", "postgresql", "mariadb")]


@pytest.fixture(scope="session", params=SQL_BACKENDS)
def sql_factory(request: pytest.FixtureRequest) -> Iterator[StorageFactory]:
    with BACKENDS[request.param]() as factory:
        yield factory


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def sql_storage(sql_factory: StorageFactory, clock: ManualClock) -> Iterator[SqlStorage]:
    store = sql_factory(clock)
    assert isinstance(store, SqlStorage)
    try:
        yield store
    finally:
        store.close()


@pytest.fixture(params=SQL_BACKENDS)
def empty_uri(request: pytest.FixtureRequest, tmp_path) -> Iterator[str]:
    """The URI of an empty database on one SQL backend (nothing migrated)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path}/zq.sqlite3"
        return
    with empty_database(request.param) as uri:
        yield uri
