"""How messages are stored: their document, the filters that select them, their record.

A message is one document in the ``messages`` collection::

    {_id: ObjectId, project, queue, marker, body, fingerprint, ttl, created,
     expires, expires_at, client_id, claim_id, claim_expires, delay_until,
     claim_count, history, redrive_count, forgiven_count, last_failure,
     lapsed_with, claim_client}

``redrive_count``, ``forgiven_count`` (deliveries not charged: an open
breaker, a lapse blamed on its consumer), ``last_failure`` and
``lapsed_with`` (zq.storage.records.MessageRecord) are absent from
documents stored before they existed: 0, None, none. ``claim_client`` is
the Client-ID of the claim that last took the message (None without one),
kept after the claim expires so that a lapse can be blamed on it
(zq.storage.mongo.lapses); a free message whose ``claim_id`` is still set
lapsed.

``expires`` (POSIX float) is compared with the injected clock for every
visibility decision. ``expires_at`` (a date) only feeds the TTL index, the
server-side backstop that removes messages ``gc`` did not collect.
``claim_expires`` is 0 for a message no claim ever held; the message is held
while ``claim_expires > now``, so a claim that expired frees its messages
without any write.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from bson import ObjectId

from zq.storage.records import MessageRecord

# How long after its expiry the TTL index removes a message or claim. gc
# (every 30 s in a server) normally removes it first and records its
# ``expired`` event; the TTL index only cleans up when no gc runs.
TTL_INDEX_DELAY = 3600


def expiry_date(expires: float, now: float) -> datetime:
    """The server wall-clock date matching ``expires``, for the TTL index.

    The TTL monitor runs on the server's clock, not on the injected one, so
    the date is the server-side moment the remaining lifetime runs out.
    """
    return datetime.now(UTC) + timedelta(seconds=max(0.0, expires - now))


def object_id(text: str) -> ObjectId | None:
    """The ObjectId spelled by ``text``, or None for anything else."""
    return ObjectId(text) if ObjectId.is_valid(text) else None


def alive(now: float) -> dict[str, Any]:
    return {"expires": {"$gt": now}}


def free(now: float) -> dict[str, Any]:
    """Alive, not held by a live claim and not delayed."""
    return {
        "expires": {"$gt": now},
        "claim_expires": {"$lte": now},
        "delay_until": {"$lte": now},
    }


def held_by(claim_id: str, now: float) -> dict[str, Any]:
    """Alive and held by the live claim ``claim_id``."""
    return {"claim_id": claim_id, "claim_expires": {"$gt": now}, "expires": {"$gt": now}}


def to_record(doc: dict[str, Any], now: float) -> MessageRecord:
    """A stored message as the contract's record."""
    held = doc["claim_expires"] > now
    return MessageRecord(
        id=str(doc["_id"]),
        queue=doc["queue"],
        body=doc["body"],
        ttl=doc["ttl"],
        created=doc["created"],
        expires=doc["expires"],
        client_id=doc.get("client_id"),
        claim_id=doc["claim_id"] if held else None,
        claim_count=doc["claim_count"],
        history=list(doc.get("history", [])),
        marker=doc["marker"],
        redrive_count=doc.get("redrive_count", 0),
        forgiven_count=doc.get("forgiven_count", 0),
        last_failure=doc.get("last_failure"),
        lapsed_with=tuple(doc.get("lapsed_with") or ()),
    )
