"""API tests: falcon's TestClient on create_app over a SQLite storage.

Time comes from one ManualClock shared by the storage and the app, so tests
cross claim and message expiries by advancing it.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import falcon.testing
import pytest
from tests.backends import BACKENDS, StorageFactory

from tests.api.helpers import Api
from zq.api import create_app
from zq.clock import ManualClock
from zq.config import Config
from zq.storage.base import Storage


@pytest.fixture(scope="session")
def sqlite_factory() -> Iterator[StorageFactory]:
    with BACKENDS["sqlite"]() as factory:
        yield factory


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def storage(sqlite_factory: StorageFactory, clock: ManualClock) -> Iterator[Storage]:
    store = sqlite_factory(clock)
    try:
        yield store
    finally:
        store.close()


@pytest.fixture
def config() -> Config:
    return Config()


@pytest.fixture
def app(config: Config, storage: Storage, clock: ManualClock) -> falcon.App:
    return create_app(config, storage=storage, clock=clock)


@pytest.fixture
def project() -> str:
    return f"p-{uuid.uuid4().hex}"


@pytest.fixture
def api(app: falcon.App, project: str) -> Api:
    return Api(app, project)
