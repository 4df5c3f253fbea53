"""The argparse wiring of ``zq events export`` and ``zq stats`` (no Spark needed)."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from tests.analytics.conftest import zq_parser
from tests.analytics.memlog import LogOnlyStorage, MemoryEventLog
from zq.analytics.arguments import parse_time
from zq.analytics.cli import run_stats
from zq.analytics.export import export
from zq.clock import ManualClock
from zq.events import fingerprint
from zq.storage.records import Event, NewMessage
from zq.storage.sql import open_sql


def test_importing_the_cli_loads_neither_spark_nor_arrow():
    code = ("import sys, zq.analytics.cli; "
            "heavy = {'pyspark', 'pyarrow', 'matplotlib'} & set(sys.modules); "
            "sys.exit(sorted(heavy) or 0)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_stats_options_parse():
    args = zq_parser().parse_args([
        "stats", "--events", "/d", "--queue", "q", "--project", "p", "--since", "2023-11-15",
        "--until", "2023-11-15T12:00:00Z", "--format", "csv", "--out", "/o",
        "--master", "spark://h:7077", "--sql", "SELECT 1", "--conf", "spark.x=1"])
    assert (args.events, args.queue, args.project, args.format, args.out, args.master,
            args.sql) == ("/d", "q", "p", "csv", "/o", "spark://h:7077", "SELECT 1")
    assert (args.since, args.until) == (1_700_006_400.0, 1_700_049_600.0)
    assert args.conf == [("spark.x", "1")] and args.handler is run_stats


@pytest.mark.parametrize("argv", [
    ["stats"],  # --events is required
    ["stats", "--events", "d", "--format", "xml"],
    ["stats", "--events", "d", "--since", "yesterday"],
    ["stats", "--events", "d", "--top", "0"],
    ["events"],
    ["events", "export"],  # --to is required
])
def test_bad_arguments_are_usage_errors(argv, capsys):
    with pytest.raises(SystemExit) as exit_:
        zq_parser().parse_args(argv)
    assert exit_.value.code == 2


def test_parse_time_accepts_dates_times_and_seconds():
    assert parse_time("1700000000") == 1_700_000_000.0
    assert parse_time("2023-11-14T22:13:20Z") == 1_700_000_000.0
    assert parse_time("2023-11-14T23:13:20+01:00") == 1_700_000_000.0
    with pytest.raises(argparse.ArgumentTypeError):
        parse_time("soon")


def test_stats_without_pyspark_says_how_to_install(monkeypatch, capsys, tmp_path):
    log = MemoryEventLog([Event(cursor="", time=1e9, project="p", queue="q", kind="posted")])
    export({"a": LogOnlyStorage(log)}, str(tmp_path))  # events to analyse: Spark is needed
    monkeypatch.setitem(sys.modules, "pyspark", None)  # import now raises ImportError
    args = zq_parser().parse_args(["stats", "--events", str(tmp_path), "--engine", "spark"])
    assert args.handler(args) == 1
    assert "pip install 'zq[spark]'" in capsys.readouterr().err
    # A selection this small needs no Spark at all (--engine auto).
    args = zq_parser().parse_args(["stats", "--events", str(tmp_path), "--format", "json"])
    assert args.handler(args) == 0
    assert '"posted": 1' in capsys.readouterr().out


def test_events_export_command_drains_a_sqlite_storage(tmp_path, capsys):
    uri = f"sqlite:///{tmp_path}/zq.sqlite3"
    storage = open_sql(uri, clock=ManualClock())
    try:
        body = '{"a":1}'
        storage.messages.post("p", "q", [NewMessage(body, 60, 0, fingerprint(body))] * 3,
                              client_id=None)
    finally:
        storage.close()
    argv = ["events", "export", "--to", str(tmp_path / "ds"), "--storage", uri]
    args = zq_parser().parse_args(argv)
    assert args.handler(args) == 0
    captured = capsys.readouterr()
    assert ": 3 events exported, 1 files, 3 trimmed" in captured.out
    assert "[zq]" in captured.err
    args = zq_parser().parse_args(argv)
    assert args.handler(args) == 0
    assert ": 0 events exported" in capsys.readouterr().out


def test_events_export_with_a_bad_storage_uri_is_an_error(tmp_path, capsys):
    args = zq_parser().parse_args(["events", "export", "--to", str(tmp_path),
                                   "--storage", "nosuch://x"])
    assert args.handler(args) == 1
    assert "zq: error:" in capsys.readouterr().err


def test_events_export_with_pooling_drains_every_pool(tmp_path, capsys):
    from tests.pooling.registered import register_pools
    from zq.analytics.export import backend_id

    management = f"sqlite:///{tmp_path}/management.sqlite3"
    pools = {name: f"sqlite:///{tmp_path}/{name}.sqlite3" for name in ("one", "two")}
    for count, uri in zip((2, 3), pools.values(), strict=True):
        storage = open_sql(uri, clock=ManualClock())
        try:
            body = '{"a":1}'
            storage.messages.post("p", "q", [NewMessage(body, 60, 0, fingerprint(body))] * count,
                                  client_id=None)
        finally:
            storage.close()
    register_pools(management, {**pools, "down": "postgresql://zq:pw@127.0.0.1:1/zq"})
    argv = ["events", "export", "--to", str(tmp_path / "ds"), "--pooling",
            "--management", management]
    args = zq_parser().parse_args(argv)
    assert args.handler(args) == 1  # one pool could not be exported
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert lines[0].startswith(f"pool 'one' ({backend_id(pools['one'])}): 2 events exported")
    assert lines[1].startswith(f"pool 'two' ({backend_id(pools['two'])}): 3 events exported")
    down = backend_id("postgresql://zq@127.0.0.1:1/zq")
    assert f"zq: error: pool 'down' ({down}): " in captured.err
    assert "pw@" not in captured.err
    # The cursors are per backend: a second run finds nothing new on either pool.
    args = zq_parser().parse_args(argv)
    args.handler(args)
    out = capsys.readouterr().out
    assert ": 0 events exported" in out.splitlines()[0]
    assert ": 0 events exported" in out.splitlines()[1]
