"""Event kinds, detail keys and builders, the body fingerprint.

Shared by every driver and by the analytics that read events back
(zq.analytics.schema lifts the detail keys named here into columns). The
Python drivers build each detail with the functions below. The Redis Lua
scripts never spell a kind or a detail key: they read them from the tables
``KIND`` and ``DETAIL`` that zq.storage.redis.scripts generates from
KIND_NAMES and DETAIL_NAMES below, and a move's detail is built here
(zq.poison.moves.Move.detail); tests/drivers/redis/test_scripts.py pins both.
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
REDRIVEN = "redriven"  # a dead letter moved back (zq.poison.moves.redriven)

# A retry reject by the claim's holder (MessageController.reject); a
# terminal reject is a move (dead_lettered, reason "rejected").
REJECTED = "rejected"

# A queue's breaker changed state (zq.poison.breaker): no message id, detail
# breaker_detail(...).
BREAKER = "breaker"

KINDS = (POSTED, CLAIMED, RENEWED, RELEASED, DELETED, DEAD_LETTERED, EXPIRED, PURGED,
         REDRIVEN, REJECTED, BREAKER)

# How much of a dead lettered message's body its event keeps as a sample.
SAMPLE_CHARS = 1024

# Detail keys.
TTL = "ttl"  # posted: the message ttl
DELAY = "delay"  # posted: the message delay
SIZE = "size"  # posted: body bytes
FINGERPRINT = "fingerprint"  # posted, dead_lettered
TO = "to"  # dead_lettered, redriven: the destination queue
REASON = "reason"  # dead_lettered, redriven: why it moved (zq.poison.moves.REASON_*)
SAMPLE = "sample"  # dead_lettered, redriven: the body's first SAMPLE_CHARS characters
POP = "pop"  # deleted: taken by a pop
TARGET = "target"  # expired: "claim" for a claim's expiry
MESSAGES = "messages"  # expired claim / purged: how many messages
QUEUE_DELETED = "queue_deleted"  # purged: by deleting the queue
DESCRIPTION = "description"  # dead_lettered / rejected: why, in words (poison workflow)
RETRY_AFTER = "retry_after"  # rejected: seconds asked for, null: the queue's backoff
# rejected: a terminal reject held as a retry while the queue's breaker was open
HELD = "held"
STATE = "state"  # breaker: the state entered
PREVIOUS = "previous"  # breaker: the state left
FAILURES = "failures"  # breaker: failures in the window at the change
SUCCESSES = "successes"  # breaker: successes in the window at the change
FORCED = "forced"  # breaker: forced by an operator (BreakerLog.force)
# posted, only when the queue had a live subscription: the body as stored
# (JSON text, or the ciphertext of a queue that encrypts), for the notifier
# (zq.service.subscribed); the analytics export leaves it out.
BODY = "body"

CLAIM_TARGET = "claim"

# The names above by constant, as the Redis scripts read them (zq.storage.
# redis.scripts writes them into each script: ``KIND.POSTED``,
# ``DETAIL.TTL``), so that no script spells a kind or a detail key.
KIND_NAMES = {name: globals()[name] for name in (
    "POSTED", "CLAIMED", "RENEWED", "RELEASED", "DELETED", "DEAD_LETTERED", "EXPIRED",
    "PURGED", "REDRIVEN", "REJECTED", "BREAKER")}
DETAIL_NAMES = {name: globals()[name] for name in (
    "TTL", "DELAY", "SIZE", "FINGERPRINT", "TO", "REASON", "SAMPLE", "POP", "TARGET",
    "MESSAGES", "QUEUE_DELETED", "DESCRIPTION", "RETRY_AFTER", "CLAIM_TARGET", "SAMPLE_CHARS",
    "BODY", "HELD", "STATE", "PREVIOUS", "FAILURES", "SUCCESSES", "FORCED")}


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


def posted_detail(ttl: int, delay: int, fingerprint: str, body: str, *,
                  with_body: bool = False) -> dict[str, Any]:
    """The detail of a ``posted`` event; ``with_body``: the stored body too (BODY)."""
    detail: dict[str, Any] = {TTL: ttl, DELAY: delay, FINGERPRINT: fingerprint,
                              SIZE: len(body.encode())}
    if with_body:
        detail[BODY] = body
    return detail


def moved_detail(to: str, reason: str, description: str | None = None) -> dict[str, Any]:
    """The part of a move's event detail (dead_lettered, redriven) all its messages share."""
    detail: dict[str, Any] = {TO: to, REASON: reason}
    if description is not None:
        detail[DESCRIPTION] = description
    return detail


def with_message_sample(detail: dict[str, Any], fingerprint: str, body: str) -> dict[str, Any]:
    """A move's event ``detail`` plus one message's fingerprint and body sample."""
    return {**detail, FINGERPRINT: fingerprint, SAMPLE: body[:SAMPLE_CHARS]}


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


def rejected_detail(description: str | None, retry_after: int | None, *,
                    held: bool = False) -> dict[str, Any]:
    """The detail of a ``rejected`` event (a retry reject): why, and the delay asked for.

    ``held``: a terminal reject the queue's open breaker held as a retry.
    """
    detail: dict[str, Any] = {DESCRIPTION: description, RETRY_AFTER: retry_after}
    if held:
        detail[HELD] = True
    return detail


def breaker_detail(state: str, previous: str, description: str | None, failures: int,
                   successes: int, *, forced: bool = False) -> dict[str, Any]:
    """The detail of a ``breaker`` event: the change, and the window's counts at it."""
    return {STATE: state, PREVIOUS: previous, DESCRIPTION: description,
            FAILURES: failures, SUCCESSES: successes, FORCED: forced}
