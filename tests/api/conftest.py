"""API tests: falcon's TestClient on create_app over a SQLite storage.

Time comes from one ManualClock shared by the storage and the app, so tests
cross claim and message expiries by advancing it. ``clock``, ``project``
and ``storage`` are tests/backends.py's; only the backend is pinned here:
HTTP shapes do not depend on it (the contract suite covers every driver).
"""

from __future__ import annotations

import pytest

from tests.api.fixtures import api, app, config
from tests.backends import clock, project, storage, storage_factory

__all__ = ["api", "app", "clock", "config", "project", "storage", "storage_factory"]


@pytest.fixture(scope="session")
def backend_name() -> str:
    return "sqlite"
