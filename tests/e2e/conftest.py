"""One ``zq serve`` per backend for the end-to-end tests, always stopped.

Backends: SQLite (a temporary file), PostgreSQL (a fresh database created
for this session and dropped afterwards), Redis (a fresh key prefix, deleted
afterwards) and MongoDB as ``mongomock://`` (in memory, so one worker).
ZQ_TEST_BACKENDS (comma list) narrows the selection; the servers' addresses
are ZQ_TEST_POSTGRES_URL and ZQ_TEST_REDIS_URL.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from tests.e2e.server import ServerProcess, clean_environment, run_zq
from tests.redis_session import redis_prefix, with_prefix

POSTGRES_URL = os.environ.get(
    "ZQ_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
)
E2E_BACKENDS = ("sqlite", "postgresql", "redis", "mongo")
SIGNING_KEY = "e2e-signing-key-0123456789abcdef"


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
    """A running ``zq serve`` (two workers; one on mongomock) on the parameter's backend."""
    tmp = tmp_path_factory.mktemp(f"e2e-{request.param}")
    env = clean_environment(tmp / "data")
    env["ZQ_SIGNED_URLS_SECRET_KEY"] = SIGNING_KEY  # python-zaqarclient's signed_url
    workers = "2"
    with ExitStack() as cleanup:
        if request.param == "sqlite":
            uri = f"sqlite:///{tmp / 'zq.sqlite3'}"
        elif request.param == "postgresql":
            uri = request.getfixturevalue("postgres_database")
            migrated = run_zq("db", "upgrade", "--storage", uri, env=env)
            assert migrated.returncode == 0, migrated.stderr
        elif request.param == "redis":
            uri = with_prefix(*cleanup.enter_context(redis_prefix()))
        else:
            # mongomock keeps its data in one process's memory: one worker only.
            uri, workers = f"mongomock://e2e-{uuid.uuid4().hex[:8]}", "1"
        process = ServerProcess(tmp / "server.log", env, "--workers", workers, "--storage", uri)
        cleanup.callback(process.stop)
        yield process.start()


@pytest.fixture
def project() -> str:
    """A project id no other test uses."""
    return f"e2e-{uuid.uuid4().hex}"


@pytest.fixture
def data_home(tmp_path: Path) -> Path:
    return tmp_path / "data"
