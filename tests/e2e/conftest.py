"""One ``zq serve`` per backend for the end-to-end tests, always stopped.

Backends: SQLite (a temporary file) and PostgreSQL (a fresh database created
for this session and dropped afterwards). ZQ_TEST_BACKENDS (comma list)
narrows the selection; PostgreSQL's address is ZQ_TEST_POSTGRES_URL.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from tests.e2e.server import ServerProcess, clean_environment, run_zq

POSTGRES_URL = os.environ.get(
    "ZQ_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
)
E2E_BACKENDS = ("sqlite", "postgresql")


def selected(name: str) -> bool:
    wanted = os.environ.get("ZQ_TEST_BACKENDS", "")
    return not wanted or name in {item.strip() for item in wanted.split(",")}


@pytest.fixture(scope="session")
def postgres_database() -> Iterator[str]:
    """A fresh PostgreSQL database (its URI), dropped after the session."""
    import psycopg
    from psycopg import sql

    name = f"zq_e2e_{uuid.uuid4().hex[:12]}"
    admin = psycopg.connect(POSTGRES_URL, autocommit=True, connect_timeout=10)
    admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield urlunsplit(urlsplit(POSTGRES_URL)._replace(path=f"/{name}"))
    finally:
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)")
                      .format(sql.Identifier(name)))
        admin.close()


@pytest.fixture(scope="module", params=[
    pytest.param(name, marks=pytest.mark.skipif(
        not selected(name), reason=f"{name} not in ZQ_TEST_BACKENDS"))
    for name in E2E_BACKENDS
])
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[ServerProcess]:
    """A running ``zq serve`` with two workers on the backend of the parameter."""
    tmp = tmp_path_factory.mktemp(f"e2e-{request.param}")
    env = clean_environment(tmp / "data")
    if request.param == "sqlite":
        uri = f"sqlite:///{tmp / 'zq.sqlite3'}"
    else:
        uri = request.getfixturevalue("postgres_database")
        migrated = run_zq("db", "upgrade", "--storage", uri, env=env)
        assert migrated.returncode == 0, migrated.stderr
    process = ServerProcess(tmp / "server.log", env, "--workers", "2", "--storage", uri)
    request.addfinalizer(process.stop)
    yield process.start()


@pytest.fixture
def project() -> str:
    """A project id no other test uses."""
    return f"e2e-{uuid.uuid4().hex}"


@pytest.fixture
def data_home(tmp_path: Path) -> Path:
    return tmp_path / "data"
