"""Notification cursors on MongoDB: one document per subscription in ``notification_cursors``.

The lease is one ``find_one_and_update`` whose filter is the lease rule
(the caller holds it, or it ran out); a missing document is inserted, and
a duplicate key there means another process inserted it first.
"""

from __future__ import annotations

import contextlib
from typing import Any

from pymongo import ReturnDocument
from pymongo.errors import DuplicateKeyError

from zq.clock import Clock
from zq.storage.cursors import CursorLease, NotificationCursors


class MongoNotificationCursors(NotificationCursors):
    def __init__(self, database: Any, clock: Clock) -> None:
        self._docs = database["notification_cursors"]
        self._clock = clock

    def acquire(self, subscription_id: str, owner: str, lease_seconds: float) -> CursorLease | None:
        now = self._clock.now()
        until = now + lease_seconds
        doc = self._docs.find_one_and_update(
            {"_id": subscription_id, "$or": [{"owner": owner}, {"until": {"$lt": now}}]},
            {"$set": {"owner": owner, "until": until}},
            return_document=ReturnDocument.AFTER,
        )
        if doc is None:
            try:
                self._docs.insert_one({"_id": subscription_id, "cursor": None, "owner": owner,
                                       "until": until})
            except DuplicateKeyError:
                return None  # it exists: another owner holds the lease
            return CursorLease(subscription_id, None, owner, until)
        return CursorLease(subscription_id, doc.get("cursor"), owner, until)

    def start(self, subscription_id: str, cursor: str) -> None:
        with contextlib.suppress(DuplicateKeyError):  # it has a row: left as it is
            self._docs.insert_one({"_id": subscription_id, "cursor": cursor, "owner": "",
                                   "until": 0.0})

    def advance(self, subscription_id: str, owner: str, cursor: str, lease_seconds: float) -> bool:
        result = self._docs.update_one(
            {"_id": subscription_id, "owner": owner},
            {"$set": {"cursor": cursor, "until": self._clock.now() + lease_seconds}},
        )
        return result.matched_count == 1

    def release(self, subscription_id: str, owner: str) -> None:
        self._docs.update_one({"_id": subscription_id, "owner": owner}, {"$set": {"until": 0.0}})

    def positions(self) -> dict[str, str | None]:
        return {doc["_id"]: doc.get("cursor") for doc in self._docs.find({}, {"cursor": 1})}

    def forget(self, subscription_id: str) -> None:
        self._docs.delete_one({"_id": subscription_id})
