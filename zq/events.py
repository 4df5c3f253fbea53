"""Event kinds, detail keys and builders, the body fingerprint.

Shared by every driver and by the analytics that read events back
(zq.analytics.schema lifts the detail keys named here into columns). The
Python drivers build each detail with the functions below; the Redis Lua
scripts (post.lua, pop.lua, purge.lua, queue_delete.lua, gc.lua, _lib.lua's
dead letter move) write the same keys, pinned by tests/contract/test_events.py.
"""

from __future__ import annotations

import hashlib
from typing import Any

POSTED = "posted"
CLAIMED = "claimed"
RENEWED = "renewed"
RELEASED = "released"
DELETED = "deleted"
DEAD_LETTERED = "dead_lettered"
EXPIRED = "expired"
PURGED = "purged"

# Emitted by the poison workflow's reject (not yet by any driver); the
# analytics already group its descriptions (zq stats poison_signatures).
REJECTED = "rejected"

KINDS = (POSTED, CLAIMED, RENEWED, RELEASED, DELETED, DEAD_LETTERED, EXPIRED, PURGED)

# How much of a dead lettered message's body its event keeps as a sample.
SAMPLE_CHARS = 1024

# Detail keys.
TTL = "ttl"  # posted: the message ttl
DELAY = "delay"  # posted: the message delay
SIZE = "size"  # posted: body bytes
FINGERPRINT = "fingerprint"  # posted, dead_lettered
TO = "to"  # dead_lettered: the dead letter queue
REASON = "reason"  # dead_lettered: why it moved
SAMPLE = "sample"  # dead_lettered: the body's first SAMPLE_CHARS characters
POP = "pop"  # deleted: taken by a pop
TARGET = "target"  # expired: "claim" for a claim's expiry
MESSAGES = "messages"  # expired claim / purged: how many messages
QUEUE_DELETED = "queue_deleted"  # purged: by deleting the queue
DESCRIPTION = "description"  # dead_lettered / rejected: why, in words (poison workflow)

CLAIM_TARGET = "claim"


def fingerprint(body_json: str) -> str:
    """A stable short hash of a message body's canonical JSON text."""
    return hashlib.sha256(body_json.encode()).hexdigest()[:16]


def event_fields(
    kind: str,
    time: float,
    project: str,
    queue: str,
    *,
    message_id: str | None = None,
    claim_id: str | None = None,
    client_id: str | None = None,
    claim_count: int | None = None,
    detail: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One event's fields as the SQL and MongoDB drivers store them (detail a dict)."""
    return {
        "time": time,
        "project": project,
        "queue": queue,
        "kind": kind,
        "message_id": message_id,
        "claim_id": claim_id,
        "client_id": client_id,
        "claim_count": claim_count,
        "detail": detail or {},
    }


def posted_detail(ttl: int, delay: int, fingerprint: str, body: str) -> dict[str, Any]:
    """The detail of a ``posted`` event."""
    return {TTL: ttl, DELAY: delay, FINGERPRINT: fingerprint, SIZE: len(body.encode())}


def dead_lettered_detail(to: str, reason: str, fingerprint: str, body: str) -> dict[str, Any]:
    """The detail of a ``dead_lettered`` event: where, why, and a body sample."""
    return {TO: to, REASON: reason, FINGERPRINT: fingerprint, SAMPLE: body[:SAMPLE_CHARS]}


def popped_detail() -> dict[str, Any]:
    """The detail of a ``deleted`` event recorded by a pop."""
    return {POP: True}


def claim_expired_detail(messages: int) -> dict[str, Any]:
    """The detail of an ``expired`` event of a claim that still held ``messages``."""
    return {TARGET: CLAIM_TARGET, MESSAGES: messages}


def purged_detail(messages: int, *, queue_deleted: bool = False) -> dict[str, Any]:
    """The detail of a ``purged`` event (a purge, or deleting the queue)."""
    detail: dict[str, Any] = {MESSAGES: messages}
    if queue_deleted:
        detail[QUEUE_DELETED] = True
    return detail
