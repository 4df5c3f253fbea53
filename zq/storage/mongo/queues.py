"""Queues: one document per queue in ``queues``, metadata kept as JSON text.

Metadata is stored as text so that any key a client chooses (dots, a
leading ``$``) round-trips exactly, as it does on the other drivers. Its
``version`` (MetadataRead.version) is drawn at random by every creation and
metadata write; a document written before versions existed has none and
reads as LEGACY_VERSION.
"""

from __future__ import annotations

import re
from typing import Any

import orjson
from pymongo.errors import DuplicateKeyError

from zq import events
from zq.errors import MetadataChanged, QueueNotFound
from zq.events import event_fields
from zq.storage.base import QueueController
from zq.storage.mongo import links
from zq.storage.mongo.context import MongoContext
from zq.storage.mongo.documents import alive
from zq.storage.records import (
    LEGACY_VERSION,
    MISSING_VERSION,
    MessageStamp,
    MetadataRead,
    QueueRecord,
    QueueStats,
    random_version,
)


def ensure_queue(backend: MongoContext, project: str, queue: str, *, session: Any = None) -> None:
    """Create the queue with empty metadata unless it exists (posting, dead lettering)."""
    try:
        backend.queues.update_one(
            {"project": project, "name": queue},
            {"$setOnInsert": {"metadata": "{}", "version": random_version()}},
            upsert=True,
            session=session,
        )
    except DuplicateKeyError:
        # Outside a transaction two first upserts can race on the unique
        # index; the loser finds the queue created, which is all it wanted.
        # (Inside one the server reports a retryable write conflict instead.)
        if session is not None:
            raise


class MongoQueues(QueueController):
    def __init__(self, ctx: MongoContext) -> None:
        self._ctx = ctx

    def create(
        self,
        project: str,
        queue: str,
        metadata: dict[str, Any],
        *,
        links_version: str | None = None,
    ) -> bool:
        def insert() -> bool:
            try:
                self._ctx.queues.insert_one({"project": project, "name": queue,
                                           "metadata": _dump(metadata),
                                           "version": random_version()})
            except DuplicateKeyError:
                return False
            return True

        if links_version is None:
            return insert()
        if self.exists(project, queue):
            return False
        return links.write_link(self._ctx, project, links_version, insert)

    def exists(self, project: str, queue: str) -> bool:
        return self._ctx.queues.find_one({"project": project, "name": queue}) is not None

    def get_metadata(self, project: str, queue: str) -> dict[str, Any]:
        doc = self._ctx.queues.find_one({"project": project, "name": queue})
        if doc is None:
            raise QueueNotFound.gone(queue)
        return orjson.loads(doc["metadata"])

    def read_metadata(self, project: str, queue: str) -> MetadataRead:
        doc = self._ctx.queues.find_one({"project": project, "name": queue})
        if doc is None:
            return MetadataRead({}, MISSING_VERSION)
        return MetadataRead(orjson.loads(doc["metadata"]), doc.get("version", LEGACY_VERSION))

    def set_metadata(
        self,
        project: str,
        queue: str,
        metadata: dict[str, Any],
        *,
        expected_version: str | None = None,
        links_version: str | None = None,
    ) -> None:
        where: dict[str, Any] = {"project": project, "name": queue}
        if expected_version is not None:
            where["version"] = (
                {"$exists": False} if expected_version == LEGACY_VERSION else expected_version
            )
        change = {"$set": {"metadata": _dump(metadata), "version": random_version()}}

        def write() -> None:
            if self._ctx.queues.update_one(where, change).matched_count:
                return
            if self.exists(project, queue):
                raise MetadataChanged("The queue's metadata changed; read it again.")
            raise QueueNotFound.gone(queue)

        if links_version is None:
            write()
        else:
            links.write_link(self._ctx, project, links_version, write)

    def links_version(self, project: str) -> str:
        return links.links_version(self._ctx, project)

    def delete(self, project: str, queue: str) -> None:
        def change(session: Any) -> tuple[None, list[dict[str, Any]]]:
            removed = self._remove_contents(project, queue, session)
            self._ctx.queues.delete_one({"project": project, "name": queue}, session=session)
            return None, self._purged(project, queue, removed, queue_deleted=True)

        self._ctx.units.run(change)

    def purge(self, project: str, queue: str) -> None:
        def change(session: Any) -> tuple[None, list[dict[str, Any]]]:
            removed = self._remove_contents(project, queue, session)
            return None, self._purged(project, queue, removed, queue_deleted=False)

        self._ctx.units.run(change)

    def list(
        self,
        project: str,
        *,
        marker: str | None = None,
        limit: int = 10,
        name: str | None = None,
    ) -> list[QueueRecord]:
        query = _name_query(project, name)
        if marker is not None:
            query["name"] = {**query.get("name", {}), "$gt": marker}
        docs = self._ctx.queues.find(query, sort=[("name", 1)], limit=limit)
        return [QueueRecord(doc["name"], orjson.loads(doc["metadata"])) for doc in docs]

    def count(self, project: str, *, name: str | None = None) -> int:
        return self._ctx.queues.count_documents(_name_query(project, name))

    def stats(self, project: str, queue: str) -> QueueStats:
        now = self._ctx.clock.now()
        in_queue = {"project": project, "queue": queue, **alive(now)}
        messages = self._ctx.messages
        claimed = messages.count_documents({**in_queue, "claim_expires": {"$gt": now}})
        free = messages.count_documents({**in_queue, "claim_expires": {"$lte": now}})
        if claimed + free == 0:
            return QueueStats(free=0, claimed=0)
        unheld = {**in_queue, "claim_expires": {"$lte": now}}
        delayed = messages.count_documents({**unheld, "delay_until": {"$gt": now}}) if free else 0
        return QueueStats(
            free=free,
            claimed=claimed,
            delayed=delayed,
            oldest=self._stamp(in_queue, 1),
            newest=self._stamp(in_queue, -1),
        )

    def volume(self) -> QueueStats:
        now = self._ctx.clock.now()
        messages = self._ctx.messages
        claimed = messages.count_documents({**alive(now), "claim_expires": {"$gt": now}})
        free = messages.count_documents({**alive(now), "claim_expires": {"$lte": now}})
        return QueueStats(free=free, claimed=claimed)

    def _stamp(self, in_queue: dict[str, Any], direction: int) -> MessageStamp | None:
        docs = list(self._ctx.messages.find(
            in_queue, {"created": 1}, sort=[("marker", direction)], limit=1
        ))
        return MessageStamp(str(docs[0]["_id"]), docs[0]["created"]) if docs else None

    def _remove_contents(self, project: str, queue: str, session: Any) -> int:
        # Only what a client can still see: expired messages and claims are
        # left to gc, which records their ``expired`` events.
        in_queue = {"project": project, "queue": queue, **alive(self._ctx.clock.now())}
        removed = self._ctx.messages.delete_many(in_queue, session=session).deleted_count
        self._ctx.claims.delete_many(in_queue, session=session)
        # The breaker starts over with the queue's contents (zq.storage.breakers).
        self._ctx.breakers.delete_one({"_id": {"project": project, "queue": queue}},
                                      session=session)
        self._ctx.breaker_outcomes.delete_many({"project": project, "queue": queue},
                                               session=session)
        return removed

    def _purged(
        self, project: str, queue: str, removed: int, *, queue_deleted: bool
    ) -> list[dict[str, Any]]:
        if not removed:
            return []
        return [event_fields(events.PURGED, self._ctx.clock.now(), project, queue,
                          detail=events.purged_detail(removed, queue_deleted=queue_deleted))]


def _name_query(project: str, name: str | None) -> dict[str, Any]:
    query: dict[str, Any] = {"project": project}
    if name:
        query["name"] = {"$regex": re.escape(name)}
    return query


def _dump(metadata: dict[str, Any]) -> str:
    return orjson.dumps(metadata, option=orjson.OPT_SORT_KEYS).decode()
