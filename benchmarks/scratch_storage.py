"""A storage URI nobody else uses, for one benchmark run, removed afterwards.

``sqlite`` (a file in a temporary directory), ``postgresql`` and ``mariadb``
(a database created on the test server and dropped at the end, see
tests/backends.py) and ``redis`` (a random key prefix, deleted at the end).
The SQL ones are migrated; none is ever analyzed: the plans a new
deployment gets.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

BACKENDS = ("sqlite", "postgresql", "mariadb", "redis")


@contextmanager
def scratch(backend: str) -> Iterator[str]:
    """The storage URI of a fresh, empty ``backend``."""
    if backend == "sqlite":
        from zq.storage.sql import migrate

        with tempfile.TemporaryDirectory() as directory:
            uri = f"sqlite:///{directory}/bench.sqlite3"
            migrate.upgrade(uri)
            yield uri
    elif backend in ("postgresql", "mariadb"):
        from tests.backends import empty_database
        from zq.storage.sql import migrate

        with empty_database(backend) as uri:
            migrate.upgrade(uri)
            yield uri
    elif backend == "redis":
        from tests.redis_session import redis_prefix, with_prefix

        with redis_prefix() as (url, prefix):
            yield with_prefix(url, prefix)
    else:
        raise SystemExit(f"unknown backend {backend!r}: one of {', '.join(BACKENDS)}")
