"""Storage backends: ``open_storage(uri)`` picks the driver by URI scheme."""

from __future__ import annotations

import importlib
from pathlib import Path
from urllib.parse import urlsplit

from zq.clock import Clock, SystemClock
from zq.config import RedisConfig, SqlConfig
from zq.errors import InvalidRequest
from zq.storage.base import Storage
from zq.storage.uri import redact

# scheme -> "module:factory"; drivers are imported only when used, so a
# deployment on SQL never needs the Redis or MongoDB client libraries.
DRIVERS: dict[str, str] = {
    "sqlite": "zq.storage.sql:open_sql",
    "postgresql": "zq.storage.sql:open_sql",
    "postgres": "zq.storage.sql:open_sql",
    "mysql": "zq.storage.sql:open_sql",
    "mariadb": "zq.storage.sql:open_sql",
    "redis": "zq.storage.redis:open_redis",
    "rediss": "zq.storage.redis:open_redis",
    "redis+sentinel": "zq.storage.redis:open_redis",
    "redis+cluster": "zq.storage.redis:open_redis",
    "mongodb": "zq.storage.mongo:open_mongo",
    "mongodb+srv": "zq.storage.mongo:open_mongo",
    "mongomock": "zq.storage.mongo:open_mongo",
}
REDIS_SCHEMES = ("redis", "rediss", "redis+sentinel", "redis+cluster")


def scheme_of(uri: str) -> str:
    """The driver scheme of a storage URI (``postgresql+psycopg`` -> ``postgresql``)."""
    scheme = urlsplit(uri).scheme.lower()
    if scheme.startswith("mongodb+srv"):
        return "mongodb+srv"
    if scheme in ("redis+sentinel", "redis+cluster"):
        return scheme
    return scheme.split("+", 1)[0]


def check_uri(uri: str) -> None:
    """Refuse a storage URI zq cannot use, saying what to write (InvalidRequest).

    Opens nothing and creates nothing: an SQLite file's directory must exist
    (zq creates only its own data directory), so registering a pool or
    starting a server never makes directories as a side effect.
    """
    if "://" not in uri:
        raise InvalidRequest(f"Storage URI {uri!r} has no scheme; {_write_instead(uri)}")
    scheme = scheme_of(uri)
    if scheme not in DRIVERS:
        raise InvalidRequest(
            f"Unsupported storage URI scheme {scheme!r}; use one of {sorted(set(DRIVERS))}."
        )
    if scheme == "sqlite":
        _check_sqlite(uri)
    elif scheme in REDIS_SCHEMES:
        from zq.storage.redis.uri import parse_uri

        parse_uri(uri)


def _write_instead(path: str) -> str:
    """What to write for a path given where a URI was expected."""
    if "/" not in path and "." not in path:
        return f"write scheme://..., the scheme one of {sorted(set(DRIVERS))}."
    if path.startswith(("/", "~")):
        return (f"for an SQLite file write sqlite:///{Path(path).expanduser()} "
                "(three slashes, then the path).")
    absolute = Path(path).resolve()
    return (f"for an SQLite file write sqlite:///{path} (relative to the working directory) "
            f"or sqlite:///{absolute}.")


def _check_sqlite(uri: str) -> None:
    rest = uri.split("://", 1)[1].split("?", 1)[0]
    if not rest:  # sqlite:// is an in-memory database
        return
    if not rest.startswith("/"):
        raise InvalidRequest(f"{uri!r} names a host, which SQLite has not; {_write_instead(rest)}")
    path = rest[1:]
    if path in ("", ":memory:"):
        return
    directory = Path(path).parent
    if not directory.is_dir():
        raise InvalidRequest(
            f"The directory {directory} of the SQLite database {uri!r} does not exist; "
            "zq does not create it: create it first, or name a file in an existing directory."
        )


def check_shareable(uri: str, processes: int) -> None:
    """Refuse a backend in one process's memory when ``processes`` server workers use it.

    ``mongomock://`` and an in-memory SQLite live inside the process that
    opens them: each worker would hold queues of its own, and a client would
    see its messages come and go with the worker that answers.
    """
    if processes > 1 and _in_process_memory(uri):
        raise InvalidRequest(
            f"{redact(uri)} keeps its data in the memory of one process, and the server "
            f"runs {processes} worker processes, each of which would hold its own queues; "
            "run zq serve --workers 1, or use a backend the workers share."
        )


def _in_process_memory(uri: str) -> bool:
    scheme = scheme_of(uri)
    if scheme == "mongomock":
        return True
    path = uri.split("://", 1)[-1].split("?", 1)[0]
    return scheme == "sqlite" and path in ("", "/", "/:memory:")


def open_storage(uri: str, *, clock: Clock | None = None,
                 redis: RedisConfig | None = None, sql: SqlConfig | None = None) -> Storage:
    """Connect to the backend named by ``uri`` (checked by ``check_uri`` first).

    ``redis``: the ``[redis]`` settings, which a Redis backend follows;
    ``sql``: the ``[sql]`` settings, which a SQL backend follows.
    """
    check_uri(uri)
    scheme = scheme_of(uri)
    module_name, factory = DRIVERS[scheme].split(":")
    module = importlib.import_module(module_name)
    options: dict[str, object] = {}
    if redis is not None and scheme in REDIS_SCHEMES:
        options["settings"] = redis
    elif sql is not None and module_name == "zq.storage.sql":
        options["settings"] = sql
    return getattr(module, factory)(uri, clock=clock or SystemClock(), **options)
