"""Drain backend event logs into a date-partitioned Parquet dataset.

Each backend has a cursor kept in the dataset itself, in the state file
``_zq_export_state.json`` (names starting with ``_`` are ignored by Spark
and pyarrow). One batch goes through these steps, each durable before the
next begins:

1. the batch is *announced* in the state: ``pending = {after, count, seq}``;
2. its rows are written, one Parquet file per day it touches, named
   ``date=D/part-<backend>-<first seq>-<last seq>.parquet``;
3. the state commits: the cursor moves to the batch's last event and
   ``pending`` is cleared;
4. the backend log is trimmed up to the cursor (never past an event a live
   subscription has not been notified of, for at most ``subscription_hold``
   seconds: zq.notifications.retention).

A crash before (3) leaves ``pending``: the next run reads exactly the same
``count`` events after the same cursor (the log is append-only and not yet
trimmed there), so it writes the same file names with the same rows,
overwriting whatever part of the batch had been written. A crash between (3)
and (4) leaves events the cursor has passed; the next run trims them first.
No event is lost, none is written twice.

A cursor must never pass an event that will still commit before it: the
next run reads after the cursor, and the trim deletes up to it. A log whose
``final_order`` holds (SQLite, PostgreSQL, Redis, MongoDB with
transactions; see zq.storage.base.EventLog) only ever returns events whose
place is final, so everything it returns is exported at once. Other logs
(MariaDB/MySQL, MongoDB without transactions) number an event when it is
written, not when it commits, so a slow transaction can commit an event
*behind* one already read. For them the exporter takes events only once
they have *settled*: older than ``settle`` seconds. Stopping at the first
younger event leaves such an event for the next run, as long as no
transaction takes longer than the window (the default, 30 s, is far above
the milliseconds a zq transaction takes).

Whatever a run leaves for the next one is counted (``held_back``), so the
person running it knows how much is missing and why.

One exporter per dataset at a time: runs are meant to be sequential (a cron
job), not concurrent.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from zq.analytics.schema import PARTITION_KEY, SCHEMA, day_name, day_numbers, events_table
from zq.analytics.sink import Sink, open_sink
from zq.notifications import retention as notification_retention
from zq.storage.base import Storage
from zq.storage.records import Event
from zq.storage.uri import without_password

STATE_FILE = "_zq_export_state.json"
STATE_VERSION = 1
DEFAULT_BATCH = 50_000
DEFAULT_SETTLE = 30.0  # seconds an event must be old before it is exported

Progress = Callable[[str], None]
# Trims a backend's log up to an exported cursor, as far as subscriptions allow.
Trim = Callable[[Storage, str], int]


class ExportError(RuntimeError):
    """The dataset's state and the backend's log disagree; nothing was written."""


@dataclass
class BackendResult:
    """What one export run did for one backend."""

    backend: str
    events: int = 0
    files: list[str] = field(default_factory=list)
    trimmed: int = 0
    cursor: str | None = None
    held_back: int = 0  # committed events left for the next run
    settle: float | None = None  # the settle window applied; None: the log's order is final

    def held_back_reason(self) -> str:
        """Why ``held_back`` events wait, for a person."""
        if self.settle is None:
            return ("written behind a transaction still in flight, or during this run; "
                    "the next run exports them")
        return (f"younger than the {self.settle:g} s settle window (this backend numbers an "
                "event when it is written, not when it commits, so a slower transaction may "
                "still commit one before them); the next run exports them")


def backend_id(uri: str) -> str:
    """A stable, path-safe name for a backend: its scheme and a hash of its URI.

    The password is left out of the hash, so rotating it keeps the id.
    """
    # Re-joined by urllib as the first releases did, so the ids (the names of
    # existing datasets' cursors) do not change.
    redacted = urlunsplit(urlsplit(without_password(uri)))
    scheme = urlsplit(uri).scheme
    scheme = "".join(c for c in scheme.split("+", 1)[0] if c.isalnum()) or "backend"
    return f"{scheme}-{hashlib.sha256(redacted.encode()).hexdigest()[:12]}"


def export(
    storages: Mapping[str, Storage],
    to: str | Sink,
    *,
    batch_size: int = DEFAULT_BATCH,
    trim: bool = True,
    progress: Progress | None = None,
    settle: float = DEFAULT_SETTLE,
    now: Callable[[], float] = time.time,
    subscription_hold: float = notification_retention.HOLD_SECONDS,
) -> list[BackendResult]:
    """Append every new event of every backend to the dataset at ``to``.

    ``storages`` maps a backend id (see ``backend_id``) to its open Storage;
    the id names the backend's cursor and files in the dataset, so it must
    stay the same from run to run. With ``trim`` the backend log is trimmed
    up to the exported cursor. On a log without ``final_order``, events
    younger than ``settle`` seconds (by ``now()``) wait for the next run (see
    the module docstring). A live subscription holds the events it has not
    been notified of back from the trim for at most ``subscription_hold``
    seconds (zq.notifications.retention); the events it loses are reported.
    """
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    if settle < 0:
        raise ValueError("settle must not be negative")
    if subscription_hold <= 0:
        raise ValueError("subscription_hold must be positive")
    sink = open_sink(to) if isinstance(to, str) else to
    say = progress or (lambda _msg: None)

    def trimmer(storage: Storage, cursor: str) -> int:
        return notification_retention.trim(storage, cursor, now=now(),
                                           hold_seconds=subscription_hold, report=say)

    state = _State.load(sink)
    results = []
    for name, storage in storages.items():
        _check_backend_name(name)
        window = None if storage.events.final_order else settle
        result = _export_backend(name, storage, sink, state, batch_size,
                                 trimmer if trim else None, say,
                                 None if window is None else now() - window)
        result.settle = window
        result.held_back = storage.events.count(after=result.cursor)
        results.append(result)
        say(f"{name}: exported {result.events} events in {len(result.files)} files")
    return results


def _export_backend(
    name: str,
    storage: Storage,
    sink: Sink,
    state: _State,
    batch_size: int,
    trim: Trim | None,
    say: Progress,
    settled_before: float | None,
) -> BackendResult:
    entry = state.backend(name)
    result = BackendResult(name, cursor=entry["cursor"])
    if trim is not None and entry["cursor"] is not None:
        # Finish the trim an earlier run may have crashed before.
        result.trimmed += trim(storage, entry["cursor"])
    pending = entry["pending"]
    if pending is not None:
        say(f"{name}: redoing an interrupted batch of {pending['count']} events")
        events = storage.events.read(after=pending["after"], limit=pending["count"])
        if len(events) != pending["count"]:
            raise ExportError(
                f"{name}: the interrupted batch had {pending['count']} events after cursor "
                f"{pending['after']!r} but the log now has {len(events)}; was it trimmed "
                "by someone else?"
            )
        _finish_batch(name, storage, sink, state, events, pending["seq"], trim, result)
    while True:
        events = storage.events.read(after=entry["cursor"], limit=batch_size)
        if settled_before is not None:
            events = settled(events, settled_before)
        if not events:
            return result
        seq = entry["seq"]
        entry["pending"] = {"after": entry["cursor"], "count": len(events), "seq": seq}
        state.save(sink)
        _finish_batch(name, storage, sink, state, events, seq, trim, result)
        say(f"{name}: {result.events} events exported")


def settled(events: list[Event], settled_before: float) -> list[Event]:
    """The leading events older than ``settled_before``; the rest wait for a later run."""
    for index, event in enumerate(events):
        if event.time >= settled_before:
            return events[:index]
    return events


def _finish_batch(
    name: str,
    storage: Storage,
    sink: Sink,
    state: _State,
    events: list[Event],
    first_seq: int,
    trim: Trim | None,
    result: BackendResult,
) -> None:
    """Steps 2-4 of a batch: files, then state, then trim."""
    result.files.extend(write_batch(sink, name, events, first_seq))
    entry = state.backend(name)
    entry["cursor"] = events[-1].cursor
    entry["seq"] = first_seq + len(events)
    entry["pending"] = None
    entry["exported"] = entry.get("exported", 0) + len(events)
    state.save(sink)
    result.events += len(events)
    result.cursor = entry["cursor"]
    if trim is not None:
        result.trimmed += trim(storage, entry["cursor"])


def write_batch(sink: Sink, backend: str, events: list[Event], first_seq: int) -> list[str]:
    """Write one batch as one Parquet file per day; returns the paths written.

    The names depend only on the backend and the batch's sequence range, so
    writing the same batch again replaces the same files.
    """
    last_seq = first_seq + len(events) - 1
    table = events_table(backend, first_seq, events)
    written = []
    for day, part in sorted(_split_by_day(table).items()):
        path = (f"{PARTITION_KEY}={day_name(day)}/"
                f"part-{backend}-{first_seq:012d}-{last_seq:012d}.parquet")
        sink.write_atomic(path, parquet_bytes(part))
        written.append(path)
    return written


def _split_by_day(table: pa.Table) -> dict[int, pa.Table]:
    """The table's rows by day number, each day's rows in the table's order."""
    days = day_numbers(table.column("time").combine_chunks())
    runs = pc.run_end_encode(days)
    ends, numbers = runs.run_ends.to_pylist(), runs.values.to_pylist()
    if len(set(numbers)) == len(numbers):
        # Each day is one run of rows (a log in time order): slices, no copies.
        starts = [0, *ends[:-1]]
        return {day: table.slice(start, end - start)
                for day, start, end in zip(numbers, starts, ends, strict=True)}
    return {day: table.filter(pc.equal(days, day)) for day in set(numbers)}


# Columns holding (nearly) one value per event are written plain: a
# dictionary of them is as large as the column, and building it only to
# write both was a third of the Parquet encoding time. Readers see the same
# values either way.
_PLAIN_COLUMNS = {"seq", "cursor", "time", "message_id", "claim_id", "fingerprint", "detail"}
_DICTIONARY_COLUMNS = [name for name in SCHEMA.names if name not in _PLAIN_COLUMNS]


def parquet_bytes(table: pa.Table) -> bytes:
    """A table as the bytes of one Parquet file."""
    buffer = pa.BufferOutputStream()
    pq.write_table(table, buffer, compression="snappy", use_dictionary=_DICTIONARY_COLUMNS)
    return buffer.getvalue().to_pybytes()


class _State:
    """The per-backend cursors, stored as JSON in the dataset root."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data

    @classmethod
    def load(cls, sink: Sink) -> _State:
        raw = sink.read(STATE_FILE)
        if raw is None:
            return cls({"version": STATE_VERSION, "backends": {}})
        data = orjson.loads(raw)
        if data.get("version") != STATE_VERSION:
            raise ExportError(
                f"{STATE_FILE} has version {data.get('version')!r}; this zq writes "
                f"version {STATE_VERSION}."
            )
        return cls(data)

    def backend(self, name: str) -> dict[str, Any]:
        return self.data["backends"].setdefault(
            name, {"cursor": None, "seq": 0, "pending": None, "exported": 0}
        )

    def save(self, sink: Sink) -> None:
        sink.write_atomic(STATE_FILE, orjson.dumps(self.data, option=orjson.OPT_INDENT_2))


def read_state(to: str | Sink) -> dict[str, Any]:
    """The dataset's export state (cursor, seq, pending per backend)."""
    sink = open_sink(to) if isinstance(to, str) else to
    return _State.load(sink).data


def _check_backend_name(name: str) -> None:
    if not name or not all(c.isalnum() or c in "-_." for c in name):
        raise ValueError(f"Backend id {name!r} must be letters, digits, '-', '_' or '.'.")


def storages_by_id(uris: Iterable[str], opener: Callable[[str], Storage]) -> dict[str, Storage]:
    """Open each storage URI, keyed by its ``backend_id``."""
    return {backend_id(uri): opener(uri) for uri in uris}
