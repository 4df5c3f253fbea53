"""MongoDB storage driver (pymongo 4.x); ``mongomock://NAME`` for demos and tests."""

from __future__ import annotations

from zq.clock import Clock, SystemClock
from zq.storage.mongo.connection import connect
from zq.storage.mongo.storage import MongoStorage

__all__ = ["MongoStorage", "open_mongo"]


def open_mongo(uri: str, *, clock: Clock | None = None) -> MongoStorage:
    """Connect to ``mongodb://``, ``mongodb+srv://`` or ``mongomock://NAME``; create indexes."""
    return MongoStorage(connect(uri), clock=clock or SystemClock())
