"""API tests: falcon's TestClient on create_app over a SQLite storage.

Time comes from one ManualClock shared by the storage and the app, so tests
cross claim and message expiries by advancing it. ``clock``, ``project``
and ``storage`` are tests/backends.py's; only the backend is pinned here:
HTTP shapes do not depend on it (the contract suite covers every driver).
"""

from __future__ import annotations

import falcon.testing
import pytest

from tests.api.helpers import Api
from tests.backends import clock, project, storage, storage_factory
from zq.api import create_app
from zq.clock import ManualClock
from zq.config import Config
from zq.storage.base import Storage

__all__ = ["clock", "project", "storage", "storage_factory"]


@pytest.fixture(scope="session")
def backend_name() -> str:
    return "sqlite"


@pytest.fixture
def config() -> Config:
    return Config()


@pytest.fixture
def app(config: Config, storage: Storage, clock: ManualClock) -> falcon.App:
    return create_app(config, storage=storage, clock=clock)


@pytest.fixture
def api(app: falcon.App, project: str) -> Api:
    return Api(app, project)
