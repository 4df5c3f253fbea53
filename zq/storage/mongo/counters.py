"""Counter documents: race-free increasing numbers from one ``$inc``."""

from __future__ import annotations

from typing import Any

from pymongo import ReturnDocument
from pymongo.errors import DuplicateKeyError

# Each project's message markers come from one counter, so markers are
# unique within the project: a message moved to its dead letter queue keeps
# its marker without ever colliding there (the unique queue_order index).
EVENTS_COUNTER = "events"


def markers_key(project: str) -> dict[str, str]:
    """The counter document id that numbers a project's messages."""
    return {"markers": project}


def reserve(counters: Any, key: Any, count: int, *, session: Any = None) -> int:
    """Reserve ``count`` consecutive numbers; returns the last one.

    The reserved numbers are ``last - count + 1 .. last``. One atomic
    ``$inc`` per call: two callers never get the same number.
    """
    for _ in range(3):
        try:
            doc = counters.find_one_and_update(
                {"_id": key},
                {"$inc": {"value": count}},
                upsert=True,
                return_document=ReturnDocument.AFTER,
                session=session,
            )
            return int(doc["value"])
        except DuplicateKeyError:
            # Two first-ever upserts raced to insert the document; the loser
            # retries and now finds it.
            continue
    raise RuntimeError(f"could not reserve numbers from counter {key!r}")
