"""The test backends every parametrized suite runs against.

A backend is a name and a *session setup*: a context manager that prepares
an isolated place for one test session (a temporary SQLite file, a fresh
PostgreSQL/MariaDB database, a Redis key prefix, ...) and yields a
``factory(clock) -> Storage`` returning a connected, migrated Storage that
uses it; leaving the context removes what it created.

Adding a backend is one decorated function:

    @backend("redis")
    @contextmanager
    def redis_session() -> Iterator[StorageFactory]:
        ...
        yield lambda clock: open_redis(url, clock=clock)

``ZQ_TEST_BACKENDS`` (comma separated) selects backends; default all, except
that a backend registered with ``suites`` (``redis-cluster``: a local
cluster, costly) runs by default only in those suites. A selected backend
that cannot be reached makes its tests error, never skip.

Suites use the fixtures at the bottom: import them into the suite's
conftest.py (``from tests.backends import backend_name, clock, project,
storage, storage_factory``).
"""

from __future__ import annotations

import os
import secrets
import tempfile
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager

import pytest

from zq.clock import Clock, ManualClock
from zq.config import RedisConfig, SqlConfig
from zq.storage.base import Storage

StorageFactory = Callable[[Clock], Storage]
SessionSetup = Callable[[], AbstractContextManager[StorageFactory]]

BACKENDS: dict[str, SessionSetup] = {}
# Backends that run by default only in the suites named here (the others
# run by default everywhere): a backend costly to run every suite on.
DEFAULT_SUITES: dict[str, tuple[str, ...]] = {}


def backend(name: str, *, suites: tuple[str, ...] | None = None
            ) -> Callable[[SessionSetup], SessionSetup]:
    """Register a session setup under ``name`` (by default run only in ``suites``, when given)."""

    def register(setup: SessionSetup) -> SessionSetup:
        BACKENDS[name] = setup
        if suites is not None:
            DEFAULT_SUITES[name] = suites
        return setup

    return register


def selected_backends(suite: str | None = None) -> list[str]:
    """Backend names chosen by ZQ_TEST_BACKENDS; by default every backend
    registered for every suite, and those registered for ``suite``."""
    wanted = os.environ.get("ZQ_TEST_BACKENDS", "").strip()
    if not wanted:
        return [name for name in BACKENDS
                if name not in DEFAULT_SUITES or suite in DEFAULT_SUITES[name]]
    names = [name.strip() for name in wanted.split(",") if name.strip()]
    unknown = sorted(set(names) - set(BACKENDS))
    if unknown:
        raise pytest.UsageError(
            f"ZQ_TEST_BACKENDS names unknown backends {unknown}; known: {sorted(BACKENDS)}"
        )
    return names


class BackendUnreachable(RuntimeError):
    """A selected test backend cannot be used: the tests must fail, not skip."""


# --- SQL backends ----------------------------------------------------------


def sql_settings() -> SqlConfig:
    """The SQL driver's settings: ZQ_TEST_GROUP_COMMIT=1 runs a suite with group commit on."""
    return SqlConfig(group_commit=os.environ.get("ZQ_TEST_GROUP_COMMIT", "") == "1")


@backend("sqlite")
@contextmanager
def sqlite_session() -> Iterator[StorageFactory]:
    from zq.storage.sql import open_sql

    with tempfile.TemporaryDirectory(prefix="zq-test-") as directory:
        uri = f"sqlite:///{directory}/zq.sqlite3"
        yield lambda clock: open_sql(uri, clock=clock, settings=sql_settings())


SERVERS = {
    # kind: (environment variable, default admin URL)
    "postgresql": ("ZQ_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"),
    "mariadb": ("ZQ_TEST_MYSQL_URL", "mysql://root@127.0.0.1:3306/test"),
}


@contextmanager
def empty_database(kind: str) -> Iterator[str]:
    """A freshly created, empty database on a SQL server; its URI. Dropped after."""
    import sqlalchemy as sa

    from zq.storage.sql import dialects

    env, default = SERVERS[kind]
    admin_url = dialects.to_sqlalchemy_url(os.environ.get(env, default))
    name = f"zq_test_{secrets.token_hex(6)}"
    admin = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT", poolclass=sa.NullPool)
    try:
        with admin.connect() as conn:
            conn.exec_driver_sql(f"CREATE DATABASE {name}")
    except sa.exc.DBAPIError as error:
        admin.dispose()
        raise BackendUnreachable(
            f"The {kind} test backend at {admin_url.render_as_string(hide_password=True)} "
            f"is unreachable or refused CREATE DATABASE ({error.orig}). Start it, point "
            f"{env} at a server, or leave {kind} out of ZQ_TEST_BACKENDS."
        ) from error
    try:
        yield admin_url.set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            force = " WITH (FORCE)" if kind == "postgresql" else ""
            conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {name}{force}")
        admin.dispose()


@contextmanager
def _server_session(kind: str, *, one_statement: bool | None = None) -> Iterator[StorageFactory]:
    """A migrated database of its own on a SQL server, for one test session."""
    from zq.storage.sql import migrate, open_sql

    with empty_database(kind) as uri:
        migrate.upgrade(uri)
        yield lambda clock: open_sql(uri, clock=clock, one_statement=one_statement,
                                     settings=sql_settings())


@backend("postgresql")
def postgresql_session() -> AbstractContextManager[StorageFactory]:
    return _server_session("postgresql")


@backend("postgresql-general")
def postgresql_general_session() -> AbstractContextManager[StorageFactory]:
    """PostgreSQL on the SQL driver's general path (its one-statement writes off)."""
    return _server_session("postgresql", one_statement=False)


@backend("mariadb")
def mariadb_session() -> AbstractContextManager[StorageFactory]:
    return _server_session("mariadb")


# --- Redis ------------------------------------------------------------------


def redis_settings() -> RedisConfig:
    """The Redis driver's settings: ZQ_TEST_REDIS_COALESCE=1 runs a suite with
    coalesced script calls on (not on redis-cluster, which refuses them)."""
    return RedisConfig(coalesce=os.environ.get("ZQ_TEST_REDIS_COALESCE", "") == "1")


@backend("redis")
def redis_session() -> AbstractContextManager[StorageFactory]:
    """A random key prefix on ZQ_TEST_REDIS_URL; its keys are deleted at the end."""
    from tests.redis_session import redis_session as prefixed_session

    return prefixed_session()


@backend("redis-cluster", suites=("contract",))
def redis_cluster_session() -> AbstractContextManager[StorageFactory]:
    """A local 6-node Redis Cluster (tests/redis_cluster.py), started and stopped here.

    By default only the storage contract suite runs on it (CI's time);
    ZQ_TEST_BACKENDS=redis-cluster runs any backend suite on it.
    """
    from tests.redis_cluster import cluster_session

    return cluster_session()


# --- MongoDB ---------------------------------------------------------------


@backend("mongo")
def mongo_session() -> AbstractContextManager[StorageFactory]:
    """mongomock in memory; a real server (fresh database) when ZQ_TEST_MONGO_URL is set."""
    from tests.drivers.mongo.session import mongo_session

    return mongo_session()


# --- fixtures --------------------------------------------------------------


@pytest.fixture(scope="session", params=selected_backends())
def backend_name(request: pytest.FixtureRequest) -> str:
    """The name of the backend the current test runs on."""
    return request.param


@pytest.fixture(scope="session")
def storage_factory(backend_name: str) -> Iterator[StorageFactory]:
    """``factory(clock) -> Storage`` on this session's isolated backend."""
    with BACKENDS[backend_name]() as factory:
        yield factory


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def storage(storage_factory: StorageFactory, clock: ManualClock) -> Iterator[Storage]:
    """A Storage reading time from this test's ManualClock."""
    store = storage_factory(clock)
    try:
        yield store
    finally:
        store.close()


@pytest.fixture
def project() -> str:
    """A project id no other test (or concurrent test run) uses."""
    return f"p-{uuid.uuid4().hex}"
