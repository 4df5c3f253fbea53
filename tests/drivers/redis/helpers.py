"""Shorthands for the Redis driver tests."""

from __future__ import annotations

import json

from zq.events import fingerprint
from zq.storage.base import Storage
from zq.storage.records import NewMessage


def message(n: int, *, ttl: int = 300) -> NewMessage:
    body = json.dumps({"n": n})
    return NewMessage(body=body, ttl=ttl, delay=0, fingerprint=fingerprint(body))


def post(storage: Storage, project: str, queue: str, count: int = 1) -> list[str]:
    return storage.messages.post(project, queue, [message(n) for n in range(count)],
                                 client_id="poster")


def visible(storage: Storage, project: str, queue: str) -> list[str]:
    """Ids of every alive message of the queue, in order."""
    records = storage.messages.list(project, queue, limit=1000, echo=True,
                                    include_claimed=True, include_delayed=True)
    return [r.id for r in records]
