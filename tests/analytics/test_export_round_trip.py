"""Export round trip: every column of every row, read back from the Parquet files."""

from __future__ import annotations

import math
import random
from datetime import UTC, datetime

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.analytics.memlog import LogOnlyStorage, MemoryEventLog
from zq.analytics.export import export, parquet_bytes
from zq.analytics.schema import SCHEMA, day_name, day_numbers, event_date, events_table
from zq.analytics.shapes import body_shape
from zq.analytics.synthetic import synthetic_events
from zq.storage.records import Event

DAY = 86_400.0
MIDNIGHT = 1_700_006_400.0  # a UTC midnight


def varied_events() -> list[Event]:
    """Every kind of detail the export lifts, with times out of order across midnight."""
    def event(time: float, kind: str, **fields) -> Event:
        return Event(cursor="0", time=time, project="p", queue="q", kind=kind, **fields)

    before = math.nextafter(MIDNIGHT, 0.0)  # the last instant of the day before
    return [
        event(MIDNIGHT + 5, "posted", message_id="m1",
              detail={"ttl": 300, "delay": 0, "size": 12, "fingerprint": "f1",
                      "body": '{"a": 1}'}),
        event(before, "claimed", message_id="m1", claim_id="c1", client_id="k1",
              claim_count=1),
        event(MIDNIGHT, "dead_lettered", message_id="m1", claim_count=3,
              detail={"to": "q.dlq", "reason": "max_claims", "fingerprint": "f1",
                      "sample": '{"order": {"id": 7}, "tags": ["x"]}',
                      "description": "bad order"}),
        event(MIDNIGHT - DAY, "dead_lettered", message_id="m2",
              detail={"to": "q.dlq", "reason": "max_claims", "sample": "zqe2:k1:c2VjcmV0"}),
        event(MIDNIGHT + DAY + 1, "deleted", message_id="m3", detail={"pop": True}),
        event(MIDNIGHT + 2, "expired", detail={"target": "claim", "messages": 4}),
        event(MIDNIGHT + 3, "rejected", message_id="m4",
              detail={"description": "later", "retry_after": None}),
        event(MIDNIGHT + 4, "rejected", message_id="m5", detail={"retry_after": 30.0}),
        event(MIDNIGHT - 0.5, "purged", detail={"messages": 2, "queue_deleted": True}),
        event(before, "released", message_id="m1", claim_id="c1", detail={}),
        event(MIDNIGHT + 6, "posted", message_id="m6",
              detail={"ttl": "60", "sample": '{"cut": "off'}),
    ]


def expected_row(backend: str, seq: int, event: Event) -> dict:
    """A row of SCHEMA written out by hand from the event, to check the table against."""
    detail = {k: v for k, v in event.detail.items() if k != "body"}
    if str(detail.get("sample", "")).startswith(("zqe1:", "zqe2:")):
        del detail["sample"]
    lifted = {"ttl": ("ttl", int), "delay": ("delay", int), "size": ("size", int),
              "fingerprint": ("fingerprint", str), "to": ("to_queue", str),
              "reason": ("reason", str), "sample": ("sample", str), "pop": ("pop", bool),
              "target": ("target", str), "messages": ("messages", int),
              "description": ("description", str), "retry_after": ("retry_after", int)}
    row = {"backend": backend, "seq": seq, "cursor": event.cursor, "time": event.time,
           "project": event.project, "queue": event.queue, "kind": event.kind,
           "message_id": event.message_id, "claim_id": event.claim_id,
           "client_id": event.client_id, "claim_count": event.claim_count}
    for key, (column, convert) in lifted.items():
        value = detail.get(key)
        row[column] = None if value is None else convert(value)
    row["shape"] = body_shape(row["sample"])
    row["detail"] = orjson.dumps(detail, option=orjson.OPT_SORT_KEYS).decode() if detail else None
    return row


def read_back(root) -> dict[str, tuple[str, dict]]:
    """cursor -> (partition day, row) for every row in every file of the dataset."""
    rows = {}
    for path in sorted(root.glob("date=*/*.parquet")):
        table = pq.read_table(path)
        assert table.schema == SCHEMA
        file_rows = table.to_pylist()
        seqs = [row["seq"] for row in file_rows]
        assert seqs == sorted(seqs)  # a day's rows keep the log's order
        for row in file_rows:
            assert row["cursor"] not in rows
            rows[row["cursor"]] = (path.parent.name.removeprefix("date="), row)
    return rows


@pytest.mark.parametrize("batch_size", [3, 1000])
def test_every_column_reads_back_as_the_event_gave_it(tmp_path, batch_size):
    log = MemoryEventLog([*varied_events(), *synthetic_events(500, seed=4)])
    originals = list(log.events)
    export({"a": LogOnlyStorage(log)}, str(tmp_path), batch_size=batch_size)
    rows = read_back(tmp_path)
    assert len(rows) == len(originals)
    for seq, event in enumerate(originals):
        day, row = rows[event.cursor]
        assert day == event_date(event.time)
        assert row == expected_row("a", seq, event)


def test_the_lifted_columns_are_filled():
    # Guards expected_row: the varied events give every lifted column a value.
    table = events_table("a", 0, varied_events())
    for name in ("ttl", "delay", "size", "fingerprint", "to_queue", "reason", "sample",
                 "pop", "target", "messages", "description", "retry_after", "shape"):
        assert table[name].null_count < len(table), name


def test_parquet_bytes_keep_every_value():
    table = events_table("a", 7, [*varied_events(), *synthetic_events(300, seed=5)])
    assert pq.read_table(pa.BufferReader(parquet_bytes(table))).equals(table)


def test_day_numbers_name_the_day_event_date_names():
    rng = random.Random(6)
    times = [0.0, 86_399.999, 86_400.0, -0.5, -86_400.0, 4_102_444_800.0, MIDNIGHT]
    for midnight in (MIDNIGHT, MIDNIGHT + DAY * 10_000, 0.0, 86_400.0 * 3):
        times += [math.nextafter(midnight, -math.inf), math.nextafter(midnight, math.inf)]
    times += [rng.uniform(0, 4e9) for _ in range(2000)]
    times += [math.floor(t / DAY) * DAY - rng.random() * 1e-6 for t in times[-200:]]
    names = [day_name(day) for day in day_numbers(pa.array(times, pa.float64())).to_pylist()]
    assert names == [event_date(t) for t in times]
    # datetime rounds to the microsecond, so it names the day only away from midnight.
    away = [t for t in times if 1e-3 < t % DAY < DAY - 1e-3]
    assert [event_date(t) for t in away] == [
        datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d") for t in away]
