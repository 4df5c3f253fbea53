"""Connecting to MongoDB (or mongomock) and finding out what the server offers.

``mongodb://`` and ``mongodb+srv://`` URIs go to pymongo unchanged; the
database is the URI's path (``zq`` when it names none). ``mongomock://NAME``
is a single-process, in-memory backend for demos and tests: every storage
opened with the same NAME in one process shares one mongomock client, and
nothing survives the process. It is not for production.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from zq.errors import InvalidRequest

DEFAULT_DATABASE = "zq"

_mock_clients: dict[str, Any] = {}
_mock_clients_lock = threading.Lock()


@dataclass(frozen=True)
class Connection:
    """A client, the database zq uses in it, and what the server supports."""

    client: Any
    database: Any
    transactions: bool  # multi-document transactions (replica set or mongos)
    shared: bool  # a mongomock client shared per NAME: close() must leave it open


def connect(uri: str) -> Connection:
    """Open the client named by ``uri`` and detect transaction support."""
    scheme = urlsplit(uri).scheme.lower()
    if scheme == "mongomock":
        return _connect_mock(uri)
    import pymongo

    client: Any = pymongo.MongoClient(uri, tz_aware=True)
    database = client.get_default_database(default=DEFAULT_DATABASE)
    return Connection(client, database, supports_transactions(client.admin.command), False)


def supports_transactions(command: Callable[..., dict[str, Any]]) -> bool:
    """Whether the server behind ``command`` runs multi-document transactions.

    A replica set member answers ``hello`` with ``setName``, a sharded
    cluster's router with ``msg: isdbgrid``; a standalone server (and
    mongomock, which implements no ``hello``) has no transactions.
    """
    try:
        hello = command("hello")
    except Exception:
        # mongomock raises NotImplementedError; an old or unreachable server
        # is treated the same way: write events right after the change.
        return False
    has_sessions = "logicalSessionTimeoutMinutes" in hello
    return has_sessions and ("setName" in hello or hello.get("msg") == "isdbgrid")


def _connect_mock(uri: str) -> Connection:
    import mongomock

    name = urlsplit(uri).netloc or urlsplit(uri).path.strip("/")
    if not name:
        raise InvalidRequest("A mongomock URI names its in-memory store: mongomock://NAME.")
    with _mock_clients_lock:
        client = _mock_clients.get(name)
        if client is None:
            client = _mock_clients[name] = LockedClient(mongomock.MongoClient(tz_aware=True))
    return Connection(client, client[DEFAULT_DATABASE], supports_transactions(
        client[DEFAULT_DATABASE].command), True)


def drop_mock(name: str) -> None:
    """Forget the in-memory store ``mongomock://NAME`` (tests clean up with it)."""
    with _mock_clients_lock:
        _mock_clients.pop(name, None)


class LockedClient:
    """A mongomock client whose every collection call holds one lock.

    mongomock is not thread-safe: concurrent calls corrupt its dictionaries.
    A real server makes each single-document operation atomic; this lock
    gives mongomock the same guarantee, one operation at a time, so the
    driver's conditional updates are exercised under interleaving exactly
    as they would be on a server. Cursors are read out to lists inside the
    lock.
    """

    def __init__(self, client: Any) -> None:
        self._client = client
        self._lock = threading.RLock()

    def __getitem__(self, name: str) -> LockedDatabase:
        return LockedDatabase(self._client[name], self._lock)

    def close(self) -> None:
        """Never close the shared in-memory client."""


class LockedDatabase:
    def __init__(self, database: Any, lock: threading.RLock) -> None:
        self._database = database
        self._lock = lock

    def __getitem__(self, name: str) -> LockedCollection:
        return LockedCollection(self._database[name], self._lock)

    @property
    def name(self) -> str:
        return self._database.name

    def __getattr__(self, attr: str) -> Any:
        return _locked(getattr(self._database, attr), self._lock)


class LockedCollection:
    def __init__(self, collection: Any, lock: threading.RLock) -> None:
        self._collection = collection
        self._lock = lock

    @property
    def name(self) -> str:
        return self._collection.name

    @property
    def wrapped(self) -> Any:
        """The mongomock collection itself (tests inspect its indexes)."""
        return self._collection

    def __getattr__(self, attr: str) -> Any:
        return _locked(getattr(self._collection, attr), self._lock)


def _locked(method: Any, lock: threading.RLock) -> Any:
    """``method`` called under ``lock``, its cursor (if any) read out to a list."""
    if not callable(method):
        return method

    def locked(*args: Any, **kwargs: Any) -> Any:
        with lock:
            result = method(*args, **kwargs)
            if hasattr(result, "__next__"):
                result = list(result)
            return result

    return locked
