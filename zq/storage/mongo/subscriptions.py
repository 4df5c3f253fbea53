"""Subscriptions on MongoDB: one document each in ``subscriptions``.

Unique by (project, queue, subscriber key) through an index; options are
kept as JSON text so that any key (dots, a leading ``$``) round-trips, as
queue metadata does.
"""

from __future__ import annotations

from typing import Any

import orjson
from pymongo.errors import DuplicateKeyError

from zq.errors import SubscriptionConflict, SubscriptionNotFound
from zq.storage.mongo.context import MongoContext
from zq.storage.records import SubscriptionRecord
from zq.storage.subscriptions import (
    SubscriptionController,
    new_subscription_id,
    subscriber_key,
    subscription_age,
)


def _record(doc: dict[str, Any], now: float) -> SubscriptionRecord:
    return SubscriptionRecord(
        id=doc["_id"], project=doc["project"], queue=doc["queue"],
        subscriber=doc["subscriber"], ttl=doc["ttl"], expires=doc["expires"],
        options=orjson.loads(doc["options"]), confirmed=bool(doc["confirmed"]),
        age=subscription_age(doc["created"], now))


class MongoSubscriptions(SubscriptionController):
    def __init__(self, ctx: MongoContext) -> None:
        self._ctx = ctx

    @property
    def _c(self) -> Any:
        return self._ctx.database["subscriptions"]

    def _live(self, project: str, queue: str, now: float, **more: Any) -> dict[str, Any]:
        return {"project": project, "queue": queue, "expires": {"$gt": now}, **more}

    def create(
        self, project: str, queue: str, subscriber: str, ttl: int, options: dict[str, Any],
        *, subscription_id: str | None = None,
    ) -> str | None:
        now = self._ctx.clock.now()
        key = subscriber_key(subscriber)
        # An expired subscription of the subscriber is gone for every reader.
        self._c.delete_many({"project": project, "queue": queue, "key": key,
                             "expires": {"$lte": now}})
        sid = subscription_id or new_subscription_id()
        try:
            self._c.insert_one({
                "_id": sid, "project": project, "queue": queue, "subscriber": subscriber,
                "key": key, "ttl": ttl, "created": now, "expires": now + ttl,
                "options": orjson.dumps(options).decode(), "confirmed": False})
        except DuplicateKeyError:
            return None
        return sid

    def get(self, project: str, queue: str, subscription_id: str) -> SubscriptionRecord:
        now = self._ctx.clock.now()
        doc = self._c.find_one(self._live(project, queue, now, _id=subscription_id))
        if doc is None:
            raise SubscriptionNotFound.gone(subscription_id)
        return _record(doc, now)

    def find(self, project: str, queue: str, subscriber: str) -> SubscriptionRecord | None:
        now = self._ctx.clock.now()
        doc = self._c.find_one(self._live(project, queue, now, key=subscriber_key(subscriber)))
        return None if doc is None else _record(doc, now)

    def exists(self, project: str, queue: str, subscription_id: str) -> bool:
        now = self._ctx.clock.now()
        return self._c.find_one(self._live(project, queue, now, _id=subscription_id),
                                {"_id": 1}) is not None

    def list(
        self, project: str, queue: str, *, marker: str | None = None, limit: int = 10
    ) -> list[SubscriptionRecord]:
        now = self._ctx.clock.now()
        query = self._live(project, queue, now)
        if marker is not None:
            query["_id"] = {"$gt": marker}
        return [_record(doc, now)
                for doc in self._c.find(query, sort=[("_id", 1)], limit=limit)]

    def update(
        self,
        project: str,
        queue: str,
        subscription_id: str,
        *,
        subscriber: str | None = None,
        ttl: int | None = None,
        options: dict[str, Any] | None = None,
    ) -> None:
        now = self._ctx.clock.now()
        this = self._live(project, queue, now, _id=subscription_id)
        fields: dict[str, Any] = {}
        if subscriber is not None:
            key = subscriber_key(subscriber)
            other = self._c.find_one({"project": project, "queue": queue, "key": key,
                                      "_id": {"$ne": subscription_id}})
            if other is not None and other["expires"] > now:
                if self._c.find_one(this, {"_id": 1}) is None:
                    raise SubscriptionNotFound.gone(subscription_id)
                raise SubscriptionConflict.duplicate()
            if other is not None:
                self._c.delete_one({"_id": other["_id"], "expires": {"$lte": now}})
            fields.update(subscriber=subscriber, key=key)
        if ttl is not None:
            fields.update(ttl=ttl, expires=now + ttl)
        if options is not None:
            fields["options"] = orjson.dumps(options).decode()
        if not fields:
            if self._c.find_one(this, {"_id": 1}) is None:
                raise SubscriptionNotFound.gone(subscription_id)
            return
        try:
            found = self._c.update_one(this, {"$set": fields})
        except DuplicateKeyError as error:
            # A concurrent create took the subscriber after the check.
            raise SubscriptionConflict.duplicate() from error
        if found.matched_count == 0:
            raise SubscriptionNotFound.gone(subscription_id)

    def delete(self, project: str, queue: str, subscription_id: str) -> None:
        self._c.delete_one({"_id": subscription_id, "project": project, "queue": queue})

    def confirm(
        self, project: str, queue: str, subscription_id: str, *, confirmed: bool
    ) -> None:
        now = self._ctx.clock.now()
        found = self._c.update_one(self._live(project, queue, now, _id=subscription_id),
                                   {"$set": {"confirmed": bool(confirmed)}})
        if found.matched_count == 0:
            raise SubscriptionNotFound.gone(subscription_id)

    def for_queue(self, project: str, queue: str) -> list[SubscriptionRecord]:
        now = self._ctx.clock.now()
        return [_record(doc, now)
                for doc in self._c.find(self._live(project, queue, now), sort=[("_id", 1)])]

    def live(self) -> list[SubscriptionRecord]:
        now = self._ctx.clock.now()
        found = [_record(doc, now) for doc in self._c.find({"expires": {"$gt": now}})]
        return sorted(found, key=lambda s: (s.project, s.queue, s.id))

    def collect(self) -> int:
        """Remove expired subscriptions; how many went."""
        return self._c.delete_many({"expires": {"$lte": self._ctx.clock.now()}}).deleted_count
