"""MongoDB's wake-ups of waiting claims: a change stream on the event log.

Where the server runs transactions (a replica set or a sharded cluster,
zq.storage.mongo.connection.supports_transactions) every change writes its
events in its own transaction, and a change stream on the ``events``
collection reports the inserted events once the transaction committed. Each
worker watches on one stream of its own for all its waiters, kept to the
events that wake a queue (zq.storage.wake_events: the kinds, or a detail
naming a destination) and to the three fields that name it. A stream that
fails is opened again, and every waiter woken once (zq.storage.wake_listener).

A standalone server has no change streams, and mongomock none either: there
``MongoWakeups.listen`` is None and waiters rely on the bounded re-check
(docs/consumers.md).

Not run against a server where zq is developed (none can be installed
there, docs/mongo.md): the tests drive this listener with a stand-in
stream that behaves as pymongo's documents it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from zq import events
from zq.storage.wake_events import WAKING_KINDS, woken_queue
from zq.storage.wake_listener import RECEIVE_SECONDS, ThreadedListener
from zq.storage.wakeups import QueueKey, WakeCallback

# The server's side of the filter: inserts of events that wake a queue.
PIPELINE: list[dict[str, Any]] = [
    {"$match": {"operationType": "insert", "$or": [
        {"fullDocument.kind": {"$in": sorted(WAKING_KINDS)}},
        {f"fullDocument.detail.{events.TO}": {"$type": "string"}},
    ]}},
    {"$project": {"fullDocument.project": 1, "fullDocument.queue": 1,
                  "fullDocument.kind": 1, f"fullDocument.detail.{events.TO}": 1}},
]


class MongoWakeListener(ThreadedListener):
    """A change stream on ``events`` (``database["events"].watch``)."""

    name = "MongoDB wake-ups"

    def __init__(self, database: Any, wake: WakeCallback,
                 wake_all: Callable[[], None] | None) -> None:
        super().__init__(wake, wake_all)
        self._events = database["events"]

    def connect(self) -> Any:
        # watch() opens the stream on the server before it returns: every
        # event committed from then on is reported.
        return self._events.watch(PIPELINE, max_await_time_ms=int(RECEIVE_SECONDS * 1000))

    def receive(self, session: Any, timeout: float) -> list[QueueKey]:
        change = session.try_next()  # waits up to max_await_time_ms
        if change is None:
            return []
        doc = change.get("fullDocument") or {}
        queue = woken_queue(doc.get("kind", ""), doc.get("queue", ""), doc.get("detail"))
        project = doc.get("project")
        if queue is None or not isinstance(project, str):
            return []
        return [(project, queue)]

    def disconnect(self, session: Any) -> None:
        # Already broken, say: then there is nothing to release.
        with contextlib.suppress(Exception):
            session.close()
