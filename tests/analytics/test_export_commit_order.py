"""On every backend: an event that commits late is never skipped, and waiting is reported.

Each test makes one event commit *after* a later one (a transaction held
open on SQL, a counter number reserved but not yet inserted on MongoDB
without transactions), exports in between, and checks that the late event
is exported by the next run, in its place, and that the first run said how
many events it held back. Redis gives a stream id inside the change's
script: nothing can commit behind an event already there.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pyarrow.dataset as ds
import pytest

from tests.backends import backend_name, clock, project, storage, storage_factory
from tests.contract.helpers import post
from zq import events
from zq.analytics.export import DEFAULT_SETTLE, BackendResult, export
from zq.clock import ManualClock
from zq.storage.base import Storage

__all__ = ["backend_name", "clock", "project", "storage", "storage_factory"]


def exported_messages(root, project: str) -> list[str]:
    """The message ids of ``project``'s posted events in the dataset, in log order."""
    table = ds.dataset(str(root), format="parquet", partitioning="hive").to_table()
    rows = sorted(table.to_pylist(), key=lambda r: r["seq"])
    return [r["message_id"] for r in rows if r["project"] == project and r["kind"] == "posted"]


def run_export(storage: Storage, root, clock: ManualClock, *, trim: bool = True
               ) -> BackendResult:
    # The exporter's clock is one second after the events: well inside any
    # settle window. While a transaction holds the late event, the tests
    # export without trimming: on SQLite and MariaDB a trim would wait for it.
    (result,) = export({"b": storage}, str(root), trim=trim, now=lambda: clock.now() + 1)
    return result


def family(backend_name: str) -> str:
    """The server behind a test backend: postgresql-general is PostgreSQL too."""
    if backend_name == "redis-cluster":  # its log is one stream, read after draining
        return "redis"
    return "postgresql" if backend_name.startswith("postgresql") else backend_name


@contextmanager
def late_event(storage: Storage, backend: str, project: str, clock: ManualClock
               ) -> Iterator[Any]:
    """An event given its cursor now and committed when the block ends.

    Yields a callable that writes an event in another unit of work: one
    that, on this backend, commits before the late one.
    """
    if family(backend) in ("sqlite", "postgresql", "mariadb"):
        from zq.storage.sql.events import event_row, record

        with storage.engine.connect() as conn:
            conn.begin()
            record(conn, [event_row(events.POSTED, project, "q", clock.now(),
                                    message_id="late")])
            yield lambda: post(storage, project, "q", 1)
            conn.commit()
    elif backend == "mongo":
        from zq.storage.mongo.counters import EVENTS_COUNTER, reserve

        database = storage._connection.database
        number = reserve(database["counters"], EVENTS_COUNTER, 1)
        yield lambda: post(storage, project, "q", 1)
        database["events"].insert_one({
            "_id": number, "time": clock.now(), "project": project, "queue": "q",
            "kind": events.POSTED, "message_id": "late", "detail": {}})
    else:
        pytest.skip(f"{backend}: an event cannot commit behind a later one")


def test_a_late_commit_is_never_skipped(storage, backend_name, project, clock, tmp_path):
    before = post(storage, project, "q", 2)
    clock.advance(DEFAULT_SETTLE + 1)  # these have settled wherever a window applies
    with late_event(storage, backend_name, project, clock) as write_later:
        if backend_name == "sqlite":
            # The open write transaction holds SQLite's only write lock: no
            # later event can commit before it, so the export takes all
            # that is committed and holds nothing back.
            first = run_export(storage, tmp_path, clock, trim=False)
            assert first.held_back == 0 and first.settle is None
            assert exported_messages(tmp_path, project) == before
            later = None
        else:
            [later] = write_later()
            first = run_export(storage, tmp_path, clock, trim=False)
            assert exported_messages(tmp_path, project) == before
            # The later event is committed and visible: the export stopped
            # below the transaction in flight (PostgreSQL) or the settle
            # window (MariaDB, MongoDB without transactions).
            assert first.held_back == 1
            assert first.settle == (
                None if family(backend_name) == "postgresql" else DEFAULT_SETTLE)
    if later is None:
        [later] = post(storage, project, "q", 1)
    clock.advance(DEFAULT_SETTLE + 1)
    second = run_export(storage, tmp_path, clock)
    assert second.held_back == 0
    assert exported_messages(tmp_path, project) == [*before, "late", later]
    assert storage.events.count(after=second.cursor) == 0


def test_a_final_order_log_exports_fresh_events_at_once(storage, backend_name, project, clock,
                                                       tmp_path):
    """No timer where the backend's order is final: events of this instant are exported."""
    final = {"sqlite": True, "postgresql": True, "redis": True, "mariadb": False,
             "mongo": storage.transactions if backend_name == "mongo" else None
             }[family(backend_name)]
    assert storage.events.final_order is final
    posted = post(storage, project, "q", 3)
    result = run_export(storage, tmp_path, clock)
    if final:
        assert exported_messages(tmp_path, project) == posted
        assert (result.held_back, result.settle) == (0, None)
    else:
        assert exported_messages(tmp_path, project) == []
        assert result.held_back >= 3 and result.settle == DEFAULT_SETTLE
        assert "settle window" in result.held_back_reason()


def zq_export(uri: str, root, *extra: str) -> None:
    from tests.analytics.conftest import zq_parser

    args = zq_parser().parse_args(["events", "export", "--to", str(root), "--storage", uri,
                                   *extra])
    assert args.handler(args) == 0


def test_the_command_says_what_it_held_back_and_why(storage_factory, backend_name, tmp_path,
                                                    capsys):
    """Right after traffic: the events it waits for are counted on stdout, with the reason."""
    if family(backend_name) not in ("postgresql", "mariadb"):
        pytest.skip("a SQL server backend, named by its URI")
    from zq.clock import SystemClock

    storage = storage_factory(SystemClock())  # events of this very second
    project = f"p-{tmp_path.name}"
    try:
        uri = storage.engine.url.render_as_string(hide_password=False)
        with late_event(storage, backend_name, project, ManualClock()) as write_later:
            [later] = write_later()
            zq_export(uri, tmp_path, "--no-trim")
            out = capsys.readouterr().out
        held = [line for line in out.splitlines() if "held back" in line]
        assert len(held) == 1, out
        if family(backend_name) == "postgresql":
            assert (": 1 newer event held back: written behind a transaction still in "
                    "flight") in held[0]
            zq_export(uri, tmp_path)
        else:
            assert "1 newer event held back: younger than the 30 s settle window" in held[0]
            zq_export(uri, tmp_path, "--settle", "0")
        assert "held back" not in capsys.readouterr().out
        assert exported_messages(tmp_path, project)[-2:] == ["late", later]
    finally:
        storage.close()


def test_settle_on_a_backend_that_needs_no_window_is_reported(tmp_path, capsys):
    uri = f"sqlite:///{tmp_path}/zq.sqlite3"
    zq_export(uri, tmp_path / "ds", "--settle", "5")
    assert "--settle has no effect: this backend's event order is final" in \
        capsys.readouterr().out
