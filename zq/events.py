"""Event kinds and the body fingerprint shared by every driver and the analytics."""

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
