"""When a queue may next be claimed from, for waiting claims (zq.storage.wakeups)."""

from __future__ import annotations

from collections.abc import Callable, Collection

from zq.poison.breaker import CLOSED
from zq.storage.mongo.breakers import key
from zq.storage.mongo.context import MongoContext
from zq.storage.mongo.documents import alive
from zq.storage.mongo.wake import MongoWakeListener
from zq.storage.wakeups import QueueKey, WakeCallback, WakeListener, Wakeups

# Queues per aggregation: the $or of (project, queue) pairs stays small.
KEYS_PER_QUERY = 200


class MongoWakeups(Wakeups):
    def __init__(self, ctx: MongoContext) -> None:
        self._ctx = ctx

    def earliest_claimable(self, keys: Collection[QueueKey]) -> dict[QueueKey, float]:
        keys = list(dict.fromkeys(keys))
        now = self._ctx.clock.now()
        found: dict[QueueKey, float] = {}
        for start in range(0, len(keys), KEYS_PER_QUERY):
            batch = keys[start:start + KEYS_PER_QUERY]
            # claim_expires is 0 for a message no claim ever held (documents.py).
            rows = self._ctx.messages.aggregate([
                {"$match": {"$or": [{"project": p, "queue": q} for p, q in batch], **alive(now)}},
                {"$project": {"project": 1, "queue": 1, "expires": 1,
                              "moment": {"$max": ["$delay_until", "$claim_expires"]}}},
                {"$match": {"$expr": {"$lt": ["$moment", "$expires"]}}},
                {"$group": {"_id": {"project": "$project", "queue": "$queue"},
                            "moment": {"$min": "$moment"}}},
            ])
            found.update({(row["_id"]["project"], row["_id"]["queue"]): float(row["moment"])
                          for row in rows})
            # An open (or half-open) breaker delivers nothing before its next
            # probe: a waiter woken sooner would get nothing.
            for doc in self._ctx.breakers.find(
                    {"_id": {"$in": [key(p, q) for p, q in batch]}, "state": {"$ne": CLOSED}},
                    {"next_probe": 1}):
                queue_key = (doc["_id"]["project"], doc["_id"]["queue"])
                if queue_key in found:
                    found[queue_key] = max(found[queue_key], float(doc.get("next_probe", 0.0)))
        return found

    def listen(
        self, wake: WakeCallback, wake_all: Callable[[], None] | None = None
    ) -> WakeListener | None:
        """A change stream where the server has them (zq.storage.mongo.wake); else None."""
        if not self._ctx.units.transactions:
            return None
        return MongoWakeListener(self._ctx.database, wake, wake_all).start()
