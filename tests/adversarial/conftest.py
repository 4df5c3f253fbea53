"""Fixtures of the attack shapes.

- ``api``, ``app``, ``storage``: the API over every test backend. tests/api/
  runs on SQLite only; a shape that a backend's driver, types or SQL dialect
  may choke on (NUL bytes, huge integers, huge posts) must be tried on each,
  so these fixtures are parametrized over ZQ_TEST_BACKENDS.
- ``short_timeout_server``: a real ``zq serve`` with short client timeouts,
  shared by the attacks that need one.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.api.fixtures import api, app, config
from tests.backends import backend_name, clock, project, storage, storage_factory
from tests.e2e.server import ServerProcess, clean_environment

__all__ = [
    "api", "app", "backend_name", "clock", "config", "project", "storage", "storage_factory",
]

BODY_TIMEOUT = 2.0  # [server] body_timeout of the server under attack, seconds
HEAD_TIMEOUT = 3  # [server] timeout: the request line and headers, seconds


@pytest.fixture(scope="session")
def short_timeout_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """``zq serve``: 2 workers x 4 threads on SQLite, short body and head timeouts."""
    tmp = tmp_path_factory.mktemp("adversarial")
    env = clean_environment(tmp / "data")
    env.update(ZQ_SERVER_BODY_TIMEOUT=str(BODY_TIMEOUT), ZQ_SERVER_TIMEOUT=str(HEAD_TIMEOUT))
    env["ZQ_SERVER_THREADS"] = "4"
    process = ServerProcess(tmp / "server.log", env, "--workers", "2",
                            "--storage", f"sqlite:///{tmp / 'zq.sqlite3'}")
    try:
        yield process.start()
    finally:
        process.stop()
