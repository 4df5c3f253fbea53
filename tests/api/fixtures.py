"""The API over a test storage: ``config``, ``app`` and ``api``.

Imported by the conftest.py of each suite that drives create_app through
falcon's TestClient; the suite's conftest decides which backends run.
"""

from __future__ import annotations

import falcon
import pytest

from tests.api.helpers import Api
from zq.api import create_app
from zq.clock import ManualClock
from zq.config import Config
from zq.storage.base import Storage


@pytest.fixture
def config() -> Config:
    return Config()


@pytest.fixture
def app(config: Config, storage: Storage, clock: ManualClock) -> falcon.App:
    return create_app(config, storage=storage, clock=clock)


@pytest.fixture
def api(app: falcon.App, project: str) -> Api:
    return Api(app, project)
