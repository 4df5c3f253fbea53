"""Event kinds and the body fingerprint shared by every driver and the analytics."""

from __future__ import annotations

import hashlib

POSTED = "posted"
CLAIMED = "claimed"
RENEWED = "renewed"
RELEASED = "released"
DELETED = "deleted"
DEAD_LETTERED = "dead_lettered"
EXPIRED = "expired"
PURGED = "purged"

KINDS = (POSTED, CLAIMED, RENEWED, RELEASED, DELETED, DEAD_LETTERED, EXPIRED, PURGED)

# How much of a dead lettered message's body its event keeps as a sample.
SAMPLE_CHARS = 1024


def fingerprint(body_json: str) -> str:
    """A stable short hash of a message body's canonical JSON text."""
    return hashlib.sha256(body_json.encode()).hexdigest()[:16]
