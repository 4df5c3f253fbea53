"""Rows -> the contract's records, and the JSON text columns."""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa

from zq.storage.records import MessageRecord


def dump_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def load_json(text: str | None) -> Any:
    return json.loads(text) if text else None


def live_claim_id(row: sa.Row[Any], now: float) -> str | None:
    """The row's claim id while that claim lives; an expired claim holds nothing."""
    return row.claim_id if (row.claim_expires or 0) > now else None


def message_record(row: sa.Row[Any], now: float) -> MessageRecord:
    """A messages row as the contract shows it (claim id only while live)."""
    return MessageRecord(
        id=row.id,
        queue=row.queue,
        body=row.body,
        ttl=row.ttl,
        created=row.created,
        expires=row.expires,
        client_id=row.client_id,
        claim_id=live_claim_id(row, now),
        claim_count=row.claim_count,
        history=load_json(row.history) or [],
        marker=row.marker,
        redrive_count=row.redrive_count,
        forgiven_count=row.forgiven_count,
        last_failure=row.last_failure,
        lapsed_with=tuple(load_json(row.lapsed_with) or ()),
    )
