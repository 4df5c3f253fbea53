"""The Parquet layout of exported events: one row per event, partitioned by day.

The dataset directory holds ``date=YYYY-MM-DD/`` partitions (UTC day of the
event time). The ``detail`` of an event is kept whole as JSON text, and the
fields the statistics need are also lifted into their own columns so that
Spark and SQL analysts never parse JSON.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import orjson
import pyarrow as pa

from zq import events
from zq.analytics.shapes import body_shape
from zq.encryption import is_sealed
from zq.storage.base import Event

PARTITION_KEY = "date"

SCHEMA = pa.schema(
    [
        ("backend", pa.string()),  # which event log the row came from
        ("seq", pa.int64()),  # position in that log, counted by the exporter
        ("cursor", pa.string()),  # the backend's own cursor of the event
        ("time", pa.float64()),  # POSIX seconds
        ("project", pa.string()),
        ("queue", pa.string()),
        ("kind", pa.string()),
        ("message_id", pa.string()),
        ("claim_id", pa.string()),
        ("client_id", pa.string()),
        ("claim_count", pa.int64()),
        # Lifted from detail.
        ("ttl", pa.int64()),
        ("delay", pa.int64()),
        ("size", pa.int64()),
        ("fingerprint", pa.string()),
        ("to_queue", pa.string()),  # dead_lettered: the dead letter queue
        ("reason", pa.string()),
        ("sample", pa.string()),
        ("pop", pa.bool_()),
        ("target", pa.string()),  # expired: "claim" for a claim expiry
        ("messages", pa.int64()),  # expired claim / purged: how many messages
        ("description", pa.string()),  # dead_lettered / rejected: why, in words
        ("retry_after", pa.int64()),  # rejected: seconds asked for; null: the queue's backoff
        # The shape of the body sample (zq.analytics.shapes), computed at
        # export; null when there is no sample or it is not whole JSON.
        ("shape", pa.string()),
        ("detail", pa.string()),  # the whole detail as JSON text
    ]
)

# detail key -> column, for the lifted fields.
_LIFTED = {
    events.TTL: "ttl",
    events.DELAY: "delay",
    events.SIZE: "size",
    events.FINGERPRINT: "fingerprint",
    events.TO: "to_queue",
    events.REASON: "reason",
    events.SAMPLE: "sample",
    events.POP: "pop",
    events.TARGET: "target",
    events.MESSAGES: "messages",
    events.DESCRIPTION: "description",
    events.RETRY_AFTER: "retry_after",
}
_INT_COLUMNS = {"ttl", "delay", "size", "messages", "retry_after"}


def event_date(time: float) -> str:
    """The partition (UTC day, ``YYYY-MM-DD``) an event time belongs to."""
    return datetime.fromtimestamp(time, UTC).strftime("%Y-%m-%d")


def event_row(backend: str, seq: int, event: Event) -> dict[str, Any]:
    """One event as a row of SCHEMA (without the partition column).

    A posted event's body (zq.events.BODY, kept for notifications) is left
    out. A dead lettered message's sample is left out when its body is stored
    encrypted: it is the start of the ciphertext, which no analysis can use.
    Its ``shape`` is computed here from the plaintext sample, so Spark needs
    no Python code; an encrypted body has neither sample nor shape.
    """
    detail = event.detail
    if detail and is_sealed(str(detail.get("sample") or "")):
        detail = {key: value for key, value in detail.items() if key != "sample"}
    if detail and events.BODY in detail:
        # The body a subscribed queue's post carries is for its notifier; the
        # export stays the size it was (size and fingerprint describe the body).
        detail = {key: value for key, value in detail.items() if key != events.BODY}
    row: dict[str, Any] = {
        "backend": backend,
        "seq": seq,
        "cursor": event.cursor,
        "time": float(event.time),
        "project": event.project,
        "queue": event.queue,
        "kind": event.kind,
        "message_id": event.message_id,
        "claim_id": event.claim_id,
        "client_id": event.client_id,
        "claim_count": event.claim_count,
        "detail": orjson.dumps(detail, option=orjson.OPT_SORT_KEYS).decode()
        if detail
        else None,
    }
    for key, column in _LIFTED.items():
        value = detail.get(key) if detail else None
        if value is not None and column in _INT_COLUMNS:
            value = int(value)
        elif value is not None and column == "pop":
            value = bool(value)
        elif value is not None:
            value = str(value)
        row[column] = value
    row["shape"] = body_shape(row["sample"])
    return row


def rows_table(rows: list[dict[str, Any]]) -> pa.Table:
    """Rows of SCHEMA as an Arrow table."""
    return pa.Table.from_pylist(rows, schema=SCHEMA)
