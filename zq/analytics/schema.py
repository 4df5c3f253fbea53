"""The Parquet layout of exported events: one row per event, partitioned by day.

The dataset directory holds ``date=YYYY-MM-DD/`` partitions (UTC day of the
event time). The ``detail`` of an event is kept whole as JSON text, and the
fields the statistics need are also lifted into their own columns so that
Spark and SQL analysts never parse JSON.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from zq import events
from zq.analytics.shapes import body_shape
from zq.encryption import is_sealed
from zq.storage.records import Event

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


_DAY_SECONDS = 86_400


@lru_cache(maxsize=4096)
def day_name(day_number: int) -> str:
    """The partition (``YYYY-MM-DD``) of a UTC day number (``time // 86400``)."""
    return datetime.fromtimestamp(day_number * _DAY_SECONDS, UTC).strftime("%Y-%m-%d")


def event_date(time: float) -> str:
    """The partition (UTC day, ``YYYY-MM-DD``) an event time belongs to."""
    # POSIX time has no leap seconds: a UTC day is exactly 86,400 of them, so
    # the day number alone names the day, and formatting it once per day (not
    # once per event) is most of the export's date cost saved.
    return day_name(int(time // _DAY_SECONDS))


def day_numbers(times: pa.Array) -> pa.Array:
    """The UTC day number (``time // 86400``) of each time, as int64: ``event_date``
    computed over a whole column at once."""
    days = pc.floor(pc.divide(times, float(_DAY_SECONDS)))
    # The division rounds: just before midnight it can round up to the next
    # whole day (never down, whole numbers being exact). Products of a day
    # number and 86,400 are exact, so comparing with them puts those back.
    over = pc.greater(pc.multiply(days, float(_DAY_SECONDS)), times)
    return pc.if_else(over, pc.subtract(days, 1.0), days).cast(pa.int64())


def exported_detail(detail: dict[str, Any] | None) -> dict[str, Any] | None:
    """An event's detail as the export keeps it (None when nothing is left).

    A posted event's body (zq.events.BODY, kept for notifications) is left
    out. A dead lettered message's sample is left out when its body is stored
    encrypted: it is the start of the ciphertext, which no analysis can use.
    """
    if not detail:
        return None
    if is_sealed(str(detail.get("sample") or "")):
        detail = {key: value for key, value in detail.items() if key != "sample"}
    if events.BODY in detail:
        # The body a subscribed queue's post carries is for its notifier; the
        # export stays the size it was (size and fingerprint describe the body).
        detail = {key: value for key, value in detail.items() if key != events.BODY}
    return detail or None


def _lifted(column: str) -> Callable[[Any], Any]:
    if column in _INT_COLUMNS:
        return int
    return bool if column == "pop" else str


def events_table(backend: str, first_seq: int, batch: Sequence[Event]) -> pa.Table:
    """Events as an Arrow table of SCHEMA, numbered from ``first_seq``.

    Built column by column (one list comprehension per column, not one dict
    per event): the export's Python cost per event is most of its time. Its
    ``shape`` is computed here from the plaintext sample, so Spark needs no
    Python code; an encrypted body has neither sample nor shape.
    """
    details = [exported_detail(event.detail) for event in batch]
    columns: dict[str, list[Any]] = {
        "backend": [backend] * len(batch),
        "seq": list(range(first_seq, first_seq + len(batch))),
        "cursor": [event.cursor for event in batch],
        "time": [float(event.time) for event in batch],
        "project": [event.project for event in batch],
        "queue": [event.queue for event in batch],
        "kind": [event.kind for event in batch],
        "message_id": [event.message_id for event in batch],
        "claim_id": [event.claim_id for event in batch],
        "client_id": [event.client_id for event in batch],
        "claim_count": [event.claim_count for event in batch],
    }
    for key, column in _LIFTED.items():
        convert = _lifted(column)
        values = [None if detail is None else detail.get(key) for detail in details]
        columns[column] = [None if value is None else convert(value) for value in values]
    columns["shape"] = [None if sample is None else body_shape(sample)
                        for sample in columns["sample"]]
    columns["detail"] = [
        None if detail is None else orjson.dumps(detail, option=orjson.OPT_SORT_KEYS).decode()
        for detail in details
    ]
    return pa.Table.from_pydict(columns, schema=SCHEMA)


def event_row(backend: str, seq: int, event: Event) -> dict[str, Any]:
    """One event as a row of SCHEMA (without the partition column), as exported."""
    return events_table(backend, seq, [event]).to_pylist()[0]
