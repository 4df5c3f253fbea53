"""Export: incremental, idempotent, crash-safe (no loss, no duplicates)."""

from __future__ import annotations

import json

import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pytest

from tests.analytics.memlog import LogOnlyStorage, MemoryEventLog
from zq.analytics.export import STATE_FILE, ExportError, backend_id, export, read_state
from zq.analytics.schema import event_date
from zq.analytics.sink import ArrowSink, LocalSink, open_sink
from zq.analytics.synthetic import synthetic_events


class Crash(Exception):
    """The injected failure."""


class CrashingSink(LocalSink):
    """A local sink that dies on the n-th write whose path matches."""

    def __init__(self, root, *, match: str, nth: int = 1) -> None:
        super().__init__(root)
        self.match, self.left = match, nth

    def write_atomic(self, path: str, data: bytes) -> None:
        if self.match in path:
            self.left -= 1
            if self.left == 0:
                raise Crash(path)
        super().write_atomic(path, data)


class CrashingTrimLog(MemoryEventLog):
    def trim(self, *, up_to: str) -> int:
        raise Crash("trim")


def exported(root) -> list[tuple[str, str]]:
    """(backend, cursor) of every row in the dataset, sorted."""
    table = ds.dataset(str(root), format="parquet", partitioning="hive").to_table(
        columns=["backend", "cursor", "seq"])
    rows = list(zip(table["backend"].to_pylist(), table["cursor"].to_pylist(), strict=True))
    return sorted(rows, key=lambda r: (r[0], int(r[1])))


def expected(name: str, first: int, last: int) -> list[tuple[str, str]]:
    return [(name, str(c)) for c in range(first, last + 1)]


def test_export_writes_every_event_once_partitioned_by_day(tmp_path):
    log = MemoryEventLog(synthetic_events(3000, seed=1))
    days_seen = {f"date={event_date(e.time)}" for e in log.events}
    results = export({"a": LogOnlyStorage(log)}, str(tmp_path), batch_size=700)
    assert results[0].events == 3000
    assert exported(tmp_path) == expected("a", 1, 3000)
    days = sorted(p.name for p in tmp_path.iterdir() if p.is_dir())
    assert days == sorted(days_seen) and len(days) == 3
    assert log.events == []  # trimmed
    state = json.loads((tmp_path / STATE_FILE).read_text())["backends"]["a"]
    assert state == {"cursor": "3000", "seq": 3000, "pending": None, "exported": 3000}


@pytest.mark.parametrize("time", [0.0, 86_399.999, 86_400.0, 1_700_006_399.5, 1_700_006_400.0,
                                  -0.5, 4_102_444_800.0])
def test_event_date_is_the_utc_day_of_the_time(time):
    # event_date formats a day once per day number; it must name the day
    # datetime would, at the edges of days too.
    from datetime import UTC, datetime

    assert event_date(time) == datetime.fromtimestamp(time, UTC).strftime("%Y-%m-%d")


def test_export_rows_keep_event_fields(tmp_path):
    log = MemoryEventLog(synthetic_events(200, seed=2))
    originals = {e.cursor: e for e in log.events}
    export({"a": LogOnlyStorage(log)}, str(tmp_path))
    table = ds.dataset(str(tmp_path), format="parquet", partitioning="hive").to_table()
    for row in table.to_pylist():
        event = originals[row["cursor"]]
        assert (row["time"], row["project"], row["queue"], row["kind"]) == (
            event.time, event.project, event.queue, event.kind)
        assert (row["message_id"], row["claim_id"], row["client_id"], row["claim_count"]) == (
            event.message_id, event.claim_id, event.client_id, event.claim_count)
        assert json.loads(row["detail"] or "{}") == event.detail
        assert row["fingerprint"] == event.detail.get("fingerprint")
        assert row["to_queue"] == event.detail.get("to")
        assert str(row["date"]) == event_date(event.time)


def test_export_is_incremental(tmp_path):
    log = MemoryEventLog(synthetic_events(1000, seed=3))
    storage = LogOnlyStorage(log)
    export({"a": storage}, str(tmp_path), batch_size=300)
    log.append(synthetic_events(500, seed=4))
    again = export({"a": storage}, str(tmp_path), batch_size=300)
    assert again[0].events == 500
    assert exported(tmp_path) == expected("a", 1, 1500)
    nothing = export({"a": storage}, str(tmp_path))
    assert nothing[0].events == 0 and nothing[0].files == []


def test_two_backends_keep_separate_cursors(tmp_path):
    a = MemoryEventLog(synthetic_events(400, seed=5))
    b = MemoryEventLog(synthetic_events(250, seed=6))
    export({"a": LogOnlyStorage(a), "b": LogOnlyStorage(b)}, str(tmp_path), batch_size=100)
    assert exported(tmp_path) == expected("a", 1, 400) + expected("b", 1, 250)
    assert read_state(str(tmp_path))["backends"]["b"]["cursor"] == "250"


def test_crash_after_files_before_cursor_rerun_neither_loses_nor_duplicates(tmp_path):
    log = MemoryEventLog(synthetic_events(1000, seed=7))
    storage = LogOnlyStorage(log)
    # Writes: state(announce 1), files..., state(commit 1), state(announce 2), files...,
    # state(commit 2) <- dies here: batch 2's files are on disk, its cursor is not.
    sink = CrashingSink(tmp_path, match=STATE_FILE, nth=4)
    with pytest.raises(Crash):
        export({"a": storage}, sink, batch_size=400)
    assert read_state(str(tmp_path))["backends"]["a"]["cursor"] == "400"
    assert len(log.events) == 600  # not trimmed past the committed cursor
    # New events arrive and the re-run uses another batch size: the
    # interrupted batch is still redone exactly.
    log.append(synthetic_events(100, seed=8))
    export({"a": storage}, str(tmp_path), batch_size=250)
    assert exported(tmp_path) == expected("a", 1, 1100)
    assert log.events == []


def test_crash_mid_batch_rerun_neither_loses_nor_duplicates(tmp_path):
    log = MemoryEventLog(synthetic_events(3000, seed=9))
    storage = LogOnlyStorage(log)
    # The first batch spans several days: die after its first day's file.
    sink = CrashingSink(tmp_path, match="part-", nth=2)
    with pytest.raises(Crash):
        export({"a": storage}, sink, batch_size=3000)
    assert len(list(tmp_path.glob("date=*/part-*.parquet"))) == 1
    assert read_state(str(tmp_path))["backends"]["a"]["pending"] == {
        "after": None, "count": 3000, "seq": 0}
    export({"a": storage}, str(tmp_path), batch_size=1000)
    assert exported(tmp_path) == expected("a", 1, 3000)
    assert not list(tmp_path.rglob(".*.tmp"))


def test_crash_before_trim_trims_on_rerun(tmp_path):
    log = CrashingTrimLog(synthetic_events(500, seed=10))
    with pytest.raises(Crash):
        export({"a": LogOnlyStorage(log)}, str(tmp_path), batch_size=500)
    assert len(log.events) == 500
    healthy = MemoryEventLog()
    healthy.events, healthy.next_cursor = log.events, log.next_cursor
    result = export({"a": LogOnlyStorage(healthy)}, str(tmp_path))
    assert result[0].trimmed == 500 and result[0].events == 0
    assert exported(tmp_path) == expected("a", 1, 500)


def test_interrupted_batch_trimmed_by_someone_else_is_refused(tmp_path):
    log = MemoryEventLog(synthetic_events(300, seed=11))
    with pytest.raises(Crash):
        export({"a": LogOnlyStorage(log)}, CrashingSink(tmp_path, match="part-"))
    log.trim(up_to="10")
    with pytest.raises(ExportError, match="trimmed"):
        export({"a": LogOnlyStorage(log)}, str(tmp_path))


def test_no_trim_keeps_the_log(tmp_path):
    log = MemoryEventLog(synthetic_events(100, seed=12))
    export({"a": LogOnlyStorage(log)}, str(tmp_path), trim=False)
    assert len(log.events) == 100
    assert export({"a": LogOnlyStorage(log)}, str(tmp_path), trim=False)[0].events == 0


def test_arrow_filesystem_sink_writes_the_same_dataset(tmp_path):
    log = MemoryEventLog(synthetic_events(500, seed=13))
    sink = ArrowSink(pafs.LocalFileSystem(), str(tmp_path), str(tmp_path))
    export({"a": LogOnlyStorage(log)}, sink, batch_size=200)
    assert exported(tmp_path) == expected("a", 1, 500)


def test_open_sink_by_uri(tmp_path):
    assert isinstance(open_sink(str(tmp_path)), LocalSink)
    assert isinstance(open_sink(f"file://{tmp_path}"), LocalSink)
    with pytest.raises(ValueError, match="pyarrow"):
        open_sink("nosuchscheme://bucket/x")


def test_backend_id_is_stable_path_safe_and_ignores_password():
    one = backend_id("postgresql+psycopg://zq:secret@db:5432/zq")
    assert one == backend_id("postgresql+psycopg://zq:rotated@db:5432/zq")
    assert one.startswith("postgresql-") and all(c.isalnum() or c == "-" for c in one)
    assert one != backend_id("postgresql+psycopg://zq:secret@db:5432/other")


def test_bad_backend_name_and_batch_size_are_refused(tmp_path):
    with pytest.raises(ValueError):
        export({"a/b": LogOnlyStorage(MemoryEventLog())}, str(tmp_path))
    with pytest.raises(ValueError):
        export({}, str(tmp_path), batch_size=0)
