"""Fixtures for the MongoDB driver's own tests (always the ``mongo`` backend)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.backends import clock, project
from tests.drivers.mongo.session import StorageFactory, mongo_session
from zq.clock import ManualClock
from zq.storage.mongo import MongoStorage

__all__ = ["clock", "mongo_factory", "project", "storage"]


@pytest.fixture(scope="session")
def mongo_factory() -> Iterator[StorageFactory]:
    with mongo_session() as factory:
        yield factory


@pytest.fixture
def storage(mongo_factory: StorageFactory, clock: ManualClock) -> Iterator[MongoStorage]:
    store = mongo_factory(clock)
    assert isinstance(store, MongoStorage)
    try:
        yield store
    finally:
        store.close()
