"""Storage backends: ``open_storage(uri)`` picks the driver by URI scheme."""

from __future__ import annotations

import importlib
from urllib.parse import urlsplit

from zq.clock import Clock, SystemClock
from zq.errors import InvalidRequest
from zq.storage.base import Storage

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
    "mongodb": "zq.storage.mongo:open_mongo",
    "mongodb+srv": "zq.storage.mongo:open_mongo",
    "mongomock": "zq.storage.mongo:open_mongo",
}


def scheme_of(uri: str) -> str:
    """The driver scheme of a storage URI (``postgresql+psycopg`` -> ``postgresql``)."""
    scheme = urlsplit(uri).scheme.lower()
    if scheme.startswith("mongodb+srv"):
        return "mongodb+srv"
    return scheme.split("+", 1)[0]


def open_storage(uri: str, *, clock: Clock | None = None) -> Storage:
    """Connect to the backend named by ``uri``."""
    scheme = scheme_of(uri)
    target = DRIVERS.get(scheme)
    if target is None:
        raise InvalidRequest(
            f"Unsupported storage URI scheme {scheme!r}; use one of {sorted(set(DRIVERS))}."
        )
    module_name, factory = target.split(":")
    module = importlib.import_module(module_name)
    return getattr(module, factory)(uri, clock=clock or SystemClock())
