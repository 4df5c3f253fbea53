"""The ``events`` collection: the backend's event log.

Each event's ``_id`` is an integer from the ``events`` counter, so the
cursor increases with every append. With transactions the counter is
incremented inside the same transaction as the change, which also makes
commit order follow cursor order; without them, see docs/mongo.md for the
window that leaves.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from zq.errors import InvalidRequest
from zq.storage.base import EventLog
from zq.storage.mongo.counters import EVENTS_COUNTER, reserve
from zq.storage.records import Event


def append(database: Any, docs: Sequence[dict[str, Any]], *, session: Any = None) -> None:
    """Number ``docs`` in order and insert them."""
    if not docs:
        return
    last = reserve(database["counters"], EVENTS_COUNTER, len(docs), session=session)
    first = last - len(docs) + 1
    numbered = [{**doc, "_id": first + i} for i, doc in enumerate(docs)]
    database["events"].insert_many(numbered, ordered=True, session=session)


class MongoEventLog(EventLog):
    """Cursor order is commit order only with transactions (``final_order``).

    Without them two writers may insert out of counter order (see the module
    docstring), so a reader leaves recent events for a settle window.
    """

    def __init__(self, database: Any, *, transactions: bool) -> None:
        self._events = database["events"]
        self.final_order = transactions

    def read(self, *, after: str | None = None, limit: int = 1000) -> list[Event]:
        query = {} if after is None else {"_id": {"$gt": _cursor(after)}}
        docs = self._events.find(query, sort=[("_id", 1)], limit=limit)
        return [
            Event(
                cursor=str(doc["_id"]),
                time=doc["time"],
                project=doc["project"],
                queue=doc["queue"],
                kind=doc["kind"],
                message_id=doc.get("message_id"),
                claim_id=doc.get("claim_id"),
                client_id=doc.get("client_id"),
                claim_count=doc.get("claim_count"),
                detail=dict(doc.get("detail") or {}),
            )
            for doc in docs
        ]

    def count(self, *, after: str | None = None) -> int:
        query = {} if after is None else {"_id": {"$gt": _cursor(after)}}
        return self._events.count_documents(query)

    def end(self) -> str | None:
        last = self._events.find_one({}, {"_id": 1}, sort=[("_id", -1)])
        return None if last is None else str(last["_id"])

    def trim(self, *, up_to: str) -> int:
        return self._events.delete_many({"_id": {"$lte": _cursor(up_to)}}).deleted_count


def _cursor(text: str) -> int:
    try:
        return int(text)
    except (TypeError, ValueError) as exc:
        raise InvalidRequest(f"{text!r} is not a MongoDB event cursor.") from exc
