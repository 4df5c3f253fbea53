"""The links version of a project, held as a short lease while a link is written.

MongoDB changes one document atomically, with or without transactions; a
links change writes two (the project's document in ``links`` and the
queue's). So the links document is also a lease: a writer that read
version ``v`` moves it to ``v + 1`` (odd: held) only if it is still ``v``,
writes the queue, then moves it on to ``v + 2`` (back to ``v`` when the
queue write was refused). Any writer that read a version in between finds
it moved and reads the links again. A writer that died holding the lease
blocks link changes in its project until LEASE seconds have passed; the
next writer then takes the lease over (a writer paused that long could
still write its link after that: the limit of a lease).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from pymongo.errors import DuplicateKeyError

from zq.errors import MetadataChanged
from zq.storage.mongo.backend import Backend

T = TypeVar("T")

# Seconds a lease protects a writer that stopped before releasing it.
LEASE = 30.0


def links_version(backend: Backend, project: str) -> str:
    """The project's links version ("0" before its first link change)."""
    doc = backend.links.find_one({"_id": project})
    return "0" if doc is None else str(doc["version"])


def write_link(backend: Backend, project: str, expected: str, write: Callable[[], T]) -> T:
    """``write()`` while holding the links lease taken from version ``expected``.

    MetadataChanged, without writing, when the version moved. When
    ``write()`` raises, the version is put back: nothing was linked.
    """
    start = int(expected)
    held = _take(backend, project, start)
    lease = {"_id": project, "version": held}  # unless another writer took it over
    try:
        result = write()
    except BaseException:
        if start == 0:
            backend.links.delete_one(lease)
        else:
            backend.links.update_one(lease, {"$set": {"version": start}})
        raise
    backend.links.update_one(lease, {"$set": {"version": held + 1}})
    return result


def _take(backend: Backend, project: str, expected: int) -> int:
    now = backend.clock.now()
    held = expected + 1 if expected % 2 == 0 else expected + 2
    taken = {"$set": {"version": held, "until": now + LEASE}}
    if expected == 0:
        try:
            backend.links.insert_one({"_id": project, "version": held, "until": now + LEASE})
            return held
        except DuplicateKeyError:
            raise _moved() from None
    query: dict[str, Any] = {"_id": project, "version": expected}
    if expected % 2:  # held by a writer that has not released it: only once expired
        query["until"] = {"$lte": now}
    if backend.links.update_one(query, taken).matched_count == 0:
        raise _moved()
    return held


def _moved() -> MetadataChanged:
    return MetadataChanged("The project's dead letter links changed; read them again.")
