"""The ``mongo`` test backend: mongomock by default, a real server with ZQ_TEST_MONGO_URL.

With ``ZQ_TEST_MONGO_URL=mongodb://host:27017`` (or ``mongodb+srv://...``)
each test session gets its own database ``zq_test_<random>``, dropped at
the end; without it, an in-memory ``mongomock://zq-test-<random>`` store.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit, urlunsplit

from tests.backends import BackendUnreachable
from zq.clock import Clock
from zq.storage.base import Storage

StorageFactory = Callable[[Clock], Storage]


class MongoUnreachable(BackendUnreachable):
    """ZQ_TEST_MONGO_URL is set but the server does not answer: fail, never skip."""


def real_server_url() -> str | None:
    """The real MongoDB server the tests use, or None for mongomock."""
    return os.environ.get("ZQ_TEST_MONGO_URL") or None


def with_database(url: str, database: str) -> str:
    """``url`` with its database path replaced by ``database``."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + database, parts.query, ""))


@contextmanager
def mongo_session() -> Iterator[StorageFactory]:
    """Yield a storage factory on an isolated MongoDB database for one session."""
    from zq.storage.mongo import open_mongo

    url = real_server_url()
    if url is None:
        from zq.storage.mongo.connection import drop_mock

        name = f"zq-test-{secrets.token_hex(6)}"
        try:
            yield lambda clock: open_mongo(f"mongomock://{name}", clock=clock)
        finally:
            drop_mock(name)
        return

    import pymongo
    from pymongo.errors import PyMongoError

    database = f"zq_test_{secrets.token_hex(6)}"
    client: pymongo.MongoClient = pymongo.MongoClient(url, serverSelectionTimeoutMS=5000)
    try:
        client.admin.command("ping")
    except PyMongoError as error:
        client.close()
        raise MongoUnreachable(
            f"ZQ_TEST_MONGO_URL={url} does not answer ({error}); start the server or unset it."
        ) from error
    uri = with_database(url, database)
    try:
        yield lambda clock: open_mongo(uri, clock=clock)
    finally:
        client.drop_database(database)
        client.close()
