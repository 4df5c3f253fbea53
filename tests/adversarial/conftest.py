"""Attack shapes: the API over every test backend (``api``, ``app``, ``storage``).

tests/api/ runs on SQLite only; a shape that a backend's driver, types or
SQL dialect may choke on (NUL bytes, huge integers, huge posts) must be
tried on each, so these fixtures are parametrized over ZQ_TEST_BACKENDS.
"""

from __future__ import annotations

import falcon
import pytest

from tests.api.helpers import Api
from tests.backends import backend_name, clock, project, storage, storage_factory
from zq.api import create_app
from zq.clock import ManualClock
from zq.config import Config
from zq.storage.base import Storage

__all__ = [
    "api", "app", "backend_name", "clock", "config", "project", "storage", "storage_factory",
]


@pytest.fixture
def config() -> Config:
    return Config()


@pytest.fixture
def app(config: Config, storage: Storage, clock: ManualClock) -> falcon.App:
    return create_app(config, storage=storage, clock=clock)


@pytest.fixture
def api(app: falcon.App, project: str) -> Api:
    return Api(app, project)
