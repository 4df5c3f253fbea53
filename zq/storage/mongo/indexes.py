"""The indexes every query needs, created idempotently at start-up.

Each entry names the queries it serves; docs/mongo.md lists them and
tests/drivers/mongo/test_indexes.py checks that every filter the driver
sends is served by one of them.
"""

from __future__ import annotations

import contextlib
from typing import Any

from pymongo.errors import CollectionInvalid

from zq.poison.breaker import MAX_WINDOW
from zq.storage.mongo.documents import TTL_INDEX_DELAY

ASC = 1

# collection -> [(name, keys, options)]
INDEXES: dict[str, list[tuple[str, list[tuple[str, int]], dict[str, Any]]]] = {
    "queues": [
        # get/exists/set/delete by name; list and count by name order.
        ("project_name", [("project", ASC), ("name", ASC)], {"unique": True}),
    ],
    "messages": [
        # Queue order: list, claim candidates, pop, stats, purge. Unique, so
        # two messages never share a position in a queue.
        ("queue_order", [("project", ASC), ("queue", ASC), ("marker", ASC)], {"unique": True}),
        # Claim get/renew/release and gc's count of a dead claim's messages.
        ("claim", [("claim_id", ASC)], {}),
        # gc: messages whose expiry (injected clock) has passed.
        ("expires", [("expires", ASC)], {}),
        # Server-side backstop: removes what gc did not collect.
        ("ttl", [("expires_at", ASC)], {"expireAfterSeconds": TTL_INDEX_DELAY}),
    ],
    "claims": [
        ("expires", [("expires", ASC)], {}),
        ("ttl", [("expires_at", ASC)], {"expireAfterSeconds": TTL_INDEX_DELAY}),
    ],
    "subscriptions": [
        # create's uniqueness; get/find/list/for_queue by queue.
        ("queue_subscriber", [("project", ASC), ("queue", ASC), ("key", ASC)],
         {"unique": True}),
        # gc and live(): by expiry.
        ("expires", [("expires", ASC)], {}),
    ],
    # The consumer log: a queue's records by expiry (read, forget); the
    # writes naming one claim go by _id.
    "consumers": [
        ("queue_expires", [("project", ASC), ("queue", ASC), ("expires", ASC)], {}),
    ],
    # The breaker's window: a queue's outcomes by time (count, read, trim).
    # The breaker documents themselves are addressed by _id.
    "breaker_outcomes": [
        ("queue_time", [("project", ASC), ("queue", ASC), ("time", ASC)], {}),
        # Server-side backstop: a queue whose breaker was switched off
        # leaves its last outcomes to this (no window is longer than a day).
        ("ttl", [("recorded_at", ASC)], {"expireAfterSeconds": MAX_WINDOW}),
    ],
    # Housekeeping's due auto-redrives (BreakerLog.due_redrives); every
    # other breaker read and update goes by _id.
    "breakers": [
        ("redrive_due", [("redrive_due", ASC)], {}),
    ],
    # counters, events and links are only addressed by _id.
}


# Collections created up front: a transaction on an older server cannot
# create a collection implicitly.
COLLECTIONS = ("queues", "messages", "claims", "counters", "events", "links", "consumers",
               "subscriptions", "breakers", "breaker_outcomes")


def ensure_indexes(database: Any) -> None:
    """Create the collections and every index; repeating it changes nothing."""
    existing = set(database.list_collection_names())
    for collection in COLLECTIONS:
        if collection not in existing:
            # Another process may have created it a moment ago.
            with contextlib.suppress(CollectionInvalid):
                database.create_collection(collection)
    for collection, indexes in INDEXES.items():
        for name, keys, options in indexes:
            database[collection].create_index(keys, name=name, **options)
