"""The MongoDB Storage: controllers plus ping, gc and close."""

from __future__ import annotations

from typing import Any

from zq import events as kinds
from zq.clock import Clock
from zq.events import event_fields
from zq.storage.base import Collected, Storage
from zq.storage.mongo.backend import Backend
from zq.storage.mongo.claims import MongoClaimController
from zq.storage.mongo.connection import Connection
from zq.storage.mongo.events import MongoEventLog
from zq.storage.mongo.indexes import ensure_indexes
from zq.storage.mongo.messages import MongoMessageController
from zq.storage.mongo.queues import MongoQueueController
from zq.storage.mongo.unit import UnitRunner

GC_BATCH = 500


class MongoStorage(Storage):
    def __init__(self, connection: Connection, *, clock: Clock) -> None:
        self._connection = connection
        ensure_indexes(connection.database)
        units = UnitRunner(
            connection.client, connection.database, transactions=connection.transactions
        )
        self._b = Backend(connection.database, clock, units)
        self.queues = MongoQueueController(self._b)
        self.messages = MongoMessageController(self._b)
        self.claims = MongoClaimController(self._b)
        self.events = MongoEventLog(connection.database, transactions=connection.transactions)

    @property
    def transactions(self) -> bool:
        """Whether events are written in the same transaction as their change."""
        return self._connection.transactions

    def ping(self) -> bool:
        try:
            self._connection.database.command("ping")
        except Exception:
            return False
        return True

    def gc(self) -> Collected:
        messages = 0
        while True:
            batch = self._b.units.run(self._collect_messages)
            messages += batch
            if batch < GC_BATCH:
                break
        claims = 0
        while True:
            found, removed = self._b.units.run(self._collect_claims)
            claims += removed
            if found < GC_BATCH:
                return Collected(messages, claims)

    def _collect_messages(self, session: Any) -> tuple[int, list[dict[str, Any]]]:
        now = self._b.clock.now()
        expired = {"expires": {"$lte": now}}
        found = self._b.messages.find(expired, {"_id": 1}, limit=GC_BATCH, session=session)
        events = []
        for doc in list(found):
            # Conditional delete: of two collectors only one removes the
            # message, and only that one records its event.
            gone = self._b.messages.find_one_and_delete(
                {"_id": doc["_id"], **expired}, session=session
            )
            if gone is not None:
                events.append(event_fields(
                    kinds.EXPIRED, now, gone["project"], gone["queue"],
                    message_id=str(gone["_id"]), claim_count=gone["claim_count"],
                ))
        return len(events), events

    def _collect_claims(
        self, session: Any
    ) -> tuple[tuple[int, int], list[dict[str, Any]]]:
        """(claims looked at, claims removed by this collector) and their events."""
        now = self._b.clock.now()
        expired = {"expires": {"$lte": now}}
        found = list(self._b.claims.find(expired, {"_id": 1}, limit=GC_BATCH, session=session))
        events = []
        removed = 0
        for doc in found:
            claim = self._b.claims.find_one_and_delete({"_id": doc["_id"], **expired},
                                                       session=session)
            if claim is None:
                continue
            removed += 1
            claim_id = str(claim["_id"])
            # Messages it held until it expired and that nothing took since.
            still_held = self._b.messages.count_documents(
                {"claim_id": claim_id, "expires": {"$gt": now}}, session=session
            )
            if still_held:
                events.append(event_fields(
                    kinds.EXPIRED, now, claim["project"], claim["queue"],
                    claim_id=claim_id, client_id=claim.get("client_id"),
                    detail={"target": "claim", "messages": still_held},
                ))
        return (len(found), removed), events

    def close(self) -> None:
        if not self._connection.shared:
            self._connection.client.close()
